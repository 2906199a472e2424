//! The sliding window's refund models that run in both widths of the engine: `refund.rs`
//! builds the window in 64-bit words, `wide_refunds_and_shards.rs` in 128-bit ones (`.wide()`). Each
//! model takes the window's builder; its invariant is shared too. Limit 2, B = 2, bucket
//! width 1 ns (clock readings are epochs).

use std::time::Duration;

use ringlimit::clock::ManualClock;
use ringlimit::spec::SlidingWindowSpec;
use ringlimit::SlidingWindow;

use super::{handed, restored, Model, Op, Seen};

/// The window the models race on.
pub type Sliding = SlidingWindow<ManualClock>;
/// A model of a sliding window against its spec.
pub type SlidingModel = Model<Sliding, SlidingWindowSpec>;

pub fn sliding_spec(limit: u64, buckets: u64) -> SlidingWindowSpec {
    SlidingWindowSpec::new(limit, Duration::from_nanos(buckets), buckets).unwrap()
}

fn spec_2_2() -> SlidingWindowSpec {
    sliding_spec(2, 2)
}

/// (1) A refund of the full epoch races two admissions at the limit. Proves: the refund
/// restores exactly what the spec's refund does where it lands (all 2: the epoch stays
/// current), each admission is admitted iff the refund preceded it, and the ring and head
/// then hold the spec's counts (probes in epochs 0, 1 and 2).
pub const fn races_two_admissions(build: fn(&ManualClock) -> Sliding) -> SlidingModel {
    Model {
        build,
        spec: spec_2_2,
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(2))],
        start: 0,
        threads: &[&[Op::RefundSetup(0)], &[Op::One], &[Op::One]],
        probes: &[1, 2],
    }
}

/// (1)'s invariant.
pub fn races_two_admissions_holds(setup: &[Seen], seen: &[Vec<Seen>]) {
    assert_eq!(restored(seen), 2);
    assert!(handed(setup, seen) - restored(seen) <= 2);
}

/// (2) A grant of epoch 0 (one permit) is refunded while another thread moves the clock
/// into epoch 1 and takes two single permits there. Epoch 0 still counts in epoch 1's
/// window, so the second permit goes through only if the refund landed in epoch 0 first.
/// Proves: exact linearizability, except the documented deviation (a refund landing between
/// the rollover's claim and its install may report 1 while the ring keeps the unrefunded
/// count), which is replayed as a refund whose state change is dropped: it can only
/// under-admit, and it must sit right before the rollover. Probes in epochs 1..=3 read the
/// ring: a refund that landed in epoch 1's head instead (and said so) fails.
pub const fn passing_epoch_races_rollover(build: fn(&ManualClock) -> Sliding) -> SlidingModel {
    Model {
        build,
        spec: spec_2_2,
        width: 1,
        ghost: true,
        setup: &[(0, Op::Grant(1))],
        start: 0,
        threads: &[&[Op::RefundSetup(0)], &[Op::SetClock(1), Op::One, Op::One]],
        probes: &[2, 3],
    }
}

/// (2)'s invariant: never both the grant's permit kept and two more in epoch 1.
pub fn passing_epoch_races_rollover_holds(setup: &[Seen], seen: &[Vec<Seen>]) {
    assert!(handed(setup, seen) <= 2 + seen[0][0].restored());
    assert!(seen[0][0].restored() <= 1);
}

/// (5) A refund of a full epoch races `set_limit(1)` and an admission. Proves: the refund
/// restores 2 in every order, the admission is decided under one limit, and afterwards the
/// head holds exactly what the spec does under the new limit (a refund that kept the
/// lowered limit's raised cap would leave room the limit refuses).
pub const fn races_set_limit_lowering(build: fn(&ManualClock) -> Sliding) -> SlidingModel {
    Model {
        build,
        spec: spec_2_2,
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(2))],
        start: 0,
        threads: &[&[Op::RefundSetup(0)], &[Op::SetLimit(1)], &[Op::One]],
        probes: &[1, 2],
    }
}

/// (5)'s invariant.
pub fn races_set_limit_lowering_holds(_: &[Seen], seen: &[Vec<Seen>]) {
    assert_eq!(seen[0][0].restored(), 2);
}
