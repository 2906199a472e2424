//! The harness of the refund models: threads of a few calls (grants, refunds, admissions,
//! reconfigurations, clock moves) race on one limiter; every observed outcome, each
//! refund's returned count included, must be what some sequential run of the spec returns,
//! each call taking effect at a reading of the clock it could have made. Afterwards
//! `available()` is probed at the final clock time and at later `probes`, which exposes
//! what the ring (or `prev`, or the bucket's time) really holds.
//!
//! A refund's count is thus checked against what the *spec* restores for that grant at the
//! refund's linearization point, never trusted: a refund that lands in the wrong epoch and
//! reports itself is a state no spec order explains (the probes see it), unless the two
//! happen to coincide everywhere, in which case it is no bug.
//!
//! One documented deviation can be allowed per model (`ghost`): the sliding window's refund
//! that lands between a rollover's claim and its install may report `k` restored while the
//! ring keeps the unrefunded count (`guide::refunds`). It is replayed as a refund that
//! returns what the spec's refund returns but leaves the spec's state as if no refund had
//! happened (so it can only under-admit), and it must be followed at once, in the
//! sequential order, by the rollover: a request for permits at a reading in a later epoch.
#![allow(dead_code)]

pub mod window;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::{Admission, Decision, Grant, Ticket};
use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, SlidingWindowSpec, Spec, TokenBucketSpec,
};
use ringlimit::{
    ApproxSlidingWindow, ConfigError, ExceedsLimit, FixedWindow, Rate, RateLimiter, SlidingWindow,
    TokenBucket,
};

/// One call of a model thread (or of the setup, which runs alone first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `try_grant(n)`; a granted grant is pushed on the thread's stack.
    Grant(u64),
    /// `refund` of the grant made by setup call `i` (moved into this thread).
    RefundSetup(usize),
    /// `refund` of the thread's most recent unrefunded grant (nothing if none).
    RefundMine,
    /// `try_acquire()`.
    One,
    /// `try_acquire_n(n)`.
    Acquire(u64),
    /// `set_limit` (window limit, burst).
    SetLimit(u64),
    /// `set_rate` to one permit per this many ns (token bucket).
    SetRate(u64),
    /// Move the shared clock (forward only in these models).
    SetClock(u64),
    /// `available()`.
    Available,
}

impl Op {
    /// A request for permits: moves a window to its reading's epoch.
    fn requests(self) -> bool {
        matches!(self, Op::Grant(n) | Op::Acquire(n) if n > 0) || self == Op::One
    }
    fn reconfigures(self) -> bool {
        matches!(self, Op::SetLimit(_) | Op::SetRate(_))
    }
    fn refunds(self) -> bool {
        matches!(self, Op::RefundSetup(_) | Op::RefundMine)
    }
}

/// What `try_grant` returned, the grant reduced to what can be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    Granted {
        ticket: Ticket,
        remaining: u64,
    },
    Refused {
        available: u64,
        retry_after: Duration,
    },
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Grant(Result<Got, ExceedsLimit>),
    /// A refund of the grant with this ticket, and the permits it said it restored.
    Refund {
        ticket: Ticket,
        restored: u64,
    },
    One(bool),
    Acquire(Result<Decision, ExceedsLimit>),
    Config(Result<(), ConfigError>),
    Available(u64),
    Done,
}

impl Seen {
    /// Permits this call was handed (and kept unless refunded).
    pub fn handed(&self) -> u64 {
        match self {
            Seen::Grant(Ok(Got::Granted { ticket, .. })) => ticket.permits(),
            Seen::One(true) => 1,
            _ => 0,
        }
    }
    pub fn restored(&self) -> u64 {
        match self {
            Seen::Refund { restored, .. } => *restored,
            _ => 0,
        }
    }
}

fn got(admission: Result<Admission, ExceedsLimit>) -> (Result<Got, ExceedsLimit>, Option<Grant>) {
    match admission {
        Ok(Admission::Granted(grant)) => (
            Ok(Got::Granted {
                ticket: *grant.ticket(),
                remaining: grant.remaining(),
            }),
            Some(grant),
        ),
        Ok(Admission::Refused {
            available,
            retry_after,
        }) => (
            Ok(Got::Refused {
                available,
                retry_after,
            }),
            None,
        ),
        Err(e) => (Err(e), None),
    }
}

pub fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

/// A lock-free limiter under test.
pub trait Limiter: RateLimiter + Send + Sync + 'static {
    fn set_rate_every(&self, _period: u64) -> Result<(), ConfigError> {
        unreachable!("no rate to set")
    }
}
impl Limiter for SlidingWindow<ManualClock> {}
impl Limiter for FixedWindow<ManualClock> {}
impl Limiter for ApproxSlidingWindow<ManualClock> {}
impl Limiter for TokenBucket<ManualClock> {
    fn set_rate_every(&self, period: u64) -> Result<(), ConfigError> {
        self.set_rate(every(period))
    }
}

/// Its sequential spec.
///
/// Every refund reads the clock: a window's to find its epoch, a bucket's for the
/// `mark - now` bound (what is already refilled is never given back). Each is replayed at
/// every reading it could have made.
pub trait ModelSpec: Spec + Clone + 'static {
    /// Whether the limiter's refund reads the clock *after* loading the state it changes
    /// (buckets), as a reconfiguration does: its reading is then no older than that of any
    /// call whose write it saw, so the replay holds it to the same floor.
    const REFUND_READS_AFTER_LOAD: bool = false;
    /// Whether a call took the state from `before` to `self`, where the spec can tell
    /// (`None`: judged by the outcome). A bucket refund can move the state's time by less
    /// than a permit and report 0 restored, yet it wrote, at its reading.
    fn moved(&self, _before: &Self) -> Option<bool> {
        None
    }
    fn set_rate_every(&mut self, _now: u64, _period: u64) -> Result<(), ConfigError> {
        unreachable!("no rate to set")
    }
}
impl ModelSpec for SlidingWindowSpec {}
impl ModelSpec for FixedWindowSpec {}
impl ModelSpec for ApproxSlidingWindowSpec {}
impl ModelSpec for TokenBucketSpec {
    const REFUND_READS_AFTER_LOAD: bool = true;
    fn moved(&self, before: &Self) -> Option<bool> {
        Some(self != before)
    }
    fn set_rate_every(&mut self, now: u64, period: u64) -> Result<(), ConfigError> {
        self.set_rate(now, every(period))
    }
}

/// A model: `setup` calls run alone, each at its clock time; then the clock is set to
/// `start` and `threads` race; then `available()` is probed at the final clock time and at
/// each of `probes` (ascending).
pub struct Model<L, S> {
    pub build: fn(&ManualClock) -> L,
    pub spec: fn() -> S,
    /// Nanoseconds per epoch (the grant marks of windows are epochs), for the ghost rule.
    pub width: u64,
    /// Whether the documented sliding-window deviation may explain a refund.
    pub ghost: bool,
    pub setup: &'static [(u64, Op)],
    pub start: u64,
    pub threads: &'static [&'static [Op]],
    pub probes: &'static [u64],
}

/// Executions explored, and those only the documented deviation explains, per model run.
pub struct Tally {
    pub executions: AtomicUsize,
    pub ghosts: AtomicUsize,
}

impl Tally {
    pub const fn new() -> Self {
        Self {
            executions: AtomicUsize::new(0),
            ghosts: AtomicUsize::new(0),
        }
    }
}

fn call<L: Limiter>(
    limiter: &L,
    clock: &ManualClock,
    setup: &mut [Option<Grant>],
    mine: &mut Vec<Grant>,
    op: Op,
) -> Seen {
    let refund = |grant: Grant| {
        let ticket = *grant.ticket();
        Seen::Refund {
            ticket,
            restored: limiter.refund(grant),
        }
    };
    match op {
        Op::Grant(n) => {
            let (seen, grant) = got(limiter.try_grant(n));
            mine.extend(grant);
            Seen::Grant(seen)
        }
        Op::RefundSetup(i) => refund(setup[i].take().expect("a setup grant, refunded once")),
        Op::RefundMine => mine.pop().map_or(Seen::Done, refund),
        Op::One => Seen::One(limiter.try_acquire()),
        Op::Acquire(n) => Seen::Acquire(limiter.try_acquire_n(n)),
        Op::SetLimit(limit) => Seen::Config(limiter.set_limit(limit)),
        Op::SetRate(period) => Seen::Config(limiter.set_rate_every(period)),
        Op::SetClock(time) => {
            clock.set_nanos(time);
            Seen::Done
        }
        Op::Available => Seen::Available(limiter.available()),
    }
}

/// The spec's answer to `op` at `now`; a refund gives back the ticket the limiter's grant
/// carried (the replay has already matched that grant's ticket with the spec's).
fn apply<S: ModelSpec>(spec: &mut S, now: u64, op: Op, seen: &Seen) -> Seen {
    match op {
        Op::Grant(n) => {
            let (seen, _grant) = got(spec.try_grant(now, n));
            Seen::Grant(seen)
        }
        Op::RefundSetup(_) | Op::RefundMine => match seen {
            Seen::Refund { ticket, .. } => Seen::Refund {
                ticket: *ticket,
                restored: spec.refund(now, ticket),
            },
            _ => Seen::Done,
        },
        Op::One => Seen::One(spec.decide(now, 1).is_ok_and(|d| d.is_admitted())),
        Op::Acquire(n) => Seen::Acquire(spec.decide(now, n)),
        Op::SetLimit(limit) => Seen::Config(spec.set_limit(now, limit)),
        Op::SetRate(period) => Seen::Config(spec.set_rate_every(now, period)),
        Op::SetClock(_) => Seen::Done,
        Op::Available => Seen::Available(spec.available(now)),
    }
}

impl<L: Limiter, S: ModelSpec> Model<L, S> {
    /// Explores every interleaving; checks that the spec explains it, then `invariant` on
    /// what the threads saw (and the setup's outcomes).
    pub fn check(
        &'static self,
        tally: &'static Tally,
        invariant: impl Fn(&[Seen], &[Vec<Seen>]) + Sync + Send + 'static,
    ) {
        let invariant = std::sync::Arc::new(invariant);
        loom::model(move || {
            let clock = ManualClock::new();
            let limiter = Arc::new((self.build)(&clock));
            let mut held: Vec<Option<Grant>> = Vec::new();
            let mut setup_seen = Vec::new();
            for &(time, op) in self.setup {
                clock.set_nanos(time);
                let mut mine = Vec::new();
                setup_seen.push(call(&*limiter, &clock, &mut held, &mut mine, op));
                held.push(mine.pop());
            }
            clock.set_nanos(self.start);
            let handles: Vec<_> = self
                .threads
                .iter()
                .map(|ops| {
                    // The setup grants this thread refunds move into it.
                    let mut setup: Vec<Option<Grant>> = (0..held.len()).map(|_| None).collect();
                    for op in ops.iter() {
                        if let Op::RefundSetup(i) = *op {
                            setup[i] = held[i].take();
                        }
                    }
                    let (limiter, clock) = (limiter.clone(), clock.clone());
                    loom::thread::spawn(move || {
                        let mut mine = Vec::new();
                        ops.iter()
                            .map(|&op| call(&*limiter, &clock, &mut setup, &mut mine, op))
                            .collect::<Vec<Seen>>()
                    })
                })
                .collect();
            let seen: Vec<Vec<Seen>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let mut probed = vec![(clock.now_nanos(), limiter.available())];
            for &time in self.probes {
                clock.set_nanos(time);
                probed.push((time, limiter.available()));
            }
            let explained = self.explain(&setup_seen, &seen, &probed);
            assert!(
                explained.is_some(),
                "no sequential run of the spec explains setup {setup_seen:?}, threads {seen:?}, \
                 then available (time, permits) {probed:?}"
            );
            tally.executions.fetch_add(1, Ordering::Relaxed);
            if explained == Some(true) {
                tally.ghosts.fetch_add(1, Ordering::Relaxed);
            }
            invariant(&setup_seen, &seen);
        });
    }

    /// `Some(ghost)` if some order of the calls (each thread's in program order), each at a
    /// reading the clock could have shown, makes the spec return what was seen and then the
    /// probed availabilities; `ghost` tells whether it needed the documented deviation.
    fn explain(&self, setup: &[Seen], seen: &[Vec<Seen>], probed: &[(u64, u64)]) -> Option<bool> {
        let mut spec = (self.spec)();
        for (&(time, op), observed) in self.setup.iter().zip(setup) {
            let expected = apply(&mut spec, time, op, observed);
            assert_eq!(&expected, observed, "setup call {op:?} at {time}");
        }
        let mut search = Search {
            model: self,
            seen,
            probed,
            history: vec![self.start],
            floor: self.start,
            pending: None,
            ghosts: 0,
        };
        let n = self.threads.len();
        if search.explore(spec, &mut vec![0; n], &mut vec![0; n]) {
            // The search tries the exact replay of every refund first.
            return Some(search.ghosts > 0);
        }
        None
    }
}

struct Search<'a, L, S> {
    model: &'a Model<L, S>,
    seen: &'a [Vec<Seen>],
    probed: &'a [(u64, u64)],
    /// Clock values set so far along the current order, oldest first.
    history: Vec<u64>,
    /// The latest reading so far along the order of a call that wrote the state: the
    /// earliest a reconfiguration (which reads the clock after loading the state) may read.
    floor: u64,
    /// A ghost refund of a grant of this epoch was just replayed: the next call must be the
    /// rollover past it.
    pending: Option<u64>,
    /// Ghost refunds on the current path.
    ghosts: usize,
}

impl<L: Limiter, S: ModelSpec> Search<'_, L, S> {
    fn explore(&mut self, spec: S, next: &mut Vec<usize>, since: &mut Vec<usize>) -> bool {
        let threads = self.model.threads;
        if (0..threads.len()).all(|t| next[t] == threads[t].len()) {
            return self.pending.is_none()
                && self
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
                let found = self.explore(spec.clone(), next, since);
                since[t] = saved;
                self.history.pop();
                found
            } else {
                self.step(&spec, t, op, next, since)
            };
            next[t] -= 1;
            if found {
                return true;
            }
        }
        false
    }

    /// Tries thread `t`'s call `op` next, at each reading it could have made.
    fn step(
        &mut self,
        spec: &S,
        t: usize,
        op: Op,
        next: &mut Vec<usize>,
        since: &mut Vec<usize>,
    ) -> bool {
        let observed = &self.seen[t][next[t] - 1];
        let mut readings = self.history[since[t]..].to_vec();
        if op.reconfigures() || (op.refunds() && S::REFUND_READS_AFTER_LOAD) {
            readings.retain(|&now| now >= self.floor);
        }
        readings.sort_unstable();
        readings.dedup();
        let (floor, pending) = (self.floor, self.pending);
        for now in readings {
            if let Some(epoch) = pending {
                // Only the rollover past the ghost's epoch may come next.
                if !(op.requests() && now / self.model.width > epoch) {
                    continue;
                }
                self.pending = None;
            }
            let mut after = spec.clone();
            let expected = apply(&mut after, now, op, observed);
            if expected == *observed {
                let writes = after.moved(spec).unwrap_or_else(|| {
                    observed.handed() > 0
                        || observed.restored() > 0
                        || matches!(observed, Seen::Config(Ok(())))
                });
                if writes {
                    self.floor = floor.max(now);
                }
                let found = self.explore(after, next, since);
                self.floor = floor;
                if found {
                    self.pending = pending;
                    return true;
                }
            }
            // The documented deviation: the refund reports what the spec restores, but the
            // state stays unrefunded, and the rollover past its epoch comes next.
            if self.model.ghost && pending.is_none() && op.refunds() && observed.restored() > 0 {
                if let (true, Seen::Refund { ticket, .. }) = (expected == *observed, observed) {
                    self.pending = Some(u64::try_from(ticket.mark()).unwrap());
                    self.ghosts += 1;
                    let found = self.explore(spec.clone(), next, since);
                    self.ghosts -= 1;
                    if found {
                        self.ghosts += 1;
                        self.pending = pending;
                        return true;
                    }
                }
            }
            self.pending = pending;
        }
        false
    }
}

/// Permits handed out in the setup and by the threads.
pub fn handed(setup: &[Seen], seen: &[Vec<Seen>]) -> u64 {
    setup
        .iter()
        .chain(seen.iter().flatten())
        .map(Seen::handed)
        .sum()
}

/// Permits the refunds said they restored.
pub fn restored(seen: &[Vec<Seen>]) -> u64 {
    seen.iter().flatten().map(Seen::restored).sum()
}
