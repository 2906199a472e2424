//! Loom models of `TokenBucket`: every interleaving of a few callers, reservations, cancels,
//! reconfigurations and clock moves must be linearizable with respect to `TokenBucketSpec`.
//!
//! Run (about two minutes, most of it the hot-path models at the end):
//! `bash loom-tests/run token_bucket::`

use crate::bucket_model;

use bucket_model::{acts, admitted, every, Model, Op};
use ringlimit::clock::ManualClock;
use ringlimit::spec::TokenBucketSpec;
use ringlimit::{BucketQuota, TokenBucket};

/// One permit every 10 ns.
const T: u64 = 10;

fn bucket<const BURST: u64>(clock: ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(BucketQuota::new(every(T), BURST).unwrap())
        .clock(clock)
        .build()
}

fn spec<const BURST: u64>() -> TokenBucketSpec {
    TokenBucketSpec::new(every(T), BURST).unwrap()
}

/// Two callers race for the last token: exactly one wins.
#[test]
fn two_callers_race_for_the_last_token() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 0,
        setup: &[Op::One],
        threads: &[&[Op::One], &[Op::One]],
        probes: &[5, 10],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1));
}

/// `try_acquire_n(2)` races `try_acquire()` on a full burst of 2: one of them, never both.
#[test]
fn many_permits_race_one() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 0,
        setup: &[],
        threads: &[&[Op::Acquire(2)], &[Op::One]],
        probes: &[5, 10, 20],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1));
}

/// Racing reservations get distinct times, exactly T apart.
#[test]
fn racing_reservations_are_spaced() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<1>,
        spec: spec::<1>,
        start: 0,
        setup: &[],
        threads: &[&[Op::Reserve(1, u64::MAX)], &[Op::Reserve(1, u64::MAX)]],
        probes: &[10, 20, 30],
    };
    MODEL.check(|seen| assert_eq!(acts(seen), [(0, 1), (T, 1)]));
}

/// A reservation races another caller's reservation and cancel: cancelling gives back only
/// what no later reservation is scheduled behind.
#[test]
fn reservation_races_a_cancel() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<1>,
        spec: spec::<1>,
        start: 0,
        setup: &[Op::One],
        threads: &[
            &[Op::Reserve(1, u64::MAX), Op::CancelLast],
            &[Op::Reserve(1, u64::MAX)],
        ],
        probes: &[10, 20, 30],
    };
    MODEL.check(|_| {});
}

/// `set_rate` races two admissions: each is decided wholly under one rate.
#[test]
fn set_rate_races_admissions() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 5,
        setup: &[Op::One],
        threads: &[&[Op::One, Op::Acquire(1)], &[Op::SetRate(4)]],
        probes: &[6, 9, 13, 20],
    };
    // Exactly one: the first call takes the last permit at 5 under either rate (the
    // conversion keeps it), and the second finds none.
    MODEL.check(|seen| assert_eq!(admitted(seen), 1, "{seen:?}"));
}

/// `set_limit` (the burst) races a reservation and an admission.
#[test]
fn set_burst_races_admissions() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 0,
        setup: &[Op::One],
        threads: &[&[Op::Acquire(1), Op::Reserve(2, 25)], &[Op::SetLimit(3)]],
        probes: &[10, 20, 40],
    };
    MODEL.check(|_| {});
}

/// The clock moves in its own thread while two callers take permits: a caller may read the
/// old or the new time, and nothing more than the spec allows at either is admitted.
#[test]
fn a_moving_clock_races_two_callers() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<1>,
        spec: spec::<1>,
        start: 0,
        setup: &[Op::One],
        threads: &[&[Op::One], &[Op::SetClock(T)], &[Op::Acquire(1)]],
        probes: &[15, 20],
    };
    // No permit at 0 (the burst of 1 is spent), one at 10.
    MODEL.check(|seen| assert!(admitted(seen) <= 1));
}

/// The hot path reads `current` and its slot before the word. Two reconfigurations in a row
/// (so `current` moves twice, and a caller may load it between a reconfiguration's CAS and
/// its store, or load the slot of one configuration and the word of the next) race two
/// one-permit calls: every outcome is the spec's in some order, each call decided wholly
/// under one configuration.
#[test]
fn two_reconfigurations_race_the_hot_paths_early_slot_read() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 5,
        setup: &[Op::One],
        threads: &[&[Op::One, Op::One], &[Op::SetRate(4), Op::SetLimit(1)]],
        probes: &[6, 9, 13, 20],
    };
    MODEL.check(|_| {});
}

// The hot path reads `current` and the slot it names *before* the word: a caller stalled between those loads and its load of the word
// while eight reconfigurations run finds a word naming the same `gen` again, of a later
// configuration, with no word value repeated. It must not decide under the slot it read
// eight reconfigurations ago (that over-admitted, and refused spuriously): `current` counts
// reconfigurations and is read again after the word. The first of these takes about a
// minute.

/// Burst 2 at time 0. The racer takes both permits (tat 20), then sets the burst to 1 eight
/// times: the words run (10, gen 1) .. (10, gen 7), (10, gen 0), none repeated, and slot 0
/// ends at burst 1. A hot path that read slot 0 (burst 2) before all of it and the word after
/// would admit a third permit at time 0. Every outcome must be the spec's in some order.
#[test]
fn a_stalled_hot_path_never_admits_under_the_slot_of_eight_reconfigurations_ago() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 0,
        setup: &[],
        threads: &[
            &[Op::One],
            &[
                Op::Acquire(2),
                Op::SetLimit(1),
                Op::SetLimit(1),
                Op::SetLimit(1),
                Op::SetLimit(1),
                Op::SetLimit(1),
                Op::SetLimit(1),
                Op::SetLimit(1),
                Op::SetLimit(1),
            ],
        ],
        probes: &[],
    };
    MODEL.check(|_| {});
}

/// The mirror case: burst 1 and full; eight `set_limit(2)` keep one permit available
/// throughout. A hot path deciding under the old slot's burst would refuse that permit.
#[test]
fn a_stalled_hot_path_never_refuses_under_the_slot_of_eight_reconfigurations_ago() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<1>,
        spec: spec::<1>,
        start: 0,
        setup: &[],
        threads: &[
            &[Op::One],
            &[
                Op::SetLimit(2),
                Op::SetLimit(2),
                Op::SetLimit(2),
                Op::SetLimit(2),
                Op::SetLimit(2),
                Op::SetLimit(2),
                Op::SetLimit(2),
                Op::SetLimit(2),
            ],
        ],
        probes: &[],
    };
    MODEL.check(|_| {});
}

/// Fewer than eight: two hot-path calls race two reconfigurations, landing between one's CAS
/// of the word and its store of `current`.
#[test]
fn hot_paths_race_the_cas_then_store_of_current() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 0,
        setup: &[Op::One],
        threads: &[&[Op::One, Op::One], &[Op::SetLimit(1), Op::SetLimit(3)]],
        probes: &[10, 20],
    };
    MODEL.check(|_| {});
}

/// Hot paths race a reservation, its cancel (a refund: the time moves back) and a
/// reconfiguration.
#[test]
fn hot_paths_race_a_refund_then_a_reconfiguration() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket::<2>,
        spec: spec::<2>,
        start: 0,
        setup: &[Op::One],
        threads: &[
            &[Op::One, Op::One],
            &[Op::Reserve(1, 0), Op::CancelLast, Op::SetLimit(3)],
        ],
        probes: &[10, 20],
    };
    MODEL.check(|_| {});
}
