//! The most each algorithm can admit: over a whole sample (the `allowed_max` column) and in
//! one window of its guarantee (the at-limit audit's [`Grid`]). Each bound is derived from
//! the algorithm's guarantee (the algorithm table of the crate docs, and each limiter's
//! **Guarantee** paragraph) and checked against the specs in the tests.

use crate::harness::Span;
use crate::limiters::{Config, BUCKETS};

/// A guarantee of the shape "at most `max` admissions in any `cells` consecutive cells of
/// `cell` ns" (cells aligned at multiples of `cell` on the limiter's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub cell: u64,
    pub cells: u64,
    pub max: u64,
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

/// Fixed window (and the approximation's `cur`): N per aligned window.
pub fn aligned_grid(config: Config) -> Grid {
    Grid {
        cell: config.window_nanos(),
        cells: 1,
        max: config.limit,
    }
}

/// Bucketed sliding window: N per B consecutive buckets.
pub fn bucket_grid(config: Config) -> Grid {
    Grid {
        cell: (config.window_nanos() / BUCKETS).max(1),
        cells: BUCKETS,
        max: config.limit,
    }
}

/// Sliding log: ten consecutive cells of `floor(W / 10)` lie inside one interval of length
/// W, which holds at most N.
pub fn log_grid(config: Config) -> Grid {
    Grid {
        cell: (config.window_nanos() / 10).max(1),
        cells: 10,
        max: config.limit,
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
    gcra_in(config, span.last - span.first).saturating_add(1)
}

/// The GCRA (token bucket, leaky meter; the shaper is one with burst 1): at most
/// `b + floor(Δt / T)` admissions at readings inside any closed interval of length Δt
/// (the `TokenBucket` docs' **Guarantee**): admitting at `t` needs `tat <= t + (b - 1) T`
/// and pushes `tat` by T, and `tat` never falls below the last admission's reading. Every admission of a sample was
/// decided at a reading in `first ..= last` on the limiter's own clock. Tight when every
/// thread keeps asking: the bucket starts full and refills one permit per T.
pub fn gcra_bucket_max(config: Config, span: Span) -> u64 {
    gcra_in(config, span.last - span.first)
}

/// `b + floor(nanos / T)`, for a [`Config::bucket`] of burst b and period T.
fn gcra_in(config: Config, nanos: u64) -> u64 {
    config.limit.saturating_add(nanos / config.period_nanos())
}

/// The shaper's `try_acquire` admits only a call that would not wait: `next <= now`, and
/// then `next = now + T`. So two admissions are at least T apart: `1 + floor(Δt / T)` in
/// any closed interval of length Δt, the GCRA bound with burst 1 ([`Config::bucket`] with
/// burst 1). Tight when every thread keeps asking.
pub fn shaper_max(config: Config, span: Span) -> u64 {
    gcra_bucket_max(config, span)
}

/// Truncation the warm-up limiter's cost of one permit can lose, in ns (see
/// [`warm_up_spacing`]).
const WARM_UP_TRUNCATION: u64 = 3;

/// The least time between two admissions of the warm-up limiter (`try_acquire`, one permit
/// each) with stable period T: `T - 3` ns, or `None` (no bound) when T <= 3 ns.
///
/// Derivation, from Guava's `SmoothWarmingUp` as src/warm_up/curve.rs implements it: a call
/// is admitted only if the limiter is free (`next_free <= now`), and the admission pushes
/// `next_free` to `now + cost` (Guava's "the next caller pays"). Idle time stores permits,
/// but a stored permit costs the warm-up curve's interval at its position, which is never
/// below T (T up to the threshold, rising to the cold interval above it); a fresh permit
/// costs T. So one permit costs at least T, as real numbers; but the cost is summed from up
/// to three parts (stored above the threshold, stored below it, fresh), each truncated to
/// whole ns as Guava truncates to whole µs, so the integer cost can be up to 3 ns short of T
/// (2 ns when the warm-up is longer than 2 T, as here, plus `f64` rounding). Hence
/// admissions are at least `T - 3` apart, and the first one is free. (The idle time that
/// stored a fractional permit usually makes up for the truncation: the spec-driven tests
/// never see more than `1 + floor(Δt / T)`; the bound keeps the 3 ns the argument allows,
/// so a run can never be flagged wrongly.)
fn warm_up_spacing(config: Config) -> Option<u64> {
    Some(config.period_nanos().saturating_sub(WARM_UP_TRUNCATION)).filter(|&s| s > 0)
}

/// Warm-up: never faster than the stable rate, up to truncation: the first (free) admission
/// plus one per `T - 3` ns ([`warm_up_spacing`]), `1 + floor(Δt / (T - 3))` in any closed
/// interval of length Δt. `u64::MAX` (no bound) when T <= 3 ns: the scenarios never use
/// such a period.
pub fn warm_up_max(config: Config, span: Span) -> u64 {
    warm_up_spacing(config).map_or(u64::MAX, |spacing| {
        1u64.saturating_add((span.last - span.first) / spacing)
    })
}

/// Cells of the bucket family's audit: groups of 10 cells of 100 T, so a group covers
/// at most `1000 T - 1` ns; an admission whose call straddles a cell boundary is not
/// counted, and calls are far shorter than 100 T.
fn paced_grid(config: Config, burst: u64, spacing: Option<u64>) -> Grid {
    let cell = config.period_nanos().saturating_mul(100);
    let cells = 10;
    let span = cell.saturating_mul(cells).saturating_sub(1);
    Grid {
        cell,
        cells,
        max: spacing.map_or(u64::MAX, |s| burst.saturating_add(span / s)),
    }
}

/// GCRA (token bucket, meter, shaper): at most `b + floor((1000 T - 1) / T) = b + 999` in
/// one group of the audit.
pub fn gcra_grid(config: Config) -> Grid {
    paced_grid(config, config.limit, Some(config.period_nanos()))
}

/// Warm-up: at most `1 + floor((1000 T - 1) / (T - 3))` in one group of the audit.
pub fn warm_up_grid(config: Config) -> Grid {
    paced_grid(config, 1, warm_up_spacing(config))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ringlimit::spec::{
        ApproxSlidingWindowSpec, FixedWindowSpec, LeakyBucketSpec, SlidingLogSpec,
        SlidingWindowSpec, Spec, TokenBucketSpec, WarmUpSpec,
    };
    use ringlimit::Rate;

    use super::*;
    use crate::limiters::LIMITERS;

    /// Greedy callers: at every `step` ns from `first` to `last` (inclusive), one permit at
    /// a time until the spec refuses.
    fn greedy(spec: &mut impl Spec, span: Span, step: usize) -> u64 {
        let mut admitted = 0;
        for t in (span.first..=span.last).step_by(step) {
            while spec.decide(t, 1).is_ok_and(|d| d.is_admitted()) {
                admitted += 1;
            }
        }
        admitted
    }

    /// The window bounds hold for the specs over many spans, and are reached where they
    /// say so.
    #[test]
    fn window_bounds_hold_and_are_tight() {
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
                        let fixed = greedy(&mut FixedWindowSpec::new(limit, d).unwrap(), span, 1);
                        assert_eq!(fixed, aligned_windows_max(c, span), "{c:?} {span:?}");
                        let log = greedy(&mut SlidingLogSpec::new(limit, d).unwrap(), span, 1);
                        assert_eq!(log, sliding_log_max(c, span), "{c:?} {span:?}");
                        let mut approx = ApproxSlidingWindowSpec::new(limit, d).unwrap();
                        assert!(greedy(&mut approx, span, 1) <= aligned_windows_max(c, span));
                        if window >= BUCKETS {
                            let mut sliding = SlidingWindowSpec::new(limit, d, BUCKETS).unwrap();
                            assert_eq!(greedy(&mut sliding, span, 1), sliding_window_max(c, span));
                        }
                        for step in [2, 7] {
                            let mut sliding = SlidingWindowSpec::new(limit, d, BUCKETS).unwrap();
                            assert!(
                                greedy(&mut sliding, span, step) <= sliding_window_max(c, span)
                            );
                        }
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 3 * 3 * 4 * 8);
    }

    /// The bucket family's bounds hold for the specs, and the GCRA and shaper ones are
    /// reached by greedy callers (the spec's time origin is 0, the span starts anywhere).
    #[test]
    fn bucket_bounds_hold_and_are_tight() {
        let mut cases = 0;
        for period in [1, 4, 7, 50] {
            let rate = Rate::every(Duration::from_nanos(period)).unwrap();
            for burst in [1, 2, 5] {
                let c = Config::bucket(period, burst);
                let paced = Config::bucket(period, 1);
                for first in [0, 3, 100] {
                    for len in [0, 1, 6, 49, 50, 51, 333, 2000] {
                        let span = Span {
                            first,
                            last: first + len,
                        };
                        // Idle before the span: the bucket is full when it starts.
                        let mut token = TokenBucketSpec::new(rate, burst).unwrap();
                        assert_eq!(greedy(&mut token, span, 1), gcra_bucket_max(c, span));
                        let mut meter = LeakyBucketSpec::meter(burst, rate).unwrap();
                        assert_eq!(greedy(&mut meter, span, 1), gcra_bucket_max(c, span));
                        let mut shaper = LeakyBucketSpec::shaper(rate, Duration::ZERO).unwrap();
                        assert_eq!(greedy(&mut shaper, span, 1), shaper_max(paced, span));
                        // Sparse callers admit no more.
                        let mut token = TokenBucketSpec::new(rate, burst).unwrap();
                        assert!(greedy(&mut token, span, 3) <= gcra_bucket_max(c, span));
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 4 * 3 * 3 * 8);
    }

    /// Warm-up: from cold, warm, and with idle gaps of every length (which store fractional
    /// permits, where truncation could show), for several cold factors, greedy callers never
    /// pass `warm_up_max` nor the audit's window bound. They never pass the stable rate
    /// `1 + floor(D / T)` either: the 3 ns of `warm_up_spacing` are the worst case the
    /// derivation allows, not something these runs reach.
    #[test]
    fn warm_up_bound_holds() {
        let mut cases = 0;
        for factor in [1.5, 3.0, 5.0] {
            for period in [4, 5, 10, 37, 100] {
                let rate = Rate::every(Duration::from_nanos(period)).unwrap();
                let c = Config::bucket(period, 1);
                for warm_up in [period, 10 * period, 1000 * period] {
                    let w = Duration::from_nanos(warm_up);
                    for step in [1, 2, 3, 7, 11, period + 1, 3 * period - 1] {
                        let mut spec = WarmUpSpec::new(rate, w, factor).unwrap();
                        let mut admissions = Vec::new();
                        for t in (0..=20_000u64).step_by(step as usize) {
                            while spec.decide(t, 1).is_ok_and(|d| d.is_admitted()) {
                                admissions.push((t, t));
                            }
                        }
                        let span = Span {
                            first: 0,
                            last: 20_000,
                        };
                        let admitted = admissions.len() as u64;
                        let case = format!("factor {factor} T {period} W {warm_up} step {step}");
                        assert!(admitted <= warm_up_max(c, span), "{case}");
                        assert!(admitted <= 1 + 20_000 / period, "{case}");
                        let grid = warm_up_grid(c);
                        assert!(grid.worst(&admissions) <= grid.max, "{case}");
                        cases += 1;
                    }
                    // Warm (its stored permits spent by callers every ns), then every ns:
                    // the stable rate.
                    let mut spec = WarmUpSpec::new(rate, w, factor).unwrap();
                    let start = 4 * warm_up + 100 * period;
                    greedy(
                        &mut spec,
                        Span {
                            first: 0,
                            last: start,
                        },
                        1,
                    );
                    let span = Span {
                        first: start + 1,
                        last: start + 100_000,
                    };
                    let admitted = greedy(&mut spec, span, 1);
                    let stable = 100_000 / period;
                    assert!(admitted >= stable && admitted <= warm_up_max(c, span));
                }
            }
        }
        assert_eq!(cases, 3 * 5 * 3 * 7);
        assert_eq!(
            warm_up_max(Config::bucket(3, 1), Span { first: 0, last: 9 }),
            u64::MAX
        );
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
        let windows = LIMITERS
            .iter()
            .filter(|l| l.family == crate::limiters::Family::Window);
        for (limiter, step) in windows.zip([3, 7, 11, 13]) {
            let grid = (limiter.grid().unwrap())(c);
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
        let grid = Grid {
            cell: 10,
            cells: 1,
            max: 1,
        };
        assert_eq!(grid.worst(&[(9, 10), (3, 4)]), 1);
    }

    /// The GCRA audit: a saturated token bucket fills its groups to the bound, and one
    /// extra admission inside a group is caught.
    #[test]
    fn gcra_grid_is_tight_and_catches_excess() {
        let (period, burst) = (7, 3);
        let c = Config::bucket(period, burst);
        let grid = gcra_grid(c);
        assert_eq!((grid.cell, grid.cells, grid.max), (700, 10, burst + 999));
        let rate = Rate::every(Duration::from_nanos(period)).unwrap();
        let mut spec = TokenBucketSpec::new(rate, burst).unwrap();
        let mut admissions = Vec::new();
        for t in 0..20_000 {
            while spec.decide(t, 1).is_ok_and(|d| d.is_admitted()) {
                admissions.push((t, t));
            }
        }
        assert_eq!(grid.worst(&admissions), grid.max);
        admissions.push((5, 5));
        assert_eq!(grid.worst(&admissions), grid.max + 1);
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
            limit: ringlimit::SlidingLog::MAX_LIMIT,
            window: Duration::from_millis(1),
        };
        assert_eq!(huge.gcra_period(), Duration::from_nanos(1));
        let bucket = Config::bucket(40, 5);
        assert_eq!(
            (bucket.gcra_period(), bucket.limit),
            (Duration::from_nanos(40), 5)
        );
    }
}
