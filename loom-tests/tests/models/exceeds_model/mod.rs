//! The shared model of a call ending in `ExceedsLimit`: thread
//! A `set_limit(1)` races thread B `try_acquire_n(2)` at a later epoch than the 2 permits
//! admitted before; after both joined, the clock goes back and `available()` and
//! `try_acquire_n(1)` must be what the spec gives after B's outcome, in one of the two
//! orders of A and B (B rolling the window under the old limit and then returning
//! `ExceedsLimit` under the new one is what neither order explains).
#![allow(dead_code)]

use loom::sync::Arc;
use loom::thread;
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::spec::Spec;
use ringlimit::{ExceedsLimit, RateLimiter};

/// B's outcome, then `available()` and `try_acquire_n(1)` at the clock set back.
pub type Observed = (
    Result<Decision, ExceedsLimit>,
    u64,
    Result<Decision, ExceedsLimit>,
);

/// Clock readings: the first admission of 2, the race, and the probes after it.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub first: u64,
    pub race: u64,
    pub back: u64,
}

impl Scenario {
    /// What the spec observes with A ordered before B (`a_first`) or after it.
    pub fn spec<S: Spec>(self, mut spec: S, a_first: bool) -> Observed {
        assert!(spec.decide(self.first, 2).unwrap().is_admitted());
        if a_first {
            spec.set_limit(self.race, 1).unwrap();
        }
        let b = spec.decide(self.race, 2);
        if !a_first {
            spec.set_limit(self.race, 1).unwrap();
        }
        let available = spec.available(self.back);
        (b, available, spec.decide(self.back, 1))
    }

    /// Explores every interleaving of A and B on a limiter from `build`.
    pub fn check<L, S>(
        self,
        build: impl Fn(&ManualClock) -> L + Sync + Send + 'static,
        spec: impl Fn() -> S,
    ) where
        L: RateLimiter + Send + Sync + 'static,
        S: Spec,
    {
        let orders = [self.spec(spec(), true), self.spec(spec(), false)];
        loom::model(move || {
            let clock = ManualClock::new();
            let limiter = Arc::new(build(&clock));
            clock.set_nanos(self.first);
            assert!(limiter.try_acquire_n(2).unwrap().is_admitted());
            clock.set_nanos(self.race);
            let a = {
                let limiter = limiter.clone();
                thread::spawn(move || limiter.set_limit(1).unwrap())
            };
            let b = {
                let limiter = limiter.clone();
                thread::spawn(move || limiter.try_acquire_n(2))
            };
            a.join().unwrap();
            let b = b.join().unwrap();
            clock.set_nanos(self.back);
            let available = limiter.available();
            let seen = (b, available, limiter.try_acquire_n(1));
            assert!(
                orders.contains(&seen),
                "no order of the spec explains {seen:?}; the spec gives {orders:?}"
            );
        });
    }
}
