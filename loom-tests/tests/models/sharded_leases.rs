//! The sharded window's leases: the under-admission bound `S × (b − 1)` holds when a refill
//! races a still-current lease (the refill gives back the unused permits of the lease it
//! closes, and the shard word is read with Acquire, so a stale epoch or an ABA on the shard
//! word never drops a current lease); and a call ending in `ExceedsLimit` moves the window
//! as the spec does.
//!
//! Run: `bash loom-tests/run sharded_leases::`

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use ringlimit::clock::ManualClock;
use ringlimit::{RateLimiter, ShardedWindow, SlidingWindow, WindowQuota};

/// A sharded sliding window of `limit` per 2 buckets of 1 ns (clock readings are epochs),
/// 2 shards, batch 4.
fn sliding(limit: u64, clock: &ManualClock) -> ShardedWindow<ManualClock> {
    SlidingWindow::builder(
        WindowQuota::per(limit, Duration::from_nanos(2))
            .unwrap()
            .buckets(2)
            .unwrap(),
    )
    .clock(clock.clone())
    .sharded()
    .shards(2)
    .batch(4)
    .build()
}

// The documented bound: "in every epoch (bucket) at most min(S × (b − 1), cap / 2) permits
// are counted but never admitted", because "a shard holds one lease at a time and only its
// last lease of an epoch can be left unused". S = 2, b = 4, limit 64: at most 6.
//
// Two callers race on shard 0 in epoch 1 (the shard's epoch word still holds its initial
// 0); then one caller takes a permit on shard 1. Moving to epoch 2 shows what epoch 1
// counted. The second caller on shard 0 can read the word of the first caller's fresh
// lease (Relaxed) and a stale epoch 0 (its Acquire load is not ordered after the Relaxed
// word load), take the lease for a passed one, and replace it with a second lease of the
// same epoch 1: three leases of 4, three permits used, 9 counted and never admitted.
#[test]
fn at_most_one_lease_per_shard_per_epoch_is_left_unused() {
    loom::model(|| {
        let clock = ManualClock::new();
        clock.set_nanos(1);
        let limiter = Arc::new(sliding(64, &clock));
        let other = {
            let limiter = limiter.clone();
            thread::spawn(move || u64::from(limiter.try_acquire_on(0)))
        };
        let mut admitted = u64::from(limiter.try_acquire_on(0));
        admitted += other.join().unwrap();
        admitted += u64::from(limiter.try_acquire_on(1));
        assert_eq!(admitted, 3);
        clock.set_nanos(2);
        // Epoch 2 is empty, so what it lacks is what epoch 1 counted.
        let counted = 64 - limiter.available();
        assert!(
            counted - admitted <= 2 * (4 - 1),
            "epoch 1 counted {counted}, admitted {admitted}: more than S × (b − 1) unused"
        );
    });
}

// The same bound, broken by ABA on the shard word rather than by a stale read. Shard 0
// holds the rest of a lease of epoch 1, `open(granted 3, taken 0)`, and the clock moves to
// epoch 2. Both callers on shard 0 see that word with a passed epoch and go to CAS it to
// `Refilling`. The first wins, leases 4 for epoch 2 and reopens the shard with
// `open(3, 0)`: the very word the second caller saw. The second caller's CAS then
// succeeds on the fresh lease of epoch 2 and drops it for another lease of epoch 2. With
// shard 1's one lease: 12 counted in epoch 2, 3 admitted, 9 > S × (b − 1) = 6.
#[test]
fn a_refill_cas_aba_never_drops_a_current_lease() {
    loom::model(|| {
        let clock = ManualClock::new();
        clock.set_nanos(1);
        let limiter = Arc::new(sliding(64, &clock));
        assert!(limiter.try_acquire_on(0)); // lease of 4 in epoch 1, 3 left
        clock.set_nanos(2);
        let other = {
            let limiter = limiter.clone();
            thread::spawn(move || u64::from(limiter.try_acquire_on(0)))
        };
        let mut admitted = u64::from(limiter.try_acquire_on(0));
        admitted += other.join().unwrap();
        admitted += u64::from(limiter.try_acquire_on(1));
        assert_eq!(admitted, 3);
        clock.set_nanos(3);
        // Epoch 3 is empty and epoch 1 has left the window: what it lacks is epoch 2's.
        let counted = 64 - limiter.available();
        assert!(
            counted - admitted <= 2 * (4 - 1),
            "epoch 2 counted {counted}, admitted {admitted}: more than S × (b − 1) unused"
        );
    });
}

use crate::exceeds_model;

// A call ending in `ExceedsLimit` moves the window as the spec does (see
// `window_epochs.rs`): the sharded window's `try_acquire_n` and `available` go to the shared engine, so the same model holds.
#[test]
fn exceeds_limit_after_rollover_agrees_with_the_spec() {
    let scenario = exceeds_model::Scenario {
        first: 5,
        race: 25,
        back: 8,
    };
    scenario.check(
        |clock| {
            SlidingWindow::builder(
                WindowQuota::per(2, Duration::from_nanos(20))
                    .unwrap()
                    .buckets(2)
                    .unwrap(),
            )
            .clock(clock.clone())
            .sharded()
            .shards(1)
            .batch(1)
            .build()
        },
        || ringlimit::spec::SlidingWindowSpec::new(2, Duration::from_nanos(20), 2).unwrap(),
    );
}
