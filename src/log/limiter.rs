//! The exact sliding log: a ring of admission timestamps indexed by sequence number.

use std::fmt;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::{Decision, RateLimiter};
use crate::window::WindowQuota;

use super::cell::SlidingLogCell;
use super::config::LogConfig;
use super::word;

/// A lock-free exact sliding log: at most `limit` permits in every interval of length
/// `window`, with no bucketing error.
///
/// **Guarantee.** Linearizable with respect to
/// [`SlidingLogSpec`](crate::spec::SlidingLogSpec): a permit is admitted at `t` iff the
/// permits admitted in `(t - window, t]` number at most `limit - n`. No interleaving
/// over-admits; no call is refused unless the spec refuses it at the call's linearization
/// point. `try_acquire_n` is all-or-nothing, and `set_limit` takes effect at one atomic step
/// between admissions (the relabel of its [`SlidingLogCell`](crate::cell::SlidingLogCell),
/// before it returns). Every call is lock-free, `set_limit` included: every intermediate
/// state another thread can leave behind is one any caller can finish.
///
/// **Hot path.** `try_acquire`: a clock read, loads of the head and of three slots (two for
/// `limit = 1`), a CAS on a slot and one on the head. A refusal is the loads plus one
/// re-read of a slot. `try_acquire_n` adds a binary search for `remaining`/`available`.
///
/// **Memory.** A ring of `C` slots of 8 bytes, `C` the power of two above `max_limit`
/// (so `limit = 1000` takes 8 KiB), plus one padded line and a 32-byte
/// [`LogConfig`](crate::cell::LogConfig). `max_limit` is fixed at
/// construction ([`SlidingLog::with_max_limit`]; the initial limit by default) and is the
/// ceiling for [`set_limit`](RateLimiter::set_limit). At most [`SlidingLog::MAX_LIMIT`].
///
/// The log keeps one timestamp per permit in its window, so its memory grows with the
/// limit: a log of limit `L` costs `8 · C` bytes, `C = max(4, 2^⌈log2(L + 1)⌉)`, between 8
/// and 16 bytes per permit (the power-of-two rounding): 8 KiB for 1 000, 1 MiB for 100 000,
/// 8 MiB for the largest, 2^20 − 1. A log of 10 million per hour would need 2^24 slots,
/// 128 MiB, every admission writing a slot of a ring far larger than any cache: beyond
/// [`SlidingLog::MAX_LIMIT`], and not a sensible limiter. Large limits belong to a bucketed
/// window ([`SlidingWindow`](crate::SlidingWindow)), whose memory is 8 bytes per bucket
/// whatever the limit, exact to one bucket width.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingLog, WindowQuota};
/// let clock = ManualClock::new();
/// let limiter = SlidingLog::with_clock(WindowQuota::per(2, Duration::from_secs(1))?, clock.clone())?;
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
///
/// **Deviation: `remaining` of a helped group.** A multi-permit call's group of slots may be
/// completed by another call (any call that settles the ring: `available`, a refusal, an
/// `ExceedsLimit`, `set_limit`), which stamps the group with *its* clock reading, a little
/// later than the leader's. Its permits then leave the window that much later than the
/// leader's reading implies (a refusal for that short while that the spec would admit:
/// under-admission only, never over-admission), and the leader's `remaining`, computed at
/// its own reading, matches neither reading exactly. It happens with a clock that only
/// moves forward too, rarely (a few cases in hundreds of thousands of racing runs).
pub struct SlidingLog<C = TscClock> {
    /// The log's state: a [`SlidingLogCell`] deciding under `config` alone.
    pub(super) cell: SlidingLogCell,
    pub(super) config: LogConfig,
    pub(super) clock: C,
}

impl SlidingLog {
    /// The largest limit (and `max_limit`) a sliding log accepts: `2^20 - 1`, an 8 MiB ring
    /// (one 8-byte slot per permit). Below [`WindowQuota::MAX_LIMIT`] (2^40 − 1, the
    /// bucketed windows' bound): building a log of a larger quota fails with
    /// [`ConfigError::LimitTooLarge`] naming this bound.
    ///
    /// ```
    /// use ringlimit::{ConfigError, SlidingLog, WindowQuota};
    /// assert_eq!(SlidingLog::MAX_LIMIT, (1 << 20) - 1);
    /// assert!(SlidingLog::new(WindowQuota::per_second(SlidingLog::MAX_LIMIT)?).is_ok());
    /// // "10 million per hour" is a window quota, but no log: 2^24 slots, 128 MiB.
    /// assert_eq!(
    ///     SlidingLog::new(WindowQuota::per_hour(10_000_000)?).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: SlidingLog::MAX_LIMIT })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_LIMIT: u64 = word::MAX_LIMIT;

    /// At most `quota.limit()` permits in any `quota.window_length()`, on the default clock,
    /// with room for that limit (the quota's buckets are not used: the log is exact).
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`SlidingLog::MAX_LIMIT`].
    ///
    /// ```
    /// use ringlimit::{RateLimiter, SlidingLog, WindowQuota};
    /// let limiter = SlidingLog::new(WindowQuota::per_second(100)?)?;
    /// assert!(limiter.try_acquire());
    /// assert_eq!(limiter.available(), 99);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Result<Self, ConfigError> {
        Self::with_clock(quota, TscClock::new())
    }
}

impl<C: Clock> SlidingLog<C> {
    /// `quota`, reading time from `clock`; `set_limit` may not go above the quota's limit
    /// (use [`with_max_limit`](Self::with_max_limit) for headroom).
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`SlidingLog::MAX_LIMIT`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, ConfigError, RateLimiter, SlidingLog, WindowQuota};
    /// let limiter = SlidingLog::with_clock(WindowQuota::per_second(3)?, ManualClock::new())?;
    /// assert!(limiter.set_limit(2).is_ok());
    /// assert_eq!(limiter.set_limit(4), Err(ConfigError::LimitTooLarge { limit: 4, max: 3 }));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn with_clock(quota: WindowQuota, clock: C) -> Result<Self, ConfigError> {
        Self::with_max_limit(quota, 0, clock)
    }

    /// `quota`, with a ring sized so `set_limit` can go up to `max_limit`, which is raised
    /// to the quota's limit and lowered to [`SlidingLog::MAX_LIMIT`] if outside them (a
    /// ring holds one 8-byte slot per permit of `max_limit`).
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`SlidingLog::MAX_LIMIT`].
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingLog, WindowQuota};
    /// let limiter = SlidingLog::with_max_limit(WindowQuota::per_second(1)?, 10, ManualClock::new())?;
    /// assert!(limiter.try_acquire());
    /// assert!(!limiter.try_acquire());
    /// limiter.set_limit(10)?;
    /// assert_eq!(limiter.available(), 9);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_max_limit(
        quota: WindowQuota,
        max_limit: u64,
        clock: C,
    ) -> Result<Self, ConfigError> {
        Ok(Self::with_config(
            LogConfig::with_max_limit(quota, max_limit)?,
            clock,
        ))
    }

    /// A log of `config`, reading `clock`.
    pub(crate) fn with_config(config: LogConfig, clock: C) -> Self {
        Self {
            cell: SlidingLogCell::new(&config),
            config,
            clock,
        }
    }

    /// The highest limit [`set_limit`](RateLimiter::set_limit) accepts (the ring's room).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, SlidingLog, WindowQuota};
    /// let limiter = SlidingLog::with_max_limit(WindowQuota::per_second(5)?, 50, ManualClock::new())?;
    /// assert_eq!(limiter.max_limit(), 50);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_limit(&self) -> u64 {
        self.config.max_limit()
    }

    /// The window.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, SlidingLog, WindowQuota};
    /// let limiter = SlidingLog::with_clock(WindowQuota::per(5, Duration::from_millis(250))?, ManualClock::new())?;
    /// assert_eq!(limiter.window(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(&self) -> Duration {
        self.config.window()
    }

    /// Bytes this limiter occupies, its ring included (not counting the clock's shared state).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, SlidingLog, WindowQuota};
    /// let limiter = SlidingLog::with_clock(WindowQuota::per(1000, Duration::from_secs(1))?, ManualClock::new())?;
    /// assert!(limiter.footprint() >= 1024 * 8);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        self.cell.footprint() + self.config.footprint() + std::mem::size_of::<C>()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::{Clock, ManualClock}, SlidingLog, WindowQuota};
    /// let limiter = SlidingLog::with_clock(WindowQuota::per(1, Duration::from_secs(1))?, ManualClock::starting_at(7))?;
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
        self.cell.try_acquire(&self.config, &self.clock)
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        self.cell.try_acquire_n(&self.config, &self.clock, n)
    }

    fn available(&self) -> u64 {
        self.cell.available(&self.config, &self.clock)
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        self.config.set_limit(limit)?;
        // The change takes effect at the cell's relabel, which this makes happen before
        // returning (or a later change's does).
        self.cell.limit(&self.config, &self.clock);
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.cell.limit(&self.config, &self.clock)
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}

impl<C> fmt::Debug for SlidingLog<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingLog")
            .field("cell", &self.cell)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
