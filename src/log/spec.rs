//! The sequential specification of the exact sliding log.

use std::collections::VecDeque;
use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::spec::{trivial, Spec};
use crate::limiter::Decision;
use crate::validate;

use super::word::{retry_until, MAX_LIMIT, MAX_STAMP};

/// Exact sliding log: admit `n` at time `t` iff the admitted timestamps `s` with
/// `s + W > t` (the window is half-open, `(t - W, t]`) number at most `limit - n`; an
/// admission logs `n` copies of `t`.
///
/// **Time.** `t = max(min(now, 2^61), newest logged timestamp)`: the log's time never moves
/// backwards, and it is clamped to the newest *admitted* timestamp only (refusals move
/// nothing). Readings past 2^61 ns (73 years) count as 2^61. `retry_after` is measured
/// from the raw `now`: the time until the oldest in-window entries that must expire for
/// the request to fit have expired, `s + W - now` for the `(in_window + n - limit)`-th
/// oldest of them.
///
/// Entries that have expired at the newest logged timestamp can never count again and are
/// pruned, so the log holds at most the largest limit ever set.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::spec::{SlidingLogSpec, Spec};
/// let mut spec = SlidingLogSpec::new(2, Duration::from_nanos(10))?;
/// assert!(spec.decide(0, 1)?.is_admitted());
/// assert!(spec.decide(5, 1)?.is_admitted());
/// let refused = spec.decide(9, 1)?;
/// assert_eq!(refused.retry_after(), Duration::from_nanos(1)); // the entry at 0 leaves at 10
/// assert!(spec.decide(10, 1)?.is_admitted());
/// assert_eq!(spec.available(12), 0); // 5 and 10 are in (2, 12]
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SlidingLogSpec {
    limit: u64,
    window: u64,
    /// Admitted timestamps, oldest first (nondecreasing).
    log: VecDeque<u64>,
}

impl SlidingLogSpec {
    /// `limit` permits in any `window` (`1 <= limit <= 2^20 - 1`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::{SlidingLogSpec, Spec}, ConfigError};
    /// let spec = SlidingLogSpec::new(10, Duration::from_secs(1))?;
    /// assert_eq!(spec.limit(), 10);
    /// assert_eq!(SlidingLogSpec::new(10, Duration::ZERO).err(), Some(ConfigError::ZeroWindow));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        Ok(Self {
            limit: validate::limit(limit, MAX_LIMIT)?,
            window: validate::window_nanos(window)?,
            log: VecDeque::new(),
        })
    }

    /// The spec of a [`SlidingLog`](crate::SlidingLog) built from `quota`;
    /// [`ConfigError::Unlimited`] for an unlimited quota, which has no spec.
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, SlidingLogSpec}, ConfigError, WindowQuota};
    /// let spec = SlidingLogSpec::from_quota(WindowQuota::per_second(5)?)?;
    /// assert_eq!(spec.available(0), 5);
    /// let unlimited = SlidingLogSpec::from_quota(WindowQuota::unlimited());
    /// assert_eq!(unlimited.err(), Some(ConfigError::Unlimited));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn from_quota(quota: crate::WindowQuota) -> Result<Self, ConfigError> {
        if quota.is_unlimited() {
            return Err(ConfigError::Unlimited);
        }
        Self::new(quota.limit(), quota.window_length())
    }

    /// The log's time for a reading `now`.
    fn time(&self, now: u64) -> u64 {
        let newest = self.log.back().copied().unwrap_or(0);
        now.min(MAX_STAMP).max(newest)
    }

    /// How many logged timestamps are in the window ending at `t`, and where they start.
    fn in_window(&self, t: u64) -> (u64, usize) {
        let first = self.log.partition_point(|&s| s + self.window <= t);
        ((self.log.len() - first) as u64, first)
    }
}

impl Spec for SlidingLogSpec {
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        if let Some(done) = trivial(n, self.limit, || self.available(now))? {
            return Ok(done);
        }
        let t = self.time(now);
        let (in_window, first) = self.in_window(t);
        if in_window + n <= self.limit {
            self.log.extend(std::iter::repeat_n(t, n as usize));
            // Everything that expired by `t` stays expired: later times are at least `t`.
            self.log.drain(..first);
            return Ok(Decision::Admitted {
                remaining: self.limit - in_window - n,
            });
        }
        // The (in_window + n - limit)-th oldest in-window entry must leave first.
        let must_leave = (in_window + n - self.limit) as usize;
        let expiry = self.log[first + must_leave - 1] + self.window;
        Ok(Decision::Refused {
            available: self.limit.saturating_sub(in_window),
            retry_after: retry_until(expiry, now),
        })
    }

    fn available(&self, now: u64) -> u64 {
        self.limit.saturating_sub(self.in_window(self.time(now)).0)
    }

    fn set_limit(&mut self, _now: u64, limit: u64) -> Result<(), ConfigError> {
        self.limit = validate::limit(limit, MAX_LIMIT)?;
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(limit: u64, window: u64) -> SlidingLogSpec {
        SlidingLogSpec::new(limit, Duration::from_nanos(window)).unwrap()
    }

    #[test]
    fn window_is_half_open() {
        let mut s = spec(1, 10);
        assert!(s.decide(3, 1).unwrap().is_admitted());
        assert_eq!(
            s.decide(12, 1).unwrap(),
            Decision::Refused {
                available: 0,
                retry_after: Duration::from_nanos(1)
            }
        );
        assert!(s.decide(13, 1).unwrap().is_admitted());
    }

    #[test]
    fn time_clamps_to_newest_admitted_only() {
        let mut s = spec(1, 10);
        assert!(s.decide(100, 1).unwrap().is_admitted());
        // A reading from the past joins the newest entry's time: still in its window.
        assert_eq!(
            s.decide(50, 1).unwrap(),
            Decision::Refused {
                available: 0,
                retry_after: Duration::from_nanos(60)
            }
        );
        // A refusal at a late time moves nothing: an earlier reading is judged at 100 again.
        assert!(!s.decide(105, 1).unwrap().is_admitted());
        assert_eq!(s.available(0), 0);
        assert_eq!(s.available(110), 1);
    }

    #[test]
    fn groups_wait_for_enough_entries_to_expire() {
        let mut s = spec(4, 10);
        assert!(s.decide(0, 1).unwrap().is_admitted());
        assert!(s.decide(2, 1).unwrap().is_admitted());
        assert_eq!(s.decide(4, 1).unwrap(), Decision::Admitted { remaining: 1 });
        // 3 in the window, asking 3: two must leave, the second (at 2) leaves at 12.
        assert_eq!(
            s.decide(5, 3).unwrap(),
            Decision::Refused {
                available: 1,
                retry_after: Duration::from_nanos(7)
            }
        );
        assert_eq!(
            s.decide(12, 3).unwrap(),
            Decision::Admitted { remaining: 0 }
        );
    }

    #[test]
    fn lowering_the_limit_keeps_entries_counted() {
        let mut s = spec(3, 10);
        assert!(s.decide(0, 3).unwrap().is_admitted());
        s.set_limit(0, 1).unwrap();
        assert_eq!(s.available(5), 0);
        assert_eq!(
            s.decide(5, 1).unwrap(),
            Decision::Refused {
                available: 0,
                retry_after: Duration::from_nanos(5)
            }
        );
        assert_eq!(s.set_limit(0, 0), Err(ConfigError::ZeroLimit));
        assert!(matches!(
            s.decide(5, 2),
            Err(ExceedsLimit {
                requested: 2,
                limit: 1
            })
        ));
    }

    #[test]
    fn huge_times_saturate() {
        let mut s = spec(1, 10);
        assert!(s.decide(u64::MAX, 1).unwrap().is_admitted());
        assert!(!s.decide(u64::MAX, 1).unwrap().is_admitted());
        assert_eq!(s.log.back(), Some(&MAX_STAMP));
    }
}
