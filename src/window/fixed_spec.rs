//! The sequential specification of the fixed window.

use std::time::Duration;

use crate::epoch::{epoch_of, until_epoch};
use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::spec::{trivial, Spec};
use crate::limiter::{Admission, Decision, Ticket};
use crate::validate;
use crate::window::word::WIDE_MAX_LIMIT;

/// Fixed window: admit `n` at `t` iff the count of window `t / W` plus `n` stays within
/// the limit. Up to 2N can pass inside any interval of length W (across a boundary).
///
/// Time: the window index is `max(t / W, newest index seen)`. Every request for `n >= 1`
/// permits moves to its window first, whatever its outcome (an `ExceedsLimit` too); `n = 0`
/// and `available` move nothing.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::spec::{FixedWindowSpec, Spec};
/// let mut spec = FixedWindowSpec::new(2, Duration::from_secs(1))?;
/// // Two at the end of one window and two at the start of the next: 4 inside 2 ms.
/// assert!(spec.decide(999_000_000, 2)?.is_admitted());
/// assert!(spec.decide(1_001_000_000, 2)?.is_admitted());
/// assert!(!spec.decide(1_002_000_000, 1)?.is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FixedWindowSpec {
    limit: u64,
    window: u64,
    epoch: u64,
    count: u64,
}

impl FixedWindowSpec {
    /// `limit` permits per aligned `window`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{FixedWindowSpec, Spec};
    /// let spec = FixedWindowSpec::new(10, Duration::from_secs(1))?;
    /// assert_eq!((spec.limit(), spec.available(0)), (10, 10));
    /// assert!(FixedWindowSpec::new(0, Duration::from_secs(1)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        Ok(Self {
            limit: validate::limit(limit, WIDE_MAX_LIMIT)?,
            window: validate::window_nanos(window)?,
            epoch: 0,
            count: 0,
        })
    }

    /// The spec of a [`FixedWindow`](crate::FixedWindow) built from `quota`;
    /// [`ConfigError::Unlimited`] for an unlimited quota, which has no spec.
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, FixedWindowSpec}, ConfigError, WindowQuota};
    /// let spec = FixedWindowSpec::from_quota(WindowQuota::per_second(5)?)?;
    /// assert_eq!(spec.available(0), 5);
    /// let unlimited = FixedWindowSpec::from_quota(WindowQuota::unlimited());
    /// assert_eq!(unlimited.err(), Some(ConfigError::Unlimited));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn from_quota(quota: crate::WindowQuota) -> Result<Self, ConfigError> {
        if quota.is_unlimited() {
            return Err(ConfigError::Unlimited);
        }
        Self::new(quota.limit(), quota.window_length())
    }

    fn count_at(&self, now: u64) -> (u64, u64) {
        let epoch = epoch_of(now, self.window).max(self.epoch);
        (epoch, if epoch == self.epoch { self.count } else { 0 })
    }
}

impl Spec for FixedWindowSpec {
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        if n > 0 {
            (self.epoch, self.count) = self.count_at(now);
        }
        if let Some(done) = trivial(n, self.limit, || self.available(now))? {
            return Ok(done);
        }
        if self.count + n <= self.limit {
            self.count += n;
            return Ok(Decision::Admitted {
                remaining: self.limit - self.count,
            });
        }
        Ok(Decision::Refused {
            available: self.limit.saturating_sub(self.count),
            retry_after: until_epoch(self.epoch + 1, self.window, now),
        })
    }

    fn available(&self, now: u64) -> u64 {
        self.limit.saturating_sub(self.count_at(now).1)
    }

    fn set_limit(&mut self, _now: u64, limit: u64) -> Result<(), ConfigError> {
        self.limit = validate::limit(limit, WIDE_MAX_LIMIT)?;
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.limit
    }

    /// A grant's mark is the window index its permits were counted in.
    fn try_grant(&mut self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let decision = self.decide(now, n)?;
        Ok(decision.granting(|| Ticket::new(n, now, now, u128::from(self.epoch))))
    }

    /// Restores `min(n, count)` iff the grant's window is still the current one at `now`;
    /// else 0.
    fn refund(&mut self, now: u64, ticket: &Ticket) -> u64 {
        let epoch = u64::try_from(ticket.mark()).unwrap_or(u64::MAX);
        if epoch != self.epoch || self.count_at(now).0 != epoch {
            return 0;
        }
        let restored = ticket.permits().min(self.count);
        self.count -= restored;
        restored
    }
}
