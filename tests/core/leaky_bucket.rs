//! `LeakyBucket` (meter and shaper) against its spec, under threads, and at its edges.

use crate::bucket_common;

use std::sync::Arc;
use std::time::Duration;

use bucket_common::{assert_within_gcra_bound, op, period, run_trace, start};
use proptest::prelude::*;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::LeakyBucketSpec;
use ringlimit::{BucketQuota, ShaperQuota, Wait};
use ringlimit::{
    ConfigError, ExceedsLimit, LeakyBucket, Rate, RateLimiter, Reserve, TokenBucket, WaitError,
};

fn rate_every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

fn shaper(period: u64, max_wait: u64, clock: &ManualClock) -> LeakyBucket<ManualClock> {
    LeakyBucket::shaper_builder(
        ShaperQuota::new(rate_every(period), Duration::from_nanos(max_wait)).unwrap(),
    )
    .clock(clock.clone())
    .build()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The shaper: every result equals the spec's.
    #[test]
    fn shaper_traces_match_the_spec(
        (period, max_wait, start, compact, ops) in (period(), 0..=6u64, start(), any::<bool>())
            .prop_flat_map(|(p, w, s, c)| (Just(p), Just(w), Just(s), Just(c), prop::collection::vec(op(p), 1..120)))
    ) {
        // Maximum waits of 0 to 6 periods (or the span bound, at the longest periods).
        let max_wait = Duration::from_nanos((max_wait * period).min(ringlimit::LeakyBucket::MAX_SPAN_NANOS));
        let clock = ManualClock::starting_at(start);
        let rate = rate_every(period);
        let mut spec = LeakyBucketSpec::shaper(rate, max_wait).unwrap().starting_at(start);
        let builder = LeakyBucket::shaper_builder(ShaperQuota::new(rate, max_wait).unwrap()).clock(clock.clone());
        if compact {
            run_trace(&builder.compact().build(), &mut spec, &clock, &ops)?;
        } else {
            run_trace(&builder.build(), &mut spec, &clock, &ops)?;
        }
    }

    /// The meter: every result equals the spec's.
    #[test]
    fn meter_traces_match_the_spec(
        (period, capacity, start, ops) in (period(), 1..=8u64, start())
            .prop_flat_map(|(p, b, s)| (Just(p), Just(b), Just(s), prop::collection::vec(op(p), 1..120)))
    ) {
        let clock = ManualClock::starting_at(start);
        let rate = rate_every(period);
        let mut spec = LeakyBucketSpec::meter(capacity, rate).unwrap().starting_at(start);
        let limiter = LeakyBucket::meter_builder(BucketQuota::new(rate, capacity).unwrap()).clock(clock.clone()).build();
        run_trace(&limiter, &mut spec, &clock, &ops)?;
    }

    /// A meter that starts empty (full of water): every result equals the spec's.
    #[test]
    fn empty_meter_traces_match_the_spec(
        (period, capacity, start, ops) in (period(), 1..=8u64, start())
            .prop_flat_map(|(p, b, s)| (Just(p), Just(b), Just(s), prop::collection::vec(op(p), 1..120)))
    ) {
        let clock = ManualClock::starting_at(start);
        let rate = rate_every(period);
        let mut spec = LeakyBucketSpec::meter(capacity, rate).unwrap().starting_empty().starting_at(start);
        let quota = BucketQuota::new(rate, capacity).unwrap().start_empty();
        let limiter = LeakyBucket::meter_builder(quota).clock(clock.clone()).build();
        prop_assert_eq!(limiter.available(), 0);
        run_trace(&limiter, &mut spec, &clock, &ops)?;
    }
}

/// An unlimited meter admits everything and reports `u64::MAX`; it cannot be reconfigured.
#[test]
fn an_unlimited_meter_admits_everything() {
    let clock = ManualClock::new();
    let meter = LeakyBucket::meter_builder(BucketQuota::unlimited())
        .clock(clock.clone())
        .build();
    for n in [1, 2, 1 << 40, u64::MAX] {
        assert_eq!(
            meter.try_acquire_n(n),
            Ok(Decision::Admitted {
                remaining: u64::MAX
            })
        );
    }
    for _ in 0..10_000 {
        assert!(meter.try_acquire());
    }
    assert_eq!((meter.available(), meter.limit()), (u64::MAX, u64::MAX));
    assert_eq!(meter.shape(u64::MAX), Ok(Duration::ZERO));
    assert_eq!(meter.acquire_n(u64::MAX), Ok(Duration::ZERO));
    assert_eq!(meter.set_capacity(5), Err(ConfigError::Unlimited));
    assert_eq!(meter.set_rate(rate_every(7)), Err(ConfigError::Unlimited));
    assert_eq!(meter.limit(), u64::MAX);
}

/// Four threads shape calls of 1 to 3 permits on a frozen clock: the scheduled times are
/// exactly the back-to-back schedule, each call `n·T` after the one before it.
#[test]
fn concurrent_shaping_on_a_frozen_clock_is_back_to_back() {
    const PERIOD: u64 = 10;
    let clock = ManualClock::new();
    let limiter = Arc::new(shaper(PERIOD, 1 << 40, &clock));
    let workers: Vec<_> = (0..4u64)
        .map(|id| {
            let limiter = limiter.clone();
            std::thread::spawn(move || {
                (0..3_000u64)
                    .map(|i| {
                        let n = 1 + (i + id) % 3;
                        (limiter.shape(n).unwrap().as_nanos() as u64, n)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut calls: Vec<(u64, u64)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    calls.sort_unstable();
    let mut expected_at = 0;
    for &(at, n) in &calls {
        assert_eq!(at, expected_at);
        expected_at += n * PERIOD;
    }
}

/// With the clock moving, concurrent calls are never closer than `n·T`, and a refused call
/// (queue full) changes nothing.
#[test]
fn concurrent_shaping_on_a_moving_clock_is_never_closer_than_the_rate() {
    const PERIOD: u64 = 1_000;
    let clock = ManualClock::new();
    let limiter = Arc::new(shaper(PERIOD, 20 * PERIOD, &clock));
    let ticker = bucket_common::Ticker::start(&clock, 53);
    let workers: Vec<_> = (0..4u64)
        .map(|id| {
            let (limiter, clock) = (limiter.clone(), clock.clone());
            std::thread::spawn(move || {
                let mut scheduled = Vec::new();
                for i in 0..20_000u64 {
                    let n = 1 + (i + id) % 2;
                    let ticket = match limiter.reserve_within(n, Duration::MAX) {
                        Ok(reservation) => *reservation.ticket(),
                        Err(WaitError::Timeout { .. }) => {
                            clock.advance_nanos(100);
                            continue;
                        }
                        Err(other) => panic!("{other}"),
                    };
                    scheduled.push((ticket.act_at(), n));
                }
                scheduled
            })
        })
        .collect();
    let mut scheduled: Vec<(u64, u64)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    drop(ticker);
    scheduled.sort_unstable();
    assert!(scheduled.len() > 100);
    for pair in scheduled.windows(2) {
        let ((a, n), (b, _)) = (pair[0], pair[1]);
        assert!(b >= a + n * PERIOD, "{a} (n = {n}) then {b}");
    }
}

/// The meter under threads: the GCRA bound, like the token bucket's.
#[test]
fn meter_threads_stay_within_the_gcra_bound() {
    const CAPACITY: u64 = 3;
    const PERIOD: u64 = 700;
    let clock = ManualClock::new();
    let limiter = Arc::new(
        LeakyBucket::meter_builder(BucketQuota::new(rate_every(PERIOD), CAPACITY).unwrap())
            .clock(clock.clone())
            .build(),
    );
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (limiter, clock) = (limiter.clone(), clock.clone());
            std::thread::spawn(move || {
                let mut admitted = Vec::new();
                for _ in 0..30_000 {
                    let before = clock.now_nanos();
                    if limiter.try_acquire() {
                        admitted.push((before, clock.now_nanos(), 1));
                    }
                    clock.advance_nanos(29);
                }
                admitted
            })
        })
        .collect();
    let mut admitted: Vec<(u64, u64, u64)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert_within_gcra_bound(&mut admitted, CAPACITY, PERIOD);
}

#[test]
fn a_shaper_delays_the_next_call_not_this_one() {
    let clock = ManualClock::new();
    let limiter = shaper(100, 250, &clock);
    // One call may take at most ⌊250 / 100⌋ = 2 permits: it delays the next by 200 ns.
    assert_eq!(limiter.limit(), 2);
    assert_eq!(
        limiter.try_acquire_n(3),
        Err(ExceedsLimit {
            requested: 3,
            limit: 2
        })
    );
    assert_eq!(
        limiter.try_acquire_n(2),
        Ok(Decision::Admitted { remaining: 0 })
    );
    // Goes in 200 ns (within 250), and delays the next call to 300.
    assert_eq!(limiter.shape(1), Ok(Duration::from_nanos(200)));
    assert_eq!(
        limiter.try_acquire_n(1),
        Ok(Decision::Refused {
            available: 0,
            retry_after: Duration::from_nanos(300)
        })
    );
    assert_eq!(limiter.available(), 0);
    // Queued 300 ns > max wait 250 ns: refused at once, nothing scheduled, no sleep.
    assert_eq!(
        limiter.shape(1),
        Err(WaitError::Timeout {
            retry_after: Duration::from_nanos(300),
            timeout: Duration::from_nanos(250)
        })
    );
    assert_eq!(
        limiter.try_acquire_for(1, Duration::MAX),
        Err(WaitError::Timeout {
            retry_after: Duration::from_nanos(300),
            timeout: Duration::MAX
        })
    );
    assert_eq!(clock.now_nanos(), 0);
    clock.advance_nanos(100);
    assert_eq!(limiter.shape(1), Ok(Duration::from_nanos(200)));
    // At 200 the queue runs to 400: a caller willing to wait 199 ns cannot go, 200 can.
    clock.advance_nanos(100);
    assert!(limiter
        .try_acquire_for(1, Duration::from_nanos(199))
        .is_err());
    assert_eq!(
        limiter.try_acquire_for(1, Duration::from_nanos(200)),
        Ok(Duration::from_nanos(200))
    );
    assert_eq!(clock.now_nanos(), 400);
    // take() waits out a full queue instead of failing: queue is at 500, max wait 250.
    limiter.shape(1).unwrap();
    assert_eq!(limiter.acquire(), Duration::from_nanos(200));
    assert_eq!(clock.now_nanos(), 600);
    // An idle shaper lets a call go at once.
    clock.advance_nanos(10_000);
    assert_eq!(limiter.available(), limiter.limit());
    assert_eq!(limiter.acquire(), Duration::ZERO);
    assert_eq!(limiter.available(), 0);
}

#[test]
fn take_and_acquire_sleep_exactly_the_schedule() {
    let clock = ManualClock::new();
    let limiter = shaper(100_000_000, 1_000_000_000, &clock);
    let waits: Vec<Duration> = (0..4).map(|_| limiter.acquire()).collect();
    let ms = Duration::from_millis;
    assert_eq!(waits, [ms(0), ms(100), ms(100), ms(100)]);
    assert_eq!(limiter.acquire_n(2), Ok(ms(100)));
    assert_eq!(limiter.acquire(), ms(200));
}

#[test]
fn shaper_limits_and_configuration() {
    let clock = ManualClock::new();
    // One permit per µs, queued at most 10 µs: one call may take at most 10 permits.
    let limiter = shaper(1_000, 10_000, &clock);
    let bound = 10;
    assert_eq!(limiter.limit(), bound);
    assert_eq!(limiter.capacity(), bound);
    let exceeds = ExceedsLimit {
        requested: bound + 1,
        limit: bound,
    };
    assert_eq!(limiter.try_acquire_n(bound + 1), Err(exceeds));
    assert_eq!(limiter.acquire_n(bound + 1), Err(exceeds.into()));
    assert_eq!(limiter.shape(bound + 1), Err(WaitError::from(exceeds)));
    assert_eq!(
        limiter.reserve(bound + 1).unwrap_err(),
        WaitError::from(exceeds)
    );
    // The per-call limit can be lowered; raised past the bound, it is clipped to it, and
    // what was set comes back when the bound allows.
    limiter.set_limit(4).unwrap();
    assert_eq!(limiter.limit(), 4);
    limiter.set_limit(bound + 1).unwrap();
    assert_eq!(limiter.limit(), bound);
    assert_eq!(limiter.set_limit(0), Err(ConfigError::ZeroBurst));
    assert_eq!(limiter.limit(), bound);
    limiter.set_max_wait(Duration::from_nanos(20_000)).unwrap();
    assert_eq!(limiter.limit(), bound + 1);
    // A slower rate clips it; a faster one restores what was set.
    limiter.set_limit(100).unwrap();
    limiter.set_rate(rate_every(2_000)).unwrap();
    assert_eq!(limiter.limit(), 10);
    limiter.set_rate(rate_every(1)).unwrap();
    assert_eq!(limiter.limit(), 100);
    // With no wait at all, one permit per call.
    limiter.set_max_wait(Duration::ZERO).unwrap();
    assert_eq!(limiter.limit(), 1);
    // The maximum wait.
    assert_eq!(limiter.max_wait(), Some(Duration::ZERO));
    limiter.set_max_wait(Duration::from_secs(1)).unwrap();
    assert_eq!(limiter.max_wait(), Some(Duration::from_secs(1)));
    assert!(matches!(
        limiter.set_max_wait(Duration::MAX),
        Err(ConfigError::SpanTooLong {
            what: "the maximum wait",
            ..
        })
    ));
    assert!(matches!(
        ShaperQuota::new(rate_every(1), Duration::MAX),
        Err(ConfigError::SpanTooLong { .. })
    ));
    assert!(ShaperQuota::new(
        rate_every(1),
        Duration::from_nanos(ringlimit::LeakyBucket::MAX_SPAN_NANOS)
    )
    .is_ok());
    assert!(limiter.is_shaper());
    // The meter refuses shaper settings.
    let meter = LeakyBucket::meter(BucketQuota::new(rate_every(10), 2).unwrap());
    assert_eq!(
        meter.set_max_wait(Duration::ZERO),
        Err(ConfigError::NotAShaper)
    );
    assert_eq!(meter.max_wait(), None);
    assert!(!meter.is_shaper());
    assert_eq!(
        BucketQuota::new(rate_every(10), 0).unwrap_err(),
        ConfigError::ZeroBurst
    );
}

#[test]
fn shaper_cancel_gives_back_only_the_tail() {
    let clock = ManualClock::new();
    let limiter = shaper(100, 1_000, &clock);
    let first = limiter.reserve(1).unwrap(); // at 0, next 100
    let second = limiter.reserve(2).unwrap(); // at 100, next 300
    assert_eq!(second.delay(), Duration::from_nanos(100));
    // `first` has a later reservation behind it and its time has come: nothing back.
    first.cancel();
    assert_eq!(limiter.shape(0), Ok(Duration::ZERO));
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_nanos(300)
    );
    // The last one gives back its whole n·T.
    second.cancel();
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_nanos(100)
    );
}

#[test]
fn the_meter_is_the_token_bucket() {
    let clock = ManualClock::new();
    let meter = LeakyBucket::meter_builder(BucketQuota::new(rate_every(50), 3).unwrap())
        .clock(clock.clone())
        .build();
    let bucket = TokenBucket::builder(BucketQuota::new(rate_every(50), 3).unwrap())
        .clock(clock.clone())
        .build();
    for step in 0..300u64 {
        let n = step % 4;
        assert_eq!(
            meter.try_acquire_n(n),
            bucket.try_acquire_n(n),
            "step {step}"
        );
        assert_eq!(meter.available(), bucket.available());
        clock.advance_nanos(step % 23);
    }
}

/// An idle 1/s shaper with no queue admits at most `max(1, ⌊max_wait / T⌋)` permits in one
/// call (not ⌊2^60 ns / T⌋, a million, which would impose 11 days of wait on the next
/// caller): a call asking more is `ExceedsLimit`.
#[test]
fn a_shaper_refuses_a_call_larger_than_its_queue() {
    let clock = ManualClock::new();
    let limiter = LeakyBucket::shaper_builder(
        ShaperQuota::new(Rate::per_second(1).unwrap(), Duration::ZERO).unwrap(),
    )
    .clock(clock.clone())
    .build();
    assert_eq!(limiter.limit(), 1);
    assert_eq!(limiter.available(), 1);
    assert_eq!(
        limiter.try_acquire_n(1_000_000),
        Err(ExceedsLimit {
            requested: 1_000_000,
            limit: 1
        })
    );
    assert_eq!(limiter.available(), 1, "nothing was taken");
    assert!(limiter.try_acquire());
    assert_eq!(limiter.available(), 0);
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_secs(1)
    );
}

/// No call, whatever its size, delays its successor by more than `max(T, max_wait)`, under
/// any setting of rate, wait and limit.
#[test]
fn no_call_delays_the_next_past_the_queue() {
    let mut calls = 0;
    for period in [1, 7, 100, 1_000_000, 1 << 56] {
        // Up to 2^57 ns: four idle gaps of that fit well inside the 2^61 ns timeline.
        for max_wait in [0, 1, 6, 99, 250, 5_000_000, 1 << 40, 1 << 57] {
            let clock = ManualClock::new();
            let limiter = shaper(period, max_wait, &clock);
            for cap in [None, Some(1), Some(3), Some(u64::MAX)] {
                if let Some(cap) = cap {
                    limiter.set_limit(cap).unwrap();
                }
                clock.advance_nanos(period.max(max_wait));
                let n = limiter.limit();
                assert!(limiter.try_acquire_n(n).unwrap().is_admitted());
                let wait = limiter.try_acquire_n(1).unwrap().retry_after();
                assert!(
                    wait <= Duration::from_nanos(period.max(max_wait)),
                    "{period} {max_wait} {cap:?}: {wait:?}"
                );
                calls += 1;
            }
        }
    }
    assert_eq!(calls, 5 * 8 * 4);
}
