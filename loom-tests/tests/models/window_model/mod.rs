//! Loom models of the window engine: `SlidingWindow` (B buckets) and `FixedWindow` (B = 1),
//! in the words the including test names (`super::WIDE`: `window.rs` the 64-bit words,
//! `window_wide.rs` the 128-bit ones, built with `WindowBuilder::wide`).
//!
//! Each model is tiny (limits of 1–2, at most three threads) and checks an exact outcome:
//! the admitted total is what the spec allows in every interleaving, never more, never less.

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use ringlimit::builder::{Kind, WindowBuilder};
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::{FixedWindow, RateLimiter, SlidingWindow, WindowQuota};

/// `builder` in the words the including test asks for.
fn widened<K: Kind>(builder: WindowBuilder<K, ManualClock>) -> WindowBuilder<K, ManualClock> {
    if super::WIDE {
        builder.wide()
    } else {
        builder
    }
}

/// Bucket width 1 ns: clock readings are epochs.
fn sliding(limit: u64, buckets: u64, clock: &ManualClock) -> SlidingWindow<ManualClock> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(buckets))
        .unwrap()
        .buckets(buckets)
        .unwrap();
    let limiter = widened(SlidingWindow::builder(quota).clock(clock.clone())).build();
    assert_eq!(limiter.max_limit() > 1 << 20, super::WIDE);
    limiter
}

fn fixed(limit: u64, clock: &ManualClock) -> FixedWindow<ManualClock> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(1)).unwrap();
    let limiter = widened(FixedWindow::builder(quota).clock(clock.clone())).build();
    assert_eq!(limiter.max_limit() > 1 << 20, super::WIDE);
    limiter
}

/// Runs `threads` closures concurrently on one limiter and returns how many permits each took.
fn race<L: RateLimiter + Send + Sync + 'static>(
    limiter: Arc<L>,
    jobs: Vec<Box<dyn Fn(&L) -> u64 + Send + Sync>>,
) -> u64 {
    let handles: Vec<_> = jobs
        .into_iter()
        .map(|job| {
            let limiter = limiter.clone();
            thread::spawn(move || job(&limiter))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

fn one<L: RateLimiter>(l: &L) -> u64 {
    u64::from(l.try_acquire())
}

// (a) Three threads at the limit boundary: exactly `limit` admitted.
#[test]
fn sliding_boundary_three_threads() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(2, 2, &clock));
        let admitted = race(limiter, vec![Box::new(one), Box::new(one), Box::new(one)]);
        assert_eq!(admitted, 2);
    });
}

#[test]
fn fixed_boundary_three_threads() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(2, &clock));
        let admitted = race(limiter, vec![Box::new(one), Box::new(one), Box::new(one)]);
        assert_eq!(admitted, 2);
    });
}

// (b)+(c) Two admissions that both find the head stale race to roll it over: the previous
// bucket still counts (cap 0 with B = 2), so nothing more is admitted.
#[test]
fn sliding_rollover_race_respects_previous_bucket() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = sliding(1, 2, &clock);
        assert!(limiter.try_acquire());
        clock.set_nanos(1);
        let admitted = race(Arc::new(limiter), vec![Box::new(one), Box::new(one)]);
        assert_eq!(admitted, 0);
    });
}

// (b)+(c) A far jump (>= B buckets): racing rollovers install one fresh epoch; exactly
// `limit` admitted.
#[test]
fn sliding_far_rollover_race_admits_exactly_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = sliding(1, 2, &clock);
        assert!(limiter.try_acquire());
        clock.set_nanos(2);
        let admitted = race(Arc::new(limiter), vec![Box::new(one), Box::new(one)]);
        assert_eq!(admitted, 1);
    });
}

#[test]
fn fixed_rollover_race_admits_exactly_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = fixed(1, &clock);
        assert!(limiter.try_acquire());
        clock.set_nanos(1);
        let admitted = race(Arc::new(limiter), vec![Box::new(one), Box::new(one)]);
        assert_eq!(admitted, 1);
    });
}

// (b) Admission in the current epoch racing a rollover to the next one (B = 3, limit 2):
// the stale-epoch caller joins the newer epoch; the window never holds more than 2.
#[test]
fn sliding_admission_racing_rollover_publishes_count() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(2, 3, &clock));
        assert!(limiter.try_acquire());
        let mover = {
            let (limiter, clock) = (limiter.clone(), clock.clone());
            thread::spawn(move || {
                clock.set_nanos(1);
                one(&*limiter)
            })
        };
        let stayer = {
            let limiter = limiter.clone();
            thread::spawn(move || one(&*limiter))
        };
        let admitted = 1 + mover.join().unwrap() + stayer.join().unwrap();
        assert_eq!(admitted, 2);
        // Epochs 0 and 1 are in every window until epoch 3: nothing left.
        assert_eq!(limiter.available(), 0);
    });
}

// (d) `try_acquire_n(2)` racing `try_acquire` at limit 2: all-or-nothing, one of the two
// sequential orders.
#[test]
fn sliding_n_racing_one() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(2, 2, &clock));
        let many = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.try_acquire_n(2).unwrap())
        };
        let single = one(&*limiter);
        let many = many.join().unwrap();
        match many {
            Decision::Admitted { remaining } => assert_eq!((remaining, single), (0, 0)),
            Decision::Refused { available, .. } => assert_eq!((available, single), (1, 1)),
        }
    });
}

#[test]
fn fixed_n_racing_one() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(2, &clock));
        let many = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.try_acquire_n(2).unwrap().is_admitted())
        };
        let single = limiter.try_acquire();
        assert!(many.join().unwrap() != single);
    });
}

// (e) Lowering the limit races a second admission: the admission is decided wholly under
// one limit, and admitted permits are never forgotten.
#[test]
fn sliding_set_limit_racing_admission() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(2, 2, &clock));
        assert!(limiter.try_acquire());
        let setter = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.set_limit(1).unwrap())
        };
        let second = limiter.try_acquire();
        setter.join().unwrap();
        assert_eq!(limiter.limit(), 1);
        assert_eq!(limiter.available(), 0);
        // Raising it back counts both admissions (if the second got in before the change).
        limiter.set_limit(3).unwrap();
        assert_eq!(limiter.available(), if second { 1 } else { 2 });
    });
}

#[test]
fn fixed_set_limit_raise_racing_admissions() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(1, &clock));
        let setter = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.set_limit(2).unwrap())
        };
        let a = one(&*limiter);
        let b = one(&*limiter);
        setter.join().unwrap();
        // The first is always admitted; the second only if the raise came first.
        assert_eq!(a, 1);
        assert_eq!(limiter.available(), 2 - a - b);
    });
}

// (f) The manual clock advances as a thread of its own while two threads admit (B = 2,
// limit 1): epochs 0 and 1 share every window, so exactly one permit in any interleaving.
#[test]
fn sliding_clock_thread_races_admissions() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(1, 2, &clock));
        let ticker = {
            let clock = clock.clone();
            thread::spawn(move || clock.set_nanos(1))
        };
        let admitted = race(limiter, vec![Box::new(one), Box::new(one)]);
        ticker.join().unwrap();
        assert_eq!(admitted, 1);
    });
}

// (f) With a far tick (2 buckets), the two admissions may fall in disjoint windows: one or
// two admitted, and two only if they really were in different windows.
#[test]
fn fixed_clock_thread_races_admissions() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(1, &clock));
        let ticker = {
            let clock = clock.clone();
            thread::spawn(move || clock.set_nanos(1))
        };
        let admitted = race(limiter.clone(), vec![Box::new(one), Box::new(one)]);
        ticker.join().unwrap();
        assert!((1..=2).contains(&admitted));
        // After the tick, window 1 holds at most 1: what is left agrees with what passed.
        assert!(limiter.available() <= 1);
    });
}

// A clock that goes backwards mid-race never re-opens a closed epoch.
#[test]
fn sliding_backwards_clock_joins_newest_epoch() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(1, 2, &clock));
        clock.set_nanos(5);
        assert!(limiter.try_acquire());
        let rewinder = {
            let clock = clock.clone();
            thread::spawn(move || clock.set_nanos(0))
        };
        let admitted = race(limiter, vec![Box::new(one), Box::new(one)]);
        rewinder.join().unwrap();
        assert_eq!(admitted, 0);
    });
}

// (c) Two rollovers in a row race each other and a helper (B = 3, limit 2, one permit
// already taken at epoch 0): epochs 0..=2 share one window, so exactly one more permit.
#[test]
fn sliding_two_rollovers_race() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(2, 3, &clock));
        assert!(limiter.try_acquire());
        clock.set_nanos(1);
        let later = {
            let (limiter, clock) = (limiter.clone(), clock.clone());
            thread::spawn(move || {
                clock.set_nanos(2);
                one(&*limiter)
            })
        };
        let now = one(&*limiter);
        let admitted = now + later.join().unwrap();
        assert_eq!(admitted, 1);
        assert_eq!(limiter.available(), 0);
    });
}
