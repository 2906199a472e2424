//! The shared harness of the sharded-limiter loom models (`ShardedWindow`, `ShardedBucket`):
//! callers placed on shards explicitly (`try_acquire_on`), a thread that moves the clock,
//! and callers that note the reading they asked at.
#![allow(dead_code)]

use loom::sync::Arc;
use loom::thread::{self, JoinHandle};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::{ShardedBucket, ShardedWindow};

/// A sharded limiter whose callers a model places on shards.
pub trait Sharded: Send + Sync + 'static {
    /// Takes one permit through `shard` (modulo the shard count).
    fn try_acquire_on(&self, shard: usize) -> bool;
}

impl Sharded for ShardedWindow<ManualClock> {
    fn try_acquire_on(&self, shard: usize) -> bool {
        ShardedWindow::try_acquire_on(self, shard)
    }
}

impl Sharded for ShardedBucket<ManualClock> {
    fn try_acquire_on(&self, shard: usize) -> bool {
        ShardedBucket::try_acquire_on(self, shard)
    }
}

/// Runs one thread per entry of `placement`, each taking one permit on that shard; returns
/// how many were admitted.
pub fn race(limiter: &Arc<impl Sharded>, placement: &[usize]) -> u64 {
    let handles: Vec<_> = placement
        .iter()
        .map(|&shard| {
            let limiter = limiter.clone();
            thread::spawn(move || u64::from(limiter.try_acquire_on(shard)))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

/// A thread that moves the clock to `to`.
pub fn mover(clock: &ManualClock, to: u64) -> JoinHandle<()> {
    let clock = clock.clone();
    thread::spawn(move || clock.set_nanos(to))
}

/// A thread that moves the clock to `to`, then asks shard 0 for a permit: admitted.
pub fn moving_user(limiter: &Arc<impl Sharded>, clock: &ManualClock, to: u64) -> JoinHandle<bool> {
    let (limiter, clock) = (limiter.clone(), clock.clone());
    thread::spawn(move || {
        clock.set_nanos(to);
        limiter.try_acquire_on(0)
    })
}

/// A thread that reads the clock, then asks shard 0 for a permit: `(its reading, admitted)`.
pub fn user(limiter: &Arc<impl Sharded>, clock: &ManualClock) -> JoinHandle<(u64, bool)> {
    let (limiter, clock) = (limiter.clone(), clock.clone());
    thread::spawn(move || {
        let before = clock.now_nanos();
        (before, limiter.try_acquire_on(0))
    })
}
