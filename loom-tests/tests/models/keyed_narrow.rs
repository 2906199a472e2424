//! Loom models of the keyed token bucket's 8-byte cell (`BucketCell<Compact, Narrow>`, the
//! word `[time: 58 | tag: 6]`), through `Keyed<_, Buckets>` with the map's loom stand-in:
//! creating a key, a refund racing an admission, a reconfiguration racing an admission, and
//! a tag reused (8 reconfigurations later under loom's 3-bit tags) while a reconfiguration
//! races an admission, and a call holding a stale word across the quiet epoch and the reuse.
//!
//! Run: `bash loom-tests/run keyed_narrow::`

use std::time::Duration;

use loom::sync::Arc;
use loom_tests::spawn_with;
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
        let other = spawn_with(&shared, |shared| shared.try_acquire(&7));
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
        let caller = spawn_with(&shared, |shared| shared.try_acquire(&7));
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
        let caller = spawn_with(&shared, |shared| shared.try_acquire_n(&7, 2));
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

/// Under loom the narrow word's tag has 3 bits (8 tags) and the configuration keeps 4
/// epochs, so a tag is reused 8 reconfigurations later and the quiet rule refuses the 7th
/// of a run (the 63rd outside loom).
const TAGS: u64 = 8;

/// A tag reused: key 7 is emptied at clock 0 (burst 2, T = 100) under epoch 0, then
/// `TAGS - 2` reconfigurations follow at clock 0 (the next is refused: key 7 still owes
/// permits of epoch 0), the clock moves to 300 (past 0 + the burst's 200 ns: key 7 is full
/// again), a 7th is accepted (quiet) and an 8th (burst cut to 1), whose tag is epoch 0's,
/// races a call taking 3 permits on key 7. Before the 8th, key 7 is 7 epochs behind and
/// converts from the emptiest state (nothing admitted, the documented deviation of a cell
/// left behind by the ring); after it, its tag reads as epoch 8's and its time (200) as a
/// full bucket at 300: one permit under the cut burst. The spec allows at most 2.
#[test]
fn a_reused_tag_reads_a_full_cell_as_full_while_a_reconfiguration_races() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(100, 2, &clock);
        assert!(shared.try_acquire_n(&7, 2).unwrap().is_admitted());
        for _ in 0..TAGS - 2 {
            shared.config().set_limit(&clock, 2).unwrap();
        }
        assert!(matches!(
            shared.config().set_limit(&clock, 2),
            Err(ConfigError::ReconfiguredTooOften { .. })
        ));
        clock.set_nanos(300);
        shared.config().set_limit(&clock, 2).unwrap();
        let caller = spawn_with(&shared, |shared| {
            (0..3).filter(|_| shared.try_acquire(&7)).count()
        });
        shared.config().set_limit(&clock, 1).unwrap();
        let admitted = caller.join().unwrap();
        assert!(
            admitted <= 1,
            "{admitted} permits from a bucket read as emptiest or as full under the cut to 1"
        );
        assert!(shared.available(&7) <= 1);
    });
}

/// A tag reused under a call holding a stale word across the quiet epoch, on a cell in
/// debt. Key 7 (burst 2, T = 100) is emptied at clock 0 under epoch 0; epoch 1 slows the
/// rate to T = 1000 (keeping debt, key 7 owes 2 permits until clock 2000); epochs 2..6
/// follow at clock 0. Then a caller takes one permit on key 7 while the admin sets the
/// clock to 2500, publishes 7 (quiet: past 0 + the widest span, 2000)
/// and 8 (epoch 0's tag, key 7's, reused). The caller may load the word, the epoch and the
/// clock anywhere in between: a stale word of epoch 0 (4+ behind: the emptiest
/// conversion), a reading of 0 with epoch 8 in force (raised to the floor, 2500), a CAS
/// landing after the reuse. Afterwards the admin takes what it can at 2500. The spec
/// admits nothing before 2500 and 2 permits in all after it: at most 2 in all. A cell read
/// under the reused tag at a reading below the floor (epoch 0's time 200 taken as epoch 8's
/// at clock 0: one permit and more) would exceed it.
#[test]
fn a_stale_call_across_the_quiet_epoch_and_a_reused_tag_never_over_admits() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(100, 2, &clock);
        assert!(shared.try_acquire_n(&7, 2).unwrap().is_admitted());
        let slow = Rate::every(Duration::from_nanos(1000)).unwrap();
        shared.config().set_rate(&clock, slow).unwrap();
        for _ in 2..=TAGS - 2 {
            shared.config().set_limit(&clock, 2).unwrap();
        }
        let caller = spawn_with(&shared, |shared| shared.try_acquire(&7));
        clock.set_nanos(2500);
        shared.config().set_limit(&clock, 2).unwrap();
        shared.config().set_limit(&clock, 2).unwrap();
        let theirs = usize::from(caller.join().unwrap());
        let mine = (0..3).filter(|_| shared.try_acquire(&7)).count();
        assert!(
            theirs + mine <= 2,
            "admitted {theirs} (racing) + {mine} (after) from a bucket of 2"
        );
    });
}
