//! Shared test harness: drive a limiter and its spec through the same trace.
#![allow(dead_code)]

pub mod cells;
pub mod sharded;
pub mod stress;

use std::time::Duration;

use ringlimit::clock::ManualClock;
use ringlimit::spec::Spec;
use ringlimit::{Rate, RateLimiter};

/// One permit every `nanos` ns.
pub fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

/// One step of a single-threaded trace.
#[derive(Debug, Clone)]
pub enum Op {
    /// Move the clock forward by this many ns.
    Advance(u64),
    /// Move the clock backward by this many ns (saturating at 0).
    Rewind(u64),
    /// `try_acquire()`.
    One,
    /// `try_acquire_n(n)`.
    Many(u64),
    /// `available()`.
    Available,
    /// `set_limit(l)`.
    SetLimit(u64),
}

/// Runs `ops` against `limiter` (reading `clock`) and `spec`, asserting every outcome matches.
pub fn check_trace(
    limiter: &impl RateLimiter,
    spec: &mut impl Spec,
    clock: &ManualClock,
    ops: &[Op],
) {
    use ringlimit::clock::Clock;
    for (i, op) in ops.iter().enumerate() {
        let now = clock.now_nanos();
        match *op {
            Op::Advance(dt) => clock.advance_nanos(dt),
            Op::Rewind(dt) => clock.set_nanos(now.saturating_sub(dt)),
            Op::One => {
                let want = spec
                    .decide(now, 1)
                    .map(|d| d.is_admitted())
                    .unwrap_or(false);
                assert_eq!(limiter.try_acquire(), want, "step {i} {op:?} at {now}");
            }
            Op::Many(n) => {
                let want = spec.decide(now, n);
                assert_eq!(limiter.try_acquire_n(n), want, "step {i} {op:?} at {now}");
            }
            Op::Available => {
                assert_eq!(
                    limiter.available(),
                    spec.available(now),
                    "step {i} {op:?} at {now}"
                );
            }
            Op::SetLimit(l) => {
                let want = spec.set_limit(now, l);
                assert_eq!(limiter.set_limit(l), want, "step {i} {op:?}");
                assert_eq!(limiter.limit(), spec.limit(), "step {i} {op:?}");
            }
        }
    }
}

/// A proptest strategy for traces over a window of `window_nanos`.
pub fn ops(window_nanos: u64, max_n: u64) -> impl proptest::strategy::Strategy<Value = Vec<Op>> {
    use proptest::prelude::*;
    let step = prop_oneof![
        4 => (0..window_nanos / 2 + 2).prop_map(Op::Advance),
        1 => (0..window_nanos * 3).prop_map(Op::Advance),
        1 => prop_oneof![Just(1u64 << 32), Just(1u64 << 40), Just(window_nanos << 32)].prop_map(Op::Advance),
        1 => (0..window_nanos).prop_map(Op::Rewind),
        8 => Just(Op::One),
        3 => (0..max_n + 2).prop_map(Op::Many),
        2 => Just(Op::Available),
        1 => (0..max_n + 2).prop_map(Op::SetLimit),
    ];
    proptest::collection::vec(step, 1..200)
}
