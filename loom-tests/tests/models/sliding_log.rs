//! Loom models of [`SlidingLog`]: every interleaving of a few threads must be linearizable
//! with respect to [`SlidingLogSpec`], which implies it never over-admits.
//!
//! Run (from the workspace root):
//! `bash loom-tests/run sliding_log::`

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::spec::{SlidingLogSpec, Spec};
use ringlimit::{ConfigError, ExceedsLimit, RateLimiter, SlidingLog, WindowQuota};

/// An operation one model thread performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `try_acquire()`.
    One,
    /// `try_acquire_n(n)`.
    Take(u64),
    /// `try_acquire_n(n)`, keeping only whether it was admitted (a group whose time a helper
    /// fixed reports `remaining` at the leader's own time: a documented snapshot).
    TakeAll(u64),
    /// `set_limit(l)`.
    Limit(u64),
    /// `available()`.
    Available,
    /// `clock.set_nanos(t)`.
    SetClock(u64),
    /// `clock.advance_nanos(d)`.
    AdvanceClock(u64),
}

/// What an operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Bool(bool),
    Decision(Result<Decision, ExceedsLimit>),
    Unit(Result<(), ConfigError>),
    Count(u64),
    Nothing,
}

fn run(log: &SlidingLog<ManualClock>, op: Op) -> Answer {
    match op {
        Op::One => Answer::Bool(log.try_acquire()),
        Op::Take(n) => Answer::Decision(log.try_acquire_n(n)),
        Op::TakeAll(n) => Answer::Bool(log.try_acquire_n(n).unwrap().is_admitted()),
        Op::Limit(l) => Answer::Unit(log.set_limit(l)),
        Op::Available => Answer::Count(log.available()),
        Op::SetClock(t) => {
            log.clock().set_nanos(t);
            Answer::Nothing
        }
        Op::AdvanceClock(d) => {
            log.clock().advance_nanos(d);
            Answer::Nothing
        }
    }
}

/// The spec and the model clock a sequential run carries.
#[derive(Clone)]
struct State {
    spec: SlidingLogSpec,
    clock: u64,
}

/// Applies `op` to the spec at clock reading `now` (clock ops move the model clock).
fn apply(state: &mut State, op: Op, now: u64) -> Answer {
    match op {
        Op::One => Answer::Bool(state.spec.decide(now, 1).unwrap().is_admitted()),
        Op::Take(n) => Answer::Decision(state.spec.decide(now, n)),
        Op::TakeAll(n) => Answer::Bool(state.spec.decide(now, n).unwrap().is_admitted()),
        Op::Limit(l) => Answer::Unit(state.spec.set_limit(0, l)),
        Op::Available => Answer::Count(state.spec.available(now)),
        Op::SetClock(t) => {
            state.clock = t;
            Answer::Nothing
        }
        Op::AdvanceClock(d) => {
            state.clock += d;
            Answer::Nothing
        }
    }
}

fn is_clock(op: Op) -> bool {
    matches!(op, Op::SetClock(_) | Op::AdvanceClock(_))
}

/// Whether some sequential run explains every thread's answers, followed by `tail` (calls
/// made after every thread was joined). A limiter call is two events, its clock reading and
/// its linearization point (later, in the same call); a clock move is one. Depth-first over
/// interleavings, pruning as soon as an answer differs.
fn linearizable(state: &State, threads: &[Vec<(Op, Answer)>], tail: &[(Op, Answer)]) -> bool {
    fn step(
        state: &State,
        threads: &[Vec<(Op, Answer)>],
        tail: &[(Op, Answer)],
        pos: &mut [usize],
        reading: &mut [Option<u64>],
    ) -> bool {
        let mut done = true;
        for t in 0..threads.len() {
            let Some((op, answer)) = threads[t].get(pos[t]) else {
                continue;
            };
            done = false;
            if !is_clock(*op) && reading[t].is_none() {
                reading[t] = Some(state.clock);
                if step(state, threads, tail, pos, reading) {
                    return true;
                }
                reading[t] = None;
                continue;
            }
            let mut next = state.clone();
            if apply(&mut next, *op, reading[t].unwrap_or(0)) != *answer {
                continue;
            }
            let saved = reading[t].take();
            pos[t] += 1;
            if step(&next, threads, tail, pos, reading) {
                return true;
            }
            pos[t] -= 1;
            reading[t] = saved;
        }
        done && {
            let mut last = state.clone();
            tail.iter().all(|(op, answer)| {
                let now = last.clock;
                apply(&mut last, *op, now) == *answer
            })
        }
    }
    let mut pos = vec![0; threads.len()];
    let mut reading = vec![None; threads.len()];
    step(state, threads, tail, &mut pos, &mut reading)
}

/// One model: a log (`limit`, room for `max_limit`, `window` ns) whose clock starts at
/// `start`; `setup` runs first, alone; then one thread per op list; then, alone again,
/// `available()` and `limit()`. Every execution must be linearizable.
fn model(
    limit: u64,
    max_limit: u64,
    window: u64,
    start: u64,
    setup: &'static [Op],
    threads: &'static [&'static [Op]],
) {
    loom::model(move || {
        let clock = ManualClock::starting_at(start);
        let log = Arc::new(
            SlidingLog::with_max_limit(
                WindowQuota::per(limit, Duration::from_nanos(window)).unwrap(),
                max_limit,
                clock,
            )
            .unwrap(),
        );
        let mut state = State {
            spec: SlidingLogSpec::new(limit, Duration::from_nanos(window)).unwrap(),
            clock: start,
        };
        for &op in setup {
            let now = state.clock;
            assert_eq!(run(&log, op), apply(&mut state, op, now), "setup {op:?}");
        }
        let handles: Vec<_> = threads
            .iter()
            .map(|ops| {
                let log = log.clone();
                thread::spawn(move || {
                    ops.iter()
                        .map(|&op| (op, run(&log, op)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let answers: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let tail = [(Op::Available, run(&log, Op::Available))];
        assert!(
            linearizable(&state, &answers, &tail),
            "not linearizable: {answers:?} then {tail:?}"
        );
    });
}

/// (a) Three threads at the limit boundary: exactly `limit` of them get a permit.
#[test]
fn boundary_three_threads_limit_two() {
    model(2, 2, 10, 0, &[], &[&[Op::One], &[Op::One], &[Op::Take(1)]]);
}

/// (a) Two threads, two calls each, limit one: one permit in total.
#[test]
fn boundary_two_threads_limit_one() {
    model(
        1,
        1,
        10,
        0,
        &[],
        &[&[Op::One, Op::Take(1)], &[Op::One, Op::Available]],
    );
}

/// (b) Admissions racing the expiry of the entry logged at 0 (the clock jumps to 10).
#[test]
fn admission_races_expiry() {
    model(
        1,
        1,
        10,
        0,
        &[Op::One],
        &[&[Op::Take(1)], &[Op::One], &[Op::SetClock(10)]],
    );
}

/// (d) A group of two racing single permits, with room for only one of them.
#[test]
fn group_races_single_limit_two() {
    model(2, 2, 10, 0, &[], &[&[Op::Take(2)], &[Op::One, Op::Take(1)]]);
}

/// (d) A group and a single that both fit: the single must help the group complete.
#[test]
fn group_races_single_both_fit() {
    model(
        3,
        3,
        10,
        0,
        &[],
        &[&[Op::Take(2), Op::One], &[Op::Take(1), Op::Available]],
    );
}

/// (d) A group racing a single while the clock moves: the single may complete the group
/// with its own, later reading, as which the entry logged at 0 has expired.
#[test]
fn group_completed_by_helper_as_clock_moves() {
    model(
        3,
        3,
        5,
        0,
        &[Op::One],
        &[&[Op::TakeAll(2)], &[Op::One], &[Op::SetClock(5)]],
    );
}

/// (d) Two groups racing: one fits.
#[test]
fn two_groups_race() {
    model(3, 3, 10, 0, &[], &[&[Op::Take(2)], &[Op::Take(2)]]);
}

/// (e) Raising the limit while two threads admit.
#[test]
fn raise_limit_races_admission() {
    model(1, 2, 10, 0, &[], &[&[Op::Limit(2)], &[Op::One, Op::One]]);
}

/// (e) Lowering the limit while a thread admits twice: never more than the limit in force.
#[test]
fn lower_limit_races_admission() {
    model(
        2,
        2,
        10,
        0,
        &[],
        &[&[Op::Limit(1), Op::Available], &[Op::Take(1), Op::One]],
    );
}

/// (e) A limit change racing a group.
#[test]
fn limit_races_group() {
    model(2, 3, 10, 0, &[Op::One], &[&[Op::Limit(3)], &[Op::Take(2)]]);
}

/// (f) The clock advancing as a thread of its own, across a window boundary.
#[test]
fn clock_thread_advances() {
    model(
        1,
        1,
        2,
        0,
        &[],
        &[
            &[Op::AdvanceClock(1), Op::AdvanceClock(1)],
            &[Op::One, Op::One],
            &[Op::Take(1)],
        ],
    );
}

/// (f) The clock going backwards while threads admit: the log's time never does. The entry
/// logged at 10 must still count at 6, so an admission that read 0 must log 10, not 0.
#[test]
fn clock_thread_goes_backwards() {
    model(
        2,
        2,
        5,
        10,
        &[Op::One],
        &[&[Op::SetClock(0), Op::SetClock(6)], &[Op::One, Op::Take(1)]],
    );
}
