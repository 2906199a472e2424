//! [`Quota`]: a policy's quota as the `RateLimit-Policy` header advertises it.

use std::time::Duration;

use ringlimit::rules::RuleQuota;
use ringlimit::{BucketQuota, WindowQuota};

/// A policy's quota as headers advertise it: `limit` requests per `window`
/// (`RateLimit-Policy: "name";q=limit;w=window`). The window is advertised in whole seconds,
/// rounded up, so the header never promises more than the limit admits.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{BucketQuota, WindowQuota};
/// use ringlimit_tower::Quota;
/// assert_eq!(Quota::from(WindowQuota::per_minute(100)?), Quota::new(100, Duration::from_secs(60)));
/// // A bucket: its burst, over the time it takes to refill from empty.
/// let bucket = Quota::from(BucketQuota::per_second(10)?.burst(50)?);
/// assert_eq!((bucket.limit(), bucket.window_seconds()), (50, 5));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quota {
    limit: u64,
    window: Duration,
}

impl Quota {
    /// `limit` per `window`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit_tower::Quota;
    /// assert_eq!(Quota::new(5, Duration::from_millis(1500)).window_seconds(), 2);
    /// ```
    pub fn new(limit: u64, window: Duration) -> Self {
        Self { limit, window }
    }

    /// The quota of a rule (`None` for an unlimited rule: nothing to advertise).
    ///
    /// ```
    /// use ringlimit::rules::RuleQuota;
    /// use ringlimit_tower::Quota;
    /// assert_eq!(Quota::from_rule(RuleQuota::Unlimited), None);
    /// ```
    pub fn from_rule(quota: RuleQuota) -> Option<Self> {
        match quota {
            RuleQuota::Window(quota) if !quota.is_unlimited() => Some(quota.into()),
            RuleQuota::Bucket(quota) if !quota.is_unlimited() => Some(quota.into()),
            _ => None,
        }
    }

    /// The limit (`q`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit_tower::Quota;
    /// assert_eq!(Quota::new(5, Duration::from_secs(1)).limit(), 5);
    /// ```
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The window in whole seconds, rounded up, at least 1 (`w`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit_tower::Quota;
    /// assert_eq!(Quota::new(5, Duration::from_millis(100)).window_seconds(), 1);
    /// ```
    pub fn window_seconds(&self) -> u64 {
        ceil_seconds(self.window).max(1)
    }
}

impl From<WindowQuota> for Quota {
    fn from(quota: WindowQuota) -> Self {
        Self::new(quota.limit(), quota.window_length())
    }
}

impl From<BucketQuota> for Quota {
    fn from(quota: BucketQuota) -> Self {
        let burst = quota.burst_size();
        let refill = u128::from(quota.rate().period_nanos()) * u128::from(burst);
        let refill = Duration::from_nanos(u64::try_from(refill).unwrap_or(u64::MAX));
        Self::new(burst, refill)
    }
}

/// `duration` in whole seconds, rounded up (as `Retry-After` and `t` are given).
/// Saturates (`Duration::MAX`, the core's "never", is `u64::MAX` seconds).
pub(crate) fn ceil_seconds(duration: Duration) -> u64 {
    duration
        .as_secs()
        .saturating_add(u64::from(duration.subsec_nanos() > 0))
}
