//! Loom models of bucket cells sharing one configuration (`ringlimit::cell`): a
//! reconfiguration touches no cell, and each cell converts itself on its next access.
//!
//! Run (seconds):
//! `bash loom-tests/run bucket_cells::`

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::cell::Compact;
use ringlimit::cell::{BucketCell, BucketConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::{BucketQuota, Rate};

fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

/// A shared configuration (origin 0 on `clock`) and two cells under it.
fn setup(
    period: u64,
    burst: u64,
    clock: &ManualClock,
) -> Arc<(BucketConfig, [BucketCell<Compact>; 2])> {
    let config = BucketConfig::token(BucketQuota::new(every(period), burst).unwrap(), clock);
    let cells = [BucketCell::new(&config), BucketCell::new(&config)];
    Arc::new((config, cells))
}

fn admitted(
    shared: &(BucketConfig, [BucketCell<Compact>; 2]),
    clock: &ManualClock,
    cell: usize,
    times: u64,
) -> u64 {
    let (config, cells) = shared;
    (0..times)
        .filter(|_| cells[cell].try_acquire(config, clock))
        .count() as u64
}

/// A rate increase (T 100 → 1 ns, burst 2 in both) races a caller that moves the clock to
/// 1000 and tries three permits on one cell. At the one instant 1000 no order admits more
/// than the burst, 2. The conversion's reading is fixed only after the new epoch is
/// published, so it is no older than the reading of a call that saw the old epoch: with the
/// reading taken before the publication (0), an admission at 1000 under the old
/// configuration is converted at 0, re-rating 900 ns at the new rate, and a third permit is
/// admitted.
#[test]
fn a_conversion_never_uses_a_reading_older_than_a_stale_admission() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = setup(100, 2, &clock);
        let caller = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || {
                clock.set_nanos(1000);
                admitted(&shared, &clock, 0, 3)
            })
        };
        shared.0.set_rate(&clock, every(1)).unwrap();
        let admitted = caller.join().unwrap();
        assert!(admitted <= 2, "{admitted} permits at one instant, burst 2");
    });
}

/// Two cells share the configuration; a burst cut (4 → 1, same rate, clock still) races one
/// call on each that takes two permits. A call decided under the old burst admits 2 (its
/// cell converts afterwards, keeping what is left: at most 1 of the new burst); one decided
/// under the new burst fails with `ExceedsLimit`. Afterwards each cell, converted, holds
/// exactly what its history leaves: 0 if its call was admitted, else 1; never more.
#[test]
fn cells_sharing_a_configuration_each_convert_once_and_exactly() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = setup(100, 4, &clock);
        let callers: Vec<_> = (0..2)
            .map(|cell| {
                let (shared, clock) = (shared.clone(), clock.clone());
                loom::thread::spawn(move || {
                    let (config, cells) = &*shared;
                    cells[cell].try_acquire_n(config, &clock, 2)
                })
            })
            .collect();
        shared.0.set_limit(&clock, 1).unwrap();
        let (config, cells) = &*shared;
        for (cell, caller) in callers.into_iter().enumerate() {
            let decision = caller.join().unwrap();
            let left = cells[cell].available(config, &clock);
            match decision {
                Ok(decision) => {
                    assert!(decision.is_admitted(), "{decision:?}");
                    // 4 - 2 = 2 permits kept, clipped to the new burst, 1.
                    assert_eq!(left, 1, "cell {cell} admitted under burst 4");
                }
                Err(exceeds) => {
                    assert_eq!(exceeds.limit, 1);
                    assert_eq!(left, 1, "cell {cell} refused under burst 1");
                }
            }
        }
        assert_eq!(config.limit(), 1);
    });
}

/// Every call that sees the new configuration writes the conversion before it decides,
/// even a snapshot, so a call still deciding under the old configuration fails its CAS and
/// decides again. Burst 2 at T = 100, clock 0, a full cell; the burst is cut to 1 while a
/// caller takes 2 permits; then a checker reads `available`. Linearizable outcomes: the
/// caller admitted under burst 2 before the cut (the checker then sees 0), or it fails with
/// `ExceedsLimit` under burst 1 (the checker sees 1). A stale admission landing after the
/// checker's read would give "admitted" and 1.
#[test]
fn a_stale_call_never_lands_after_a_newer_snapshot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = setup(100, 2, &clock);
        let caller = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || {
                let (config, cells) = &*shared;
                cells[0].try_acquire_n(config, &clock, 2)
            })
        };
        let (config, cells) = &*shared;
        config.set_limit(&clock, 1).unwrap();
        let seen = cells[0].available(config, &clock);
        match caller.join().unwrap() {
            Ok(decision) => {
                assert!(decision.is_admitted(), "{decision:?}");
                assert_eq!(seen, 0, "admitted under burst 2, yet the cut left 1");
            }
            Err(exceeds) => {
                assert_eq!(exceeds.limit, 1);
                assert_eq!(seen, 1);
            }
        }
        assert_eq!(clock.now_nanos(), 0);
    });
}

/// A cell untouched across more reconfigurations than the configuration keeps (32)
/// converts from the emptiest state it could be in, so it never admits more than an exact
/// conversion would, while a reconfiguration races its first access. Burst 3 at T = 100:
/// cell 1 is emptied at clock 0, then 32 `set_limit` calls alternate 2 and 3 (the rate and
/// clock stay), and a 33rd races a caller that tries permits on the cell: at clock 0 it is
/// empty under every history, so nothing is admitted.
#[test]
fn a_cell_older_than_the_ring_converts_conservatively() {
    // The 32 set-up reconfigurations and the long conversion are many atomic steps.
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 1_000_000;
    builder.check(|| {
        let clock = ManualClock::new();
        let shared = setup(100, 3, &clock);
        assert_eq!(admitted(&shared, &clock, 1, 4), 3);
        for limit in [2, 3].repeat(16) {
            shared.0.set_limit(&clock, limit).unwrap();
        }
        let caller = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || admitted(&shared, &clock, 1, 2))
        };
        shared.0.set_limit(&clock, 2).unwrap();
        let admitted = caller.join().unwrap();
        assert_eq!(admitted, 0, "an emptied cell admitted at the same instant");
    });
}
