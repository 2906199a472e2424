//! The exact sliding log: a ring of admission timestamps indexed by sequence number.

use std::fmt;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::config;
use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::{Decision, RateLimiter};

use super::ring::{Outcome, Ring};
use super::slot;

/// A lock-free exact sliding log: at most `limit` permits in every interval of length
/// `window`, with no bucketing error.
///
/// **Guarantee.** Linearizable with respect to
/// [`SlidingLogSpec`](crate::spec::SlidingLogSpec): a permit is admitted at `t` iff the
/// permits admitted in `(t - window, t]` number at most `limit - n`. No interleaving
/// over-admits; no call is refused unless the spec refuses it at the call's linearization
/// point. `try_acquire_n` is all-or-nothing, and `set_limit` takes effect at one atomic step
/// between admissions. Admissions are lock-free: every intermediate state another thread
/// can leave behind is one any caller can finish. (`set_limit` calls take a lock among
/// themselves only; admissions never wait for it.)
///
/// **Hot path.** `try_acquire`: a clock read, loads of the head and of three slots (two for
/// `limit = 1`), a CAS on a slot and one on the head. A refusal is the loads plus one
/// re-read of a slot. `try_acquire_n` adds a binary search for `remaining`/`available`.
///
/// **Memory.** A ring of `C` slots of 8 bytes, `C` the power of two above `max_limit`
/// (so `limit = 1000` takes 8 KiB), plus one padded line. `max_limit` is fixed at
/// construction ([`SlidingLog::with_max_limit`]; the initial limit by default) and is the
/// ceiling for [`set_limit`](RateLimiter::set_limit). At most [`SlidingLog::MAX_LIMIT`].
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingLog};
/// let clock = ManualClock::new();
/// let limiter = SlidingLog::with_clock(2, Duration::from_secs(1), clock.clone())?;
/// assert!(limiter.try_acquire());
/// clock.advance(Duration::from_millis(600));
/// assert!(limiter.try_acquire());
/// assert!(!limiter.try_acquire());
/// clock.advance(Duration::from_millis(400)); // the first permit leaves the window
/// assert!(limiter.try_acquire());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
///
/// **How it works:** [`guide::log`](crate::guide::log): sequence numbers, groups, limit
/// stamps, why it never over-admits, and its deviations (wraparound after 2^44 admissions
/// inside one stalled call, helped groups under clocks that disagree, time saturating at
/// 2^61 ns).
pub struct SlidingLog<C = TscClock> {
    pub(super) ring: Ring,
    pub(super) clock: C,
}

impl SlidingLog {
    /// The largest limit (and `max_limit`) a sliding log accepts: `2^20 - 1`, an 8 MiB ring.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, ConfigError, SlidingLog};
    /// let too_many = SlidingLog::MAX_LIMIT + 1;
    /// assert_eq!(
    ///     SlidingLog::with_clock(too_many, Duration::from_secs(1), ManualClock::new()).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: too_many, max: SlidingLog::MAX_LIMIT })
    /// );
    /// ```
    pub const MAX_LIMIT: u64 = slot::MAX_LIMIT;

    /// `limit` permits in any `window`, on the default clock, with room for `limit`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{RateLimiter, SlidingLog};
    /// let limiter = SlidingLog::new(100, Duration::from_secs(1))?;
    /// assert!(limiter.try_acquire());
    /// assert_eq!(limiter.available(), 99);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        Self::with_clock(limit, window, TscClock::new())
    }
}

impl<C: Clock> SlidingLog<C> {
    /// `limit` permits in any `window`, reading time from `clock`; `set_limit` may not go
    /// above `limit` (use [`with_max_limit`](Self::with_max_limit) for headroom).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, ConfigError, RateLimiter, SlidingLog};
    /// let limiter = SlidingLog::with_clock(3, Duration::from_secs(1), ManualClock::new())?;
    /// assert!(limiter.set_limit(2).is_ok());
    /// assert_eq!(limiter.set_limit(4), Err(ConfigError::LimitTooLarge { limit: 4, max: 3 }));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn with_clock(limit: u64, window: Duration, clock: C) -> Result<Self, ConfigError> {
        Self::with_max_limit(limit, limit, window, clock)
    }

    /// `limit` permits in any `window`, with a ring sized so `set_limit` can go up to
    /// `max_limit` (`limit <= max_limit <= 2^20 - 1`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingLog};
    /// let limiter = SlidingLog::with_max_limit(1, 10, Duration::from_secs(1), ManualClock::new())?;
    /// assert!(limiter.try_acquire());
    /// assert!(!limiter.try_acquire());
    /// limiter.set_limit(10)?;
    /// assert_eq!(limiter.available(), 9);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_max_limit(
        limit: u64,
        max_limit: u64,
        window: Duration,
        clock: C,
    ) -> Result<Self, ConfigError> {
        let window = config::window_nanos(window)?;
        let max_limit = config::limit(max_limit, slot::MAX_LIMIT)?;
        let limit = config::limit(limit, max_limit)?;
        Ok(Self {
            ring: Ring::new(limit, max_limit, window),
            clock,
        })
    }

    /// The highest limit [`set_limit`](RateLimiter::set_limit) accepts (the ring's room).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, SlidingLog};
    /// let limiter = SlidingLog::with_max_limit(5, 50, Duration::from_secs(1), ManualClock::new())?;
    /// assert_eq!(limiter.max_limit(), 50);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_limit(&self) -> u64 {
        self.ring.capacity()
    }

    /// The window.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, SlidingLog};
    /// let limiter = SlidingLog::with_clock(5, Duration::from_millis(250), ManualClock::new())?;
    /// assert_eq!(limiter.window(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.ring.window())
    }

    /// Bytes this limiter occupies, its ring included (not counting the clock's shared state).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, SlidingLog};
    /// let limiter = SlidingLog::with_clock(1000, Duration::from_secs(1), ManualClock::new())?;
    /// assert!(limiter.footprint() >= 1024 * 8);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        self.ring.footprint() + std::mem::size_of::<C>()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::{Clock, ManualClock}, SlidingLog};
    /// let limiter = SlidingLog::with_clock(1, Duration::from_secs(1), ManualClock::starting_at(7))?;
    /// assert_eq!(limiter.clock().now_nanos(), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> RateLimiter for SlidingLog<C> {
    #[inline]
    fn try_acquire(&self) -> bool {
        let now = self.clock.now_nanos();
        matches!(
            self.ring.acquire(&self.clock, now, 1, false),
            Outcome::Decided(Decision::Admitted { .. })
        )
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        let now = self.clock.now_nanos();
        if n == 0 {
            return Ok(Decision::Admitted {
                remaining: self.ring.available(&self.clock, now),
            });
        }
        // `n` above the limit in force is reported by the decision itself, under the same
        // view of the limit (as `spec::trivial` does for the spec).
        match self.ring.acquire(&self.clock, now, n, true) {
            Outcome::Decided(decision) => Ok(decision),
            Outcome::ExceedsLimit(limit) => Err(ExceedsLimit {
                requested: n,
                limit,
            }),
        }
    }

    fn available(&self) -> u64 {
        self.ring.available(&self.clock, self.clock.now_nanos())
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        let limit = config::limit(limit, self.ring.capacity())?;
        self.ring.set_limit(&self.clock, limit);
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.ring.limit(&self.clock)
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}

impl<C> fmt::Debug for SlidingLog<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingLog")
            .field("ring", &self.ring)
            .finish_non_exhaustive()
    }
}
