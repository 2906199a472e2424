//! The [`RateLimiter`] trait every limiter implements, and its [`Decision`].
//!
//! The trait is the core: taking permits now, looking, and one step of a wait. The waits
//! themselves are the extension trait [`Wait`](super::Wait), implemented for every limiter
//! by a blanket impl, so this module knows nothing of them.

use std::time::Duration;

use crate::clock::Clock;
use crate::error::{ConfigError, ExceedsLimit, WaitError};

use super::grant::{Admission, Attempt, Grant, Reservation, Ticket};

/// The outcome of [`RateLimiter::try_acquire_n`].
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
/// use ringlimit::outcome::Decision;
/// let limiter = SlidingWindow::builder(WindowQuota::per(3, Duration::from_secs(1))?).clock(ManualClock::new()).build();
/// assert_eq!(limiter.try_acquire_n(2)?, Decision::Admitted { remaining: 1 });
/// match limiter.try_acquire_n(2)? {
///     Decision::Refused { available, retry_after } => {
///         assert_eq!(available, 1);
///         assert_eq!(retry_after, Duration::from_secs(1));
///     }
///     Decision::Admitted { .. } => unreachable!("only one permit is left"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// What an unlimited limiter answers: admitted, with no bound on what remains.
    pub(crate) const UNLIMITED: Self = Decision::Admitted {
        remaining: u64::MAX,
    };

    /// `true` when the permits were granted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::outcome::Decision;
    /// assert!(Decision::Admitted { remaining: 0 }.is_admitted());
    /// assert!(!Decision::Refused { available: 0, retry_after: Duration::from_secs(1) }.is_admitted());
    /// ```
    pub fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted { .. })
    }

    /// This decision as an [`Admission`]: when admitted, a [`Grant`] of the ticket `ticket`
    /// makes (called only then), with the decision's `remaining`.
    pub(crate) fn granting(self, ticket: impl FnOnce() -> Ticket) -> Admission {
        match self {
            Self::Admitted { remaining } => Admission::Granted(Grant::new(ticket(), remaining)),
            Self::Refused {
                available,
                retry_after,
            } => Admission::Refused {
                available,
                retry_after,
            },
        }
    }

    /// How long to wait before retrying; zero when admitted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 2)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.try_acquire_n(2)?.retry_after(), Duration::ZERO);
    /// assert_eq!(bucket.try_acquire_n(2)?.retry_after(), Duration::from_millis(200));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
/// use ringlimit::outcome::Decision;
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
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?).clock(ManualClock::new()).build();
    /// assert!(limiter.try_acquire());
    /// assert!(limiter.try_acquire());
    /// assert!(!limiter.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    fn try_acquire(&self) -> bool;

    /// Takes `n` permits, all or none.
    ///
    /// `n = 0` is always admitted and changes nothing. Asking for more than the limit can
    /// ever grant is [`ExceedsLimit`], so a caller never waits forever.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, ExceedsLimit, FixedWindow, RateLimiter, WindowQuota};
    /// use ringlimit::outcome::Decision;
    /// let limiter = FixedWindow::builder(WindowQuota::per(5, Duration::from_secs(1))?).clock(ManualClock::new()).build();
    /// assert_eq!(limiter.try_acquire_n(3)?, Decision::Admitted { remaining: 2 });
    /// assert!(!limiter.try_acquire_n(3)?.is_admitted()); // all or none: nothing taken
    /// assert_eq!(limiter.available(), 2);
    /// assert_eq!(limiter.try_acquire_n(6), Err(ExceedsLimit { requested: 6, limit: 5 }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit>;

    /// Permits that could be taken now, without taking any.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 5)?).clock(clock.clone()).build();
    /// assert!(bucket.try_acquire_n(5)?.is_admitted());
    /// assert_eq!(bucket.available(), 0);
    /// clock.advance(Duration::from_millis(300));
    /// assert_eq!(bucket.available(), 3); // looking takes nothing
    /// assert_eq!(bucket.available(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn available(&self) -> u64;

    /// Takes `n` permits, all or none, as [`try_acquire_n`](Self::try_acquire_n) decides,
    /// and returns the [`Grant`] that can give them back with [`refund`](Self::refund).
    ///
    /// The building block of all-or-nothing admission across several limiters: grant on
    /// each in turn, and refund the earlier grants when one refuses.
    ///
    /// The default (for limiters that cannot give permits back, such as
    /// [`SlidingLog`](crate::SlidingLog)) is `try_acquire_n` with a grant that restores
    /// nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, SlidingWindow, TokenBucket, WindowQuota};
    /// let clock = ManualClock::new();
    /// let per_user = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 5)?).clock(clock.clone()).build();
    /// let global = SlidingWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(clock.clone()).build();
    /// assert!(global.try_acquire()); // someone else took the global permit
    /// // All or nothing: the user's grant is given back when the global limit refuses.
    /// let user = per_user.try_grant(1)?.into_grant().expect("a full bucket");
    /// if !global.try_grant(1)?.is_granted() {
    ///     assert_eq!(per_user.refund(user), 1);
    /// }
    /// assert_eq!(per_user.available(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        let decision = self.try_acquire_n(n)?;
        Ok(decision.granting(|| Ticket::immediate(n, self.clock().now_nanos())))
    }

    /// Gives back what can be given back of `grant` and returns the permits restored: one
    /// CAS while the grant's epoch (windows) or schedule (buckets) is still current, 0 once
    /// it has passed (the permits are then dropped, which can only under-admit). Each
    /// type's docs and [the guide](crate::guide::refunds) say exactly what it restores. A
    /// refund never lets the limiter admit more than its limit. A grant this limiter did not
    /// make restores nothing (every limiter stamps its grants with its own id), and so does a
    /// grant from a wait that granted at once ([`attempt`](Self::attempt) of the window
    /// family): a grant from a wait is not refundable unless it is a bucket-family
    /// reservation.
    ///
    /// The default restores nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = FixedWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?).clock(clock.clone()).build();
    /// let grant = limiter.try_grant(2)?.into_grant().unwrap();
    /// assert_eq!(limiter.available(), 0);
    /// assert_eq!(limiter.refund(grant), 2);
    /// assert_eq!(limiter.available(), 2);
    /// let late = limiter.try_grant(1)?.into_grant().unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(limiter.refund(late), 0); // its window has passed: dropped
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn refund(&self, grant: Grant) -> u64 {
        let _ = grant;
        0
    }

    /// Changes [`limit`](Self::limit), the most permits one call can be granted.
    /// Linearizable with concurrent admissions: each one is decided wholly under the old
    /// limit or wholly under the new one. Permits already admitted stay counted, so lowering
    /// the limit never re-admits them.
    ///
    /// It is one setting for every type: the window quota (windows, log), the burst (token
    /// bucket, the same as `set_burst`), the capacity (leaky meter, as `set_capacity`), the
    /// per-call maximum (leaky shaper), the in-flight bound (concurrency).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let limiter = FixedWindow::builder(WindowQuota::per(10, Duration::from_secs(1))?).clock(ManualClock::new()).build();
    /// assert!(limiter.try_acquire_n(4)?.is_admitted());
    /// limiter.set_limit(5)?;
    /// assert_eq!((limiter.limit(), limiter.available()), (5, 1)); // the 4 taken stay counted
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn set_limit(&self, limit: u64) -> Result<(), ConfigError>;

    /// The most permits one call can be granted: asking for more is [`ExceedsLimit`].
    ///
    /// ```
    /// use ringlimit::{BucketQuota, RateLimiter, SlidingWindow, TokenBucket, WindowQuota};
    /// assert_eq!(SlidingWindow::new(WindowQuota::per_second(100)?).limit(), 100);
    /// assert_eq!(TokenBucket::new(BucketQuota::per_second(10)?.burst(3)?).limit(), 3); // the burst
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    fn limit(&self) -> u64;

    /// The clock this limiter reads, which its waits sleep on.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, ManualClock};
    /// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = SlidingWindow::builder(WindowQuota::per_second(10)?).clock(clock.clone()).build();
    /// clock.advance(Duration::from_millis(5));
    /// let as_dyn: &dyn Clock = RateLimiter::clock(&limiter);
    /// assert_eq!(as_dyn.now_nanos(), 5_000_000);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    fn clock(&self) -> &dyn Clock;

    #[doc(hidden)]
    /// One step of a wait: grants `n` permits if they can be used within `max_wait`, or says
    /// when to ask again. The blocking and async waits are loops over this step.
    ///
    /// The window family grants only permits usable at once and otherwise answers
    /// [`Attempt::RetryAfter`]; the bucket family ([`Reserve`](crate::Reserve)) grants a
    /// reservation whose time may lie up to `max_wait` ahead, so its waiters are served in
    /// order. [`WaitError::Timeout`] (nothing consumed) when even the earliest possible time
    /// is beyond `max_wait`. An immediate grant from a wait is not refundable: its cancel
    /// and the refund of its grant restore nothing (its ticket is
    /// [`Ticket::immediate`]); take permits meant to be given back with
    /// [`try_grant`](Self::try_grant).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WaitError, WindowQuota};
    /// use ringlimit::spec::Attempt;
    /// let limiter = SlidingWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?.buckets(1)?).clock(ManualClock::new()).build();
    /// assert!(matches!(limiter.attempt(1, Duration::ZERO)?, Attempt::Granted(_)));
    /// assert!(matches!(
    ///     limiter.attempt(1, Duration::from_secs(2))?,
    ///     Attempt::RetryAfter(after) if after == Duration::from_secs(1)
    /// ));
    /// assert!(matches!(limiter.attempt(1, Duration::from_millis(1)), Err(WaitError::Timeout { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
            fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
                (**self).try_grant(n)
            }
            fn refund(&self, grant: Grant) -> u64 {
                (**self).refund(grant)
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
