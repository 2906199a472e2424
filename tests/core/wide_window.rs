//! Window limits past 2^20 − 1: the engine in 128-bit words (`SlidingWindow::MAX_LIMIT` is
//! 2^40 − 1), exact like the 64-bit one.
//!
//! * Ten million per hour, in lock-step: four threads admit between barriers while the clock
//!   stands still, every step checked against the spec; exactly 10 000 000 are admitted in
//!   the hour, none more, and the window opens again exactly when its first bucket leaves.
//! * Traces of the wide words at small limits (`WindowBuilder::wide`) against the spec, as
//!   the 64-bit windows' traces are, and a free-running stress across thousands of
//!   rollovers.
//! * Limits past 2^32 taken in one call, `set_limit` up to the width's ceiling, refunds.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::stress::{free_running, lockstep, WIDTH};
use common::{check_trace, ops, Op};
use proptest::prelude::*;
use ringlimit::clock::ManualClock;
use ringlimit::outcome::{Admission, Decision};
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec, Spec};
use ringlimit::{ConfigError, FixedWindow, RateLimiter, SlidingWindow, WindowQuota};

const HOUR: Duration = Duration::from_secs(3600);
const TEN_MILLION: u64 = 10_000_000;

#[test]
fn ten_million_per_hour_admits_exactly_that_many_in_lock_step() {
    let clock = ManualClock::new();
    let quota = WindowQuota::per_hour(TEN_MILLION).unwrap();
    let limiter = Arc::new(SlidingWindow::builder(quota).clock(clock.clone()).build());
    assert_eq!(limiter.max_limit(), SlidingWindow::MAX_LIMIT);
    let mut spec = SlidingWindowSpec::new(TEN_MILLION, HOUR, quota.bucket_count()).unwrap();
    // 4 threads × 260 steps × 10 000 calls of 1 to 3 permits: 10.4 M calls, the last of
    // them refused.
    let (calls, admitted) = lockstep(&limiter, &mut spec, &clock, 260, 10_000);
    assert_eq!(calls, 10_400_000);
    assert_eq!(admitted, TEN_MILLION);
    assert_eq!(
        (limiter.available(), spec.available(clock_now(&clock))),
        (0, 0)
    );
    assert!(!limiter.try_acquire());

    // Six minutes on (one bucket of ten): the permits still count.
    clock.advance(HOUR / 10);
    assert!(!limiter.try_acquire());
    assert_eq!(limiter.available(), 0);
    // An hour after they were taken they have left the window, all at once.
    clock.advance(HOUR - HOUR / 10);
    assert_eq!(limiter.available(), TEN_MILLION);
    assert_eq!(spec.available(clock_now(&clock)), TEN_MILLION);
    // Calls take 1 to 3 permits: at least 80 000 of them are admitted, none refused.
    let (calls, again) = lockstep(&limiter, &mut spec, &clock, 20, 1_000);
    assert!(
        again >= calls && again <= 3 * calls,
        "{again} of {calls} calls"
    );
    assert_eq!(limiter.available(), TEN_MILLION - again);
}

fn clock_now(clock: &ManualClock) -> u64 {
    ringlimit::clock::Clock::now_nanos(clock)
}

#[test]
fn limits_past_two_to_the_thirty_two_are_taken_whole() {
    let clock = ManualClock::new();
    let limit = 5_000_000_000;
    let limiter = FixedWindow::builder(WindowQuota::per_minute(limit).unwrap())
        .clock(clock.clone())
        .build();
    assert_eq!(
        limiter.try_acquire_n(1 << 32).unwrap(),
        Decision::Admitted {
            remaining: limit - (1 << 32)
        }
    );
    assert!(!limiter
        .try_acquire_n(limit - (1 << 32) + 1)
        .unwrap()
        .is_admitted());
    assert!(limiter
        .try_acquire_n(limit - (1 << 32) - 1)
        .unwrap()
        .is_admitted());
    assert!(limiter.try_acquire());
    assert!(!limiter.try_acquire());
    assert_eq!(limiter.available(), 0);
    let too_many = limiter.try_acquire_n(limit + 1).unwrap_err();
    assert_eq!((too_many.requested, too_many.limit), (limit + 1, limit));
    clock.advance(Duration::from_secs(60));
    assert_eq!(limiter.available(), limit);
}

#[test]
fn set_limit_stops_at_the_width_ceiling() {
    let narrow = SlidingWindow::new(WindowQuota::per_second(100).unwrap());
    assert_eq!(narrow.max_limit(), (1 << 20) - 1);
    assert_eq!(
        narrow.set_limit(1 << 20),
        Err(ConfigError::LimitTooLarge {
            limit: 1 << 20,
            max: (1 << 20) - 1
        })
    );
    assert_eq!(narrow.limit(), 100);

    let wide = SlidingWindow::builder(WindowQuota::per_second(100).unwrap())
        .wide()
        .build();
    assert_eq!(wide.max_limit(), SlidingWindow::MAX_LIMIT);
    wide.set_limit(SlidingWindow::MAX_LIMIT).unwrap();
    assert_eq!(wide.available(), SlidingWindow::MAX_LIMIT);
    assert_eq!(
        wide.set_limit(SlidingWindow::MAX_LIMIT + 1),
        Err(ConfigError::LimitTooLarge {
            limit: SlidingWindow::MAX_LIMIT + 1,
            max: SlidingWindow::MAX_LIMIT
        })
    );
    assert!(wide
        .try_acquire_n(SlidingWindow::MAX_LIMIT)
        .unwrap()
        .is_admitted());
    assert!(!wide.try_acquire());
    assert_eq!(
        WindowQuota::per_second(SlidingWindow::MAX_LIMIT + 1),
        Err(ConfigError::LimitTooLarge {
            limit: SlidingWindow::MAX_LIMIT + 1,
            max: SlidingWindow::MAX_LIMIT
        })
    );
}

#[test]
fn wide_grants_refund_into_their_bucket() {
    let clock = ManualClock::new();
    let limiter = SlidingWindow::builder(WindowQuota::per_hour(3_000_000_000).unwrap())
        .clock(clock.clone())
        .build();
    let Admission::Granted(grant) = limiter.try_grant(2_000_000_000).unwrap() else {
        panic!("refused");
    };
    assert_eq!(limiter.available(), 1_000_000_000);
    assert_eq!(limiter.refund(grant), 2_000_000_000);
    assert_eq!(limiter.available(), 3_000_000_000);
}

#[test]
fn a_wide_window_holds_a_boxed_engine_beside_the_narrow_bytes() {
    let quota = WindowQuota::per_second(100).unwrap().buckets(10).unwrap();
    let narrow = SlidingWindow::builder(quota).build();
    let wide = SlidingWindow::builder(quota).wide().build();
    assert_eq!(narrow.footprint(), 384 + 10 * 128);
    assert_eq!(wide.footprint(), 384 + 384 + 10 * 128);
    let narrow = SlidingWindow::builder(quota).compact().build();
    let wide = SlidingWindow::builder(quota).compact().wide().build();
    assert_eq!(narrow.footprint(), 80 + 10 * 8);
    assert_eq!(wide.footprint(), 80 + 112 + 10 * 16);
}

/// Bucket width `WIDTH`: a window of `buckets` buckets in the wide words.
fn wide_sliding(limit: u64, buckets: u64, clock: &ManualClock) -> SlidingWindow<ManualClock> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(WIDTH * buckets))
        .unwrap()
        .buckets(buckets)
        .unwrap();
    let limiter = SlidingWindow::builder(quota)
        .clock(clock.clone())
        .wide()
        .build();
    assert_eq!(limiter.max_limit(), SlidingWindow::MAX_LIMIT);
    limiter
}

#[test]
fn wide_small_limits_lockstep_is_exact() {
    for (limit, buckets) in [(7, 4), (100, 10)] {
        let clock = ManualClock::new();
        let limiter = Arc::new(wide_sliding(limit, buckets, &clock));
        let mut spec =
            SlidingWindowSpec::new(limit, Duration::from_nanos(WIDTH * buckets), buckets).unwrap();
        let (calls, admitted) = lockstep(&limiter, &mut spec, &clock, 1000, 40);
        eprintln!("wide lockstep limit {limit} B {buckets}: {calls} calls, {admitted} admitted");
    }
}

#[test]
fn wide_free_running_never_over_admits() {
    let (limit, buckets) = (40, 8);
    let clock = ManualClock::new();
    let limiter = wide_sliding(limit, buckets, &clock);
    let (calls, admitted, epochs) = free_running(limiter, clock, limit, buckets, 3_000);
    eprintln!("wide free-running: {calls} calls, {admitted} admissions over {epochs} epochs");
    assert!(calls > 100_000, "too few calls to stress anything: {calls}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn wide_sliding_window_matches_spec(limit in 1u64..12, buckets in 1u64..6, ops in ops(6, 14)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(buckets);
        let quota = WindowQuota::per(limit, window).unwrap().buckets(buckets).unwrap();
        let limiter = SlidingWindow::builder(quota).clock(clock.clone()).wide().build();
        let mut spec = SlidingWindowSpec::new(limit, window, buckets).unwrap();
        check_trace(&limiter, &mut spec, &clock, &ops);
    }

    #[test]
    fn wide_fixed_window_matches_spec(limit in 1u64..12, ops in ops(3, 14)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(3);
        let limiter = FixedWindow::builder(WindowQuota::per(limit, window).unwrap())
            .clock(clock.clone())
            .wide()
            .build();
        let mut spec = FixedWindowSpec::new(limit, window).unwrap();
        check_trace(&limiter, &mut spec, &clock, &ops);
    }

    #[test]
    fn large_limits_match_spec(limit in (1u64 << 20)..(1u64 << 36), ops in ops(8, 1 << 36)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(8);
        let quota = WindowQuota::per(limit, window).unwrap().buckets(4).unwrap();
        let limiter = SlidingWindow::builder(quota).clock(clock.clone()).build();
        let mut spec = SlidingWindowSpec::new(limit, window, 4).unwrap();
        let ops: Vec<Op> = ops;
        check_trace(&limiter, &mut spec, &clock, &ops);
    }
}
