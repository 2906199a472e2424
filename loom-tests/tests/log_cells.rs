//! Loom models of sliding-log cells sharing one configuration
//! (`ringlimit::cell::SlidingLogCell`): limit changes racing decisions, groups completed
//! after more changes than the configuration remembers, and relabels racing each other.
//! (`SlidingLog` is one such cell: `sliding_log.rs` models the protocol itself.)
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p loom-tests --release --test log_cells`
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::cell::{LogConfig, SlidingLogCell};
use ringlimit::clock::ManualClock;
use ringlimit::{Compact, Decision, WindowQuota};

/// A configuration of `limit` per `window` ns with room for `max`, and one cell.
fn setup(limit: u64, window: u64, max: u64) -> Arc<(LogConfig, SlidingLogCell<Compact>)> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(window)).unwrap();
    let config = LogConfig::with_max_limit(quota, max);
    let cell = SlidingLogCell::new(&config);
    Arc::new((config, cell))
}

/// A clock standing at `nanos` (each thread reads its own, so readings differ by design).
fn at(nanos: u64) -> ManualClock {
    let clock = ManualClock::new();
    clock.set_nanos(nanos);
    clock
}

/// The limit is cut from 2 to 1 while a caller takes 2 permits of an empty cell; then a
/// checker reads `available`. Admitted under 2 before the cut (the checker sees 0), or
/// `ExceedsLimit` under 1 (the checker sees 1). The checker relabels the cell before
/// reading, stamping the free head slot, so a call still deciding under the old limit fails
/// its claim and decides again; a stale admission landing after the checker's read would
/// give "admitted" and 1.
#[test]
fn a_stale_call_never_lands_after_a_newer_snapshot() {
    loom::model(|| {
        let shared = setup(2, 10, 2);
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &at(0), 2))
        };
        shared.0.set_limit(1).unwrap();
        let seen = shared.1.available(&shared.0, &at(0));
        match caller.join().unwrap() {
            Ok(decision) => {
                assert!(decision.is_admitted(), "{decision:?}");
                assert_eq!(seen, 0, "admitted under limit 2, yet the cut left 1");
            }
            Err(exceeds) => {
                assert_eq!(exceeds.limit, 1);
                assert_eq!(seen, 1);
            }
        }
    });
}

/// Limit 3 over 10 ns; one permit at 0. A caller at 5 takes a group of 2 (3 in the window:
/// admitted) while the limit goes 3 → 2 → 3 (two changes: the configuration no longer knows
/// the label the group was reserved under) and a helper at 5 reads `available`, completing
/// the group if the caller has not. The group is never stamped earlier than 5: at 14 (the
/// permit of 0 gone) at most 1 is available whatever the interleaving, and exactly 1 when
/// the caller fixed its own time (it knows its limit). Never over-admission.
#[test]
fn a_group_completed_after_two_changes_is_never_stamped_early() {
    loom::model(|| {
        let shared = setup(3, 10, 3);
        assert!(shared.1.try_acquire(&shared.0, &at(0)));
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &at(5), 2))
        };
        shared.0.set_limit(2).unwrap();
        shared.0.set_limit(3).unwrap();
        let seen = shared.1.available(&shared.0, &at(5));
        let outcome = caller.join().unwrap();
        let left = shared.1.available(&shared.0, &at(14));
        match outcome {
            Ok(Decision::Admitted { .. }) => assert!(left <= 1, "{left} left at 14"),
            // Refused under 2 (1 + 2 > 2) or exceeding nothing: then nothing was taken.
            Ok(Decision::Refused { .. }) => assert_eq!(left, 3),
            Err(exceeds) => panic!("{exceeds:?}"),
        }
        assert!(seen <= 3);
        // At 15 the group stamped at its leader's reading (5) has left; one stamped by a
        // helper falling back on `n` is at most at 10 (the newest entry's expiry), gone by 20.
        assert_eq!(shared.1.available(&shared.0, &at(20)), 3);
    });
}

/// Limit 1 raised to 2 while two callers each take one permit. Relabels race each other (a
/// caller may find the other's stamp and finish its switch) and decisions under the old
/// label: at least one is admitted, and what the checker sees afterwards agrees with how
/// many were.
#[test]
fn relabels_racing_each_other_and_decisions_agree() {
    loom::model(|| {
        let shared = setup(1, 10, 2);
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let shared = shared.clone();
                loom::thread::spawn(move || shared.1.try_acquire(&shared.0, &at(0)))
            })
            .collect();
        shared.0.set_limit(2).unwrap();
        let admitted = callers
            .into_iter()
            .map(|c| c.join().unwrap())
            .filter(|&a| a)
            .count() as u64;
        assert!(admitted >= 1);
        assert_eq!(shared.1.available(&shared.0, &at(0)), 2 - admitted);
    });
}
