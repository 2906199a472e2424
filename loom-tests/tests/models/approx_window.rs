//! Loom models of `ApproxSlidingWindow`: every interleaving of a few callers, rollovers,
//! `set_limit` and clock moves must be linearizable with respect to the spec.
//!
//! Run (well under a minute):
//! `bash loom-tests/run approx_window::`

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::{ApproxSlidingWindowSpec, Spec};
use ringlimit::{ApproxSlidingWindow, ExceedsLimit, RateLimiter, WindowQuota};

/// One step of a model thread.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `try_acquire_n(n)`, or `try_acquire()` for `One`.
    Acquire(u64),
    One,
    SetLimit(u64),
    /// `available()`.
    Available,
    /// Set the shared clock (forward only in these models).
    SetClock(u64),
}

/// What a step returned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Acquire(Result<Decision, ExceedsLimit>),
    One(bool),
    Available(u64),
    Done,
}

/// A model: `setup` runs alone first (`(time, n)` acquisitions), then `threads` race from
/// clock time `start`; afterwards `available()` is probed at the final clock time and at
/// each of `probes` (absolute times, ascending).
struct Model {
    limit: u64,
    window: u64,
    setup: &'static [(u64, u64)],
    start: u64,
    threads: &'static [&'static [Op]],
    probes: &'static [u64],
}

impl Model {
    /// Explores every interleaving; returns nothing, panics on a violation.
    fn check(&'static self, invariant: impl Fn(&[Vec<Seen>]) + Sync + Send + 'static) {
        let invariant = std::sync::Arc::new(invariant);
        loom::model(move || {
            let clock = ManualClock::new();
            let limiter = Arc::new(
                ApproxSlidingWindow::with_clock(
                    WindowQuota::per(self.limit, Duration::from_nanos(self.window)).unwrap(),
                    clock.clone(),
                )
                .unwrap(),
            );
            for &(time, n) in self.setup {
                clock.set_nanos(time);
                limiter.try_acquire_n(n).unwrap();
            }
            clock.set_nanos(self.start);
            let handles: Vec<_> = self
                .threads
                .iter()
                .map(|ops| {
                    let (limiter, clock) = (limiter.clone(), clock.clone());
                    loom::thread::spawn(move || {
                        ops.iter()
                            .map(|op| match *op {
                                Op::Acquire(n) => Seen::Acquire(limiter.try_acquire_n(n)),
                                Op::One => Seen::One(limiter.try_acquire()),
                                Op::SetLimit(l) => {
                                    limiter.set_limit(l).unwrap();
                                    Seen::Done
                                }
                                Op::Available => Seen::Available(limiter.available()),
                                Op::SetClock(t) => {
                                    clock.set_nanos(t);
                                    Seen::Done
                                }
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let seen: Vec<Vec<Seen>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let mut probed = vec![(clock.now_nanos(), limiter.available())];
            for &time in self.probes {
                clock.set_nanos(time);
                probed.push((time, limiter.available()));
            }
            assert!(
                self.linearizable(&seen, &probed),
                "no sequential run of the spec explains {seen:?}, then available {probed:?}"
            );
            invariant(&seen);
        });
    }

    /// Whether some order of the steps (each thread's in program order), each acquisition
    /// decided at a time the clock could have shown, makes the spec produce `seen` and then
    /// the probed availabilities.
    fn linearizable(&self, seen: &[Vec<Seen>], probed: &[(u64, u64)]) -> bool {
        let mut spec =
            ApproxSlidingWindowSpec::new(self.limit, Duration::from_nanos(self.window)).unwrap();
        for &(time, n) in self.setup {
            spec.decide(time, n).unwrap();
        }
        let mut search = Search {
            model: self,
            seen,
            probed,
            history: vec![self.start],
        };
        search.explore(
            spec,
            &mut vec![0; self.threads.len()],
            &mut vec![0; self.threads.len()],
        )
    }
}

struct Search<'a> {
    model: &'a Model,
    seen: &'a [Vec<Seen>],
    probed: &'a [(u64, u64)],
    /// Clock values set so far along the current order, oldest first.
    history: Vec<u64>,
}

impl Search<'_> {
    /// `next[t]`: thread t's next step; `since[t]`: the index in `history` of the clock
    /// value thread t last set itself (its later readings cannot be older).
    fn explore(
        &mut self,
        spec: ApproxSlidingWindowSpec,
        next: &mut Vec<usize>,
        since: &mut Vec<usize>,
    ) -> bool {
        let threads = self.model.threads;
        if (0..threads.len()).all(|t| next[t] == threads[t].len()) {
            return self
                .probed
                .iter()
                .all(|&(time, available)| spec.available(time) == available);
        }
        for t in 0..threads.len() {
            let Some(&op) = threads[t].get(next[t]) else {
                continue;
            };
            let seen = &self.seen[t][next[t]];
            next[t] += 1;
            let found = match op {
                Op::SetClock(time) => {
                    self.history.push(time);
                    let saved = since[t];
                    since[t] = self.history.len() - 1;
                    let found = self.explore(spec.clone(), next, since);
                    since[t] = saved;
                    self.history.pop();
                    found
                }
                Op::SetLimit(limit) => {
                    let mut spec = spec.clone();
                    spec.set_limit(0, limit).unwrap();
                    self.explore(spec, next, since)
                }
                Op::Available => {
                    let Seen::Available(available) = *seen else {
                        unreachable!("available() returns a count")
                    };
                    self.readings(since[t])
                        .into_iter()
                        .any(|time| spec.available(time) == available)
                        && self.explore(spec.clone(), next, since)
                }
                Op::Acquire(_) | Op::One => {
                    let n = if let Op::Acquire(n) = op { n } else { 1 };
                    let mut found = false;
                    for time in self.readings(since[t]) {
                        let mut spec = spec.clone();
                        let decided = spec.decide(time, n);
                        if matches(seen, &decided) && self.explore(spec, next, since) {
                            found = true;
                            break;
                        }
                    }
                    found
                }
            };
            next[t] -= 1;
            if found {
                return true;
            }
        }
        false
    }

    /// Times an acquisition linearized now could be decided at: any clock value from
    /// `history[since..]` (its reading), or the start of a later such value's window, a time
    /// the clock passed during the call (a reading older than the limiter's window is
    /// decided at the start of that window).
    fn readings(&self, since: usize) -> Vec<u64> {
        let shown = &self.history[since..];
        let oldest = *shown.iter().min().unwrap();
        let window = self.model.window;
        let mut times: Vec<u64> = shown.to_vec();
        times.extend(
            shown
                .iter()
                .map(|v| v - v % window)
                .filter(|&start| start > oldest),
        );
        times.sort_unstable();
        times.dedup();
        times
    }
}

/// Whether the observed outcome equals the spec's (`retry_after` aside: it is measured from
/// the caller's own reading, which the model cannot see).
fn matches(seen: &Seen, decided: &Result<Decision, ExceedsLimit>) -> bool {
    let strip = |d: &Result<Decision, ExceedsLimit>| match d {
        Ok(Decision::Refused { available, .. }) => Ok(Decision::Refused {
            available: *available,
            retry_after: Duration::ZERO,
        }),
        other => other.clone(),
    };
    match seen {
        Seen::Acquire(result) => strip(result) == strip(decided),
        Seen::One(admitted) => decided.as_ref().is_ok_and(|d| d.is_admitted()) == *admitted,
        Seen::Available(_) | Seen::Done => false,
    }
}

fn admitted(seen: &[Vec<Seen>]) -> u64 {
    seen.iter()
        .flatten()
        .map(|s| match s {
            Seen::One(true) => 1,
            Seen::Acquire(Ok(Decision::Admitted { .. })) => 1,
            _ => 0,
        })
        .sum()
}

/// (a) Three callers at the limit boundary, inside a window whose estimate depends on the
/// position: N = 3, prev = 2 at r = 5 of 10 weighs 1, one admission already made, so exactly
/// one of the three gets the last permit.
#[test]
fn three_callers_at_the_boundary_admit_exactly_what_is_left() {
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 2), (15, 1)],
        start: 15,
        threads: &[&[Op::One], &[Op::One], &[Op::One]],
        probes: &[20],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1, "{seen:?}"));
}

/// (b) An admission in window 0 races a caller that moves the clock into window 1 and
/// admits there: the first is counted in window 0 (and weighs in window 1) or joins window 1
/// at r = 0.
#[test]
fn admission_races_window_rollover() {
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 2)],
        start: 5,
        threads: &[&[Op::One], &[Op::SetClock(15), Op::One]],
        probes: &[25, 31],
    };
    // Both can pass: window 0 ends with 3, and 3 * 5 / 10 = 1 weighs at 15.
    MODEL.check(|seen| assert!(admitted(seen) >= 1, "{seen:?}"));
}

/// (c) Two callers both find the limiter a window behind and race to roll it over.
#[test]
fn two_rollovers_to_the_same_window_race() {
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 2)],
        start: 15,
        threads: &[&[Op::One], &[Op::One]],
        probes: &[20, 25],
    };
    // At r = 5 the previous 2 weigh 1: room for exactly 2.
    MODEL.check(|seen| assert_eq!(admitted(seen), 2, "{seen:?}"));
}

/// (c') Rollovers to different windows race: one caller claims window 1 (near: prev = 2)
/// while the other moves the clock to window 3 (far: both counters reset).
#[test]
fn near_and_far_rollovers_race() {
    static MODEL: Model = Model {
        limit: 2,
        window: 10,
        setup: &[(0, 2)],
        start: 15,
        threads: &[&[Op::One], &[Op::SetClock(35), Op::Acquire(2)]],
        probes: &[40],
    };
    MODEL.check(|_| {});
}

/// (d) `try_acquire_n(2)` races `try_acquire()` for the 2 permits left after a rollover:
/// exactly one of them wins.
#[test]
fn acquire_n_races_acquire_one() {
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 2)],
        start: 15,
        threads: &[&[Op::Acquire(2)], &[Op::One]],
        probes: &[19],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1, "{seen:?}"));
}

/// (e) `set_limit` races admissions: `try_acquire_n(2)` passes only under the raised limit,
/// and each decision is made wholly under one limit.
#[test]
fn set_limit_races_admission() {
    static MODEL: Model = Model {
        limit: 2,
        window: 10,
        setup: &[(0, 2)],
        start: 15,
        threads: &[&[Op::SetLimit(4)], &[Op::Acquire(2), Op::One]],
        probes: &[20],
    };
    MODEL.check(|_| {});
}

/// (e') Lowering the limit races an admission that needs the old one.
#[test]
fn lowering_the_limit_races_admission() {
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 2), (15, 1)],
        start: 15,
        threads: &[&[Op::SetLimit(1)], &[Op::One], &[Op::One]],
        probes: &[],
    };
    MODEL.check(|seen| assert!(admitted(seen) <= 1, "{seen:?}"));
}

/// (f) The clock advances in its own thread, twice, while two callers admit: each reads
/// either side of each move.
#[test]
fn clock_advancing_in_its_own_thread() {
    static MODEL: Model = Model {
        limit: 2,
        window: 10,
        setup: &[(0, 1)],
        start: 8,
        threads: &[
            &[Op::SetClock(14), Op::SetClock(27)],
            &[Op::One],
            &[Op::One],
        ],
        probes: &[30],
    };
    MODEL.check(|seen| assert!(admitted(seen) <= 2, "{seen:?}"));
}

/// (f') A clock jump of 2^32 windows races an admission whose estimate depends on its
/// position: the stale window must never be mistaken for the new one.
#[test]
fn clock_jump_of_2_pow_32_windows_races_admission() {
    const JUMP: u64 = (1 << 32) * 10 + 15;
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 3)],
        start: 15,
        threads: &[&[Op::SetClock(JUMP), Op::Acquire(3)], &[Op::One]],
        probes: &[JUMP + 10],
    };
    MODEL.check(|_| {});
}

/// (g) A clock set backwards races a caller still reading the newer time: the stale reading
/// joins the newest window at its start (r = 0), where the previous 2 weigh fully.
#[test]
fn clock_going_backwards_races_admission() {
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 2), (15, 1)],
        start: 15,
        threads: &[&[Op::SetClock(5), Op::One], &[Op::One]],
        probes: &[19],
    };
    MODEL.check(|seen| assert_eq!(seen[0][1], Seen::One(false), "{seen:?}"));
}

/// (i) Two `set_limit`s race an admission. Under the old head layout each `set_limit` only
/// flipped `gen`, so two of them restored the head word bit for bit: an admission that read
/// the head and the limit 3 before them then succeeded with its CAS after them, under the
/// limit 2, reporting `remaining: 1` while `available()` in between had reported 1 for the
/// same permit. Each `set_limit` now adds 2 to the install sequence, so the CAS fails.
#[test]
fn two_set_limits_race_an_admission() {
    static MODEL: Model = Model {
        limit: 3,
        window: 10,
        setup: &[(0, 1)],
        start: 5,
        threads: &[
            &[Op::Acquire(1)],
            &[Op::SetLimit(5), Op::SetLimit(2), Op::Available],
        ],
        probes: &[9],
    };
    MODEL.check(|_| {});
}

/// (j) A caller reads the claim of window 1 (at r = 9, where window 0's count weighs
/// nothing), then stalls while another caller rolls the limiter to window 2 and on to
/// window 3, whose claim has window 1's parity. The head it then loads matches its claim's
/// parity but is window 3's (prev 2), where its stale reading must be decided at r = 0 and
/// refused. Without a tag in the head, only the claim re-load after the head load tells.
#[test]
fn a_head_two_rollovers_newer_than_the_claim_is_not_mistaken_for_it() {
    static MODEL: Model = Model {
        limit: 2,
        window: 10,
        setup: &[(15, 1)],
        start: 19,
        threads: &[
            &[Op::One],
            &[
                Op::SetClock(29),
                Op::One,
                Op::One,
                Op::SetClock(30),
                Op::One,
            ],
        ],
        probes: &[39],
    };
    MODEL.check(|_| {});
}

/// (k) A refusal must pair its head with that head's limit. The caller reads the head
/// (limit 2, cur 2) and stalls; `set_limit(5)` flips the generation, another caller admits
/// one permit under it (cur 3, `remaining: 2`, which only the limit 5 explains), and
/// `set_limit(3)` writes the first generation's half again and flips back. Read now, that
/// half says 3: with the stale cur 2 the caller would refuse 2 permits reporting
/// `available: 1`, a state that never existed (0, admit, admit, 0 along the way). The re-read
/// of the install sequence after the limits word sees the change and decides again.
#[test]
fn a_refusal_pairs_its_head_with_that_heads_limit() {
    static MODEL: Model = Model {
        limit: 2,
        window: 10,
        setup: &[(0, 2)],
        start: 5,
        threads: &[
            &[Op::Acquire(2)],
            &[Op::SetLimit(5), Op::SetLimit(3)],
            &[Op::Acquire(1)],
        ],
        probes: &[9],
    };
    MODEL.check(|_| {});
}

/// (k') The same race against `available()`: the stale head with the rewritten half would
/// report 1, which no state along the way has (0, 3, 2, 0).
#[test]
fn available_pairs_its_head_with_that_heads_limit() {
    static MODEL: Model = Model {
        limit: 2,
        window: 10,
        setup: &[(0, 2)],
        start: 5,
        threads: &[
            &[Op::Available],
            &[Op::SetLimit(5), Op::SetLimit(3)],
            &[Op::Acquire(1)],
        ],
        probes: &[9],
    };
    MODEL.check(|_| {});
}

// A clock whose reading is per thread, so every call's reading is exactly the one chosen
// (the trick of `window_epochs.rs`).
loom::thread_local! {
    static NOW: std::cell::Cell<u64> = std::cell::Cell::new(0);
}
#[derive(Clone, Copy, Debug)]
struct LocalClock;
impl Clock for LocalClock {
    fn now_nanos(&self) -> u64 {
        NOW.with(|n| n.get())
    }
}
fn set_now(t: u64) {
    NOW.with(|n| n.set(t));
}
fn local(limit: u64, window: u64) -> ApproxSlidingWindow<LocalClock> {
    ApproxSlidingWindow::with_clock(
        WindowQuota::per(limit, Duration::from_nanos(window)).unwrap(),
        LocalClock,
    )
    .unwrap()
}
fn one<L: RateLimiter>(l: &L) -> u64 {
    u64::from(l.try_acquire())
}

/// (h) Install ABA with ONE preemption (the window engine's counterexample, here).
/// With 1 ns windows the estimate is the whole of `prev`. Window 0 ends with 1 admitted.
/// Helper A (reading 1) reads the claim of window 1 and window 0's head and is preempted
/// before its install CAS. B installs window 1 and admits there, then reads 2^14: a far
/// claim (prev 0), and one admission. Under 14-bit window tags that head word was window
/// 0's bit for bit, so A's stale CAS succeeded, put window 1's head back, the next install
/// of 2^14 started from 0 again and B's admission was forgotten. In the spec window 1
/// admits at most 1 (prev 1, limit 2) and window 2^14 at most 2: at most 3 of these 5 calls.
#[test]
fn install_aba_across_a_far_jump_cannot_over_admit() {
    loom::model(|| {
        let limiter = Arc::new(local(2, 1));
        set_now(0);
        assert!(limiter.try_acquire()); // window 0: cur 1
        let a = {
            let l = limiter.clone();
            loom::thread::spawn(move || {
                set_now(1);
                one(&*l)
            })
        };
        let b = {
            let l = limiter.clone();
            loom::thread::spawn(move || {
                set_now(1);
                let mut n = one(&*l); // window 1
                set_now(1 << 14);
                n += one(&*l); // window 2^14
                n
            })
        };
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        set_now(1 << 14);
        let m = one(&*limiter) + one(&*limiter);
        assert!(a + b + m <= 3, "a {a} b {b} m {m} {limiter:?}");
    });
}
