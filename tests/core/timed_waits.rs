//! One boundary rule for every timed wait: a permit that becomes available exactly at the
//! deadline is reachable in time, so the wait sleeps until then and takes it; one that
//! becomes available a nanosecond later is a timeout at once, with nothing slept.
//!
//! Table-driven over every family (windows, log, approximate window, sharded window,
//! buckets, sharded bucket, shaper, warm-up, the mutex baselines) and the policy waits, on a
//! `ManualClock` (tokio's paused clock for the async policy wait), where a wait's length
//! is exact.

use std::sync::Arc;
use std::time::Duration;

use ringlimit::baseline::{ParkingLotLocked, StdLocked};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{FixedWindowSpec, TokenBucketSpec};
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, FixedWindow, LeakyBucket, Rate, RateLimiter, ShaperQuota,
    SlidingLog, SlidingWindow, TokenBucket, Wait, WaitError, WarmUp, WarmUpQuota, WindowQuota,
};

const SEC: Duration = Duration::from_secs(1);
const NS: Duration = Duration::from_nanos(1);

type Shared = Arc<dyn RateLimiter + Send + Sync>;

/// One limiter of every family, one permit per second, each on `clock`.
fn families(clock: &ManualClock) -> Vec<(&'static str, Shared)> {
    let rate = Rate::per_second(1).unwrap();
    let window = || WindowQuota::per(1, SEC).unwrap();
    let bucket = || BucketQuota::new(rate, 1).unwrap();
    vec![
        (
            "SlidingWindow",
            Arc::new(
                SlidingWindow::builder(window().buckets(4).unwrap())
                    .clock(clock.clone())
                    .build(),
            ),
        ),
        (
            "FixedWindow",
            Arc::new(FixedWindow::builder(window()).clock(clock.clone()).build()),
        ),
        (
            "SlidingLog",
            Arc::new(SlidingLog::with_clock(window(), clock.clone()).unwrap()),
        ),
        (
            "ApproxSlidingWindow",
            Arc::new(ApproxSlidingWindow::with_clock(window(), clock.clone()).unwrap()),
        ),
        (
            "ShardedWindow",
            Arc::new(
                FixedWindow::builder(window())
                    .clock(clock.clone())
                    .sharded()
                    .shards(1)
                    .batch(1)
                    .build(),
            ),
        ),
        (
            "TokenBucket",
            Arc::new(TokenBucket::builder(bucket()).clock(clock.clone()).build()),
        ),
        (
            "LeakyBucket::meter",
            Arc::new(
                LeakyBucket::meter_builder(bucket())
                    .clock(clock.clone())
                    .build(),
            ),
        ),
        (
            "LeakyBucket::shaper",
            Arc::new(
                LeakyBucket::shaper_builder(ShaperQuota::new(rate, 10 * SEC).unwrap())
                    .clock(clock.clone())
                    .build(),
            ),
        ),
        (
            "ShardedBucket",
            Arc::new(
                TokenBucket::builder(bucket())
                    .clock(clock.clone())
                    .sharded()
                    .shards(1)
                    .batch(1)
                    .build(),
            ),
        ),
        (
            "WarmUp",
            Arc::new(
                WarmUp::builder(WarmUpQuota::new(rate, 4 * SEC).unwrap())
                    .clock(clock.clone())
                    .build(),
            ),
        ),
        (
            "StdLocked<FixedWindowSpec>",
            Arc::new(StdLocked::with_clock(
                FixedWindowSpec::new(1, SEC).unwrap(),
                clock.clone(),
            )),
        ),
        (
            "ParkingLotLocked<TokenBucketSpec>",
            Arc::new(ParkingLotLocked::with_clock(
                TokenBucketSpec::new(rate, 1).unwrap(),
                clock.clone(),
            )),
        ),
    ]
}

/// Takes the only permit of `limiter` and returns how long until the next one.
fn exhaust(name: &str, limiter: &dyn RateLimiter) -> Duration {
    assert!(limiter.try_acquire(), "{name}: the first permit");
    let next_in = limiter.try_acquire_n(1).unwrap().retry_after();
    assert!(next_in > NS, "{name}: the next permit is {next_in:?} away");
    next_in
}

/// Runs `check` on every family and fails with the names of those it fails for.
fn each_family(check: impl Fn(&str, &Shared) -> Result<(), String>) {
    let failed: Vec<String> = families(&ManualClock::new())
        .iter()
        .filter_map(|(name, limiter)| check(name, limiter).err())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn try_acquire_for_takes_a_permit_that_frees_exactly_at_the_deadline() {
    each_family(|name, limiter| {
        let clock = limiter.clock();
        let next_in = exhaust(name, &**limiter);
        // A nanosecond short: a timeout at once, nothing slept, nothing taken.
        let start = clock.now_nanos();
        let short = limiter.try_acquire_for(1, next_in - NS);
        if !matches!(short, Err(WaitError::Timeout { retry_after, .. }) if retry_after == next_in)
            || clock.now_nanos() != start
        {
            return Err(format!(
                "{name}: 1 ns short: {short:?}, slept {}",
                clock.now_nanos() - start
            ));
        }
        // Exactly enough: the permit frees at the deadline, and the wait takes it there.
        let exact = limiter.try_acquire_for(1, next_in);
        if exact != Ok(next_in) || clock.now_nanos() - start != next_in.as_nanos() as u64 {
            return Err(format!(
                "{name}: free at the deadline {next_in:?}: {exact:?}"
            ));
        }
        Ok(())
    });
}

#[cfg(feature = "keyed")]
mod policy_waits {
    use super::*;
    use ringlimit::policy::{Policy, PolicyDecision};

    #[test]
    fn policy_waits_take_a_permit_that_frees_exactly_at_the_deadline() {
        each_family(|name, limiter| {
            let clock = limiter.clock();
            let next_in = exhaust(name, &**limiter);
            let start = clock.now_nanos();
            let policy = Policy::<()>::builder()
                .shared("only", Arc::clone(limiter))
                .clock(SharedClock(Arc::clone(limiter)))
                .build();
            // A nanosecond short: refused at once, nothing slept.
            let short = policy.check_within(&(), 1, next_in - NS).unwrap();
            if !matches!(short, PolicyDecision::Refused { retry_after, .. } if retry_after == next_in)
                || clock.now_nanos() != start
            {
                return Err(format!("{name}: 1 ns short: {short:?}"));
            }
            // Exactly enough: admitted at the deadline.
            let exact = policy.check_within(&(), 1, next_in).unwrap();
            if !exact.is_admitted() || clock.now_nanos() - start != next_in.as_nanos() as u64 {
                return Err(format!(
                    "{name}: free at the deadline {next_in:?}: {exact:?}"
                ));
            }
            Ok(())
        });
    }

    /// A policy clock that is the limiter's own (a `ManualClock` behind the trait object).
    struct SharedClock(Shared);

    impl Clock for SharedClock {
        fn now_nanos(&self) -> u64 {
            self.0.clock().now_nanos()
        }

        fn sleep(&self, duration: Duration) {
            self.0.clock().sleep(duration);
        }
    }
}

#[cfg(all(feature = "tokio", feature = "keyed"))]
mod async_policy {
    use super::*;
    use ringlimit::clock::TokioClock;
    use ringlimit::policy::Policy;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn until_checked_takes_a_permit_that_frees_exactly_at_the_deadline() {
        let rate = Rate::per_second(1).unwrap();
        let limiters: Vec<(&str, Shared)> = vec![
            (
                "FixedWindow",
                Arc::new(
                    FixedWindow::builder(WindowQuota::per(1, SEC).unwrap())
                        .clock(TokioClock::new())
                        .build(),
                ),
            ),
            (
                "TokenBucket",
                Arc::new(
                    TokenBucket::builder(BucketQuota::new(rate, 1).unwrap())
                        .clock(TokioClock::new())
                        .build(),
                ),
            ),
        ];
        for (name, limiter) in limiters {
            let next_in = exhaust(name, &*limiter);
            let policy = Policy::<()>::builder()
                .shared("only", Arc::clone(&limiter))
                .clock(TokioClock::new())
                .build();
            let start = tokio::time::Instant::now();
            let refused = policy.until_checked(&(), 1, next_in - NS).await.unwrap();
            assert!(!refused.is_admitted(), "{name}");
            assert_eq!(
                start.elapsed(),
                Duration::ZERO,
                "{name}: slept on a timeout"
            );
            let admitted = policy.until_checked(&(), 1, next_in).await.unwrap();
            assert!(
                admitted.is_admitted(),
                "{name}: a permit free at the deadline"
            );
            assert_eq!(start.elapsed(), next_in, "{name}");
        }
    }
}
