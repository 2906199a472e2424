//! A cold `try_acquire` (the shortcut's path) racing enough `set_rate`s to
//! rewrite the slot it reads (KEPT = 4): the cell must end as if the acquire were decided
//! wholly under one configuration, never a mix of one slot's old and new fields (the
//! shortcut's `full_one` with another curve, or its wait with another cooling).
//!
//! `bash loom-tests/run warm_up_seqlock::`

use crate::warm_up_model;

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::ManualClock;
use ringlimit::Rate;
use warm_up_model::{caller, look, setup};

/// Rates of epochs 1..=4; epoch 4 lands in epoch 0's slot.
const RATES: [u64; 4] = [4, 5, 8, 10];

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
        let caller = caller(&shared, &clock);
        for &r in &RATES {
            shared.0.set_rate(Rate::per_second(r).unwrap()).unwrap();
        }
        assert!(caller.join().unwrap(), "a cold cell is free");
        let seen = look(&shared, &clock);
        assert!(expected.contains(&seen), "{seen:?} not in {expected:?}");
    });
}
