//! Shared by the sharded-limiter tests (`ShardedWindow`, `ShardedBucket`): callers placed on
//! shards, and the single-threaded replay of a trace against the spec.

use ringlimit::cell::Layout;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::Spec;
use ringlimit::{RateLimiter, ShardedBucket, ShardedWindow};

use super::Op;

/// A sharded limiter whose callers a test places on shards.
pub trait Sharded: RateLimiter {
    /// Takes one permit through `shard` (modulo the shard count).
    fn try_acquire_on(&self, shard: usize) -> bool;
    /// The number of shards.
    fn shards(&self) -> usize;
}

impl<C: Clock, L: Layout> Sharded for ShardedWindow<C, L> {
    fn try_acquire_on(&self, shard: usize) -> bool {
        ShardedWindow::try_acquire_on(self, shard)
    }
    fn shards(&self) -> usize {
        ShardedWindow::shards(self)
    }
}

impl<C: Clock, L: Layout> Sharded for ShardedBucket<C, L> {
    fn try_acquire_on(&self, shard: usize) -> bool {
        ShardedBucket::try_acquire_on(self, shard)
    }
    fn shards(&self) -> usize {
        ShardedBucket::shards(self)
    }
}

/// What a replay does with the trace's `Rewind` steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewinds {
    /// Set the clock back.
    Follow,
    /// Skip them: the clock only moves forward (a clock that runs backwards is the sharded
    /// bucket's documented residual).
    Skip,
}

/// Runs `trace` single-threaded on `limiter`, placing each `try_acquire` on shard
/// `i % shards`, and replays every admission into `spec` at the newest reading of a call
/// so far (the shared window's or schedule's time: a call's reading may lag a lease taken
/// at a later one): the spec must admit each one. `set_limit` must agree with the spec's.
pub fn replay(
    limiter: &impl Sharded,
    spec: &mut impl Spec,
    clock: &ManualClock,
    trace: &[Op],
    rewinds: Rewinds,
) {
    let mut newest = 0;
    for (i, op) in trace.iter().enumerate() {
        let now = clock.now_nanos();
        let (n, ok) = match *op {
            Op::Advance(dt) => {
                clock.advance_nanos(dt);
                continue;
            }
            Op::Rewind(dt) => {
                if rewinds == Rewinds::Follow {
                    clock.set_nanos(now.saturating_sub(dt));
                }
                continue;
            }
            Op::Available => {
                assert!(
                    limiter.available() <= spec.available(newest.max(now)),
                    "step {i}"
                );
                continue;
            }
            Op::SetLimit(l) => {
                assert_eq!(limiter.set_limit(l), spec.set_limit(now, l), "step {i}");
                continue;
            }
            Op::One => (1, limiter.try_acquire_on(i % limiter.shards())),
            Op::Many(n) => match limiter.try_acquire_n(n) {
                Ok(decision) => (n, decision.is_admitted()),
                Err(_) => {
                    // A request above the limit moves the window's time too (as in the
                    // spec); nothing on a clock that only moves forward.
                    newest = newest.max(now);
                    continue;
                }
            },
        };
        if n == 0 {
            continue;
        }
        newest = newest.max(now);
        if ok {
            let decision = spec.decide(newest, n).unwrap();
            assert!(
                decision.is_admitted(),
                "step {i} {op:?} at {now}: the spec refuses {n}"
            );
        }
    }
}

/// Takes through `shard` until refused, at most 10 000 times; returns how many were
/// admitted.
pub fn drain(limiter: &impl Sharded, shard: usize) -> u64 {
    (0..10_000)
        .take_while(|_| limiter.try_acquire_on(shard))
        .count() as u64
}
