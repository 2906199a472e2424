//! Sequential specifications: the test oracle of every lock-free limiter (DESIGN.md §1).
//!
//! Each spec is a plain state machine over a time in nanoseconds. Wrapped in a mutex by
//! [`Locked`](crate::Locked) it is also the "mutex version" the lock-free limiters are
//! measured against. Specs never let time run backwards: a reading older than the newest
//! one they acted on is treated as that newest time (each spec says exactly how).
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::spec::{SlidingWindowSpec, Spec};
//! let mut spec = SlidingWindowSpec::new(2, Duration::from_secs(1), 2)?;
//! assert!(spec.decide(0, 2)?.is_admitted());
//! assert!(!spec.decide(400_000_000, 1)?.is_admitted());
//! assert!(spec.decide(1_000_000_000, 1)?.is_admitted());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Duration;

use crate::error::{AcquireError, ConfigError, WaitError};
use crate::limiter::Decision;
use crate::reservation::Ticket;

pub use crate::approx_window::spec::ApproxSlidingWindowSpec;
pub use crate::concurrency::spec::ConcurrencySpec;
pub use crate::fixed_window::spec::FixedWindowSpec;
pub use crate::leaky_bucket::spec::LeakyBucketSpec;
pub use crate::sliding_log::spec::SlidingLogSpec;
pub use crate::sliding_window::spec::SlidingWindowSpec;
pub use crate::token_bucket::spec::TokenBucketSpec;
pub use crate::warm_up::spec::WarmUpSpec;

/// A sequential rate-limiting algorithm.
pub trait Spec: Send {
    /// Decides a request for `n` permits at time `now` (ns), consuming them if admitted.
    /// `n = 0` is admitted without effect; `n` above the limit is an error.
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, AcquireError>;
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

    /// Gives back what can be given back at `now` of a ticket this spec granted. The default
    /// gives back nothing: immediate grants are used at once.
    fn cancel(&mut self, now: u64, ticket: &Ticket) {
        let _ = (now, ticket);
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
) -> Result<Option<Decision>, AcquireError> {
    if n > limit {
        return Err(AcquireError::ExceedsLimit {
            requested: n,
            limit,
        });
    }
    Ok((n == 0).then(|| Decision::Admitted {
        remaining: available(),
    }))
}
