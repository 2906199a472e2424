//! Loom models of fixed-window cells sharing one configuration (`ringlimit::cell`): a limit
//! change touches no cell; each cell relabels itself on its next access.
//!
//! Run (seconds):
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p loom-tests --release --test window_cells`
#![cfg(loom)]

use loom::sync::Arc;
use ringlimit::cell::{FixedWindowCell, WindowConfig};
use ringlimit::clock::ManualClock;
use ringlimit::{Compact, WindowQuota};

fn setup(limit: u64) -> Arc<(WindowConfig, FixedWindowCell<Compact>)> {
    Arc::new((
        WindowConfig::new(WindowQuota::per_second(limit).unwrap()),
        FixedWindowCell::new(),
    ))
}

/// The limit is cut from 2 to 1 while a caller takes 2 permits; then a checker reads
/// `available`. Linearizable outcomes: admitted under 2 before the cut (the checker sees 0),
/// or `ExceedsLimit` under 1 (the checker sees 1). Every call that sees the new limit
/// relabels the cell before deciding, so a call still deciding under the old limit fails its
/// CAS and decides again; a stale admission landing after the checker's read would give
/// "admitted" and 1.
#[test]
fn a_stale_call_never_lands_after_a_newer_snapshot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = setup(2);
        let caller = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &clock, 2))
        };
        shared.0.set_limit(1).unwrap();
        let seen = shared.1.available(&shared.0, &clock);
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

/// Two callers take one permit each on a cell holding 1 of limit 2 while the limit is cut
/// to 1 (the clock stands still). Under limit 2 one more fits; under limit 1 none: at most
/// one is admitted, and exactly one only if it linearized before the cut.
#[test]
fn racing_admissions_and_a_cut_never_exceed_the_limit_in_force() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = setup(2);
        assert!(shared.1.try_acquire(&shared.0, &clock));
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let (shared, clock) = (shared.clone(), clock.clone());
                loom::thread::spawn(move || shared.1.try_acquire(&shared.0, &clock))
            })
            .collect();
        shared.0.set_limit(1).unwrap();
        let admitted = callers
            .into_iter()
            .map(|c| c.join().unwrap())
            .filter(|&a| a)
            .count();
        assert!(
            admitted <= 1,
            "{admitted} admitted: 3 in a window of limit 2"
        );
        assert_eq!(shared.1.available(&shared.0, &clock), 0);
    });
}
