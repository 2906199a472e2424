//! What the layer costs per request, in process (no network, one thread): a trivial
//! service called bare, then through the layer over a rule set admitting, then refusing.
//! Each figure is the median of 21 batches of 100 000 calls, headers and bodies built.
//!
//! ```text
//! cargo run --release -p ringlimit-tower --example overhead
//! ```
//!
//! For a profile, `--calls N` makes `N` calls of one case (`bare`, `admit` or `refuse`) and
//! nothing else; the instructions per call are the difference of two such runs under
//! callgrind, divided by the difference of their `N`:
//!
//! ```text
//! valgrind --tool=callgrind target/release/examples/overhead --calls 1000 admit
//! valgrind --tool=callgrind target/release/examples/overhead --calls 11000 admit
//! ```

use std::convert::Infallible;
use std::future::{ready, Future, Ready};
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use http::{Request, Response};
use ringlimit::rules::{Format, RuleSet};
use ringlimit_tower::{RateLimitLayer, Route};
use tower_layer::Layer;
use tower_service::Service;

#[derive(Clone)]
struct Hello;

impl Service<Request<()>> for Hello {
    type Response = Response<String>;
    type Error = Infallible;
    type Future = Ready<Result<Response<String>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        ready(Ok(Response::new(String::from("hello"))))
    }
}

/// A request as axum hands it to the layer: the peer and the matched route attached.
fn request(peer: SocketAddr) -> Request<()> {
    let mut request = Request::new(());
    request.extensions_mut().insert(peer);
    request
        .extensions_mut()
        .insert(Route("/api/orders/{id}".into()));
    request
}

/// Median ns per call of `call` over 21 batches.
fn measure<S, R>(service: &mut S, peer: SocketAddr) -> f64
where
    S: Service<Request<()>, Response = Response<R>>,
    S::Error: std::fmt::Debug,
{
    const BATCH: u32 = 100_000;
    let mut context = Context::from_waker(Waker::noop());
    let mut batches: Vec<f64> = (0..21)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..BATCH {
                let future = pin!(service.call(request(peer)));
                match future.poll(&mut context) {
                    Poll::Ready(response) => drop(std::hint::black_box(response.unwrap())),
                    Poll::Pending => unreachable!("in-process decisions are ready at once"),
                }
            }
            start.elapsed().as_nanos() as f64 / f64::from(BATCH)
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    batches[batches.len() / 2]
}

fn layered(
    rules: &str,
) -> impl Service<Request<()>, Response = Response<impl Sized>, Error = Infallible> {
    let set = RuleSet::new();
    set.reload_str(Format::Yaml, rules).expect("the rules load");
    RateLimitLayer::builder(Arc::new(set)).build().layer(Hello)
}

/// `calls` calls of `service`, for a profile.
fn run<S, R>(service: &mut S, peer: SocketAddr, calls: u64)
where
    S: Service<Request<()>, Response = Response<R>>,
    S::Error: std::fmt::Debug,
{
    let mut context = Context::from_waker(Waker::noop());
    for _ in 0..calls {
        let future = pin!(service.call(request(peer)));
        match future.poll(&mut context) {
            Poll::Ready(response) => drop(std::hint::black_box(response.unwrap())),
            Poll::Pending => unreachable!("in-process decisions are ready at once"),
        }
    }
}

fn main() {
    let peer: SocketAddr = "192.0.2.7:40000".parse().expect("an address");
    let admit = "rules:\n  - {name: per-ip, key: client_ip, algorithm: fixed_window, limit: 1000000, window: 1ms}\n";
    let refuse = "rules:\n  - {name: per-ip, key: client_ip, algorithm: fixed_window, rate: 1/h}\n";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, calls, case] = args.as_slice() {
        let calls: u64 = match (flag.as_str(), calls.parse()) {
            ("--calls", Ok(calls)) => calls,
            _ => usage(),
        };
        match case.as_str() {
            "bare" => run(&mut Hello, peer, calls),
            "admit" => run(&mut layered(admit), peer, calls),
            "refuse" => run(&mut layered(refuse), peer, calls),
            _ => usage(),
        }
        return;
    } else if !args.is_empty() {
        usage();
    }
    let bare = measure(&mut Hello, peer);
    let admitting = measure(&mut layered(admit), peer);
    let refusing = measure(&mut layered(refuse), peer);
    println!("bare service        {bare:7.0} ns/request");
    println!(
        "layer, admitting    {admitting:7.0} ns/request (+{:.0})",
        admitting - bare
    );
    println!(
        "layer, refusing     {refusing:7.0} ns/request (+{:.0})",
        refusing - bare
    );
}

fn usage() -> ! {
    eprintln!("usage: overhead [--calls N bare|admit|refuse]");
    std::process::exit(2);
}
