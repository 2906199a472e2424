//! What a refund may give back:
//!
//! - a bucket refund gives back no time the bucket has already refilled;
//! - a bucket refund after a reconfiguration restores nothing (the grant's mark belongs to
//!   the old time frame, not the converted one);
//! - a limiter ignores a grant it did not make;
//! - a bucket refund and an admission that bring the word back to the value a
//!   reconfiguration loaded mint nothing (the reconfiguration does not convert at its older
//!   reading);
//! - a window-family grant from a wait is not refundable (not even in epoch 0).

use std::time::Duration;

use ringlimit::baseline::ParkingLotLocked;
use ringlimit::clock::ManualClock;
use ringlimit::outcome::{Admission, Grant};
use ringlimit::spec::Attempt;
use ringlimit::spec::{FixedWindowSpec, LeakyBucketSpec, Spec, TokenBucketSpec};
use ringlimit::{
    BucketQuota, FixedWindow, LeakyBucket, Rate, RateLimiter, Reserve, ShaperQuota, SlidingLog,
    SlidingWindow, TokenBucket, WindowQuota,
};

const SECOND: Duration = Duration::from_secs(1);

fn granted<L: RateLimiter + ?Sized>(limiter: &L, n: u64) -> Grant {
    limiter.try_grant(n).unwrap().into_grant().expect("granted")
}

fn spec_granted<S: Spec>(spec: &mut S, now: u64, n: u64) -> Grant {
    match spec.try_grant(now, n).unwrap() {
        Admission::Granted(grant) => grant,
        refused => panic!("spec refused: {refused:?}"),
    }
}

fn bucket(per_second: u64, burst: u64, clock: &ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(BucketQuota::new(Rate::per_second(per_second).unwrap(), burst).unwrap())
        .clock(clock.clone())
        .build()
}

/// Takes single permits until refused; returns how many were admitted.
fn drain<L: RateLimiter>(limiter: &L) -> u64 {
    (0..1_000).take_while(|_| limiter.try_acquire()).count() as u64
}

const S: u64 = 1_000_000_000;

// Refilled time ----------------------------------------------------------------------------

#[test]
fn a_refund_restores_no_time_the_bucket_has_refilled() {
    let clock = ManualClock::new();
    let limiter = bucket(1, 10, &clock);
    let mut spec = TokenBucketSpec::new(Rate::per_second(1).unwrap(), 10).unwrap();
    let grant = granted(&limiter, 5);
    let spec_grant = spec_granted(&mut spec, 0, 5);
    clock.advance(3 * SECOND);
    assert!(limiter.try_acquire());
    assert!(spec.decide(3 * S, 1).unwrap().is_admitted());
    // Exactly as if the grant had never been made: 1 taken at t = 3 from a full bucket.
    assert_eq!(limiter.refund(grant), 2);
    assert_eq!(spec.refund(3 * S, spec_grant.ticket()), 2);
    assert_eq!(spec.available(3 * S), 9);
    // At most b = 10 at one instant: 1 + 9.
    assert_eq!(drain(&limiter), 9);
}

#[test]
fn a_refund_after_the_bucket_refilled_past_the_grant_restores_nothing() {
    let clock = ManualClock::new();
    let limiter = bucket(1, 10, &clock);
    let mut spec = TokenBucketSpec::new(Rate::per_second(1).unwrap(), 10).unwrap();
    let grant = granted(&limiter, 10);
    let spec_grant = spec_granted(&mut spec, 0, 10);
    clock.advance(10 * SECOND);
    assert!(limiter.try_acquire_n(9).unwrap().is_admitted());
    assert!(spec.decide(10 * S, 9).unwrap().is_admitted());
    assert_eq!(limiter.refund(grant), 0);
    assert_eq!(spec.refund(10 * S, spec_grant.ticket()), 0);
    assert_eq!(drain(&limiter), 1);
}

#[test]
fn a_shaper_refund_never_lets_a_refused_caller_through_at_the_same_instant() {
    let clock = ManualClock::new();
    let rate = Rate::per_second(1).unwrap();
    let shaper = LeakyBucket::shaper_builder(ShaperQuota::new(rate, 10 * SECOND).unwrap())
        .clock(clock.clone())
        .build();
    let mut spec = LeakyBucketSpec::shaper(rate, 10 * SECOND).unwrap();
    let grant = granted(&shaper, 5);
    let spec_grant = spec_granted(&mut spec, 0, 5);
    clock.advance(5 * SECOND);
    assert!(shaper.try_acquire());
    assert!(!shaper.try_acquire());
    assert_eq!(shaper.refund(grant), 0);
    assert!(spec.decide(5 * S, 1).unwrap().is_admitted());
    assert_eq!(spec.refund(5 * S, spec_grant.ticket()), 0);
    assert!(!shaper.try_acquire());
}

#[test]
fn a_reservation_cancelled_before_its_time_keeps_golangs_amount() {
    let clock = ManualClock::new();
    let limiter = bucket(1, 2, &clock);
    let _first = limiter.reserve(2).unwrap();
    let second = limiter.reserve(2).unwrap(); // usable at t = 2
    assert_eq!(second.delay(), 2 * SECOND);
    clock.advance(Duration::from_millis(500));
    assert_eq!(second.cancel(), 2);
    assert_eq!(
        limiter.reserve(1).unwrap().delay(),
        Duration::from_millis(500)
    );
}

// Reconfigurations -------------------------------------------------------------------------

#[test]
fn a_refund_after_set_burst_restores_nothing() {
    let clock = ManualClock::new();
    let limiter = bucket(1, 1000, &clock);
    let mut spec = TokenBucketSpec::new(Rate::per_second(1).unwrap(), 1000).unwrap();
    let grant = granted(&limiter, 1000);
    let spec_grant = spec_granted(&mut spec, 0, 1000);
    limiter.set_burst(10).unwrap();
    spec.set_burst(0, 10).unwrap();
    clock.advance(5 * SECOND);
    assert!(limiter.try_acquire_n(5).unwrap().is_admitted());
    assert!(spec.decide(5 * S, 5).unwrap().is_admitted());
    assert_eq!(limiter.refund(grant), 0);
    assert_eq!(spec.refund(5 * S, spec_grant.ticket()), 0);
    assert_eq!(drain(&limiter), 0);
}

#[test]
fn a_refund_after_set_rate_restores_nothing() {
    let clock = ManualClock::new();
    let limiter = bucket(1, 10, &clock);
    let mut spec = TokenBucketSpec::new(Rate::per_second(1).unwrap(), 10).unwrap();
    let grant = granted(&limiter, 10);
    let spec_grant = spec_granted(&mut spec, 0, 10);
    limiter.set_rate(Rate::per_second(10).unwrap()).unwrap();
    spec.set_rate(0, Rate::per_second(10).unwrap()).unwrap();
    clock.advance(Duration::from_millis(500));
    assert!(limiter.try_acquire_n(5).unwrap().is_admitted());
    assert!(spec.decide(S / 2, 5).unwrap().is_admitted());
    assert_eq!(limiter.refund(grant), 0);
    assert_eq!(spec.refund(S / 2, spec_grant.ticket()), 0);
    assert_eq!(drain(&limiter), 0);
}

#[test]
fn a_refund_eight_reconfigurations_later_restores_nothing() {
    // The word's 3-bit generation is back where it was; the configuration epoch is not.
    let clock = ManualClock::new();
    let limiter = bucket(1, 10, &clock);
    let grant = granted(&limiter, 4);
    let reservation = limiter.reserve(2).unwrap();
    for _ in 0..8 {
        limiter.set_burst(10).unwrap();
    }
    assert_eq!(limiter.available(), 4);
    assert_eq!(limiter.refund(grant), 0);
    assert_eq!(reservation.cancel(), 0);
    assert_eq!(limiter.available(), 4);
}

// Another limiter's grants -----------------------------------------------------------------

#[test]
fn a_sliding_window_ignores_another_windows_grant() {
    let clock = ManualClock::new();
    let build = || {
        SlidingWindow::builder(WindowQuota::per(10, SECOND).unwrap())
            .clock(clock.clone())
            .build()
    };
    let (a, b) = (build(), build());
    let foreign = granted(&a, 10);
    assert_eq!(drain(&b), 10);
    assert_eq!(b.refund(foreign), 0);
    assert_eq!(drain(&b), 0);
}

#[test]
fn a_token_bucket_ignores_another_buckets_grant_and_reservation() {
    let clock = ManualClock::new();
    let (a, b) = (bucket(1, 10, &clock), bucket(1, 10, &clock));
    let foreign = granted(&a, 5);
    let reserved = a.reserve(5).unwrap().into_grant();
    assert_eq!(drain(&b), 10);
    assert_eq!(b.refund(foreign), 0);
    assert_eq!(b.refund(reserved), 0);
    assert_eq!(drain(&b), 0);
}

#[test]
fn a_fixed_window_ignores_a_sliding_log_grant() {
    let clock = ManualClock::new();
    let log = SlidingLog::with_clock(WindowQuota::per(10, SECOND).unwrap(), clock.clone()).unwrap();
    let window = FixedWindow::builder(WindowQuota::per(10, SECOND).unwrap())
        .clock(clock.clone())
        .build();
    let foreign = granted(&log, 10);
    assert_eq!(drain(&window), 10);
    assert_eq!(window.refund(foreign), 0);
    assert_eq!(drain(&window), 0);
}

#[test]
fn a_mutex_baseline_ignores_another_baselines_grant() {
    let clock = ManualClock::new();
    let build =
        || ParkingLotLocked::with_clock(FixedWindowSpec::new(10, SECOND).unwrap(), clock.clone());
    let (a, b) = (build(), build());
    let own = granted(&a, 3);
    let foreign = granted(&a, 7);
    assert_eq!(drain(&b), 10);
    assert_eq!(b.refund(foreign), 0);
    assert_eq!(drain(&b), 0);
    // Its own grants still come back.
    assert_eq!(a.refund(own), 3);
}

// Grants from a wait -----------------------------------------------------------------------

fn waited<L: RateLimiter>(limiter: &L, n: u64) -> ringlimit::outcome::Reservation<'_> {
    match limiter.attempt(n, Duration::ZERO).unwrap() {
        Attempt::Granted(reservation) => reservation,
        Attempt::RetryAfter(after) => panic!("retry after {after:?}"),
    }
}

#[test]
fn a_window_grant_from_a_wait_is_not_refundable() {
    let clock = ManualClock::new();
    let window = FixedWindow::builder(WindowQuota::per(4, SECOND).unwrap())
        .clock(clock.clone())
        .build();
    assert_eq!(waited(&window, 4).cancel(), 0);
    assert_eq!(window.refund(waited(&window, 0).into_grant()), 0);
    let sliding = SlidingWindow::builder(WindowQuota::per(4, SECOND).unwrap())
        .clock(clock.clone())
        .build();
    assert_eq!(sliding.refund(waited(&sliding, 4).into_grant()), 0);
    assert_eq!(drain(&sliding), 0);
    let locked = ParkingLotLocked::with_clock(FixedWindowSpec::new(4, SECOND).unwrap(), clock);
    assert_eq!(
        waited(&locked, 4).cancel(),
        0,
        "as the lock-free FixedWindow"
    );
    assert_eq!(drain(&locked), 0);
}

#[test]
fn fixed_window_refund_of_a_waited_grant_restores_nothing() {
    let clock = ManualClock::new();
    let window = FixedWindow::builder(WindowQuota::per(4, SECOND).unwrap())
        .clock(clock.clone())
        .build();
    let grant = waited(&window, 4).into_grant();
    assert_eq!(window.refund(grant), 0);
    assert_eq!(drain(&window), 0);
}

/// A clock whose next reading, once armed, runs a hook (on another thread, waited for at
/// most half a second) between the caller's load of the state and its use of the reading.
struct HookedClock {
    time: ManualClock,
    hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl ringlimit::clock::Clock for HookedClock {
    fn now_nanos(&self) -> u64 {
        let now = self.time.now_nanos();
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            let (done, finished) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                hook();
                let _ = done.send(());
            });
            let _ = finished.recv_timeout(Duration::from_millis(500));
        }
        now
    }
}

#[test]
fn a_refund_and_an_admission_inside_set_rate_mint_nothing() {
    use ringlimit::clock::Clock;
    use std::sync::{Arc, Mutex};
    let time = ManualClock::new();
    let clock = Arc::new(HookedClock {
        time: time.clone(),
        hook: Mutex::new(None),
    });
    // One permit per 10 ns, burst 2; both taken at 0 (the state's time is 20).
    let bucket = Arc::new(
        TokenBucket::builder(
            BucketQuota::new(Rate::new(1, Duration::from_nanos(10)).unwrap(), 2).unwrap(),
        )
        .clock(Arc::clone(&clock))
        .build(),
    );
    let grant = granted(&*bucket, 2);
    let seen = Arc::new(Mutex::new(None));
    // `set_rate` loads the word (20), then reads the clock (0): meanwhile the whole grant
    // is refunded at 0 (time 0) and a permit taken at 10 (time 20 again).
    let (b, s, t) = (Arc::clone(&bucket), Arc::clone(&seen), time.clone());
    *clock.hook.lock().unwrap() = Some(Box::new(move || {
        let restored = b.refund(grant);
        t.set_nanos(10);
        let admitted = b.try_acquire();
        *s.lock().unwrap() = Some((restored, admitted));
    }));
    bucket
        .set_rate(Rate::new(1, Duration::from_nanos(5)).unwrap())
        .unwrap();
    // With the fix the hook's refund waits for the reconfiguration's lock: wait for it.
    let (restored, admitted) = loop {
        if let Some(seen) = *seen.lock().unwrap() {
            break seen;
        }
        std::thread::yield_now();
    };
    assert!(admitted);
    assert_eq!(time.now_nanos(), 10);
    // Every sequential order: either set_rate at 0 first (the refund restores nothing, the
    // admission at 10 leaves 1 of 2 at the new rate), or refund, admission, set_rate at 10
    // (1 left). Before the fix the conversion at reading 0 of the admitted state left 2.
    let mut spec =
        TokenBucketSpec::new(Rate::new(1, Duration::from_nanos(10)).unwrap(), 2).unwrap();
    let ticket = *spec_granted(&mut spec, 0, 2).ticket();
    if restored == 0 {
        spec.set_rate(0, Rate::new(1, Duration::from_nanos(5)).unwrap())
            .unwrap();
        assert_eq!(spec.refund(0, &ticket), 0);
        assert!(spec.decide(10, 1).unwrap().is_admitted());
    } else {
        assert_eq!(spec.refund(0, &ticket), restored);
        assert!(spec.decide(10, 1).unwrap().is_admitted());
        spec.set_rate(10, Rate::new(1, Duration::from_nanos(5)).unwrap())
            .unwrap();
    }
    assert_eq!(bucket.available(), spec.available(10));
    assert_eq!(bucket.available(), 1);
}
