//! Policies (`ringlimit::policy`): all-or-nothing across dimensions under threads, errors
//! that refund, and the rate at which a concurrent check is refused because a failing one
//! briefly held a permit.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::WindowConfig;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::keyed::{FixedWindows, Keyed, KeyedError};
use ringlimit::policy::{Policy, PolicyDecision};
use ringlimit::{ExceedsLimit, FixedWindow, RateLimiter, WindowQuota};

fn quota(limit: u64) -> WindowQuota {
    WindowQuota::per(limit, Duration::from_secs(60)).unwrap()
}

struct Request {
    user: u64,
}

/// A per-user limit, a global one, and the policy checking them in that order.
type Setup = (
    Arc<Keyed<u64, FixedWindows, ManualClock>>,
    Arc<FixedWindow<ManualClock>>,
    Policy<Request>,
);

fn setup(per_user: u64, global: u64) -> Setup {
    let clock = ManualClock::new();
    let users = Arc::new(Keyed::with_config(
        WindowConfig::new(quota(per_user)).unwrap(),
        clock.clone(),
    ));
    let global = Arc::new(FixedWindow::builder(quota(global)).clock(clock).build());
    let policy = Policy::builder()
        .per_key("user", users.clone(), |r: &Request| Some(r.user))
        .shared("global", global.clone())
        .build();
    (users, global, policy)
}

#[test]
fn a_refusal_or_an_error_refunds_the_earlier_dimensions() {
    let (users, global, policy) = setup(2, 1);
    assert_eq!(
        policy.check(&Request { user: 1 }).unwrap(),
        PolicyDecision::Admitted {
            remaining: 0,
            tightest: "global",
            // A shared limiter of any kind: the policy does not know when it is whole.
            reset_after: None,
        }
    );
    let PolicyDecision::Refused { dimension, .. } = policy.check(&Request { user: 2 }).unwrap()
    else {
        panic!("global is spent");
    };
    assert_eq!(dimension, "global");
    assert_eq!((users.available(&1), users.available(&2)), (1, 2));
    // 2 permits: the user dimension grants them, the global one (limit 1) errs; the user's
    // grant is refunded and the error names the dimension.
    let error = policy.check_n(&Request { user: 3 }, 2).unwrap_err();
    assert_eq!(&*error.dimension, "global");
    assert_eq!(
        error.error,
        KeyedError::ExceedsLimit(ExceedsLimit {
            requested: 2,
            limit: 1
        })
    );
    assert_eq!(users.available(&3), 2);
    assert_eq!(global.available(), 0);
}

/// Threads check 8 users (5 each) against a global limit of 20 on a frozen clock: at most
/// 20 admitted in all and 5 per user, and afterwards every dimension's count is exactly what
/// was admitted (every refusal's grants came back).
#[test]
fn threads_never_exceed_a_dimension_and_leave_no_permit_behind() {
    for round in 0..10u64 {
        let (users, global, policy) = setup(5, 20);
        let policy = Arc::new(policy);
        let admitted: Arc<Vec<AtomicU64>> = Arc::new((0..8).map(|_| AtomicU64::new(0)).collect());
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let (policy, admitted) = (policy.clone(), admitted.clone());
                std::thread::spawn(move || {
                    for i in 0..200u64 {
                        let user = (i * 7 + t + round) % 8;
                        if policy.check(&Request { user }).unwrap().is_admitted() {
                            admitted[user as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
        let total: u64 = admitted.iter().map(|a| a.load(Ordering::Relaxed)).sum();
        assert_eq!(
            total, 20,
            "round {round}: the global limit is reached exactly"
        );
        assert_eq!(global.available(), 0);
        for (user, count) in admitted.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            assert!(count <= 5, "round {round}: user {user} admitted {count}");
            assert_eq!(users.available(&(user as u64)), 5 - count, "user {user}");
        }
    }
}

/// The rate at which a check is refused only because a failing check held a permit for the
/// moment between its grant and its refund. One thread checks user 1 against a spent global
/// limit, forever refused by it; another takes user 1's only permit directly and gives it
/// back: each of its refusals is one such. Printed for both orders of the dimensions: user
/// first (the worst case: the failing check takes and refunds user 1's permit every time,
/// holding it for most of a tight loop), and global first (the order the builder advises:
/// the dimension that refuses first takes nothing, so no refusal is refund-induced).
#[test]
fn refund_induced_refusals_are_measured() {
    for global_first in [false, true] {
        let clock = ManualClock::new();
        let users = Arc::new(Keyed::<u64, FixedWindows, _>::with_config(
            WindowConfig::new(quota(1)).unwrap(),
            clock.clone(),
        ));
        let global = Arc::new(FixedWindow::builder(quota(1)).clock(clock).build());
        assert!(global.try_acquire());
        let builder = Policy::builder();
        let policy = if global_first {
            builder.shared("global", global.clone()).per_key(
                "user",
                users.clone(),
                |r: &Request| Some(r.user),
            )
        } else {
            builder
                .per_key("user", users.clone(), |r: &Request| Some(r.user))
                .shared("global", global.clone())
        }
        .build();
        let stop = Arc::new(AtomicBool::new(false));
        let failing = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    assert!(!policy.check(&Request { user: 1 }).unwrap().is_admitted());
                    checks += 1;
                }
                checks
            })
        };
        let (mut refused, attempts) = (0u64, 200_000u64);
        for _ in 0..attempts {
            match users.try_grant(&1, 1).unwrap().into_grant() {
                Some(grant) => assert_eq!(users.refund(&1, grant), 1),
                None => refused += 1,
            }
        }
        stop.store(true, Ordering::Relaxed);
        let checks = failing.join().unwrap();
        eprintln!(
            "{}: refund-induced refusals: {refused} of {attempts} direct attempts ({:.2}%) against {checks} failing policy checks",
            if global_first { "global first" } else { "user first" },
            refused as f64 * 100.0 / attempts as f64
        );
        assert_eq!(users.available(&1), 1, "no permit left behind");
        if global_first {
            assert_eq!(refused, 0, "the refusing dimension first takes nothing");
        } else {
            assert!(
                refused < attempts,
                "the direct taker was admitted sometimes"
            );
        }
    }
}

/// Waits: a refused check sleeps the refusing dimension's retry time on the policy's clock
/// and checks again, holding no permit meanwhile; a refusal that cannot end in time returns
/// at once; an error is returned, never waited on.
#[test]
fn check_within_waits_for_the_refusing_dimension_and_holds_nothing() {
    let clock = ManualClock::new();
    let users = Arc::new(Keyed::<u64, FixedWindows, _>::with_config(
        WindowConfig::new(quota(3)).unwrap(),
        clock.clone(),
    ));
    let global = Arc::new(FixedWindow::builder(quota(1)).clock(clock.clone()).build());
    let policy = Policy::builder()
        .per_key("user", users.clone(), |r: &Request| Some(r.user))
        .shared("global", global.clone())
        .clock(clock.clone())
        .build();
    assert!(policy.check(&Request { user: 1 }).unwrap().is_admitted());
    // Global is spent for this minute: user 2 cannot get in within 30 s, and nothing moved.
    let refused = policy
        .check_within(&Request { user: 2 }, 1, Duration::from_secs(30))
        .unwrap();
    assert!(matches!(
        refused,
        PolicyDecision::Refused {
            dimension: "global",
            ..
        }
    ));
    assert_eq!((clock.now_nanos(), users.available(&2)), (0, 3));
    // Within two minutes: admitted when the next window opens, user 2 charged once.
    let admitted = policy
        .check_within(&Request { user: 2 }, 1, Duration::from_secs(120))
        .unwrap();
    assert!(admitted.is_admitted());
    assert_eq!(clock.now_nanos(), 60_000_000_000);
    assert_eq!(users.available(&2), 2);
    // A zero timeout is one check; an error is returned at once.
    assert!(!policy
        .check_within(&Request { user: 2 }, 1, Duration::ZERO)
        .unwrap()
        .is_admitted());
    let error = policy
        .check_within(&Request { user: 2 }, 5, Duration::MAX)
        .unwrap_err();
    assert_eq!(&*error.dimension, "user");
    assert_eq!(clock.now_nanos(), 60_000_000_000);
}

/// The async wait on tokio's paused timer: two tasks wait for one global permit per second
/// each; both are admitted, a second apart.
#[cfg(feature = "tokio")]
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn until_checked_waits_on_tokio_s_timer() {
    use ringlimit::clock::TokioClock;
    let global = FixedWindow::builder(WindowQuota::per_second(1).unwrap())
        .clock(TokioClock::new())
        .build();
    let policy = Arc::new(
        Policy::<()>::builder()
            .shared("global", Arc::new(global))
            .clock(TokioClock::new())
            .build(),
    );
    let start = tokio::time::Instant::now();
    let waits: Vec<_> = (0..3)
        .map(|_| {
            let policy = policy.clone();
            tokio::spawn(async move {
                let admitted = policy
                    .until_checked(&(), 1, Duration::from_secs(10))
                    .await
                    .unwrap()
                    .is_admitted();
                (admitted, start.elapsed().as_secs())
            })
        })
        .collect();
    let mut seconds = Vec::new();
    for wait in waits {
        let (admitted, at) = wait.await.unwrap();
        assert!(admitted);
        seconds.push(at);
    }
    seconds.sort_unstable();
    assert_eq!(seconds, [0, 1, 2]);
}

/// An admission's `reset_after` on a keyed window dimension: the time until the key counts
/// nothing (its window's end for a fixed window; the admission's bucket leaving the window
/// for a sliding one), as the key's cell says when asked afterwards, with one clock.
#[test]
fn reset_after_is_when_the_keys_window_counts_nothing() {
    use ringlimit::cell::SlidingConfig;
    use ringlimit::keyed::SlidingWindows;
    let clock = ManualClock::new();
    let quota = WindowQuota::per_second(5).unwrap();
    let fixed = Arc::new(Keyed::<u64, FixedWindows, _>::with_config(
        WindowConfig::new(quota).unwrap(),
        clock.clone(),
    ));
    let sliding = Arc::new(Keyed::<u64, SlidingWindows, _>::with_config(
        SlidingConfig::new(quota).unwrap(),
        clock.clone(),
    ));
    let by_fixed = Policy::builder()
        .per_key("fixed", fixed, |user: &u64| Some(*user))
        .build();
    let by_sliding = Policy::builder()
        .per_key("sliding", sliding.clone(), |user: &u64| Some(*user))
        .build();
    for (at, fixed_reset, sliding_reset) in [(0, 1_000, 1_000), (1_250, 750, 950), (3_999, 1, 901)]
    {
        clock.set(Duration::from_millis(at));
        let reset = |policy: &Policy<u64>| policy.check(&at).unwrap().reset_after();
        assert_eq!(
            reset(&by_fixed),
            Some(Duration::from_millis(fixed_reset)),
            "at {at}"
        );
        assert_eq!(
            reset(&by_sliding),
            Some(Duration::from_millis(sliding_reset)),
            "at {at}"
        );
        // The cell, asked after: it is whole again exactly then, not a nanosecond before.
        clock.advance(Duration::from_millis(sliding_reset) - Duration::from_nanos(1));
        assert_eq!(sliding.available(&at), 4, "at {at}");
        clock.advance(Duration::from_nanos(1));
        assert_eq!(sliding.available(&at), 5, "at {at}");
    }
}

/// A policy of more dimensions than a check holds grants for on its own stack (8): when the
/// last one refuses, every grant before it is given back, across the nested call; when all
/// admit, the tightest is the last of those with the least left, wherever it stands.
#[test]
fn a_long_policy_refunds_every_grant_and_finds_the_tightest_anywhere() {
    let clock = ManualClock::new();
    let window = |limit: u64| {
        Arc::new(
            FixedWindow::builder(WindowQuota::per_second(limit).unwrap())
                .clock(clock.clone())
                .build(),
        )
    };
    // Twelve dimensions: d2 and d9 have a limit of 3, d11 of 2, so d11 is the tightest and
    // refuses the third check, which d0..=d10 admitted first.
    let limits = [9, 9, 3, 9, 9, 9, 9, 9, 9, 3, 9, 2];
    let windows: Vec<_> = limits.iter().map(|&limit| window(limit)).collect();
    let mut builder = Policy::<()>::builder();
    for (i, limiter) in windows.iter().enumerate() {
        builder = builder.shared(&format!("d{i}"), limiter.clone());
    }
    let policy = builder.build();
    assert_eq!(
        policy.check(&()).unwrap(),
        PolicyDecision::Admitted {
            remaining: 1,
            tightest: "d11",
            reset_after: None
        }
    );
    assert_eq!(
        policy.check(&()).unwrap(),
        PolicyDecision::Admitted {
            remaining: 0,
            tightest: "d11",
            reset_after: None
        }
    );
    assert!(matches!(
        policy.check(&()).unwrap(),
        PolicyDecision::Refused {
            dimension: "d11",
            available: 0,
            ..
        }
    ));
    let left: Vec<u64> = windows.iter().map(|w| w.available()).collect();
    assert_eq!(left, [7, 7, 1, 7, 7, 7, 7, 7, 7, 1, 7, 0]);
    // The tightest among the first eight and the rest: d9 (the last with 1 left) once d11
    // is out of the policy.
    let mut builder = Policy::<()>::builder();
    for (i, limiter) in windows.iter().enumerate().take(11) {
        builder = builder.shared(&format!("d{i}"), limiter.clone());
    }
    assert_eq!(
        builder.build().check(&()).unwrap(),
        PolicyDecision::Admitted {
            remaining: 0,
            tightest: "d9",
            reset_after: None
        }
    );
}
