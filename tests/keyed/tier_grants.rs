//! Keyed grants and tiers: a grant is never refunded into a cell that did not count it (the
//! fresh cell of a re-assignment to the same tier, a new tier at a dropped tier's address,
//! a tier cell for a grant of the key's own quota), a bucket grant refunds nothing after a
//! rate change, and a grant is decided at or above a racing sweep's floor.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use ringlimit::cell::{SlidingConfig, WindowConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::keyed::{Buckets, FixedWindows, Keyed, SlidingWindows};
use ringlimit::{BucketQuota, Rate, WindowQuota};

const WINDOW: u64 = 1_000;

fn window_quota(limit: u64) -> WindowQuota {
    WindowQuota::per(limit, Duration::from_nanos(WINDOW)).unwrap()
}

/// Counts what `take` admits one permit at a time, up to `max`.
fn drain(max: u64, mut take: impl FnMut() -> bool) -> u64 {
    (0..max).filter(|_| take()).count() as u64
}

/// Re-assigning a key to the tier it is already on gives it a fresh cell (documented): a
/// grant taken from the old cell is not refunded into the new one, which never counted it.
/// Fixed windows, one window, frozen clock: the new cell admits no more than the tier limit
/// of 3.
#[test]
fn reassigning_to_the_same_tier_never_refunds_an_old_grant_into_the_fresh_cell_fixed() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(1)).unwrap(), clock.clone());
    let gold = limits.tier_of(WindowConfig::new(window_quota(3)).unwrap());
    limits.assign(7, &gold);
    let old = limits.try_grant(&7, 3).unwrap().into_grant().unwrap();
    // A rules reload puts key 7 on its plan again: a fresh cell (documented).
    limits.assign(7, &gold);
    let before = drain(10, || limits.try_acquire(&7));
    assert_eq!(before, 3);
    let restored = limits.refund(&7, old);
    let after = drain(10, || limits.try_acquire(&7));
    assert_eq!(
        (restored, before + after),
        (0, 3),
        "the fresh cell admitted {} in one window of limit 3 (refund restored {restored})",
        before + after
    );
}

/// The same for unassign followed by assign to the same tier.
#[test]
fn unassign_then_assign_never_refunds_an_old_grant_into_the_fresh_cell_sliding() {
    let clock = ManualClock::new();
    let quota = window_quota(4).buckets(4).unwrap();
    let limits: Keyed<u64, SlidingWindows<4>, _> = Keyed::with_config(
        SlidingConfig::new(window_quota(1).buckets(4).unwrap()).unwrap(),
        clock.clone(),
    );
    let gold = limits.tier_of(SlidingConfig::new(quota).unwrap());
    limits.assign(7, &gold);
    let old = limits.try_grant(&7, 4).unwrap().into_grant().unwrap();
    assert!(limits.unassign(&7));
    limits.assign(7, &gold);
    let before = drain(10, || limits.try_acquire(&7));
    let restored = limits.refund(&7, old);
    let after = drain(10, || limits.try_acquire(&7));
    assert_eq!(
        (restored, before + after),
        (0, 4),
        "the fresh cell admitted {} in one bucket of limit 4 (refund restored {restored})",
        before + after
    );
}

/// Token buckets: burst 3, one permit a second, frozen clock. Re-assigned, the fresh bucket
/// is emptied, and the old grant does not refill it.
#[test]
fn reassigning_to_the_same_tier_never_refunds_an_old_grant_into_the_fresh_cell_buckets() {
    let clock = ManualClock::new();
    let rate = Rate::every(Duration::from_secs(1)).unwrap();
    let limits: Keyed<u64, Buckets, _> =
        Keyed::with_clock(BucketQuota::new(rate, 1).unwrap(), clock.clone());
    let gold = limits.tier(BucketQuota::new(rate, 3).unwrap());
    limits.assign(7, &gold);
    let old = limits.try_grant(&7, 3).unwrap().into_grant().unwrap();
    limits.assign(7, &gold);
    let before = drain(10, || limits.try_acquire(&7));
    assert_eq!(before, 3);
    let restored = limits.refund(&7, old);
    let after = drain(10, || limits.try_acquire(&7));
    assert_eq!(
        (restored, before + after),
        (0, 3),
        "the fresh bucket admitted {} at one instant with burst 3 (refund restored {restored})",
        before + after
    );
}

/// A new tier allocated at a dropped tier's address does not take its grants: key 7 moves
/// from tier A (dropped) to a new tier C; A's grant is not refunded into C's fresh cell.
#[test]
fn a_new_tier_at_a_dropped_tiers_address_never_takes_its_grants() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(1)).unwrap(), clock.clone());
    let mut landed = 0;
    for key in 0..50u64 {
        let a = limits.tier_of(WindowConfig::new(window_quota(3)).unwrap());
        limits.assign(key, &a);
        let old = limits.try_grant(&key, 3).unwrap().into_grant().unwrap();
        assert!(limits.unassign(&key));
        drop(a);
        let c = limits.tier_of(WindowConfig::new(window_quota(3)).unwrap());
        limits.assign(key, &c);
        let before = drain(10, || limits.try_acquire(&key));
        let restored = limits.refund(&key, old);
        let after = drain(10, || limits.try_acquire(&key));
        if restored > 0 || before + after > 3 {
            landed += 1;
        }
        limits.unassign(&key);
    }
    assert_eq!(
        landed, 0,
        "{landed} of 50 refunds of a dropped tier's grant landed in a new tier"
    );
}

/// A clock that reads differently per thread: the thread named "skewed" sees `skewed`, every
/// other the shared reading (a TSC read on two cores, or any clock that can step back: the
/// floor exists for these).
#[derive(Clone)]
struct PerThread {
    main: Arc<AtomicU64>,
    skewed: Arc<AtomicU64>,
}

impl Clock for PerThread {
    fn now_nanos(&self) -> u64 {
        if std::thread::current().name() == Some("skewed") {
            self.skewed.load(Ordering::SeqCst)
        } else {
            self.main.load(Ordering::SeqCst)
        }
    }
}

/// A key whose hash stops once, on the "skewed" thread, at a barrier (a stand-in for a
/// preemption between `try_grant`'s floor load and its map lookup).
#[derive(Clone)]
struct Pausing {
    id: u64,
    pause: Option<Arc<(AtomicBool, Barrier, Barrier)>>,
}

impl Hash for Pausing {
    fn hash<H: Hasher>(&self, state: &mut H) {
        if let Some(pause) = &self.pause {
            if std::thread::current().name() == Some("skewed")
                && pause.0.swap(false, Ordering::SeqCst)
            {
                pause.1.wait();
                pause.2.wait();
            }
        }
        self.id.hash(state);
    }
}

impl PartialEq for Pausing {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Pausing {}

/// Runs `request` on the "skewed" thread (reading 900, window 0) paused between its start and
/// its map lookup while the main thread (reading 1500, window 1) sweeps key 7 (its one permit
/// of window 0 taken at 500, idle at 1500), then returns what `available` says at 1500.
fn race_a_sweep(
    request: impl FnOnce(&Keyed<Pausing, FixedWindows, PerThread>, &Pausing) -> bool + Send + 'static,
) -> (bool, u64) {
    let main = Arc::new(AtomicU64::new(500));
    let skewed = Arc::new(AtomicU64::new(900));
    let clock = PerThread {
        main: main.clone(),
        skewed: skewed.clone(),
    };
    let limits: Arc<Keyed<Pausing, FixedWindows, PerThread>> = Arc::new(Keyed::with_config(
        WindowConfig::new(window_quota(1)).unwrap(),
        clock,
    ));
    let pause = Arc::new((AtomicBool::new(false), Barrier::new(2), Barrier::new(2)));
    let key = Pausing {
        id: 7,
        pause: Some(pause.clone()),
    };
    assert!(limits.try_acquire(&key));
    pause.0.store(true, Ordering::SeqCst);
    let worker = {
        let (limits, key) = (limits.clone(), key.clone());
        std::thread::Builder::new()
            .name("skewed".into())
            .spawn(move || request(&limits, &key))
            .unwrap()
    };
    pause.1.wait();
    main.store(1_500, Ordering::SeqCst);
    assert_eq!(limits.evict_idle(), 1);
    pause.2.wait();
    let admitted = worker.join().unwrap();
    (admitted, limits.available(&key))
}

/// Control: `try_acquire_n` reads the floor under the key's lock, so the re-created key is
/// decided at 1500 (window 1): admitted there, and window 1 has nothing left.
#[test]
fn control_try_acquire_n_decides_at_the_sweep_floor_after_a_racing_eviction() {
    let (admitted, left) =
        race_a_sweep(|limits, key| limits.try_acquire_n(key, 1).unwrap().is_admitted());
    assert_eq!((admitted, left), (true, 0));
}

/// `try_grant` with a sweep that drops the key between the start of the call and its map
/// lookup (raising the floor to 1500): the re-created key is decided at 1500, never at 900 in
/// window 0, which the dropped cell had already filled.
#[test]
fn try_grant_decides_at_the_sweep_floor_after_a_racing_eviction() {
    let (admitted, left) =
        race_a_sweep(|limits, key| limits.try_grant(key, 1).unwrap().is_granted());
    assert_eq!(
        (admitted, left),
        (true, 0),
        "admitted in window 0 at 900 below the floor of 1500: a second permit in window 0"
    );
}

/// The owner of a grant names its tier: a grant taken under the own
/// quota, refunded after the key moved to a tier whose cell is exhausted, restores nothing
/// there.
#[test]
fn an_own_grant_never_refunds_into_the_tier_cell() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> =
        Keyed::with_config(WindowConfig::new(window_quota(2)).unwrap(), clock.clone());
    let gold = limits.tier_of(WindowConfig::new(window_quota(3)).unwrap());
    let own = limits.try_grant(&7, 2).unwrap().into_grant().unwrap();
    limits.assign(7, &gold);
    assert_eq!(drain(10, || limits.try_acquire(&7)), 3);
    assert_eq!(limits.refund(&7, own), 0);
    assert_eq!(
        limits.available(&7),
        0,
        "the own grant's permits landed in the tier's cell"
    );
}

/// A bucket refund checks the configuration epoch: burst 3,
/// one permit a second; a grant of 3 at 0 (mark 3 s in the old frame); the rate rises to 10
/// a second (the debt becomes 0.3 s); at 0.3 s the bucket has refilled and 3 are taken; the
/// old grant's mark, read in the new frame, is still "ahead", so without the epoch guard it
/// would restore 3 more.
#[test]
fn a_bucket_grant_refunds_nothing_after_a_rate_change() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, Buckets, _> = Keyed::with_clock(
        BucketQuota::new(Rate::every(Duration::from_secs(1)).unwrap(), 3).unwrap(),
        clock.clone(),
    );
    let grant = limits.try_grant(&7, 3).unwrap().into_grant().unwrap();
    limits
        .config()
        .set_rate(&clock, Rate::every(Duration::from_millis(100)).unwrap())
        .unwrap();
    clock.advance(Duration::from_millis(300));
    assert_eq!(drain(10, || limits.try_acquire(&7)), 3);
    let restored = limits.refund(&7, grant);
    assert_eq!((restored, limits.available(&7)), (0, 0));
}
