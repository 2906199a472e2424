//! A sliding-window limiter shared by threads: `cargo run --release --example quickstart`.
//!
//! Eight threads offer requests as fast as they can for 1.2 s against a limit of 1000 per
//! second; the program prints how many were admitted per thread and in total.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};

fn main() -> Result<(), ringlimit::ConfigError> {
    let limiter = Arc::new(
        SlidingWindow::builder(WindowQuota::per(1_000, Duration::from_secs(1))?.buckets(20)?)
            .build(),
    );
    let deadline = Instant::now() + Duration::from_millis(1200);
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let limiter = limiter.clone();
            std::thread::spawn(move || {
                let (mut offered, mut admitted) = (0u64, 0u64);
                while Instant::now() < deadline {
                    offered += 1;
                    admitted += u64::from(limiter.try_acquire());
                }
                (offered, admitted)
            })
        })
        .collect();
    let mut total = 0;
    for (i, worker) in workers.into_iter().enumerate() {
        let (offered, admitted) = worker.join().expect("worker");
        println!("thread {i}: {admitted} admitted of {offered} offered");
        total += admitted;
    }
    // The first 1000 pass in the first 50 ms bucket; that bucket leaves the window at 1.0 s,
    // so up to 1000 more pass by 1.2 s: never more than 1000 in any 20 consecutive buckets.
    println!(
        "total admitted: {total} (limit 1000 per 1 s window of 20 buckets: at most 2000 in 1.2 s)"
    );
    assert!(total <= 2_000);
    Ok(())
}
