//! A cold `try_acquire` (the shortcut's path) racing enough `set_rate`s to
//! rewrite the slot it reads (KEPT = 4): the cell must end as if the acquire were decided
//! wholly under one configuration, never a mix of one slot's old and new fields (the
//! shortcut's `full_one` with another curve, or its wait with another cooling).
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p loom-tests --release --test review_hot_warm_up_seqlock`
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::cell::{WarmUpCell, WarmUpConfig};
use ringlimit::clock::ManualClock;
use ringlimit::{Compact, Decision, Rate, WarmUpQuota};

/// Rates of epochs 1..=4; epoch 4 lands in epoch 0's slot.
const RATES: [u64; 4] = [4, 5, 8, 10];

fn setup(clock: &ManualClock) -> (WarmUpConfig, WarmUpCell<Compact>) {
    let quota = WarmUpQuota::new(Rate::per_second(2).unwrap(), Duration::from_secs(4)).unwrap();
    let config = WarmUpConfig::new(quota, clock);
    let cell = WarmUpCell::new(&config);
    (config, cell)
}

fn look(shared: &(WarmUpConfig, WarmUpCell<Compact>), clock: &ManualClock) -> (Duration, u64) {
    let (config, cell) = shared;
    let retry_after = match cell.try_acquire_n(config, clock, 1).unwrap() {
        Decision::Refused { retry_after, .. } => retry_after,
        admitted => panic!("a look must not admit: {admitted:?}"),
    };
    (retry_after, cell.stored_permits(config, clock).to_bits())
}

#[test]
fn a_cold_acquire_racing_a_slot_rewrite_is_decided_under_one_configuration() {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 1_000_000;
    builder.check(|| {
        let clock = ManualClock::new();
        // Sequential outcomes: the acquire after the first `k` rate changes, for each k.
        let expected: Vec<(Duration, u64)> = (0..=RATES.len())
            .map(|k| {
                let shared = setup(&clock);
                for &r in &RATES[..k] {
                    shared.0.set_rate(Rate::per_second(r).unwrap()).unwrap();
                }
                assert!(shared.1.try_acquire(&shared.0, &clock));
                for &r in &RATES[k..] {
                    shared.0.set_rate(Rate::per_second(r).unwrap()).unwrap();
                }
                look(&shared, &clock)
            })
            .collect();
        let shared = Arc::new(setup(&clock));
        let caller = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || shared.1.try_acquire(&shared.0, &clock))
        };
        for &r in &RATES {
            shared.0.set_rate(Rate::per_second(r).unwrap()).unwrap();
        }
        assert!(caller.join().unwrap(), "a cold cell is free");
        let seen = look(&shared, &clock);
        assert!(expected.contains(&seen), "{seen:?} not in {expected:?}");
    });
}
