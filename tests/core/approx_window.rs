//! `ApproxSlidingWindow` against its spec: random traces decided by both must agree exactly,
//! and a multi-threaded run with a moving clock must never admit more than the spec allows.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{ApproxSlidingWindowSpec, Spec};
use ringlimit::{ApproxSlidingWindow, RateLimiter, WindowQuota};

#[derive(Debug, Clone)]
enum Op {
    /// Move the clock forward by this many ns.
    Advance(u64),
    /// Move the clock forward by this many whole windows (big jumps).
    Jump(u64),
    /// Move the clock backwards by this many ns.
    Back(u64),
    /// `try_acquire_n(raw % (limit + 2))`: n in `0..=limit + 1`.
    Acquire(u64),
    /// `try_acquire()`.
    AcquireOne,
    Available,
    /// `set_limit(l)`; 0 and `MAX_LIMIT + 1` are configuration errors.
    SetLimit(u64),
}

fn op(window: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..=window / 3 + 1).prop_map(Op::Advance),
        2 => (0..=2 * window).prop_map(Op::Advance),
        1 => prop_oneof![
            Just(1u64 << 14),
            Just(1 << 32),
            Just(1 << 40),
            Just((1 << 14) + 1),
            Just(1 << 23),
            2..100u64,
        ]
        .prop_map(Op::Jump),
        1 => (0..=2 * window).prop_map(Op::Back),
        8 => any::<u64>().prop_map(Op::Acquire),
        3 => Just(Op::AcquireOne),
        2 => Just(Op::Available),
        1 => prop_oneof![1..=8u64, Just(0), Just(ApproxSlidingWindow::MAX_LIMIT + 1)]
            .prop_map(Op::SetLimit),
    ]
}

fn case() -> impl Strategy<Value = (u64, u64, u64, Vec<Op>)> {
    let window = prop_oneof![
        Just(1u64),
        Just(3),
        2..50u64,
        Just(1000),
        Just(1_000_000_000)
    ];
    (1..=8u64, window, any::<u64>()).prop_flat_map(|(limit, window, start)| {
        // Start anywhere, including close to the end of time.
        let start = match start % 4 {
            0 => 0,
            1 => start % (1 << 40),
            2 => u64::MAX - start % (1 << 20),
            _ => start,
        };
        (
            Just(limit),
            Just(window),
            Just(start),
            prop::collection::vec(op(window), 1..120),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Every outcome of the lock-free limiter equals the spec's, driven by the same clock.
    #[test]
    fn random_traces_match_the_spec((limit, window, start, ops) in case()) {
        let clock = ManualClock::starting_at(start);
        let limiter =
            ApproxSlidingWindow::with_clock(WindowQuota::per(limit, Duration::from_nanos(window)).unwrap(), clock.clone()).unwrap();
        let mut spec = ApproxSlidingWindowSpec::new(limit, Duration::from_nanos(window)).unwrap();
        for (step, op) in ops.into_iter().enumerate() {
            let now = clock.now_nanos();
            match op {
                Op::Advance(ns) => clock.advance_nanos(ns),
                Op::Jump(windows) => clock.advance_nanos(windows.saturating_mul(window)),
                Op::Back(ns) => clock.set_nanos(now.saturating_sub(ns)),
                Op::Acquire(raw) => {
                    let n = raw % (spec.limit() + 2);
                    prop_assert_eq!(limiter.try_acquire_n(n), spec.decide(now, n), "step {} n {}", step, n);
                }
                Op::AcquireOne => {
                    let expected = spec.decide(now, 1).unwrap().is_admitted();
                    prop_assert_eq!(limiter.try_acquire(), expected, "step {}", step);
                }
                Op::Available => prop_assert_eq!(limiter.available(), spec.available(now), "step {}", step),
                Op::SetLimit(l) => {
                    prop_assert_eq!(limiter.set_limit(l), spec.set_limit(0, l), "step {}", step);
                    prop_assert_eq!(limiter.limit(), spec.limit());
                }
            }
        }
    }
}

/// `floor(prev * (W - r) / W)`, the spec's estimate.
fn estimate(prev: u64, window: u64, r: u64) -> u64 {
    (u128::from(prev) * u128::from(window - r) / u128::from(window)) as u64
}

/// Four threads hammer one limiter while a fifth moves the clock forward.
///
/// What is soundly checkable: the limiter reads the clock between the test's `before` and
/// `after` readings, and can only be in a window some reading already reached, so an
/// admission with `before` and `after` in the same window `e` was counted in `e`, decided at
/// a position no later than `after`'s. For each window `e` and position `ρ`, take the
/// admissions counted in `e` and decided at positions `<= ρ`: the last of them (in the head's
/// CAS order) saw all the others and an estimate of at least `estimate(prev, ρ)`, where
/// `prev` is everything counted in `e - 1`. Hence, with the known admissions as lower bounds,
/// `estimate(known[e-1], ρ) + known[e] at positions <= ρ <= N`.
#[test]
fn threads_racing_a_moving_clock_never_exceed_the_spec() {
    const LIMIT: u64 = 40;
    const WINDOW: u64 = 40_000;
    const THREADS: usize = 4;
    const CALLS: usize = 250_000;

    let clock = ManualClock::new();
    let limiter = Arc::new(
        ApproxSlidingWindow::with_clock(
            WindowQuota::per(LIMIT, Duration::from_nanos(WINDOW)).unwrap(),
            clock.clone(),
        )
        .unwrap(),
    );
    let done = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (clock, done) = (clock.clone(), done.clone());
        std::thread::spawn(move || {
            // Virtual time runs at 1/150 of real time, in steps of 7 ns: about a thousand
            // windows over the run, however the scheduler shares the two cores.
            let start = Instant::now();
            while !done.load(Ordering::Relaxed) {
                let target = u64::try_from(start.elapsed().as_nanos() / 150).unwrap();
                while clock.now_nanos() < target {
                    clock.advance_nanos(7);
                }
                std::thread::yield_now();
            }
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (clock, limiter) = (clock.clone(), limiter.clone());
            std::thread::spawn(move || {
                // (window, position, permits) of admissions whose window is known.
                let mut known = Vec::new();
                let (mut admitted, mut unknown) = (0u64, 0u64);
                // At least CALLS calls, and over at least 80 windows whatever the speed (a
                // loaded machine places fewer admissions in a known window).
                let mut call = 0;
                while call < CALLS || clock.now_nanos() < 80 * WINDOW {
                    call += 1;
                    let n = if (call + thread) % 7 == 0 { 2 } else { 1 };
                    let before = clock.now_nanos();
                    let granted = if n == 1 {
                        limiter.try_acquire()
                    } else {
                        limiter.try_acquire_n(n).unwrap().is_admitted()
                    };
                    let after = clock.now_nanos();
                    if granted {
                        admitted += n;
                        if before / WINDOW == after / WINDOW {
                            // The limiter read the clock in between: in this window, at a
                            // position no later than `after`'s.
                            known.push((after / WINDOW, after % WINDOW, n));
                        } else {
                            unknown += n;
                        }
                    }
                }
                (known, admitted, unknown)
            })
        })
        .collect();
    let mut known = Vec::new();
    let (mut admitted, mut unknown) = (0, 0);
    for worker in workers {
        let (mut k, a, u) = worker.join().unwrap();
        known.append(&mut k);
        admitted += a;
        unknown += u;
    }
    done.store(true, Ordering::Relaxed);
    ticker.join().unwrap();

    let mut by_window: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for (e, r, n) in known {
        by_window.entry(e).or_default().push((r, n));
    }
    let totals: HashMap<u64, u64> = by_window
        .iter()
        .map(|(&e, calls)| (e, calls.iter().map(|&(_, n)| n).sum()))
        .collect();
    let mut tight = 0;
    for (&e, calls) in &mut by_window {
        calls.sort_unstable();
        let prev = if e == 0 {
            0
        } else {
            totals.get(&(e - 1)).copied().unwrap_or(0)
        };
        let mut so_far = 0;
        for &(r, n) in calls.iter() {
            so_far += n;
            let bound = estimate(prev, WINDOW, r) + so_far;
            assert!(
                bound <= LIMIT,
                "window {e}: {so_far} admitted at positions <= {r} after {prev} in the previous window"
            );
            tight += usize::from(bound == LIMIT);
        }
    }
    let windows = by_window.len();
    // The check must have had something to bite on: many windows, most admissions placed,
    // and the bound reached exactly (the limiter admits all the spec allows).
    assert!(windows >= 20, "only {windows} windows were seen");
    assert!(
        unknown * 4 <= admitted,
        "{unknown} of {admitted} admissions had no known window"
    );
    assert!(
        tight >= 10,
        "the bound was reached only {tight} times in {windows} windows"
    );
}
