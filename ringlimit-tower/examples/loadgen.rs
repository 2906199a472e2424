//! A small HTTP/1 load generator: `connections` keep-alive connections, each sending GETs
//! back to back for `seconds`; prints requests/s, p50 and p99 latency, and the statuses.
//!
//! ```text
//! cargo run --release -p ringlimit-tower --example loadgen -- \
//!     --url http://127.0.0.1:8080/ [--connections 32] [--seconds 10] [--header x-user-id:alice]
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Uri};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

struct Args {
    url: Uri,
    connections: usize,
    seconds: u64,
    headers: Vec<(String, String)>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        url: Uri::from_static("http://127.0.0.1:8080/"),
        connections: 32,
        seconds: 10,
        headers: Vec::new(),
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => parsed.url = value.parse().map_err(|e| format!("--url: {e}"))?,
            "--connections" => parsed.connections = value.parse().map_err(|e| format!("{e}"))?,
            "--seconds" => parsed.seconds = value.parse().map_err(|e| format!("{e}"))?,
            "--header" => {
                let (name, value) = value.split_once(':').ok_or("--header name:value")?;
                parsed
                    .headers
                    .push((name.trim().into(), value.trim().into()));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(parsed)
}

/// One connection's run: its latencies (ns) and statuses.
async fn connection(args: &Args, until: Instant) -> Result<(Vec<u64>, BTreeMap<u16, u64>), String> {
    let authority = args.url.authority().ok_or("the URL has no host")?.as_str();
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let (mut latencies, mut statuses) = (Vec::new(), BTreeMap::new());
    while Instant::now() < until {
        let mut request = Request::get(args.url.path()).header("host", authority);
        for (name, value) in &args.headers {
            request = request.header(name, value);
        }
        let request = request
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        sender.ready().await.map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        latencies.push(start.elapsed().as_nanos() as u64);
        *statuses.entry(status).or_insert(0) += 1;
    }
    Ok((latencies, statuses))
}

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("loadgen: {error}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let args = std::sync::Arc::new(args);
    let start = Instant::now();
    let until = start + Duration::from_secs(args.seconds);
    let results = runtime.block_on(async {
        let tasks: Vec<_> = (0..args.connections)
            .map(|_| {
                let args = args.clone();
                tokio::spawn(async move { connection(&args, until).await })
            })
            .collect();
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.expect("a connection task"));
        }
        results
    });
    let elapsed = start.elapsed().as_secs_f64();
    let (mut latencies, mut statuses) = (Vec::new(), BTreeMap::new());
    for result in results {
        match result {
            Ok((l, s)) => {
                latencies.extend(l);
                for (status, n) in s {
                    *statuses.entry(status).or_insert(0) += n;
                }
            }
            Err(error) => eprintln!("loadgen: a connection failed: {error}"),
        }
    }
    if latencies.is_empty() {
        eprintln!("loadgen: no request completed");
        std::process::exit(1);
    }
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize] as f64 / 1e3;
    println!(
        "{} requests in {elapsed:.1} s: {:.0} req/s, p50 {:.1} µs, p99 {:.1} µs, statuses {statuses:?}",
        latencies.len(),
        latencies.len() as f64 / elapsed,
        at(0.50),
        at(0.99),
    );
}
