//! Loom models of the keyed token bucket's 8-byte cell (`BucketCell<Compact, Narrow>`, the
//! word `[time: 58 | tag: 6]`), through `Keyed<_, Buckets>` with the map's loom stand-in:
//! creating a key, a refund racing an admission, a reconfiguration racing an admission, and
//! a tag reused (64 reconfigurations later) while a reconfiguration races an admission.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p loom-tests --release --test keyed_narrow`
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{Buckets, Keyed, KeyedError};
use ringlimit::{BucketQuota, ConfigError, Rate};

type Limits = Keyed<u64, Buckets, ManualClock>;

/// A keyed token bucket of `burst` permits, one every `period` ns, on `clock` (origin 0).
fn limits(period: u64, burst: u64, clock: &ManualClock) -> Arc<Limits> {
    let rate = Rate::every(Duration::from_nanos(period)).unwrap();
    let quota = BucketQuota::new(rate, burst).unwrap();
    Arc::new(Keyed::with_clock(quota, clock.clone()).max_keys(4))
}

/// Two threads create the same new key at once (burst 1, clock still): one narrow cell
/// wins, so exactly one permit is admitted, and the key is then empty.
#[test]
fn two_threads_creating_one_key_get_one_narrow_cell() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(100, 1, &clock);
        let other = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.try_acquire(&7))
        };
        let mine = shared.try_acquire(&7);
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "admitted: {mine} and {theirs}");
        assert_eq!(shared.len(), 1);
        assert_eq!(shared.available(&7), 0);
    });
}

/// A refund races an admission on an empty key (burst 1, one permit an hour, clock still):
/// the racing call is admitted only after the refund gave the permit back, so no order
/// admits two, and the key ends with what the refund restored less what the call took.
#[test]
fn a_refund_racing_an_admission_never_doubles_a_permit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(3_600_000_000_000, 1, &clock);
        let grant = shared
            .try_grant(&7, 1)
            .unwrap()
            .into_grant()
            .expect("a full bucket");
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.try_acquire(&7))
        };
        let restored = shared.refund(&7, grant);
        let admitted = caller.join().unwrap();
        assert_eq!(
            restored, 1,
            "the clock stood still: the whole grant comes back"
        );
        assert_eq!(
            shared.available(&7),
            restored - u64::from(admitted),
            "admitted {admitted} after restoring {restored}"
        );
    });
}

/// A burst cut (2 → 1, clock still) races a call taking 2 permits on a new key, then a
/// snapshot reads the key. Linearizable outcomes: admitted under burst 2 before the cut
/// (the snapshot sees 0), or refused as `ExceedsLimit` under burst 1 (it sees 1). A stale
/// admission landing after the snapshot would give "admitted" and 1.
#[test]
fn a_reconfiguration_racing_an_admission_is_linearizable() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(100, 2, &clock);
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.try_acquire_n(&7, 2))
        };
        shared.config().set_limit(&clock, 1).unwrap();
        let seen = shared.available(&7);
        match caller.join().unwrap() {
            Ok(decision) => {
                assert!(decision.is_admitted(), "{decision:?}");
                assert_eq!(seen, 0, "admitted under burst 2, yet the cut left 1");
            }
            Err(KeyedError::ExceedsLimit(exceeds)) => {
                assert_eq!(exceeds.limit, 1);
                assert_eq!(seen, 1);
            }
            Err(other) => panic!("{other:?}"),
        }
    });
}

/// A tag reused: key 7 is emptied at clock 0 (burst 2, T = 100) under epoch 0, then 62
/// reconfigurations follow at clock 0 (the 63rd is refused: key 7 still owes permits of
/// epoch 0), the clock moves to 300 (past 0 + the burst's 200 ns: key 7 is full again), a
/// 63rd is accepted (quiet) and a 64th (burst cut to 1), whose tag is epoch 0's, races a
/// call taking 3 permits on key 7. Before the 64th, key 7 is 63 epochs behind and converts
/// from the emptiest state (nothing admitted, the documented deviation of a cell left
/// behind by more than 31 reconfigurations); after it, its tag reads as epoch 64's and its
/// time (200) as a full bucket at 300: one permit under the cut burst. The spec allows at
/// most 2 (a full bucket of 2 before the cut); a misread tag that kept epoch 0's debt, or
/// one that minted permits, would break these bounds.
#[test]
fn a_reused_tag_reads_a_full_cell_as_full_while_a_reconfiguration_races() {
    // The 64 set-up reconfigurations are many atomic steps.
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 1_000_000;
    builder.check(|| {
        let clock = ManualClock::new();
        let shared = limits(100, 2, &clock);
        assert!(shared.try_acquire_n(&7, 2).unwrap().is_admitted());
        for _ in 0..62 {
            shared.config().set_limit(&clock, 2).unwrap();
        }
        assert!(matches!(
            shared.config().set_limit(&clock, 2),
            Err(ConfigError::ReconfiguredTooOften { .. })
        ));
        clock.set_nanos(300);
        shared.config().set_limit(&clock, 2).unwrap();
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || (0..3).filter(|_| shared.try_acquire(&7)).count())
        };
        shared.config().set_limit(&clock, 1).unwrap();
        let admitted = caller.join().unwrap();
        assert!(
            admitted <= 1,
            "{admitted} permits from a bucket read as emptiest or as full under the cut to 1"
        );
        assert!(shared.available(&7) <= 1);
    });
}
