//! Refunds: per type, a refund restores exactly what the spec says; traces of grants,
//! refunds, admissions, clock moves and `set_limit` agree with the spec; and under threads
//! no window ever admits more than its limit net of refunds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use ringlimit::baseline::ParkingLotLocked;
use ringlimit::clock::ManualClock;
use ringlimit::outcome::{Admission, Grant};
use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, SlidingWindowSpec, Spec, TokenBucketSpec,
};
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, FixedWindow, LeakyBucket, Rate, RateLimiter, Reserve,
    ShaperQuota, SlidingLog, SlidingWindow, TokenBucket, WarmUp, WarmUpQuota, WindowQuota,
};

const SECOND: Duration = Duration::from_secs(1);

fn granted<L: RateLimiter + ?Sized>(limiter: &L, n: u64) -> Grant {
    limiter.try_grant(n).unwrap().into_grant().expect("granted")
}

fn sliding(limit: u64, buckets: u64, clock: &ManualClock) -> SlidingWindow<ManualClock> {
    SlidingWindow::builder(
        WindowQuota::per(limit, SECOND)
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .build()
}

#[test]
fn sliding_window_refunds_in_the_head_bucket_only() {
    let clock = ManualClock::new();
    let limiter = sliding(4, 2, &clock);
    let grant = granted(&limiter, 3);
    assert_eq!(grant.remaining(), 1);
    assert_eq!(limiter.refund(grant), 3);
    assert_eq!(limiter.available(), 4);
    // A grant of a bucket that has become the past is dropped: the bucket is frozen.
    let old = granted(&limiter, 3);
    clock.advance(Duration::from_millis(500));
    assert_eq!(limiter.refund(old), 0);
    assert_eq!(limiter.available(), 1);
    // Once the bucket leaves the window, its permits are back anyway.
    clock.advance(Duration::from_millis(500));
    assert_eq!(limiter.available(), 4);
}

#[test]
fn a_refund_after_lowering_the_limit_never_exceeds_the_new_limit() {
    for buckets in [1, 2, 4] {
        let clock = ManualClock::new();
        let limiter = sliding(4, buckets, &clock);
        let mut spec = SlidingWindowSpec::new(4, SECOND, buckets).unwrap();
        let grant = granted(&limiter, 4);
        let Admission::Granted(spec_grant) = spec.try_grant(0, 4).unwrap() else {
            panic!("spec refused")
        };
        limiter.set_limit(2).unwrap();
        spec.set_limit(0, 2).unwrap();
        assert_eq!(limiter.refund(grant), 4);
        assert_eq!(spec.refund(0, spec_grant.ticket()), 4);
        assert_eq!(limiter.available(), 2, "B = {buckets}");
        assert_eq!(spec.available(0), 2);
        // A partial refund of a full head keeps the window at the new limit.
        let a = granted(&limiter, 2);
        limiter.set_limit(1).unwrap();
        assert_eq!(limiter.available(), 0);
        assert_eq!(limiter.refund(a), 2);
        assert_eq!(limiter.available(), 1, "B = {buckets}");
    }
}

#[test]
fn fixed_window_refunds_until_its_window_ends() {
    let clock = ManualClock::new();
    let limiter = FixedWindow::builder(WindowQuota::per(2, SECOND).unwrap())
        .clock(clock.clone())
        .build();
    let grant = granted(&limiter, 2);
    clock.advance(Duration::from_millis(999));
    assert_eq!(limiter.refund(grant), 2);
    let late = granted(&limiter, 1);
    clock.advance(Duration::from_millis(1));
    assert_eq!(limiter.refund(late), 0);
    assert_eq!(limiter.available(), 2);
}

#[test]
fn sharded_window_refunds_to_the_shared_window() {
    let clock = ManualClock::new();
    let limiter = SlidingWindow::builder(WindowQuota::per(8, SECOND).unwrap().buckets(2).unwrap())
        .clock(clock.clone())
        .sharded()
        .build();
    let grant = granted(&limiter, 8);
    assert_eq!(limiter.available(), 0);
    assert_eq!(limiter.refund(grant), 8);
    assert_eq!(limiter.available(), 8);
    let old = granted(&limiter, 1);
    clock.advance(SECOND);
    assert_eq!(limiter.refund(old), 0);
}

#[test]
fn approx_window_refunds_the_current_windows_count() {
    let clock = ManualClock::new();
    let limiter =
        ApproxSlidingWindow::with_clock(WindowQuota::per(4, SECOND).unwrap(), clock.clone())
            .unwrap();
    let grant = granted(&limiter, 4);
    assert_eq!(limiter.refund(grant), 4);
    assert_eq!(limiter.available(), 4);
    let old = granted(&limiter, 4);
    clock.advance(SECOND);
    assert_eq!(
        limiter.refund(old),
        0,
        "its count is now the frozen previous window"
    );
    assert_eq!(limiter.available(), 0);
}

#[test]
fn token_bucket_refunds_what_nothing_is_scheduled_behind() {
    let clock = ManualClock::new();
    let limiter = TokenBucket::builder(BucketQuota::new(Rate::per_second(10).unwrap(), 4).unwrap())
        .clock(clock.clone())
        .build();
    let first = granted(&limiter, 2);
    let second = granted(&limiter, 1);
    // `first` has one permit scheduled behind it: only one of its two comes back.
    assert_eq!(limiter.refund(first), 1);
    assert_eq!(limiter.available(), 2);
    // `second` was scheduled behind `first`'s first permit, which `first` kept: all of it.
    assert_eq!(limiter.refund(second), 1);
    assert_eq!(limiter.available(), 3);
    // A reservation's cancel is the same refund.
    let reserved = limiter.reserve(2).unwrap();
    assert_eq!(reserved.cancel(), 2);
    assert_eq!(limiter.available(), 3);
    // Once the bucket has refilled past it, a refund changes nothing.
    let grant = granted(&limiter, 1);
    clock.advance(SECOND);
    limiter.refund(grant);
    assert_eq!(limiter.available(), 4);
}

#[test]
fn leaky_buckets_refund_like_the_token_bucket() {
    let clock = ManualClock::new();
    let meter =
        LeakyBucket::meter_builder(BucketQuota::new(Rate::per_second(10).unwrap(), 3).unwrap())
            .clock(clock.clone())
            .build();
    let grant = granted(&meter, 3);
    assert_eq!(meter.refund(grant), 3);
    assert_eq!(meter.available(), 3);
    let shaper = LeakyBucket::shaper_builder(
        ShaperQuota::new(Rate::per_second(10).unwrap(), SECOND).unwrap(),
    )
    .clock(clock.clone())
    .build();
    let first = granted(&shaper, 1);
    assert_eq!(shaper.reserve(1).unwrap().cancel(), 1);
    assert_eq!(shaper.refund(first), 1);
    assert_eq!(
        shaper.try_acquire_n(1).unwrap().retry_after(),
        Duration::ZERO
    );
}

#[test]
fn warm_up_refunds_only_an_untouched_grant() {
    let clock = ManualClock::new();
    let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(5).unwrap(), SECOND).unwrap())
        .clock(clock.clone())
        .build();
    let stored = limiter.stored_permits();
    let grant = granted(&limiter, 1);
    assert_eq!(limiter.refund(grant), 1);
    assert_eq!(limiter.stored_permits(), stored);
    let first = granted(&limiter, 1);
    clock.advance(SECOND);
    let second = granted(&limiter, 1);
    assert_eq!(limiter.refund(first), 0, "something came after it");
    assert_eq!(limiter.refund(second), 1);
}

#[test]
fn sliding_log_drops_refunds() {
    let clock = ManualClock::new();
    let limiter =
        SlidingLog::with_clock(WindowQuota::per(1, SECOND).unwrap(), clock.clone()).unwrap();
    let grant = granted(&limiter, 1);
    assert_eq!(limiter.refund(grant), 0);
    assert_eq!(limiter.available(), 0);
}

#[test]
fn mutex_baselines_refund_as_their_spec() {
    let clock = ManualClock::new();
    let locked =
        ParkingLotLocked::with_clock(FixedWindowSpec::new(2, SECOND).unwrap(), clock.clone());
    let grant = granted(&locked, 2);
    assert_eq!(locked.refund(grant), 2);
    let late = granted(&locked, 1);
    clock.advance(SECOND);
    assert_eq!(locked.refund(late), 0);
    let bucket = ParkingLotLocked::with_clock(
        TokenBucketSpec::new(Rate::per_second(10).unwrap(), 2).unwrap(),
        clock.clone(),
    );
    let grant = granted(&bucket, 2);
    assert_eq!(bucket.refund(grant), 2);
    assert_eq!(bucket.available(), 2);
}

/// One step of a trace.
#[derive(Debug, Clone)]
enum Op {
    Grant(u64),
    Refund(usize),
    Acquire(u64),
    Advance(u64),
    SetLimit(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1..=3u64).prop_map(Op::Grant),
        3 => (0..8usize).prop_map(Op::Refund),
        2 => (1..=3u64).prop_map(Op::Acquire),
        2 => (0..600u64).prop_map(Op::Advance),
        1 => (1..=5u64).prop_map(Op::SetLimit),
    ]
}

/// What a call returned, comparable across the lock-free limiter and the mutex baseline.
fn outcome(admission: &Admission) -> (bool, u64, Duration) {
    (
        admission.is_granted(),
        admission.remaining(),
        admission.retry_after(),
    )
}

/// Runs `ops` on a lock-free limiter and on its spec under a mutex, both on one manual
/// clock (ms steps), and checks every result equal.
fn agree<L: RateLimiter, B: RateLimiter>(lock_free: L, locked: B, clock: &ManualClock, ops: &[Op]) {
    let mut grants: Vec<(Grant, Grant)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Grant(n) => {
                let (a, b) = (lock_free.try_grant(n), locked.try_grant(n));
                match (a, b) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(outcome(&a), outcome(&b), "step {step}: {op:?}");
                        if let (Some(a), Some(b)) = (a.into_grant(), b.into_grant()) {
                            grants.push((a, b));
                        }
                    }
                    (a, b) => assert_eq!(a.is_err(), b.is_err(), "step {step}: {op:?}"),
                }
            }
            Op::Refund(i) if i < grants.len() => {
                let (a, b) = grants.swap_remove(i);
                assert_eq!(lock_free.refund(a), locked.refund(b), "step {step}: {op:?}");
            }
            Op::Refund(_) => {}
            Op::Acquire(n) => {
                assert_eq!(
                    lock_free.try_acquire_n(n).ok(),
                    locked.try_acquire_n(n).ok(),
                    "step {step}"
                )
            }
            Op::Advance(ms) => clock.advance(Duration::from_millis(ms)),
            Op::SetLimit(limit) => {
                assert_eq!(
                    lock_free.set_limit(limit).is_ok(),
                    locked.set_limit(limit).is_ok()
                )
            }
        }
        assert_eq!(
            lock_free.available(),
            locked.available(),
            "step {step}: {op:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sliding_window_traces_match_the_spec(ops in proptest::collection::vec(op(), 1..60), buckets in 1..=4u64) {
        let clock = ManualClock::new();
        let spec = SlidingWindowSpec::new(4, SECOND, buckets).unwrap();
        agree(sliding(4, buckets, &clock), ParkingLotLocked::with_clock(spec, clock.clone()), &clock, &ops);
    }

    #[test]
    fn fixed_window_traces_match_the_spec(ops in proptest::collection::vec(op(), 1..60)) {
        let clock = ManualClock::new();
        let limiter = FixedWindow::builder(WindowQuota::per(4, SECOND).unwrap()).clock(clock.clone()).build();
        let spec = FixedWindowSpec::new(4, SECOND).unwrap();
        agree(limiter, ParkingLotLocked::with_clock(spec, clock.clone()), &clock, &ops);
    }

    #[test]
    fn approx_window_traces_match_the_spec(ops in proptest::collection::vec(op(), 1..60)) {
        let clock = ManualClock::new();
        let limiter = ApproxSlidingWindow::with_clock(WindowQuota::per(4, SECOND).unwrap(), clock.clone()).unwrap();
        let spec = ApproxSlidingWindowSpec::new(4, SECOND).unwrap();
        agree(limiter, ParkingLotLocked::with_clock(spec, clock.clone()), &clock, &ops);
    }

    #[test]
    fn token_bucket_traces_match_the_spec(ops in proptest::collection::vec(op(), 1..60)) {
        let clock = ManualClock::new();
        let rate = Rate::per_second(4).unwrap();
        let limiter = TokenBucket::builder(BucketQuota::new(rate, 4).unwrap()).clock(clock.clone()).build();
        let spec = TokenBucketSpec::new(rate, 4).unwrap();
        agree(limiter, ParkingLotLocked::with_clock(spec, clock.clone()), &clock, &ops);
    }
}

/// Four threads grant and refund at random on a window whose manual clock another thread
/// moves; per window, admissions net of refunds never exceed the limit.
#[test]
fn threads_never_exceed_the_limit_net_of_refunds() {
    const LIMIT: u64 = 8;
    let clock = ManualClock::new();
    let limiter = Arc::new(
        FixedWindow::builder(WindowQuota::per(LIMIT, Duration::from_millis(1)).unwrap())
            .clock(clock.clone())
            .build(),
    );
    let net: Arc<Mutex<HashMap<u128, i64>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    // Calls made by all workers: the clock moves on only after some at its last reading (on
    // a loaded 2-core machine the workers could otherwise all run at one reading).
    let calls = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..4u64)
        .map(|seed| {
            let (limiter, net, stop) = (limiter.clone(), net.clone(), stop.clone());
            let calls = calls.clone();
            std::thread::spawn(move || {
                let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut held: Vec<Grant> = Vec::new();
                let mut mine: HashMap<u128, i64> = HashMap::new();
                while !stop.load(Ordering::Relaxed) {
                    calls.fetch_add(1, Ordering::Relaxed);
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    if state % 3 == 0 && !held.is_empty() {
                        let grant = held.swap_remove((state >> 8) as usize % held.len());
                        let mark = grant.ticket().mark();
                        let restored = limiter.refund(grant);
                        *mine.entry(mark).or_default() -= restored as i64;
                    } else if let Ok(Admission::Granted(grant)) = limiter.try_grant(1 + state % 3) {
                        *mine.entry(grant.ticket().mark()).or_default() += grant.permits() as i64;
                        held.push(grant);
                    }
                }
                let mut net = net.lock().unwrap();
                for (epoch, n) in mine {
                    *net.entry(epoch).or_default() += n;
                }
            })
        })
        .collect();
    for _ in 0..2_000 {
        clock.advance(Duration::from_micros(50));
        // A few calls at each reading, whoever was scheduled before.
        let seen = calls.load(Ordering::Relaxed);
        while calls.load(Ordering::Relaxed) < seen + 4 {
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    let net = net.lock().unwrap();
    assert!(net.len() > 1, "the clock moved across windows");
    for (epoch, n) in net.iter() {
        assert!((0..=LIMIT as i64).contains(n), "window {epoch}: {n} net");
    }
}
