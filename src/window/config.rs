//! The window family's shared configurations: [`WindowConfig`] (a window and its limit, for
//! [`FixedWindowCell`](crate::cell::FixedWindowCell)s and
//! [`ApproxWindowCell`](crate::cell::ApproxWindowCell)s) with its setting word
//! `[epoch: 44 | limit: 20]`, and [`SlidingConfig`] (the same and a bucket width, for
//! [`SlidingWindowCell`](crate::cell::SlidingWindowCell)s)
//! ([the guide](crate::guide::window#cells-and-a-shared-configuration)).

use std::fmt;
use std::time::Duration;

use crate::error::ConfigError;
use crate::sync::{atomic, AtomicU64, Ordering};
use crate::validate;

use super::quota::WindowQuota;
use super::word::MAX_BUCKETS;

/// The configuration of one or many window cells: the window's length, and its limit, which
/// [`set_limit`](Self::set_limit) changes for every cell at once (each cell picks it up on
/// its next access, keeping its count, as [`FixedWindow::set_limit`](crate::RateLimiter::set_limit)
/// does).
///
/// ```
/// use ringlimit::cell::{FixedWindowCell, WindowConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// let config = WindowConfig::new(WindowQuota::per_second(2)?)?;
/// let (alice, bob) = (FixedWindowCell::<Compact>::new(), FixedWindowCell::<Compact>::new());
/// assert!(alice.try_acquire(&config, &clock) && alice.try_acquire(&config, &clock));
/// assert!(!alice.try_acquire(&config, &clock));
/// assert!(bob.try_acquire(&config, &clock));
/// config.set_limit(3)?;
/// assert!(alice.try_acquire(&config, &clock)); // the third of the raised limit
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct WindowConfig {
    /// `[epoch: 44 | limit: 20]`: the limit in force and how many changes came before it
    /// (see `Setting`); `set_limit` moves it, cells load it after their word.
    pub(super) setting: AtomicU64,
    /// The window's length in nanoseconds.
    pub(super) window: u64,
    /// Built from an unlimited quota: every call is admitted, and the limit cannot change.
    pub(super) unlimited: bool,
}

impl WindowConfig {
    /// The largest limit a window configuration holds (2^20 − 1): its limit and every
    /// cell's count are 20-bit fields of one word (the fixed window cells', and those of the
    /// [`SlidingWindowCell`](crate::cell::SlidingWindowCell)s and
    /// [`ApproxWindowCell`](crate::cell::ApproxWindowCell)s that share it). Below
    /// [`WindowQuota::MAX_LIMIT`] (2^40 − 1, the bucketed windows' bound): a larger quota
    /// is refused with [`ConfigError::LimitTooLarge`] naming this bound.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// assert_eq!(WindowConfig::MAX_LIMIT, (1 << 20) - 1);
    /// assert!(WindowConfig::new(WindowQuota::per_second(WindowConfig::MAX_LIMIT)?).is_ok());
    /// assert_eq!(
    ///     WindowConfig::new(WindowQuota::per_hour(10_000_000)?).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: WindowConfig::MAX_LIMIT })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// The configuration of `quota` (its window; a fixed window has no buckets). An
    /// unlimited quota admits everything.
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`WindowConfig::MAX_LIMIT`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per_minute(100)?)?;
    /// assert_eq!((config.limit(), config.window()), (100, Duration::from_secs(60)));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Result<Self, ConfigError> {
        // An unlimited configuration counts under the largest limit (and admits past it).
        let limit = if quota.is_unlimited() {
            MAX_LIMIT
        } else {
            validate::limit(quota.limit(), MAX_LIMIT)?
        };
        Ok(Self {
            setting: atomic(Setting { epoch: 0, limit }.pack()),
            window: quota.window_nanos(),
            unlimited: quota.is_unlimited(),
        })
    }

    /// The limit in force (`u64::MAX` when unlimited).
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowConfig::new(WindowQuota::unlimited())?.limit(), u64::MAX);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.load().limit
    }

    /// The window's length.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per(5, Duration::from_millis(250))?)?;
    /// assert_eq!(config.window(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.window)
    }

    /// Changes the limit for every cell; counts are kept, so a cell over the new limit
    /// admits nothing more until its window ends. [`ConfigError::ZeroLimit`],
    /// [`ConfigError::LimitTooLarge`], or [`ConfigError::Unlimited`] on an unlimited
    /// configuration.
    ///
    /// ```
    /// use ringlimit::cell::{FixedWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(3)?)?;
    /// let cell: FixedWindowCell = FixedWindowCell::new();
    /// assert!(cell.try_acquire_n(&config, &clock, 2)?.is_admitted());
    /// config.set_limit(1)?;
    /// assert_eq!(cell.available(&config, &clock), 0);
    /// assert!(config.set_limit(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.unlimited {
            return Err(ConfigError::Unlimited);
        }
        let limit = validate::limit(limit, MAX_LIMIT)?;
        // SeqCst (both): the publication. A cell call that loads the old setting loaded its
        // word before (Acquire, then this load), so it took effect before this change (the
        // guide). The same limit again starts no epoch.
        let _ = self
            .setting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| {
                let old = Setting::unpack(word);
                (old.limit != limit).then(|| {
                    Setting {
                        epoch: (old.epoch + 1) & EPOCH_MASK,
                        limit,
                    }
                    .pack()
                })
            });
        Ok(())
    }

    /// The epoch and limit in force, as a cell of another window family loads them (after
    /// its own word, as `load`).
    #[inline]
    pub(crate) fn epoch_and_limit(&self) -> (u64, u64) {
        let setting = self.load();
        (setting.epoch, setting.limit)
    }

    /// When a cell that admitted in window `window` counts nothing any more: that window's
    /// end (what [`FixedWindowCell::idle_at`] says of it, read from the mark of the
    /// admission instead of the cell).
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn reset_at(&self, window: u64) -> u64 {
        (window + 1).saturating_mul(self.window)
    }

    /// The window's length in nanoseconds.
    pub(crate) fn window_nanos(&self) -> u64 {
        self.window
    }

    /// Whether this configuration admits everything.
    pub(crate) fn is_unlimited(&self) -> bool {
        self.unlimited
    }

    /// The setting in force, as cells load it.
    #[inline]
    fn load(&self) -> Setting {
        // SeqCst: as in `set_limit`.
        Setting::unpack(self.setting.load(Ordering::SeqCst))
    }

    /// Bytes this configuration occupies.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowConfig::new(WindowQuota::per_second(1)?)?.footprint(), 24);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl fmt::Debug for WindowConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowConfig")
            .field("limit", &self.limit())
            .field("window", &self.window())
            .finish()
    }
}

/// Bits of a configuration epoch.
const EPOCH_BITS: u32 = 44;
pub(super) const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
/// Bits of a count or a limit.
pub(super) const COUNT_BITS: u32 = 20;
pub(super) const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// The largest limit of a configuration (and count of a cell): 2^20 - 1.
pub(super) const MAX_LIMIT: u64 = COUNT_MASK;

const _: () = assert!(EPOCH_BITS + COUNT_BITS == 64);

/// An unpacked configuration word, high to low `[epoch: 44 | limit: 20]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Setting {
    /// How many limit changes came before this one, modulo 2^44.
    epoch: u64,
    limit: u64,
}

impl Setting {
    fn pack(self) -> u64 {
        debug_assert!(self.epoch <= EPOCH_MASK && self.limit <= COUNT_MASK);
        (self.epoch << COUNT_BITS) | self.limit
    }

    fn unpack(word: u64) -> Self {
        Self {
            epoch: word >> COUNT_BITS,
            limit: word & COUNT_MASK,
        }
    }
}

/// The configuration of one or many [`SlidingWindowCell`](crate::cell::SlidingWindowCell)s of `B` buckets: the window, its
/// limit (which [`set_limit`](Self::set_limit) changes for every cell at once, each cell
/// picking it up on its next access with its counts kept, as
/// [`SlidingWindow::set_limit`](crate::RateLimiter::set_limit) does) and the bucket width
/// `window / B`.
///
/// ```
/// use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// let config = SlidingConfig::new(WindowQuota::per_second(2)?.buckets(4)?)?;
/// let (alice, bob) = (SlidingWindowCell::<4, Compact>::new(), SlidingWindowCell::<4, Compact>::new());
/// assert!(alice.try_acquire(&config, &clock) && alice.try_acquire(&config, &clock));
/// assert!(!alice.try_acquire(&config, &clock));
/// assert!(bob.try_acquire(&config, &clock));
/// config.set_limit(3)?;
/// assert!(alice.try_acquire(&config, &clock)); // the third of the raised limit
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct SlidingConfig<const B: usize = 10> {
    /// The limit and its epoch, the window, and whether it is unlimited.
    pub(super) window: WindowConfig,
    /// The bucket width, `window / B` nanoseconds (at least 1).
    pub(super) width: u64,
}

impl<const B: usize> SlidingConfig<B> {
    /// The largest limit a sliding cell configuration holds (2^20 − 1): a cell's counts are
    /// 20-bit fields of its head word, as in [`WindowConfig::MAX_LIMIT`]. Below
    /// [`WindowQuota::MAX_LIMIT`] (2^40 − 1, the bucketed windows' bound): a larger quota is
    /// refused with [`ConfigError::LimitTooLarge`] naming this bound.
    ///
    /// ```
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// assert_eq!(SlidingConfig::<10>::MAX_LIMIT, (1 << 20) - 1);
    /// let largest = WindowQuota::per_second(SlidingConfig::<10>::MAX_LIMIT)?;
    /// assert!(SlidingConfig::<10>::new(largest).is_ok());
    /// assert_eq!(
    ///     SlidingConfig::<10>::new(WindowQuota::per_hour(10_000_000)?).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: SlidingConfig::<10>::MAX_LIMIT })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_LIMIT: u64 = WindowConfig::MAX_LIMIT;

    /// The configuration of `quota`, which must count `B` buckets (a quota counts 10 unless
    /// told otherwise: [`WindowQuota::buckets`]);
    /// [`ConfigError::BucketCountMismatch`] otherwise, and
    /// [`ConfigError::LimitTooLarge`] when its limit is above
    /// [`SlidingConfig::MAX_LIMIT`]. An unlimited quota admits everything.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// let config: SlidingConfig<10> = SlidingConfig::new(WindowQuota::per_minute(100)?)?;
    /// assert_eq!(config.bucket_width(), Duration::from_secs(6));
    /// let four = WindowQuota::per_minute(100)?.buckets(4)?;
    /// assert_eq!(
    ///     SlidingConfig::<10>::new(four).err(),
    ///     Some(ConfigError::BucketCountMismatch { quota: 4, cell: 10 })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Result<Self, ConfigError> {
        const { assert!(B >= 1 && B as u64 <= MAX_BUCKETS, "1 <= B <= 4096") };
        let buckets = B as u64;
        // An unlimited quota decides nothing: any resolution will do.
        let quota = if quota.is_unlimited() {
            quota.buckets(buckets)?
        } else {
            quota
        };
        if quota.bucket_count() != buckets {
            return Err(ConfigError::BucketCountMismatch {
                quota: quota.bucket_count(),
                cell: buckets,
            });
        }
        Ok(Self {
            window: WindowConfig::new(quota)?,
            width: quota.window_nanos() / buckets,
        })
    }

    /// The limit in force (`u64::MAX` when unlimited).
    ///
    /// ```
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(SlidingConfig::<10>::new(WindowQuota::per_second(7)?)?.limit(), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        self.window.limit()
    }

    /// The window's length.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::WindowQuota;
    /// let config = SlidingConfig::<10>::new(WindowQuota::per_minute(7)?)?;
    /// assert_eq!(config.window(), Duration::from_secs(60));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(&self) -> Duration {
        self.window.window()
    }

    /// The width of one bucket, `window / B`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::WindowQuota;
    /// let config = SlidingConfig::<4>::new(WindowQuota::per_second(7)?.buckets(4)?)?;
    /// assert_eq!(config.bucket_width(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn bucket_width(&self) -> Duration {
        Duration::from_nanos(self.width)
    }

    /// Changes the limit for every cell; counts are kept, so a cell over the new limit admits
    /// nothing more until enough of its buckets expire. [`ConfigError::ZeroLimit`],
    /// [`ConfigError::LimitTooLarge`], or [`ConfigError::Unlimited`] on an unlimited
    /// configuration.
    ///
    /// ```
    /// use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = SlidingConfig::new(WindowQuota::per_second(3)?)?;
    /// let cell: SlidingWindowCell = SlidingWindowCell::new();
    /// assert!(cell.try_acquire_n(&config, &clock, 2)?.is_admitted());
    /// config.set_limit(1)?;
    /// assert_eq!(cell.available(&config, &clock), 0);
    /// assert!(config.set_limit(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        self.window.set_limit(limit)
    }

    /// When a cell that admitted in bucket `epoch` counts nothing any more: once that
    /// bucket leaves the window (what [`SlidingWindowCell::idle_at`] says of it, read from
    /// the mark of the admission instead of the cell).
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn reset_at(&self, epoch: u64) -> u64 {
        (epoch + B as u64).saturating_mul(self.width)
    }

    /// Bytes this configuration occupies.
    ///
    /// ```
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(SlidingConfig::<10>::new(WindowQuota::per_second(1)?)?.footprint(), 32);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl<const B: usize> fmt::Debug for SlidingConfig<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingConfig")
            .field("limit", &self.limit())
            .field("window", &self.window())
            .field("buckets", &B)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window quota holds more than the configuration's 20-bit limit: the configuration
    /// refuses it, naming its own bound, and holds the largest limit and an unlimited quota.
    #[test]
    fn limits_beyond_the_fields_are_refused() {
        for limit in [MAX_LIMIT + 1, 10_000_000, WindowQuota::MAX_LIMIT] {
            let quota = WindowQuota::per_hour(limit).unwrap();
            assert_eq!(
                WindowConfig::new(quota).err(),
                Some(ConfigError::LimitTooLarge {
                    limit,
                    max: MAX_LIMIT
                })
            );
        }
        let largest = WindowConfig::new(WindowQuota::per_hour(MAX_LIMIT).unwrap()).unwrap();
        assert_eq!(largest.limit(), MAX_LIMIT);
        let unlimited = WindowConfig::new(WindowQuota::unlimited()).unwrap();
        assert_eq!(unlimited.limit(), u64::MAX);
        assert_eq!(unlimited.epoch_and_limit(), (0, MAX_LIMIT));
    }

    #[test]
    fn setting_words_round_trip_at_field_limits() {
        for setting in [
            Setting { epoch: 0, limit: 1 },
            Setting {
                epoch: EPOCH_MASK,
                limit: MAX_LIMIT,
            },
        ] {
            assert_eq!(Setting::unpack(setting.pack()), setting);
        }
        assert_eq!(Setting { epoch: 1, limit: 2 }.pack(), (1 << 20) | 2);
    }
}
