//! Loom models of `WarmUp`: every interleaving of a few reservations, admissions, cancels,
//! `set_rate` calls and clock moves must be explained by a sequential run of the spec.
//!
//! Run (a few seconds):
//! `bash loom-tests/run warm_up::`

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::{Decision, Ticket};
use ringlimit::spec::Attempt;
use ringlimit::spec::{Spec, Step, WarmUpSpec};
use ringlimit::{ExceedsLimit, Rate, RateLimiter, WarmUp, WarmUpQuota};

/// T = 1000 ns, W = 4000 ns, cold factor 3: threshold 2, max 4, cool-down 1000 ns. From
/// cold, permits cost 2500, 1500, then 1000 ns each.
const PERIOD: u64 = 1000;
const WARM_UP: u64 = 4000;

fn rate(period: u64) -> Rate {
    Rate::every(Duration::from_nanos(period)).unwrap()
}

/// One step of a model thread.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `try_acquire_n(n)`.
    Try(u64),
    /// `attempt(n, Duration::MAX)`: a reservation, kept.
    Reserve(u64),
    /// Cancels this thread's last reservation.
    Cancel,
    /// `set_rate(one permit per this many ns)`.
    SetRate(u64),
    /// `set_limit(limit)`.
    SetLimit(u64),
    /// Sets the shared clock (forward).
    SetClock(u64),
}

/// What a step returned.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Try(Result<Decision, ExceedsLimit>),
    Reserved(Ticket),
    Done,
}

/// A model: `setup` reservations `(time, n)` run alone, then `threads` race from clock time
/// `start`; afterwards the stored permits and one `try_acquire_n(1)` at the final time are
/// probed.
struct Model {
    setup: &'static [(u64, u64)],
    start: u64,
    threads: &'static [&'static [Op]],
}

impl Model {
    fn check(&'static self, invariant: impl Fn(&[Vec<Seen>]) + Sync + Send + 'static) {
        let invariant = std::sync::Arc::new(invariant);
        loom::model(move || {
            let clock = ManualClock::new();
            let limiter = Arc::new(
                WarmUp::builder(
                    WarmUpQuota::new(rate(PERIOD), Duration::from_nanos(WARM_UP)).unwrap(),
                )
                .clock(clock.clone())
                .build(),
            );
            for &(time, n) in self.setup {
                clock.set_nanos(time);
                assert!(matches!(
                    limiter.attempt(n, Duration::MAX),
                    Ok(Attempt::Granted(_))
                ));
            }
            clock.set_nanos(self.start);
            let handles: Vec<_> = self
                .threads
                .iter()
                .map(|ops| {
                    let (limiter, clock) = (limiter.clone(), clock.clone());
                    loom::thread::spawn(move || {
                        let mut last = None;
                        let mut seen = Vec::new();
                        for op in ops.iter() {
                            seen.push(match *op {
                                Op::Try(n) => Seen::Try(limiter.try_acquire_n(n)),
                                Op::Reserve(n) => match limiter.attempt(n, Duration::MAX) {
                                    Ok(Attempt::Granted(reservation)) => {
                                        let ticket = *reservation.ticket();
                                        last = Some(reservation);
                                        Seen::Reserved(ticket)
                                    }
                                    other => panic!("{other:?}"),
                                },
                                Op::Cancel => {
                                    if let Some(reservation) = last.take() {
                                        reservation.cancel();
                                    }
                                    Seen::Done
                                }
                                Op::SetRate(period) => {
                                    limiter.set_rate(rate(period)).unwrap();
                                    Seen::Done
                                }
                                Op::SetLimit(limit) => {
                                    limiter.set_limit(limit).unwrap();
                                    Seen::Done
                                }
                                Op::SetClock(t) => {
                                    clock.set_nanos(t);
                                    Seen::Done
                                }
                            });
                        }
                        seen
                    })
                })
                .collect();
            let seen: Vec<Vec<Seen>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let now = clock.now_nanos();
            let probe = (limiter.stored_permits().to_bits(), limiter.try_acquire_n(1));
            assert!(
                self.explained(&seen, now, &probe),
                "no sequential run of the spec explains {seen:?}, then {probe:?} at {now}"
            );
            invariant(&seen);
        });
    }

    /// Whether some order of the steps (each thread's in program order), each decided at a
    /// time the clock could have shown at that point, makes the spec produce `seen` and then
    /// the probe at `now`.
    fn explained(
        &self,
        seen: &[Vec<Seen>],
        now: u64,
        probe: &(u64, Result<Decision, ExceedsLimit>),
    ) -> bool {
        let mut spec = WarmUpSpec::new(rate(PERIOD), Duration::from_nanos(WARM_UP), 3.0).unwrap();
        for &(time, n) in self.setup {
            spec.attempt(time, n, Duration::MAX).unwrap();
        }
        let mut done = vec![0; seen.len()];
        self.search(seen, &mut done, spec, vec![self.start], &mut |spec| {
            let mut spec = spec.clone();
            spec.stored_permits(now).to_bits() == probe.0 && spec.decide(now, 1) == probe.1
        })
    }

    /// Depth-first over the next step of each thread. `times` are the clock values so far
    /// (a step may have read any of them: its reading precedes its linearization point).
    fn search(
        &self,
        seen: &[Vec<Seen>],
        done: &mut Vec<usize>,
        spec: WarmUpSpec,
        times: Vec<u64>,
        end: &mut dyn FnMut(&WarmUpSpec) -> bool,
    ) -> bool {
        if (0..seen.len()).all(|t| done[t] == seen[t].len()) {
            return end(&spec);
        }
        for t in 0..seen.len() {
            let i = done[t];
            if i == seen[t].len() {
                continue;
            }
            let op = self.threads[t][i];
            let mut options: Vec<(WarmUpSpec, Vec<u64>)> = Vec::new();
            match op {
                Op::SetClock(time) => {
                    let mut times = times.clone();
                    times.push(time);
                    options.push((spec.clone(), times));
                }
                _ => {
                    for &now in &times {
                        let mut next = spec.clone();
                        let ok = match (op, &seen[t][i]) {
                            (Op::Try(n), Seen::Try(want)) => next.decide(now, n) == *want,
                            (Op::Reserve(n), Seen::Reserved(want)) => {
                                next.attempt(now, n, Duration::MAX) == Ok(Step::Granted(*want))
                            }
                            (Op::Cancel, _) => {
                                let ticket = seen[t][..i].iter().rev().find_map(|s| match s {
                                    Seen::Reserved(ticket) => Some(*ticket),
                                    _ => None,
                                });
                                if let Some(ticket) = ticket {
                                    next.refund(now, &ticket);
                                }
                                true
                            }
                            (Op::SetRate(period), _) => next.set_rate(now, rate(period)).is_ok(),
                            (Op::SetLimit(limit), _) => next.set_limit(now, limit).is_ok(),
                            _ => false,
                        };
                        if ok {
                            options.push((next, times.clone()));
                        }
                    }
                }
            }
            for (next, times) in options {
                done[t] += 1;
                let found = self.search(seen, done, next, times, end);
                done[t] -= 1;
                if found {
                    return true;
                }
            }
        }
        false
    }
}

fn tickets(seen: &[Vec<Seen>]) -> Vec<Ticket> {
    let mut tickets: Vec<Ticket> = seen
        .iter()
        .flatten()
        .filter_map(|s| match s {
            Seen::Reserved(ticket) => Some(*ticket),
            _ => None,
        })
        .collect();
    tickets.sort_by_key(|t| t.act_at());
    tickets
}

/// Three racing reservations from cold: their moments are 0, 2500 and 4000 whoever wins,
/// each at least one stable period after the previous.
#[test]
fn racing_reservations_get_distinct_spaced_moments() {
    static MODEL: Model = Model {
        setup: &[],
        start: 0,
        threads: &[&[Op::Reserve(1)], &[Op::Reserve(1)], &[Op::Reserve(2)]],
    };
    MODEL.check(|seen| {
        let tickets = tickets(seen);
        assert_eq!(tickets.len(), 3);
        for pair in tickets.windows(2) {
            assert!(
                pair[1].act_at() >= pair[0].act_at() + pair[0].permits() * PERIOD,
                "{tickets:?}"
            );
        }
        assert_eq!(tickets[0].act_at(), 0);
    });
}

/// `try_acquire_n` racing a reservation on a free limiter: exactly one of them goes at once;
/// the try is admitted only if it came first.
#[test]
fn try_racing_reserve() {
    static MODEL: Model = Model {
        setup: &[],
        start: 100,
        threads: &[&[Op::Try(2)], &[Op::Reserve(1)]],
    };
    MODEL.check(|seen| {
        let admitted = matches!(seen[0][0], Seen::Try(Ok(Decision::Admitted { .. })));
        let Seen::Reserved(ticket) = seen[1][0] else {
            unreachable!()
        };
        // Second after the 2 permits: 2500 + 1500 ns.
        let expected = if admitted { 100 + 4000 } else { 100 };
        assert_eq!(ticket.act_at(), expected, "{seen:?}");
    });
}

/// A reservation cancelled while another races in: the cancel gives the permits back only
/// if nothing came after it.
#[test]
fn cancel_racing_reserve() {
    static MODEL: Model = Model {
        setup: &[(0, 1)],
        start: 0,
        threads: &[&[Op::Reserve(1), Op::Cancel], &[Op::Reserve(1)]],
    };
    MODEL.check(|_| {});
}

/// `set_rate` racing two admissions after an idle period: each admission is decided wholly
/// under the old or the new rate, and the stored permits are rescaled exactly once.
#[test]
fn set_rate_racing_admissions() {
    static MODEL: Model = Model {
        setup: &[(0, 3)],
        start: 9000,
        threads: &[&[Op::SetRate(500)], &[Op::Try(1)], &[Op::Try(2)]],
    };
    MODEL.check(|_| {});
}

/// A clock thread moving time while a try and a reservation race: each is decided at a
/// reading the clock could have shown.
#[test]
fn clock_thread_racing_try_and_reserve() {
    static MODEL: Model = Model {
        setup: &[(0, 1)],
        start: 1000,
        threads: &[&[Op::SetClock(5000)], &[Op::Try(1)], &[Op::Reserve(1)]],
    };
    MODEL.check(|_| {});
}

/// A cancel racing `set_rate`: the cancel either restores the state from before the
/// reservation under the old configuration (and `set_rate` then rescales it), or does
/// nothing because the reconfiguration came first.
#[test]
fn cancel_racing_set_rate() {
    static MODEL: Model = Model {
        setup: &[(0, 1)],
        start: 0,
        threads: &[&[Op::Reserve(2), Op::Cancel], &[Op::SetRate(500)]],
    };
    MODEL.check(|_| {});
}

/// A reservation and its cancel racing two `set_limit`s (which leave the state bits alone,
/// so only the ticket's epoch can tell the cancel a reconfiguration came between): the
/// permits come back only if both `set_limit`s came after the cancel or before the
/// reservation.
#[test]
fn cancel_racing_set_limits() {
    static MODEL: Model = Model {
        setup: &[(0, 1)],
        start: 0,
        threads: &[
            &[Op::Reserve(2), Op::Cancel],
            &[Op::SetLimit(5), Op::SetLimit(6)],
        ],
    };
    MODEL.check(|_| {});
}

/// A cancel racing a try at a later reading and a clock move.
#[test]
fn cancel_racing_try_and_clock() {
    static MODEL: Model = Model {
        setup: &[(0, 1)],
        start: 0,
        threads: &[
            &[Op::Reserve(1), Op::Cancel],
            &[Op::SetClock(2500), Op::Try(1)],
        ],
    };
    MODEL.check(|_| {});
}

/// `set_rate` after idleness racing a reservation and its cancel.
#[test]
fn set_rate_after_idle_racing_reserve_cancel() {
    static MODEL: Model = Model {
        setup: &[(0, 4)],
        start: 9000,
        threads: &[&[Op::SetRate(2000)], &[Op::Reserve(1), Op::Cancel]],
    };
    MODEL.check(|_| {});
}

/// A cancel racing `set_rate` and a try that relabels the cell under the new configuration:
/// the lock-free refund (no admin lock since `WarmUp` is a cell and a shared configuration)
/// lands only if no call has seen the cell under the new configuration, so it can take
/// effect before the change.
#[test]
fn cancel_racing_set_rate_and_a_relabelling_try() {
    static MODEL: Model = Model {
        setup: &[(0, 1)],
        start: 0,
        threads: &[
            &[Op::Reserve(2), Op::Cancel],
            &[Op::SetRate(500)],
            &[Op::Try(1)],
        ],
    };
    MODEL.check(|_| {});
}
