//! `TokenBucket` against its spec (random traces, every result equal), under threads (never
//! more than the GCRA bound), and at its edges.

use crate::bucket_common;

use std::sync::Arc;
use std::time::Duration;

use bucket_common::{assert_within_gcra_bound, op, period, run_trace, start};
use proptest::prelude::*;
use ringlimit::baseline::StdLocked;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::{Spec, TokenBucketSpec};
use ringlimit::{BucketQuota, Wait};
use ringlimit::{ConfigError, ExceedsLimit, Rate, RateLimiter, Reserve, TokenBucket, WaitError};

fn rate_every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

fn bucket(rate: Rate, burst: u64, clock: &ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(BucketQuota::new(rate, burst).unwrap())
        .clock(clock.clone())
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every decision, availability, reservation, wait, cancel and reconfiguration of the
    /// lock-free bucket equals the spec's, with clock jumps, reversals and huge requests.
    #[test]
    fn random_traces_match_the_spec(
        (period, burst, start, compact, ops) in (period(), 1..=8u64, start(), any::<bool>())
            .prop_flat_map(|(p, b, s, c)| (Just(p), Just(b), Just(s), Just(c), prop::collection::vec(op(p), 1..120)))
    ) {
        let clock = ManualClock::starting_at(start);
        let rate = rate_every(period);
        let mut spec = TokenBucketSpec::new(rate, burst).unwrap().starting_at(start);
        let builder = TokenBucket::builder(BucketQuota::new(rate, burst).unwrap()).clock(clock.clone());
        if compact {
            run_trace(&builder.compact().build(), &mut spec, &clock, &ops)?;
        } else {
            run_trace(&builder.build(), &mut spec, &clock, &ops)?;
        }
    }

    /// A bucket that starts empty: every result equals the spec's (built from the same
    /// quota), the first reading has nothing, and it fills at the rate.
    #[test]
    fn empty_start_traces_match_the_spec(
        (period, burst, start, ops) in (period(), 1..=8u64, start())
            .prop_flat_map(|(p, b, s)| (Just(p), Just(b), Just(s), prop::collection::vec(op(p), 1..120)))
    ) {
        let clock = ManualClock::starting_at(start);
        let quota = BucketQuota::new(rate_every(period), burst).unwrap().start_empty();
        let mut spec = TokenBucketSpec::from_quota(quota).unwrap().starting_at(start);
        let limiter = TokenBucket::builder(quota).clock(clock.clone()).build();
        prop_assert_eq!(limiter.available(), 0);
        prop_assert_eq!(spec.available(start), 0);
        run_trace(&limiter, &mut spec, &clock, &ops)?;
    }
}

/// An empty bucket fills one permit per period up to its burst, like the spec.
#[test]
fn an_empty_bucket_fills_at_its_rate() {
    let clock = ManualClock::starting_at(1_000);
    let quota = BucketQuota::new(rate_every(100), 3).unwrap().start_empty();
    let bucket = TokenBucket::builder(quota).clock(clock.clone()).build();
    let spec = TokenBucketSpec::new(rate_every(100), 3)
        .unwrap()
        .starting_empty()
        .starting_at(1_000);
    assert!(!bucket.try_acquire());
    for step in 0..6u64 {
        let now = clock.now_nanos();
        assert_eq!(bucket.available(), spec.available(now));
        assert_eq!(bucket.available(), step.min(3));
        clock.advance(Duration::from_nanos(100));
    }
    assert!(bucket.try_acquire_n(3).unwrap().is_admitted());
    assert!(!bucket.try_acquire());
}

/// An unlimited bucket admits every call and reservation at once, reports `u64::MAX`, and
/// refuses reconfiguration.
#[test]
fn an_unlimited_bucket_admits_everything() {
    let clock = ManualClock::new();
    let bucket = TokenBucket::builder(BucketQuota::unlimited())
        .clock(clock.clone())
        .build();
    for n in [0, 1, 1 << 40, u64::MAX] {
        assert_eq!(
            bucket.try_acquire_n(n),
            Ok(Decision::Admitted {
                remaining: u64::MAX
            })
        );
    }
    for _ in 0..100_000 {
        assert!(bucket.try_acquire());
    }
    let reservation = bucket.reserve(u64::MAX).unwrap();
    assert_eq!(reservation.wait(), Duration::ZERO);
    assert_eq!(bucket.acquire_n(u64::MAX), Ok(Duration::ZERO));
    assert_eq!((bucket.available(), bucket.limit()), (u64::MAX, u64::MAX));
    assert_eq!(bucket.set_limit(5), Err(ConfigError::Unlimited));
    assert_eq!(bucket.set_burst(5), Err(ConfigError::Unlimited));
    assert_eq!(bucket.set_rate(rate_every(5)), Err(ConfigError::Unlimited));
}

/// Four threads take permits while a fifth moves the clock: no window of the run holds
/// more than `burst + ⌊Δt/T⌋` admitted permits, and the total matches the rate.
#[test]
fn threads_racing_a_moving_clock_stay_within_the_gcra_bound() {
    const BURST: u64 = 5;
    const PERIOD: u64 = 1_000;
    let clock = ManualClock::new();
    let limiter = Arc::new(bucket(rate_every(PERIOD), BURST, &clock));
    let ticker = bucket_common::Ticker::start(&clock, 37);
    let workers: Vec<_> = (0..4u64)
        .map(|id| {
            let (limiter, clock) = (limiter.clone(), clock.clone());
            std::thread::spawn(move || {
                let mut admitted = Vec::new();
                for i in 0..60_000u64 {
                    let n = if (i + id) % 7 == 0 { 2 } else { 1 };
                    let before = clock.now_nanos();
                    let ok = if n == 1 {
                        limiter.try_acquire()
                    } else {
                        limiter.try_acquire_n(n).unwrap().is_admitted()
                    };
                    if ok {
                        admitted.push((before, clock.now_nanos(), n));
                    }
                }
                admitted
            })
        })
        .collect();
    let mut admitted: Vec<(u64, u64, u64)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    drop(ticker);
    let total: u64 = admitted.iter().map(|a| a.2).sum();
    let end = clock.now_nanos();
    assert!(total <= BURST + end / PERIOD, "{total} admitted by {end}");
    assert!(total > 0);
    assert_within_gcra_bound(&mut admitted, BURST, PERIOD);
}

/// Concurrent reservations on a frozen clock get distinct times exactly `T` apart.
#[test]
fn concurrent_reservations_are_spaced_exactly() {
    let clock = ManualClock::new();
    let limiter = Arc::new(bucket(rate_every(10), 1, &clock));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let limiter = limiter.clone();
            std::thread::spawn(move || {
                (0..2_000)
                    .map(|_| limiter.reserve(1).unwrap().ticket().act_at())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut acts: Vec<u64> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    acts.sort_unstable();
    let expected: Vec<u64> = (0..8_000).map(|i| i * 10).collect();
    assert_eq!(acts, expected);
}

#[test]
fn bad_configurations_are_errors() {
    assert_eq!(Rate::per_second(0), Err(ConfigError::ZeroRate));
    assert!(matches!(
        Rate::per_second(2_000_000_000),
        Err(ConfigError::RateTooFast { .. })
    ));
    let rate = Rate::per_second(1).unwrap();
    assert!(matches!(
        BucketQuota::new(rate, 0),
        Err(ConfigError::ZeroBurst)
    ));
    let slow = rate_every(ringlimit::Rate::MAX_PERIOD_NANOS);
    assert!(BucketQuota::new(slow, 16).is_ok());
    assert_eq!(
        BucketQuota::new(slow, 17).unwrap_err(),
        ConfigError::SpanTooLong {
            what: "burst × period",
            nanos: 17 << 56,
            max_nanos: ringlimit::TokenBucket::MAX_SPAN_NANOS
        }
    );
    assert!(BucketQuota::new(rate_every(1), u64::MAX).is_err());
    let limiter = TokenBucket::new(BucketQuota::new(slow, 16).unwrap());
    assert!(limiter.set_burst(17).is_err());
    assert!(limiter.set_burst(0).is_err());
    assert!(TokenBucket::new(BucketQuota::new(rate, 17).unwrap())
        .set_rate(slow)
        .is_err());
    assert_eq!(limiter.burst(), 16);
}

#[test]
fn requests_above_the_burst_fail_at_once_everywhere() {
    let clock = ManualClock::new();
    let limiter = bucket(Rate::per_second(10).unwrap(), 3, &clock);
    let exceeds = ExceedsLimit {
        requested: 4,
        limit: 3,
    };
    let wait_exceeds = WaitError::from(exceeds);
    assert_eq!(limiter.try_acquire_n(4), Err(exceeds));
    assert_eq!(limiter.acquire_n(4), Err(exceeds.into()));
    assert_eq!(
        limiter.try_acquire_for(4, Duration::MAX),
        Err(wait_exceeds.clone())
    );
    assert_eq!(limiter.reserve(4).unwrap_err(), wait_exceeds);
    assert_eq!(
        limiter.try_acquire_n(u64::MAX).unwrap_err(),
        ExceedsLimit {
            requested: u64::MAX,
            limit: 3
        }
    );
    assert_eq!(clock.now_nanos(), 0);
    assert_eq!(limiter.available(), 3);
    assert_eq!(
        limiter.try_acquire_n(0),
        Ok(Decision::Admitted { remaining: 3 })
    );
}

#[test]
fn timeouts_never_sleep_or_consume() {
    let clock = ManualClock::new();
    let limiter = bucket(Rate::per_second(10).unwrap(), 1, &clock);
    // A zero timeout is a plain try.
    assert_eq!(
        limiter.try_acquire_for(1, Duration::ZERO),
        Ok(Duration::ZERO)
    );
    assert_eq!(
        limiter.try_acquire_for(1, Duration::ZERO),
        Err(WaitError::Timeout {
            retry_after: Duration::from_millis(100),
            timeout: Duration::ZERO
        })
    );
    // Too short: refused at once, the clock untouched, nothing taken.
    assert_eq!(
        limiter.try_acquire_for(1, Duration::from_millis(99)),
        Err(WaitError::Timeout {
            retry_after: Duration::from_millis(100),
            timeout: Duration::from_millis(99)
        })
    );
    assert_eq!(clock.now_nanos(), 0);
    // Long enough: sleeps exactly the wait; Duration::MAX waits as long as it takes.
    assert_eq!(
        limiter.try_acquire_for(1, Duration::from_millis(100)),
        Ok(Duration::from_millis(100))
    );
    assert_eq!(
        limiter.try_acquire_for(1, Duration::MAX),
        Ok(Duration::from_millis(100))
    );
    assert_eq!(clock.now_nanos(), 200_000_000);
}

#[test]
fn blocking_acquire_returns_exactly_the_scheduled_waits() {
    let clock = ManualClock::new();
    let limiter = bucket(Rate::per_second(10).unwrap(), 1, &clock);
    let waits: Vec<Duration> = (0..5).map(|_| limiter.acquire()).collect();
    let ms = Duration::from_millis;
    assert_eq!(waits, [ms(0), ms(100), ms(100), ms(100), ms(100)]);
    assert_eq!(limiter.acquire_n(1), Ok(ms(100)));
    // Through a trait object, too.
    let dynamic: &dyn RateLimiter = &limiter;
    assert_eq!(dynamic.acquire(), ms(100));
}

#[test]
fn reservations_are_served_in_order() {
    let clock = ManualClock::new();
    let limiter = bucket(Rate::per_second(10).unwrap(), 2, &clock);
    let mut last = Duration::ZERO;
    let mut acts = Vec::new();
    for n in [1, 2, 1, 2, 2, 1] {
        let reservation = limiter.reserve(n).unwrap();
        assert!(reservation.delay() >= last);
        last = reservation.delay();
        acts.push((reservation.ticket().act_at(), n));
    }
    // The burst of 2 goes at once; then each waits for its own n·T after the previous one.
    assert_eq!(
        acts,
        [
            (0, 1),
            (100_000_000, 2),
            (200_000_000, 1),
            (400_000_000, 2),
            (600_000_000, 2),
            (700_000_000, 1)
        ]
        .map(|(ns, n)| (ns, n))
    );
}

#[test]
fn cancel_follows_the_golang_rule() {
    let clock = ManualClock::new();
    let limiter = bucket(Rate::per_second(10).unwrap(), 1, &clock);
    let first = limiter.reserve(1).unwrap(); // at 0, tat 100 ms
    let second = limiter.reserve(1).unwrap(); // at 100 ms, tat 200 ms
    let third = limiter.reserve(1).unwrap(); // at 200 ms, tat 300 ms
                                             // The last reservation gives back all of its time.
    third.cancel();
    assert_eq!(
        limiter.reserve(1).unwrap().delay(),
        Duration::from_millis(200)
    );
    // `first` is behind the other two: cancelling it restores nothing (a later
    // reservation is scheduled behind it), and its time has come anyway.
    first.cancel();
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_millis(300)
    );
    // Once a reservation's time has come, cancelling it gives back nothing.
    clock.advance(Duration::from_millis(150));
    second.cancel();
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_millis(150)
    );
    // A reservation with others behind it gives back only what is beyond them.
    let clock = ManualClock::new();
    let limiter = bucket(Rate::per_second(10).unwrap(), 1, &clock);
    drop(limiter.reserve(1).unwrap());
    let two = limiter.reserve(1).unwrap(); // act 100, mark 200
    let three = limiter.reserve(1).unwrap(); // act 200, mark 300
    two.cancel(); // restore = 100 - (300 - 200) = 0
    assert_eq!(
        limiter.reserve_within(1, Duration::ZERO).unwrap_err(),
        WaitError::Timeout {
            retry_after: Duration::from_millis(300),
            timeout: Duration::ZERO
        }
    );
    three.cancel(); // restore 100
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_millis(200)
    );
}

#[test]
fn rate_changes_while_callers_wait() {
    let clock = ManualClock::new();
    let limiter = bucket(Rate::per_second(10).unwrap(), 1, &clock);
    let first = limiter.reserve(1).unwrap();
    let second = limiter.reserve(1).unwrap();
    assert_eq!(second.delay(), Duration::from_millis(100));
    // Ten times faster: reservations already made keep their times, and the queue they
    // form stands: the new rate starts where it ends (at 100 ms, the bucket empty then), so
    // no later caller goes before a queued one. (golang's `SetLimit` re-rates the queue
    // instead: 20 ms here, ahead of `second`.)
    limiter.set_rate(Rate::per_second(100).unwrap()).unwrap();
    assert_eq!(
        limiter.reserve(1).unwrap().delay(),
        Duration::from_millis(110)
    );
    assert_eq!(second.ready_in(), Duration::from_millis(100));
    assert_eq!(second.wait(), Duration::from_millis(100));
    drop(first);
    // Slower again, once the queue has gone (tat 120 ms): one permit is free.
    clock.advance(Duration::from_millis(20));
    limiter.set_rate(Rate::per_second(1).unwrap()).unwrap();
    assert!(limiter.try_acquire());
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_secs(1)
    );
    // Threads blocked in `acquire` on a real clock are released by a faster rate.
    let fast = Arc::new(TokenBucket::new(
        BucketQuota::new(Rate::per_second(1).unwrap(), 1).unwrap(),
    ));
    assert!(fast.try_acquire());
    fast.set_rate(Rate::per_second(1_000).unwrap()).unwrap();
    let waiter = {
        let fast = fast.clone();
        std::thread::spawn(move || fast.acquire())
    };
    assert!(waiter.join().unwrap() < Duration::from_millis(500));
}

#[test]
fn the_end_of_the_clock_refuses_instead_of_wrapping() {
    let clock = ManualClock::starting_at(u64::MAX - 5);
    let limiter = bucket(rate_every(1), 3, &clock);
    assert_eq!(
        limiter.try_acquire_n(3),
        Ok(Decision::Admitted { remaining: 0 })
    );
    clock.advance_nanos(2);
    assert!(limiter.try_acquire_n(2).unwrap().is_admitted()); // tat 5 = the end
    clock.advance_nanos(3); // u64::MAX
    assert_eq!(clock.now_nanos(), u64::MAX);
    // Past the end nothing is available, whatever the burst.
    assert_eq!(
        limiter.try_acquire_n(1),
        Ok(Decision::Refused {
            available: 0,
            retry_after: Duration::MAX
        })
    );
    assert_eq!(limiter.available(), 0);
    assert!(matches!(
        limiter.reserve(1),
        Err(WaitError::Timeout {
            retry_after: Duration::MAX,
            ..
        })
    ));
    assert!(limiter.try_acquire_for(1, Duration::from_secs(1)).is_err());
    assert_eq!(clock.now_nanos(), u64::MAX);
    limiter.set_rate(rate_every(2)).unwrap();
    assert!(!limiter.try_acquire());
    // A slow rate near the end: the first permit already does not fit.
    let late = ManualClock::starting_at(u64::MAX - 5);
    assert!(!bucket(Rate::per_second(1).unwrap(), 1, &late).try_acquire());
}

#[test]
fn time_never_runs_backwards() {
    let clock = ManualClock::starting_at(1_000_000);
    let limiter = bucket(rate_every(100), 2, &clock);
    assert!(limiter.try_acquire_n(2).unwrap().is_admitted());
    clock.advance_nanos(100);
    assert!(limiter.try_acquire());
    // Back before the origin: counts as the origin, which owes more: refused.
    clock.set_nanos(0);
    assert_eq!(
        limiter.try_acquire_n(1),
        Ok(Decision::Refused {
            available: 0,
            retry_after: Duration::from_nanos(200)
        })
    );
    assert_eq!(limiter.available(), 0);
}

#[test]
fn locked_spec_and_lock_free_agree() {
    let clock = ManualClock::new();
    let limiter = bucket(rate_every(10), 3, &clock);
    let locked = StdLocked::with_clock(
        TokenBucketSpec::new(rate_every(10), 3).unwrap(),
        clock.clone(),
    );
    for step in 0..200u64 {
        let n = step % 5;
        assert_eq!(
            limiter.try_acquire_n(n),
            locked.try_acquire_n(n),
            "step {step}"
        );
        if step % 3 == 0 {
            let (a, b) = (
                limiter.reserve_within(1, Duration::from_nanos(25)),
                locked.attempt(1, Duration::from_nanos(25)),
            );
            assert_eq!(a.is_ok(), b.is_ok(), "step {step}");
        }
        if step % 17 == 0 {
            limiter.set_burst(1 + step % 4).unwrap();
            locked.set_limit(1 + step % 4).unwrap();
        }
        assert_eq!(limiter.available(), locked.available());
        clock.advance_nanos(step % 13);
    }
    assert_eq!(limiter.limit(), locked.with_spec(|s| s.limit()));
}

#[test]
fn layouts_and_accessors() {
    let padded = TokenBucket::builder(BucketQuota::new(rate_every(10), 3).unwrap())
        .clock(ManualClock::new())
        .build();
    let compact = TokenBucket::builder(BucketQuota::new(rate_every(10), 3).unwrap())
        .clock(ManualClock::new())
        .compact()
        .build();
    assert!(compact.footprint() < padded.footprint());
    // Eight configuration slots of four words (period, span, limit, configuration epoch),
    // the state word and the owner id, with a manual clock: 312 bytes on 64-bit targets.
    assert!(compact.footprint() <= 320, "{}", compact.footprint());
    assert_eq!(padded.rate(), rate_every(10));
    assert_eq!(compact.burst(), 3);
    assert!(format!("{padded:?}").starts_with("TokenBucket"));
}

/// The times at which three callers that reserve one permit each at 0 ms may act, in ms.
fn three_callers_act_at(quota: BucketQuota) -> Vec<u64> {
    let bucket = TokenBucket::builder(quota)
        .clock(ManualClock::new())
        .build();
    (0..3)
        .map(|_| bucket.reserve(1).unwrap().ticket().act_at() / 1_000_000)
        .collect()
}

/// uber-go's `ratelimit.New(10, WithoutSlack)` lets the first `Take` go at once and the next
/// ones 100 ms apart (its `TestInitial`): a burst-1 bucket starting full does the same. One
/// made with `start_empty` has no permit at its first reading, so each caller goes one
/// period later, at 100, 200 and 300 ms.
#[test]
fn a_full_burst_of_one_paces_as_uber_go_without_slack_and_start_empty_a_period_later() {
    let one = BucketQuota::new(Rate::per_second(10).unwrap(), 1).unwrap();
    assert_eq!(three_callers_act_at(one), [0, 100, 200]);
    assert_eq!(three_callers_act_at(one.start_empty()), [100, 200, 300]);
}
