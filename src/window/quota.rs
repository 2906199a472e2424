//! [`WindowQuota`]: a validated limit per window, shared by the window-shaped limiters.

use std::time::Duration;

use crate::error::ConfigError;
use crate::validate::{self, MAX_WINDOW_NANOS};
use crate::window::word::{self, MAX_BUCKETS};

/// The sliding window's default resolution: 10 buckets (fewer when the window is shorter
/// than 10 ns, so that every bucket is at least 1 ns wide).
pub(crate) const DEFAULT_BUCKETS: u64 = 10;

/// The limit marking an unlimited quota.
const UNLIMITED: u64 = u64::MAX;

/// The largest limit per window a quota holds (2^40 − 1): the bucketed windows' bound.
const MAX_LIMIT: u64 = word::WIDE_MAX_LIMIT;

/// A validated window quota: at most `limit` permits per `window`, counted in `buckets`
/// buckets by a [`SlidingWindow`](crate::SlidingWindow) (or a
/// [`ShardedWindow`](crate::ShardedWindow) built from one). Or [`unlimited`](Self::unlimited).
///
/// It is `Copy`, and every check of its own happens when it is made: `1 <= limit <=`
/// [`WindowQuota::MAX_LIMIT`] (2^40 − 1), `1 ns <= window <=`
/// [`WindowQuota::MAX_WINDOW_NANOS`] (2^60 ns, about 36 years), `1 <= buckets <=`
/// [`WindowQuota::MAX_BUCKETS`] with `window / buckets >= 1 ns`. The buckets are the sliding
/// window's resolution only: the fixed window counts in one bucket, the log and the
/// approximate window have none.
///
/// Which limiters accept which limits:
///
/// - the bucketed windows, [`SlidingWindow`](crate::SlidingWindow),
///   [`FixedWindow`](crate::FixedWindow) and [`ShardedWindow`](crate::ShardedWindow), hold
///   every quota: building one cannot fail;
/// - the [`SlidingLog`](crate::SlidingLog) (and its [`LogConfig`](crate::cell::LogConfig))
///   holds limits up to [`SlidingLog::MAX_LIMIT`](crate::SlidingLog::MAX_LIMIT) (2^20 − 1,
///   one 8-byte slot per permit), the
///   [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) up to
///   [`ApproxSlidingWindow::MAX_LIMIT`](crate::ApproxSlidingWindow::MAX_LIMIT) (2^20 − 1,
///   two counters in one word), and the keyed window cells' configurations,
///   [`WindowConfig`](crate::cell::WindowConfig) and
///   [`SlidingConfig`](crate::cell::SlidingConfig), up to
///   [`WindowConfig::MAX_LIMIT`](crate::cell::WindowConfig::MAX_LIMIT) and
///   [`SlidingConfig::MAX_LIMIT`](crate::cell::SlidingConfig::MAX_LIMIT) (2^20 − 1 each, a
///   cell's counts in one word): their constructors refuse a larger limit with
///   [`ConfigError::LimitTooLarge`] naming their own bound. All of them hold every
///   [`unlimited`](Self::unlimited) quota.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{ConfigError, RateLimiter, SlidingWindow, WindowQuota};
/// let quota = WindowQuota::per_second(100)?.buckets(20)?;
/// assert_eq!(quota.limit(), 100);
/// assert_eq!((quota.window_length(), quota.bucket_count()), (Duration::from_secs(1), 20));
/// let limiter = SlidingWindow::new(quota); // cannot fail
/// assert_eq!(limiter.limit(), 100);
/// assert_eq!(WindowQuota::per_second(0), Err(ConfigError::ZeroLimit));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowQuota {
    /// `1..=MAX_LIMIT`, or [`UNLIMITED`].
    limit: u64,
    /// `1..=MAX_WINDOW_NANOS`.
    window: u64,
    /// `1..=MAX_BUCKETS`, at most `window`.
    buckets: u64,
}

impl WindowQuota {
    /// The largest limit per window (2^40 − 1, 1 099 511 627 775): the bucketed windows'
    /// bound ([`SlidingWindow`](crate::SlidingWindow), [`FixedWindow`](crate::FixedWindow),
    /// [`ShardedWindow`](crate::ShardedWindow)), so that "10 000 000 per hour" is a quota.
    ///
    /// The limiters whose state is sized by the limit have smaller bounds of their own,
    /// checked when they are built ([`ConfigError::LimitTooLarge`] naming theirs):
    /// [`SlidingLog::MAX_LIMIT`](crate::SlidingLog::MAX_LIMIT) (the sliding log and its
    /// [`LogConfig`](crate::cell::LogConfig)),
    /// [`ApproxSlidingWindow::MAX_LIMIT`](crate::ApproxSlidingWindow::MAX_LIMIT) (the
    /// approximate window), and the keyed window cells'
    /// [`WindowConfig::MAX_LIMIT`](crate::cell::WindowConfig::MAX_LIMIT) and
    /// [`SlidingConfig::MAX_LIMIT`](crate::cell::SlidingConfig::MAX_LIMIT), 2^20 − 1 each.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ApproxSlidingWindow, ConfigError, SlidingLog, WindowQuota};
    /// assert_eq!(WindowQuota::MAX_LIMIT, (1 << 40) - 1);
    /// assert!(WindowQuota::per_second(WindowQuota::MAX_LIMIT).is_ok());
    /// assert!(matches!(
    ///     WindowQuota::per(WindowQuota::MAX_LIMIT + 1, Duration::from_secs(1)),
    ///     Err(ConfigError::LimitTooLarge { .. })
    /// ));
    /// // A quota the log cannot hold: its constructor says so, naming its own bound.
    /// let hourly = WindowQuota::per_hour(10_000_000)?;
    /// assert_eq!(
    ///     SlidingLog::new(hourly).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: SlidingLog::MAX_LIMIT })
    /// );
    /// assert!(ApproxSlidingWindow::new(hourly).is_err());
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;
    /// The most buckets (4096).
    ///
    /// ```
    /// use ringlimit::{ConfigError, WindowQuota};
    /// let quota = WindowQuota::per_hour(10)?;
    /// assert!(quota.buckets(WindowQuota::MAX_BUCKETS).is_ok());
    /// assert!(matches!(
    ///     quota.buckets(WindowQuota::MAX_BUCKETS + 1),
    ///     Err(ConfigError::TooManyBuckets { .. })
    /// ));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_BUCKETS: u64 = MAX_BUCKETS;
    /// The longest window: 2^60 ns, about 36 years.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// let longest = Duration::from_nanos(WindowQuota::MAX_WINDOW_NANOS);
    /// assert!(WindowQuota::per(1, longest).is_ok());
    /// assert!(matches!(
    ///     WindowQuota::per(1, longest + Duration::from_nanos(1)),
    ///     Err(ConfigError::WindowTooLong { .. })
    /// ));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_WINDOW_NANOS: u64 = MAX_WINDOW_NANOS;

    /// `limit` permits per `window`, in 10 buckets (or one per nanosecond of a window shorter
    /// than 10 ns).
    ///
    /// Errors: [`ConfigError::ZeroLimit`], [`ConfigError::LimitTooLarge`] above
    /// [`MAX_LIMIT`](Self::MAX_LIMIT), [`ConfigError::ZeroWindow`],
    /// [`ConfigError::WindowTooLong`] above [`MAX_WINDOW_NANOS`](Self::MAX_WINDOW_NANOS).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// let quota = WindowQuota::per(5, Duration::from_millis(250))?;
    /// assert_eq!(quota.bucket_count(), 10);
    /// assert_eq!(WindowQuota::per(5, Duration::ZERO), Err(ConfigError::ZeroWindow));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn per(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        let window = validate::window_nanos(window)?;
        Ok(Self {
            limit: validate::limit(limit, MAX_LIMIT)?,
            window,
            buckets: DEFAULT_BUCKETS.min(window),
        })
    }

    /// `limit` permits per second.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// let quota = WindowQuota::per_second(100)?;
    /// assert_eq!((quota.limit(), quota.window_length()), (100, Duration::from_secs(1)));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_second(limit: u64) -> Result<Self, ConfigError> {
        Self::per(limit, Duration::from_secs(1))
    }

    /// `limit` permits per minute.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowQuota::per_minute(30)?, WindowQuota::per(30, Duration::from_secs(60))?);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_minute(limit: u64) -> Result<Self, ConfigError> {
        Self::per(limit, Duration::from_secs(60))
    }

    /// `limit` permits per hour.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowQuota::per_hour(1_000)?.window_length(), Duration::from_secs(3600));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_hour(limit: u64) -> Result<Self, ConfigError> {
        Self::per(limit, Duration::from_secs(3600))
    }

    /// A budget: `limit` permits that are never given back, as far as any clock goes. It is
    /// `limit` per the longest window ([`MAX_WINDOW_NANOS`](Self::MAX_WINDOW_NANOS), about 36
    /// years) in one bucket, so a [`FixedWindow`](crate::FixedWindow) renews it only when its
    /// clock passes 2^60 ns, and a sliding limiter frees a permit only 2^60 ns after it was
    /// taken. `set_limit` on the limiter raises or lowers what is left of the budget.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let clock = ManualClock::new();
    /// let budget = FixedWindow::builder(WindowQuota::budget(2)?).clock(clock.clone()).build();
    /// assert!(budget.try_acquire_n(2)?.is_admitted());
    /// clock.advance(Duration::from_secs(10 * 365 * 24 * 3600));
    /// assert!(!budget.try_acquire());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn budget(limit: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            limit: validate::limit(limit, MAX_LIMIT)?,
            window: MAX_WINDOW_NANOS,
            buckets: 1,
        })
    }

    /// No limit: a limiter built from it admits every call, of any size;
    /// [`available`](crate::RateLimiter::available) and [`limit`](crate::RateLimiter::limit)
    /// are `u64::MAX`. Its window (one second) and buckets may be
    /// set as usual; they change nothing.
    ///
    /// A limiter is unlimited, or not, for life: its `set_limit` returns
    /// [`ConfigError::Unlimited`] (build a new limiter to put a limit in place).
    ///
    /// ```
    /// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::new(WindowQuota::unlimited());
    /// assert!(limiter.try_acquire_n(u64::MAX)?.is_admitted());
    /// assert_eq!((limiter.available(), limiter.limit()), (u64::MAX, u64::MAX));
    /// # Ok::<(), ringlimit::ExceedsLimit>(())
    /// ```
    pub fn unlimited() -> Self {
        Self {
            limit: UNLIMITED,
            window: 1_000_000_000,
            buckets: DEFAULT_BUCKETS,
        }
    }

    /// The same quota counted in `buckets` buckets (the sliding window's resolution:
    /// `window / buckets`).
    ///
    /// Errors: [`ConfigError::ZeroBuckets`], [`ConfigError::TooManyBuckets`] above
    /// [`MAX_BUCKETS`](Self::MAX_BUCKETS), [`ConfigError::BucketTooNarrow`] when a bucket
    /// would be narrower than 1 ns.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// assert_eq!(WindowQuota::per_second(10)?.buckets(0), Err(ConfigError::ZeroBuckets));
    /// assert!(matches!(
    ///     WindowQuota::per(10, Duration::from_nanos(3))?.buckets(4),
    ///     Err(ConfigError::BucketTooNarrow { .. })
    /// ));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn buckets(self, buckets: u64) -> Result<Self, ConfigError> {
        validate::bucket_nanos(Duration::from_nanos(self.window), buckets, MAX_BUCKETS)?;
        Ok(Self { buckets, ..self })
    }

    /// The same limit over another `window`, keeping the buckets.
    ///
    /// Errors: [`ConfigError::ZeroWindow`], [`ConfigError::WindowTooLong`], and
    /// [`ConfigError::BucketTooNarrow`] when the buckets no longer fit the window.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// let quota = WindowQuota::per_second(100)?.window(Duration::from_secs(60))?;
    /// assert_eq!(quota, WindowQuota::per_minute(100)?);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(self, window: Duration) -> Result<Self, ConfigError> {
        let window_nanos = validate::window_nanos(window)?;
        validate::bucket_nanos(window, self.buckets, MAX_BUCKETS)?;
        Ok(Self {
            window: window_nanos,
            ..self
        })
    }

    /// The most permits per window; `u64::MAX` when unlimited.
    ///
    /// ```
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowQuota::per_second(50)?.limit(), 50);
    /// assert_eq!(WindowQuota::unlimited().limit(), u64::MAX);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The window.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// let quota = WindowQuota::per(5, Duration::from_millis(250))?;
    /// assert_eq!(quota.window_length(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window_length(&self) -> Duration {
        Duration::from_nanos(self.window)
    }

    /// The number of buckets.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowQuota::per_second(10)?.bucket_count(), 10);
    /// assert_eq!(WindowQuota::per_second(10)?.buckets(4)?.bucket_count(), 4);
    /// // A window shorter than 10 ns gets one bucket per nanosecond.
    /// assert_eq!(WindowQuota::per(1, Duration::from_nanos(3))?.bucket_count(), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn bucket_count(&self) -> u64 {
        self.buckets
    }

    /// Whether this is [`unlimited`](Self::unlimited).
    ///
    /// ```
    /// use ringlimit::WindowQuota;
    /// assert!(WindowQuota::unlimited().is_unlimited());
    /// assert!(!WindowQuota::per_second(10)?.is_unlimited());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn is_unlimited(&self) -> bool {
        self.limit == UNLIMITED
    }

    /// The window in nanoseconds.
    pub(crate) fn window_nanos(&self) -> u64 {
        self.window
    }

    /// The limit the engine counts under: the quota's, or the 64-bit window engine's largest
    /// (2^20 − 1) for an unlimited one (which admits past it on the refusal path).
    pub(crate) fn engine_limit(&self) -> u64 {
        if self.is_unlimited() {
            word::MAX_LIMIT
        } else {
            self.limit
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second() -> Duration {
        Duration::from_secs(1)
    }

    #[test]
    fn every_error_names_what_is_wrong() {
        assert_eq!(WindowQuota::per(0, second()), Err(ConfigError::ZeroLimit));
        assert_eq!(
            WindowQuota::per(MAX_LIMIT + 1, second()),
            Err(ConfigError::LimitTooLarge {
                limit: MAX_LIMIT + 1,
                max: MAX_LIMIT
            })
        );
        assert_eq!(
            WindowQuota::per(1, Duration::ZERO),
            Err(ConfigError::ZeroWindow)
        );
        assert!(matches!(
            WindowQuota::per(1, Duration::from_nanos(MAX_WINDOW_NANOS + 1)),
            Err(ConfigError::WindowTooLong { .. })
        ));
        let quota = WindowQuota::per_second(1).unwrap();
        assert_eq!(quota.buckets(0), Err(ConfigError::ZeroBuckets));
        assert_eq!(
            quota.buckets(MAX_BUCKETS + 1),
            Err(ConfigError::TooManyBuckets {
                buckets: MAX_BUCKETS + 1,
                max: MAX_BUCKETS
            })
        );
        let narrow = WindowQuota::per(1, Duration::from_nanos(3)).unwrap();
        assert_eq!(narrow.bucket_count(), 3);
        assert!(matches!(
            narrow.buckets(4),
            Err(ConfigError::BucketTooNarrow { .. })
        ));
        let fine = quota.buckets(100).unwrap();
        assert!(matches!(
            fine.window(Duration::from_nanos(99)),
            Err(ConfigError::BucketTooNarrow { .. })
        ));
        assert_eq!(fine.window(Duration::ZERO), Err(ConfigError::ZeroWindow));
        assert_eq!(WindowQuota::budget(0), Err(ConfigError::ZeroLimit));
    }

    #[test]
    fn extremes_are_accepted() {
        let quota = WindowQuota::per(MAX_LIMIT, Duration::from_nanos(MAX_WINDOW_NANOS))
            .unwrap()
            .buckets(MAX_BUCKETS)
            .unwrap();
        assert_eq!(quota.limit(), MAX_LIMIT);
        assert_eq!(quota.bucket_count(), MAX_BUCKETS);
        let tiny = WindowQuota::per(1, Duration::from_nanos(1)).unwrap();
        assert_eq!(tiny.bucket_count(), 1);
    }

    #[test]
    fn constructors_read_like_their_units() {
        assert_eq!(
            WindowQuota::per_minute(5).unwrap(),
            WindowQuota::per(5, Duration::from_secs(60)).unwrap()
        );
        assert_eq!(
            WindowQuota::per_hour(5).unwrap().window_length(),
            Duration::from_secs(3600)
        );
        let budget = WindowQuota::budget(7).unwrap();
        assert_eq!(budget.window_nanos(), MAX_WINDOW_NANOS);
        assert_eq!(budget.bucket_count(), 1);
    }

    #[test]
    fn is_copy_and_unlimited_is_marked() {
        let quota = WindowQuota::per_second(3).unwrap();
        let copy = quota;
        assert_eq!(quota, copy);
        let unlimited = WindowQuota::unlimited();
        assert!(unlimited.is_unlimited() && !quota.is_unlimited());
        assert_eq!(unlimited.limit(), u64::MAX);
        assert_eq!(unlimited.engine_limit(), word::MAX_LIMIT);
        assert_eq!(quota.engine_limit(), 3);
        // A limit beyond the 64-bit engine's is the quota's own.
        let hourly = WindowQuota::per_hour(10_000_000).unwrap();
        assert_eq!(hourly.engine_limit(), 10_000_000);
        let longer = unlimited.window(Duration::from_secs(60)).unwrap();
        assert!(longer.is_unlimited());
    }
}
