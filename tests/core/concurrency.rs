//! `ConcurrencyLimiter` (and its mutex baselines) against `ConcurrencySpec`: random traces
//! must agree exactly; threads hammering it must never hold more than the limit; waits must
//! be served by releases, time out when none come, and survive cancellation.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use ringlimit::baseline::{ParkingLotConcurrencyLimiter, StdLockedConcurrencyLimiter};
use ringlimit::cell::Compact;
use ringlimit::outcome::Permit;
use ringlimit::spec::{ConcurrencySpec, Spec};
use ringlimit::{
    ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota, ConfigError, ExceedsLimit, WaitError,
};

/// Long enough that only a lost wake-up (or a hang) reaches it.
const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
enum Op {
    /// `try_acquire_n(raw % (limit + 2))`: n in `0..=limit + 1`.
    Acquire(u64),
    /// `try_acquire()`.
    AcquireOne,
    /// Drop the held permit at `raw % held.len()`.
    Release(usize),
    /// Forget the held permit at `raw % held.len()`.
    Forget(usize),
    /// `set_limit(l)`; 0 and `MAX_LIMIT + 1` are configuration errors.
    SetLimit(u64),
    /// `available()`, `in_flight()` and `limit()`.
    Probe,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => any::<u64>().prop_map(Op::Acquire),
        3 => Just(Op::AcquireOne),
        6 => any::<usize>().prop_map(Op::Release),
        1 => any::<usize>().prop_map(Op::Forget),
        2 => prop_oneof![1..=8u64, Just(0), Just(ConcurrencyLimiter::MAX_LIMIT + 1)]
            .prop_map(Op::SetLimit),
        2 => Just(Op::Probe),
    ];
    prop::collection::vec(op, 1..150)
}

/// Runs `ops` on `limiter` and on the spec, asserting every outcome matches.
fn check_trace(
    limiter: &impl ConcurrencyLimit,
    limit: u64,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut spec = ConcurrencySpec::new(limit).unwrap();
    let mut held: Vec<Permit<'_>> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Acquire(raw) => {
                let n = raw % (spec.limit() + 2);
                let want = spec.decide(0, n);
                let got = limiter.try_acquire_n(n);
                match (&want, got) {
                    (Ok(d), Ok(Some(permit))) if d.is_admitted() => {
                        prop_assert_eq!(permit.permits(), n);
                        held.push(permit);
                    }
                    (Ok(d), Ok(None)) if !d.is_admitted() => {}
                    (Err(want), Err(got)) => prop_assert_eq!(want, &got),
                    (want, got) => {
                        prop_assert!(false, "step {}: spec {:?}, limiter {:?}", step, want, got)
                    }
                }
            }
            Op::AcquireOne => {
                let want = spec.decide(0, 1).unwrap().is_admitted();
                let got = limiter.try_acquire();
                prop_assert_eq!(got.is_some(), want, "step {}", step);
                held.extend(got);
            }
            Op::Release(raw) | Op::Forget(raw) if !held.is_empty() => {
                let permit = held.swap_remove(raw % held.len());
                if matches!(op, Op::Release(_)) {
                    spec.release(permit.permits());
                    drop(permit);
                } else {
                    permit.forget();
                }
            }
            Op::Release(_) | Op::Forget(_) => {}
            Op::SetLimit(l) => {
                prop_assert_eq!(limiter.set_limit(l), spec.set_limit(0, l), "step {}", step);
            }
            Op::Probe => {
                prop_assert_eq!(limiter.available(), spec.available(0), "step {}", step);
                prop_assert_eq!(limiter.in_flight(), spec.in_flight(), "step {}", step);
                prop_assert_eq!(limiter.limit(), spec.limit(), "step {}", step);
            }
        }
    }
    let out: u64 = held.iter().map(Permit::permits).sum();
    drop(held);
    prop_assert_eq!(limiter.in_flight() + out, spec.in_flight());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every outcome of the lock-free limiter (both layouts) equals the spec's.
    #[test]
    fn random_traces_match_the_spec(limit in 1..=8u64, ops in ops()) {
        check_trace(&ConcurrencyLimiter::new(ConcurrencyQuota::new(limit).unwrap()), limit, &ops)?;
        check_trace(&ConcurrencyLimiter::<Compact>::with_layout(ConcurrencyQuota::new(limit).unwrap()), limit, &ops)?;
    }

    /// The mutex baselines agree with the spec too.
    #[test]
    fn mutex_baselines_match_the_spec(limit in 1..=8u64, ops in ops()) {
        check_trace(&ParkingLotConcurrencyLimiter::new(limit).unwrap(), limit, &ops)?;
        check_trace(&StdLockedConcurrencyLimiter::new(limit).unwrap(), limit, &ops)?;
    }
}

#[test]
fn configuration_errors_are_values() {
    let max = ConcurrencyLimiter::MAX_LIMIT;
    assert_eq!(
        ConcurrencyQuota::new(0).unwrap_err(),
        ConfigError::ZeroLimit
    );
    for limit in [max + 1, u64::MAX] {
        assert_eq!(
            ConcurrencyQuota::new(limit).unwrap_err(),
            ConfigError::LimitTooLarge { limit, max }
        );
    }
    let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(max).unwrap());
    let all = limiter.try_acquire_n(max).unwrap().unwrap();
    assert_eq!(limiter.in_flight(), max);
    assert!(limiter.try_acquire().is_none());
    assert!(limiter.set_limit(u64::MAX).is_err());
    assert_eq!(
        limiter.acquire_n(u64::MAX).unwrap_err(),
        ExceedsLimit {
            requested: u64::MAX,
            limit: max
        }
    );
    drop(all);
    assert_eq!(limiter.available(), max);
}

/// Threads hammering `try_acquire_n` / drop on one limiter, with a separate counter of the
/// permits held (raised while a permit is held): it never exceeds the limit.
fn hammer(limiter: Arc<impl ConcurrencyLimit + 'static>, threads: u64, calls: u64) -> u64 {
    let limit = limiter.limit();
    let held = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let admitted = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (limiter, held, peak, admitted) = (
                limiter.clone(),
                held.clone(),
                peak.clone(),
                admitted.clone(),
            );
            std::thread::spawn(move || {
                for call in 0..calls {
                    let n = (1 + (call + t) % 3 / 2).min(limit); // 1, 1, 2, ...
                    if let Some(permit) = limiter.try_acquire_n(n).unwrap() {
                        let now = held.fetch_add(n, Ordering::SeqCst) + n;
                        peak.fetch_max(now, Ordering::SeqCst);
                        admitted.fetch_add(n, Ordering::Relaxed);
                        std::hint::spin_loop();
                        held.fetch_sub(n, Ordering::SeqCst);
                        drop(permit);
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= limit, "{peak} held at once, limit {limit}");
    assert_eq!(limiter.in_flight(), 0);
    assert!(admitted.load(Ordering::Relaxed) > 0);
    peak
}

#[test]
fn threads_hammering_never_hold_more_than_the_limit() {
    for limit in [1, 2, 3] {
        let peak = hammer(
            Arc::new(ConcurrencyLimiter::new(
                ConcurrencyQuota::new(limit).unwrap(),
            )),
            6,
            100_000,
        );
        assert!(peak >= 1);
        hammer(
            Arc::new(ParkingLotConcurrencyLimiter::new(limit).unwrap()),
            4,
            20_000,
        );
    }
}

/// Threads blocking in `acquire` while others hold permits: every wait is served (a lost
/// wake-up would leave one asleep until `PATIENCE`), and never more than the limit at once.
fn blocked_waiters_are_all_served(
    limiter: Arc<impl ConcurrencyLimit + 'static>,
    threads: u64,
    rounds: u64,
) {
    let limit = limiter.limit();
    let held = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(threads as usize));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (limiter, held, start) = (limiter.clone(), held.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for round in 0..rounds {
                    let n = if limit > 1 && (round + t) % 4 == 0 {
                        2
                    } else {
                        1
                    };
                    let permit = limiter
                        .try_acquire_for(n, PATIENCE)
                        .unwrap_or_else(|e| panic!("thread {t} round {round}: {e}"));
                    let now = held.fetch_add(n, Ordering::SeqCst) + n;
                    assert!(now <= limit, "{now} held, limit {limit}");
                    if round % 8 == 0 {
                        std::thread::yield_now();
                    }
                    held.fetch_sub(n, Ordering::SeqCst);
                    drop(permit);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(limiter.in_flight(), 0);
}

#[test]
fn no_lost_wake_ups_under_many_blocked_threads() {
    for limit in [1, 2, 3] {
        blocked_waiters_are_all_served(
            Arc::new(ConcurrencyLimiter::new(
                ConcurrencyQuota::new(limit).unwrap(),
            )),
            6,
            3_000,
        );
    }
    blocked_waiters_are_all_served(
        Arc::new(StdLockedConcurrencyLimiter::new(2).unwrap()),
        4,
        2_000,
    );
}

/// Many short iterations of "everyone blocks, then one release per waiter".
#[test]
fn every_blocked_waiter_is_woken_by_releases() {
    for iteration in 0..200 {
        let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap()));
        let gate = limiter.try_acquire_owned().unwrap();
        let served = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let (limiter, served) = (limiter.clone(), served.clone());
                std::thread::spawn(move || {
                    let permit = limiter.try_acquire_for(1, PATIENCE).expect("served");
                    served.fetch_add(1, Ordering::SeqCst);
                    drop(permit);
                })
            })
            .collect();
        if iteration % 2 == 0 {
            std::thread::yield_now();
        }
        drop(gate);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(served.load(Ordering::SeqCst), 3);
        assert_eq!(limiter.in_flight(), 0);
    }
}

#[test]
fn try_acquire_for_times_out_after_the_timeout_when_nobody_releases() {
    let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap());
    let _held = limiter.try_acquire().unwrap();
    let timeout = Duration::from_millis(60);
    let start = Instant::now();
    let error = limiter.try_acquire_for(1, timeout).unwrap_err();
    let waited = start.elapsed();
    assert_eq!(
        error,
        WaitError::Timeout {
            retry_after: Duration::ZERO,
            timeout
        }
    );
    assert!(waited >= timeout, "gave up after {waited:?}");
    assert!(
        waited < timeout + Duration::from_secs(2),
        "overslept: {waited:?}"
    );
    // A zero timeout is a try; too many permits is an error at once.
    let start = Instant::now();
    assert!(limiter.try_acquire_for(1, Duration::ZERO).is_err());
    assert!(matches!(
        limiter.try_acquire_for(2, Duration::MAX),
        Err(WaitError::ExceedsLimit(ExceedsLimit {
            requested: 2,
            limit: 1
        }))
    ));
    assert!(start.elapsed() < Duration::from_secs(1));
}

fn returns_promptly_on_release(limiter: Arc<impl ConcurrencyLimit + 'static>) {
    let held = limiter.try_acquire_owned().unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        drop(held);
    });
    let start = Instant::now();
    let permit = limiter.try_acquire_for(1, PATIENCE).unwrap();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(25),
        "took it early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(2), "woken late: {waited:?}");
    drop(permit);
    releaser.join().unwrap();
}

#[test]
fn try_acquire_for_returns_promptly_on_release() {
    returns_promptly_on_release(Arc::new(ConcurrencyLimiter::new(
        ConcurrencyQuota::new(1).unwrap(),
    )));
    returns_promptly_on_release(Arc::new(ParkingLotConcurrencyLimiter::new(1).unwrap()));
}

#[test]
fn a_panicking_holder_releases_its_permits() {
    let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2).unwrap());
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _permit = limiter.try_acquire_n(2).unwrap().unwrap();
        assert_eq!(limiter.in_flight(), 2);
        panic!("the holder fails");
    }));
    assert!(result.is_err());
    assert_eq!(limiter.in_flight(), 0);
    // The same across a thread that panics while holding an owned permit.
    let limiter = Arc::new(limiter);
    let permit = limiter.try_acquire_owned().unwrap();
    let worker = std::thread::spawn(move || {
        let _permit = permit;
        panic!("the worker fails");
    });
    assert!(worker.join().is_err());
    assert_eq!(limiter.in_flight(), 0);
}

#[test]
fn a_forgotten_permit_stays_counted() {
    let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2).unwrap());
    std::mem::forget(limiter.try_acquire().unwrap());
    assert_eq!(limiter.in_flight(), 1);
    limiter.try_acquire().unwrap().forget();
    assert_eq!(limiter.in_flight(), 2);
    assert!(limiter.try_acquire().is_none());
    // Only a raised limit makes room again.
    limiter.set_limit(3).unwrap();
    assert!(limiter.try_acquire().is_some());
}

#[test]
fn raising_the_limit_serves_waiters_and_lowering_it_fails_waits_that_no_longer_fit() {
    let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap()));
    let held = limiter.try_acquire_owned().unwrap();
    let spawn = |n| {
        let limiter = limiter.clone();
        std::thread::spawn(move || limiter.acquire_n(n).map(|p| p.permits()))
    };
    let singles: Vec<_> = (0..2).map(|_| spawn(1)).collect();
    while limiter.in_flight() != 1 {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20));
    limiter.set_limit(3).unwrap();
    for single in singles {
        assert_eq!(single.join().unwrap(), Ok(1));
    }
    // A wait for all 3 while one is out; then the limit drops to 2 under it.
    let triple = spawn(3);
    std::thread::sleep(Duration::from_millis(20));
    limiter.set_limit(2).unwrap();
    assert_eq!(
        triple.join().unwrap(),
        Err(ExceedsLimit {
            requested: 3,
            limit: 2
        })
    );
    // Lowered below what is out: nothing is admitted until enough are released.
    let second = limiter.try_acquire_owned().unwrap();
    limiter.set_limit(1).unwrap();
    drop(held);
    assert!(limiter.try_acquire().is_none());
    drop(second);
    assert!(limiter.try_acquire().is_some());
}

#[cfg(feature = "tokio")]
mod asynchronous {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    /// With time paused, a task stuck on a lost wake-up makes the runtime idle, which
    /// auto-advances the clock straight to the timeout: a hang becomes a failure.
    #[tokio::test(start_paused = true)]
    async fn until_ready_waits_for_a_release() {
        let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap()));
        let held = limiter.try_acquire_owned().unwrap();
        let waiter = {
            let limiter = limiter.clone();
            tokio::spawn(async move {
                let permit = limiter.until_ready().await;
                permit.permits()
            })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(held);
        let got = tokio::time::timeout(PATIENCE, waiter).await;
        assert_eq!(got.expect("woken by the release").unwrap(), 1);
        assert_eq!(limiter.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_future_neither_steals_nor_leaks_a_permit() {
        let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap());
        let held = limiter.try_acquire().unwrap();
        // Dropped while pending: holds nothing afterwards.
        let timed_out = tokio::time::timeout(Duration::from_millis(5), limiter.until_ready()).await;
        assert!(timed_out.is_err());
        assert_eq!(limiter.in_flight(), 1);
        // Two pending waiters; the release notifies the first, which is dropped before it
        // looks: its wake-up passes to the second.
        let mut first = Box::pin(limiter.until_ready());
        let mut second = pin!(limiter.until_ready());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(poll_once(second.as_mut()).is_pending());
        drop(held);
        drop(first);
        assert_eq!(limiter.in_flight(), 0);
        match poll_once(second.as_mut()) {
            Poll::Ready(permit) => {
                assert_eq!(limiter.in_flight(), 1);
                drop(permit);
            }
            Poll::Pending => panic!("the second waiter missed the wake-up"),
        }
        assert_eq!(limiter.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn owned_async_permits_move_into_tasks() {
        let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(2).unwrap()));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let permit = limiter.until_n_ready_owned(1).await.unwrap();
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                drop(permit);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(limiter.in_flight(), 0);
        assert!(limiter.until_n_ready(3).await.is_err());
    }
}
