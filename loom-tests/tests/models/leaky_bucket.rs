//! Loom models of `LeakyBucket`: the shaper's schedule under racing calls, cancels and
//! reconfiguration, and the meter's boundary, all linearizable with respect to
//! `LeakyBucketSpec`.
//!
//! Run (a few seconds):
//! `bash loom-tests/run leaky_bucket::`

use crate::bucket_model;

use std::time::Duration;

use bucket_model::{acts, admitted, every, Model, Op};
use ringlimit::clock::ManualClock;
use ringlimit::spec::LeakyBucketSpec;
use ringlimit::{BucketQuota, LeakyBucket, ShaperQuota};

/// One permit every 10 ns.
const T: u64 = 10;
/// The shapers' maximum wait.
const MAX_WAIT: u64 = 15;

fn shaper(clock: ManualClock) -> LeakyBucket<ManualClock> {
    LeakyBucket::shaper_builder(ShaperQuota::new(every(T), Duration::from_nanos(MAX_WAIT)).unwrap())
        .clock(clock)
        .build()
}

fn shaper_spec() -> LeakyBucketSpec {
    LeakyBucketSpec::shaper(every(T), Duration::from_nanos(MAX_WAIT)).unwrap()
}

fn meter(clock: ManualClock) -> LeakyBucket<ManualClock> {
    LeakyBucket::meter_builder(BucketQuota::new(every(T), 1).unwrap())
        .clock(clock)
        .build()
}

fn meter_spec() -> LeakyBucketSpec {
    LeakyBucketSpec::meter(1, every(T)).unwrap()
}

type Shaper = Model<LeakyBucket<ManualClock>, LeakyBucketSpec>;

/// Racing shaped calls of 2 and 1 permits on a shaper queueing up to 2T (so one call may
/// take 2) are scheduled back to back, `n·T` apart and never closer, in either order.
#[test]
fn racing_shaped_calls_are_back_to_back() {
    fn wide(clock: ManualClock) -> LeakyBucket<ManualClock> {
        LeakyBucket::shaper_builder(
            ShaperQuota::new(every(T), Duration::from_nanos(2 * T)).unwrap(),
        )
        .clock(clock)
        .build()
    }
    fn wide_spec() -> LeakyBucketSpec {
        LeakyBucketSpec::shaper(every(T), Duration::from_nanos(2 * T)).unwrap()
    }
    static MODEL: Shaper = Model {
        build: wide,
        spec: wide_spec,
        start: 0,
        setup: &[],
        threads: &[&[Op::Reserve(2, u64::MAX)], &[Op::Reserve(1, u64::MAX)]],
        probes: &[20, 30],
    };
    MODEL.check(|seen| {
        let acts = acts(seen);
        assert!(
            acts == [(0, 2), (2 * T, 1)] || acts == [(0, 1), (T, 2)],
            "{acts:?}"
        );
    });
}

/// On the 15 ns shaper one call may take only ⌊15 / 10⌋ = 1 permit: a call of 2 is
/// `ExceedsLimit` whatever it races, and the call of 1 goes at once.
#[test]
fn a_call_larger_than_the_queue_exceeds_the_limit() {
    static MODEL: Shaper = Model {
        build: shaper,
        spec: shaper_spec,
        start: 0,
        setup: &[],
        threads: &[&[Op::Reserve(2, u64::MAX)], &[Op::Reserve(1, u64::MAX)]],
        probes: &[10],
    };
    MODEL.check(|seen| assert_eq!(acts(seen), [(0, 1)]));
}

/// Three callers, one queue slot: the queue holds 15 ns, so after a call at 0 (next = 10)
/// exactly one more fits (at 10, next = 20), the third is refused.
#[test]
fn a_full_queue_refuses_exactly_the_overflow() {
    static MODEL: Shaper = Model {
        build: shaper,
        spec: shaper_spec,
        start: 0,
        setup: &[Op::Reserve(1, u64::MAX)],
        threads: &[&[Op::Reserve(1, u64::MAX)], &[Op::Reserve(1, u64::MAX)]],
        probes: &[10, 20],
    };
    MODEL.check(|seen| assert_eq!(acts(seen), [(T, 1)]));
}

/// `try_acquire` (go now or not at all) races a reservation.
#[test]
fn try_acquire_races_a_reservation() {
    static MODEL: Shaper = Model {
        build: shaper,
        spec: shaper_spec,
        start: 0,
        setup: &[],
        threads: &[&[Op::One], &[Op::Reserve(1, 5)]],
        probes: &[10, 20],
    };
    MODEL.check(|seen| assert!(admitted(seen) + acts(seen).len() as u64 >= 1));
}

/// A reservation and its cancel race another reservation.
#[test]
fn cancel_races_a_reservation() {
    static MODEL: Shaper = Model {
        build: shaper,
        spec: shaper_spec,
        start: 0,
        setup: &[Op::Reserve(1, u64::MAX)],
        threads: &[
            &[Op::Reserve(1, u64::MAX), Op::CancelLast],
            &[Op::Reserve(1, u64::MAX)],
        ],
        probes: &[10, 20, 30],
    };
    MODEL.check(|_| {});
}

/// `set_max_wait` races reservations: each is decided wholly under one maximum wait.
#[test]
fn set_max_wait_races_reservations() {
    static MODEL: Shaper = Model {
        build: shaper,
        spec: shaper_spec,
        start: 0,
        setup: &[Op::Reserve(1, u64::MAX)],
        threads: &[&[Op::Reserve(1, u64::MAX)], &[Op::SetMaxWait(0)]],
        probes: &[10, 20],
    };
    MODEL.check(|_| {});
}

/// The meter: two callers race for the one unit of capacity.
#[test]
fn meter_boundary_admits_exactly_one() {
    static MODEL: Model<LeakyBucket<ManualClock>, LeakyBucketSpec> = Model {
        build: meter,
        spec: meter_spec,
        start: 0,
        setup: &[],
        threads: &[&[Op::One], &[Op::One]],
        probes: &[5, 10],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1));
}

/// A shaper's hot path (slot read before the word, the new word from the reading alone)
/// racing two reconfigurations: a faster rate, then a longer wait.
#[test]
fn shaper_hot_path_races_two_reconfigurations() {
    static MODEL: Shaper = Model {
        build: shaper,
        spec: shaper_spec,
        start: 0,
        setup: &[Op::One],
        threads: &[
            &[Op::SetClock(12), Op::One, Op::One],
            &[Op::SetRate(4), Op::SetMaxWait(30)],
        ],
        probes: &[13, 20, 40],
    };
    MODEL.check(|_| {});
}
