//! [`LogConfig`]: the configuration one or many [`SlidingLogCell`](crate::cell::SlidingLogCell)s
//! share, and its setting word `[label: 20 | limit: 20 | prior: 20]`.

use std::fmt;
use std::time::Duration;

use crate::error::ConfigError;
use crate::sync::{atomic, AtomicU64, Ordering};
use crate::validate;
use crate::window::WindowQuota;

use super::word::{LABEL_BITS, LABEL_MASK, MAX_LIMIT};

/// The configuration of one or many [`SlidingLogCell`](crate::cell::SlidingLogCell)s: the
/// window, the largest limit a cell's ring has room for (`max_limit`), and the limit, which
/// [`set_limit`](Self::set_limit) changes for every cell at once (each cell picks it up on
/// its next access with its log kept, as [`SlidingLog::set_limit`](crate::RateLimiter::set_limit)
/// does).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::cell::{LogConfig, SlidingLogCell};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// let config = LogConfig::with_max_limit(WindowQuota::per_second(2)?, 3)?;
/// let alice = SlidingLogCell::<Compact>::new(&config);
/// assert!(alice.try_acquire(&config, &clock) && alice.try_acquire(&config, &clock));
/// assert!(!alice.try_acquire(&config, &clock));
/// config.set_limit(3)?;
/// assert!(alice.try_acquire(&config, &clock)); // the third of the raised limit
/// clock.advance(Duration::from_secs(1)); // all three leave the window
/// assert_eq!(alice.available(&config, &clock), 3);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct LogConfig {
    /// `[label: 20 | limit: 20 | prior: 20]`, see [`Setting`].
    setting: AtomicU64,
    window: u64,
    /// The largest limit `set_limit` accepts, which sizes every cell's ring.
    capacity: u64,
    unlimited: bool,
}

impl LogConfig {
    /// The largest limit (and `max_limit`) a log configuration holds: 2^20 − 1, the same as
    /// [`SlidingLog::MAX_LIMIT`](crate::SlidingLog::MAX_LIMIT) (a cell's ring holds one
    /// 8-byte slot per permit, 8 MiB at most).
    ///
    /// ```
    /// use ringlimit::cell::LogConfig;
    /// use ringlimit::{ConfigError, SlidingLog, WindowQuota};
    /// assert_eq!(LogConfig::MAX_LIMIT, SlidingLog::MAX_LIMIT);
    /// assert!(LogConfig::new(WindowQuota::per_second(LogConfig::MAX_LIMIT)?).is_ok());
    /// let over = WindowQuota::per_second(LogConfig::MAX_LIMIT + 1)?;
    /// assert_eq!(
    ///     LogConfig::new(over).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: LogConfig::MAX_LIMIT + 1, max: LogConfig::MAX_LIMIT })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// At most `quota.limit()` permits in any `quota.window_length()` (the quota's buckets
    /// are not used: a log is exact), with room for that limit. An unlimited quota admits
    /// everything, and its cells hold the smallest ring.
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`LogConfig::MAX_LIMIT`].
    ///
    /// ```
    /// use ringlimit::cell::LogConfig;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// let config = LogConfig::new(WindowQuota::per_second(100)?)?;
    /// assert_eq!((config.limit(), config.max_limit()), (100, 100));
    /// assert_eq!(LogConfig::new(WindowQuota::unlimited())?.limit(), u64::MAX);
    /// assert_eq!(
    ///     LogConfig::new(WindowQuota::per_hour(10_000_000)?).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: LogConfig::MAX_LIMIT })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Result<Self, ConfigError> {
        Self::with_max_limit(quota, 0)
    }

    /// `quota`, with rings sized so that [`set_limit`](Self::set_limit) can go up to
    /// `max_limit`, which is raised to the quota's limit and lowered to
    /// [`LogConfig::MAX_LIMIT`] if outside them (a cell's ring holds one 8-byte slot per
    /// permit of `max_limit`, rounded up to a power of two).
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`LogConfig::MAX_LIMIT`].
    ///
    /// ```
    /// use ringlimit::cell::LogConfig;
    /// use ringlimit::WindowQuota;
    /// let config = LogConfig::with_max_limit(WindowQuota::per_second(10)?, 1000)?;
    /// assert_eq!((config.limit(), config.max_limit()), (10, 1000));
    /// assert!(config.set_limit(1000).is_ok());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_max_limit(quota: WindowQuota, max_limit: u64) -> Result<Self, ConfigError> {
        let unlimited = quota.is_unlimited();
        // An unlimited configuration decides nothing: the smallest ring will do.
        let limit = if unlimited {
            1
        } else {
            validate::limit(quota.limit(), MAX_LIMIT)?
        };
        let capacity = if unlimited {
            1
        } else {
            max_limit.clamp(limit, MAX_LIMIT)
        };
        Ok(Self {
            setting: atomic(
                Setting {
                    label: 0,
                    limit,
                    prior: limit,
                }
                .pack(),
            ),
            window: quota.window_nanos(),
            capacity,
            unlimited,
        })
    }

    /// `quota`, with the most room for raising its limit that costs no memory: a ring's
    /// slots are a power of two, so the ring of the quota's limit has room for a limit up to
    /// one less than that (7 for a limit of 5, 127 for 100). Errors as [`new`](Self::new).
    #[cfg(feature = "rules")]
    pub(crate) fn with_free_room(quota: WindowQuota) -> Result<Self, ConfigError> {
        let room = super::word::slots_for(quota.limit().min(MAX_LIMIT)) - 1;
        Self::with_max_limit(quota, room)
    }

    /// The limit in force (`u64::MAX` when unlimited).
    ///
    /// ```
    /// use ringlimit::cell::LogConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(LogConfig::new(WindowQuota::per_second(7)?)?.limit(), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.setting().limit
    }

    /// The largest limit [`set_limit`](Self::set_limit) accepts.
    ///
    /// ```
    /// use ringlimit::cell::LogConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(LogConfig::new(WindowQuota::per_second(7)?)?.max_limit(), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_limit(&self) -> u64 {
        self.capacity
    }

    /// The window's length.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::LogConfig;
    /// use ringlimit::WindowQuota;
    /// let config = LogConfig::new(WindowQuota::per_minute(7)?)?;
    /// assert_eq!(config.window(), Duration::from_secs(60));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.window)
    }

    /// Changes the limit for every cell (`1..=max_limit`); logs are kept, so a cell over the
    /// new limit admits nothing more until enough of its entries expire.
    /// [`ConfigError::ZeroLimit`], [`ConfigError::LimitTooLarge`], or
    /// [`ConfigError::Unlimited`] on an unlimited configuration.
    ///
    /// ```
    /// use ringlimit::cell::{LogConfig, SlidingLogCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// let clock = ManualClock::new();
    /// let config = LogConfig::new(WindowQuota::per_second(3)?)?;
    /// let cell: SlidingLogCell = SlidingLogCell::new(&config);
    /// assert!(cell.try_acquire_n(&config, &clock, 2)?.is_admitted());
    /// config.set_limit(1)?;
    /// assert_eq!(cell.available(&config, &clock), 0);
    /// assert_eq!(config.set_limit(4), Err(ConfigError::LimitTooLarge { limit: 4, max: 3 }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.unlimited {
            return Err(ConfigError::Unlimited);
        }
        let limit = validate::limit(limit, self.capacity)?;
        // SeqCst (both): the publication. A cell call that loads the old setting loaded its
        // head before (Acquire, then this load), so it is decided before the cell is
        // relabelled with this change (the guide). The same limit again starts no label.
        let _ = self
            .setting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| {
                let old = Setting::unpack(word);
                (old.limit != limit).then(|| {
                    Setting {
                        label: (old.label + 1) & LABEL_MASK,
                        limit,
                        prior: old.limit,
                    }
                    .pack()
                })
            });
        Ok(())
    }

    /// Bytes this configuration occupies.
    ///
    /// ```
    /// use ringlimit::cell::LogConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(LogConfig::new(WindowQuota::per_second(1)?)?.footprint(), 32);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    #[inline]
    pub(crate) fn setting(&self) -> Setting {
        // SeqCst: as in `set_limit`.
        Setting::unpack(self.setting.load(Ordering::SeqCst))
    }

    pub(crate) fn window_nanos(&self) -> u64 {
        self.window
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    pub(crate) fn is_unlimited(&self) -> bool {
        self.unlimited
    }
}

impl fmt::Debug for LogConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogConfig")
            .field("limit", &self.limit())
            .field("max_limit", &self.capacity)
            .field("window", &self.window())
            .finish()
    }
}

/// Bits of a limit (at most `MAX_LIMIT`, 2^20 - 1).
const LIMIT_BITS: u32 = 20;
const LIMIT_MASK: u64 = (1 << LIMIT_BITS) - 1;
const LIMIT_SHIFT: u32 = LIMIT_BITS;
const LABEL_SHIFT: u32 = 2 * LIMIT_BITS;

const _: () = assert!(LABEL_BITS + 2 * LIMIT_BITS <= 64 && MAX_LIMIT <= LIMIT_MASK);

/// An unpacked setting word, high to low `[unused: 4 | label: 20 | limit: 20 | prior: 20]`:
/// the limit in force, the number (mod 2^20) of the changes that led to it, which a cell's
/// head carries once it was relabelled with this limit, and the limit of the label before
/// (so that a group reserved under that label can still be completed with its limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Setting {
    pub(crate) label: u64,
    pub(crate) limit: u64,
    pub(crate) prior: u64,
}

impl Setting {
    fn pack(self) -> u64 {
        debug_assert!(
            self.label <= LABEL_MASK && self.limit <= LIMIT_MASK && self.prior <= LIMIT_MASK
        );
        (self.label << LABEL_SHIFT) | (self.limit << LIMIT_SHIFT) | self.prior
    }

    fn unpack(word: u64) -> Self {
        Self {
            label: (word >> LABEL_SHIFT) & LABEL_MASK,
            limit: (word >> LIMIT_SHIFT) & LIMIT_MASK,
            prior: word & LIMIT_MASK,
        }
    }

    /// The limit a head labelled `label` was decided under, if this setting still knows it
    /// (its own label or the one before).
    pub(crate) fn limit_of(self, label: u64) -> Option<u64> {
        if label == self.label {
            Some(self.limit)
        } else if label == (self.label.wrapping_sub(1) & LABEL_MASK) {
            Some(self.prior)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_round_trips_and_knows_two_labels() {
        for setting in [
            Setting {
                label: 0,
                limit: 1,
                prior: 1,
            },
            Setting {
                label: LABEL_MASK,
                limit: MAX_LIMIT,
                prior: 7,
            },
        ] {
            assert_eq!(Setting::unpack(setting.pack()), setting);
        }
        let setting = Setting {
            label: 0,
            limit: 5,
            prior: 9,
        };
        assert_eq!(setting.limit_of(0), Some(5));
        assert_eq!(setting.limit_of(LABEL_MASK), Some(9));
        assert_eq!(setting.limit_of(1), None);
    }

    #[test]
    fn set_limit_labels_each_change_and_keeps_the_prior() {
        let config = LogConfig::with_max_limit(WindowQuota::per_second(3).unwrap(), 10).unwrap();
        config.set_limit(3).unwrap();
        assert_eq!(config.setting().label, 0);
        config.set_limit(8).unwrap();
        assert_eq!(
            config.setting(),
            Setting {
                label: 1,
                limit: 8,
                prior: 3
            }
        );
        assert_eq!(
            config.set_limit(11),
            Err(ConfigError::LimitTooLarge { limit: 11, max: 10 })
        );
        assert_eq!(config.set_limit(0), Err(ConfigError::ZeroLimit));
    }
}
