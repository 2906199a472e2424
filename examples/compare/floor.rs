//! The floor: the least a call can cost, measured in the same run as the limiters.
//!
//! Every rate limiter here reads the clock and makes at least one atomic read-modify-write
//! on a shared word per call. The floor does only that: one read of the limiters' clock
//! ([`TscClock`]) and one `fetch_add` on one cache-padded `AtomicU64` that all threads share.
//! On one thread it is the cost of an uncontended RMW; on N threads it is the rate at which
//! one cache line's RMWs pass from core to core, which caps any limiter whose every call
//! writes one shared line. A sharded limiter writes core-local lines, so it can pass the
//! floor on several threads (a `floor_ratio` above 1).
//!
//! Why `fetch_add`: it is the cheapest RMW that always succeeds. A compare-exchange costs
//! the same when it succeeds; the retries it makes under contention are the algorithm's
//! cost, not the line's, so they belong to the limiter rows.
//!
//! The floor is timed by the same [`Plan`] as every other row (same sample length, same
//! number of samples, the median reported). It is not a limiter: it admits every call and
//! is never audited.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use ringlimit::clock::{Clock, TscClock};

use crate::harness::{Contender, Plan};
use crate::limiters::{Config, Family, Implementation};
use crate::report::Row;
use crate::scenario::Scenario;

/// The `limiter` name of the floor's rows (their implementation is
/// [`Implementation::Floor`], their scenario [`Scenario::Allow`]).
pub const NAME: &str = "floor";

/// What one floor call does, for the output.
pub const DESCRIBE: &str =
    "one TscClock read + one fetch_add on one cache-padded AtomicU64 shared by all threads";

/// The floor's contender: the clock and the one shared line.
pub struct Floor {
    clock: TscClock,
    line: CachePadded<AtomicU64>,
}

impl Floor {
    pub fn new() -> Self {
        Self {
            clock: TscClock::new(),
            line: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// The calls made so far: each adds one to the line.
    #[cfg(test)]
    fn calls(&self) -> u64 {
        // Relaxed: read after the callers are joined (or on their thread).
        self.line.load(Ordering::Relaxed)
    }
}

impl Contender for Floor {
    #[inline(always)]
    fn try_acquire(&self) -> bool {
        let now = self.clock.now_nanos();
        // Relaxed: the floor publishes nothing. On x86_64 every locked RMW is a full
        // barrier whatever the ordering; elsewhere Relaxed is the cheapest, as a floor
        // should be.
        let calls = self.line.fetch_add(1, Ordering::Relaxed);
        // The answer depends on the reading and on the RMW's result, as a limiter's
        // decision does, so neither can be optimised away. Always true in practice: the
        // calls plus the ns since the clock's origin stay far below 2^64.
        calls.checked_add(now).is_some()
    }

    fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }
}

/// The floor's row at `threads` threads: `samples` samples of `duration`, median reported.
pub fn measure(threads: usize, oversubscribed: bool, duration: Duration, samples: usize) -> Row {
    let plan = Plan {
        threads,
        duration,
        exhaust: false,
        audit: false,
    };
    let mut row = Row {
        limiter: NAME,
        // Unused: the floor is not a limiter and is never audited.
        family: Family::Window,
        implementation: Implementation::Floor,
        scenario: Scenario::Allow,
        config: Config {
            limit: 0,
            window: Duration::ZERO,
        },
        threads,
        oversubscribed,
        mops: 0.0,
        calls: 0,
        acquired: 0,
        admitted: 0,
        allowed_max: 0,
        excess: 0,
        worst: None,
        worst_max: 0,
    };
    let mut mops = Vec::with_capacity(samples);
    for _ in 0..samples {
        let Ok(sample) = plan.run(|| Ok::<_, std::convert::Infallible>(Floor::new()));
        row.calls += sample.calls;
        row.acquired += sample.admitted;
        mops.push(sample.mops());
    }
    row.mops = crate::median(&mut mops);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_one_rmw_on_the_line() {
        let floor = Floor::new();
        assert!((0..5).all(|_| floor.try_acquire()));
        assert_eq!(floor.calls(), 5);
    }

    /// The floor's row: timed like a limiter's, every call admitted, never a failure.
    #[test]
    fn floor_row_is_timed_and_never_fails() {
        let row = measure(2, false, Duration::from_millis(2), 3);
        assert_eq!(
            (row.limiter, row.implementation, row.scenario, row.threads),
            (NAME, Implementation::Floor, Scenario::Allow, 2)
        );
        assert!(row.calls >= 3 * 2 * crate::harness::BATCH);
        assert_eq!(row.acquired, row.calls);
        assert!(row.mops > 0.0);
        assert!(!row.implementation.is_ringlimit() && !row.fails());
    }
}
