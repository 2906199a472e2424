//! [`BucketQuota`] (token bucket, leaky meter) and [`ShaperQuota`] (leaky shaper): validated
//! bucket configurations.

use std::fmt;
use std::time::Duration;

use crate::error::ConfigError;
use crate::rate::Rate;

use super::gcra::{Mode, Params};
use super::word::MAX_SPAN_NANOS;

/// A validated bucket quota: `burst` permits refilled at `rate`, for a
/// [`TokenBucket`](crate::TokenBucket) or a [`LeakyBucket::meter`](crate::LeakyBucket::meter)
/// (whose capacity is the burst). Or [`unlimited`](Self::unlimited).
///
/// It is `Copy`, and every check happens when it is made: `burst >= 1` and `burst × period
/// <=` [`BucketQuota::MAX_SPAN_NANOS`] (2^60 ns), the rate checked by [`Rate`]. Building a
/// bucket from it cannot fail. Both buckets take it the same way: rate first, then burst.
///
/// A bucket starts full unless the quota says [`start_empty`](Self::start_empty).
///
/// **No zero-refill budget.** The GCRA ties the burst to the period (`τ = burst × T <=
/// 2^60 ns`), so the slowest a bucket of burst `b` can refill is one permit per `2^60 / b`
/// ns: a bucket cannot honestly promise "never refills". Use
/// [`WindowQuota::budget`](crate::WindowQuota::budget) for a budget.
///
/// ```
/// use ringlimit::{ConfigError, Rate, RateLimiter, TokenBucket, BucketQuota};
/// let quota = BucketQuota::per_second(10)?.burst(20)?;
/// assert_eq!((quota.rate(), quota.burst_size()), (Rate::per_second(10)?, 20));
/// let bucket = TokenBucket::new(quota); // cannot fail
/// assert_eq!(bucket.available(), 20);
/// assert_eq!(BucketQuota::per_second(10)?.burst(0), Err(ConfigError::ZeroBurst));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BucketQuota {
    /// The validated meter (for an unlimited quota, the loosest one: 1 ns per permit, a
    /// burst of 2^60, which the limiter overrides on refusal).
    config: Params,
    unlimited: bool,
    empty: bool,
}

impl BucketQuota {
    /// The longest `burst × period`: 2^60 ns.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{BucketQuota, ConfigError, Rate};
    /// // One permit per microsecond: the burst may span at most 2^60 ns.
    /// let rate = Rate::every(Duration::from_micros(1))?;
    /// let most = BucketQuota::MAX_SPAN_NANOS / 1_000;
    /// assert!(BucketQuota::new(rate, most).is_ok());
    /// assert!(matches!(BucketQuota::new(rate, most + 1), Err(ConfigError::SpanTooLong { .. })));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_SPAN_NANOS: u64 = MAX_SPAN_NANOS;

    /// `burst` permits refilled at `rate`.
    ///
    /// Errors: [`ConfigError::ZeroBurst`], and [`ConfigError::SpanTooLong`] when `burst ×
    /// period` exceeds [`MAX_SPAN_NANOS`](Self::MAX_SPAN_NANOS).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{BucketQuota, ConfigError, Rate};
    /// let quota = BucketQuota::new(Rate::new(3, Duration::from_secs(2))?, 6)?;
    /// assert_eq!(quota.burst_size(), 6);
    /// assert!(matches!(
    ///     BucketQuota::new(Rate::per_hour(1)?, u64::MAX / 2),
    ///     Err(ConfigError::SpanTooLong { .. })
    /// ));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(rate: Rate, burst: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            config: Params::meter(rate, burst)?,
            unlimited: false,
            empty: false,
        })
    }

    /// `permits` per second, with a burst of `permits` (one second's worth) unless set with
    /// [`burst`](Self::burst).
    ///
    /// Errors: those of [`Rate::per_second`].
    ///
    /// ```
    /// use ringlimit::{BucketQuota, Rate};
    /// let quota = BucketQuota::per_second(10)?;
    /// assert_eq!((quota.rate(), quota.burst_size()), (Rate::per_second(10)?, 10));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_second(permits: u64) -> Result<Self, ConfigError> {
        Self::new(Rate::per_second(permits)?, permits)
    }

    /// `permits` per minute, with a burst of `permits` unless set.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, Rate};
    /// let quota = BucketQuota::per_minute(6)?;
    /// assert_eq!((quota.rate(), quota.burst_size()), (Rate::per_minute(6)?, 6));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_minute(permits: u64) -> Result<Self, ConfigError> {
        Self::new(Rate::per_minute(permits)?, permits)
    }

    /// `permits` per hour, with a burst of `permits` unless set.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, Rate};
    /// let quota = BucketQuota::per_hour(100)?;
    /// assert_eq!((quota.rate(), quota.burst_size()), (Rate::per_hour(100)?, 100));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_hour(permits: u64) -> Result<Self, ConfigError> {
        Self::new(Rate::per_hour(permits)?, permits)
    }

    /// No limit: a bucket built from it admits every call, of any size, and every
    /// reservation at once; [`available`](crate::RateLimiter::available) and
    /// [`limit`](crate::RateLimiter::limit) are `u64::MAX`. A bucket is unlimited, or not,
    /// for life: its `set_limit`, `set_rate` and the like return [`ConfigError::Unlimited`].
    ///
    /// ```
    /// use ringlimit::{BucketQuota, RateLimiter, TokenBucket};
    /// let bucket = TokenBucket::new(BucketQuota::unlimited());
    /// assert!(bucket.try_acquire_n(u64::MAX)?.is_admitted());
    /// assert_eq!(bucket.available(), u64::MAX);
    /// # Ok::<(), ringlimit::ExceedsLimit>(())
    /// ```
    pub fn unlimited() -> Self {
        Self {
            // Valid: 1 ns per permit, and 2^60 permits span 2^60 ns.
            config: Params {
                mode: Mode::Meter,
                period: 1,
                span: MAX_SPAN_NANOS,
                limit: MAX_SPAN_NANOS,
            },
            unlimited: true,
            empty: false,
        }
    }

    /// The same rate with a burst (a leaky meter's capacity) of `burst`.
    ///
    /// Errors: as [`new`](Self::new). On an unlimited quota, it stays unlimited.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, ConfigError, Rate};
    /// let quota = BucketQuota::per_second(10)?.burst(1)?;
    /// assert_eq!((quota.rate(), quota.burst_size()), (Rate::per_second(10)?, 1));
    /// assert_eq!(BucketQuota::per_second(10)?.burst(0), Err(ConfigError::ZeroBurst));
    /// assert!(BucketQuota::unlimited().burst(5)?.is_unlimited());
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn burst(self, burst: u64) -> Result<Self, ConfigError> {
        if self.is_unlimited() {
            return Ok(self);
        }
        Ok(Self {
            empty: self.empty,
            ..Self::new(self.rate(), burst)?
        })
    }

    /// The same quota with the bucket starting empty: no permit at its first reading, then
    /// filling at the rate (one permit after one period, full after `burst` periods), as
    /// Bucket4j's `withInitialTokens(0)` with a greedy refill: for a limiter that must not
    /// admit a burst right after a restart. Nothing changes for an unlimited quota.
    ///
    /// Not uber-go's `ratelimit.New(rate, ratelimit.WithoutSlack)`: that lets its first
    /// `Take` go at once and spaces the next ones a period apart, which is a bucket of
    /// burst 1 starting *full* (`BucketQuota::new(rate, 1)`, or a
    /// [`LeakyBucket::shaper`](crate::LeakyBucket::shaper)). Starting empty, every caller
    /// goes one period later than there.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// let quota = BucketQuota::per_second(10)?.start_empty();
    /// let bucket = TokenBucket::builder(quota).clock(clock.clone()).build();
    /// assert!(!bucket.try_acquire());
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(bucket.available(), 2);
    ///
    /// // Burst 1 at 10/s, three callers at 0 ms: empty, they act at 100, 200 and 300 ms;
    /// // full (uber-go without slack), at 0, 100 and 200 ms.
    /// let acts = |quota: BucketQuota| {
    ///     let bucket = TokenBucket::builder(quota).clock(ManualClock::new()).build();
    ///     let acts: Vec<u64> = (0..3).map(|_| bucket.reserve(1).unwrap().ticket().act_at() / 1_000_000).collect();
    ///     acts
    /// };
    /// let one = BucketQuota::new(Rate::per_second(10)?, 1)?;
    /// assert_eq!(acts(one.start_empty()), [100, 200, 300]);
    /// assert_eq!(acts(one), [0, 100, 200]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_empty(self) -> Self {
        Self {
            empty: !self.is_unlimited(),
            ..self
        }
    }

    /// The refill rate (one permit per nanosecond for an unlimited quota).
    ///
    /// ```
    /// use ringlimit::{BucketQuota, Rate};
    /// assert_eq!(BucketQuota::per_second(4)?.rate(), Rate::per_second(4)?);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.config.period)
    }

    /// The burst (capacity); `u64::MAX` when unlimited.
    ///
    /// ```
    /// use ringlimit::BucketQuota;
    /// assert_eq!(BucketQuota::per_second(4)?.burst(8)?.burst_size(), 8);
    /// assert_eq!(BucketQuota::unlimited().burst_size(), u64::MAX);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn burst_size(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.config.limit
    }

    /// Whether a bucket built from this quota starts empty.
    ///
    /// ```
    /// use ringlimit::BucketQuota;
    /// assert!(!BucketQuota::per_second(4)?.starts_empty());
    /// assert!(BucketQuota::per_second(4)?.start_empty().starts_empty());
    /// // An unlimited quota never starts empty.
    /// assert!(!BucketQuota::unlimited().start_empty().starts_empty());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn starts_empty(&self) -> bool {
        self.empty
    }

    /// Whether this is [`unlimited`](Self::unlimited).
    ///
    /// ```
    /// use ringlimit::BucketQuota;
    /// assert!(BucketQuota::unlimited().is_unlimited());
    /// assert!(!BucketQuota::per_second(4)?.is_unlimited());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn is_unlimited(&self) -> bool {
        self.unlimited
    }

    /// The engine's configuration.
    pub(crate) fn config(&self) -> Params {
        self.config
    }
}

/// A validated shaper quota for [`LeakyBucket::shaper`](crate::LeakyBucket::shaper): callers
/// leave at `rate`, each queued at most `max_wait`.
///
/// `Copy`; `max_wait <=` [`ShaperQuota::MAX_SPAN_NANOS`] (2^60 ns) is checked when it is
/// made, so building the shaper cannot fail. A shaper has no unlimited form (a shaper that
/// never delays is no shaper: use an unlimited [`BucketQuota`] meter).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{LeakyBucket, ShaperQuota};
/// let quota = ShaperQuota::per_second(100)?.max_wait(Duration::from_millis(50))?;
/// let shaper = LeakyBucket::shaper(quota);
/// assert_eq!(shaper.max_wait(), Some(Duration::from_millis(50)));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ShaperQuota {
    /// The validated shaper, its per-call cap not set.
    config: Params,
}

impl ShaperQuota {
    /// The longest maximum wait: 2^60 ns.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, Rate, ShaperQuota};
    /// let longest = Duration::from_nanos(ShaperQuota::MAX_SPAN_NANOS);
    /// let rate = Rate::per_second(1)?;
    /// assert!(ShaperQuota::new(rate, longest).is_ok());
    /// assert!(matches!(
    ///     ShaperQuota::new(rate, longest + Duration::from_nanos(1)),
    ///     Err(ConfigError::SpanTooLong { .. })
    /// ));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_SPAN_NANOS: u64 = MAX_SPAN_NANOS;

    /// Callers leave at `rate`, each queued at most `max_wait`.
    ///
    /// Errors: [`ConfigError::SpanTooLong`] when `max_wait` exceeds
    /// [`MAX_SPAN_NANOS`](Self::MAX_SPAN_NANOS).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, Rate, ShaperQuota};
    /// assert!(ShaperQuota::new(Rate::per_second(1)?, Duration::ZERO).is_ok());
    /// assert!(matches!(
    ///     ShaperQuota::new(Rate::per_second(1)?, Duration::MAX),
    ///     Err(ConfigError::SpanTooLong { .. })
    /// ));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(rate: Rate, max_wait: Duration) -> Result<Self, ConfigError> {
        Ok(Self {
            config: Params::shaper(rate, max_wait, u64::MAX)?,
        })
    }

    /// `permits` per second, queueing without a practical bound (a maximum wait of 2^60 ns,
    /// as uber-go's `Take`) unless set with [`max_wait`](Self::max_wait).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, ShaperQuota};
    /// let quota = ShaperQuota::per_second(100)?;
    /// assert_eq!(quota.rate(), Rate::per_second(100)?);
    /// assert_eq!(quota.max_wait_length(), Duration::from_nanos(ShaperQuota::MAX_SPAN_NANOS));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_second(permits: u64) -> Result<Self, ConfigError> {
        Self::new(
            Rate::per_second(permits)?,
            Duration::from_nanos(MAX_SPAN_NANOS),
        )
    }

    /// The same rate, each caller queued at most `max_wait`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::ShaperQuota;
    /// let quota = ShaperQuota::per_second(100)?.max_wait(Duration::from_millis(20))?;
    /// assert_eq!(quota.max_wait_length(), Duration::from_millis(20));
    /// assert!(ShaperQuota::per_second(100)?.max_wait(Duration::MAX).is_err());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_wait(self, max_wait: Duration) -> Result<Self, ConfigError> {
        Self::new(self.rate(), max_wait)
    }

    /// The leak rate.
    ///
    /// ```
    /// use ringlimit::{Rate, ShaperQuota};
    /// assert_eq!(ShaperQuota::per_second(50)?.rate(), Rate::per_second(50)?);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.config.period)
    }

    /// The longest a caller may be queued.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, ShaperQuota};
    /// let quota = ShaperQuota::new(Rate::per_second(10)?, Duration::from_secs(1))?;
    /// assert_eq!(quota.max_wait_length(), Duration::from_secs(1));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_wait_length(&self) -> Duration {
        Duration::from_nanos(self.config.span)
    }

    /// The engine's configuration.
    pub(crate) fn config(&self) -> Params {
        self.config
    }
}

impl fmt::Debug for BucketQuota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.unlimited {
            return f.write_str("BucketQuota::unlimited()");
        }
        f.debug_struct("BucketQuota")
            .field("rate", &self.rate())
            .field("burst", &self.config.limit)
            .field("start_empty", &self.empty)
            .finish()
    }
}

impl fmt::Debug for ShaperQuota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShaperQuota")
            .field("rate", &self.rate())
            .field("max_wait", &self.max_wait_length())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_names_what_is_wrong() {
        let rate = Rate::per_second(10).unwrap();
        assert_eq!(BucketQuota::new(rate, 0), Err(ConfigError::ZeroBurst));
        assert!(matches!(
            BucketQuota::new(Rate::per_hour(1).unwrap(), 1 << 30),
            Err(ConfigError::SpanTooLong { .. })
        ));
        assert_eq!(BucketQuota::per_second(0), Err(ConfigError::ZeroRate));
        assert!(matches!(
            BucketQuota::per_second(2_000_000_000),
            Err(ConfigError::RateTooFast { .. })
        ));
        let quota = BucketQuota::per_second(10).unwrap();
        assert_eq!(quota.burst(0), Err(ConfigError::ZeroBurst));
        assert!(matches!(
            ShaperQuota::new(rate, Duration::from_nanos(MAX_SPAN_NANOS + 1)),
            Err(ConfigError::SpanTooLong { .. })
        ));
        assert!(ShaperQuota::new(rate, Duration::from_nanos(MAX_SPAN_NANOS)).is_ok());
    }

    #[test]
    fn defaults_and_copies() {
        let quota = BucketQuota::per_minute(30).unwrap();
        let copy = quota;
        assert_eq!(quota, copy);
        assert_eq!(quota.burst_size(), 30);
        assert_eq!(quota.rate(), Rate::per_minute(30).unwrap());
        assert!(!quota.starts_empty());
        let empty = quota.start_empty().burst(5).unwrap();
        assert!(empty.starts_empty());
        assert_eq!(empty.burst_size(), 5);
        let shaper = ShaperQuota::per_second(4).unwrap();
        assert_eq!(
            shaper.max_wait_length(),
            Duration::from_nanos(MAX_SPAN_NANOS)
        );
        assert_eq!(shaper, shaper.max_wait(shaper.max_wait_length()).unwrap());
    }

    #[test]
    fn unlimited_stays_unlimited() {
        let quota = BucketQuota::unlimited();
        assert!(quota.is_unlimited());
        assert_eq!(quota.burst_size(), u64::MAX);
        assert!(quota.burst(3).unwrap().is_unlimited());
        assert!(!quota.start_empty().starts_empty());
        assert_eq!(quota.config().limit, MAX_SPAN_NANOS);
        assert_eq!(format!("{quota:?}"), "BucketQuota::unlimited()");
        let limited = format!("{:?}", BucketQuota::per_second(4).unwrap());
        assert!(limited.contains("burst: 4"), "{limited}");
        let shaper = format!("{:?}", ShaperQuota::per_second(4).unwrap());
        assert!(shaper.contains("max_wait"), "{shaper}");
    }
}
