//! The table of limiters: how to build each implementation of a limiter for a scenario, and
//! which bound its admissions are audited against (the `allowed_max` column; the bounds
//! themselves are in [`crate::bounds`]).
//!
//! Adding a limiter is one [`LIMITERS`] entry: its [`Family`] (which picks the scenarios'
//! configurations), a `run` function (usually one call of [`common`], plus a naive version
//! if there is one) and an [`Audit`] derived from the algorithm's guarantee (the algorithm
//! table of the crate docs, and each limiter's **Guarantee** paragraph).

use std::num::NonZeroU32;
use std::time::Duration;

use ringlimit::baseline::{
    ParkingLotConcurrencyLimiter, ParkingLotLocked, StdLocked, StdLockedConcurrencyLimiter,
};
use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, LeakyBucketSpec, SlidingLogSpec, SlidingWindowSpec,
    Spec, TokenBucketSpec, WarmUpSpec,
};
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, ConcurrencyLimiter, ConcurrencyQuota, ConfigError,
    FixedWindow, LeakyBucket, Rate, RateLimiter, ShaperQuota, SlidingLog, SlidingWindow,
    TokenBucket, WarmUp, WarmUpQuota, WindowQuota,
};

use crate::bounds::{
    aligned_grid, aligned_windows_max, bucket_grid, gcra_bucket_max, gcra_grid, log_grid,
    shaper_max, sliding_log_max, sliding_window_max, warm_up_grid, warm_up_max, Grid,
};
use crate::harness::{Contender, Governor, Plan, Ringlimit, Sample, Span};
use crate::in_flight::InFlight;
use crate::naive::{NaiveApprox, NaiveConcurrency, NaiveGcra, NaiveLog, NaiveWindow};

/// Buckets of the sliding window under test.
pub const BUCKETS: u64 = 10;

/// The warm-up limiter's warm-up period: it starts cold and is warm after about this long
/// of saturation, early in a sample.
pub const WARM_UP: Duration = Duration::from_millis(1);

/// One limiter of the crate.
pub struct Limiter {
    /// The name `--only` matches and the output shows.
    pub name: &'static str,
    /// Its shape, for the output (e.g. the bucket count).
    pub shape: &'static str,
    /// How `allowed_max` is derived, for the legend.
    pub bound: &'static str,
    /// How its scenarios are configured.
    pub family: Family,
    /// Whether [`crate::naive`] has a naive version of it.
    pub naive: bool,
    /// Whether it has a sharded form ([`Implementation::Sharded`]).
    pub sharded: bool,
    /// Builds `implementation` for `config` and runs one sample on it; `Ok(None)` when the
    /// limiter has no such implementation.
    pub run: fn(Implementation, Config, &Plan) -> Result<Option<Sample>, ConfigError>,
    /// What its admissions are checked against.
    pub audit: Audit,
}

impl Limiter {
    /// Whether the limiter has `implementation` (governor has no concurrency limiter; not
    /// every limiter has a naive version; the floor is no limiter's).
    pub fn offers(&self, implementation: Implementation) -> bool {
        match implementation {
            Implementation::Governor => self.family.has_governor(),
            Implementation::Naive => self.naive,
            Implementation::Sharded => self.sharded,
            Implementation::Floor => false,
            Implementation::LockFree | Implementation::ParkingLot | Implementation::StdMutex => {
                true
            }
        }
    }

    /// The at-limit audit's grid, for limiters audited by counting.
    pub fn grid(&self) -> Option<fn(Config) -> Grid> {
        match self.audit {
            Audit::Count { grid, .. } => grid,
            Audit::InFlight => None,
        }
    }
}

/// Which scenario configurations a limiter takes (see [`crate::scenario`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// N per window W.
    Window,
    /// A GCRA of burst b refilled one permit per T ([`Config::bucket`]).
    Bucket,
    /// One permit per T and no burst (the shaper, the warm-up limiter): a bucket of burst 1.
    Paced,
    /// At most C permits held at once.
    Concurrency,
}

impl Family {
    /// Whether governor has an equivalent (it has no concurrency limiter).
    pub fn has_governor(self) -> bool {
        self != Self::Concurrency
    }
}

/// What a limiter's admissions are checked against.
#[derive(Clone, Copy)]
pub enum Audit {
    /// The admissions of a sample, against `allowed_max`: the most the algorithm can admit
    /// while its clock reads within the sample's span, from its state at the start; and, in
    /// the at-limit scenario, the admissions in the worst window of `grid`.
    Count {
        allowed_max: fn(Config, Span) -> u64,
        grid: Option<fn(Config) -> Grid>,
    },
    /// The most permits held at once, against C. Counting admissions says nothing about an
    /// in-flight bound, so an untimed audit sample tracks, with a side counter, how many
    /// permits are held at once ([`crate::in_flight`]); the table shows that maximum and C
    /// in the `admitted` and `allowed_max` columns.
    InFlight,
}

/// Every limiter the tool compares. The sharded window is one more [`Implementation`] of
/// the `sliding_window` and `fixed_window` rows (every other entry's `run` answers
/// `Ok(None)` for it, through [`common`]).
pub const LIMITERS: &[Limiter] = &[
    Limiter {
        name: "sliding_window",
        shape: "10 buckets",
        bound: "N per 10 consecutive buckets touched: N x ceil(buckets touched / 10) (exact max)",
        family: Family::Window,
        naive: true,
        sharded: true,
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveWindow::new(c.limit, c.window, BUCKETS)),
            Implementation::Sharded => sharded(plan, || {
                let quota = WindowQuota::per(c.limit, c.window)?.buckets(BUCKETS)?;
                Ok(SlidingWindow::builder(quota).sharded().build())
            }),
            _ => common(
                imp,
                c,
                plan,
                || {
                    Ok(SlidingWindow::new(
                        WindowQuota::per(c.limit, c.window)?.buckets(BUCKETS)?,
                    ))
                },
                || SlidingWindowSpec::new(c.limit, c.window, BUCKETS),
            ),
        },
        audit: Audit::Count {
            allowed_max: sliding_window_max,
            grid: Some(bucket_grid),
        },
    },
    Limiter {
        name: "fixed_window",
        shape: "",
        bound: "N per aligned window touched (exact max)",
        family: Family::Window,
        naive: true,
        sharded: true,
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveWindow::new(c.limit, c.window, 1)),
            Implementation::Sharded => sharded(plan, || {
                Ok(FixedWindow::builder(WindowQuota::per(c.limit, c.window)?)
                    .sharded()
                    .build())
            }),
            _ => common(
                imp,
                c,
                plan,
                || Ok(FixedWindow::new(WindowQuota::per(c.limit, c.window)?)),
                || FixedWindowSpec::new(c.limit, c.window),
            ),
        },
        audit: Audit::Count {
            allowed_max: aligned_windows_max,
            grid: Some(aligned_grid),
        },
    },
    Limiter {
        name: "sliding_log",
        shape: "exact",
        bound: "N per W: N x ceil((span + 1 ns) / W) (exact max)",
        family: Family::Window,
        naive: true,
        sharded: false,
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveLog::new(c.limit, c.window)),
            _ => common(
                imp,
                c,
                plan,
                || SlidingLog::new(WindowQuota::per(c.limit, c.window)?),
                || SlidingLogSpec::new(c.limit, c.window),
            ),
        },
        audit: Audit::Count {
            allowed_max: sliding_log_max,
            grid: Some(log_grid),
        },
    },
    Limiter {
        name: "approx_window",
        shape: "two counters",
        bound: "N per aligned window touched (loose: the estimate usually holds it lower)",
        family: Family::Window,
        naive: true,
        sharded: false,
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveApprox::new(c.limit, c.window)),
            _ => common(
                imp,
                c,
                plan,
                || ApproxSlidingWindow::new(WindowQuota::per(c.limit, c.window)?),
                || ApproxSlidingWindowSpec::new(c.limit, c.window),
            ),
        },
        audit: Audit::Count {
            allowed_max: aligned_windows_max,
            grid: Some(aligned_grid),
        },
    },
    Limiter {
        name: "token_bucket",
        shape: "GCRA",
        bound: "b + floor(span / T) (exact max; governor is the same algorithm)",
        family: Family::Bucket,
        naive: true,
        sharded: true,
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveGcra::new(c.period_nanos(), c.limit)),
            Implementation::Sharded => sharded(plan, || {
                Ok(TokenBucket::builder(BucketQuota::new(c.rate()?, c.limit)?)
                    .sharded()
                    .build())
            }),
            _ => common(
                imp,
                c,
                plan,
                || Ok(TokenBucket::new(BucketQuota::new(c.rate()?, c.limit)?)),
                || TokenBucketSpec::new(c.rate()?, c.limit),
            ),
        },
        audit: Audit::Count {
            allowed_max: gcra_bucket_max,
            grid: Some(gcra_grid),
        },
    },
    Limiter {
        name: "leaky_meter",
        shape: "GCRA",
        bound: "capacity + floor(span / T) (exact max)",
        family: Family::Bucket,
        naive: true,
        sharded: true,
        run: |imp, c, plan| match imp {
            Implementation::Naive => naive(plan, || NaiveGcra::new(c.period_nanos(), c.limit)),
            Implementation::Sharded => sharded(plan, || {
                Ok(
                    LeakyBucket::meter_builder(BucketQuota::new(c.rate()?, c.limit)?)
                        .sharded()
                        .build(),
                )
            }),
            _ => common(
                imp,
                c,
                plan,
                || Ok(LeakyBucket::meter(BucketQuota::new(c.rate()?, c.limit)?)),
                || LeakyBucketSpec::meter(c.limit, c.rate()?),
            ),
        },
        audit: Audit::Count {
            allowed_max: gcra_bucket_max,
            grid: Some(gcra_grid),
        },
    },
    Limiter {
        name: "leaky_shaper",
        shape: "max_wait 0",
        bound: "1 + floor(span / T): admitted only if its slot is now (exact max)",
        family: Family::Paced,
        naive: true,
        sharded: false,
        run: |imp, c, plan| match imp {
            // try_acquire of a shaper is the GCRA with burst 1.
            Implementation::Naive => naive(plan, || NaiveGcra::new(c.period_nanos(), 1)),
            _ => common(
                imp,
                c,
                plan,
                || {
                    Ok(LeakyBucket::shaper(ShaperQuota::new(
                        c.rate()?,
                        Duration::ZERO,
                    )?))
                },
                || LeakyBucketSpec::shaper(c.rate()?, Duration::ZERO),
            ),
        },
        audit: Audit::Count {
            allowed_max: shaper_max,
            grid: Some(gcra_grid),
        },
    },
    Limiter {
        name: "warm_up",
        shape: "cold factor 3, warm-up 1 ms",
        bound: "1 + floor(span / (T - 3 ns)): the stable rate, up to Guava's truncation",
        family: Family::Paced,
        naive: false,
        sharded: false,
        run: |imp, c, plan| {
            common(
                imp,
                c,
                plan,
                || Ok(WarmUp::new(WarmUpQuota::new(c.rate()?, WARM_UP)?)),
                || WarmUpSpec::new(c.rate()?, WARM_UP, WarmUp::DEFAULT_COLD_FACTOR),
            )
        },
        audit: Audit::Count {
            allowed_max: warm_up_max,
            grid: Some(warm_up_grid),
        },
    },
    Limiter {
        name: "concurrency",
        shape: "try_acquire + drop",
        bound: "admitted/allowed_max = most permits held at once / C (side counter, audit sample)",
        family: Family::Concurrency,
        naive: true,
        sharded: false,
        run: |imp, c, plan| {
            let audit = plan.audit;
            // Deny: all C permits are taken before timing and never given back.
            let hold = if plan.exhaust { c.limit } else { 0 };
            let plan = &Plan {
                exhaust: false,
                ..*plan
            };
            Ok(Some(match imp {
                Implementation::LockFree => plan.run(|| {
                    Ok::<_, ConfigError>(InFlight::new(
                        ConcurrencyLimiter::new(ConcurrencyQuota::new(c.limit)?),
                        hold,
                        audit,
                    ))
                })?,
                Implementation::ParkingLot => plan.run(|| {
                    let limiter = ParkingLotConcurrencyLimiter::new(c.limit)?;
                    Ok::<_, ConfigError>(InFlight::new(limiter, hold, audit))
                })?,
                Implementation::StdMutex => plan.run(|| {
                    let limiter = StdLockedConcurrencyLimiter::new(c.limit)?;
                    Ok::<_, ConfigError>(InFlight::new(limiter, hold, audit))
                })?,
                Implementation::Naive => {
                    return naive(plan, || {
                        InFlight::new(NaiveConcurrency::new(c.limit), hold, audit)
                    })
                }
                Implementation::Governor | Implementation::Sharded | Implementation::Floor => {
                    return Ok(None)
                }
            }))
        },
        audit: Audit::InFlight,
    },
];

/// The implementations compared, in column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// The crate's lock-free limiter.
    LockFree,
    /// Its sharded form (`.sharded()` on the window and bucket builders: per-core shards
    /// leasing batches of permits; it may under-admit, never over-admit).
    Sharded,
    /// The limiter's spec under `parking_lot::Mutex` (`ringlimit::ParkingLotLocked`).
    ParkingLot,
    /// The limiter's spec under `std::sync::Mutex` (`ringlimit::StdLocked`).
    StdMutex,
    /// `governor`'s direct GCRA with the equivalent quota.
    Governor,
    /// A check-then-add version written in [`crate::naive`].
    Naive,
    /// Not a limiter: the cost of one call at the least, one clock read and one RMW on one
    /// shared line ([`crate::floor`]). Measured once per thread count, never audited; every
    /// row's `floor_ratio` is its throughput over this one's.
    Floor,
}

impl Implementation {
    /// All of them, in column order.
    pub const ALL: [Self; 7] = [
        Self::LockFree,
        Self::Sharded,
        Self::ParkingLot,
        Self::StdMutex,
        Self::Governor,
        Self::Naive,
        Self::Floor,
    ];

    /// The name the output shows and `--only` matches.
    pub fn name(self) -> &'static str {
        match self {
            Self::LockFree => "lock_free",
            Self::Sharded => "sharded",
            Self::ParkingLot => "parking_lot",
            Self::StdMutex => "std_mutex",
            Self::Governor => "governor",
            Self::Naive => "naive",
            Self::Floor => "floor",
        }
    }

    /// Rows of ringlimit's own types: these must never admit more than `allowed_max`.
    pub fn is_ringlimit(self) -> bool {
        matches!(
            self,
            Self::LockFree | Self::Sharded | Self::ParkingLot | Self::StdMutex
        )
    }
}

/// A scenario's configuration: `limit` (N) permits per `window` (W). The bucket family
/// reads it as a GCRA ([`Config::bucket`]): burst `limit`, one permit per `window / limit`;
/// the concurrency limiter reads `limit` as C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: u64,
    pub window: Duration,
}

impl Config {
    /// A bucket of `burst` permits refilled one every `period` ns, as `burst` per
    /// `burst × period`: so governor's equivalent quota ([`Self::gcra_period`], burst N) is
    /// exactly this bucket.
    pub const fn bucket(period: u64, burst: u64) -> Self {
        Self {
            limit: burst,
            window: Duration::from_nanos(period.saturating_mul(burst)),
        }
    }

    /// W in ns (at least 1).
    pub fn window_nanos(self) -> u64 {
        u64::try_from(self.window.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// governor's equivalent quota: one permit every `W / N` (whole ns, rounded down, at
    /// least 1 ns, so its long-run rate is at least N per W) and a burst of N.
    pub fn gcra_period(self) -> Duration {
        Duration::from_nanos(self.period_nanos())
    }

    /// A bucket's period T in ns: `W / N` (exact for a [`Config::bucket`]), at least 1.
    pub fn period_nanos(self) -> u64 {
        (self.window_nanos() / self.limit.max(1)).max(1)
    }

    /// A bucket's rate, one permit per [`Self::period_nanos`].
    pub fn rate(self) -> Result<Rate, ConfigError> {
        Rate::every(self.gcra_period())
    }
}

/// The lock-free limiter, its spec under both mutexes, and governor; `Ok(None)` for
/// [`Implementation::Naive`] and [`Implementation::Sharded`] (give the limiter's own
/// before calling this) and for [`Implementation::Floor`] (no limiter's).
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
        Implementation::Naive | Implementation::Sharded | Implementation::Floor => return Ok(None),
    }))
}

/// Runs a sharded window or bucket.
fn sharded<L: RateLimiter + Send + Sync + 'static>(
    plan: &Plan,
    build: impl FnOnce() -> Result<L, ConfigError>,
) -> Result<Option<Sample>, ConfigError> {
    Ok(Some(plan.run(|| build().map(Ringlimit))?))
}

/// Runs a naive version (which cannot fail to build).
fn naive<C: Contender>(
    plan: &Plan,
    build: impl FnOnce() -> C,
) -> Result<Option<Sample>, ConfigError> {
    Ok(Some(plan.run(|| Ok::<_, ConfigError>(build()))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn plan(audit: bool) -> Plan {
        Plan {
            threads: 2,
            duration: Duration::from_millis(2),
            exhaust: true,
            audit,
        }
    }

    /// Every limiter builds every implementation it offers, and refuses every call once
    /// exhausted (deny); the concurrency limiter's audit sees the C held permits.
    #[test]
    fn every_offered_implementation_runs_and_denies() {
        let mut cases = 0;
        for limiter in LIMITERS {
            let config = Scenario::Deny.config(limiter.family, 1);
            for implementation in Implementation::ALL {
                let sample = (limiter.run)(implementation, config, &plan(true)).unwrap();
                let Some(sample) = sample else {
                    assert!(!limiter.offers(implementation), "{}", limiter.name);
                    continue;
                };
                assert!(limiter.offers(implementation), "{}", limiter.name);
                let name = format!("{} / {}", limiter.name, implementation.name());
                assert!(sample.calls >= 2 * crate::harness::BATCH, "{name}");
                assert_eq!(sample.admitted, 0, "{name}");
                match limiter.audit {
                    Audit::InFlight => assert_eq!(sample.held, Some(config.limit), "{name}"),
                    Audit::Count { .. } => assert_eq!(sample.prefilled, 1, "{name}"),
                }
                cases += 1;
            }
        }
        // Five implementations of eight rate limiters, less warm-up's naive, and the two
        // sharded windows and two sharded buckets; four of the concurrency limiter; the
        // floor is no limiter's.
        assert_eq!(cases, 8 * 5 - 1 + 4 + 4);
    }

    /// The concurrency limiter in the allow scenario: every call acquires, the side counter
    /// sees no more than the threads, and only in an audit sample.
    #[test]
    fn in_flight_audit_counts_held_permits() {
        let concurrency = LIMITERS.iter().find(|l| l.name == "concurrency").unwrap();
        let config = Scenario::Allow.config(Family::Concurrency, 1);
        let allow = |audit| Plan {
            exhaust: false,
            ..plan(audit)
        };
        for implementation in [Implementation::LockFree, Implementation::Naive] {
            let sample = (concurrency.run)(implementation, config, &allow(true))
                .unwrap()
                .unwrap();
            assert_eq!(sample.admitted, sample.calls);
            let held = sample.held.unwrap();
            assert!((1..=2).contains(&held), "{held}");
            let timed = (concurrency.run)(implementation, config, &allow(false))
                .unwrap()
                .unwrap();
            assert_eq!(timed.held, None);
        }
    }

    #[test]
    fn bucket_configs_are_the_gcra_governor_gets() {
        let c = Config::bucket(250, 4);
        assert_eq!(
            (c.limit, c.window_nanos(), c.period_nanos()),
            (4, 1000, 250)
        );
        assert_eq!(c.rate().unwrap().period_nanos(), 250);
        assert_eq!(c.gcra_period(), Duration::from_nanos(250));
    }
}
