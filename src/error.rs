//! Error types: every bad input is a value, never a panic.

use std::fmt;
use std::time::Duration;

/// A limiter was configured with values it cannot honour.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{ConfigError, RateLimiter, SlidingWindow, WindowQuota};
/// assert_eq!(WindowQuota::per(0, Duration::from_secs(1)), Err(ConfigError::ZeroLimit));
/// let error = WindowQuota::per_second(10)?.buckets(0).unwrap_err();
/// assert_eq!(error, ConfigError::ZeroBuckets);
/// assert_eq!(error.to_string(), "a sliding window needs at least 1 bucket");
/// // An unlimited limiter stays unlimited.
/// let unlimited = SlidingWindow::new(WindowQuota::unlimited());
/// assert_eq!(unlimited.set_limit(5), Err(ConfigError::Unlimited));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The limit was zero: such a limiter could never admit anything.
    ZeroLimit,
    /// The window was zero nanoseconds long.
    ZeroWindow,
    /// The sliding window was given zero buckets.
    ZeroBuckets,
    /// `window / buckets` is below one nanosecond, the clock's resolution.
    BucketTooNarrow {
        /// The window, in nanoseconds.
        window_nanos: u128,
        /// The number of buckets asked for.
        buckets: u64,
    },
    /// The limit does not fit the limiter's packed atomic word.
    LimitTooLarge {
        /// The limit asked for.
        limit: u64,
        /// The largest limit this limiter can represent.
        max: u64,
    },
    /// The window is longer than the limiter's time arithmetic can represent.
    WindowTooLong {
        /// The window, in nanoseconds.
        window_nanos: u128,
        /// The longest window this limiter accepts, in nanoseconds.
        max_nanos: u64,
    },
    /// More buckets than the limiter supports.
    TooManyBuckets {
        /// The number of buckets asked for.
        buckets: u64,
        /// The most buckets this limiter supports.
        max: u64,
    },
    /// A rate of zero permits, or permits per a zero-length period.
    ZeroRate,
    /// A rate of more than one permit per nanosecond, the clocks' resolution.
    RateTooFast {
        /// Permits asked for.
        permits: u64,
        /// Per this many nanoseconds.
        per_nanos: u128,
    },
    /// A burst (or a leaky bucket's capacity) of zero: nothing could ever be admitted.
    ZeroBurst,
    /// A span of time derived from the configuration (one permit's period, `burst ×
    /// period`, a maximum wait, a warm-up period) is longer than the limiter can represent.
    SpanTooLong {
        /// What the span is, e.g. `"burst × period"`.
        what: &'static str,
        /// The span, in nanoseconds.
        nanos: u128,
        /// The longest supported, in nanoseconds.
        max_nanos: u64,
    },
    /// A warm-up cold factor below 1 or not finite: the cold interval must be at least the
    /// stable one.
    InvalidColdFactor,
    /// A reconfiguration of a keyed token bucket (its 8-byte cells hold the configuration
    /// epoch modulo 64) that came with the 62 before it, each within one burst's refill
    /// time of the one before: a cell untouched since then could still hold permits owed
    /// under a configuration whose tag the new one would reuse. Retry after `retry_after`
    /// (the refill time of the configuration in force since its change), when every such
    /// cell is full.
    ReconfiguredTooOften {
        /// How long until the reconfiguration is accepted: [`Duration::MAX`](std::time::Duration::MAX)
        /// when never (a burst whose refill time reaches past the 8-byte cell's timeline, about
        /// 9.1 years after the configuration's origin).
        retry_after: std::time::Duration,
    },
    /// An 8-byte [`Narrow`](crate::bucket::Narrow) bucket cell under a token bucket's or leaky
    /// meter's configuration that keeps permits: its tags need a full bucket to stay full
    /// across reconfigurations, as under
    /// [`BucketConfig::keeping_debt`](crate::cell::BucketConfig::keeping_debt).
    NarrowKeepsPermits,
    /// A warm-up cold factor so large (around 2^54 or more) that the curve's warm-up part,
    /// `2 × warm-up / (period + cold interval)` permits, vanishes in `f64` rounding next to
    /// its stable part, `0.5 × warm-up / period`: the limiter would have no warm-up at all.
    ColdFactorTooLarge,
    /// A warm-up curve whose idle time per stored permit (`warm-up / max permits`) is below
    /// 1 ns: the stored permits are tracked as whole nanoseconds of idle time, so such a
    /// limiter could not spend them and would never warm up. It takes a period of 1 ns with
    /// a cold factor below 3 (a billion permits a second).
    CoolDownBelowOneNanosecond,
    /// A warm-up period of zero: the warm-up curve would have no permits to store.
    ZeroWarmUp,
    /// A shaper-only setting (the maximum wait) was changed on a leaky bucket that meters.
    NotAShaper,
    /// `set_limit` on a limiter built from an unlimited quota: it stays unlimited for life
    /// (build a limited one instead).
    Unlimited,
    /// A [`SlidingConfig`](crate::cell::SlidingConfig) of `B` buckets was given a quota
    /// counted in another number of buckets (set it with
    /// [`WindowQuota::buckets`](crate::WindowQuota::buckets)).
    BucketCountMismatch {
        /// The quota's bucket count.
        quota: u64,
        /// The cells' bucket count, `B`.
        cell: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroLimit => f.write_str("the limit must be at least 1 permit per window"),
            Self::ZeroWindow => f.write_str("the window must be longer than zero"),
            Self::ZeroBuckets => f.write_str("a sliding window needs at least 1 bucket"),
            Self::BucketTooNarrow {
                window_nanos,
                buckets,
            } => write!(
                f,
                "{buckets} buckets over a {window_nanos} ns window makes buckets narrower than 1 ns; \
                 use fewer buckets or a longer window"
            ),
            Self::LimitTooLarge { limit, max } => write!(
                f,
                "a limit of {limit} does not fit this limiter's packed counters (at most {max})"
            ),
            Self::WindowTooLong {
                window_nanos,
                max_nanos,
            } => write!(
                f,
                "a window of {window_nanos} ns is longer than the supported {max_nanos} ns"
            ),
            Self::BucketCountMismatch { quota, cell } => write!(
                f,
                "the quota counts {quota} buckets but the cells count {cell}; \
                 give the quota `.buckets({cell})`"
            ),
            Self::TooManyBuckets { buckets, max } => {
                write!(f, "{buckets} buckets is more than the supported {max}")
            }
            Self::ZeroRate => f.write_str("a rate must be at least 1 permit per non-zero period"),
            Self::RateTooFast { permits, per_nanos } => write!(
                f,
                "{permits} permits per {per_nanos} ns is more than 1 permit per nanosecond, \
                 the clocks' resolution"
            ),
            Self::ZeroBurst => f.write_str("the burst (capacity) must be at least 1 permit"),
            Self::SpanTooLong {
                what,
                nanos,
                max_nanos,
            } => write!(
                f,
                "{what} is {nanos} ns, longer than the supported {max_nanos} ns"
            ),
            Self::InvalidColdFactor => {
                f.write_str("the cold factor must be a finite number of at least 1")
            }
            Self::ReconfiguredTooOften { retry_after } => write!(
                f,
                "63 reconfigurations in a row, each within one burst's refill time of the one \
                 before, would let a keyed token bucket's 8-byte cell misread its configuration; \
                 retry after {retry_after:?}"
            ),
            Self::NarrowKeepsPermits => f.write_str(
                "an 8-byte (Narrow) bucket cell needs a shaper's configuration or a token \
                 bucket's or leaky meter's that keeps debt (BucketConfig::keeping_debt)",
            ),
            Self::ColdFactorTooLarge => f.write_str(
                "the cold factor is so large that the warm-up part of the curve is lost to \
                 floating-point rounding (the limiter would not warm up); use a smaller one \
                 (below 2^50 always works)",
            ),
            Self::CoolDownBelowOneNanosecond => f.write_str(
                "the warm-up curve stores more than one permit per nanosecond of idle time \
                 (a period of 1 ns with a cold factor below 3): its stored permits cannot be \
                 tracked in whole nanoseconds; use a cold factor of at least 3 or a slower rate",
            ),
            Self::ZeroWarmUp => f.write_str(
                "the warm-up period must be longer than zero (a limiter without warm-up is a \
                 token bucket)",
            ),
            Self::NotAShaper => f.write_str(
                "only a shaping leaky bucket has a maximum wait; this one meters (it refuses \
                 instead of queueing)",
            ),
            Self::Unlimited => f.write_str(
                "this limiter was built from an unlimited quota and has no limit to change; \
                 build a limiter from a limited quota instead",
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A request for more permits in one call than the limiter can ever grant at once: no
/// amount of waiting could satisfy it, so it is an error at once, never a wait for ever.
///
/// Every limiter's [`limit`](crate::RateLimiter::limit) is that bound: the window's quota,
/// the token bucket's burst, the leaky meter's capacity, the shaper's per-call maximum, the
/// concurrency limit.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{ExceedsLimit, RateLimiter, SlidingWindow, WindowQuota};
/// let limiter = SlidingWindow::builder(WindowQuota::per(10, Duration::from_secs(1))?).build();
/// assert_eq!(
///     limiter.try_acquire_n(11),
///     Err(ExceedsLimit { requested: 11, limit: 10 })
/// );
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceedsLimit {
    /// Permits asked for.
    pub requested: u64,
    /// The most this limiter grants in one call.
    pub limit: u64,
}

impl fmt::Display for ExceedsLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { requested, limit } = self;
        write!(
            f,
            "{requested} permits were requested at once but this limiter grants at most \
             {limit} at a time (its limit, burst or capacity), so the request can never \
             be granted"
        )
    }
}

impl std::error::Error for ExceedsLimit {}

/// Why a wait for permits ended without them.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, ExceedsLimit, FixedWindow, RateLimiter, Wait, WaitError, WindowQuota};
/// let limiter = FixedWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?).clock(ManualClock::new()).build();
/// assert!(limiter.try_acquire_n(2)?.is_admitted());
/// assert_eq!(
///     limiter.try_acquire_for(1, Duration::from_millis(10)),
///     Err(WaitError::Timeout { retry_after: Duration::from_secs(1), timeout: Duration::from_millis(10) })
/// );
/// assert_eq!(
///     limiter.acquire_n(3),
///     Err(WaitError::ExceedsLimit(ExceedsLimit { requested: 3, limit: 2 }))
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitError {
    /// No amount of waiting could grant the request.
    ExceedsLimit(ExceedsLimit),
    /// The permits could not be had within the timeout. Returned as soon as that is known,
    /// not after sleeping the timeout; nothing was consumed.
    Timeout {
        /// The earliest time from the refusal at which the request could be granted, if no
        /// one else takes permits meanwhile.
        retry_after: Duration,
        /// The timeout that was too short.
        timeout: Duration,
    },
    /// No amount of waiting could grant the request: the limiter refused and its time can no
    /// longer reach the moment the request could go (its clock has run past the last time
    /// the limiter represents, decades after its origin or the end of `u64` nanoseconds,
    /// where its time stands still). Returned by an unbounded wait instead of asking again
    /// for ever.
    TimeExhausted,
}

impl From<ExceedsLimit> for WaitError {
    fn from(error: ExceedsLimit) -> Self {
        Self::ExceedsLimit(error)
    }
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ExceedsLimit(error) => error.fmt(f),
            Self::TimeExhausted => f.write_str(
                "the limiter's time stands still at the end of what it can represent, so the \
                 request can never be granted",
            ),
            Self::Timeout {
                retry_after,
                timeout,
            } => write!(
                f,
                "the permits could be granted in {retry_after:?} at the earliest, \
                 beyond the timeout of {timeout:?}"
            ),
        }
    }
}

impl std::error::Error for WaitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::ExceedsLimit(error) => Some(error),
            Self::Timeout { .. } | Self::TimeExhausted => None,
        }
    }
}
