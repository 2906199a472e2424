//! [`WarmUpBuilder`]: builds a [`WarmUp`] from a [`WarmUpQuota`] with a clock.

use crate::clock::{Clock, TscClock};

use super::{WarmUp, WarmUpQuota};

/// Builds a [`WarmUp`] from a [`WarmUpQuota`] with a clock ([`TscClock`] unless changed).
/// Nothing here can fail: the quota was validated when it was made.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, Rate, WarmUp, WarmUpQuota};
/// let quota = WarmUpQuota::new(Rate::per_second(5)?, Duration::from_secs(2))?.cold_factor(4.0)?;
/// let limiter = WarmUp::builder(quota).clock(ManualClock::new()).build();
/// assert_eq!(limiter.cold_factor(), 4.0);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WarmUpBuilder<C = TscClock> {
    quota: WarmUpQuota,
    clock: C,
}

impl WarmUpBuilder {
    pub(crate) fn new(quota: WarmUpQuota) -> Self {
        Self {
            quota,
            clock: TscClock::new(),
        }
    }
}

impl<C: Clock> WarmUpBuilder<C> {
    /// Reads time from `clock` instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, Rate, RateLimiter, WarmUp, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let quota = WarmUpQuota::new(Rate::per_second(5)?, Duration::from_secs(2))?;
    /// let limiter = WarmUp::builder(quota).clock(clock.clone()).build();
    /// assert!(limiter.try_acquire());
    /// // Cold: the next permit comes later than the warm rate's 200 ms.
    /// assert!(limiter.try_acquire_n(1)?.retry_after() > Duration::from_millis(200));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> WarmUpBuilder<C2> {
        WarmUpBuilder {
            quota: self.quota,
            clock,
        }
    }

    /// Builds the limiter, cold; it cannot fail.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, Rate, RateLimiter, WarmUp, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(5)?, Duration::from_secs(2))?;
    /// let limiter = WarmUp::builder(quota).clock(ManualClock::new()).build();
    /// assert_eq!(limiter.warm_up(), Duration::from_secs(2));
    /// assert!(limiter.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> WarmUp<C> {
        WarmUp::from_quota(self.quota, self.clock)
    }
}
