//! Throughput of `try_acquire` on a sliding window and its sharded form at 1, 2 and 4
//! threads: `cargo run --release --example sharded_scaling`.
//!
//! The limit is allow-heavy (2^20 − 1 per 1 ms, the 64-bit words' largest), so nearly every call is admitted and the
//! cost measured is the admission path itself. Threads start together behind a barrier and
//! call for 300 ms each; the program prints millions of calls per second, all threads summed.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use ringlimit::{ConfigError, RateLimiter, SlidingWindow, WindowQuota};

const RUN: Duration = Duration::from_millis(300);

/// Calls `try_acquire` from `threads` threads for [`RUN`]; returns Mcalls/s in total.
fn measure<L: RateLimiter + Send + Sync + 'static>(limiter: L, threads: usize) -> f64 {
    let limiter = Arc::new(limiter);
    let barrier = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (limiter, barrier) = (limiter.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                let (start, mut calls) = (Instant::now(), 0u64);
                while start.elapsed() < RUN {
                    for _ in 0..256 {
                        std::hint::black_box(limiter.try_acquire());
                    }
                    calls += 256;
                }
                calls as f64 / start.elapsed().as_secs_f64()
            })
        })
        .collect();
    workers.into_iter().map(|w| w.join().unwrap()).sum::<f64>() / 1e6
}

/// The largest limit of the 64-bit window words (whose fast path is one `fetch_add`).
const NARROW_MAX_LIMIT: u64 = (1 << 20) - 1;

fn main() -> Result<(), ConfigError> {
    let quota = WindowQuota::per(NARROW_MAX_LIMIT, Duration::from_millis(1))?.buckets(10)?;
    let builder = || SlidingWindow::builder(quota);
    println!("threads  sliding Mops/s  sharded Mops/s");
    for threads in [1, 2, 4] {
        let plain = measure(builder().build(), threads);
        let sharded = measure(builder().sharded().build(), threads);
        println!("{threads:>7}  {plain:>14.1}  {sharded:>14.1}");
    }
    Ok(())
}
