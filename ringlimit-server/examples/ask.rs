//! Asks a rate limit service once, as a gateway would, and prints the answer.
//!
//! ```text
//! cargo run -p ringlimit-server --example ask -- 127.0.0.1:8081 messaging \
//!     message_type=marketing,to_number=2061111111 to_number=2061111111
//! ```
//!
//! Arguments: the address, the domain, then one descriptor per argument as `key=value`
//! entries separated by commas; `HITS=n` in the environment sets `hits_addend`.

use ringlimit_server::proto::envoy::extensions::common::ratelimit::v3::{
    rate_limit_descriptor::Entry, RateLimitDescriptor,
};
use ringlimit_server::proto::rls::rate_limit_response::{rate_limit::Unit, Code};
use ringlimit_server::proto::rls::rate_limit_service_client::RateLimitServiceClient;
use ringlimit_server::proto::rls::RateLimitRequest;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(domain)) = (args.next(), args.next()) else {
        return Err("usage: ask ADDR DOMAIN key=value[,key=value…]…".into());
    };
    let descriptors = args
        .map(|descriptor| RateLimitDescriptor {
            entries: descriptor
                .split(',')
                .map(|entry| {
                    let (key, value) = entry.split_once('=').unwrap_or((entry, ""));
                    Entry {
                        key: key.into(),
                        value: value.into(),
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    let hits_addend = std::env::var("HITS")
        .ok()
        .and_then(|h| h.parse().ok())
        .unwrap_or(0);
    let mut client = RateLimitServiceClient::connect(format!("http://{addr}")).await?;
    let request = RateLimitRequest {
        domain,
        descriptors,
        hits_addend,
    };
    let answer = match client.should_rate_limit(request).await {
        Ok(answer) => answer.into_inner(),
        Err(status) => {
            println!("{:?}: {}", status.code(), status.message());
            return Ok(());
        }
    };
    let code = |c: i32| Code::try_from(c).map_or("?", |c| c.as_str_name());
    println!("overall_code: {}", code(answer.overall_code));
    for status in &answer.statuses {
        let limit = status
            .current_limit
            .as_ref()
            .map_or("none".to_owned(), |l| {
                let unit = Unit::try_from(l.unit).map_or("?", |u| u.as_str_name());
                format!("{}/{unit}", l.requests_per_unit)
            });
        let reset = status
            .duration_until_reset
            .as_ref()
            .map_or(0, |d| d.seconds);
        println!(
            "  {} limit {limit} remaining {} reset in {reset} s",
            code(status.code),
            status.limit_remaining
        );
    }
    for header in &answer.response_headers_to_add {
        println!("  header {}: {}", header.key, header.value);
    }
    Ok(())
}
