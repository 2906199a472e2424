//! [`WarmUpQuota`]: a validated warm-up configuration.

use std::fmt;
use std::time::Duration;

use crate::error::ConfigError;
use crate::rate::Rate;

use super::curve::{self, Config, DEFAULT_COLD_FACTOR};

/// A validated warm-up quota for [`WarmUp`](crate::WarmUp): permits at `rate` once warm,
/// reached over `warm_up` from `cold_factor × period` after idleness (Guava's
/// `SmoothWarmingUp`).
///
/// `Copy`; the warm-up period, the cold factor and the curve they make with the rate are
/// checked when it is made, so building the limiter cannot fail. A warm-up limiter has no
/// unlimited form (its whole point is a rate); use an unlimited
/// [`BucketQuota`](crate::BucketQuota) instead.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{ConfigError, Rate, WarmUp, WarmUpQuota};
/// let quota = WarmUpQuota::new(Rate::per_second(100)?, Duration::from_secs(10))?.cold_factor(4.0)?;
/// assert_eq!(quota.cold_factor_value(), 4.0);
/// let limiter = WarmUp::new(quota); // cannot fail
/// assert_eq!(limiter.warm_up(), Duration::from_secs(10));
/// assert_eq!(
///     WarmUpQuota::new(Rate::per_second(1)?, Duration::ZERO),
///     Err(ConfigError::ZeroWarmUp)
/// );
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq)]
pub struct WarmUpQuota {
    rate: Rate,
    /// `1..=MAX_SPAN_NANOS`.
    warm_up: u64,
    cold_factor: f64,
    /// The curve the three make, validated.
    config: Config,
}

impl WarmUpQuota {
    /// Warms up to `rate` over `warm_up`, from 3 × its period (the default cold factor).
    ///
    /// Errors: [`ConfigError::ZeroWarmUp`], [`ConfigError::SpanTooLong`] for a warm-up or a
    /// cold interval above [`WarmUp::MAX_SPAN_NANOS`](crate::WarmUp::MAX_SPAN_NANOS).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(100)?, Duration::from_secs(10))?;
    /// assert_eq!(quota.warm_up_period(), Duration::from_secs(10));
    /// assert_eq!(quota.cold_factor_value(), 3.0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(rate: Rate, warm_up: Duration) -> Result<Self, ConfigError> {
        Self::checked(rate, warm_up, DEFAULT_COLD_FACTOR)
    }

    /// The same quota, warming up from `cold_factor × period`.
    ///
    /// Errors: [`ConfigError::InvalidColdFactor`] below 1 or not finite,
    /// [`ConfigError::ColdFactorTooLarge`], [`ConfigError::SpanTooLong`] for a cold interval
    /// above the maximum span.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(5)?, Duration::from_secs(2))?;
    /// assert_eq!(quota.cold_factor(0.5), Err(ConfigError::InvalidColdFactor));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn cold_factor(self, cold_factor: f64) -> Result<Self, ConfigError> {
        Self::checked(self.rate, self.warm_up_period(), cold_factor)
    }

    fn checked(rate: Rate, warm_up: Duration, cold_factor: f64) -> Result<Self, ConfigError> {
        let warm_up = curve::validate(warm_up, cold_factor)?;
        Ok(Self {
            rate,
            warm_up,
            cold_factor,
            config: Config::new(rate, warm_up, cold_factor, u64::MAX)?,
        })
    }

    /// The rate once warm.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(100)?, Duration::from_secs(10))?;
    /// assert_eq!(quota.rate(), Rate::per_second(100)?);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The warm-up period.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(10)?, Duration::from_millis(500))?;
    /// assert_eq!(quota.warm_up_period(), Duration::from_millis(500));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn warm_up_period(&self) -> Duration {
        Duration::from_nanos(self.warm_up)
    }

    /// The cold factor.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(10)?, Duration::from_secs(1))?;
    /// assert_eq!(quota.cold_factor_value(), 3.0);
    /// assert_eq!(quota.cold_factor(5.0)?.cold_factor_value(), 5.0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn cold_factor_value(&self) -> f64 {
        self.cold_factor
    }

    /// The warm-up period in nanoseconds and the validated curve.
    pub(crate) fn parts(&self) -> (u64, Config) {
        (self.warm_up, self.config)
    }
}

impl fmt::Debug for WarmUpQuota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarmUpQuota")
            .field("rate", &self.rate)
            .field("warm_up", &self.warm_up_period())
            .field("cold_factor", &self.cold_factor)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_names_what_is_wrong() {
        let rate = Rate::per_second(10).unwrap();
        let second = Duration::from_secs(1);
        assert_eq!(
            WarmUpQuota::new(rate, Duration::ZERO),
            Err(ConfigError::ZeroWarmUp)
        );
        assert!(matches!(
            WarmUpQuota::new(rate, Duration::MAX),
            Err(ConfigError::SpanTooLong { .. })
        ));
        let quota = WarmUpQuota::new(rate, second).unwrap();
        for bad in [0.99, f64::NAN, f64::INFINITY, -1.0] {
            assert_eq!(quota.cold_factor(bad), Err(ConfigError::InvalidColdFactor));
        }
        let one_ns = Rate::every(Duration::from_nanos(1)).unwrap();
        let fast = WarmUpQuota::new(one_ns, Duration::from_nanos(1 << 20)).unwrap();
        assert_eq!(
            fast.cold_factor(2f64.powi(55)),
            Err(ConfigError::ColdFactorTooLarge)
        );
        assert!(matches!(
            WarmUpQuota::new(Rate::per_hour(1).unwrap(), second).and_then(|q| q.cold_factor(1e12)),
            Err(ConfigError::SpanTooLong { .. })
        ));
    }

    #[test]
    fn is_copy_and_keeps_its_parts() {
        let quota = WarmUpQuota::new(Rate::per_second(4).unwrap(), Duration::from_secs(3))
            .unwrap()
            .cold_factor(5.0)
            .unwrap();
        let copy = quota;
        assert_eq!(quota, copy);
        assert_eq!(quota.rate(), Rate::per_second(4).unwrap());
        assert_eq!(quota.warm_up_period(), Duration::from_secs(3));
        assert_eq!(quota.cold_factor_value(), 5.0);
    }
}
