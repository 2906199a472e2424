//! The window family's sequential specifications, its test oracles: [`SlidingWindowSpec`]
//! (B buckets) and [`FixedWindowSpec`] (one window).

use std::collections::VecDeque;
use std::time::Duration;

use crate::epoch::{epoch_of, epochs_to_wait, until_epoch};
use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::spec::{trivial, Spec};
use crate::limiter::{Admission, Decision, Ticket};
use crate::validate;
use crate::window::word::{MAX_BUCKETS, WIDE_MAX_LIMIT};

/// Bucketed sliding window: admit `n` at epoch `e = t / w` iff the admitted counts of
/// epochs `e-B+1 ..= e` plus `n` stay within the limit (`w = window / B`).
///
/// Time: the epoch is `max(t / w, newest epoch seen)`; `retry_after` is measured from `t`.
/// Every request for `n >= 1` permits moves the window to its epoch first, whatever its
/// outcome (an `ExceedsLimit` too); `n = 0` and `available` move nothing.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::spec::{SlidingWindowSpec, Spec};
/// // 2 per second in 2 buckets of 500 ms.
/// let mut spec = SlidingWindowSpec::new(2, Duration::from_secs(1), 2)?;
/// assert!(spec.decide(900_000_000, 2)?.is_admitted());
/// // Unlike a fixed window, the next bucket still sees those two.
/// assert!(!spec.decide(1_100_000_000, 1)?.is_admitted());
/// assert!(spec.decide(1_500_000_000, 1)?.is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SlidingWindowSpec {
    limit: u64,
    width: u64,
    epoch: u64,
    /// Admitted counts of epochs `epoch-B+1 ..= epoch`, oldest first.
    counts: VecDeque<u64>,
    /// The sum of `counts`.
    used: u64,
}

impl SlidingWindowSpec {
    /// `limit` permits per `window`, counted in `buckets` buckets of `window / buckets`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{SlidingWindowSpec, Spec};
    /// use ringlimit::ConfigError;
    /// let spec = SlidingWindowSpec::new(10, Duration::from_secs(1), 4)?;
    /// assert_eq!(spec.available(0), 10);
    /// assert_eq!(SlidingWindowSpec::new(10, Duration::from_secs(1), 0).err(), Some(ConfigError::ZeroBuckets));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(limit: u64, window: Duration, buckets: u64) -> Result<Self, ConfigError> {
        let width = validate::bucket_nanos(window, buckets, MAX_BUCKETS)?;
        Ok(Self {
            limit: validate::limit(limit, WIDE_MAX_LIMIT)?,
            width,
            epoch: 0,
            counts: std::iter::repeat_n(0, buckets as usize).collect(),
            used: 0,
        })
    }

    /// The spec of a [`SlidingWindow`](crate::SlidingWindow) built from `quota`;
    /// [`ConfigError::Unlimited`] for an unlimited quota, which has no spec.
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, SlidingWindowSpec}, ConfigError, WindowQuota};
    /// let spec = SlidingWindowSpec::from_quota(WindowQuota::per_second(5)?)?;
    /// assert_eq!(spec.available(0), 5);
    /// let unlimited = SlidingWindowSpec::from_quota(WindowQuota::unlimited());
    /// assert_eq!(unlimited.err(), Some(ConfigError::Unlimited));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn from_quota(quota: crate::WindowQuota) -> Result<Self, ConfigError> {
        if quota.is_unlimited() {
            return Err(ConfigError::Unlimited);
        }
        Self::new(quota.limit(), quota.window_length(), quota.bucket_count())
    }

    /// The epoch `now` falls in, never before the newest one seen.
    fn epoch_at(&self, now: u64) -> u64 {
        epoch_of(now, self.width).max(self.epoch)
    }

    /// How many of the oldest buckets have left the window by `epoch`.
    fn expired_by(&self, epoch: u64) -> usize {
        (epoch - self.epoch).min(self.counts.len() as u64) as usize
    }

    /// Moves the window to the epoch `now` falls in (never backwards).
    fn roll(&mut self, now: u64) {
        let epoch = self.epoch_at(now);
        for _ in 0..self.expired_by(epoch) {
            self.used -= self.counts.pop_front().unwrap_or(0);
            self.counts.push_back(0);
        }
        self.epoch = epoch;
    }

    /// Admitted permits in the window ending at `epoch`.
    fn used_at(&self, epoch: u64) -> u64 {
        let expired: u64 = self.counts.iter().take(self.expired_by(epoch)).sum();
        self.used - expired
    }
}

impl Spec for SlidingWindowSpec {
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        if n > 0 {
            self.roll(now);
        }
        if let Some(done) = trivial(n, self.limit, || self.available(now))? {
            return Ok(done);
        }
        let epoch = self.epoch;
        let used = self.used;
        if used + n <= self.limit {
            *self.counts.back_mut().expect("at least one bucket") += n;
            self.used += n;
            return Ok(Decision::Admitted {
                remaining: self.limit - used - n,
            });
        }
        let wait = epochs_to_wait(self.counts.make_contiguous(), self.limit, n);
        Ok(Decision::Refused {
            available: self.limit.saturating_sub(used),
            retry_after: until_epoch(epoch + wait, self.width, now),
        })
    }

    fn available(&self, now: u64) -> u64 {
        self.limit.saturating_sub(self.used_at(self.epoch_at(now)))
    }

    fn set_limit(&mut self, _now: u64, limit: u64) -> Result<(), ConfigError> {
        self.limit = validate::limit(limit, WIDE_MAX_LIMIT)?;
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.limit
    }

    /// A grant's mark is the epoch its permits were counted in.
    fn try_grant(&mut self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let decision = self.decide(now, n)?;
        Ok(decision.granting(|| Ticket::new(n, now, now, u128::from(self.epoch))))
    }

    /// Restores `min(n, count of the grant's epoch)` iff that epoch is still the newest one
    /// and `now` is in it (the buckets before it are frozen); else 0.
    fn refund(&mut self, now: u64, ticket: &Ticket) -> u64 {
        let epoch = u64::try_from(ticket.mark()).unwrap_or(u64::MAX);
        if epoch != self.epoch || self.epoch_at(now) != epoch {
            return 0;
        }
        let count = self.counts.back_mut().expect("at least one bucket");
        let restored = ticket.permits().min(*count);
        *count -= restored;
        self.used -= restored;
        restored
    }
}

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
