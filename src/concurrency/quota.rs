//! [`ConcurrencyQuota`]: a validated in-flight limit.

use crate::error::ConfigError;
use crate::validate;

use super::word::MAX_LIMIT;

/// A validated concurrency quota for [`ConcurrencyLimiter`](crate::ConcurrencyLimiter): at
/// most `max` permits in flight, `1 <= max <=` [`ConcurrencyQuota::MAX_LIMIT`] (2^32 − 1),
/// checked when it is made, so building the limiter cannot fail.
///
/// ```
/// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota, ConfigError};
/// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?);
/// assert_eq!(limiter.available(), 2);
/// assert_eq!(ConcurrencyQuota::new(0), Err(ConfigError::ZeroLimit));
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConcurrencyQuota {
    /// `1..=MAX_LIMIT`.
    max: u64,
}

impl ConcurrencyQuota {
    /// The largest in-flight limit: a 32-bit field of the state word.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyQuota, ConfigError};
    /// assert_eq!(ConcurrencyQuota::MAX_LIMIT, u64::from(u32::MAX));
    /// assert!(matches!(
    ///     ConcurrencyQuota::new(ConcurrencyQuota::MAX_LIMIT + 1),
    ///     Err(ConfigError::LimitTooLarge { .. })
    /// ));
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// At most `max` permits in flight.
    ///
    /// Errors: [`ConfigError::ZeroLimit`], [`ConfigError::LimitTooLarge`] above
    /// [`MAX_LIMIT`](Self::MAX_LIMIT).
    ///
    /// ```
    /// use ringlimit::{ConcurrencyQuota, ConfigError};
    /// assert_eq!(ConcurrencyQuota::new(8)?.max(), 8);
    /// assert_eq!(ConcurrencyQuota::new(0), Err(ConfigError::ZeroLimit));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(max: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            max: validate::limit(max, MAX_LIMIT)?,
        })
    }

    /// As good as no limit: the largest, [`MAX_LIMIT`](Self::MAX_LIMIT) (about 4.3 billion)
    /// permits in flight. Unlike the rate limiters' unlimited quotas it is a real limit,
    /// reported by `limit()` and `available()` as such: a single request for more than
    /// 2^32 − 1 permits is still [`ExceedsLimit`](crate::ExceedsLimit), and `set_limit`
    /// works as on any limiter. (Permits are given back by count when dropped, so admitting
    /// past the counter would need a second kind of permit; this keeps one.)
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::unlimited());
    /// let _many = limiter.try_acquire_n(1 << 31)?;
    /// assert!(limiter.try_acquire().is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unlimited() -> Self {
        Self { max: MAX_LIMIT }
    }

    /// The in-flight limit.
    ///
    /// ```
    /// use ringlimit::ConcurrencyQuota;
    /// assert_eq!(ConcurrencyQuota::new(16)?.max(), 16);
    /// assert_eq!(ConcurrencyQuota::unlimited().max(), ConcurrencyQuota::MAX_LIMIT);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max(&self) -> u64 {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_names_what_is_wrong() {
        assert_eq!(ConcurrencyQuota::new(0), Err(ConfigError::ZeroLimit));
        assert_eq!(
            ConcurrencyQuota::new(MAX_LIMIT + 1),
            Err(ConfigError::LimitTooLarge {
                limit: MAX_LIMIT + 1,
                max: MAX_LIMIT
            })
        );
        let quota = ConcurrencyQuota::new(MAX_LIMIT).unwrap();
        let copy = quota;
        assert_eq!(copy, ConcurrencyQuota::unlimited());
        assert_eq!(quota.max(), MAX_LIMIT);
    }
}
