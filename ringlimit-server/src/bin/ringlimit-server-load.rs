//! `ringlimit-server-load`: a load generator for any `RateLimitService`. It opens
//! `--connections` HTTP/2 connections, keeps `--in-flight` calls going on each for
//! `--seconds`, and prints calls per second and the latency percentiles.
//!
//! ```text
//! ringlimit-server-load --addr 127.0.0.1:8081 --connections 4 --in-flight 16 --seconds 10
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use ringlimit_server::proto::envoy::extensions::common::ratelimit::v3::{
    rate_limit_descriptor::Entry, RateLimitDescriptor,
};
use ringlimit_server::proto::rls::rate_limit_service_client::RateLimitServiceClient;
use ringlimit_server::proto::rls::RateLimitRequest;

/// Load for a RateLimitService over gRPC.
#[derive(Debug, Parser)]
struct Args {
    /// The server.
    #[arg(long, default_value = "127.0.0.1:8081")]
    addr: String,
    /// HTTP/2 connections.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Calls in flight per connection.
    #[arg(long, default_value_t = 16)]
    in_flight: usize,
    /// How long to run.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Domain of the requests.
    #[arg(long, default_value = "bench")]
    domain: String,
    /// Descriptor key; each call's value is one of `--values` (`user_0` …).
    #[arg(long, default_value = "user")]
    key: String,
    /// Distinct values.
    #[arg(long, default_value_t = 10_000)]
    values: usize,
    /// Client worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build();
    let result = runtime
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(run(args)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ringlimit-server-load: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let endpoint = format!("http://{}", args.addr);
    let mut clients = Vec::new();
    for _ in 0..args.connections.max(1) {
        let channel = tonic::transport::Endpoint::from_shared(endpoint.clone())?
            .tcp_nodelay(true)
            .connect()
            .await?;
        clients.push(RateLimitServiceClient::new(channel));
    }
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for t in 0..args.in_flight.max(1) {
            let mut client = client.clone();
            let (domain, key, values) = (args.domain.clone(), args.key.clone(), args.values.max(1));
            let mut seed = (c * 7919 + t * 104_729 + 1) as u64;
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(1 << 16);
                let (mut over, mut errors) = (0u64, 0u64);
                while Instant::now() < deadline {
                    // xorshift: a spread of values without a dependency.
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let request = RateLimitRequest {
                        domain: domain.clone(),
                        descriptors: vec![RateLimitDescriptor {
                            entries: vec![Entry {
                                key: key.clone(),
                                value: format!("user_{}", seed % values as u64),
                            }],
                            ..Default::default()
                        }],
                        hits_addend: 1,
                    };
                    let start = Instant::now();
                    match client.should_rate_limit(request).await {
                        Ok(response) => over += u64::from(response.get_ref().overall_code == 2),
                        Err(_) => errors += 1,
                    }
                    latencies.push(start.elapsed().as_nanos() as u64);
                }
                (latencies, over, errors)
            }));
        }
    }
    let (mut all, mut over, mut errors) = (Vec::new(), 0, 0);
    for task in tasks {
        let (latencies, o, e) = task.await?;
        all.extend(latencies);
        over += o;
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .map_or(0.0, |&ns| ns as f64 / 1_000.0)
    };
    println!(
        "calls {} in {elapsed:.1} s: {:.0} calls/s, p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, over_limit {over}, errors {errors} ({} connections x {} in flight)",
        all.len(),
        all.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(0.999),
        args.connections,
        args.in_flight,
    );
    if all.is_empty() || errors > 0 {
        return Err(format!("{errors} calls failed").into());
    }
    Ok(())
}
