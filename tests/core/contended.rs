//! Contended admissions on a frozen clock admit exactly what the spec allows
//! (no over-admission, no spurious refusal), exercising the out-of-line backoff retries.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ringlimit::clock::ManualClock;
use ringlimit::{ApproxSlidingWindow, BucketQuota, Rate, RateLimiter, TokenBucket, WindowQuota};

fn hammer<L: RateLimiter + Sync>(limiter: &L, threads: u64) -> u64 {
    let admitted = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (limiter, admitted) = (&limiter, &admitted);
            s.spawn(move || {
                let mut refusals = 0;
                let mut i = 0u64;
                while refusals < 200 {
                    let n = if t % 2 == 0 { 1 } else { 1 + (i % 3) };
                    i += 1;
                    match limiter.try_acquire_n(n).unwrap() {
                        d if d.is_admitted() => {
                            admitted.fetch_add(n, Ordering::Relaxed);
                        }
                        _ if n == 1 => refusals += 1,
                        _ => {}
                    }
                }
            });
        }
    });
    admitted.into_inner()
}

#[test]
fn approx_window_contended_admissions_are_exact() {
    for round in 0..200u64 {
        let clock = ManualClock::new();
        let (n, w) = (1000u64, 1_000_000u64);
        let limiter = ApproxSlidingWindow::with_clock(
            WindowQuota::per(n, Duration::from_nanos(w)).unwrap(),
            clock.clone(),
        )
        .unwrap();
        clock.set_nanos(round * 3 * w + 5);
        assert_eq!(hammer(&limiter, 4), n, "round {round} window 0");
        // Half-way through the next window: the estimate is floor(1000 * W/2 / W) = 500.
        clock.set_nanos(round * 3 * w + w + w / 2 + 1);
        let est = n * (w - (w / 2 + 1)) / w;
        assert_eq!(hammer(&limiter, 4), n - est, "round {round} window 1");
    }
}

#[test]
fn token_bucket_contended_admissions_are_exact() {
    for round in 0..200u64 {
        let clock = ManualClock::new();
        let quota = BucketQuota::new(Rate::per_second(1000).unwrap(), 500).unwrap();
        let bucket = TokenBucket::builder(quota).clock(clock.clone()).build();
        clock.set_nanos(round);
        assert_eq!(hammer(&bucket, 4), 500, "round {round}");
        clock.set_nanos(round + 100_000_000); // 0.1 s: 100 more
        assert_eq!(hammer(&bucket, 4), 100, "round {round} refill");
    }
}
