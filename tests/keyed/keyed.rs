//! Keyed limiters (`ringlimit::keyed`): each key decides exactly as its own spec; the key
//! bound holds under racing inserts; a full limiter refuses new keys and admits them again
//! once idle keys can be dropped; racing creation and eviction never double a key's
//! allowance.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::{BucketConfig, LogConfig, SlidingConfig, WindowConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::keyed::{
    Buckets, FixedWindows, InFlight, Keyed, KeyedError, SlidingLogs, SlidingWindows,
};
use ringlimit::outcome::Decision;
use ringlimit::spec::{FixedWindowSpec, SlidingLogSpec, SlidingWindowSpec, Spec, TokenBucketSpec};
use ringlimit::{BucketQuota, ConcurrencyQuota, Rate, WindowQuota};

use crate::common;

use common::cells::Rng;
use common::every;

const WINDOW: u64 = 1_000;

fn window_quota(limit: u64) -> WindowQuota {
    WindowQuota::per(limit, Duration::from_nanos(WINDOW)).unwrap()
}

/// Random requests on a few keys against one spec per key.
fn per_key_against_specs<S: Spec>(
    seed: u64,
    clock: &ManualClock,
    acquire_n: impl Fn(u64, u64) -> Result<Decision, KeyedError>,
    available: impl Fn(u64) -> u64,
    mut spec: impl FnMut() -> S,
) {
    let mut rng = Rng(seed);
    let mut specs: Vec<S> = (0..5).map(|_| spec()).collect();
    for step in 0..3000 {
        clock.advance_nanos(rng.below(WINDOW / 3));
        let now = clock.now_nanos();
        let key = rng.below(5);
        let n = rng.below(4);
        let spec = &mut specs[key as usize];
        if rng.below(4) == 0 {
            assert_eq!(
                available(key),
                spec.available(now),
                "seed {seed} step {step}"
            );
            continue;
        }
        let want = spec.decide(now, n).map_err(KeyedError::from);
        assert_eq!(
            acquire_n(key, n),
            want,
            "seed {seed} step {step} key {key} n {n}"
        );
    }
}

#[test]
fn every_key_decides_exactly_as_its_own_spec() {
    for seed in 1..=20 {
        let clock = ManualClock::new();
        let fixed: Keyed<u64, FixedWindows, _> =
            Keyed::with_config(WindowConfig::new(window_quota(3)).unwrap(), clock.clone());
        per_key_against_specs(
            seed,
            &clock,
            |key, n| fixed.try_acquire_n(&key, n),
            |key| fixed.available(&key),
            || FixedWindowSpec::new(3, Duration::from_nanos(WINDOW)).unwrap(),
        );

        let clock = ManualClock::new();
        let quota = window_quota(3).buckets(4).unwrap();
        let sliding: Keyed<u64, SlidingWindows<4>, _> =
            Keyed::with_config(SlidingConfig::new(quota).unwrap(), clock.clone());
        per_key_against_specs(
            seed,
            &clock,
            |key, n| sliding.try_acquire_n(&key, n),
            |key| sliding.available(&key),
            || SlidingWindowSpec::new(3, Duration::from_nanos(WINDOW), 4).unwrap(),
        );

        let clock = ManualClock::new();
        let logs: Keyed<u64, SlidingLogs, _> =
            Keyed::with_config(LogConfig::new(window_quota(3)).unwrap(), clock.clone());
        per_key_against_specs(
            seed,
            &clock,
            |key, n| logs.try_acquire_n(&key, n),
            |key| logs.available(&key),
            || SlidingLogSpec::new(3, Duration::from_nanos(WINDOW)).unwrap(),
        );

        let clock = ManualClock::new();
        let rate = every(WINDOW / 4);
        let buckets: Keyed<u64, Buckets, _> =
            Keyed::with_clock(BucketQuota::new(rate, 3).unwrap(), clock.clone());
        per_key_against_specs(
            seed,
            &clock,
            |key, n| buckets.try_acquire_n(&key, n),
            |key| buckets.available(&key),
            || TokenBucketSpec::new(rate, 3).unwrap(),
        );
    }
}

/// A log key is idle once its newest entry has left the window, not before: a full
/// limiter of logs refuses a new key while any held entry is in its window, and takes it
/// once they all have left.
#[test]
fn a_full_limiter_of_logs_drops_a_key_only_once_its_newest_entry_left() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, SlidingLogs, _> =
        Keyed::with_config(LogConfig::new(window_quota(2)).unwrap(), clock.clone()).max_keys(2);
    assert!(limits.try_acquire(&0));
    clock.advance_nanos(WINDOW / 2);
    assert!(limits.try_acquire(&0));
    assert!(limits.try_acquire(&1));
    clock.advance_nanos(WINDOW / 2);
    // Key 0's first entry has left, its second has not; key 1's has not.
    assert_eq!(
        limits.try_acquire_n(&7, 1),
        Err(KeyedError::Full { max_keys: 2 })
    );
    assert_eq!(limits.available(&0), 1);
    clock.advance_nanos(WINDOW / 2);
    // Every entry has left: both keys are idle, and the new key gets in.
    assert!(limits.try_acquire(&7));
    assert_eq!(limits.available(&7), 1);
}

#[test]
fn a_full_limiter_refuses_new_keys_until_idle_ones_can_go() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(1)).unwrap(), clock.clone()).max_keys(3);
    for key in 0..3 {
        assert!(limits.try_acquire(&key));
    }
    // Every held key counts a permit in this window: nothing can be dropped.
    assert_eq!(
        limits.try_acquire_n(&7, 1),
        Err(KeyedError::Full { max_keys: 3 })
    );
    assert!(!limits.try_acquire(&8));
    assert_eq!(limits.len(), 3);
    // Held keys keep their exact limits meanwhile.
    assert!(!limits.try_acquire(&0));
    clock.advance_nanos(WINDOW);
    // The held keys are idle now: the new key's request sweeps and gets in.
    assert!(limits.try_acquire(&7));
    assert!(limits.len() <= 3);
    assert_eq!(limits.available(&7), 0);
}

/// `set_max_keys` changes the bound in place: every key keeps its count; lowered below the
/// keys held, none is dropped while live and no new key gets in until fewer are held than
/// the new bound; raised, new keys get in at once.
#[test]
fn set_max_keys_keeps_every_count_and_the_new_bound_holds_for_new_keys() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(2)).unwrap(), clock.clone()).max_keys(4);
    for key in 0..4 {
        assert!(limits.try_acquire(&key));
    }
    limits.set_max_keys(2);
    assert_eq!(limits.max_key_count(), 2);
    assert_eq!(limits.len(), 4);
    for key in 0..4 {
        assert_eq!(limits.available(&key), 1, "key {key} kept its count");
    }
    assert_eq!(
        limits.try_acquire_n(&9, 1),
        Err(KeyedError::Full { max_keys: 2 })
    );
    // Keys 0 and 1 stay live; 2 and 3 go idle once the window passes.
    clock.advance_nanos(WINDOW);
    assert!(limits.try_acquire(&0) && limits.try_acquire(&1));
    // Held: 0, 1 live, 2, 3 idle. A new key sweeps the idle ones, then finds 2 of 2 held.
    assert_eq!(
        limits.try_acquire_n(&9, 1),
        Err(KeyedError::Full { max_keys: 2 })
    );
    assert!(limits.len() <= 2, "{} keys held", limits.len());
    limits.set_max_keys(3);
    assert!(limits.try_acquire(&9));
    assert_eq!(limits.len(), 3);
    assert!(!limits.try_acquire_n(&10, 1).is_ok_and(|d| d.is_admitted()));
    assert_eq!(limits.len(), 3);
}

/// Threads insert distinct keys while another lowers and raises the bound: no new key is
/// ever created above the bound in force when it was created (here, never above the
/// largest bound), and once the bound is lowered for good the map never grows again.
#[test]
fn set_max_keys_racing_inserts_never_grows_past_the_bound() {
    let clock = ManualClock::new();
    let limits: Arc<Keyed<u64, FixedWindows, _>> = Arc::new(
        Keyed::with_config(WindowConfig::new(window_quota(1)).unwrap(), clock.clone()).max_keys(64),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let changer = {
        let (limits, stop) = (limits.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                limits.set_max_keys([16, 64, 32][i % 3]);
                i += 1;
                std::thread::yield_now();
            }
            limits.set_max_keys(8);
        })
    };
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let limits = limits.clone();
            std::thread::spawn(move || {
                for i in 0..5_000u64 {
                    let _ = limits.try_acquire(&(i * 3 + t));
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    // Counted once the inserts are over: while they run, the map's `len` may count an old
    // bucket array not yet dropped after a resize (scc's own caveat), an overcount of the
    // keys held, not keys above the bound (the bound is enforced by reservations).
    assert!(limits.len() <= 64, "{} keys held", limits.len());
    stop.store(true, Ordering::Relaxed);
    changer.join().unwrap();
    let held = limits.len();
    // The clock stands still: every key is live, none goes, and no new one gets in.
    for key in 100_000..100_100 {
        assert!(!limits.try_acquire(&key));
    }
    assert_eq!(limits.len(), held);
}

/// Threads insert distinct keys into a limiter bounded at 64 while the window keeps them
/// live; the bound holds throughout and every admitted key is one the map holds.
#[test]
fn the_key_bound_holds_under_racing_inserts() {
    let clock = ManualClock::new();
    let limits: Arc<Keyed<u64, FixedWindows, _>> = Arc::new(
        Keyed::with_config(WindowConfig::new(window_quota(1)).unwrap(), clock.clone()).max_keys(64),
    );
    let admitted = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (limits, admitted) = (limits.clone(), admitted.clone());
            std::thread::spawn(move || {
                for i in 0..10_000u64 {
                    if limits.try_acquire(&(i * 4 + t)) {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                    assert!(limits.len() <= 64, "{} keys held", limits.len());
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(admitted.load(Ordering::Relaxed), 64);
    assert_eq!(limits.len(), 64);
}

/// Many threads hit one new key at once, and a sweeper drops idle keys all the while: the
/// key's allowance (limit 5 per window, the clock standing still) is never doubled by two
/// cells, nor renewed by dropping a cell that counts permits.
#[test]
fn racing_creation_and_eviction_never_double_a_keys_allowance() {
    for round in 0..50 {
        let clock = ManualClock::new();
        let limits: Arc<Keyed<u64, FixedWindows, _>> = Arc::new(
            Keyed::with_config(WindowConfig::new(window_quota(5)).unwrap(), clock.clone())
                .max_keys(8),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let sweeper = {
            let (limits, stop) = (limits.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    limits.evict_idle();
                }
            })
        };
        let admitted = Arc::new(AtomicU64::new(0));
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (limits, admitted) = (limits.clone(), admitted.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        if limits.try_acquire(&round) {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
        stop.store(true, Ordering::Relaxed);
        sweeper.join().unwrap();
        assert_eq!(admitted.load(Ordering::Relaxed), 5, "round {round}");
        assert_eq!(limits.available(&round), 0);
    }
}

/// 100 000 distinct keys (one request each) through a limiter bounded at 1 000 while a hot
/// key keeps its exact limit: 10 per window, every window.
#[test]
fn a_flood_of_new_keys_stays_under_the_bound_and_hot_keys_keep_their_limit() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(10)).unwrap(), clock.clone())
            .max_keys(1_000);
    let hot = u64::MAX;
    for window in 0..100u64 {
        let mut hot_admitted = 0;
        for i in 0..1_000u64 {
            limits.try_acquire(&(window * 1_000 + i));
            if i % 50 == 0 && limits.try_acquire(&hot) {
                hot_admitted += 1;
            }
            assert!(limits.len() <= 1_000);
        }
        assert_eq!(hot_admitted, 10, "window {window}");
        clock.advance_nanos(WINDOW);
    }
}

/// Threads on a frozen clock, over a small key space (8 keys: every call collides with
/// others on the same key) and a large one (50 000 keys, new keys racing their creation),
/// with a bound the large space overflows so that sweeps run meanwhile. The clock never
/// moves, so each key's spec admits exactly its limit (a window's, a burst, a log's) and
/// nothing after: per key, the admissions of all threads must add up to exactly that for
/// a held key, and never more for any key.
fn frozen_clock_stress<F: ringlimit::keyed::RateFamily>(
    config: impl Fn(&ManualClock) -> F::Config,
    limit: u64,
    name: &str,
) {
    for (keys, max_keys) in [(8u64, 1_000usize), (50_000, 20_000)] {
        let clock = ManualClock::new();
        clock.set_nanos(1 << 40);
        let limits: Arc<Keyed<u64, F, ManualClock>> =
            Arc::new(Keyed::with_config(config(&clock), clock.clone()).max_keys(max_keys));
        let counts: Arc<Vec<AtomicU64>> = Arc::new((0..keys).map(|_| AtomicU64::new(0)).collect());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (limits, counts) = (limits.clone(), counts.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng(t + 11);
                    for _ in 0..60_000 {
                        let key = rng.below(keys);
                        if limits.try_acquire(&key) {
                            counts[key as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert!(
            limits.len() <= max_keys,
            "{name}: {} keys held",
            limits.len()
        );
        for (key, count) in counts.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            // A key held throughout admitted exactly its limit; none can have more, since an
            // exhausted key is never idle on a frozen clock and so never dropped.
            assert!(
                count <= limit,
                "{name}, {keys} keys: key {key} admitted {count}"
            );
            if keys == 8 {
                assert_eq!(count, limit, "{name}: key {key}");
            }
        }
    }
}

#[test]
fn threads_over_small_and_large_key_spaces_never_exceed_a_keys_limit() {
    let fixed = |_: &ManualClock| WindowConfig::new(window_quota(3)).unwrap();
    frozen_clock_stress::<FixedWindows>(fixed, 3, "fixed windows");
    let rate = Rate::every(Duration::from_secs(1)).unwrap();
    let buckets =
        |clock: &ManualClock| BucketConfig::token(BucketQuota::new(rate, 3).unwrap(), clock);
    frozen_clock_stress::<Buckets>(buckets, 3, "buckets");
    let logs = |_: &ManualClock| LogConfig::new(window_quota(3)).unwrap();
    frozen_clock_stress::<SlidingLogs>(logs, 3, "sliding logs");
}

/// Concurrency per key: a key with permits in flight is never dropped, one with none is; a
/// limiter full of keys with permits in flight refuses a new key; permits come back on drop.
#[test]
fn in_flight_keys_are_kept_while_held_and_dropped_once_released() {
    let limits: Keyed<u64, InFlight> = Keyed::new(ConcurrencyQuota::new(2).unwrap()).max_keys(2);
    let a = limits.try_acquire_permit(&1).unwrap().unwrap();
    let b = limits.try_acquire_many(&2, 2).unwrap().unwrap();
    assert!(limits.try_acquire_permit(&2).unwrap().is_none());
    assert_eq!(limits.evict_idle(), 0);
    assert_eq!(
        limits.try_acquire_permit(&3).unwrap_err(),
        KeyedError::Full { max_keys: 2 }
    );
    drop(b);
    assert_eq!((limits.in_flight(&2), limits.available(&2)), (0, 2));
    // Key 2 is idle now: the new key gets in, key 1 (one in flight) stays.
    let c = limits.try_acquire_permit(&3).unwrap().unwrap();
    assert_eq!(limits.len(), 2);
    assert_eq!(limits.in_flight(&1), 1);
    drop((a, c));
    assert_eq!(limits.evict_idle(), 2);
}

/// Threads take and hold permits on 8 keys (limit 3 each; each thread holds up to two across
/// iterations); a side count per key, raised after taking and lowered before giving back,
/// never sees more than 3 held, while a sweeper thread drops idle keys throughout (dropping
/// a key with permits out would let a fresh cell admit 3 more).
#[test]
fn in_flight_threads_never_hold_more_than_a_keys_limit() {
    let limits: Arc<Keyed<u64, InFlight>> =
        Arc::new(Keyed::new(ConcurrencyQuota::new(3).unwrap()).max_keys(8));
    let held: Arc<Vec<AtomicU64>> = Arc::new((0..8).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let sweeper = {
        let (limits, stop) = (limits.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                limits.evict_idle();
                std::thread::yield_now();
            }
        })
    };
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (limits, held) = (limits.clone(), held.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(t + 5);
                let mut taken = 0;
                // Each thread holds up to two permits across iterations (and yields while
                // holding), so the sweeper keeps finding keys with permits out.
                let mut holding = std::collections::VecDeque::new();
                for i in 0..20_000 {
                    let key = rng.below(8);
                    if let Ok(Some(permit)) = limits.try_acquire_permit(&key) {
                        let now = held[key as usize].fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= 3, "key {key}: {now} held");
                        taken += 1;
                        holding.push_back((key, permit));
                    }
                    if holding.len() > 2 || (i % 7 == 0 && !holding.is_empty()) {
                        let (key, permit) = holding.pop_front().unwrap();
                        held[key as usize].fetch_sub(1, Ordering::SeqCst);
                        drop(permit);
                    }
                    if i % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
                for (key, permit) in holding {
                    held[key as usize].fetch_sub(1, Ordering::SeqCst);
                    drop(permit);
                }
                taken
            })
        })
        .collect();
    let taken: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    sweeper.join().unwrap();
    assert!(taken > 1_000, "only {taken} taken");
    assert!((0..8).all(|key| limits.in_flight(&key) == 0));
}

/// Tiers: an assigned key decides exactly as its tier's spec, is never swept and does not
/// count towards `max_keys`; reconfiguring the tier reaches its keys; unassigning puts the
/// key back on the limiter's quota, afresh.
#[test]
fn assigned_keys_decide_under_their_tier() {
    for seed in 1..=10 {
        let clock = ManualClock::new();
        let limits: Keyed<u64, FixedWindows, _> =
            Keyed::with_config(WindowConfig::new(window_quota(1)).unwrap(), clock.clone())
                .max_keys(2);
        let gold = limits.tier_of(WindowConfig::new(window_quota(4)).unwrap());
        for key in 0..5 {
            limits.assign(key, &gold);
        }
        assert_eq!(limits.assigned_len(), 5);
        per_key_against_specs(
            seed,
            &clock,
            |key, n| limits.try_acquire_n(&key, n),
            |key| limits.available(&key),
            || FixedWindowSpec::new(4, Duration::from_nanos(WINDOW)).unwrap(),
        );
        // Assigned keys are not held against the bound: two more keys fit.
        assert!(limits.try_acquire(&100) && limits.try_acquire(&101));
        assert_eq!(limits.len(), 2);
    }
    let clock = ManualClock::new();
    let limits: Keyed<u64, Buckets, _> = Keyed::with_clock(
        BucketQuota::new(Rate::every(Duration::from_secs(1)).unwrap(), 1).unwrap(),
        clock.clone(),
    );
    let paid =
        limits.tier(BucketQuota::new(Rate::every(Duration::from_secs(1)).unwrap(), 5).unwrap());
    assert!(limits.try_acquire(&1) && !limits.try_acquire(&1));
    limits.assign(1, &paid);
    assert!(limits.try_acquire_n(&1, 5).unwrap().is_admitted());
    paid.config().set_limit(&clock, 7).unwrap();
    assert_eq!(limits.available(&1), 2, "the raise reaches the tier's key");
    clock.advance(Duration::from_secs(3600));
    // Its own cell, full again by now, goes as idle; the assigned one stays.
    assert_eq!(limits.evict_idle(), 1);
    assert_eq!((limits.len(), limits.assigned_len()), (0, 1));
    assert!(limits.unassign(&1));
    assert_eq!(limits.available(&1), 1);
    assert!(!limits.unassign(&1));
}

/// Threads take permits on 4 keys on a frozen clock while another assigns them to a tier of
/// limit 5 (the limiter's own is 2): each key admits at most 2 before and 5 after its
/// assignment (its cell starts afresh), never more than 7 in all.
#[test]
fn assignments_racing_requests_admit_under_one_quota_or_the_other() {
    for round in 0..20u64 {
        let clock = ManualClock::new();
        let limits: Arc<Keyed<u64, FixedWindows, _>> = Arc::new(Keyed::with_config(
            WindowConfig::new(window_quota(2)).unwrap(),
            clock.clone(),
        ));
        let tier = limits.tier_of(WindowConfig::new(window_quota(5)).unwrap());
        let counts: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
        let workers: Vec<_> = (0..3u64)
            .map(|t| {
                let (limits, counts) = (limits.clone(), counts.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng(round * 7 + t + 1);
                    for _ in 0..2_000 {
                        let key = rng.below(4);
                        if limits.try_acquire(&key) {
                            counts[key as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for key in 0..4 {
            limits.assign(key, &tier);
            std::thread::yield_now();
        }
        workers.into_iter().for_each(|w| w.join().unwrap());
        for (key, count) in counts.iter().enumerate() {
            // What the tier still admits now: with the threads' tier admissions, exactly 5;
            // with theirs under the own quota (at most 2), at most 7.
            let rest = (0..10)
                .filter(|_| limits.try_acquire(&(key as u64)))
                .count() as u64;
            let count = count.load(Ordering::Relaxed) + rest;
            assert!(
                (5..=7).contains(&count),
                "round {round}: key {key} admitted {count}"
            );
        }
    }
}

/// Grants per key: a refund restores a window's permits while its window (or bucket) is
/// current and a bucket's while its schedule is ahead; nothing afterwards, nothing for
/// another key, another limiter, or a grant taken under another tier.
#[test]
fn grants_refund_per_key_what_each_family_allows() {
    let clock = ManualClock::new();
    let fixed: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(3)).unwrap(), clock.clone());
    let grant = fixed.try_grant(&1, 2).unwrap().into_grant().unwrap();
    assert_eq!(fixed.available(&1), 1);
    assert_eq!(fixed.refund(&1, grant), 2);
    assert_eq!(fixed.available(&1), 3);
    let stale = fixed.try_grant(&1, 3).unwrap().into_grant().unwrap();
    assert!(fixed.try_grant(&1, 1).unwrap().into_grant().is_none());
    clock.advance_nanos(WINDOW);
    assert!(fixed.try_acquire(&1));
    assert_eq!(fixed.refund(&1, stale), 0, "its window has passed");
    assert_eq!(fixed.available(&1), 2);

    let quota = window_quota(4).buckets(4).unwrap();
    let sliding: Keyed<u64, SlidingWindows<4>, _> =
        Keyed::with_config(SlidingConfig::new(quota).unwrap(), clock.clone());
    let grant = sliding.try_grant(&1, 3).unwrap().into_grant().unwrap();
    let other = sliding.try_grant(&2, 1).unwrap().into_grant().unwrap();
    assert_eq!(sliding.refund(&2, grant), 0, "another key's grant");
    assert_eq!(sliding.refund(&1, other), 0, "another key's grant");
    let grant = sliding.try_grant(&3, 2).unwrap().into_grant().unwrap();
    clock.advance_nanos(WINDOW / 4);
    assert!(sliding.try_acquire(&3));
    assert_eq!(
        sliding.refund(&3, grant),
        0,
        "its bucket is no longer the head's"
    );
    assert_eq!(sliding.available(&3), 1);

    let rate = Rate::every(Duration::from_secs(1)).unwrap();
    let buckets: Keyed<u64, Buckets, _> =
        Keyed::with_clock(BucketQuota::new(rate, 3).unwrap(), clock.clone());
    let grant = buckets.try_grant(&1, 2).unwrap().into_grant().unwrap();
    assert_eq!(buckets.refund(&1, grant), 2);
    assert_eq!(buckets.available(&1), 3);
    let gold = buckets.tier(BucketQuota::new(rate, 5).unwrap());
    let own = buckets.try_grant(&1, 3).unwrap().into_grant().unwrap();
    buckets.assign(1, &gold);
    assert_eq!(
        buckets.refund(&1, own),
        0,
        "taken under the own quota, not the tier"
    );
    let on_tier = buckets.try_grant(&1, 5).unwrap().into_grant().unwrap();
    assert_eq!(buckets.refund(&1, on_tier), 5);
    let foreign: Keyed<u64, Buckets, _> =
        Keyed::with_clock(BucketQuota::new(rate, 3).unwrap(), clock.clone());
    let theirs = foreign.try_grant(&1, 1).unwrap().into_grant().unwrap();
    assert_eq!(buckets.refund(&1, theirs), 0, "another limiter's grant");

    let logs: Keyed<u64, SlidingLogs, _> =
        Keyed::with_config(LogConfig::new(window_quota(2)).unwrap(), clock.clone());
    let grant = logs.try_grant(&1, 1).unwrap().into_grant().unwrap();
    assert_eq!(logs.refund(&1, grant), 0, "logs grant, but refund nothing");
}

/// Threads on a frozen clock take grants on 4 keys and refund every other one. Per key, the
/// permits held (granted and not refunded) never exceed the limit: every refund restores
/// exactly what it took (the window never moves).
#[test]
fn racing_grants_and_refunds_never_exceed_a_keys_limit() {
    let clock = ManualClock::new();
    let limits: Arc<Keyed<u64, FixedWindows, _>> = Arc::new(Keyed::with_config(
        WindowConfig::new(window_quota(5)).unwrap(),
        clock.clone(),
    ));
    let held: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (limits, held) = (limits.clone(), held.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(t + 3);
                for i in 0..5_000 {
                    let key = rng.below(4);
                    let n = 1 + rng.below(2);
                    if let Some(grant) = limits.try_grant(&key, n).unwrap().into_grant() {
                        let now = held[key as usize].fetch_add(n, Ordering::SeqCst) + n;
                        assert!(now <= 5, "key {key}: {now} held");
                        if i % 2 == 0 {
                            held[key as usize].fetch_sub(n, Ordering::SeqCst);
                            assert_eq!(limits.refund(&key, grant), n);
                        }
                    }
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    for key in 0..4u64 {
        let held = held[key as usize].load(Ordering::SeqCst);
        assert_eq!(limits.available(&key), 5 - held, "key {key}");
    }
}

/// `evict_idle` called by several threads at once while requests run (on a frozen clock, so
/// every key with a permit stays live): the bound holds, and every key's admissions stay
/// within its limit.
#[test]
fn concurrent_sweeps_keep_the_floor_and_every_keys_limit() {
    let clock = ManualClock::new();
    let limits: Arc<Keyed<u64, FixedWindows, _>> = Arc::new(
        Keyed::with_config(WindowConfig::new(window_quota(2)).unwrap(), clock.clone()).max_keys(64),
    );
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..128).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let sweepers: Vec<_> = (0..2)
        .map(|_| {
            let (limits, stop) = (limits.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    limits.evict_idle();
                }
            })
        })
        .collect();
    let mut rng = Rng(9);
    for _ in 0..20_000 {
        let key = rng.below(128);
        if limits.try_acquire(&key) {
            counts[key as usize].fetch_add(1, Ordering::Relaxed);
        }
        assert!(limits.len() <= 64);
    }
    stop.store(true, Ordering::Relaxed);
    sweepers.into_iter().for_each(|s| s.join().unwrap());
    // The clock never moved: one window, so each key admitted at most its limit.
    for (key, count) in counts.iter().enumerate() {
        assert!(count.load(Ordering::Relaxed) <= 2, "key {key}");
    }
}

/// The table under churn: four threads request random keys out of 256 through a table of
/// 16 slots (max_keys 12) while a fifth sweeps, phase after phase of one window each (the
/// clock moves only between phases, all threads stopped): keys of earlier phases are idle
/// and freed, their slots claimed by other keys, with calls racing every step. No key is
/// ever admitted twice in one window (its limit is 1), whatever slot it lands in.
#[test]
fn slots_freed_and_reused_under_racing_calls_never_admit_a_key_twice_in_a_window() {
    const KEYS: u64 = 256;
    const PHASES: u64 = 40;
    const THREADS: usize = 4;
    let clock = ManualClock::new();
    let limits = Arc::new(
        Keyed::<u64, FixedWindows, _>::with_config(
            WindowConfig::new(window_quota(1)).unwrap(),
            clock.clone(),
        )
        .max_keys(12),
    );
    let barrier = Arc::new(std::sync::Barrier::new(THREADS + 2));
    let admitted: Arc<Vec<AtomicU64>> =
        Arc::new((0..KEYS * PHASES).map(|_| AtomicU64::new(0)).collect());
    let full = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (limits, barrier) = (limits.clone(), barrier.clone());
            let (admitted, full) = (admitted.clone(), full.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(t as u64 * 7 + 1);
                for phase in 0..PHASES {
                    barrier.wait();
                    for _ in 0..400 {
                        let key = rng.below(KEYS);
                        match limits.try_acquire_n(&key, 1) {
                            Ok(decision) if decision.is_admitted() => {
                                admitted[(phase * KEYS + key) as usize]
                                    .fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(_) => {}
                            Err(KeyedError::Full { .. }) => {
                                full.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(error) => panic!("{error}"),
                        }
                    }
                    barrier.wait();
                }
            })
        })
        .collect();
    let sweeper = {
        let (limits, barrier) = (limits.clone(), barrier.clone());
        std::thread::spawn(move || {
            for _ in 0..PHASES {
                barrier.wait();
                for _ in 0..20 {
                    limits.evict_idle();
                    std::thread::yield_now();
                }
                barrier.wait();
            }
        })
    };
    for _ in 0..PHASES {
        barrier.wait();
        barrier.wait();
        assert!(limits.len() <= 12, "{} keys held", limits.len());
        clock.advance(Duration::from_nanos(WINDOW));
    }
    workers.into_iter().for_each(|w| w.join().unwrap());
    sweeper.join().unwrap();
    for (i, count) in admitted.iter().enumerate() {
        let count = count.load(Ordering::Relaxed);
        assert!(
            count <= 1,
            "key {} admitted {count} times in phase {}",
            i as u64 % KEYS,
            i as u64 / KEYS
        );
    }
    let total: u64 = admitted.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    // At most 12 keys are held at once, yet each phase admits keys of its own: every phase
    // frees the last phase's keys (the sweeps, explicit or on a full table) and reuses
    // their slots.
    assert!(total >= PHASES * 8, "admitted {total}");
    assert!(full.load(Ordering::Relaxed) > 0);
}

/// `max_keys` called again before any key is held sizes the table for the later bound.
#[test]
fn a_later_max_keys_before_any_key_sizes_the_table_for_it() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(1)).unwrap(), clock.clone())
            .max_keys(1)
            .max_keys(1000);
    for key in 0..100 {
        assert_eq!(
            limits.try_acquire_n(&key, 1),
            Ok(Decision::Admitted { remaining: 0 })
        );
    }
}

/// A hasher that sends every `u64` key to one probe run of a bounded limiter's table: the
/// table's hash of key `k` is `2^63 + 4k` (the inverse of the table's spreading bijection
/// applied to it), so every key has the same home group and a fingerprint of its own.
#[derive(Clone, Default)]
struct OneRun;

struct OneRunHasher(u64);

impl std::hash::BuildHasher for OneRun {
    type Hasher = OneRunHasher;
    fn build_hasher(&self) -> OneRunHasher {
        OneRunHasher(0)
    }
}

impl std::hash::Hasher for OneRunHasher {
    fn write(&mut self, _: &[u8]) {
        unreachable!("u64 keys only")
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
    fn finish(&self) -> u64 {
        // The table spreads a hash `h` as `(h ^ h >> 32) * 0x9e37_79b9_7f4a_7c15`: multiply
        // by the constant's inverse modulo 2^64, then undo the xorshift (its own inverse).
        const INVERSE: u64 = {
            let c: u64 = 0x9e37_79b9_7f4a_7c15;
            let mut x = c;
            let mut i = 0;
            while i < 6 {
                x = x.wrapping_mul(2u64.wrapping_sub(c.wrapping_mul(x)));
                i += 1;
            }
            x
        };
        let spread = (1 << 63) | (self.0 << 2);
        let x = spread.wrapping_mul(INVERSE);
        x ^ (x >> 32)
    }
}

/// A probe run full of keys that have gone idle: a new key whose run has no free slot gets
/// a sweep (one is due: the keys are idle) and is placed, rather than refused as if the
/// limiter were full while it holds an eighth of its bound.
#[test]
fn a_full_probe_run_of_idle_keys_is_swept_for_a_new_key() {
    let clock = ManualClock::new();
    let config = WindowConfig::new(WindowQuota::per_second(1).unwrap()).unwrap();
    let limits = Keyed::<u64, FixedWindows, _, OneRun>::with_hasher(config, clock.clone(), OneRun)
        .max_keys(4096);
    let mut placed = 0;
    while limits.try_acquire_n(&placed, 1).is_ok() {
        placed += 1;
        assert!(placed <= 4096, "one probe run cannot hold every key");
    }
    assert!(placed >= 64, "{placed} keys placed in one run");
    assert_eq!(
        limits.try_acquire_n(&placed, 1),
        Err(KeyedError::Full { max_keys: 4096 })
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        limits.try_acquire_n(&placed, 1),
        Ok(Decision::Admitted { remaining: 0 })
    );
}

/// A bounded limiter's table keeps a dropped key's cell in its slot for the next key: that
/// key must start as a key never seen does (a full bucket), however many reconfigurations
/// came since the old cell was last touched (a narrow bucket cell left behind by 32 or more
/// converts from the emptiest state it could have been in), and so must a key placed in a
/// slot never used since the table was made.
#[test]
fn a_new_key_in_a_reused_or_untouched_slot_starts_full_after_many_reconfigurations() {
    let quota = BucketQuota::per_second(10).unwrap().burst(4).unwrap();
    // Forty reconfigurations 1 ms apart (within a refill time: the configuration allows 62).
    let reconfigure = |limits: &Keyed<u64, Buckets, ManualClock>, clock: &ManualClock| {
        for i in 0..40 {
            let rate = Rate::per_second(10 + i % 2).unwrap();
            limits.config().set_rate(clock, rate).unwrap();
            clock.advance(Duration::from_millis(1));
        }
    };
    // Never used: cells the table made with itself.
    let clock = ManualClock::new();
    let limits = Keyed::<u64, Buckets, _>::with_clock(quota, clock.clone()).max_keys(4);
    reconfigure(&limits, &clock);
    for key in 0..4 {
        assert_eq!(
            limits.try_acquire_n(&key, 4),
            Ok(Decision::Admitted { remaining: 0 })
        );
    }
    // Reused: four keys empty their buckets, which are full again (idle) 400 ms later, when
    // the keys are dropped; then the reconfigurations, then four new keys in their slots.
    let clock = ManualClock::new();
    let limits = Keyed::<u64, Buckets, _>::with_clock(quota, clock.clone()).max_keys(4);
    for key in 0..4 {
        assert!(limits.try_acquire_n(&key, 4).unwrap().is_admitted());
    }
    clock.advance(Duration::from_millis(400));
    assert_eq!(limits.evict_idle(), 4);
    reconfigure(&limits, &clock);
    for key in 100..104 {
        assert_eq!(
            limits.try_acquire_n(&key, 4),
            Ok(Decision::Admitted { remaining: 0 }),
            "key {key}"
        );
    }
}
