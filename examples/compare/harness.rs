//! Timing one sample: T threads hammer one freshly built limiter for a fixed duration.
//!
//! The threads are spawned first and wait on a [`Barrier`]; the timed region runs from the
//! barrier's release to the last thread's stop, so thread spawn is never timed. The main
//! thread sleeps through the run and then raises a stop flag, which the workers check every
//! [`BATCH`] calls.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ringlimit::clock::{Clock, TscClock};
use ringlimit::RateLimiter;

/// Calls between two looks at the stop flag.
pub const BATCH: u64 = 1024;

/// Prefill stops after this many admissions even if the limiter never refuses.
const PREFILL_CAP: u64 = 1 << 24;

/// What the harness needs from a limiter under test.
pub trait Contender: Send + Sync + 'static {
    /// One admission attempt for one permit.
    fn try_acquire(&self) -> bool;
    /// The time on the clock the limiter decides with, in ns since its origin.
    fn now_nanos(&self) -> u64;
    /// For a concurrency limiter in an audit sample: the most permits held at once.
    fn held_max(&self) -> Option<u64> {
        None
    }
}

/// A ringlimit limiter (lock-free or a spec under a mutex), through its [`RateLimiter`] trait.
pub struct Ringlimit<L>(pub L);

impl<L: RateLimiter + Send + Sync + 'static> Contender for Ringlimit<L> {
    // Always inlined into the worker's loop, as governor's `check` is (LLVM inlined the
    // bucket family's call by itself until its hot path grew a few instructions; a call per
    // attempt would time the harness, not the limiter).
    #[inline(always)]
    fn try_acquire(&self) -> bool {
        self.0.try_acquire()
    }
    fn now_nanos(&self) -> u64 {
        self.0.clock().now_nanos()
    }
}

/// `governor`'s direct (unkeyed) GCRA limiter on its default quanta clock.
pub struct Governor {
    limiter: governor::DefaultDirectRateLimiter,
    /// Read only to measure the run's span; governor's own clock is quanta's too.
    clock: TscClock,
}

impl Governor {
    /// A GCRA with one permit every `period` and a burst of `burst`.
    pub fn new(period: Duration, burst: std::num::NonZeroU32) -> Option<Self> {
        let quota = governor::Quota::with_period(period)?.allow_burst(burst);
        Some(Self {
            clock: TscClock::new(),
            limiter: governor::RateLimiter::direct(quota),
        })
    }
}

impl Contender for Governor {
    #[inline(always)]
    fn try_acquire(&self) -> bool {
        self.limiter.check().is_ok()
    }
    fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }
}

/// The stretch of the limiter's clock a sample covered, prefill included, in ns: every
/// clock reading behind an admission lies in `first ..= last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub first: u64,
    pub last: u64,
}

/// What one sample measured.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `try_acquire` calls in the timed region, over all threads.
    pub calls: u64,
    /// Admissions among them.
    pub admitted: u64,
    /// Admissions while prefilling, before the timed region.
    pub prefilled: u64,
    /// From the barrier's release to the last thread's stop.
    pub elapsed: Duration,
    /// The limiter-clock span of prefill and timed region together.
    pub span: Span,
    /// With [`Plan::audit`]: each admission's `(before, after)` clock readings, between
    /// which the limiter read its clock and decided. Empty otherwise.
    pub admissions: Vec<(u64, u64)>,
    /// [`Contender::held_max`], read after the run.
    pub held: Option<u64>,
}

impl Sample {
    /// Millions of calls per second, all threads together.
    pub fn mops(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64().max(1e-9) / 1e6
    }
}

/// How a sample is run.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub threads: usize,
    pub duration: Duration,
    /// Take permits until the first refusal before timing (the deny scenario).
    pub exhaust: bool,
    /// Read the limiter's clock between every two calls and log each admission's readings
    /// (the at-limit audit; the throughput of such a sample is not reported).
    pub audit: bool,
}

impl Plan {
    /// Builds a limiter with `build` and runs one sample on it.
    pub fn run<C: Contender, E>(&self, build: impl FnOnce() -> Result<C, E>) -> Result<Sample, E> {
        Ok(self.sample(Arc::new(build()?)))
    }

    fn sample<C: Contender>(&self, limiter: Arc<C>) -> Sample {
        let before_prefill = limiter.now_nanos();
        let mut prefilled = 0;
        while self.exhaust && prefilled < PREFILL_CAP && limiter.try_acquire() {
            prefilled += 1;
        }
        let barrier = Arc::new(Barrier::new(self.threads + 1));
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..self.threads)
            .map(|_| {
                let (limiter, barrier, stop) = (limiter.clone(), barrier.clone(), stop.clone());
                let audit = self.audit;
                std::thread::spawn(move || worker(&*limiter, &barrier, &stop, audit))
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        std::thread::sleep(self.duration);
        // Relaxed: the flag carries no data; the joins below synchronize the results.
        stop.store(true, Ordering::Relaxed);
        // Without a prefill nothing is admitted before the workers' first readings, so the
        // span starts at the earliest of them (thread spawn does not widen it).
        let first = if prefilled > 0 {
            before_prefill
        } else {
            u64::MAX
        };
        let mut sample = Sample {
            calls: 0,
            admitted: 0,
            prefilled,
            elapsed: Duration::ZERO,
            span: Span { first, last: 0 },
            admissions: Vec::new(),
            held: None,
        };
        for handle in workers {
            let run = handle.join().expect("a benchmark thread panicked");
            sample.calls += run.calls;
            sample.admitted += run.admitted;
            sample.elapsed = sample
                .elapsed
                .max(run.stopped.saturating_duration_since(start));
            sample.span.first = sample.span.first.min(run.first);
            sample.span.last = sample.span.last.max(run.last);
            sample.admissions.extend(run.admissions);
        }
        sample.span.last = sample.span.last.max(sample.span.first);
        sample.held = limiter.held_max();
        sample
    }
}

/// One worker's counts.
struct Run {
    calls: u64,
    admitted: u64,
    first: u64,
    last: u64,
    stopped: Instant,
    admissions: Vec<(u64, u64)>,
}

fn worker<C: Contender>(limiter: &C, barrier: &Barrier, stop: &AtomicBool, audit: bool) -> Run {
    barrier.wait();
    let first = limiter.now_nanos();
    let (mut calls, mut admitted) = (0, 0);
    let mut admissions = Vec::new();
    let mut before = first;
    loop {
        if audit {
            for _ in 0..BATCH {
                let ok = limiter.try_acquire();
                let after = limiter.now_nanos();
                if ok {
                    admissions.push((before, after));
                }
                before = after;
            }
            admitted = admissions.len() as u64;
        } else {
            for _ in 0..BATCH {
                admitted += u64::from(std::hint::black_box(limiter.try_acquire()));
            }
        }
        calls += BATCH;
        // Relaxed: only the flag's own value matters.
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let stopped = Instant::now();
    Run {
        calls,
        admitted,
        first,
        last: limiter.now_nanos(),
        stopped,
        admissions,
    }
}
