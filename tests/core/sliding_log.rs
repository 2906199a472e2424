//! The lock-free [`SlidingLog`] against its spec: random sequential traces must match
//! [`SlidingLogSpec`] answer for answer, and a multi-threaded stress run must never put more
//! than `limit` admissions in any window.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use ringlimit::baseline::ParkingLotLocked;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{SlidingLogSpec, Spec};
use ringlimit::{ConfigError, RateLimiter, SlidingLog, WindowQuota};

/// One step of a random trace.
#[derive(Debug, Clone)]
enum Op {
    /// Move the clock forward by this many ns.
    Advance(u64),
    /// Move the clock backward by this many ns (saturating at 0).
    Back(u64),
    /// `try_acquire_n(n)`.
    Take(u64),
    /// `try_acquire()`.
    One,
    /// `set_limit(l)`.
    Limit(u64),
    /// `available()`.
    Available,
}

fn op(max_limit: u64, window: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..=window * 2 / 3).prop_map(Op::Advance),
        1 => (0..=window).prop_map(Op::Back),
        5 => (0..=max_limit + 1).prop_map(Op::Take),
        3 => Just(Op::One),
        1 => (0..=max_limit + 1).prop_map(Op::Limit),
        1 => Just(Op::Available),
    ]
}

/// (limit, max_limit, window ns, ops)
fn trace() -> impl Strategy<Value = (u64, u64, u64, Vec<Op>)> {
    (1..=6u64, 0..=4u64, 1..=40u64).prop_flat_map(|(limit, headroom, window)| {
        let max_limit = limit + headroom;
        (
            Just(limit),
            Just(max_limit),
            Just(window),
            proptest::collection::vec(op(max_limit, window), 1..120),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Every answer of the lock-free log equals the spec's, on random traces with the clock
    /// moving both ways, groups, zero and oversized requests, and limit changes.
    #[test]
    fn matches_the_spec((limit, max_limit, window, ops) in trace()) {
        let clock = ManualClock::new();
        let w = Duration::from_nanos(window);
        let log = SlidingLog::with_max_limit(WindowQuota::per(limit, w).unwrap(), max_limit, clock.clone()).unwrap();
        let mut spec = SlidingLogSpec::new(limit, w).unwrap();
        for (i, op) in ops.iter().enumerate() {
            let now = clock.now_nanos();
            match *op {
                Op::Advance(d) => clock.advance_nanos(d),
                Op::Back(d) => clock.set_nanos(now.saturating_sub(d)),
                Op::Take(n) => prop_assert_eq!(log.try_acquire_n(n), spec.decide(now, n), "step {} {:?}", i, op),
                Op::One => prop_assert_eq!(
                    log.try_acquire(),
                    spec.decide(now, 1).unwrap().is_admitted(),
                    "step {} {:?}", i, op
                ),
                Op::Limit(l) if l > max_limit => prop_assert_eq!(
                    log.set_limit(l),
                    Err(ConfigError::LimitTooLarge { limit: l, max: max_limit })
                ),
                Op::Limit(l) => prop_assert_eq!(log.set_limit(l), spec.set_limit(0, l)),
                Op::Available => prop_assert_eq!(log.available(), spec.available(now), "step {}", i),
            }
            prop_assert_eq!(log.limit(), spec.limit());
        }
    }
}

/// One admission seen by a stress worker: the clock before and after the call bound the
/// admission's timestamp (the clock only moves forward in the stress run).
#[derive(Debug, Clone, Copy)]
struct Admission {
    before: u64,
    after: u64,
}

/// A window of length `window` that certainly holds more than `limit` admissions, if any.
///
/// An admission's timestamp lies in `[before, after]`. A set of admissions is certainly
/// inside one window `(x - window, x]` when `max(after) - min(before) < window` (take
/// `x = max(after)`). So: for each admission `i` as the earliest `before`, count the
/// admissions `j` with `before_j >= before_i` and `after_j < before_i + window`; more than
/// `limit` of them is a proven violation. Sound (no false alarm) and exact when every call
/// saw one clock value.
fn proven_violation(mut log: Vec<Admission>, limit: u64, window: u64) -> Option<(u64, u64)> {
    log.sort_by_key(|a| a.before);
    // Ranks of `after` for a Fenwick tree counting the admissions in the current range.
    let mut afters: Vec<u64> = log.iter().map(|a| a.after).collect();
    afters.sort_unstable();
    afters.dedup();
    let rank = |v: u64| afters.partition_point(|&a| a < v);
    let mut tree = vec![0i64; afters.len() + 1];
    let add = |tree: &mut Vec<i64>, at: usize, d: i64| {
        let mut i = at + 1;
        while i < tree.len() {
            tree[i] += d;
            i += i & i.wrapping_neg();
        }
    };
    let below = |tree: &Vec<i64>, r: usize| {
        // Admissions in the tree whose `after` rank is below `r`.
        let (mut i, mut sum) = (r, 0);
        while i > 0 {
            sum += tree[i];
            i -= i & i.wrapping_neg();
        }
        sum
    };
    let mut end = 0;
    for i in 0..log.len() {
        let horizon = log[i].before + window;
        while end < log.len() && log[end].before < horizon {
            add(&mut tree, rank(log[end].after), 1);
            end += 1;
        }
        if below(&tree, rank(horizon)) as u64 > limit {
            return Some((log[i].before, horizon));
        }
        add(&mut tree, rank(log[i].after), -1);
    }
    None
}

#[test]
fn violation_check_can_fail() {
    let at = |before, after| Admission { before, after };
    // Three admissions proven inside (0, 10]: a limit of 2 is violated.
    assert!(proven_violation(vec![at(1, 2), at(5, 9), at(3, 3)], 2, 10).is_some());
    // Spread over more than one window: no proof.
    assert!(proven_violation(vec![at(1, 2), at(5, 9), at(11, 11)], 2, 10).is_none());
    // Uncertain intervals: the third might lie outside the window of the first.
    assert!(proven_violation(vec![at(1, 1), at(2, 2), at(3, 12)], 2, 10).is_none());
    assert!(proven_violation(vec![at(1, 1), at(2, 2), at(3, 10)], 2, 10).is_some());
}

/// Hammers `limiter` from 4 threads (single permits and groups) while another thread moves
/// `clock` forward with real time, slowed down `SLOWDOWN` times, until it has covered
/// `STRESS_WINDOWS` windows (about 0.3 s); returns every admission, one entry per permit.
fn stress<L: RateLimiter + Send + Sync + 'static>(
    limiter: Arc<L>,
    clock: ManualClock,
) -> Vec<Admission> {
    let end = STRESS_WINDOWS * STRESS_WINDOW;
    let ticker = {
        let clock = clock.clone();
        thread::spawn(move || {
            let start = Instant::now();
            while clock.now_nanos() < end {
                // Sleeping (not spinning) leaves both cores to the workers; a step is a few
                // hundred ns of clock time, so most calls see one clock value.
                thread::sleep(Duration::from_micros(20));
                let elapsed = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                clock.set_nanos((elapsed / SLOWDOWN).min(end));
            }
        })
    };
    let workers: Vec<_> = (0..4u64)
        .map(|w| {
            let (limiter, clock) = (limiter.clone(), clock.clone());
            thread::spawn(move || {
                let mut admitted = Vec::new();
                for i in 0.. {
                    let before = clock.now_nanos();
                    if before >= end {
                        break;
                    }
                    let n = if (i + w) % 7 == 0 { 1 + (i + w) % 3 } else { 1 };
                    let ok = if n == 1 && i % 2 == 0 {
                        limiter.try_acquire()
                    } else {
                        limiter.try_acquire_n(n).unwrap().is_admitted()
                    };
                    let after = clock.now_nanos();
                    if ok {
                        admitted.extend((0..n).map(|_| Admission { before, after }));
                    }
                }
                admitted
            })
        })
        .collect();
    let log: Vec<Admission> = workers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    ticker.join().unwrap();
    log
}

const STRESS_LIMIT: u64 = 8;
const STRESS_WINDOW: u64 = 2_000;
/// Windows a stress run covers.
const STRESS_WINDOWS: u64 = 2_000;
/// Real ns per clock ns: a window lasts 160 us of real time, some hundreds of calls in a
/// debug build and thousands in a release one (1 to 2 million calls in all).
const SLOWDOWN: u64 = 80;

#[test]
fn stress_never_over_admits() {
    let clock = ManualClock::new();
    let log = Arc::new(
        SlidingLog::with_clock(
            WindowQuota::per(STRESS_LIMIT, Duration::from_nanos(STRESS_WINDOW)).unwrap(),
            clock.clone(),
        )
        .unwrap(),
    );
    let admitted = stress(log, clock);
    assert!(
        admitted.len() as u64 > STRESS_WINDOWS * STRESS_LIMIT / 10,
        "the run must fill many windows: {}",
        admitted.len()
    );
    assert_eq!(
        proven_violation(admitted, STRESS_LIMIT, STRESS_WINDOW),
        None,
        "more than {STRESS_LIMIT} admissions in one window"
    );
}

/// The same harness catches a limiter that admits one permit too many per window.
#[test]
fn stress_catches_an_over_admitting_limiter() {
    let clock = ManualClock::new();
    let spec = SlidingLogSpec::new(STRESS_LIMIT + 1, Duration::from_nanos(STRESS_WINDOW)).unwrap();
    let locked = Arc::new(ParkingLotLocked::with_clock(spec, clock.clone()));
    let admitted = stress(locked, clock);
    assert!(proven_violation(admitted, STRESS_LIMIT, STRESS_WINDOW).is_some());
}
