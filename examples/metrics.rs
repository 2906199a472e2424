//! A policy's metrics in Prometheus' text format: installs `metrics-exporter-prometheus`
//! with an HTTP listener on a loopback port, then runs simulated traffic through a
//! three-dimension policy (global, per IP, per user) until the given seconds have passed.
//!
//! ```text
//! cargo run --example metrics --features metrics -- 9000 30   # port, seconds (default 60)
//! RINGLIMIT_METRICS_PORT=9000 cargo run --example metrics --features metrics
//! curl -s http://127.0.0.1:9000/metrics | grep ringlimit_
//! ```
//!
//! Point a Prometheus at it with `docs/alerts.yml` as a rule file to see
//! `HighWindowUtilization` fire: about 100 requests a second from four IPs keep the `ip`
//! rule (8/s each) at its limit.
//! `cargo test --all-features` runs this file's test: a real scrape of this exporter.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{BuildError, PrometheusBuilder};
use ringlimit::cell::WindowConfig;
use ringlimit::clock::{Clock, TscClock};
use ringlimit::keyed::{FixedWindows, Keyed};
use ringlimit::policy::Policy;
use ringlimit::{FixedWindow, WindowQuota};

/// What the policy looks at in a request.
struct Request {
    user: String,
    ip: IpAddr,
}

/// Global 40/s, then 8/s per IP, then 5/s per user, on `clock`. The rule labels are the
/// dimension names; the users and IPs never appear in the metrics.
fn policy<C: Clock + Clone + Send + Sync + 'static>(clock: C) -> Policy<Request> {
    let per_second = |n| WindowQuota::per(n, Duration::from_secs(1)).expect("a valid quota");
    let global = Arc::new(
        FixedWindow::builder(per_second(40))
            .clock(clock.clone())
            .build(),
    );
    let per_ip = Arc::new(Keyed::<IpAddr, FixedWindows, C>::with_config(
        WindowConfig::new(per_second(8)).expect("a limit a keyed window holds"),
        clock.clone(),
    ));
    let per_user = Arc::new(Keyed::<String, FixedWindows, C>::with_config(
        WindowConfig::new(per_second(5)).expect("a limit a keyed window holds"),
        clock,
    ));
    Policy::builder()
        .shared("global", global)
        .per_key("ip", per_ip, |r: &Request| Some(r.ip))
        .per_key("user", per_user, |r: &Request| Some(r.user.clone()))
        .build()
}

/// Installs the Prometheus recorder, serving `/metrics` on `addr`: before any policy is
/// built, so that policies register their handles with it.
fn install_exporter(addr: SocketAddr) -> Result<(), BuildError> {
    PrometheusBuilder::new().with_http_listener(addr).install()
}

/// The port: the first argument, else `RINGLIMIT_METRICS_PORT`, else 9000; the seconds to
/// run: the second argument, else 60.
#[cfg_attr(test, allow(dead_code))]
fn settings() -> Result<(u16, u64), String> {
    let mut args = std::env::args().skip(1);
    let port = match args
        .next()
        .or_else(|| std::env::var("RINGLIMIT_METRICS_PORT").ok())
    {
        Some(port) => port.parse().map_err(|_| format!("not a port: {port}"))?,
        None => 9000,
    };
    let seconds = match args.next() {
        Some(seconds) => seconds
            .parse()
            .map_err(|_| format!("not a number of seconds: {seconds}"))?,
        None => 60,
    };
    Ok((port, seconds))
}

#[cfg_attr(test, allow(dead_code))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (port, seconds) = settings()?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    install_exporter(addr)?;
    let policy = policy(TscClock::new());
    println!("serving http://{addr}/metrics for {seconds} s");
    let end = Instant::now() + Duration::from_secs(seconds);
    let (mut admitted, mut refused) = (0u64, 0u64);
    let mut i = 0u64;
    while Instant::now() < end {
        // Ten users on four IPs, every third request from user 0 (the heavy one).
        i += 1;
        let user = if i % 3 == 0 { 0 } else { i % 10 };
        let request = Request {
            user: format!("user-{user}"),
            ip: IpAddr::V4(Ipv4Addr::new(192, 0, 2, (user % 4) as u8)),
        };
        if policy.check(&request)?.is_admitted() {
            admitted += 1;
        } else {
            refused += 1;
        }
        if i % 100 == 0 {
            println!("admitted {admitted}, refused {refused}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
    use std::time::Duration;

    use ringlimit::clock::ManualClock;

    use super::*;

    /// Installs the exporter on a free loopback port (found by binding port 0; retried if
    /// another process takes it in between).
    fn install_on_free_port() -> SocketAddr {
        let mut last = None;
        for _ in 0..5 {
            let addr = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|listener| listener.local_addr())
                .expect("a free loopback port");
            match install_exporter(addr) {
                Ok(()) => return addr,
                Err(error) => last = Some(error),
            }
        }
        panic!("no exporter installed: {last:?}");
    }

    /// `GET /metrics` over TCP; the body.
    fn scrape(addr: SocketAddr) -> String {
        let mut stream = (0..50)
            .find_map(|_| {
                TcpStream::connect(addr)
                    .map_err(|_| std::thread::sleep(Duration::from_millis(20)))
                    .ok()
            })
            .expect("the exporter accepts connections");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        // HTTP/1.0: the body is not chunked, and the server closes the connection after it.
        write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{head}"
        );
        assert!(!head.to_ascii_lowercase().contains("chunked"), "{head}");
        body.to_owned()
    }

    /// The `ringlimit_` samples, `name{labels}` to value.
    fn samples(body: &str) -> BTreeMap<String, f64> {
        body.lines()
            .filter(|line| line.starts_with("ringlimit_"))
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("`series value`");
                (series.to_owned(), value.parse().expect("a number"))
            })
            .collect()
    }

    #[test]
    fn a_scrape_shows_the_three_families_per_rule_and_no_key() {
        let addr = install_on_free_port();
        let policy = policy(ManualClock::new()); // the clock stands still: one window
        let from = |user: &str| Request {
            user: user.to_owned(),
            ip: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        };
        let decisions: Vec<bool> = ["alice"; 6]
            .into_iter()
            .chain(["bob"; 4])
            .map(|user| policy.check(&from(user)).unwrap().is_admitted())
            .collect();
        // alice: 5 of 5, then refused by `user`; bob: the IP's 6th to 8th, then refused by
        // `ip` (alice's 6th was refunded by `global` and `ip`).
        let admitted = [true, true, true, true, true, false, true, true, true, false];
        assert_eq!(decisions, admitted);

        let body = scrape(addr);
        for family in [
            "# TYPE ringlimit_requests_total counter",
            "# TYPE ringlimit_window_count gauge",
            "# TYPE ringlimit_utilization gauge",
            "# HELP ringlimit_utilization ",
        ] {
            assert!(body.contains(family), "no `{family}` in:\n{body}");
        }
        for key in ["alice", "bob", "10.0.0.1"] {
            assert!(!body.contains(key), "the key `{key}` is in:\n{body}");
        }
        let expected = BTreeMap::from([
            (
                r#"ringlimit_requests_total{rule="global",result="allowed"}"#,
                8.0,
            ),
            (
                r#"ringlimit_requests_total{rule="global",result="rejected"}"#,
                0.0,
            ),
            (
                r#"ringlimit_requests_total{rule="ip",result="allowed"}"#,
                8.0,
            ),
            (
                r#"ringlimit_requests_total{rule="ip",result="rejected"}"#,
                1.0,
            ),
            (
                r#"ringlimit_requests_total{rule="user",result="allowed"}"#,
                8.0,
            ),
            (
                r#"ringlimit_requests_total{rule="user",result="rejected"}"#,
                1.0,
            ),
            // `global`: bob's 3rd, the last it kept: 8 of 40.
            (r#"ringlimit_window_count{rule="global"}"#, 8.0),
            (r#"ringlimit_utilization{rule="global"}"#, 0.2),
            // `ip`: its refusal of bob's 4th: 8 of 8.
            (r#"ringlimit_window_count{rule="ip"}"#, 8.0),
            (r#"ringlimit_utilization{rule="ip"}"#, 1.0),
            // `user`: bob's 3rd: 3 of 5.
            (r#"ringlimit_window_count{rule="user"}"#, 3.0),
            (r#"ringlimit_utilization{rule="user"}"#, 0.6),
        ])
        .into_iter()
        .map(|(series, value)| (series.to_owned(), value))
        .collect::<BTreeMap<_, _>>();
        assert_eq!(samples(&body), expected, "{body}");
    }
}
