//! Single-threaded comparisons of [`SlidingLog`] with [`SlidingLogSpec`] on fixed traces.

use std::time::Duration;

use super::cell::SlidingLogCell;
use super::config::LogConfig;
use super::word::{MAX_STAMP, SEQ_MASK};
use super::SlidingLog;
use crate::clock::ManualClock;
use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::spec::Spec;
use crate::limiter::{Decision, RateLimiter};
use crate::spec::SlidingLogSpec;
use crate::window::WindowQuota;

/// One step of a trace.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// Set the clock (forwards or backwards).
    At(u64),
    /// Move the clock forward.
    Wait(u64),
    /// `try_acquire_n(n)`, checked against the spec.
    Take(u64),
    /// `try_acquire()`, checked against the spec.
    One,
    /// `set_limit`, checked against the spec's acceptance (within the max limit).
    Limit(u64),
    /// `available()`, checked against the spec.
    Available,
}
use Op::*;

/// Runs `ops` on a lock-free log and on the spec, comparing every answer.
fn compare(limiter: &SlidingLog<ManualClock>, spec: &mut SlidingLogSpec, ops: &[Op]) {
    let clock = limiter.clock().clone();
    for (i, op) in ops.iter().enumerate() {
        let now = crate::clock::Clock::now_nanos(&clock);
        match *op {
            At(t) => clock.set_nanos(t),
            Wait(d) => clock.advance_nanos(d),
            Take(n) => assert_eq!(
                limiter.try_acquire_n(n),
                spec.decide(now, n),
                "step {i}: {op:?} at {now}"
            ),
            One => assert_eq!(
                limiter.try_acquire(),
                spec.decide(now, 1).unwrap().is_admitted(),
                "step {i}: {op:?} at {now}"
            ),
            Limit(l) => {
                let mine = limiter.set_limit(l);
                if l <= limiter.max_limit() {
                    assert_eq!(mine, spec.set_limit(0, l), "step {i}: {op:?}");
                } else {
                    assert_eq!(
                        mine,
                        Err(ConfigError::LimitTooLarge {
                            limit: l,
                            max: limiter.max_limit()
                        })
                    );
                }
            }
            Available => assert_eq!(
                limiter.available(),
                spec.available(now),
                "step {i} at {now}"
            ),
        }
        assert_eq!(limiter.limit(), spec.limit(), "step {i}");
        assert_eq!(
            limiter.available(),
            spec.available(now_of(&clock)),
            "step {i}"
        );
    }
}

fn now_of(clock: &ManualClock) -> u64 {
    crate::clock::Clock::now_nanos(clock)
}

fn pair(limit: u64, max_limit: u64, window: u64) -> (SlidingLog<ManualClock>, SlidingLogSpec) {
    let w = Duration::from_nanos(window);
    (
        SlidingLog::with_max_limit(
            WindowQuota::per(limit, w).unwrap(),
            max_limit,
            ManualClock::new(),
        )
        .unwrap(),
        SlidingLogSpec::new(limit, w).unwrap(),
    )
}

#[test]
fn admits_up_to_the_limit_in_every_window() {
    let (log, mut spec) = pair(3, 3, 10);
    compare(
        &log,
        &mut spec,
        &[
            One,
            Wait(2),
            Take(1),
            Wait(3),
            One,
            One,
            Available,
            Wait(4),
            Take(1),
            Wait(1),
            Take(1),
            Take(1),
            Wait(2),
            Take(2),
            Wait(3),
            Take(1),
            Wait(100),
            Take(3),
            Take(1),
        ],
    );
}

#[test]
fn refusal_reports_available_and_retry_after() {
    let (log, _) = pair(3, 3, 10);
    let clock = log.clock().clone();
    assert_eq!(
        log.try_acquire_n(1),
        Ok(Decision::Admitted { remaining: 2 })
    );
    clock.set_nanos(4);
    assert_eq!(
        log.try_acquire_n(1),
        Ok(Decision::Admitted { remaining: 1 })
    );
    clock.set_nanos(6);
    // One left, asking 3: the entries at 0 and 4 must go; the one at 4 leaves at 14.
    assert_eq!(
        log.try_acquire_n(3),
        Ok(Decision::Refused {
            available: 1,
            retry_after: Duration::from_nanos(8)
        })
    );
    assert_eq!(
        log.try_acquire_n(2),
        Ok(Decision::Refused {
            available: 1,
            retry_after: Duration::from_nanos(4)
        })
    );
    clock.set_nanos(10);
    assert_eq!(
        log.try_acquire_n(2),
        Ok(Decision::Admitted { remaining: 0 })
    );
}

#[test]
fn clock_going_backwards_joins_the_newest_entry() {
    let (log, mut spec) = pair(2, 2, 10);
    compare(
        &log,
        &mut spec,
        &[
            At(100),
            One,
            At(50),
            One,
            Take(1),
            Available,
            At(105),
            Take(1),
            At(0),
            Take(1),
            At(109),
            Take(1),
            At(110),
            Take(1),
            At(3),
            Take(2),
            Available,
            At(120),
            Take(2),
            At(119),
            Available,
            Take(1),
        ],
    );
}

#[test]
fn zero_and_too_many_permits() {
    let (log, mut spec) = pair(3, 5, 10);
    compare(
        &log,
        &mut spec,
        &[Take(0), One, Take(0), Take(3), Take(2), Take(0)],
    );
    assert_eq!(
        log.try_acquire_n(4),
        Err(ExceedsLimit {
            requested: 4,
            limit: 3
        })
    );
    log.set_limit(5).unwrap();
    assert!(log.try_acquire_n(5).is_ok());
    assert_eq!(
        log.try_acquire_n(6),
        Err(ExceedsLimit {
            requested: 6,
            limit: 5
        })
    );
}

#[test]
fn groups_are_all_or_nothing() {
    let (log, mut spec) = pair(5, 5, 10);
    compare(
        &log,
        &mut spec,
        &[
            Take(2),
            Wait(1),
            Take(3),
            Take(1),
            Wait(9),
            Take(2),
            Take(2),
            Wait(1),
            Take(3),
            Take(1),
            Wait(10),
            Take(5),
            Take(1),
            Wait(10),
            Take(4),
            Take(2),
            Take(1),
        ],
    );
}

#[test]
fn set_limit_up_and_down_keeps_admitted_permits_counted() {
    let (log, mut spec) = pair(2, 6, 10);
    compare(
        &log,
        &mut spec,
        &[
            Take(2),
            One,
            Limit(6),
            Take(3),
            Limit(1),
            One,
            Available,
            Limit(2),
            Wait(10),
            Take(2),
            Limit(2),
            Limit(6),
            Take(4),
            Take(1),
            Limit(7),
            Limit(0),
            Wait(3),
            Limit(3),
            Take(1),
            Wait(7),
            Take(3),
            Limit(6),
            Take(3),
        ],
    );
}

#[test]
fn huge_clock_jumps_and_saturation() {
    let (log, mut spec) = pair(2, 2, 1000);
    compare(
        &log,
        &mut spec,
        &[
            One,
            At(1 << 32),
            One,
            One,
            At(1 << 40),
            Take(2),
            Take(1),
            At((1 << 40) + 999),
            Take(1),
            At(MAX_STAMP - 1),
            One,
            At(u64::MAX),
            One,
            One,
            Take(1),
            At(5),
            Take(1),
        ],
    );
}

#[test]
fn one_nanosecond_window_admits_the_limit_per_nanosecond() {
    let (log, mut spec) = pair(2, 2, 1);
    compare(
        &log,
        &mut spec,
        &[
            One,
            One,
            One,
            Wait(1),
            Take(2),
            Take(1),
            Wait(1),
            One,
            Take(1),
            Take(1),
        ],
    );
}

#[test]
fn many_laps_of_the_ring() {
    let (log, mut spec) = pair(3, 4, 7);
    let mut ops = Vec::new();
    for i in 0..300 {
        ops.push(Wait(i % 4));
        ops.push(Take(1 + i % 3));
        if i % 37 == 0 {
            ops.push(Limit(1 + i % 4));
        }
        if i % 11 == 0 {
            ops.push(At(now_hint(i)));
        }
    }
    compare(&log, &mut spec, &ops);
}

/// A clock position for `many_laps_of_the_ring` that sometimes goes backwards.
fn now_hint(i: u64) -> u64 {
    i * 3 / 2
}

#[test]
fn sequence_numbers_wrap_at_2_pow_44() {
    let window = 5;
    // Capacity 3 makes a ring of 4 slots; start 16 seqs (4 laps) before the wrap.
    let start = (SEQ_MASK + 1) - 16;
    let config =
        LogConfig::new(crate::window::WindowQuota::per(3, Duration::from_nanos(window)).unwrap())
            .unwrap();
    let log = SlidingLog {
        cell: SlidingLogCell::starting_at(&config, start),
        config,
        clock: ManualClock::new(),
    };
    let mut spec = SlidingLogSpec::new(3, Duration::from_nanos(window)).unwrap();
    let mut ops = Vec::new();
    for i in 0..200 {
        ops.push(Wait(i % 3));
        ops.push(Take(1 + i % 3));
        if i % 9 == 0 {
            ops.push(Limit(1 + i % 3));
        }
    }
    compare(&log, &mut spec, &ops);
    // The head wrapped and went round the 4-slot ring several more times.
    let seq = log.cell.seq();
    assert!((8..start).contains(&seq), "{seq}");
}

#[test]
fn configuration_errors() {
    let w = Duration::from_secs(1);
    let clock = ManualClock::new();
    assert_eq!(WindowQuota::per(0, w).err(), Some(ConfigError::ZeroLimit));
    assert_eq!(
        WindowQuota::per(1, Duration::ZERO).err(),
        Some(ConfigError::ZeroWindow)
    );
    // A quota holds more than a log: every way of building one refuses it, naming the log's
    // bound (10 million per hour would be a ring of 2^24 slots).
    for limit in [
        SlidingLog::MAX_LIMIT + 1,
        10_000_000,
        WindowQuota::MAX_LIMIT,
    ] {
        let quota = WindowQuota::per(limit, Duration::from_secs(3600)).unwrap();
        let refused = Some(ConfigError::LimitTooLarge {
            limit,
            max: SlidingLog::MAX_LIMIT,
        });
        assert_eq!(SlidingLog::new(quota).err(), refused);
        assert_eq!(SlidingLog::with_clock(quota, clock.clone()).err(), refused);
        assert_eq!(
            SlidingLog::with_max_limit(quota, u64::MAX, clock.clone()).err(),
            refused
        );
        assert_eq!(LogConfig::new(quota).err(), refused);
        assert_eq!(LogConfig::with_max_limit(quota, 0).err(), refused);
    }
    // An unlimited quota is no limit to hold.
    assert!(SlidingLog::with_clock(WindowQuota::unlimited(), clock.clone()).is_ok());
    // Room below the limit is raised to it, room above the maximum lowered to it.
    let quota = WindowQuota::per(5, w).unwrap();
    assert_eq!(
        SlidingLog::with_max_limit(quota, 4, clock.clone())
            .unwrap()
            .max_limit(),
        5
    );
    assert_eq!(
        SlidingLog::with_max_limit(quota, u64::MAX, clock.clone())
            .unwrap()
            .max_limit(),
        SlidingLog::MAX_LIMIT
    );
    let log =
        SlidingLog::with_clock(WindowQuota::per(SlidingLog::MAX_LIMIT, w).unwrap(), clock).unwrap();
    assert_eq!(
        log.try_acquire_n(SlidingLog::MAX_LIMIT),
        Ok(Decision::Admitted { remaining: 0 })
    );
    assert!(!log.try_acquire());
    assert_eq!(log.set_limit(0), Err(ConfigError::ZeroLimit));
}

#[test]
fn footprint_and_debug() {
    let log = SlidingLog::with_max_limit(
        WindowQuota::per(3, Duration::from_secs(1)).unwrap(),
        1000,
        ManualClock::new(),
    )
    .unwrap();
    assert!(log.footprint() >= 1024 * 8);
    assert!(log.footprint() < 1024 * 8 + 1024);
    assert!(format!("{log:?}").contains("SlidingLog"));
    assert_eq!(log.window(), Duration::from_secs(1));
}
