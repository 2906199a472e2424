//! Loom models of the bucket engine's hot path (`try_acquire`), which reads `current` and the
//! slot it names *before* the word (regressions from the review of that change): a caller
//! stalled between those loads and its load of the word while eight reconfigurations run
//! finds a word naming the same `gen` again, of a later configuration, with no word value
//! repeated. It must not decide under the slot it read eight reconfigurations ago (that
//! over-admitted, and refused spuriously): `current` counts reconfigurations and is read
//! again after the word.
//!
//! Run (about two minutes):
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p loom-tests --release --test bucket_hot_path`
#![cfg(loom)]

mod bucket_model;

use bucket_model::{every, Model, Op};
use ringlimit::clock::ManualClock;
use ringlimit::spec::TokenBucketSpec;
use ringlimit::{BucketQuota, TokenBucket};

/// One permit every 100 ns.
const T: u64 = 100;

fn bucket<const BURST: u64>(clock: ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(BucketQuota::new(every(T), BURST).unwrap())
        .clock(clock)
        .build()
}

fn spec<const BURST: u64>() -> TokenBucketSpec {
    TokenBucketSpec::new(every(T), BURST).unwrap()
}

/// Burst 2 at time 0. The racer takes both permits (tat 200), then sets the burst to 1 eight
/// times: the words run (100, gen 1) .. (100, gen 7), (100, gen 0), none repeated, and slot 0
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
        probes: &[100, 200],
    };
    MODEL.check(|_| {});
}

/// Hot paths race a reservation, its cancel (a refund: the time moves back) and a
/// reconfiguration (from the second review).
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
        probes: &[100, 200],
    };
    MODEL.check(|_| {});
}
