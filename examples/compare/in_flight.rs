//! The concurrency limiter under the harness: a call is `try_acquire` and the drop of its
//! permit, and an audit sample tracks how many permits are held at once.
//!
//! Counting acquisitions says nothing about an in-flight bound C, so the audit uses a side
//! counter: a call that got a permit increments it *after* acquiring, records the maximum,
//! and decrements it *before* releasing. Each call's stretch on the side counter lies inside
//! the stretch its permit was really held, so the side counter never exceeds the number of
//! permits really held: a maximum above C proves over-admission (it may miss a brief one,
//! never report a false one). Timed samples skip the side counter, which would add two
//! contended RMWs to every call.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ringlimit::clock::{Clock, TscClock};
use ringlimit::ConcurrencyLimit;

use crate::harness::Contender;

/// What the harness needs from a concurrency limiter: one permit held around a closure, and
/// permits taken for good.
pub trait Permits: Send + Sync + 'static {
    /// Takes one permit, runs `held` while holding it, then releases it; `false` (and
    /// `held` not run) when refused.
    fn with_permit(&self, held: impl FnOnce()) -> bool;
    /// Takes `n` permits and never gives them back (the deny scenario); `false` if refused.
    fn hold(&self, n: u64) -> bool;
}

impl<L: ConcurrencyLimit + Send + Sync + 'static> Permits for L {
    #[inline]
    fn with_permit(&self, held: impl FnOnce()) -> bool {
        match self.try_acquire() {
            Some(_permit) => {
                held();
                true
            }
            None => false,
        }
    }

    fn hold(&self, n: u64) -> bool {
        match self.try_acquire_n(n) {
            Ok(Some(permit)) => {
                permit.forget();
                true
            }
            _ => false,
        }
    }
}

/// A concurrency limiter as a [`Contender`], with the side counter when auditing.
pub struct InFlight<P> {
    limiter: P,
    /// `Some` in an audit sample: permits held now, and the most held at once.
    side: Option<(AtomicU64, AtomicU64)>,
    /// Read only to measure the run's span (the limiter has no clock).
    clock: TscClock,
}

impl<P: Permits> InFlight<P> {
    /// `limiter` with `hold` permits taken for good first (a fresh limiter of limit at
    /// least `hold` gives them; if not, none are held and the deny rows show admissions);
    /// the side counter if `audit`.
    pub fn new(limiter: P, hold: u64, audit: bool) -> Self {
        let held = if hold > 0 && limiter.hold(hold) {
            hold
        } else {
            0
        };
        Self {
            limiter,
            side: audit.then(|| (AtomicU64::new(held), AtomicU64::new(held))),
            clock: TscClock::new(),
        }
    }
}

impl<P: Permits> Contender for InFlight<P> {
    #[inline]
    fn try_acquire(&self) -> bool {
        match &self.side {
            None => self.limiter.with_permit(|| {
                std::hint::black_box(());
            }),
            Some((now, most)) => self.limiter.with_permit(|| {
                // Relaxed (all three): the permit orders them between threads. If B's
                // acquisition reads A's release (Release, then Acquire, in every limiter
                // here), A's decrement happens before B's increment, so B cannot see A's
                // call still counted.
                let held = now.fetch_add(1, Relaxed) + 1;
                // Relaxed: as above.
                most.fetch_max(held, Relaxed);
                // Relaxed: as above.
                now.fetch_sub(1, Relaxed);
            }),
        }
    }

    fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }

    fn held_max(&self) -> Option<u64> {
        // Relaxed: read after the workers were joined.
        self.side.as_ref().map(|(_, most)| most.load(Relaxed))
    }
}
