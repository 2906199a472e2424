//! Multi-threaded stress tests of the window limiters against their guarantees.
//!
//! * Lock-step: threads admit between barriers while the clock stands still, so every
//!   step's outcome is checked exactly: never more than the spec had available, and no
//!   refusal of `n` while `n` permits were still available at the end of the step (within a
//!   step availability only falls, so such a refusal would be spurious).
//! * Free-running: a thread moves the clock forward continuously across thousands of
//!   rollovers while four threads admit; each admission is logged with the epochs read
//!   before and after the call (it was decided in an epoch between the two), and afterwards
//!   no B consecutive epochs may hold more than the limit.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::stress::{free_running, XorShift, THREADS, WIDTH};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec, Spec};
use ringlimit::{FixedWindow, RateLimiter, SlidingWindow, WindowQuota};

/// Lock-step run: returns the number of calls made.
fn lockstep<L, S>(limiter: L, mut spec: S, clock: ManualClock, steps: u64, calls: u64) -> u64
where
    L: RateLimiter + Send + Sync + 'static,
    S: Spec,
{
    let limiter = Arc::new(limiter);
    let start = Arc::new(Barrier::new(THREADS + 1));
    let end = Arc::new(Barrier::new(THREADS + 1));
    let (tx, rx) = std::sync::mpsc::channel::<(u64, u64, u64)>();
    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let (limiter, start, end, tx) =
                (limiter.clone(), start.clone(), end.clone(), tx.clone());
            thread::spawn(move || {
                let mut rng = XorShift(0x9E37_79B9 + id as u64);
                for _ in 0..steps {
                    start.wait();
                    // (admitted permits, smallest refused n, calls)
                    let (mut admitted, mut refused_min) = (0, u64::MAX);
                    for _ in 0..calls {
                        let n = if rng.next() % 8 == 0 {
                            1 + rng.next() % 3
                        } else {
                            1
                        };
                        let ok = if n == 1 {
                            limiter.try_acquire()
                        } else {
                            limiter
                                .try_acquire_n(n)
                                .map(|d| d.is_admitted())
                                .unwrap_or(false)
                        };
                        if ok {
                            admitted += n;
                        } else {
                            refused_min = refused_min.min(n);
                        }
                    }
                    tx.send((admitted, refused_min, calls)).unwrap();
                    end.wait();
                }
            })
        })
        .collect();
    let mut rng = XorShift(42);
    let mut total_calls = 0;
    for step in 0..steps {
        // Mostly small moves inside and across buckets, sometimes far jumps.
        let dt = match rng.next() % 16 {
            0 => WIDTH * (1 + rng.next() % 64),
            1..=8 => rng.next() % WIDTH,
            _ => 0,
        };
        clock.advance_nanos(dt);
        let now = clock.now_nanos();
        let limit = spec.limit();
        let before = spec.available(now);
        start.wait();
        end.wait();
        let (mut admitted, mut refused_min) = (0, u64::MAX);
        for (a, r, c) in rx.try_iter() {
            admitted += a;
            refused_min = refused_min.min(r);
            total_calls += c;
        }
        assert!(
            admitted <= before,
            "step {step}: admitted {admitted} of {before} available"
        );
        if admitted > 0 {
            // Record the step's admissions in the spec, in chunks it accepts.
            let mut left = admitted;
            while left > 0 {
                let chunk = left.min(limit);
                assert!(spec.decide(now, chunk).unwrap().is_admitted());
                left -= chunk;
            }
        }
        let after = spec.available(now);
        assert_eq!(
            limiter.available(),
            after,
            "step {step}: availability disagrees"
        );
        assert!(
            refused_min == u64::MAX || after < refused_min,
            "step {step}: refused {refused_min} while {after} remained"
        );
    }
    drop(tx);
    for w in workers {
        w.join().unwrap();
    }
    total_calls
}

#[test]
fn sliding_window_lockstep_is_exact() {
    for (limit, buckets) in [(7, 4), (100, 10), (1, 3)] {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WIDTH * buckets);
        let limiter = SlidingWindow::builder(
            WindowQuota::per(limit, window)
                .unwrap()
                .buckets(buckets)
                .unwrap(),
        )
        .clock(clock.clone())
        .build();
        let spec = SlidingWindowSpec::new(limit, window, buckets).unwrap();
        let calls = lockstep(limiter, spec, clock, 1500, 40);
        eprintln!("sliding lockstep limit {limit} B {buckets}: {calls} calls");
    }
}

#[test]
fn fixed_window_lockstep_is_exact() {
    let clock = ManualClock::new();
    let window = Duration::from_nanos(WIDTH);
    let limiter = FixedWindow::builder(WindowQuota::per(50, window).unwrap())
        .clock(clock.clone())
        .build();
    let spec = FixedWindowSpec::new(50, window).unwrap();
    let calls = lockstep(limiter, spec, clock, 2000, 40);
    eprintln!("fixed lockstep: {calls} calls");
}

#[test]
fn compact_sliding_window_lockstep_is_exact() {
    let clock = ManualClock::new();
    let window = Duration::from_nanos(WIDTH * 5);
    let limiter = SlidingWindow::builder(WindowQuota::per(20, window).unwrap().buckets(5).unwrap())
        .clock(clock.clone())
        .compact()
        .build();
    let spec = SlidingWindowSpec::new(20, window, 5).unwrap();
    let calls = lockstep(limiter, spec, clock, 1500, 40);
    eprintln!("compact sliding lockstep: {calls} calls");
}

#[test]
fn sliding_window_free_running_never_over_admits() {
    let (limit, buckets) = (40, 8);
    let clock = ManualClock::new();
    let limiter = SlidingWindow::builder(
        WindowQuota::per(limit, Duration::from_nanos(WIDTH * buckets))
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .build();
    let (calls, admitted, epochs) = free_running(limiter, clock, limit, buckets, 5_000);
    eprintln!("sliding free-running: {calls} calls, {admitted} admissions over {epochs} epochs");
    assert!(
        calls > 1_000_000,
        "too few calls to stress anything: {calls}"
    );
}

#[test]
fn fixed_window_free_running_never_over_admits() {
    let clock = ManualClock::new();
    let limiter = FixedWindow::builder(WindowQuota::per(30, Duration::from_nanos(WIDTH)).unwrap())
        .clock(clock.clone())
        .build();
    let (calls, admitted, epochs) = free_running(limiter, clock, 30, 1, 5_000);
    eprintln!("fixed free-running: {calls} calls, {admitted} admissions over {epochs} epochs");
    assert!(
        calls > 1_000_000,
        "too few calls to stress anything: {calls}"
    );
}
