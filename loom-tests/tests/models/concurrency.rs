//! Loom models of `ConcurrencyLimiter`: every interleaving of a few acquisitions, releases,
//! limit changes and blocking waits must be linearizable with respect to `ConcurrencySpec`,
//! and no waiter may sleep through the release that would serve it.
//!
//! Run (well under a minute):
//! `bash loom-tests/run concurrency::`

use std::sync::Arc;

use ringlimit::outcome::OwnedPermit;
use ringlimit::spec::{ConcurrencySpec, Spec};
use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};

/// One step of a model thread.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `try_acquire_n(n)`; a permit taken is kept (forgotten) to the end.
    Acquire(u64),
    /// Drops the permit of the given index in the setup's list (it holds `setup[i]` permits).
    Release(usize),
    SetLimit(u64),
    Available,
}

/// What a step returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Admitted,
    Refused,
    ExceedsLimit,
    Available(u64),
    Done,
}

/// A model: permits of `setup[i]` taken first, alone; then `threads` race.
struct Model {
    limit: u64,
    setup: &'static [u64],
    threads: &'static [&'static [Op]],
}

impl Model {
    /// Explores every interleaving; panics on a violation. Returns nothing.
    fn check(&'static self, invariant: impl Fn(&[Vec<Seen>]) + Send + Sync + 'static) {
        let invariant = Arc::new(invariant);
        loom::model(move || {
            let limiter = Arc::new(ConcurrencyLimiter::new(
                ConcurrencyQuota::new(self.limit).unwrap(),
            ));
            let mut held: Vec<Option<OwnedPermit>> = self
                .setup
                .iter()
                .map(|&n| Some(limiter.try_acquire_n_owned(n).unwrap().unwrap()))
                .collect();
            let handles: Vec<_> = self
                .threads
                .iter()
                .map(|ops| {
                    let limiter = limiter.clone();
                    // Each thread gets the setup permits it releases.
                    let mine: Vec<(usize, OwnedPermit)> = ops
                        .iter()
                        .filter_map(|op| match *op {
                            Op::Release(i) => held[i].take().map(|p| (i, p)),
                            _ => None,
                        })
                        .collect();
                    loom::thread::spawn(move || {
                        let mut mine = mine;
                        ops.iter()
                            .map(|op| match *op {
                                Op::Acquire(n) => match limiter.try_acquire_n(n) {
                                    Ok(Some(permit)) => {
                                        permit.forget();
                                        Seen::Admitted
                                    }
                                    Ok(None) => Seen::Refused,
                                    Err(_) => Seen::ExceedsLimit,
                                },
                                Op::Release(i) => {
                                    mine.retain(|(j, _)| *j != i);
                                    Seen::Done
                                }
                                Op::SetLimit(l) => {
                                    limiter.set_limit(l).unwrap();
                                    Seen::Done
                                }
                                Op::Available => Seen::Available(limiter.available()),
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let seen: Vec<Vec<Seen>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let end = (limiter.in_flight(), limiter.limit());
            assert!(
                self.linearizable(&seen, end),
                "no sequential run of the spec explains {seen:?} ending at (in_flight, limit) {end:?}"
            );
            invariant(&seen);
            drop(held);
        });
    }

    /// Whether some order of the steps (each thread's in program order) makes the spec return
    /// `seen` and end with `(in_flight, limit) = end`.
    fn linearizable(&self, seen: &[Vec<Seen>], end: (u64, u64)) -> bool {
        let mut spec = ConcurrencySpec::new(self.limit).unwrap();
        for &n in self.setup {
            assert!(spec.decide(0, n).unwrap().is_admitted());
        }
        self.explore(&spec, &mut vec![0; self.threads.len()], seen, end)
    }

    fn explore(
        &self,
        spec: &ConcurrencySpec,
        next: &mut [usize],
        seen: &[Vec<Seen>],
        end: (u64, u64),
    ) -> bool {
        if next
            .iter()
            .zip(self.threads)
            .all(|(&i, ops)| i == ops.len())
        {
            return (spec.in_flight(), spec.limit()) == end;
        }
        for t in 0..self.threads.len() {
            let Some(&op) = self.threads[t].get(next[t]) else {
                continue;
            };
            let mut spec = spec.clone();
            let got = match op {
                Op::Acquire(n) => match spec.decide(0, n) {
                    Ok(d) if d.is_admitted() => Seen::Admitted,
                    Ok(_) => Seen::Refused,
                    Err(_) => Seen::ExceedsLimit,
                },
                Op::Release(i) => {
                    spec.release(self.setup[i]);
                    Seen::Done
                }
                Op::SetLimit(l) => {
                    spec.set_limit(0, l).unwrap();
                    Seen::Done
                }
                Op::Available => Seen::Available(spec.available(0)),
            };
            if got != seen[t][next[t]] {
                continue;
            }
            next[t] += 1;
            let found = self.explore(&spec, next, seen, end);
            next[t] -= 1;
            if found {
                return true;
            }
        }
        false
    }
}

fn admitted(seen: &[Vec<Seen>]) -> usize {
    seen.iter()
        .flatten()
        .filter(|s| **s == Seen::Admitted)
        .count()
}

/// Two threads race for the last permit: exactly one wins, in every interleaving.
#[test]
fn two_threads_race_for_the_last_permit() {
    static MODEL: Model = Model {
        limit: 2,
        setup: &[1],
        threads: &[&[Op::Acquire(1)], &[Op::Acquire(1)]],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1, "{seen:?}"));
}

/// A release races two acquisitions (of 1 and of 2): never above the limit, and a refusal
/// only when the spec refuses at some order (e.g. the 1-permit one may not be refused after
/// the release while the 2-permit one did not take the room).
#[test]
fn a_release_races_acquisitions() {
    static MODEL: Model = Model {
        limit: 3,
        setup: &[2, 1],
        threads: &[&[Op::Release(0)], &[Op::Acquire(1)], &[Op::Acquire(2)]],
    };
    MODEL.check(|_| {});
}

/// `set_limit` (raise, then lower) races a 2-permit acquisition and a probe: each decision
/// is made wholly under one limit (a 2-permit request is never half-judged by limit 1).
#[test]
fn set_limit_races_acquire() {
    static MODEL: Model = Model {
        limit: 1,
        setup: &[1],
        threads: &[
            &[Op::SetLimit(3), Op::SetLimit(2)],
            &[Op::Acquire(2), Op::Available],
        ],
    };
    MODEL.check(|_| {});
}

/// A request for 2 races two requests for 1 on a limit of 2: never more than 2 admitted, and
/// the 2-permit one is refused only if a 1-permit one came first.
#[test]
fn two_permits_race_one_permit() {
    static MODEL: Model = Model {
        limit: 2,
        setup: &[],
        threads: &[&[Op::Acquire(2)], &[Op::Acquire(1), Op::Acquire(1)]],
    };
    MODEL.check(|seen| {
        let permits = match seen[0][0] {
            Seen::Admitted => 2,
            _ => 0,
        } + seen[1].iter().filter(|s| **s == Seen::Admitted).count();
        assert!(permits == 2, "{seen:?}");
    });
}

/// A thread blocked in `acquire_n(n)`; it returns the permits it got, and keeps them (for
/// ever) if `keep`, else releases them at once.
fn spawn_acquire(
    limiter: &Arc<ConcurrencyLimiter>,
    n: u64,
    keep: bool,
) -> loom::thread::JoinHandle<u64> {
    let limiter = limiter.clone();
    loom::thread::spawn(move || {
        let permit = limiter.acquire_n(n).unwrap();
        let permits = permit.permits();
        if keep {
            permit.forget();
        }
        permits
    })
}

/// A thread blocked in `acquire()` is woken by the release that frees its permit, whatever
/// the interleaving of its registration, listen and re-check with the release's CAS and
/// waiter-count read. A lost wake-up would leave it parked for ever: loom reports that as
/// a deadlock.
#[test]
fn a_blocked_waiter_is_woken_by_a_release() {
    loom::model(|| {
        let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap()));
        let held = limiter.try_acquire_owned().unwrap();
        let waiter = spawn_acquire(&limiter, 1, false);
        drop(held);
        assert_eq!(waiter.join().unwrap(), 1);
        assert_eq!(limiter.in_flight(), 0);
    });
}

/// A raised limit wakes a blocked waiter, as a release does.
#[test]
fn a_raised_limit_wakes_a_waiter() {
    loom::model(|| {
        let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap()));
        let held = limiter.try_acquire_owned().unwrap();
        let waiter = spawn_acquire(&limiter, 1, false);
        limiter.set_limit(2).unwrap();
        assert_eq!(waiter.join().unwrap(), 1);
        drop(held);
    });
}

/// One release of 2 permits serves two blocked single-permit waiters: it must wake two
/// listeners, not one (a plain `notify(1)` or a non-additional `notify(2)` that counts an
/// earlier, unconsumed notification would strand the second).
#[test]
fn one_release_of_two_serves_two_waiters() {
    loom::model(|| {
        let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(2).unwrap()));
        let held = limiter.try_acquire_n_owned(2).unwrap().unwrap();
        let waiters: Vec<_> = (0..2).map(|_| spawn_acquire(&limiter, 1, true)).collect();
        drop(held);
        for waiter in waiters {
            assert_eq!(waiter.join().unwrap(), 1);
        }
        assert_eq!(limiter.in_flight(), 2);
    });
}

/// A 2-permit waiter and a 1-permit waiter on a limit of 2 with both permits out; one of
/// them is released: the 1-permit waiter must get it. Had the release woken only the
/// 2-permit waiter (which cannot use it), the 1-permit one would sleep for ever; with a
/// multi-permit waiter registered, releases wake every waiter. The second permit is
/// released once the 1-permit waiter is done, and then the 2-permit waiter is served too.
#[test]
fn a_multi_permit_waiter_does_not_strand_a_single_one() {
    loom::model(|| {
        let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(2).unwrap()));
        let first = limiter.try_acquire_owned().unwrap();
        let second = limiter.try_acquire_owned().unwrap();
        let double = spawn_acquire(&limiter, 2, false);
        let single = spawn_acquire(&limiter, 1, false);
        drop(first);
        assert_eq!(single.join().unwrap(), 1);
        drop(second);
        assert_eq!(double.join().unwrap(), 2);
        assert_eq!(limiter.in_flight(), 0);
    });
}
