//! [`WarmUpBuilder`]: configures a [`WarmUp`].

use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::ConfigError;
use crate::rate::Rate;

use super::curve::DEFAULT_COLD_FACTOR;
use super::WarmUp;

/// Builds a [`WarmUp`]: a rate, a warm-up period, a cold factor (default 3) and a clock
/// (default [`TscClock`]).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, Rate, WarmUp};
/// let limiter = WarmUp::builder(Rate::per_second(10)?, Duration::from_secs(1))
///     .cold_factor(2.0)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.stored_permits(), 5.0 + 2.0 * 1.0 / 0.3);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WarmUpBuilder<C = TscClock> {
    rate: Rate,
    warm_up: Duration,
    cold_factor: f64,
    clock: C,
}

impl WarmUpBuilder {
    pub(crate) fn new(rate: Rate, warm_up: Duration) -> Self {
        Self {
            rate,
            warm_up,
            cold_factor: DEFAULT_COLD_FACTOR,
            clock: TscClock::new(),
        }
    }
}

impl<C: Clock> WarmUpBuilder<C> {
    /// How many times the stable interval the interval is when cold: a finite number of at
    /// least 1 (Guava's default, and this builder's, is 3).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, Rate, WarmUp};
    /// let builder = WarmUp::builder(Rate::per_second(10)?, Duration::from_secs(1));
    /// assert_eq!(builder.cold_factor(0.5).build().unwrap_err(), ConfigError::InvalidColdFactor);
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn cold_factor(mut self, cold_factor: f64) -> Self {
        self.cold_factor = cold_factor;
        self
    }

    /// Reads time from `clock` instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::{Clock, ManualClock}, Rate, WarmUp};
    /// let clock = ManualClock::starting_at(5);
    /// let limiter = WarmUp::builder(Rate::per_second(10)?, Duration::from_secs(1))
    ///     .clock(clock)
    ///     .build()?;
    /// assert_eq!(limiter.clock().now_nanos(), 5);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> WarmUpBuilder<C2> {
        WarmUpBuilder {
            rate: self.rate,
            warm_up: self.warm_up,
            cold_factor: self.cold_factor,
            clock,
        }
    }

    /// Builds the limiter.
    ///
    /// Errors: [`ConfigError::InvalidColdFactor`] (below 1, NaN or infinite),
    /// [`ConfigError::ZeroWarmUp`], [`ConfigError::SpanTooLong`] for a warm-up period or a
    /// cold interval (`cold_factor × period`) above [`WarmUp::MAX_SPAN_NANOS`],
    /// [`ConfigError::ColdFactorTooLarge`] for a cold factor so large (around 2^54) that the
    /// warm-up part of the curve is lost to `f64` rounding.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, Rate, WarmUp};
    /// let rate = Rate::per_second(10)?;
    /// assert_eq!(
    ///     WarmUp::builder(rate, Duration::ZERO).build().unwrap_err(),
    ///     ConfigError::ZeroWarmUp
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn build(self) -> Result<WarmUp<C>, ConfigError> {
        WarmUp::from_parts(self.rate, self.warm_up, self.cold_factor, self.clock)
    }
}
