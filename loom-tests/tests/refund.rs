//! Loom models of refunds: a refund racing admissions, rollover and reconfiguration never
//! lets the admitted total, net of refunds, exceed the limit.
//!
//! A double refund is impossible by type (`Grant` is neither `Copy` nor `Clone` and
//! `refund` takes it by value); the closest race, two grants of one epoch refunded
//! concurrently with an admission, is modelled instead.
//!
//! Run: `bash loom-tests/run --test refund`.
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use ringlimit::clock::ManualClock;
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, FixedWindow, Grant, Rate, RateLimiter, SlidingWindow,
    TokenBucket, WindowQuota,
};

/// Bucket width 1 ns: clock readings are epochs.
fn sliding(limit: u64, buckets: u64, clock: &ManualClock) -> SlidingWindow<ManualClock> {
    SlidingWindow::builder(
        WindowQuota::per(limit, Duration::from_nanos(buckets))
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .build()
}

fn fixed(limit: u64, clock: &ManualClock) -> FixedWindow<ManualClock> {
    FixedWindow::builder(WindowQuota::per(limit, Duration::from_nanos(1)).unwrap())
        .clock(clock.clone())
        .build()
}

fn grant<L: RateLimiter>(limiter: &L, n: u64) -> Grant {
    limiter.try_grant(n).unwrap().into_grant().expect("granted")
}

/// Takes single permits until refused; returns how many.
fn drain<L: RateLimiter>(limiter: &L) -> u64 {
    let mut taken = 0;
    while limiter.try_acquire() {
        taken += 1;
    }
    taken
}

// (1) A refund of the full epoch races two admissions at the limit: the refund always
// restores both permits (its epoch stays current), and the net admitted count is exact:
// what the threads took plus what is left afterwards is the limit.
#[test]
fn window_refund_races_two_admissions_at_the_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(2, 2, &clock));
        let full = grant(&*limiter, 2);
        let refunder = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(full))
        };
        let taker = {
            let limiter = limiter.clone();
            thread::spawn(move || u64::from(limiter.try_acquire()))
        };
        let mine = u64::from(limiter.try_acquire());
        let restored = refunder.join().unwrap();
        let taken = taker.join().unwrap() + mine;
        assert_eq!(restored, 2);
        let left = drain(&*limiter);
        assert_eq!(
            2 - restored + taken + left,
            2,
            "net admitted must be the limit"
        );
    });
}

// (2) A grant of epoch 0 is refunded while another thread moves the clock into epoch 1 and
// admits there (rolling the window over). With B = 2 the grant's bucket still counts in
// epoch 1: if the refund is dropped (its epoch passed), nothing more may be admitted; if it
// landed first, one may. Never both the grant's permit and a new one.
#[test]
fn window_refund_of_a_passing_epoch_races_rollover() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(1, 2, &clock));
        let old = grant(&*limiter, 1);
        let refunder = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(old))
        };
        let roller = {
            let limiter = limiter.clone();
            let clock = clock.clone();
            thread::spawn(move || {
                clock.set_nanos(1);
                u64::from(limiter.try_acquire())
            })
        };
        let restored = refunder.join().unwrap();
        let taken = roller.join().unwrap();
        assert!(restored <= 1);
        assert!(
            1 - restored + taken <= 1,
            "over-admitted: refund {restored}, took {taken}"
        );
        let left = drain(&*limiter);
        assert!(1 - restored + taken + left <= 1);
    });
}

// (2b) The same on a fixed window, where a refund from a passed window is simply dropped
// and the new window is whole: exact in every interleaving.
#[test]
fn fixed_refund_from_a_passed_window_is_dropped() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(1, &clock));
        let old = grant(&*limiter, 1);
        clock.set_nanos(1);
        let refunder = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(old))
        };
        let taken = u64::from(limiter.try_acquire());
        let restored = refunder.join().unwrap();
        assert_eq!(restored, 0, "a refund into a passed window");
        assert_eq!(taken + drain(&*limiter), 1);
    });
}

// (3) Two grants of one epoch are refunded concurrently with an admission: both restore
// their permit, and the accounting is exact.
#[test]
fn window_two_grants_refunded_concurrently_with_an_admission() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(fixed(2, &clock));
        let first = grant(&*limiter, 1);
        let second = grant(&*limiter, 1);
        let a = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(first))
        };
        let b = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(second))
        };
        let taken = u64::from(limiter.try_acquire());
        let restored = a.join().unwrap() + b.join().unwrap();
        assert_eq!(restored, 2);
        assert_eq!(2 - restored + taken + drain(&*limiter), 2);
    });
}

// (4) A refund races `set_limit` lowering the limit below what the window admitted, and an
// admission. Whatever the order, afterwards the window holds exactly the new limit (or the
// admissions made under the old limit, if more): a refund never gives back room the lower
// limit refuses.
#[test]
fn window_refund_races_set_limit_lowering() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(sliding(2, 2, &clock));
        let full = grant(&*limiter, 2);
        let refunder = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(full))
        };
        let lower = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.set_limit(1).unwrap())
        };
        let taken = u64::from(limiter.try_acquire());
        let restored = refunder.join().unwrap();
        lower.join().unwrap();
        assert_eq!(restored, 2);
        let left = drain(&*limiter);
        // Net of the refund: `taken` (0 or 1) was decided under either limit; afterwards
        // the window is full at the new limit of 1.
        assert_eq!(taken + left, 1, "took {taken}, then {left} more");
    });
}

/// One permit every 10 ns.
fn token(burst: u64, clock: &ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(
        BucketQuota::new(Rate::new(1, Duration::from_nanos(10)).unwrap(), burst).unwrap(),
    )
    .clock(clock.clone())
    .build()
}

// (5) Token bucket: a refund of an emptying grant races an admission; with the clock
// standing still the bucket never holds more than its burst, net of the refund.
#[test]
fn token_refund_races_an_admission() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(token(2, &clock));
        let all = grant(&*limiter, 2);
        let refunder = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(all))
        };
        let taken = u64::from(limiter.try_acquire());
        let restored = refunder.join().unwrap();
        assert_eq!(restored, 2, "nothing is scheduled behind it");
        assert_eq!(2 - restored + taken + drain(&*limiter), 2);
    });
}

// (5b) The same racing `set_burst` lowering the burst: never more than the old burst net,
// and never more than the new burst available afterwards.
#[test]
fn token_refund_races_set_burst() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(token(2, &clock));
        let all = grant(&*limiter, 2);
        let refunder = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(all))
        };
        let lower = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.set_burst(1).unwrap())
        };
        let taken = u64::from(limiter.try_acquire());
        let restored = refunder.join().unwrap();
        lower.join().unwrap();
        assert!(restored <= 2);
        let left = drain(&*limiter);
        assert!(2 - restored + taken <= 2);
        assert!(left <= 1, "more than the new burst available: {left}");
        assert!(taken + left <= 2);
    });
}

// (6) Approximate window: a refund of window 0's grant races a rollover into window 1 and an
// admission there. At the start of window 1 the previous window counts in full, so the new
// admission goes through iff the refund landed in window 0 first.
#[test]
fn approx_refund_races_rollover() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(ApproxSlidingWindow::with_clock(
            WindowQuota::per(1, Duration::from_nanos(2)).unwrap(),
            clock.clone(),
        ));
        let old = grant(&*limiter, 1);
        let refunder = {
            let limiter = limiter.clone();
            thread::spawn(move || limiter.refund(old))
        };
        let roller = {
            let limiter = limiter.clone();
            let clock = clock.clone();
            thread::spawn(move || {
                clock.set_nanos(2);
                u64::from(limiter.try_acquire())
            })
        };
        let restored = refunder.join().unwrap();
        let taken = roller.join().unwrap();
        assert!(
            1 - restored + taken <= 1,
            "over-admitted: refund {restored}, took {taken}"
        );
        assert_eq!(taken, restored, "exact: admitted iff the refund came first");
    });
}
