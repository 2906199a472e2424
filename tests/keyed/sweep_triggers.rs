//! Keyed sweeps: a sweep racing a rate raise mints no permits (it judges at its reading but
//! settles with a fresh one); a reconfiguration read through `Keyed::clock` is floored after
//! a sweep; a sweep is due once a batch of keys is idle, so a map full of idle keys admits
//! new keys after a slow sweep and a clock standing still during sweeps does not cost one
//! full sweep per new key; a full bucket left behind by 32 reconfigurations admits fewer
//! than a fresh one, never more (documented); idle logs and shapers are dropped.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::Duration;

use ringlimit::cell::{LogConfig, WindowConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::keyed::{Buckets, FixedWindows, Keyed, KeyedError};
use ringlimit::{BucketQuota, Rate, WindowQuota};

/// A manual clock that returns its reading and then (once armed) runs a hook.
#[derive(Clone)]
struct AfterClock {
    inner: ManualClock,
    armed: Arc<AtomicBool>,
    hook: Arc<OnceLock<Box<dyn Fn() + Send + Sync>>>,
}
impl Clock for AfterClock {
    fn now_nanos(&self) -> u64 {
        let v = self.inner.now_nanos();
        if self.armed.swap(false, Ordering::SeqCst) {
            (self.hook.get().unwrap())();
        }
        v
    }
}

/// A clock whose reading waits at a barrier pair: `entered` then `go`.
struct GateClock {
    inner: ManualClock,
    entered: Arc<Barrier>,
    go: Arc<Barrier>,
}
impl Clock for GateClock {
    fn now_nanos(&self) -> u64 {
        self.entered.wait();
        self.go.wait();
        self.inner.now_nanos()
    }
}

/// The sweep judges every key at one reading taken at its start (`At`). A rate raise
/// published while a sweep runs (after its reading, before the reconfiguration fixes its
/// own) takes effect at the raise's own reading, not the sweep's stale one, so no key in debt
/// refills at the new rate over a time that had passed before the raise was called. Here:
/// burst 100 at 1/s, key 1 exhausted at 0; 50 ms later the rate goes to 1000/s. The spec
/// (raise at 50 ms) leaves key 1 with 0 permits at 50 ms, with the racing sweep or without.
#[test]
fn a_sweep_racing_a_rate_raise_mints_no_permits() {
    let run = |race: bool| -> usize {
        let clock = AfterClock {
            inner: ManualClock::new(),
            armed: Arc::new(AtomicBool::new(false)),
            hook: Arc::new(OnceLock::new()),
        };
        let inner = clock.inner.clone();
        let quota = BucketQuota::new(Rate::per_second(1).unwrap(), 100).unwrap();
        let limits: &'static Keyed<u64, Buckets, AfterClock> =
            Box::leak(Box::new(Keyed::with_clock(quota, clock.clone())));
        assert!(limits.try_acquire_n(&1, 100).unwrap().is_admitted());
        let fast = Rate::per_second(1000).unwrap();
        if !race {
            inner.advance(Duration::from_millis(50));
            limits.config().set_rate(&inner, fast).unwrap();
        } else {
            let (entered, go) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
            let reconfig: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>> =
                Arc::new(std::sync::Mutex::new(None));
            {
                let (inner, entered, go, reconfig) =
                    (inner.clone(), entered.clone(), go.clone(), reconfig.clone());
                let _ = clock.hook.set(Box::new(move || {
                    // The sweep has read 0; time passes, then the raise is called and
                    // publishes its epoch, and stops in its own reading.
                    inner.advance(Duration::from_millis(50));
                    let gate = GateClock {
                        inner: inner.clone(),
                        entered: entered.clone(),
                        go: go.clone(),
                    };
                    *reconfig.lock().unwrap() = Some(std::thread::spawn(move || {
                        limits.config().set_rate(&gate, fast).unwrap();
                    }));
                    entered.wait();
                }));
            }
            clock.armed.store(true, Ordering::SeqCst);
            assert_eq!(limits.evict_idle(), 0);
            go.wait();
            let handle = reconfig.lock().unwrap().take().unwrap();
            handle.join().unwrap();
        }
        assert_eq!(inner.now_nanos(), 50_000_000);
        (0..200).filter(|_| limits.try_acquire(&1)).count()
    };
    assert_eq!(run(false), 0);
    assert_eq!(run(true), run(false), "racing sweep vs none");
}

/// A sweep floors every later decision at its reading, and a reconfiguration read
/// through `Keyed::clock` is floored too: after a full bucket is dropped at 1 s and the clock
/// is set back to 0.5 s, a rate change sees 1 s, where the dropped bucket, kept, would have
/// been full, as the re-created one is. (Read from the raw clock set back, the change would
/// take effect at 0.5 s, where the kept bucket still owed half a second: the case the
/// rustdoc of `Keyed::clock` warns about.)
#[test]
fn a_reconfiguration_through_the_limiters_clock_is_floored_after_a_sweep() {
    let clock = ManualClock::new();
    let quota = BucketQuota::new(Rate::per_second(1).unwrap(), 2).unwrap();
    let limits: Keyed<u64, Buckets, _> = Keyed::with_clock(quota, clock.clone());
    assert!(limits.try_acquire(&1)); // tat 1 s
    clock.set_nanos(1_000_000_000); // full again
    assert_eq!(limits.evict_idle(), 1);
    clock.set_nanos(500_000_000); // back
    assert_eq!(limits.clock().now_nanos(), 1_000_000_000);
    limits
        .config()
        .set_rate(
            &limits.clock(),
            Rate::every(Duration::from_secs(2)).unwrap(),
        )
        .unwrap();
    assert_eq!((0..5).filter(|_| limits.try_acquire(&1)).count(), 2);
}

/// A map full of idle keys admits new keys after a sweep that took measurable time (a quiet
/// period of 8 times the last sweep's length would refuse them). A slow sweep is modelled by a
/// clock that moves 10 s per reading while the sweep runs (1 M keys take ~100 ms per sweep,
/// so 1-second windows lose most of each second after a boundary). Hourly windows, 80 keys
/// idle from 1:00; the sweep at 0:59 (nothing idle) took 20 s; from 1:00:01 new keys are
/// admitted, since every held key is idle.
#[test]
fn full_of_idle_keys_admits_new_keys_after_a_slow_sweep() {
    #[derive(Clone)]
    struct Slow {
        inner: ManualClock,
        step: Arc<AtomicU64>,
    }
    impl Clock for Slow {
        fn now_nanos(&self) -> u64 {
            let v = self.inner.now_nanos();
            self.inner.advance_nanos(self.step.load(Ordering::SeqCst));
            v
        }
    }
    let clock = Slow {
        inner: ManualClock::new(),
        step: Arc::new(AtomicU64::new(0)),
    };
    let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(
        WindowConfig::new(WindowQuota::per_hour(1).unwrap()).unwrap(),
        clock.clone(),
    )
    .max_keys(80);
    clock.inner.set(Duration::from_secs(59 * 60));
    for k in 0..80 {
        assert!(limits.try_acquire(&k));
    }
    clock.step.store(10_000_000_000, Ordering::SeqCst); // the sweep is slow
    assert!(!limits.try_acquire(&1000)); // sweeps at 0:59, nothing idle
    clock.step.store(0, Ordering::SeqCst);
    let mut refused = 0;
    for i in 0..5u64 {
        clock.inner.set(Duration::from_secs(60 * 60 + 1 + i)); // 1:00:01 .. 1:00:05
        refused += usize::from(
            limits.try_acquire_n(&(2000 + i), 1) == Err(KeyedError::Full { max_keys: 80 }),
        );
    }
    assert_eq!(
        refused, 0,
        "{refused} new keys refused while all 80 held keys were idle"
    );
}

/// A clock that does not move during the sweep (ManualClock, a paused TokioClock, RecentClock
/// within one tick) measures a sweep as 0; with keys going idle one by one, a new key's
/// request still does not run a full sweep each (O(max_keys) per request): a sweep is due
/// once a batch of keys is idle. 4 000 keys going idle 1 µs apart, then 400 new keys 1 µs
/// apart (fewer than max_keys / 8, so churn never triggers): at most 8 sweeps.
#[test]
fn one_sweep_per_idle_batch_when_the_clock_does_not_move_during_sweeps() {
    let clock = ManualClock::new();
    let m = 4_000u64;
    let quota = BucketQuota::new(Rate::per_second(1).unwrap(), 2).unwrap();
    let limits: Keyed<u64, Buckets, _> =
        Keyed::with_clock(quota, clock.clone()).max_keys(m as usize);
    for k in 0..m {
        clock.set_nanos(k * 1_000);
        assert!(limits.try_acquire(&k)); // idle at 1 s + k µs
    }
    // A sweep shows as the map shrinking across one request (it drops keys, and the request
    // adds at most one).
    let mut sweeps = 0;
    for i in 0..(m / 10) {
        clock.set_nanos(1_000_000_000 + i * 1_000);
        let before = limits.len();
        limits.try_acquire(&(m + i));
        sweeps += usize::from(limits.len() < before);
    }
    // A batch is m / 64 = 62 keys: 400 keys going idle make at most 400 / 62 + 1 sweeps.
    assert!(
        sweeps <= 8,
        "{sweeps} full sweeps of {m} keys for {} new keys",
        m / 10
    );
}

/// A full bucket left untouched by 32 or more reconfigurations converts from the emptiest
/// state (a whole burst behind), so a kept full bucket refuses where a dropped one,
/// re-created fresh, admits its burst: whether a key keeps its burst depends on whether a
/// sweep happened to drop it (and the sweep keeps it, as not idle, for a refill time).
#[test]
fn a_full_bucket_left_behind_by_32_reconfigurations_differs_from_a_fresh_one() {
    let run = |evict: bool| {
        let clock = ManualClock::new();
        let rate = Rate::every(Duration::from_secs(3600)).unwrap();
        let quota = BucketQuota::new(rate, 2).unwrap();
        let limits: Keyed<u64, Buckets, _> = Keyed::with_clock(quota, clock.clone());
        assert!(limits.try_acquire(&1));
        clock.advance(Duration::from_secs(3600)); // full again
        if evict {
            assert_eq!(limits.evict_idle(), 1);
        }
        for _ in 0..40 {
            limits.config().set_rate(&clock, rate).unwrap(); // a rules reload, same rate
        }
        (0..5).filter(|_| limits.try_acquire(&1)).count()
    };
    // Documented: the kept bucket converts from the emptiest state; fewer, never more.
    assert_eq!((run(false), run(true)), (0, 2), "kept vs evicted");
}

/// Fresh sliding logs (ExceedsLimit on creation) are idle and dropped; shapers go
/// idle once their schedule drains.
#[test]
fn idle_logs_and_shapers_are_dropped() {
    use ringlimit::keyed::{Shapers, SlidingLogs};
    use ringlimit::ShaperQuota;
    let clock = ManualClock::new();
    let logs: Keyed<u64, SlidingLogs, _> = Keyed::with_config(
        LogConfig::new(WindowQuota::per_second(3).unwrap()).unwrap(),
        clock.clone(),
    )
    .max_keys(2);
    assert!(logs.try_acquire_n(&1, 10).is_err());
    assert_eq!(logs.len(), 1);
    assert_eq!(logs.evict_idle(), 1);
    let q = ShaperQuota::new(Rate::per_second(10).unwrap(), Duration::from_millis(100)).unwrap();
    let shapers: Keyed<u64, Shapers, _> = Keyed::with_clock(q, clock.clone());
    assert!(shapers.try_acquire(&1));
    assert_eq!(shapers.evict_idle(), 0);
    clock.advance(Duration::from_millis(100));
    assert_eq!(shapers.evict_idle(), 1);
}
