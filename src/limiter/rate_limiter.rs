//! The [`RateLimiter`] trait every limiter implements, and its [`Decision`].
//!
//! The trait is the core: taking permits now, looking, and one step of a wait. The waits
//! themselves are the extension trait [`Wait`](super::Wait), implemented for every limiter
//! by a blanket impl, so this module knows nothing of them.

use std::time::Duration;

use crate::clock::Clock;
use crate::error::{ConfigError, ExceedsLimit, WaitError};

use super::grant::{Attempt, Reservation, Ticket};

/// The outcome of [`RateLimiter::try_acquire_n`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The permits were granted.
    Admitted {
        /// Permits still available right after this admission, in the same window.
        remaining: u64,
    },
    /// The permits were refused; nothing was consumed.
    Refused {
        /// Permits available at the moment of refusal (fewer than requested).
        available: u64,
        /// The earliest time from now at which the same request could be admitted, if no
        /// one else takes permits meanwhile.
        retry_after: Duration,
    },
}

impl Decision {
    /// `true` when the permits were granted.
    pub fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted { .. })
    }

    /// How long to wait before retrying; zero when admitted.
    pub fn retry_after(&self) -> Duration {
        match self {
            Self::Admitted { .. } => Duration::ZERO,
            Self::Refused { retry_after, .. } => *retry_after,
        }
    }
}

/// A rate limiter: decides, at the current time of its clock, whether permits are granted.
///
/// The waits (`acquire`, `try_acquire_for`, `until_ready`, …) come with the extension trait
/// [`Wait`](crate::Wait), which every `RateLimiter` implements.
///
/// Every implementation is linearizable with respect to its sequential specification in
/// [`crate::spec`]: the outcomes of any concurrent run are those of some sequential run.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, Decision, RateLimiter, SlidingWindow, WindowQuota};
/// let clock = ManualClock::new();
/// let limiter = SlidingWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?.buckets(4)?)
///     .clock(clock.clone())
///     .build();
/// assert!(limiter.try_acquire());
/// assert_eq!(limiter.try_acquire_n(1)?, Decision::Admitted { remaining: 0 });
/// assert!(!limiter.try_acquire());
/// assert_eq!(limiter.try_acquire_n(1)?.retry_after(), Duration::from_secs(1));
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(limiter.available(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait RateLimiter {
    /// Takes one permit if one is available now. The hot path.
    fn try_acquire(&self) -> bool;

    /// Takes `n` permits, all or none.
    ///
    /// `n = 0` is always admitted and changes nothing. Asking for more than the limit can
    /// ever grant is [`ExceedsLimit`], so a caller never waits forever.
    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit>;

    /// Permits that could be taken now, without taking any.
    fn available(&self) -> u64;

    /// Changes [`limit`](Self::limit), the most permits one call can be granted.
    /// Linearizable with concurrent admissions: each one is decided wholly under the old
    /// limit or wholly under the new one. Permits already admitted stay counted, so lowering
    /// the limit never re-admits them.
    ///
    /// It is one setting for every type: the window quota (windows, log), the burst (token
    /// bucket, the same as `set_burst`), the capacity (leaky meter, as `set_capacity`), the
    /// per-call maximum (leaky shaper), the in-flight bound (concurrency).
    fn set_limit(&self, limit: u64) -> Result<(), ConfigError>;

    /// The most permits one call can be granted: asking for more is [`ExceedsLimit`].
    fn limit(&self) -> u64;

    /// The clock this limiter reads, which its waits sleep on.
    fn clock(&self) -> &dyn Clock;

    /// One step of a wait: grants `n` permits if they can be used within `max_wait`, or says
    /// when to ask again. The blocking and async waits are loops over this step.
    ///
    /// The window family grants only permits usable at once and otherwise answers
    /// [`Attempt::RetryAfter`]; the bucket family ([`Reserve`](crate::Reserve)) grants a
    /// reservation whose time may lie up to `max_wait` ahead, so its waiters are served in
    /// order. [`WaitError::Timeout`] (nothing consumed) when even the earliest possible time
    /// is beyond `max_wait`.
    fn attempt(&self, n: u64, max_wait: Duration) -> Result<Attempt<'_>, WaitError> {
        match self.try_acquire_n(n)? {
            Decision::Admitted { .. } => {
                let now = self.clock().now_nanos();
                Ok(Attempt::Granted(Reservation::immediate(
                    self.clock(),
                    Ticket::immediate(n, now),
                )))
            }
            Decision::Refused { retry_after, .. } if retry_after > max_wait => {
                Err(WaitError::Timeout {
                    retry_after,
                    timeout: max_wait,
                })
            }
            Decision::Refused { retry_after, .. } => Ok(Attempt::RetryAfter(retry_after)),
        }
    }
}

/// Forwards the trait through a pointer type.
macro_rules! forward_rate_limiter {
    ($($ptr:ty),*) => {$(
        impl<L: RateLimiter + ?Sized> RateLimiter for $ptr {
            fn try_acquire(&self) -> bool {
                (**self).try_acquire()
            }
            fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
                (**self).try_acquire_n(n)
            }
            fn available(&self) -> u64 {
                (**self).available()
            }
            fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
                (**self).set_limit(limit)
            }
            fn limit(&self) -> u64 {
                (**self).limit()
            }
            fn clock(&self) -> &dyn Clock {
                (**self).clock()
            }
            fn attempt(&self, n: u64, max_wait: Duration) -> Result<Attempt<'_>, WaitError> {
                (**self).attempt(n, max_wait)
            }
        }
    )*};
}

forward_rate_limiter!(&L, Box<L>, std::sync::Arc<L>);
