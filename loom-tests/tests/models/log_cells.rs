//! Loom models of sliding-log cells sharing one configuration
//! (`ringlimit::cell::SlidingLogCell`): limit changes racing decisions, groups completed
//! after one change and after more than the configuration remembers, and relabels racing each other.
//! (`SlidingLog` is one such cell: `sliding_log.rs` models the protocol itself.)
//!
//! Run: `bash loom-tests/run log_cells::`

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::cell::Compact;
use ringlimit::cell::{LogConfig, SlidingLogCell};
use ringlimit::clock::ManualClock;
use ringlimit::WindowQuota;

/// A configuration of `limit` per `window` ns with room for `max`, and one cell.
fn setup(limit: u64, window: u64, max: u64) -> Arc<(LogConfig, SlidingLogCell<Compact>)> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(window)).unwrap();
    let config = LogConfig::with_max_limit(quota, max).unwrap();
    let cell = SlidingLogCell::new(&config);
    Arc::new((config, cell))
}

/// A clock standing at `nanos` (each thread reads its own, so readings differ on purpose).
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

/// Limit 4 per 10 ns (room for 5). Two permits at 0. A caller
/// at 5 takes 2 (4 in the window: admitted). Meanwhile the limit goes 4 -> 5 -> 4 and a
/// second caller at 6 takes 2. Every reading is at most 6, so all permits lie in one window:
/// at most 5 (the largest limit ever set) may be admitted in all, so the two callers cannot
/// both be admitted. A helper completing the first group after two changes once fell back on
/// `limit = n` and stamped the group at the newest entry's expiry (10), a time no clock
/// showed; the second caller then joined time 10, where the permits of 0 had expired: 6
/// permits within 6 ns.
#[test]
fn a_group_helped_after_two_changes_never_lets_a_later_call_over_admit() {
    loom::model(|| {
        let shared = setup(4, 10, 5);
        assert!(shared
            .1
            .try_acquire_n(&shared.0, &at(0), 2)
            .unwrap()
            .is_admitted());
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &at(5), 2))
        };
        shared.0.set_limit(5).unwrap();
        shared.0.set_limit(4).unwrap();
        let second = shared.1.try_acquire_n(&shared.0, &at(6), 2).unwrap();
        let first = caller.join().unwrap().unwrap();
        let admitted = 2 + 2 * u64::from(first.is_admitted()) + 2 * u64::from(second.is_admitted());
        assert!(
            admitted <= 5,
            "{admitted} admitted at readings 0..=6: first {first:?}, second {second:?}"
        );
        // Nothing was stamped later than a reading: at 16 every permit has left.
        assert_eq!(shared.1.available(&shared.0, &at(16)), 4);
    });
}

/// The same through `SlidingLog`, whose `set_limit` calls race
/// each other (4 -> 5 and 5 -> 4 on two threads) while this thread's group is reserved.
#[test]
fn sliding_log_set_limits_racing_a_group_never_over_admit() {
    use ringlimit::{RateLimiter, SlidingLog};
    loom::model(|| {
        let quota = WindowQuota::per(4, Duration::from_nanos(10)).unwrap();
        let log = Arc::new(SlidingLog::with_max_limit(quota, 5, ManualClock::new()).unwrap());
        assert!(log.try_acquire_n(2).unwrap().is_admitted());
        log.clock().set_nanos(5);
        let changers: Vec<_> = [5, 4]
            .into_iter()
            .map(|l| {
                let log = log.clone();
                loom::thread::spawn(move || log.set_limit(l).unwrap())
            })
            .collect();
        let first = log.try_acquire_n(2).unwrap().is_admitted();
        changers.into_iter().for_each(|c| c.join().unwrap());
        log.clock().set_nanos(6);
        let second = log.try_acquire_n(2).unwrap().is_admitted();
        let admitted = 2 + 2 * u64::from(first) + 2 * u64::from(second);
        assert!(admitted <= 5, "{admitted} admitted at readings 0..=6");
    });
}

/// One change only (4 -> 5) while the group is reserved: a helper finds the group's limit in
/// the setting's `prior` and stamps it at its own reading, so at most 5 permits are admitted
/// at readings 0..=6 and everything has left by 16 (this model fails if the
/// `prior` lookup is dropped, which nothing else catches).
#[test]
fn a_group_helped_after_one_change_keeps_its_time() {
    loom::model(|| {
        let shared = setup(4, 10, 5);
        assert!(shared
            .1
            .try_acquire_n(&shared.0, &at(0), 2)
            .unwrap()
            .is_admitted());
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &at(5), 2))
        };
        shared.0.set_limit(5).unwrap();
        let second = shared.1.try_acquire_n(&shared.0, &at(6), 2).unwrap();
        let first = caller.join().unwrap().unwrap();
        let admitted = 2 + 2 * u64::from(first.is_admitted()) + 2 * u64::from(second.is_admitted());
        assert!(
            admitted <= 5,
            "{admitted} admitted: first {first:?}, second {second:?}"
        );
        assert_eq!(shared.1.available(&shared.0, &at(16)), 5);
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
