//! The [`Spec`] trait every sequential specification implements (re-exported in
//! [`crate::spec`] with the specs themselves).

use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::Decision;
use crate::limiter::{Admission, Ticket};

/// A sequential rate-limiting algorithm.
pub trait Spec: Send {
    /// Decides a request for `n` permits at time `now` (ns), consuming them if admitted.
    /// `n = 0` is admitted without effect; `n` above the limit is an error.
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, ExceedsLimit>;
    /// Permits available at `now`, without consuming any.
    fn available(&self, now: u64) -> u64;
    /// Replaces the limit at `now`; permits already admitted stay counted. (Windows ignore
    /// `now`; the bucket family keeps the permits available at `now`.)
    fn set_limit(&mut self, now: u64, limit: u64) -> Result<(), ConfigError>;
    /// The current limit.
    fn limit(&self) -> u64;

    /// One step of a wait at `now` (see [`RateLimiter::attempt`](crate::RateLimiter::attempt)):
    /// grants `n` permits usable no later than `now + max_wait`, or says when to ask again.
    ///
    /// The default grants only at once, through [`decide`](Self::decide); the bucket family
    /// overrides it to schedule permits ahead.
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

    /// Takes `n` permits at `now` as [`decide`](Self::decide) does, returning a [`Grant`]
    /// whose ticket tells [`refund`](Self::refund) what to give back. The default marks
    /// nothing (its grants restore nothing).
    fn try_grant(&mut self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let decision = self.decide(now, n)?;
        Ok(decision.granting(|| Ticket::immediate(n, now)))
    }

    /// Gives back at `now` what can be given back of a ticket this spec (or the lock-free
    /// limiter it specifies) granted; returns the permits restored. This defines exactly
    /// what [`RateLimiter::refund`](crate::RateLimiter::refund) restores. The default gives
    /// back nothing.
    fn refund(&mut self, now: u64, ticket: &Ticket) -> u64 {
        let _ = (now, ticket);
        0
    }
}

/// One step of a wait on a spec, as [`Spec::attempt`] returns it.
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
