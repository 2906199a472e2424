//! [`Rate`]: permits per period, the configuration of the bucket family.

use std::fmt;
use std::time::Duration;

use crate::error::ConfigError;

/// The longest period between two permits a [`Rate`] accepts: 2^56 ns, about 2.3 years.
///
/// Bucket-family limiters keep times as nanoseconds since their creation in 61 bits, and a
/// burst or a queue of permits spans `burst × period`; this bound leaves room for both.
pub(crate) const MAX_PERIOD_NANOS: u64 = 1 << 56;

/// A steady rate: `permits` per `per`, kept as the whole number of nanoseconds between two
/// permits (the *period*), rounded up so the rate enforced is never above the one asked for.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::Rate;
/// let rate = Rate::per_second(4)?;
/// assert_eq!(rate.period(), Duration::from_millis(250));
/// // 3 per second does not divide a second: the period is rounded up to whole nanoseconds.
/// assert_eq!(Rate::per_second(3)?.period(), Duration::from_nanos(333_333_334));
/// assert!(Rate::new(0, Duration::from_secs(1)).is_err());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    period_nanos: u64,
}

impl Rate {
    /// The longest period one permit may take: 2^56 ns, about 2.3 years.
    ///
    /// ```
    /// use ringlimit::Rate;
    /// assert!(Rate::MAX_PERIOD_NANOS >= Rate::per_hour(1)?.period_nanos());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub const MAX_PERIOD_NANOS: u64 = MAX_PERIOD_NANOS;

    /// `permits` every `per`.
    ///
    /// Errors: [`ConfigError::ZeroRate`] for zero permits or a zero period,
    /// [`ConfigError::RateTooFast`] above one permit per nanosecond,
    /// [`ConfigError::SpanTooLong`] when one permit's period exceeds [`MAX_PERIOD_NANOS`](Rate::MAX_PERIOD_NANOS).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, Rate};
    /// let rate = Rate::new(3, Duration::from_millis(30))?;
    /// assert_eq!(rate.period(), Duration::from_millis(10));
    /// assert_eq!(Rate::new(0, Duration::from_secs(1)), Err(ConfigError::ZeroRate));
    /// assert!(matches!(Rate::new(2, Duration::from_nanos(1)), Err(ConfigError::RateTooFast { .. })));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(permits: u64, per: Duration) -> Result<Self, ConfigError> {
        let per_nanos = per.as_nanos();
        if permits == 0 || per_nanos == 0 {
            return Err(ConfigError::ZeroRate);
        }
        if per_nanos < u128::from(permits) {
            return Err(ConfigError::RateTooFast { permits, per_nanos });
        }
        let period = per_nanos.div_ceil(u128::from(permits));
        if period > u128::from(MAX_PERIOD_NANOS) {
            return Err(ConfigError::SpanTooLong {
                what: "one permit's period",
                nanos: period,
                max_nanos: MAX_PERIOD_NANOS,
            });
        }
        // The cast is exact: `period <= MAX_PERIOD_NANOS < 2^64`.
        Ok(Self {
            period_nanos: period as u64,
        })
    }

    /// `permits` per second.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::Rate;
    /// assert_eq!(Rate::per_second(20)?.period(), Duration::from_millis(50));
    /// assert!(Rate::per_second(0).is_err());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_second(permits: u64) -> Result<Self, ConfigError> {
        Self::new(permits, Duration::from_secs(1))
    }

    /// `permits` per minute.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::Rate;
    /// assert_eq!(Rate::per_minute(60)?, Rate::per_second(1)?);
    /// assert_eq!(Rate::per_minute(2)?.period(), Duration::from_secs(30));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_minute(permits: u64) -> Result<Self, ConfigError> {
        Self::new(permits, Duration::from_secs(60))
    }

    /// `permits` per hour.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::Rate;
    /// assert_eq!(Rate::per_hour(4)?.period(), Duration::from_secs(15 * 60));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_hour(permits: u64) -> Result<Self, ConfigError> {
        Self::new(permits, Duration::from_secs(3600))
    }

    /// One permit every `period`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::Rate;
    /// assert_eq!(Rate::every(Duration::from_millis(100))?, Rate::per_second(10)?);
    /// assert!(Rate::every(Duration::ZERO).is_err());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn every(period: Duration) -> Result<Self, ConfigError> {
        Self::new(1, period)
    }

    /// The time between two permits.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::Rate;
    /// assert_eq!(Rate::per_second(4)?.period(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_nanos)
    }

    /// The time between two permits, in nanoseconds (at least 1, at most [`MAX_PERIOD_NANOS`](Rate::MAX_PERIOD_NANOS)).
    ///
    /// ```
    /// use ringlimit::Rate;
    /// assert_eq!(Rate::per_second(1_000)?.period_nanos(), 1_000_000);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn period_nanos(&self) -> u64 {
        self.period_nanos
    }

    /// The rate with this period, already validated (`1 ..= MAX_PERIOD_NANOS`): for limiters
    /// that keep a rate as its period in an atomic word.
    pub(crate) fn from_period_nanos(period_nanos: u64) -> Self {
        debug_assert!((1..=MAX_PERIOD_NANOS).contains(&period_nanos));
        Self { period_nanos }
    }

    /// Permits per second, as a float (for display and metrics).
    ///
    /// ```
    /// use ringlimit::Rate;
    /// assert_eq!(Rate::per_second(4)?.per_second_f64(), 4.0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn per_second_f64(&self) -> f64 {
        1e9 / self.period_nanos as f64
    }
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Rate({}/s, every {:?})",
            self.per_second_f64(),
            self.period()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_round_up_and_bad_rates_are_errors() {
        assert_eq!(Rate::per_second(1).unwrap().period_nanos(), 1_000_000_000);
        assert_eq!(Rate::per_second(1_000_000_000).unwrap().period_nanos(), 1);
        assert_eq!(Rate::per_minute(7).unwrap().period_nanos(), 8_571_428_572);
        assert_eq!(Rate::per_second(0), Err(ConfigError::ZeroRate));
        assert_eq!(Rate::new(1, Duration::ZERO), Err(ConfigError::ZeroRate));
        assert!(matches!(
            Rate::per_second(1_000_000_001),
            Err(ConfigError::RateTooFast { .. })
        ));
        assert!(matches!(
            Rate::every(Duration::MAX),
            Err(ConfigError::SpanTooLong { .. })
        ));
        assert!(Rate::every(Duration::from_nanos(MAX_PERIOD_NANOS)).is_ok());
    }
}
