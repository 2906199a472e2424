//! [`SlidingLogCell`]: an exact sliding log's whole state (a head word and its ring of
//! timestamps), deciding under a [`LogConfig`] many cells share
//! ([the guide](crate::guide::log#the-sliding-log-cell)).

use std::fmt;

use crate::clock::Clock;
use crate::error::ExceedsLimit;
use crate::layout::{Layout, Padded};
use crate::limiter::Decision;

use super::config::LogConfig;
use super::engine::{Outcome, Ring};

/// One exact sliding log's state: a head word `[seq: 44 | label: 20]` and a ring of `C`
/// timestamp slots, `C` the power of two above the configuration's `max_limit` (at least
/// 4), deciding with a [`LogConfig`] many cells share and a clock the caller names. Admits
/// `n` at `t` iff the permits admitted in `(t - window, t]` number at most `limit - n`,
/// exactly as [`SlidingLog`](crate::SlidingLog) (which is one such cell, its own
/// configuration and a clock) and its [spec](crate::spec::SlidingLogSpec), and linearizable
/// when the shared limit changes under it: a cell is relabelled with the configuration's
/// change on its next access, before anything is decided, so a call still deciding under
/// the old limit fails its CAS.
///
/// **Memory.** The head and the ring's pointer (24 bytes compact, a cache line padded) plus
/// `8·C` bytes of ring on the heap: a limit of 100 takes 1 KiB. A cell belongs to the
/// configuration it was made under (its ring is sized by that configuration's `max_limit`;
/// under another with a larger one, it decides with at most its own capacity, `C - 1`).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::cell::{LogConfig, SlidingLogCell};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// let config = LogConfig::new(WindowQuota::per_second(2)?)?;
/// let cell = SlidingLogCell::<Compact>::new(&config);
/// assert!(cell.try_acquire(&config, &clock));
/// clock.advance(Duration::from_millis(600));
/// assert!(cell.try_acquire(&config, &clock));
/// assert!(!cell.try_acquire(&config, &clock));
/// clock.advance(Duration::from_millis(400)); // the first permit leaves the window
/// assert!(cell.try_acquire(&config, &clock));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct SlidingLogCell<L: Layout = Padded> {
    ring: L::Cell<Ring>,
}

impl<L: Layout> SlidingLogCell<L> {
    /// An empty log with room for `config`'s `max_limit`.
    ///
    /// ```
    /// use ringlimit::cell::{LogConfig, SlidingLogCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let config = LogConfig::new(WindowQuota::per_second(7)?)?;
    /// let cell: SlidingLogCell = SlidingLogCell::new(&config);
    /// assert_eq!(cell.available(&config, &ManualClock::new()), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(config: &LogConfig) -> Self {
        Self {
            ring: L::cell(Ring::new(config.capacity())),
        }
    }

    /// A cell whose head starts at `seq`, for testing the 2^44 wraparound.
    #[cfg(test)]
    pub(crate) fn starting_at(config: &LogConfig, seq: u64) -> Self {
        Self {
            ring: L::cell(Ring::starting_at(config.capacity(), seq)),
        }
    }

    /// The head's sequence number, for tests of the wraparound.
    #[cfg(test)]
    pub(crate) fn seq(&self) -> u64 {
        self.ring.seq()
    }

    /// Takes one permit.
    ///
    /// ```
    /// use ringlimit::cell::{LogConfig, SlidingLogCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = LogConfig::new(WindowQuota::per_second(1)?)?;
    /// let cell: SlidingLogCell = SlidingLogCell::new(&config);
    /// assert!(cell.try_acquire(&config, &clock));
    /// assert!(!cell.try_acquire(&config, &clock));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire<C: Clock + ?Sized>(&self, config: &LogConfig, clock: &C) -> bool {
        // An unlimited configuration's flag is read only once the ring refused (its ring
        // has room for one permit).
        matches!(
            self.ring
                .acquire(config, clock, clock.now_nanos(), 1, false),
            Outcome::Decided(Decision::Admitted { .. })
        ) || config.is_unlimited()
    }

    /// Decides `n` permits: admitted with what remains in the window, or refused with the
    /// time until enough entries expire; [`ExceedsLimit`] for more than the limit. `n = 0`
    /// reports what is available and moves nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{LogConfig, SlidingLogCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// use ringlimit::outcome::Decision;
    /// let clock = ManualClock::new();
    /// let config = LogConfig::new(WindowQuota::per_second(3)?)?;
    /// let cell: SlidingLogCell = SlidingLogCell::new(&config);
    /// assert_eq!(cell.try_acquire_n(&config, &clock, 2)?, Decision::Admitted { remaining: 1 });
    /// clock.advance(Duration::from_millis(600));
    /// assert_eq!(
    ///     cell.try_acquire_n(&config, &clock, 2)?,
    ///     Decision::Refused { available: 1, retry_after: Duration::from_millis(400) }
    /// );
    /// assert!(cell.try_acquire_n(&config, &clock, 4).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_n<C: Clock + ?Sized>(
        &self,
        config: &LogConfig,
        clock: &C,
        n: u64,
    ) -> Result<Decision, ExceedsLimit> {
        if config.is_unlimited() {
            return Ok(Decision::UNLIMITED);
        }
        let now = clock.now_nanos();
        if n == 0 {
            return Ok(Decision::Admitted {
                remaining: self.ring.available(config, clock, now),
            });
        }
        // `n` above the limit in force is reported by the decision itself, under the same
        // view of the limit (as `spec::trivial` does for the spec).
        match self.ring.acquire(config, clock, now, n, true) {
            Outcome::Decided(decision) => Ok(decision),
            Outcome::ExceedsLimit(limit) => Err(ExceedsLimit {
                requested: n,
                limit,
            }),
        }
    }

    /// Permits available now, without taking any (relabels a cell decided under an older
    /// limit).
    ///
    /// ```
    /// use ringlimit::cell::{LogConfig, SlidingLogCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = LogConfig::new(WindowQuota::per_second(5)?)?;
    /// let cell: SlidingLogCell = SlidingLogCell::new(&config);
    /// cell.try_acquire_n(&config, &clock, 2)?;
    /// assert_eq!(cell.available(&config, &clock), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn available<C: Clock + ?Sized>(&self, config: &LogConfig, clock: &C) -> u64 {
        if config.is_unlimited() {
            return u64::MAX;
        }
        self.ring.available(config, clock, clock.now_nanos())
    }

    /// The limit in force for this cell: the configuration's, once the cell is relabelled
    /// with it (which this does), at most the cell's capacity.
    pub(crate) fn limit<C: Clock + ?Sized>(&self, config: &LogConfig, clock: &C) -> u64 {
        if config.is_unlimited() {
            return u64::MAX;
        }
        self.ring.limit(config, clock)
    }

    /// `None` if the cell is indistinguishable from a fresh one at clock reading `at` (its
    /// newest entry has left the window), else the reading from which it will be. `clock`
    /// is read fresh for a group the call helps complete.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn idle_at<C: Clock + ?Sized>(
        &self,
        config: &LogConfig,
        clock: &C,
        at: u64,
    ) -> Option<u64> {
        if config.is_unlimited() {
            return None;
        }
        self.ring.idle_at(config, clock, at)
    }

    /// Bytes this cell occupies, its ring included: `24 + 8·C` compact.
    ///
    /// ```
    /// use ringlimit::cell::{LogConfig, SlidingLogCell};
    /// use ringlimit::WindowQuota;
    /// use ringlimit::cell::Compact;
    /// let config = LogConfig::new(WindowQuota::per_second(100)?)?;
    /// // 128 slots: the power of two above 100.
    /// assert_eq!(SlidingLogCell::<Compact>::new(&config).footprint(), 24 + 8 * 128);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.ring.slot_bytes()
    }
}

impl<L: Layout> fmt::Debug for SlidingLogCell<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingLogCell")
            .field("seq", &self.ring.seq())
            .field("slots", &self.ring.len())
            .finish()
    }
}
