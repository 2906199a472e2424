//! Shared harness of the bucket-family tests: random traces run against a lock-free bucket
//! and its spec, every result compared.
#![allow(dead_code)]

use std::time::Duration;

use proptest::prelude::*;
use ringlimit::cell::Layout;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::{Reservation, Ticket};
use ringlimit::spec::Attempt;
use ringlimit::spec::{LeakyBucketSpec, Spec, Step, TokenBucketSpec};
use ringlimit::Wait;
use ringlimit::{ConfigError, LeakyBucket, Rate, Reserve, TokenBucket, WaitError};

/// The reconfigurations a bucket has beyond `set_limit`.
pub trait Bucket: Reserve {
    fn set_rate(&self, rate: Rate) -> Result<(), ConfigError>;
    fn set_max_wait(&self, max_wait: Duration) -> Result<(), ConfigError>;
}

impl<L: Layout> Bucket for TokenBucket<ManualClock, L> {
    fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        TokenBucket::set_rate(self, rate)
    }
    fn set_max_wait(&self, _: Duration) -> Result<(), ConfigError> {
        Err(ConfigError::NotAShaper)
    }
}

impl<L: Layout> Bucket for LeakyBucket<ManualClock, L> {
    fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        LeakyBucket::set_rate(self, rate)
    }
    fn set_max_wait(&self, max_wait: Duration) -> Result<(), ConfigError> {
        LeakyBucket::set_max_wait(self, max_wait)
    }
}

/// The same reconfigurations on a spec.
pub trait BucketSpec: Spec {
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

/// One step of a trace.
#[derive(Debug, Clone)]
pub enum Op {
    Advance(u64),
    Back(u64),
    /// `try_acquire_n(raw % (limit + 2))`, or `u64::MAX` permits when `raw` is 0.
    Acquire(u64),
    One,
    Available,
    /// `reserve_within` (or `attempt` when the flag is set) for `raw % (limit + 2)` permits.
    Reserve(u64, Duration, bool),
    /// `try_acquire_for(raw % (limit + 2), timeout)`: sleeps on the manual clock.
    Wait(u64, Duration),
    /// Cancel the outstanding reservation at this index (modulo their number).
    Cancel(usize),
    SetLimit(u64),
    SetRate(u64),
    SetMaxWait(Duration),
}

/// Periods worth trying, up to the longest a `Rate` allows.
pub fn period() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1u64),
        2..20u64,
        Just(1000),
        Just(1_000_000),
        Just(100_000_000),
        Just(ringlimit::Rate::MAX_PERIOD_NANOS),
    ]
}

fn duration(period: u64) -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        (0..=4 * period).prop_map(Duration::from_nanos),
        Just(Duration::MAX),
        Just(Duration::from_nanos(ringlimit::TokenBucket::MAX_SPAN_NANOS)),
        Just(Duration::from_nanos(
            ringlimit::TokenBucket::MAX_SPAN_NANOS + 1
        )),
    ]
}

pub fn op(period: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..=2 * period).prop_map(Op::Advance),
        1 => prop_oneof![Just(1u64 << 32), Just(1 << 40), (0..=50 * period)].prop_map(Op::Advance),
        1 => (0..=3 * period).prop_map(Op::Back),
        6 => any::<u64>().prop_map(Op::Acquire),
        4 => Just(Op::One),
        2 => Just(Op::Available),
        4 => (any::<u64>(), duration(period), any::<bool>()).prop_map(|(n, w, a)| Op::Reserve(n, w, a)),
        2 => (any::<u64>(), duration(period)).prop_map(|(n, w)| Op::Wait(n, w)),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => prop_oneof![0..=9u64, Just(u64::MAX), Just(1 << 40)].prop_map(Op::SetLimit),
        1 => self::period().prop_map(Op::SetRate),
        1 => duration(period).prop_map(Op::SetMaxWait),
    ]
}

/// Where a trace's clock starts: 0, anywhere, or close to the end of time.
pub fn start() -> impl Strategy<Value = u64> {
    any::<u64>().prop_map(|s| match s % 4 {
        0 => 0,
        1 => s % (1 << 40),
        2 => u64::MAX - s % (1 << 20),
        _ => s,
    })
}

fn permits(raw: u64, limit: u64) -> u64 {
    match raw {
        0 => u64::MAX,
        raw => raw % limit.saturating_add(2),
    }
}

fn granted(step: Result<Step, WaitError>) -> Result<Ticket, WaitError> {
    step.map(|step| match step {
        Step::Granted(ticket) => ticket,
        Step::RetryAfter(after) => panic!("a bucket spec asked to retry after {after:?}"),
    })
}

/// Runs `ops` on `limiter` (reading `clock`) and on `spec`, asserting every result equal.
pub fn run_trace<B: Bucket, S: BucketSpec>(
    limiter: &B,
    spec: &mut S,
    clock: &ManualClock,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut held: Vec<(Reservation<'_>, Ticket)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let now = clock.now_nanos();
        let limit = spec.limit();
        match *op {
            Op::Advance(ns) => clock.advance_nanos(ns),
            Op::Back(ns) => clock.set_nanos(now.saturating_sub(ns)),
            Op::Acquire(raw) => {
                let n = permits(raw, limit);
                prop_assert_eq!(
                    limiter.try_acquire_n(n),
                    spec.decide(now, n),
                    "step {} {:?}",
                    step,
                    op
                );
            }
            Op::One => {
                let want = spec.decide(now, 1).is_ok_and(|d| d.is_admitted());
                prop_assert_eq!(limiter.try_acquire(), want, "step {}", step);
            }
            Op::Available => {
                prop_assert_eq!(limiter.available(), spec.available(now), "step {}", step)
            }
            Op::Reserve(raw, max_wait, through_attempt) => {
                let n = permits(raw, limit);
                let got = if through_attempt {
                    limiter.attempt(n, max_wait).map(|a| match a {
                        Attempt::Granted(r) => r,
                        Attempt::RetryAfter(after) => {
                            panic!("a bucket asked to retry after {after:?}")
                        }
                    })
                } else {
                    limiter.reserve_within(n, max_wait)
                };
                let want = granted(spec.attempt(now, n, max_wait));
                prop_assert_eq!(
                    got.as_ref().map(|r| *r.ticket()).map_err(Clone::clone),
                    want.clone(),
                    "step {} {:?}",
                    step,
                    op
                );
                if let (Ok(reservation), Ok(ticket)) = (got, want) {
                    held.push((reservation, ticket));
                }
            }
            Op::Wait(raw, timeout) => {
                let n = permits(raw, limit);
                let deadline =
                    now.saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
                let want = match granted(spec.attempt(now, n, Duration::from_nanos(deadline - now)))
                {
                    Ok(ticket) => Ok(Duration::from_nanos(ticket.act_at().saturating_sub(now))),
                    Err(WaitError::Timeout { retry_after, .. }) => Err(WaitError::Timeout {
                        retry_after,
                        timeout,
                    }),
                    Err(other) => Err(other),
                };
                prop_assert_eq!(
                    limiter.try_acquire_for(n, timeout),
                    want.clone(),
                    "step {} {:?}",
                    step,
                    op
                );
                let slept = want.map_or(0, |waited| waited.as_nanos() as u64);
                prop_assert_eq!(
                    clock.now_nanos(),
                    now + slept,
                    "step {}: slept exactly the wait",
                    step
                );
            }
            Op::Cancel(index) if !held.is_empty() => {
                let (reservation, ticket) = held.remove(index % held.len());
                reservation.cancel();
                spec.refund(now, &ticket);
            }
            Op::Cancel(_) => {}
            Op::SetLimit(l) => {
                prop_assert_eq!(
                    limiter.set_limit(l),
                    spec.set_limit(now, l),
                    "step {} {:?}",
                    step,
                    op
                );
            }
            Op::SetRate(period) => {
                let rate = Rate::every(Duration::from_nanos(period)).unwrap();
                prop_assert_eq!(
                    limiter.set_rate(rate),
                    spec.set_rate(now, rate),
                    "step {} {:?}",
                    step,
                    op
                );
            }
            Op::SetMaxWait(max_wait) => {
                prop_assert_eq!(
                    limiter.set_max_wait(max_wait),
                    spec.set_max_wait(now, max_wait),
                    "step {} {:?}",
                    step,
                    op
                );
            }
        }
        prop_assert_eq!(limiter.limit(), spec.limit(), "step {} {:?}", step, op);
    }
    Ok(())
}

/// The admissions `(before, after)` (clock readings around each admitting call) of a
/// multi-threaded run never exceed `burst + ⌊(b - a)/T⌋` among the calls made wholly within
/// `[a, b]`, for `a` and `b` ranging over the readings themselves.
pub fn assert_within_gcra_bound(admitted: &mut [(u64, u64, u64)], burst: u64, period: u64) {
    admitted.sort_by_key(|&(_, after, _)| after);
    let starts: Vec<u64> = {
        let mut starts: Vec<u64> = admitted.iter().map(|&(before, _, _)| before).collect();
        starts.sort_unstable();
        starts.dedup();
        let step = (starts.len() / 300).max(1);
        starts.into_iter().step_by(step).collect()
    };
    for &a in &starts {
        let mut count = 0;
        for &(before, after, n) in admitted.iter() {
            if before < a {
                continue;
            }
            count += n;
            let bound = burst + (after - a) / period;
            assert!(
                count <= bound,
                "{count} permits admitted within [{a}, {after}], more than {bound}"
            );
        }
    }
}

/// A thread moving `clock` forward by `step` ns at a time until dropped.
pub struct Ticker {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    pub fn start(clock: &ManualClock, step: u64) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let thread = {
            let (clock, done) = (clock.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    clock.advance_nanos(step);
                    std::thread::yield_now();
                }
            })
        };
        Self {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
