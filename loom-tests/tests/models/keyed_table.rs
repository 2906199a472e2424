//! Loom models of the keyed limiter's fixed table (`ringlimit::keyed`, `.max_keys(n)`): the
//! slots' tags (empty / live / retiring / free), lookups pinned by the grace periods, the
//! insertion's stripe lock and free-slot claim, and the sweep's retire / grace period /
//! re-judge / free.
//!
//! Every model steers its keys with [`Steer`], a hasher sending key `k` to `k << 40`: the
//! tables here (`max_keys` 1 to 3) have 4 slots in one group, so every key probes the same
//! slots and a key freed by a sweep leaves a slot the next new key claims. Each model's
//! fingerprints (`hash & !3`) differ.
//!
//! Run: `bash loom-tests/run keyed_table::` (`LOOM_MAX_PREEMPTIONS=2`, release).

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use loom::sync::Arc;
use loom_tests::spawn_with;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{Buckets, FixedWindows, Keyed, KeyedError};
use ringlimit::{BucketQuota, Rate, WindowQuota};

/// Hashes key `k` (a `u64`) to `k << 40`: distinct fingerprints for small keys, all in the
/// home group 0 of a one-group table.
#[derive(Clone, Copy, Default)]
struct Steer;

struct SteerHasher(u64);

impl BuildHasher for Steer {
    type Hasher = SteerHasher;
    fn build_hasher(&self) -> SteerHasher {
        SteerHasher(0)
    }
}

impl Hasher for SteerHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here (`write_u64`); anything else still hashes.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key << 40;
    }
}

type Limits = Keyed<u64, FixedWindows, ManualClock, Steer>;

/// A fixed window of `limit` per 10 ns per key, at most `max_keys` keys (1 to 3: a table of
/// 4 slots in one group).
fn limits(limit: u64, max_keys: usize, clock: &ManualClock) -> Arc<Limits> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(10)).unwrap();
    let config = WindowConfig::new(quota).unwrap();
    Arc::new(Keyed::with_hasher(config, clock.clone(), Steer).max_keys(max_keys))
}

/// A token bucket of burst 1 refilling one permit per 10 ns per key, at most `max_keys` keys.
fn buckets(max_keys: usize, clock: &ManualClock) -> Arc<Keyed<u64, Buckets, ManualClock, Steer>> {
    let quota = BucketQuota::new(Rate::every(Duration::from_nanos(10)).unwrap(), 1).unwrap();
    let config = ringlimit::cell::BucketConfig::token(quota, clock);
    Arc::new(Keyed::with_hasher(config, clock.clone(), Steer).max_keys(max_keys))
}

/// Insertion dedup: two threads create one new key at once (limit 1). The stripe lock
/// serializes them and the second finds the first's slot, so there is one cell: exactly one
/// permit admitted, one key held, and the key's cell counts the permit.
#[test]
fn two_inserters_of_one_key_get_one_cell() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 3, &clock);
        let other = spawn_with(&shared, |shared| shared.try_acquire(&7));
        let mine = shared.try_acquire(&7);
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "admitted: {mine} and {theirs}");
        assert_eq!(shared.len(), 1);
        assert_eq!(shared.available(&7), 0);
        assert!(!shared.try_acquire(&7));
    });
}

/// A sweep racing a request on an idle key (its window passed): the sweep frees the slot
/// only if the request has not touched the cell (a reader pinned before the retire is waited
/// for by the grace period and its permit seen by the re-judgment; one pinned after takes
/// the slot back), and otherwise the request re-creates the key. Either way the permit is
/// counted in the key's cell: the key is held, nothing is left of its limit, a second
/// request in the window is refused.
#[test]
fn a_sweep_racing_a_request_on_an_idle_key_never_loses_the_permit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 3, &clock);
        assert!(shared.try_acquire(&7));
        clock.advance(Duration::from_nanos(10));
        let sweeper = spawn_with(&shared, |shared| shared.evict_idle());
        let admitted = shared.try_acquire(&7);
        let dropped = sweeper.join().unwrap();
        assert!(admitted);
        assert!(dropped <= 1);
        assert_eq!(
            shared.len(),
            1,
            "the key taken again is held (dropped {dropped})"
        );
        assert_eq!(
            shared.available(&7),
            0,
            "the permit taken was lost (dropped {dropped})"
        );
        assert!(!shared.try_acquire(&7));
    });
}

/// A stalled reader across eviction and reuse (limit 2 per window): thread A requests key 1,
/// idle, while the main thread evicts idle keys and then requests key 2, which probes the
/// same group and so claims key 1's slot if the sweep freed it. A's lookup may have loaded
/// key 1's live tag before the sweep retired it: the grace period waits for A, so the slot
/// is freed (and reused) only with A's cell untouched or not at all. A's permit is charged
/// to key 1 alone: key 1 has 1 left (not 2: the permit lost; never above its limit), key 2
/// has 1 left (not 0: A's permit in the cell key 2 took over).
#[test]
fn a_stalled_reader_is_charged_to_its_key_across_eviction_and_reuse() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(2, 3, &clock);
        assert!(shared.try_acquire_n(&1, 2).unwrap().is_admitted());
        clock.advance(Duration::from_nanos(10));
        let reader = spawn_with(&shared, |shared| shared.try_acquire(&1));
        let dropped = shared.evict_idle();
        let mine = shared.try_acquire(&2);
        let theirs = reader.join().unwrap();
        assert!(mine && theirs, "admitted: key 2 {mine}, key 1 {theirs}");
        assert!(dropped <= 1);
        assert_eq!(
            (shared.available(&1), shared.available(&2)),
            (1, 1),
            "left to keys 1 and 2 (dropped {dropped})"
        );
        assert_eq!(shared.len(), 2);
    });
}

/// A full table (`max_keys(1)`) whose one key is not idle (1 of its 2 permits taken this
/// window): two threads inserting new keys each run the automatic sweep, which frees
/// nothing, and both are refused as `Full`; nothing is freed or claimed, so key 1 keeps its
/// exact limit (1 left, then none).
#[test]
fn a_full_table_refuses_new_keys_and_keeps_the_live_keys_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(2, 1, &clock);
        assert!(shared.try_acquire(&1));
        let other = spawn_with(&shared, |shared| shared.try_acquire_n(&2, 1));
        let mine = shared.try_acquire_n(&3, 1);
        let theirs = other.join().unwrap();
        let full = Err(KeyedError::Full { max_keys: 1 });
        assert_eq!((mine, theirs), (full, full));
        assert_eq!(shared.len(), 1);
        assert_eq!(shared.available(&1), 1);
        assert!(shared.try_acquire(&1));
        assert!(!shared.try_acquire(&1));
    });
}

/// A full table (`max_keys(1)`) whose one key is idle: two threads insert new keys. The
/// first to run the automatic sweep frees key 1's slot and its room; exactly one of the new
/// keys gets it (the other refused as `Full`, never both admitted), and the winner decides
/// on a cell as fresh (the freed slot's, or an empty one): its 1 permit taken, none left.
#[test]
fn a_new_key_takes_the_place_of_an_idle_one_after_a_sweep() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 1, &clock);
        assert!(shared.try_acquire(&1));
        clock.advance(Duration::from_nanos(10));
        let other = spawn_with(&shared, |shared| shared.try_acquire_n(&2, 1));
        let mine = shared.try_acquire_n(&3, 1);
        let theirs = other.join().unwrap();
        let full = Err(KeyedError::Full { max_keys: 1 });
        let (winner, loser) = match (&mine, &theirs) {
            (Ok(d), r) if d.is_admitted() && *r == full => (3, 2),
            (r, Ok(d)) if d.is_admitted() && *r == full => (2, 3),
            _ => panic!("not exactly one new key admitted: {mine:?} {theirs:?}"),
        };
        assert_eq!(shared.len(), 1);
        assert_eq!(shared.available(&winner), 0);
        assert_eq!(shared.available(&loser), 1, "a fresh key's (absent)");
        assert_eq!(shared.available(&1), 1, "a fresh key's (absent)");
    });
}

/// Sweeps racing requests (token buckets of burst 1, both keys idle: full again): one thread
/// takes key 1 then sweeps, the main thread sweeps then takes key 2, so each sweep may retire
/// the key the other thread is taking. Each request is admitted, and its permit is counted:
/// both keys held (`len` 2, the held count agreeing with the keys), both buckets empty,
/// a second request on each refused (no over-admission).
#[test]
fn sweeps_racing_requests_keep_every_permit_and_the_count() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = buckets(3, &clock);
        assert!(shared.try_acquire(&1) && shared.try_acquire(&2));
        clock.advance(Duration::from_nanos(10));
        let other = spawn_with(&shared, |shared| {
            let admitted = shared.try_acquire(&1);
            (admitted, shared.evict_idle())
        });
        let dropped = shared.evict_idle();
        let mine = shared.try_acquire(&2);
        let (theirs, their_dropped) = other.join().unwrap();
        assert!(mine && theirs, "admitted: key 2 {mine}, key 1 {theirs}");
        assert!(dropped + their_dropped <= 2);
        assert_eq!(shared.len(), 2, "dropped {dropped} + {their_dropped}");
        assert_eq!(shared.available(&1), 0);
        assert_eq!(shared.available(&2), 0);
        assert!(!shared.try_acquire(&1) && !shared.try_acquire(&2));
        assert_eq!(shared.len(), 2);
    });
}

/// A reader stalled across two grace periods (limit 1 per window): key 3 is idle and key 1
/// holds its permit of window 1 (reading 10); a sweeper evicts idle keys (key 3: its grace
/// period flips the epoch), moves the clock to window 2 (reading 20) and evicts again (key 1,
/// idle now), while the main thread requests key 1. A reader that read the epoch before the
/// first flip and counted itself after that flip's wait confirms the epoch and counts itself
/// again on the new side, so the second flip's wait sees it: a request that loaded key 1's
/// live tag before the second sweep retired it is waited for. Admitted (only at reading 20:
/// at 10 the window is full), its permit is in key 1's cell: key 1 held, none left (refused,
/// key 1 has its 1 of window 2).
#[test]
fn a_reader_stalled_across_two_grace_periods_is_waited_for() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 3, &clock);
        assert!(shared.try_acquire(&3));
        clock.advance(Duration::from_nanos(10));
        assert!(shared.try_acquire(&1));
        let sweeper = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || {
                let first = shared.evict_idle();
                clock.advance(Duration::from_nanos(10));
                (first, shared.evict_idle())
            })
        };
        let admitted = shared.try_acquire(&1);
        let (first, second) = sweeper.join().unwrap();
        assert_eq!(first, 1, "key 3, idle");
        let left = shared.available(&1);
        let held = shared.len();
        assert_eq!(
            left,
            u64::from(!admitted),
            "admitted {admitted}, second sweep dropped {second}, {held} held"
        );
        assert!(!admitted || held == 1, "key 1 admitted but not held");
    });
}
