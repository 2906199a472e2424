//! The wide window: refunds and the sharded window on the 128-bit engine, which
//! `window_wide.rs` (the engine's admission models only) does not reach. The refund models
//! are `refund.rs`'s (1), (2) and (5) with `WindowBuilder::wide`; the sharded one is
//! `sharded.rs`'s `boundary_three_callers_two_shards` with `wide`.
//!
//! Run: `bash loom-tests/run wide_refunds_and_shards::`.

use crate::refund_model;

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use refund_model::window::{self, SlidingModel};
use refund_model::Tally;
use ringlimit::clock::ManualClock;
use ringlimit::{FixedWindow, RateLimiter, ShardedWindow, SlidingWindow, WindowQuota};

fn sliding(limit: u64, buckets: u64, clock: &ManualClock) -> SlidingWindow<ManualClock> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(buckets))
        .unwrap()
        .buckets(buckets)
        .unwrap();
    let limiter = SlidingWindow::builder(quota)
        .clock(clock.clone())
        .wide()
        .build();
    assert!(limiter.max_limit() > 1 << 20);
    limiter
}

#[test]
fn wide_refund_races_two_admissions_at_the_limit() {
    static MODEL: SlidingModel = window::races_two_admissions(|clock| sliding(2, 2, clock));
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, window::races_two_admissions_holds);
}

#[test]
fn wide_sliding_refund_of_a_passing_epoch_races_rollover() {
    static MODEL: SlidingModel = window::passing_epoch_races_rollover(|clock| sliding(2, 2, clock));
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, window::passing_epoch_races_rollover_holds);
}

#[test]
fn wide_refund_races_set_limit_lowering() {
    static MODEL: SlidingModel = window::races_set_limit_lowering(|clock| sliding(2, 2, clock));
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, window::races_set_limit_lowering_holds);
}

/// A sharded fixed window in the wide words, 2 shards, batch 2.
fn sharded_fixed(limit: u64, clock: &ManualClock) -> ShardedWindow<ManualClock> {
    FixedWindow::builder(WindowQuota::per(limit, Duration::from_nanos(1)).unwrap())
        .clock(clock.clone())
        .wide()
        .sharded()
        .shards(2)
        .batch(2)
        .build()
}

// Shard 0 holds one leased permit; one permit is left in the shared window; three callers
// (two on shard 0, one on shard 1): exactly 2 admitted.
#[test]
fn wide_sharded_boundary_three_callers_two_shards() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sharded_fixed(10, &clock));
        assert!(limiter.try_acquire_on(0));
        assert!(limiter.try_acquire_n(7).unwrap().is_admitted());
        assert_eq!(limiter.available(), 1);
        let handles: Vec<_> = [0usize, 0, 1]
            .into_iter()
            .map(|shard| {
                let limiter = limiter.clone();
                thread::spawn(move || u64::from(limiter.try_acquire_on(shard)))
            })
            .collect();
        let admitted: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(admitted, 2);
        assert_eq!(limiter.available(), 0);
    });
}
