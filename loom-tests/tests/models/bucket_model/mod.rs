//! The shared harness of the bucket-family loom models: threads of a few calls race on one
//! limiter, and the outcomes must be those of some sequential run of the spec.
#![allow(dead_code)]

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::{Decision, Reservation, Ticket};
use ringlimit::spec::{LeakyBucketSpec, Spec, Step, TokenBucketSpec};
use ringlimit::{ConfigError, ExceedsLimit, LeakyBucket, Rate, Reserve, TokenBucket, WaitError};

/// One call of a model thread.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// `try_acquire()`.
    One,
    /// `try_acquire_n(n)`.
    Acquire(u64),
    /// `reserve_within(n, max_wait ns)`; the thread keeps the reservation.
    Reserve(u64, u64),
    /// Cancel the thread's last reservation.
    CancelLast,
    /// `set_rate` to one permit per this many ns.
    SetRate(u64),
    /// `set_limit` (burst, capacity, per-call limit).
    SetLimit(u64),
    /// `set_max_wait` (shapers) in ns.
    SetMaxWait(u64),
    /// Move the shared clock (forward only in these models).
    SetClock(u64),
    /// `available()`.
    Available,
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    One(bool),
    Acquire(Result<Decision, ExceedsLimit>),
    Reserve(Result<Ticket, WaitError>),
    Config(Result<(), ConfigError>),
    Available(u64),
    Done,
}

/// A lock-free bucket with its reconfigurations.
pub trait Bucket: Reserve + Send + Sync + 'static {
    fn set_rate(&self, rate: Rate) -> Result<(), ConfigError>;
    fn set_max_wait(&self, max_wait: Duration) -> Result<(), ConfigError>;
}

impl Bucket for TokenBucket<ManualClock> {
    fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        TokenBucket::set_rate(self, rate)
    }
    fn set_max_wait(&self, _: Duration) -> Result<(), ConfigError> {
        Err(ConfigError::NotAShaper)
    }
}

impl Bucket for LeakyBucket<ManualClock> {
    fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        LeakyBucket::set_rate(self, rate)
    }
    fn set_max_wait(&self, max_wait: Duration) -> Result<(), ConfigError> {
        LeakyBucket::set_max_wait(self, max_wait)
    }
}

/// A spec with the same reconfigurations.
pub trait BucketSpec: Spec + Clone + PartialEq + 'static {
    fn set_rate(&mut self, now: u64, rate: Rate) -> Result<(), ConfigError>;
    fn set_max_wait(&mut self, now: u64, max_wait: Duration) -> Result<(), ConfigError>;
}

impl BucketSpec for TokenBucketSpec {
    fn set_rate(&mut self, now: u64, rate: Rate) -> Result<(), ConfigError> {
        TokenBucketSpec::set_rate(self, now, rate)
    }
    fn set_max_wait(&mut self, _: u64, _: Duration) -> Result<(), ConfigError> {
        Err(ConfigError::NotAShaper)
    }
}

impl BucketSpec for LeakyBucketSpec {
    fn set_rate(&mut self, now: u64, rate: Rate) -> Result<(), ConfigError> {
        LeakyBucketSpec::set_rate(self, now, rate)
    }
    fn set_max_wait(&mut self, now: u64, max_wait: Duration) -> Result<(), ConfigError> {
        LeakyBucketSpec::set_max_wait(self, now, max_wait)
    }
}

pub fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

/// A model: `setup` calls run alone at clock `start` (origin 0), then `threads` race; then
/// `available()` is probed at the final clock time and at each of `probes` (ascending).
pub struct Model<B, S> {
    pub build: fn(ManualClock) -> B,
    pub spec: fn() -> S,
    pub start: u64,
    pub setup: &'static [Op],
    pub threads: &'static [&'static [Op]],
    pub probes: &'static [u64],
}

/// Runs one call on the limiter; `last` is the thread's last reservation.
fn call<'a, B: Bucket>(
    limiter: &'a B,
    clock: &ManualClock,
    last: &mut Option<Reservation<'a>>,
    op: Op,
) -> Seen {
    match op {
        Op::One => Seen::One(limiter.try_acquire()),
        Op::Acquire(n) => Seen::Acquire(limiter.try_acquire_n(n)),
        Op::Reserve(n, max_wait) => {
            let reserved = limiter.reserve_within(n, Duration::from_nanos(max_wait));
            let seen = Seen::Reserve(reserved.as_ref().map(|r| *r.ticket()).map_err(Clone::clone));
            *last = reserved.ok();
            seen
        }
        Op::CancelLast => {
            if let Some(reservation) = last.take() {
                reservation.cancel();
            }
            Seen::Done
        }
        Op::SetRate(period) => Seen::Config(limiter.set_rate(every(period))),
        Op::SetLimit(limit) => Seen::Config(limiter.set_limit(limit)),
        Op::SetMaxWait(ns) => Seen::Config(limiter.set_max_wait(Duration::from_nanos(ns))),
        Op::SetClock(time) => {
            clock.set_nanos(time);
            Seen::Done
        }
        Op::Available => Seen::Available(limiter.available()),
    }
}

impl<B: Bucket, S: BucketSpec> Model<B, S> {
    /// Explores every interleaving; checks linearizability, then `invariant` on what the
    /// threads saw.
    pub fn check(&'static self, invariant: impl Fn(&[Vec<Seen>]) + Sync + Send + 'static) {
        let invariant = std::sync::Arc::new(invariant);
        loom::model(move || {
            let clock = ManualClock::new();
            let limiter = Arc::new((self.build)(clock.clone()));
            clock.set_nanos(self.start);
            let mut setup_last = None;
            for &op in self.setup {
                call(&*limiter, &clock, &mut setup_last, op);
            }
            drop(setup_last);
            let handles: Vec<_> = self
                .threads
                .iter()
                .map(|ops| {
                    let (limiter, clock) = (limiter.clone(), clock.clone());
                    loom::thread::spawn(move || {
                        let mut last = None;
                        let seen: Vec<Seen> = ops
                            .iter()
                            .map(|&op| call(&*limiter, &clock, &mut last, op))
                            .collect();
                        drop(last);
                        seen
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

    /// Whether some order of the calls (each thread's in program order), each at a time
    /// the clock could have shown during it, makes the spec return what was seen and then
    /// the probed availabilities. A reconfiguration's time is no older than that of any call
    /// before it that wrote the state: it reads the clock after loading the word, which
    /// that call's CAS published with its reading (Release), so coherence of the clock's
    /// atomic forbids the older value.
    fn linearizable(&self, seen: &[Vec<Seen>], probed: &[(u64, u64)]) -> bool {
        let mut spec = (self.spec)();
        let mut last = None;
        for &op in self.setup {
            apply(&mut spec, self.start, &mut last, op);
        }
        let mut search = Search {
            threads: self.threads,
            seen,
            probed,
            history: vec![self.start],
            floor: self.start,
        };
        let n = self.threads.len();
        search.explore(spec, &mut vec![0; n], &mut vec![0; n], &mut vec![None; n])
    }
}

/// Runs one call on the spec at `now`.
fn apply<S: BucketSpec>(spec: &mut S, now: u64, last: &mut Option<Ticket>, op: Op) -> Seen {
    match op {
        Op::One => Seen::One(spec.decide(now, 1).is_ok_and(|d| d.is_admitted())),
        Op::Acquire(n) => Seen::Acquire(spec.decide(now, n)),
        Op::Reserve(n, max_wait) => {
            let reserved = spec
                .attempt(now, n, Duration::from_nanos(max_wait))
                .map(|step| match step {
                    Step::Granted(ticket) => ticket,
                    Step::RetryAfter(_) => unreachable!("buckets reserve"),
                });
            *last = reserved.as_ref().ok().copied();
            Seen::Reserve(reserved)
        }
        Op::CancelLast => {
            if let Some(ticket) = last.take() {
                spec.refund(now, &ticket);
            }
            Seen::Done
        }
        Op::SetRate(period) => Seen::Config(spec.set_rate(now, every(period))),
        Op::SetLimit(limit) => Seen::Config(spec.set_limit(now, limit)),
        Op::SetMaxWait(ns) => Seen::Config(spec.set_max_wait(now, Duration::from_nanos(ns))),
        Op::SetClock(_) => Seen::Done,
        Op::Available => Seen::Available(spec.available(now)),
    }
}

struct Search<'a> {
    threads: &'static [&'static [Op]],
    seen: &'a [Vec<Seen>],
    probed: &'a [(u64, u64)],
    /// Clock values set so far along the current order, oldest first.
    history: Vec<u64>,
    /// The latest time of a call so far along the current order that wrote the state: the
    /// earliest time a reconfiguration may read.
    floor: u64,
}

/// Whether `op` changes the configuration (and reads the clock after loading the word).
fn reconfigures(op: Op) -> bool {
    matches!(op, Op::SetRate(_) | Op::SetLimit(_) | Op::SetMaxWait(_))
}

impl Search<'_> {
    /// `next[t]`: thread t's next call; `since[t]`: the index in `history` of the clock
    /// value thread t last set itself (its later readings cannot be older); `last[t]`: its
    /// last reservation's ticket.
    fn explore<S: BucketSpec>(
        &mut self,
        spec: S,
        next: &mut Vec<usize>,
        since: &mut Vec<usize>,
        last: &mut Vec<Option<Ticket>>,
    ) -> bool {
        let threads = self.threads;
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
            next[t] += 1;
            let found = if let Op::SetClock(time) = op {
                self.history.push(time);
                let saved = since[t];
                since[t] = self.history.len() - 1;
                let found = self.explore(spec.clone(), next, since, last);
                since[t] = saved;
                self.history.pop();
                found
            } else {
                let mut readings = self.history[since[t]..].to_vec();
                if reconfigures(op) {
                    readings.retain(|&now| now >= self.floor);
                }
                readings.sort_unstable();
                readings.dedup();
                let (saved, floor) = (last[t], self.floor);
                let mut found = false;
                for now in readings {
                    let mut after = spec.clone();
                    let seen = apply(&mut after, now, &mut last[t], op);
                    if seen == self.seen[t][next[t] - 1] {
                        let wrote = after != spec || matches!(seen, Seen::Config(Ok(())));
                        if wrote {
                            self.floor = floor.max(now);
                        }
                        found = self.explore(after, next, since, last);
                        self.floor = floor;
                    }
                    last[t] = saved;
                    if found {
                        break;
                    }
                }
                found
            };
            next[t] -= 1;
            if found {
                return true;
            }
        }
        false
    }
}

/// Permits admitted by `try_acquire` and `try_acquire_n` calls.
pub fn admitted(seen: &[Vec<Seen>]) -> u64 {
    seen.iter()
        .flatten()
        .map(|s| match s {
            Seen::One(true) => 1,
            Seen::Acquire(Ok(Decision::Admitted { .. })) => 1,
            _ => 0,
        })
        .sum()
}

/// The `act_at` of every granted reservation, sorted.
pub fn acts(seen: &[Vec<Seen>]) -> Vec<(u64, u64)> {
    let mut acts: Vec<(u64, u64)> = seen
        .iter()
        .flatten()
        .filter_map(|s| match s {
            Seen::Reserve(Ok(ticket)) => Some((ticket.act_at(), ticket.permits())),
            _ => None,
        })
        .collect();
    acts.sort_unstable();
    acts
}
