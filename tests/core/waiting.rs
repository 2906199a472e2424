//! Blocking and async waits on the window family (the bucket family has its own files).
//!
//! A `ManualClock` sleeps by moving itself forward, so every wait here is instant and its
//! length exact; a wait that should not have slept shows as a clock that moved.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ringlimit::baseline::{ParkingLotLocked, StdLocked};
use ringlimit::clock::{Clock, ManualClock, StdClock};
use ringlimit::spec::{FixedWindowSpec, SlidingLogSpec, SlidingWindowSpec};
use ringlimit::Wait;
use ringlimit::{
    ApproxSlidingWindow, ExceedsLimit, FixedWindow, RateLimiter, SlidingLog, SlidingWindow,
    WaitError, WindowQuota,
};

const SEC: Duration = Duration::from_secs(1);

/// Every window-family limiter with limit 2 per second on `clock`.
fn limiters(clock: &ManualClock) -> Vec<(&'static str, Box<dyn RateLimiter>)> {
    vec![
        (
            "SlidingWindow",
            Box::new(
                SlidingWindow::builder(WindowQuota::per(2, SEC).unwrap().buckets(4).unwrap())
                    .clock(clock.clone())
                    .build(),
            ),
        ),
        (
            "FixedWindow",
            Box::new(
                FixedWindow::builder(WindowQuota::per(2, SEC).unwrap())
                    .clock(clock.clone())
                    .build(),
            ),
        ),
        (
            "SlidingLog",
            Box::new(
                SlidingLog::with_clock(WindowQuota::per(2, SEC).unwrap(), clock.clone()).unwrap(),
            ),
        ),
        (
            "ApproxSlidingWindow",
            Box::new(
                ApproxSlidingWindow::with_clock(WindowQuota::per(2, SEC).unwrap(), clock.clone())
                    .unwrap(),
            ),
        ),
        (
            "ParkingLotLocked<SlidingWindowSpec>",
            Box::new(ParkingLotLocked::with_clock(
                SlidingWindowSpec::new(2, SEC, 4).unwrap(),
                clock.clone(),
            )),
        ),
        (
            "StdLocked<FixedWindowSpec>",
            Box::new(StdLocked::with_clock(
                FixedWindowSpec::new(2, SEC).unwrap(),
                clock.clone(),
            )),
        ),
        (
            "ParkingLotLocked<SlidingLogSpec>",
            Box::new(ParkingLotLocked::with_clock(
                SlidingLogSpec::new(2, SEC).unwrap(),
                clock.clone(),
            )),
        ),
    ]
}

#[test]
fn acquire_waits_exactly_until_the_window_frees_a_permit() {
    let clock = ManualClock::new();
    for (name, limiter) in limiters(&clock) {
        clock.set_nanos(0);
        assert_eq!(limiter.acquire(), Duration::ZERO, "{name}");
        assert_eq!(limiter.acquire(), Duration::ZERO, "{name}");
        // Both permits were taken at 0: the next one is free when they leave the window.
        let waited = limiter.acquire();
        assert!(
            waited >= SEC && waited <= SEC + Duration::from_nanos(1),
            "{name}: waited {waited:?}"
        );
        assert_eq!(clock.now_nanos(), waited.as_nanos() as u64, "{name}");
    }
}

#[test]
fn try_acquire_for_refuses_at_once_when_the_timeout_is_too_short() {
    let clock = ManualClock::new();
    for (name, limiter) in limiters(&clock) {
        clock.set_nanos(0);
        assert!(limiter.try_acquire_n(2).unwrap().is_admitted(), "{name}");
        let half = SEC / 2;
        match limiter.try_acquire_for(1, half) {
            Err(WaitError::Timeout {
                retry_after,
                timeout,
            }) => {
                assert!(retry_after > half, "{name}: {retry_after:?}");
                assert_eq!(timeout, half, "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
        // Returned without sleeping: the manual clock would have moved.
        assert_eq!(clock.now_nanos(), 0, "{name}");
        // A zero timeout is a plain try.
        assert!(
            matches!(
                limiter.try_acquire_for(1, Duration::ZERO),
                Err(WaitError::Timeout { .. })
            ),
            "{name}"
        );
        assert_eq!(clock.now_nanos(), 0, "{name}");
        // Duration::MAX waits as long as it takes, and no longer.
        let waited = limiter.try_acquire_for(1, Duration::MAX).unwrap();
        assert!(
            waited >= SEC && waited <= SEC + Duration::from_nanos(1),
            "{name}"
        );
        // A timeout that is just long enough succeeds.
        let waited = limiter.try_acquire_for(1, SEC * 2).unwrap();
        assert!(waited <= SEC * 2, "{name}: {waited:?}");
    }
}

#[test]
fn more_than_the_limit_is_an_error_at_once_never_a_wait() {
    let clock = ManualClock::new();
    for (name, limiter) in limiters(&clock) {
        clock.set_nanos(0);
        let exceeds = ExceedsLimit {
            requested: 3,
            limit: 2,
        };
        assert_eq!(limiter.acquire_n(3), Err(exceeds.into()), "{name}");
        assert_eq!(
            limiter.try_acquire_for(3, Duration::MAX),
            Err(WaitError::from(exceeds)),
            "{name}"
        );
        assert_eq!(clock.now_nanos(), 0, "{name}: no time was spent");
        assert_eq!(limiter.acquire_n(0), Ok(Duration::ZERO), "{name}");
    }
}

#[test]
fn a_backwards_clock_never_makes_a_wait_admit_early() {
    let clock = ManualClock::starting_at(10 * SEC.as_nanos() as u64);
    for (name, limiter) in limiters(&clock) {
        clock.set(SEC * 10);
        assert_eq!(limiter.acquire_n(2), Ok(Duration::ZERO), "{name}");
        clock.set(SEC * 9);
        // The clock now reads a second earlier than the admissions; the wait must still
        // end no earlier than one window after them.
        limiter.acquire();
        assert!(clock.now_nanos() >= 11 * SEC.as_nanos() as u64, "{name}");
    }
}

#[test]
fn a_lowered_limit_ends_a_wait_with_an_error() {
    let limiter = Arc::new(
        FixedWindow::builder(WindowQuota::per(2, Duration::from_millis(200)).unwrap())
            .clock(StdClock::new())
            .build(),
    );
    assert!(limiter.try_acquire_n(2).unwrap().is_admitted());
    let waiter = {
        let limiter = Arc::clone(&limiter);
        std::thread::spawn(move || limiter.acquire_n(2))
    };
    std::thread::sleep(Duration::from_millis(50));
    limiter.set_limit(1).unwrap();
    assert_eq!(
        waiter.join().unwrap(),
        Err(ExceedsLimit {
            requested: 2,
            limit: 1
        }
        .into())
    );
}

#[test]
fn blocking_waiters_on_a_real_clock_get_exactly_their_permits() {
    // 4 threads × 6 permits at 8 per 100 ms: the last ones wait for the third window.
    let limiter = Arc::new(
        FixedWindow::builder(WindowQuota::per(8, Duration::from_millis(100)).unwrap())
            .clock(StdClock::new())
            .build(),
    );
    let start = Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || {
                for _ in 0..6 {
                    limiter.acquire();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    // 24 permits at 8 per aligned window need three windows, the third starting at 200 ms
    // on the limiter's clock (which started before `start`).
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(190), "{elapsed:?}");
    assert!(limiter.clock().now_nanos() >= 200_000_000);
}

#[cfg(feature = "tokio")]
mod tokio_waits {
    use super::*;
    use ringlimit::clock::TokioClock;

    fn window() -> SlidingWindow<TokioClock> {
        SlidingWindow::builder(WindowQuota::per(2, SEC).unwrap().buckets(4).unwrap())
            .clock(TokioClock::new())
            .build()
    }

    #[tokio::test(start_paused = true)]
    async fn until_ready_sleeps_on_tokios_clock() {
        let limiter = window();
        let start = tokio::time::Instant::now();
        assert_eq!(limiter.until_ready().await, Duration::ZERO);
        assert_eq!(limiter.until_n_ready(1).await, Ok(Duration::ZERO));
        let waited = limiter.until_ready().await;
        assert_eq!(waited, SEC);
        assert_eq!(start.elapsed(), SEC);
        assert_eq!(
            limiter.until_n_ready(3).await,
            Err(ExceedsLimit {
                requested: 3,
                limit: 2
            }
            .into())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_wait_takes_nothing() {
        let limiter = window();
        assert!(limiter.try_acquire_n(2).unwrap().is_admitted());
        let timed_out =
            tokio::time::timeout(Duration::from_millis(300), limiter.until_ready()).await;
        assert!(timed_out.is_err());
        tokio::time::advance(SEC).await;
        // The abandoned wait took nothing: both permits are free a window later.
        assert_eq!(limiter.available(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_async_waiters_share_the_window() {
        let limiter = Arc::new(window());
        let start = tokio::time::Instant::now();
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let limiter = Arc::clone(&limiter);
                tokio::spawn(async move { limiter.until_ready().await })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        // 6 permits at 2 per second: the last two go in the third second.
        assert_eq!(start.elapsed(), SEC * 2);
    }
}
