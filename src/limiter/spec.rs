//! The [`Spec`] trait every sequential specification implements (re-exported in
//! [`crate::spec`] with the specs themselves).

use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::Decision;
use crate::limiter::{Admission, Ticket};

/// A sequential rate-limiting algorithm.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::spec::{FixedWindowSpec, Spec};
/// // A spec is a plain state machine: the caller supplies the time.
/// let mut spec = FixedWindowSpec::new(2, Duration::from_secs(1))?;
/// assert!(spec.decide(0, 2)?.is_admitted());
/// assert_eq!(spec.available(500_000_000), 0);
/// assert_eq!(spec.available(1_000_000_000), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Spec: Send {
    /// Decides a request for `n` permits at time `now` (ns), consuming them if admitted.
    /// `n = 0` is admitted without effect; `n` above the limit is an error.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{SlidingWindowSpec, Spec};
    /// use ringlimit::ExceedsLimit;
    /// use ringlimit::outcome::Decision;
    /// let mut spec = SlidingWindowSpec::new(3, Duration::from_secs(1), 1)?;
    /// assert_eq!(spec.decide(0, 2)?, Decision::Admitted { remaining: 1 });
    /// assert!(!spec.decide(0, 2)?.is_admitted());
    /// assert_eq!(spec.decide(0, 4), Err(ExceedsLimit { requested: 4, limit: 3 }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, ExceedsLimit>;
    /// Permits available at `now`, without consuming any.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{FixedWindowSpec, Spec};
    /// let mut spec = FixedWindowSpec::new(5, Duration::from_secs(1))?;
    /// spec.decide(0, 3)?;
    /// assert_eq!(spec.available(0), 2);
    /// assert_eq!(spec.available(1_000_000_000), 5); // the next window
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn available(&self, now: u64) -> u64;
    /// Replaces the limit at `now`; permits already admitted stay counted. (Windows ignore
    /// `now`; the bucket family keeps the permits available at `now`.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{FixedWindowSpec, Spec};
    /// let mut spec = FixedWindowSpec::new(5, Duration::from_secs(1))?;
    /// spec.decide(0, 3)?;
    /// spec.set_limit(0, 4)?;
    /// assert_eq!((spec.limit(), spec.available(0)), (4, 1)); // the 3 taken stay counted
    /// assert!(spec.set_limit(0, 0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn set_limit(&mut self, now: u64, limit: u64) -> Result<(), ConfigError>;
    /// The current limit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{SlidingWindowSpec, Spec};
    /// let spec = SlidingWindowSpec::new(7, Duration::from_secs(1), 10)?;
    /// assert_eq!(spec.limit(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn limit(&self) -> u64;

    /// One step of a wait at `now` (see [`RateLimiter::attempt`](crate::RateLimiter::attempt)):
    /// grants `n` permits usable no later than `now + max_wait`, or says when to ask again.
    ///
    /// The default grants only at once, through [`decide`](Self::decide); the bucket family
    /// overrides it to schedule permits ahead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{FixedWindowSpec, Spec, Step};
    /// let mut spec = FixedWindowSpec::new(1, Duration::from_secs(1))?;
    /// assert!(matches!(spec.attempt(0, 1, Duration::ZERO)?, Step::Granted(_)));
    /// assert_eq!(spec.attempt(0, 1, Duration::from_secs(2))?, Step::RetryAfter(Duration::from_secs(1)));
    /// assert!(spec.attempt(0, 1, Duration::from_millis(10)).is_err()); // too long a wait
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn attempt(&mut self, now: u64, n: u64, max_wait: Duration) -> Result<Step, WaitError> {
        match self.decide(now, n)? {
            Decision::Admitted { .. } => Ok(Step::Granted(Ticket::immediate(n, now))),
            Decision::Refused { retry_after, .. } if retry_after > max_wait => {
                Err(WaitError::Timeout {
                    retry_after,
                    timeout: max_wait,
                })
            }
            Decision::Refused { retry_after, .. } => Ok(Step::RetryAfter(retry_after)),
        }
    }

    /// Takes `n` permits at `now` as [`decide`](Self::decide) does, returning a [`Grant`](crate::outcome::Grant)
    /// whose ticket tells [`refund`](Self::refund) what to give back. The default marks
    /// nothing (its grants restore nothing).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{FixedWindowSpec, Spec};
    /// let mut spec = FixedWindowSpec::new(3, Duration::from_secs(1))?;
    /// let grant = spec.try_grant(0, 2)?.into_grant().expect("room for 2");
    /// assert_eq!((grant.permits(), grant.remaining()), (2, 1));
    /// assert!(!spec.try_grant(0, 2)?.is_granted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_grant(&mut self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let decision = self.decide(now, n)?;
        Ok(decision.granting(|| Ticket::immediate(n, now)))
    }

    /// Gives back at `now` what can be given back of a ticket this spec (or the lock-free
    /// limiter it specifies) granted; returns the permits restored. This defines exactly
    /// what [`RateLimiter::refund`](crate::RateLimiter::refund) restores. The default gives
    /// back nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{FixedWindowSpec, Spec};
    /// let mut spec = FixedWindowSpec::new(3, Duration::from_secs(1))?;
    /// let grant = spec.try_grant(0, 2)?.into_grant().expect("room for 2");
    /// assert_eq!(spec.refund(0, grant.ticket()), 2); // same window: all of it comes back
    /// assert_eq!(spec.available(0), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn refund(&mut self, now: u64, ticket: &Ticket) -> u64 {
        let _ = (now, ticket);
        0
    }
}

/// One step of a wait on a spec, as [`Spec::attempt`] returns it.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::spec::{Spec, Step, TokenBucketSpec};
/// use ringlimit::Rate;
/// let mut spec = TokenBucketSpec::new(Rate::per_second(10)?, 1)?;
/// assert!(spec.decide(0, 1)?.is_admitted());
/// // The bucket family schedules ahead: the next permit is granted for 100 ms from now.
/// match spec.attempt(0, 1, Duration::from_secs(1))? {
///     Step::Granted(ticket) => assert_eq!(ticket.delay(), Duration::from_millis(100)),
///     Step::RetryAfter(_) => unreachable!("buckets reserve"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Granted; usable from the ticket's `act_at`.
    Granted(Ticket),
    /// Not granted, nothing consumed: ask again after this long.
    RetryAfter(Duration),
}

/// The shared up-front checks of `decide`: `Some(decision)` when there is nothing to decide.
pub(crate) fn trivial(
    n: u64,
    limit: u64,
    available: impl FnOnce() -> u64,
) -> Result<Option<Decision>, ExceedsLimit> {
    if n > limit {
        return Err(ExceedsLimit {
            requested: n,
            limit,
        });
    }
    Ok((n == 0).then(|| Decision::Admitted {
        remaining: available(),
    }))
}
