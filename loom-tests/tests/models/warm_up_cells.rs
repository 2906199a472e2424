//! Loom models of warm-up cells sharing one configuration (`ringlimit::cell::WarmUpCell`):
//! a reconfiguration touches no cell; each cell relabels itself on its next access, before
//! deciding, so a call still deciding under the old configuration fails its CAS.
//!
//! Run (seconds):
//! `bash loom-tests/run warm_up_cells::`

use crate::warm_up_model;

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::Rate;
use warm_up_model::{caller, look, setup};

/// Two callers take one permit each from a cold cell on a frozen clock: the first one's
/// cost (1.375 s) falls on the next caller, so exactly one is admitted, and the cell holds
/// exactly that one admission.
#[test]
fn two_racing_acquires_admit_exactly_one() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = Arc::new(setup(&clock));
        let callers: Vec<_> = (0..2).map(|_| caller(&shared, &clock)).collect();
        let admitted = callers
            .into_iter()
            .map(|c| c.join().unwrap())
            .filter(|&a| a)
            .count();
        assert_eq!(admitted, 1, "a free cell on a frozen clock admits one call");
        assert_eq!(
            look(&shared, &clock),
            (Duration::from_millis(1375), 7f64.to_bits())
        );
    });
}

/// A caller takes one cold permit while the rate doubles. Sequentially it is priced either
/// under 2/s (1.375 s, then 7 of max 8 stored: 14 of 16 under 4/s) or under 4/s (0.71875 s,
/// 15 of 16 stored): the cell ends in one of those two states, never a mix (such as the old
/// price with the new label, or a decision under the new curve on a word the old one
/// wrote).
#[test]
fn an_acquire_racing_set_rate_is_decided_under_one_configuration() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = Arc::new(setup(&clock));
        let caller = caller(&shared, &clock);
        shared.0.set_rate(Rate::per_second(4).unwrap()).unwrap();
        assert!(caller.join().unwrap(), "a cold cell is free");
        let seen = look(&shared, &clock);
        let old = (Duration::from_millis(1375), 14f64.to_bits());
        let new = (Duration::from_micros(718_750), 15f64.to_bits());
        assert!(seen == old || seen == new, "{seen:?}");
    });
}

/// The per-call bound is cut from 3 to 1 while a caller takes 2 permits; then a checker
/// reads `available` (which relabels the cell). Linearizable outcomes: admitted under 3
/// before the cut (the checker sees a busy cell: 0), or `ExceedsLimit` under 1 (the checker
/// sees the free cell: 1). A stale admission landing after the checker's relabel would give
/// "admitted" and 1: the relabel makes its CAS fail, and it decides again under the cut.
#[test]
fn a_stale_decision_fails_after_a_relabel() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = Arc::new(setup(&clock));
        shared.0.set_limit(3).unwrap();
        let caller = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &clock, 2))
        };
        shared.0.set_limit(1).unwrap();
        let seen = shared.1.available(&shared.0, &clock);
        let outcome = caller.join().unwrap().map_err(|exceeds| exceeds.limit);
        let linearizable = matches!(
            (outcome, seen),
            (Ok(Decision::Admitted { .. }), 0) | (Err(1), 1)
        );
        assert!(linearizable, "{outcome:?} with {seen} seen after the cut");
    });
}
