//! Loom models of the sharded window (`ShardedWindow`): two shards, callers placed on them
//! explicitly (`try_acquire_on`), at the limit boundary, across rollover, against a stale
//! lease and against `set_limit`.
//!
//! Each model states what it allows: never more than the engine's count per bucket (no
//! over-admission), and the exact under-admission the model's state permits (near the
//! boundary the batch has shrunk to 1, so none).

use crate::sharded_model;

use std::time::Duration;

use loom::sync::Arc;
use loom_tests::spawn_with;
use ringlimit::clock::ManualClock;
use ringlimit::{FixedWindow, RateLimiter, ShardedWindow, SlidingWindow, WindowQuota};
use sharded_model::{moving_user, race, user};

/// A sharded fixed window of `limit` per 1 ns (clock readings are epochs), 2 shards, batch 2.
fn fixed(limit: u64, clock: &ManualClock) -> ShardedWindow<ManualClock> {
    FixedWindow::builder(WindowQuota::per(limit, Duration::from_nanos(1)).unwrap())
        .clock(clock.clone())
        .sharded()
        .shards(2)
        .batch(2)
        .build()
}

/// A sharded sliding window of `limit` per `buckets` buckets of 1 ns, 2 shards, batch 2.
fn sliding(limit: u64, buckets: u64, clock: &ManualClock) -> ShardedWindow<ManualClock> {
    SlidingWindow::builder(
        WindowQuota::per(limit, Duration::from_nanos(buckets))
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .sharded()
    .shards(2)
    .batch(2)
    .build()
}

/// Leaves shard 0 holding one leased permit of epoch 0 (limit 10, so the first lease is
/// `10 / (2 × 2) = 2`: one used, one left) and the shared window with `left` permits.
fn one_leased_and(left: u64, limiter: &ShardedWindow<ManualClock>) {
    assert!(limiter.try_acquire_on(0));
    let used_directly = limiter.limit() - 2 - left;
    assert!(limiter.try_acquire_n(used_directly).unwrap().is_admitted());
    assert_eq!(limiter.available(), left);
}

// Three callers, two on shard 0 (which holds one leased permit) and one on shard 1, with one
// permit left in the shared window: exactly 2 admitted. More would be over-admission; fewer
// is impossible because the shared window's last permits are leased one at a time.
#[test]
fn boundary_three_callers_two_shards() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(10, &clock));
        one_leased_and(1, &limiter);
        assert_eq!(race(&limiter, &[0, 0, 1]), 2);
        assert_eq!(limiter.available(), 0);
        assert!(!limiter.try_acquire_on(1));
    });
}

// A lease of epoch 0 with one permit left in shard 0 (9 admitted, 10 counted) while the
// clock moves to epoch 1 (sliding, B = 2, limit 10): buckets 0 and 1 together may admit one
// more permit, never two. Either the leftover is used in epoch 0, or a refill gives it back
// to epoch 0 and leases the one permit epoch 1 then has. Under-admission allowed: the
// leftover, if neither happens (it counts in epoch 0).
#[test]
fn stale_lease_never_serves_a_new_epoch() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(10, 2, &clock));
        one_leased_and(0, &limiter);
        let mover = moving_user(&limiter, &clock, 1);
        let stayer = user(&limiter, &clock);
        let moved = mover.join().unwrap();
        let (_, stayed) = stayer.join().unwrap();
        let admitted = u64::from(moved) + u64::from(stayed);
        assert!(admitted <= 1, "11 permits in two buckets of limit 10");
        assert!(admitted + limiter.available() <= 1);
    });
}

// Rollover racing leases on both shards (fixed window, limit 10): shard 0 holds a leftover
// of epoch 0, the clock moves to epoch 1 before the race, and callers on both shards race
// to roll the shared window over and lease for epoch 1. Both are admitted (epoch 1 has 10)
// and the shared window counts at least what passed in epoch 1: no permit of epoch 0 is
// spent in epoch 1 without being counted there.
#[test]
fn rollover_race_counts_every_permit_in_its_epoch() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(10, &clock));
        one_leased_and(0, &limiter);
        clock.set_nanos(1);
        assert_eq!(race(&limiter, &[0, 1]), 2);
        // Leased in epoch 1: exactly one batch of 2 per shard (10 left, then 8: batch 2).
        assert_eq!(limiter.available(), 10 - 4);
        // The leftovers are epoch 1's: each shard hands out its one, then leases again.
        assert!(limiter.try_acquire_on(0) && limiter.try_acquire_on(1));
        assert_eq!(limiter.available(), 10 - 4);
    });
}

// `set_limit(1)` races a caller on shard 0, which holds a leased permit (limit 10, epoch 0
// has 2 counted: 1 used, 1 leased). The lease is taken back: after the change nothing more
// passes, and the unused permit is given back exactly (raising the limit to 5 then leaves
// 5 - admitted).
#[test]
fn set_limit_takes_leases_back() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(10, &clock));
        assert!(limiter.try_acquire_on(0));
        let setter = spawn_with(&limiter, |limiter| limiter.set_limit(1).unwrap());
        let taker = u64::from(limiter.try_acquire_on(0));
        setter.join().unwrap();
        assert!(!limiter.try_acquire_on(0));
        assert!(!limiter.try_acquire_on(1));
        assert_eq!(limiter.available(), 0);
        limiter.set_limit(5).unwrap();
        assert_eq!(limiter.available(), 5 - 1 - taker);
    });
}

// `set_limit(2)` races a caller refilling the empty shard 1 while shard 0 holds a leased
// permit (limit 10, 2 counted, 1 used): the freeze waits for the refill, and both leftovers
// go back. The caller is admitted in every interleaving (under 10 before, or as the second
// permit under 2 after); afterwards nothing more passes and exactly 2 are counted.
#[test]
fn set_limit_waits_out_a_refill() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(10, &clock));
        assert!(limiter.try_acquire_on(0));
        let setter = spawn_with(&limiter, |limiter| limiter.set_limit(2).unwrap());
        assert!(limiter.try_acquire_on(1));
        setter.join().unwrap();
        assert!(!limiter.try_acquire_on(0));
        assert!(!limiter.try_acquire_on(1));
        limiter.set_limit(5).unwrap();
        assert_eq!(limiter.available(), 3);
    });
}
