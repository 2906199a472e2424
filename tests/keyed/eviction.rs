//! Eviction never changes a decision: a limit raised during a sweep drops no live cell; a
//! reading older than an eviction's admits no more than if the key had been kept (on every
//! decision path, `try_acquire_n` included); a key racing itself at the bound gets no
//! spurious `Full`; a map full of idle keys admits a new key; a cell moved ahead of the
//! reading with nothing counted is not judged fresh; and a full bucket dropped before a burst
//! raise decides as one kept across it (keyed buckets keep a full bucket full across every
//! change).
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ringlimit::cell::{SlidingConfig, WindowConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::keyed::{Buckets, FixedWindows, IpKey, Keyed, KeyedError, SlidingWindows};
use ringlimit::{BucketQuota, Rate, WindowQuota};

/// A manual clock that runs a hook (once) on the first reading after it is armed.
#[derive(Clone)]
struct HookClock {
    inner: ManualClock,
    armed: Arc<AtomicBool>,
    hook: Arc<OnceLock<Box<dyn Fn() + Send + Sync>>>,
}
impl Clock for HookClock {
    fn now_nanos(&self) -> u64 {
        if self.armed.swap(false, Ordering::SeqCst) {
            (self.hook.get().unwrap())();
        }
        self.inner.now_nanos()
    }
}
fn hook_clock() -> HookClock {
    HookClock {
        inner: ManualClock::new(),
        armed: Arc::new(AtomicBool::new(false)),
        hook: Arc::new(OnceLock::new()),
    }
}

/// set_limit lands between evict_idle's read of `capacity` and the per-cell check.
#[test]
fn a_raise_racing_a_sweep_drops_no_live_window_cell() {
    let clock = hook_clock();
    let limits: &'static Keyed<u64, FixedWindows, HookClock> =
        Box::leak(Box::new(Keyed::with_config(
            WindowConfig::new(WindowQuota::per_second(5).unwrap()).unwrap(),
            clock.clone(),
        )));
    let _ = clock
        .hook
        .set(Box::new(move || limits.config().set_limit(10).unwrap()));
    let mut admitted = 0;
    for _ in 0..5 {
        admitted += u64::from(limits.try_acquire(&1));
    }
    assert_eq!(admitted, 5);
    clock.armed.store(true, Ordering::SeqCst);
    let dropped = limits.evict_idle();
    for _ in 0..20 {
        admitted += u64::from(limits.try_acquire(&1));
    }
    assert_eq!(
        admitted, 10,
        "limit 10 in one window, yet {admitted} admitted (dropped {dropped})"
    );
}

/// A reading older than one an eviction used (clock set back, or cross-core TSC skew).
#[test]
fn a_backward_reading_after_an_eviction_admits_as_if_kept() {
    let run = |evict: bool| {
        let clock = ManualClock::new();
        let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(
            WindowConfig::new(WindowQuota::per_second(1).unwrap()).unwrap(),
            clock.clone(),
        );
        clock.set_nanos(900_000_000);
        assert!(limits.try_acquire(&1));
        clock.set_nanos(1_000_000_001);
        if evict {
            limits.evict_idle();
        }
        clock.set_nanos(999_999_999); // 2 ns back
        let mut n = usize::from(limits.try_acquire(&1));
        clock.set_nanos(1_000_000_002);
        n += usize::from(limits.try_acquire(&1));
        n
    };
    assert_eq!(run(false), run(true), "kept vs evicted");
}

/// Full of idle keys, a new key gets in (the last sweep's earliest idle time is due).
#[test]
fn full_of_idle_keys_admits_a_new_key() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(
        WindowConfig::new(WindowQuota::per_second(1).unwrap()).unwrap(),
        clock.clone(),
    )
    .max_keys(80);
    clock.set_nanos(900_000_000);
    for k in 0..80 {
        assert!(limits.try_acquire(&k));
    }
    assert!(!limits.try_acquire(&1000)); // sweeps at 0.9 s, nothing idle
    clock.set_nanos(1_100_000_000); // every key idle now
    assert_eq!(
        limits.try_acquire_n(&1001, 1),
        Ok(ringlimit::outcome::Decision::Admitted { remaining: 0 }),
        "refused although all 80 keys are idle"
    );
}

#[test]
fn ip_keys() {
    use std::net::IpAddr;
    let a: IpAddr = "2001:db8::1".parse().unwrap();
    println!(
        "{} {} {} {}",
        IpKey::with_v6_prefix(a, 0),
        IpKey::with_v6_prefix(a, 200),
        IpKey::with_v6_prefix(a, 128),
        IpKey::new("::ffff:1.2.3.4".parse().unwrap())
    );
    println!("{}", IpKey::new("::1.2.3.4".parse().unwrap()));
    println!("{}", IpKey::new("::".parse().unwrap()));
    println!("{}", IpKey::new("0.0.0.0".parse().unwrap()));
    assert_ne!(
        IpKey::new("::".parse().unwrap()),
        IpKey::new("0.0.0.0".parse().unwrap())
    );
}

/// per_hour: all keys idle from 1:00, yet new keys are refused for most of the hour.
#[test]
fn full_of_idle_keys_admits_new_keys_within_the_hour() {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(
        WindowConfig::new(WindowQuota::per_hour(1).unwrap()).unwrap(),
        clock.clone(),
    )
    .max_keys(80);
    clock.set(Duration::from_secs(59 * 60));
    for k in 0..80 {
        assert!(limits.try_acquire(&k));
    }
    assert!(!limits.try_acquire(&1000)); // sweeps at 0:59, nothing idle
    let mut refused = 0;
    for i in 0..9u64 {
        clock.set(Duration::from_secs(60 * 60 + 1 + i * 6 * 60)); // 1:00:01 .. 1:48:01
        refused += usize::from(
            limits.try_acquire_n(&(2000 + i), 1) == Err(KeyedError::Full { max_keys: 80 }),
        );
    }
    assert_eq!(
        refused, 0,
        "{refused} new keys refused while all 80 held keys were idle"
    );
}

// Every decision path is floored; a cell moved ahead of the reading is not fresh.

/// The backward reading after an eviction through `try_acquire_n(1)`: it is floored too.
#[test]
fn try_acquire_n_after_an_eviction_is_floored() {
    let run = |evict: bool| {
        let clock = ManualClock::new();
        let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(
            WindowConfig::new(WindowQuota::per_second(1).unwrap()).unwrap(),
            clock.clone(),
        );
        clock.set_nanos(900_000_000);
        assert!(limits.try_acquire_n(&1, 1).unwrap().is_admitted());
        clock.set_nanos(1_000_000_001);
        if evict {
            assert_eq!(limits.evict_idle(), 1);
        }
        clock.set_nanos(999_999_999);
        let mut n = usize::from(limits.try_acquire_n(&1, 1).unwrap().is_admitted());
        clock.set_nanos(1_000_000_002);
        n += usize::from(limits.try_acquire_n(&1, 1).unwrap().is_admitted());
        n
    };
    assert_eq!(run(false), run(true), "kept vs evicted");
}

/// A fixed-window cell moved ahead of the sweep's reading with count 0 (by an
/// ExceedsLimit request) is not judged fresh: a fresh cell would count in an earlier window.
#[test]
fn fixed_cell_ahead_with_zero_count_is_not_fresh() {
    let run = |evict: bool| {
        let clock = ManualClock::new();
        let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(
            WindowConfig::new(WindowQuota::per_second(1).unwrap()).unwrap(),
            clock.clone(),
        );
        clock.set_nanos(2_500_000_000);
        assert!(limits.try_acquire_n(&1, 2).is_err()); // ExceedsLimit: cell -> window 2, count 0
        clock.set_nanos(500_000_000); // a reading behind the cell (set back / skew)
        if evict {
            limits.evict_idle(); // must keep the cell (or drop it only if fresh)
        }
        clock.set_nanos(1_500_000_000); // >= floor
        let mut n = usize::from(limits.try_acquire(&1));
        clock.set_nanos(2_500_000_000);
        n += usize::from(limits.try_acquire(&1));
        n
    };
    assert_eq!(run(false), run(true), "kept vs evicted");
}

/// The same for sliding windows (2 buckets of 500 ms).
#[test]
fn sliding_cell_ahead_with_zero_count_is_not_fresh() {
    let run = |evict: bool| {
        let clock = ManualClock::new();
        let config =
            SlidingConfig::<2>::new(WindowQuota::per_second(1).unwrap().buckets(2).unwrap())
                .unwrap();
        let limits: Keyed<u64, SlidingWindows<2>, _> = Keyed::with_config(config, clock.clone());
        clock.set_nanos(2_600_000_000); // bucket 5
        assert!(limits.try_acquire_n(&1, 2).is_err());
        clock.set_nanos(100_000_000);
        if evict {
            limits.evict_idle(); // must keep the cell (or drop it only if fresh)
        }
        clock.set_nanos(2_100_000_000); // bucket 4
        let mut n = usize::from(limits.try_acquire(&1));
        clock.set_nanos(3_100_000_000); // bucket 6
        n += usize::from(limits.try_acquire(&1));
        n
    };
    assert_eq!(run(false), run(true), "kept vs evicted");
}

/// A raise racing a sweep, on buckets: a burst raise lands between the sweep's reading and its judgement of a
/// full bucket. Kept or dropped, the key has the raised burst at once (a full bucket stays
/// full), so the drop changes nothing.
#[test]
fn raise_racing_evict_of_a_full_bucket_changes_nothing() {
    let clock = hook_clock();
    let inner = clock.inner.clone();
    let quota = BucketQuota::new(Rate::every(Duration::from_secs(3600)).unwrap(), 1).unwrap();
    let limits: &'static Keyed<u64, Buckets, HookClock> =
        Box::leak(Box::new(Keyed::with_clock(quota, clock.clone())));
    let _ = clock.hook.set(Box::new(move || {
        limits.config().set_limit(&inner, 4).unwrap()
    }));
    assert!(limits.try_acquire(&1));
    clock.inner.advance(Duration::from_secs(3600)); // full again: 1 of 1
    clock.armed.store(true, Ordering::SeqCst);
    let dropped = limits.evict_idle();
    let admitted = (0..10).filter(|_| limits.try_acquire(&1)).count();
    assert_eq!(
        admitted, 4,
        "dropped {dropped}, then admitted {admitted} at once"
    );
}

/// A full bucket dropped before a burst raise, and one kept across it, decide alike.
#[test]
fn evicting_a_full_bucket_before_a_raise_changes_no_decision() {
    let run = |evict: bool, burst: u64| {
        let clock = ManualClock::new();
        let quota = BucketQuota::new(Rate::every(Duration::from_secs(3600)).unwrap(), 2).unwrap();
        let limits: Keyed<u64, Buckets, _> = Keyed::with_clock(quota, clock.clone());
        assert!(limits.try_acquire(&1));
        clock.advance(Duration::from_secs(3600));
        if evict {
            assert_eq!(limits.evict_idle(), 1);
        }
        limits.config().set_limit(&clock, burst).unwrap();
        limits
            .config()
            .set_rate(&clock, Rate::every(Duration::from_secs(60)).unwrap())
            .unwrap();
        let now = (0..10).filter(|_| limits.try_acquire(&1)).count();
        clock.advance(Duration::from_secs(60));
        (now, limits.available(&1))
    };
    for burst in [1, 2, 5] {
        assert_eq!(
            run(false, burst),
            run(true, burst),
            "burst {burst}: kept vs evicted"
        );
    }
    assert_eq!(run(false, 5), (5, 1));
}

/// A bucket that is not full keeps its debt across a raise (the raise's extra permits are
/// added), and is not dropped.
#[test]
fn a_bucket_in_debt_gets_a_raise_extra_and_stays() {
    let clock = ManualClock::new();
    let quota = BucketQuota::new(Rate::every(Duration::from_secs(3600)).unwrap(), 3).unwrap();
    let limits: Keyed<u64, Buckets, _> = Keyed::with_clock(quota, clock.clone());
    assert!(limits.try_acquire_n(&1, 2).unwrap().is_admitted());
    assert_eq!(limits.evict_idle(), 0);
    limits.config().set_limit(&clock, 5).unwrap();
    assert_eq!(limits.available(&1), 3);
    limits.config().set_limit(&clock, 2).unwrap();
    assert_eq!(
        limits.available(&1),
        2,
        "a shrinking burst keeps the permits, capped"
    );
}
