//! The [`RateLimiter`] trait every limiter implements, and its [`Decision`].

use std::time::Duration;

use crate::error::{AcquireError, ConfigError};

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
/// Every implementation is linearizable with respect to its sequential specification in
/// [`crate::spec`]: the outcomes of any concurrent run are those of some sequential run.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, Decision, RateLimiter, SlidingWindow};
/// let clock = ManualClock::new();
/// let limiter = SlidingWindow::builder(2, Duration::from_secs(1))
///     .buckets(4)
///     .clock(clock.clone())
///     .build()?;
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
    /// ever grant is [`AcquireError::ExceedsLimit`], so a caller never waits forever.
    fn try_acquire_n(&self, n: u64) -> Result<Decision, AcquireError>;

    /// Permits that could be taken now, without taking any.
    fn available(&self) -> u64;

    /// Changes the limit. Linearizable with concurrent admissions: each one is decided
    /// wholly under the old limit or wholly under the new one. Permits already admitted
    /// stay counted, so lowering the limit never re-admits them.
    fn set_limit(&self, limit: u64) -> Result<(), ConfigError>;

    /// The current limit.
    fn limit(&self) -> u64;
}

/// Forwards the trait through a pointer type.
macro_rules! forward_rate_limiter {
    ($($ptr:ty),*) => {$(
        impl<L: RateLimiter + ?Sized> RateLimiter for $ptr {
            fn try_acquire(&self) -> bool {
                (**self).try_acquire()
            }
            fn try_acquire_n(&self, n: u64) -> Result<Decision, AcquireError> {
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
        }
    )*};
}

forward_rate_limiter!(&L, Box<L>, std::sync::Arc<L>);
