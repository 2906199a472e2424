//! The table of limiters: how to build each implementation of a limiter for a scenario, and
//! the most its algorithm can admit over a stretch of time (the `allowed_max` column).
//!
//! Adding a limiter is one [`LIMITERS`] entry: a `run` function (usually one call of
//! [`common`], plus a naive version if there is one) and an `allowed_max` function derived
//! from the algorithm's guarantee in DESIGN.md §1.

use std::num::NonZeroU32;
use std::time::Duration;

use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, SlidingLogSpec, SlidingWindowSpec, Spec,
};
use ringlimit::{
    ApproxSlidingWindow, ConfigError, FixedWindow, ParkingLotLocked, RateLimiter, SlidingLog,
    SlidingWindow, StdLocked,
};

use crate::harness::{Contender, Governor, Plan, Ringlimit, Sample, Span};
use crate::naive::{NaiveApprox, NaiveLog, NaiveWindow};

/// Buckets of the sliding window under test.
pub const BUCKETS: u64 = 10;

/// One limiter of the crate.
pub struct Limiter {
    /// The name `--only` matches and the output shows.
    pub name: &'static str,
    /// Its shape, for the output (e.g. the bucket count).
    pub shape: &'static str,
    /// How `allowed_max` is derived, for the legend.
    pub bound: &'static str,
    /// Builds `implementation` for `config` and runs one sample on it; `Ok(None)` when the
    /// limiter has no such implementation.
    pub run: fn(Implementation, Config, &Plan) -> Result<Option<Sample>, ConfigError>,
    /// The most the algorithm can admit while its clock reads within `span`, from empty.
    pub allowed_max: fn(Config, Span) -> u64,
    /// The windows its guarantee is about, as a [`Grid`], for the at-limit audit; `None`
    /// when the guarantee has no such shape.
    pub grid: Option<fn(Config) -> Grid>,
}

/// A guarantee of the shape "at most N admissions in any `cells` consecutive cells of
/// `cell` ns" (cells aligned at multiples of `cell` on the limiter's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub cell: u64,
    pub cells: u64,
}

impl Grid {
    /// The most admissions certainly inside one group of `cells` consecutive cells: an
    /// admission counts in a cell only if both its readings (`before`, `after`) fall in
    /// that cell, so the result never exceeds the true count of the worst group.
    pub fn worst(self, admissions: &[(u64, u64)]) -> u64 {
        let cell = self.cell.max(1);
        let mut counts = std::collections::BTreeMap::<u64, u64>::new();
        for &(before, after) in admissions {
            if before / cell == after / cell {
                *counts.entry(before / cell).or_default() += 1;
            }
        }
        // Each group that holds anything starts, at the latest, at one of its cells.
        counts
            .keys()
            .map(|&start| {
                let end = start.saturating_add(self.cells);
                counts.range(start..end).map(|(_, count)| count).sum()
            })
            .max()
            .unwrap_or(0)
    }
}

/// Every limiter the tool compares.
pub const LIMITERS: &[Limiter] = &[
    Limiter {
        name: "sliding_window",
        shape: "10 buckets",
        bound: "N per 10 consecutive buckets touched: N x ceil(buckets touched / 10) (exact max)",
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveWindow::new(c.limit, c.window, BUCKETS)),
            _ => common(
                imp,
                c,
                plan,
                || SlidingWindow::new(c.limit, c.window, BUCKETS),
                || SlidingWindowSpec::new(c.limit, c.window, BUCKETS),
            ),
        },
        allowed_max: sliding_window_max,
        grid: Some(bucket_grid),
    },
    Limiter {
        name: "fixed_window",
        shape: "",
        bound: "N per aligned window touched (exact max)",
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveWindow::new(c.limit, c.window, 1)),
            _ => common(
                imp,
                c,
                plan,
                || FixedWindow::new(c.limit, c.window),
                || FixedWindowSpec::new(c.limit, c.window),
            ),
        },
        allowed_max: aligned_windows_max,
        grid: Some(aligned_grid),
    },
    Limiter {
        name: "sliding_log",
        shape: "exact",
        bound: "N per W: N x ceil((span + 1 ns) / W) (exact max)",
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveLog::new(c.limit, c.window)),
            _ => common(
                imp,
                c,
                plan,
                || SlidingLog::new(c.limit, c.window),
                || SlidingLogSpec::new(c.limit, c.window),
            ),
        },
        allowed_max: sliding_log_max,
        grid: Some(log_grid),
    },
    Limiter {
        name: "approx_window",
        shape: "two counters",
        bound: "N per aligned window touched (loose: the estimate usually holds it lower)",
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveApprox::new(c.limit, c.window)),
            _ => common(
                imp,
                c,
                plan,
                || ApproxSlidingWindow::new(c.limit, c.window),
                || ApproxSlidingWindowSpec::new(c.limit, c.window),
            ),
        },
        allowed_max: aligned_windows_max,
        grid: Some(aligned_grid),
    },
];

/// The implementations compared, in column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// The crate's lock-free limiter.
    LockFree,
    /// The limiter's spec under `parking_lot::Mutex` (`ringlimit::ParkingLotLocked`).
    ParkingLot,
    /// The limiter's spec under `std::sync::Mutex` (`ringlimit::StdLocked`).
    StdMutex,
    /// `governor`'s direct GCRA with the equivalent quota.
    Governor,
    /// A check-then-add version written in [`crate::naive`].
    Naive,
}

impl Implementation {
    /// All of them, in column order.
    pub const ALL: [Self; 5] = [
        Self::LockFree,
        Self::ParkingLot,
        Self::StdMutex,
        Self::Governor,
        Self::Naive,
    ];

    /// The name the output shows and `--only` matches.
    pub fn name(self) -> &'static str {
        match self {
            Self::LockFree => "lock_free",
            Self::ParkingLot => "parking_lot",
            Self::StdMutex => "std_mutex",
            Self::Governor => "governor",
            Self::Naive => "naive",
        }
    }

    /// Rows of ringlimit's own types: these must never admit more than `allowed_max`.
    pub fn is_ringlimit(self) -> bool {
        matches!(self, Self::LockFree | Self::ParkingLot | Self::StdMutex)
    }
}

/// A scenario's configuration: `limit` (N) permits per `window` (W).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: u64,
    pub window: Duration,
}

impl Config {
    /// W in ns (at least 1).
    pub fn window_nanos(self) -> u64 {
        u64::try_from(self.window.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// governor's equivalent quota: one permit every `W / N` (whole ns, rounded down, at
    /// least 1 ns, so its long-run rate is at least N per W) and a burst of N.
    pub fn gcra_period(self) -> Duration {
        Duration::from_nanos((self.window_nanos() / self.limit.max(1)).max(1))
    }
}

/// The lock-free limiter, its spec under both mutexes, and governor; `Ok(None)` for
/// [`Implementation::Naive`] (give the limiter's own naive version before calling this).
pub fn common<L, S>(
    implementation: Implementation,
    config: Config,
    plan: &Plan,
    lock_free: impl FnOnce() -> Result<L, ConfigError>,
    spec: impl FnOnce() -> Result<S, ConfigError>,
) -> Result<Option<Sample>, ConfigError>
where
    L: RateLimiter + Send + Sync + 'static,
    S: Spec + 'static,
{
    Ok(Some(match implementation {
        Implementation::LockFree => plan.run(|| lock_free().map(Ringlimit))?,
        Implementation::ParkingLot => {
            plan.run(|| spec().map(|spec| Ringlimit(ParkingLotLocked::new(spec))))?
        }
        Implementation::StdMutex => {
            plan.run(|| spec().map(|spec| Ringlimit(StdLocked::new(spec))))?
        }
        Implementation::Governor => {
            let Some(burst) = u32::try_from(config.limit).ok().and_then(NonZeroU32::new) else {
                return Ok(None);
            };
            let build = || Governor::new(config.gcra_period(), burst).ok_or(());
            match plan.run(build) {
                Ok(sample) => sample,
                Err(()) => return Ok(None),
            }
        }
        Implementation::Naive => return Ok(None),
    }))
}

/// Runs a naive version (which cannot fail to build).
fn naive<C: Contender>(
    plan: &Plan,
    build: impl FnOnce() -> C,
) -> Result<Option<Sample>, ConfigError> {
    Ok(Some(plan.run(|| Ok::<_, ConfigError>(build()))?))
}

/// Fixed window (and the approximation's `cur`): N per aligned window.
fn aligned_grid(config: Config) -> Grid {
    Grid {
        cell: config.window_nanos(),
        cells: 1,
    }
}

/// Bucketed sliding window: N per B consecutive buckets.
fn bucket_grid(config: Config) -> Grid {
    Grid {
        cell: (config.window_nanos() / BUCKETS).max(1),
        cells: BUCKETS,
    }
}

/// Sliding log: ten consecutive cells of `floor(W / 10)` lie inside one interval of length
/// W, which holds at most N.
fn log_grid(config: Config) -> Grid {
    Grid {
        cell: (config.window_nanos() / 10).max(1),
        cells: 10,
    }
}

/// The number of intervals `[k * width, (k + 1) * width)` that `span` touches.
fn touched(span: Span, width: u64) -> u64 {
    span.last / width - span.first / width + 1
}

/// Fixed window (and the two-counter approximation): every admission is counted in the
/// aligned window `t / W` its (never-decreasing) time falls in, and one aligned window holds
/// at most N (the approximation's estimate term is never negative, so its `cur` ≤ N too).
/// Calls whose reading is older than the newest window join the newest one, so every
/// admission falls in a window the span touches. Tight for the fixed window under overload.
pub fn aligned_windows_max(config: Config, span: Span) -> u64 {
    config
        .limit
        .saturating_mul(touched(span, config.window_nanos()))
}

/// Bucketed sliding window: at most N in any B consecutive buckets of width `w = W / B`
/// (rounded down, as the limiter does). The k buckets the span touches split into
/// `ceil(k / B)` runs of at most B consecutive buckets, each holding at most N. Tight under
/// overload: a burst of N at the start of the span repeats every B buckets.
pub fn sliding_window_max(config: Config, span: Span) -> u64 {
    let width = (config.window_nanos() / BUCKETS).max(1);
    config
        .limit
        .saturating_mul(touched(span, width).div_ceil(BUCKETS))
}

/// Exact sliding log: at most N admissions in any half-open `(t - W, t]`, hence in any
/// `[a, a + W)`. The `last - first + 1` nanoseconds of the span split into
/// `ceil((last - first + 1) / W)` such intervals. Tight: N at the start of each.
pub fn sliding_log_max(config: Config, span: Span) -> u64 {
    let nanos = span.last - span.first + 1;
    config
        .limit
        .saturating_mul(nanos.div_ceil(config.window_nanos()))
}

/// governor's GCRA with period T and burst b (tolerance `(b - 1) T`): the k-th admission
/// after the first needs `first + (k - b) T <= t_k`, so a span of D ns holds at most
/// `b + floor(D / T)`; one more covers governor's own clock (quanta, read separately from
/// the clock that measured the span).
pub fn gcra_max(config: Config, span: Span) -> u64 {
    let period = u64::try_from(config.gcra_period().as_nanos()).unwrap_or(u64::MAX);
    config
        .limit
        .saturating_add((span.last - span.first) / period)
        .saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Greedy callers: at every `step` ns from `first` to `last` (inclusive), one permit at
    /// a time until the spec refuses.
    fn greedy(mut spec: impl Spec, span: Span, step: usize) -> u64 {
        let mut admitted = 0;
        for t in (span.first..=span.last).step_by(step) {
            while spec.decide(t, 1).is_ok_and(|d| d.is_admitted()) {
                admitted += 1;
            }
        }
        admitted
    }

    /// The bounds hold for the specs over many spans, and are reached where they say so.
    #[test]
    fn bounds_hold_and_are_tight() {
        let mut cases = 0;
        for limit in [1, 3, 7] {
            for window in [10, 40, 97] {
                let c = Config {
                    limit,
                    window: Duration::from_nanos(window),
                };
                let d = Duration::from_nanos(window);
                for first in [0, 1, 9, 33] {
                    for len in [0, 1, 9, 10, 11, 95, 250, 1000] {
                        let span = Span {
                            first,
                            last: first + len,
                        };
                        let fixed = greedy(FixedWindowSpec::new(limit, d).unwrap(), span, 1);
                        assert_eq!(fixed, aligned_windows_max(c, span), "{c:?} {span:?}");
                        let log = greedy(SlidingLogSpec::new(limit, d).unwrap(), span, 1);
                        assert_eq!(log, sliding_log_max(c, span), "{c:?} {span:?}");
                        let approx = ApproxSlidingWindowSpec::new(limit, d).unwrap();
                        assert!(greedy(approx, span, 1) <= aligned_windows_max(c, span));
                        if window >= BUCKETS {
                            let sliding = SlidingWindowSpec::new(limit, d, BUCKETS).unwrap();
                            assert_eq!(greedy(sliding, span, 1), sliding_window_max(c, span));
                        }
                        for step in [2, 7] {
                            let sliding = SlidingWindowSpec::new(limit, d, BUCKETS).unwrap();
                            assert!(greedy(sliding, span, step) <= sliding_window_max(c, span));
                        }
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 3 * 3 * 4 * 8);
    }

    /// The audit finds no excess in a spec's admissions, and finds a planted one.
    #[test]
    fn audit_grid_counts_the_worst_window() {
        let (limit, window) = (4, 100);
        let c = Config {
            limit,
            window: Duration::from_nanos(window),
        };
        let d = c.window;
        let mut cases = 0;
        for (limiter, step) in LIMITERS.iter().zip([3, 7, 11, 13]) {
            let grid = (limiter.grid.unwrap())(c);
            let mut spec: Box<dyn Spec> = match limiter.name {
                "sliding_window" => Box::new(SlidingWindowSpec::new(limit, d, BUCKETS).unwrap()),
                "fixed_window" => Box::new(FixedWindowSpec::new(limit, d).unwrap()),
                "sliding_log" => Box::new(SlidingLogSpec::new(limit, d).unwrap()),
                _ => Box::new(ApproxSlidingWindowSpec::new(limit, d).unwrap()),
            };
            // Readings bracket each call by a few ns, as a worker's would.
            let mut admissions: Vec<(u64, u64)> = (0..2000u64)
                .step_by(step)
                .filter(|&t| spec.decide(t, 1).is_ok_and(|d| d.is_admitted()))
                .map(|t| (t.saturating_sub(2), t + 2))
                .collect();
            assert!(grid.worst(&admissions) <= limit, "{}", limiter.name);
            assert!(grid.worst(&admissions) >= limit - 1, "{}", limiter.name);
            // Two more, certainly inside the first cell: caught.
            admissions.extend([(1, 1), (1, 2)]);
            assert!(grid.worst(&admissions) > limit, "{}", limiter.name);
            cases += 1;
        }
        assert_eq!(cases, 4);
        // A straddling admission counts nowhere.
        let grid = Grid { cell: 10, cells: 1 };
        assert_eq!(grid.worst(&[(9, 10), (3, 4)]), 1);
    }

    #[test]
    fn gcra_period_is_whole_nanoseconds() {
        let c = Config {
            limit: 3,
            window: Duration::from_nanos(10),
        };
        assert_eq!(c.gcra_period(), Duration::from_nanos(3));
        let span = Span { first: 5, last: 35 };
        assert_eq!(gcra_max(c, span), 3 + 10 + 1);
        let huge = Config {
            limit: ringlimit::MAX_LIMIT,
            window: Duration::from_millis(1),
        };
        assert_eq!(huge.gcra_period(), Duration::from_nanos(1));
    }
}
