//! Loom models of fixed- and approximate-window cells sharing one configuration (`ringlimit::cell`): a limit
//! change touches no cell; each cell relabels itself on its next access.
//!
//! Run (seconds):
//! `bash loom-tests/run window_cells::`

use loom::sync::Arc;
use ringlimit::cell::Compact;
use ringlimit::cell::{ApproxWindowCell, FixedWindowCell, WindowConfig};
use ringlimit::clock::ManualClock;
use ringlimit::WindowQuota;

fn setup(limit: u64) -> Arc<(WindowConfig, FixedWindowCell<Compact>)> {
    Arc::new((
        WindowConfig::new(WindowQuota::per_second(limit).unwrap()).unwrap(),
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

/// Labels are not limit values: with the limit going 5 → 2 → 5 → 2, a relabel
/// prepared under the middle 5 could land after the last cut and restore exactly the word a
/// stalled admission had loaded, which then admitted 2 under limit 5 after a snapshot had
/// seen the cell under limit 2 for good. Labels are configuration epochs, which only
/// grow, so the stalled CAS fails. Three preemptions: the race needs them.
#[test]
fn a_stale_relabel_never_restores_a_word_a_stalled_admission_loaded() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let clock = ManualClock::new();
        let shared = setup(5);
        assert!(shared.1.try_acquire(&shared.0, &clock)); // count 1 of 5
        let admission = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || {
                shared
                    .1
                    .try_acquire_n(&shared.0, &clock, 2)
                    .unwrap()
                    .is_admitted()
            })
        };
        let snapshot = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || shared.1.available(&shared.0, &clock))
        };
        shared.0.set_limit(2).unwrap();
        shared.1.available(&shared.0, &clock);
        shared.0.set_limit(5).unwrap();
        loom::thread::yield_now();
        shared.0.set_limit(2).unwrap();
        let last = shared.1.available(&shared.0, &clock);
        let admitted = admission.join().unwrap();
        snapshot.join().unwrap();
        // Admitting 2 on a count of 1 needs limit 5 at its instant, before the last cut, so
        // the last snapshot must see count 3 (nothing left).
        assert!(
            !(admitted && last == 1),
            "admitted under 5 after the cut to 2 was seen"
        );
    });
}

/// The approximate window's cell on the same protocol: the limit is cut from 2 to 1 while a
/// caller takes 2 permits; then a checker reads `available`. Admitted under 2 before the cut
/// (the checker sees 0) or `ExceedsLimit` under 1 (the checker sees 1), never "admitted" and
/// 1.
#[test]
fn an_approximate_cell_never_lets_a_stale_call_land_after_a_newer_snapshot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = Arc::new((
            WindowConfig::new(WindowQuota::per_second(2).unwrap()).unwrap(),
            ApproxWindowCell::<Compact>::new(),
        ));
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
