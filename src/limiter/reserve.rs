//! [`Reserve`]: limiters that schedule permits ahead instead of refusing them.

use std::time::Duration;

use crate::error::WaitError;

use super::grant::Reservation;
use super::rate_limiter::RateLimiter;

/// Limiters that schedule permits ahead instead of refusing them: the bucket family.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket};
/// let clock = ManualClock::new();
/// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(2)?, 1)?).clock(clock.clone()).build();
/// assert_eq!(bucket.reserve(1)?.delay(), Duration::ZERO);
/// assert_eq!(bucket.reserve(1)?.delay(), Duration::from_millis(500));
/// assert!(bucket.reserve_within(1, Duration::from_millis(900)).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Reserve: RateLimiter {
    /// Reserves `n` permits at the earliest time they can be had, however far ahead.
    ///
    /// Fails with [`WaitError::ExceedsLimit`] when `n` exceeds the burst (or capacity), and
    /// with [`WaitError::Timeout`] only if the schedule would run past what the limiter's
    /// clock arithmetic can represent (decades of queued permits), or the permits could be
    /// used only at a time the limiter's time never reaches (its readings stand still past
    /// its end): then `retry_after` is `Duration::MAX`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket, WaitError};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 2)?).clock(ManualClock::new()).build();
    /// let now = bucket.reserve(2)?;
    /// let later = bucket.reserve(2)?; // queued behind the first, never refused
    /// assert_eq!((now.delay(), later.delay()), (Duration::ZERO, Duration::from_millis(200)));
    /// assert!(matches!(bucket.reserve(3), Err(WaitError::ExceedsLimit(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn reserve(&self, n: u64) -> Result<Reservation<'_>, WaitError> {
        self.reserve_within(n, Duration::MAX)
    }

    /// Reserves `n` permits if they can be had within `max_wait`; otherwise takes nothing
    /// and returns [`WaitError::Timeout`] at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, Reserve, TokenBucket, WaitError};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(ManualClock::new()).build();
    /// assert!(bucket.try_acquire());
    /// assert!(matches!(
    ///     bucket.reserve_within(1, Duration::from_millis(50)),
    ///     Err(WaitError::Timeout { .. })
    /// ));
    /// let reservation = bucket.reserve_within(1, Duration::from_millis(100))?;
    /// assert_eq!(reservation.delay(), Duration::from_millis(100));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn reserve_within(&self, n: u64, max_wait: Duration) -> Result<Reservation<'_>, WaitError>;
}
