//! [`WarmUpConfig`]: the configuration many warm-up cells share, published under an epoch
//! ([the guide](crate::guide::warm_up#the-state-stored-permits-as-nanoseconds-of-cooling)).

use std::fmt;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::ConfigError;
use crate::rate::Rate;
use crate::sync::{atomic, AdminLock, AtomicU64, Ordering};

use super::curve::{Config, Timeline};
use super::quota::WarmUpQuota;
use super::slot::Slot;

/// Configurations kept: a reader that loaded epoch `e` finds it in slot `e % KEPT` unless
/// `KEPT` reconfigurations came meanwhile (it then loads the epoch again).
const KEPT: u64 = 4;

/// A slot's stamp while a reconfiguration rewrites it: no epoch has this number.
const BUSY: u64 = u64::MAX;

/// Epoch `epoch`'s curve from `slot`, or `None` if the slot holds another epoch or is being
/// rewritten: the fields read between two loads of the stamp (the slot's epoch).
#[inline]
fn read(slot: &Slot, epoch: u64) -> Option<Config> {
    // Acquire (stamp and fields): pairs with the Release stores of a rewrite, so fields
    // written before the stamp that names `epoch` are visible, and each load stays before the
    // next. A field read from a later rewrite makes the closing stamp load see that rewrite's
    // `BUSY` or a later stamp, whose store came before it.
    let config = slot.load(Ordering::Acquire);
    (config.epoch == epoch && slot.epoch(Ordering::Acquire) == epoch).then_some(config)
}

/// Rewrites `slot` with `config` (under the admin lock).
fn write(slot: &Slot, config: &Config) {
    // Relaxed: the Release stores below come after it, so a reader that sees any of them sees
    // this stamp (or a later one) at its closing check.
    slot.set_epoch(BUSY, Ordering::Relaxed);
    // Release (fields, then the stamp last): a reader that loads one of the fields (Acquire)
    // sees `BUSY` or later at its closing stamp check and discards what it read; one that
    // loads the stamp naming `config.epoch` sees every field.
    slot.store(config, Ordering::Release);
}

/// The configuration of one or many [`WarmUpCell`](crate::cell::WarmUpCell)s: rate, warm-up
/// period, cold factor and per-call bound, and the origin of the cells' times (the clock's
/// reading when it was made, so a clock counting from the Unix epoch works).
/// [`set_rate`](Self::set_rate) and [`set_limit`](Self::set_limit) change it for every cell
/// at once; each cell picks the change up on its next access, linearizably, however many
/// changes it missed, with nothing to convert: a cell holds its stored permits as the
/// nanoseconds of cooling that stored them, which mean the same under every rate of one
/// warm-up period (Guava's `setRate` rescaling is the identity on them).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::{Rate, WarmUpQuota};
/// use ringlimit::cell::Compact;
///
/// let clock = ManualClock::new();
/// let quota = WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?;
/// let config = WarmUpConfig::new(quota, &clock);
/// let (alice, bob) = (WarmUpCell::<Compact>::new(&config), WarmUpCell::<Compact>::new(&config));
/// assert!(alice.try_acquire(&config, &clock));
/// assert!(!alice.try_acquire(&config, &clock)); // cold: alice's next permit is 1.375 s away
/// assert!(bob.try_acquire(&config, &clock)); // bob's own state
/// config.set_rate(Rate::per_second(4)?)?; // both cells pick it up on their next access
/// assert_eq!(alice.stored_permits(&config, &clock), 14.0); // 7 of 8 then, 14 of 16 now
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WarmUpConfig {
    /// The epoch in force: how many reconfigurations came before it.
    current: AtomicU64,
    /// Slot `e % KEPT` holds epoch `e`'s curve while `e > current - KEPT`.
    slots: [Slot; KEPT as usize],
    /// The per-call bound `set_limit` asked for (`u64::MAX`: the largest allowed); read and
    /// written only under `admin`.
    requested: AtomicU64,
    /// Serializes reconfigurations; decisions never take it.
    admin: AdminLock,
    /// `W` in ns: fixed, so a cell's cooling means the same under every configuration.
    warm_up: u64,
    cold_factor: f64,
    line: Timeline,
}

impl WarmUpConfig {
    /// The configuration of `quota`, its origin read from `clock`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WarmUpConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(5)?, Duration::from_secs(2))?;
    /// let config = WarmUpConfig::new(quota, &ManualClock::starting_at(1_760_000_000_000_000_000));
    /// assert_eq!((config.rate(), config.warm_up()), (Rate::per_second(5)?, Duration::from_secs(2)));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new<C: Clock + ?Sized>(quota: WarmUpQuota, clock: &C) -> Self {
        let (warm_up, config) = quota.parts();
        Self {
            current: atomic(config.epoch),
            slots: std::array::from_fn(|_| Slot::new(&config)),
            requested: atomic(u64::MAX),
            admin: AdminLock::new(),
            warm_up,
            cold_factor: quota.cold_factor_value(),
            line: Timeline::new(clock.now_nanos()),
        }
    }

    /// The rate once warm.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WarmUpConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(4)?, Duration::from_secs(1))?;
    /// let config = WarmUpConfig::new(quota, &ManualClock::new());
    /// assert_eq!(config.rate().period(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.current().period)
    }

    /// The warm-up period.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WarmUpConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(4)?, Duration::from_secs(3))?;
    /// assert_eq!(WarmUpConfig::new(quota, &ManualClock::new()).warm_up(), Duration::from_secs(3));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn warm_up(&self) -> Duration {
        Duration::from_nanos(self.warm_up)
    }

    /// How many times slower than the stable rate a cold cell lets permits through.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WarmUpConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(4)?, Duration::from_secs(3))?.cold_factor(2.5)?;
    /// assert_eq!(WarmUpConfig::new(quota, &ManualClock::new()).cold_factor(), 2.5);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn cold_factor(&self) -> f64 {
        self.cold_factor
    }

    /// The most permits one call may ask for.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WarmUpConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(4)?, Duration::from_secs(3))?;
    /// let config = WarmUpConfig::new(quota, &ManualClock::new());
    /// config.set_limit(10)?;
    /// assert_eq!(config.limit(), 10);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        self.current().limit
    }

    /// Changes the rate for every cell (Guava's `setRate`, applied by each cell on its next
    /// access): the warm-up period and cold factor stay, so does each cell's cooling, which
    /// under the new curve stores `old stored × new max / old max` permits, as Guava's
    /// rescaling gives. The per-call bound becomes the one `set_limit` asked for, or the
    /// largest the new cold interval allows if that is smaller.
    ///
    /// Errors, and then nothing changes: [`ConfigError::SpanTooLong`] if `cold_factor ×
    /// rate.period()` exceeds [`WarmUp::MAX_SPAN_NANOS`](crate::WarmUp::MAX_SPAN_NANOS);
    /// [`ConfigError::ColdFactorTooLarge`] if the new curve's warm-up part is lost to
    /// rounding.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let quota = WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?;
    /// let config = WarmUpConfig::new(quota, &clock);
    /// let cell: WarmUpCell = WarmUpCell::new(&config);
    /// config.set_rate(Rate::per_second(4)?)?;
    /// assert_eq!(config.rate(), Rate::per_second(4)?);
    /// assert_eq!(cell.stored_permits(&config, &clock), 16.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        self.admin.with(|| {
            // Relaxed: written only under the admin lock, which orders it.
            let requested = self.requested.load(Ordering::Relaxed);
            let new = Config::new(rate, self.warm_up, self.cold_factor, requested)?;
            self.install(new);
            Ok(())
        })
    }

    /// Sets the per-call bound (`1 ..= floor(2^58 ns / cold interval)`) for every cell, as
    /// [`WarmUp::set_limit`](crate::RateLimiter::set_limit) does; states are kept. Errors:
    /// [`ConfigError::ZeroLimit`], [`ConfigError::LimitTooLarge`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
    /// let cell: WarmUpCell = WarmUpCell::new(&config);
    /// config.set_limit(2)?;
    /// assert!(cell.try_acquire_n(&config, &clock, 3).is_err());
    /// assert!(config.set_limit(0).is_err());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        self.admin.with(|| {
            let new = self.current().with_limit(limit, self.cold_factor)?;
            // Relaxed: read and written only under the admin lock.
            self.requested.store(limit, Ordering::Relaxed);
            self.install(new);
            Ok(())
        })
    }

    /// Under the admin lock: writes `new` as the next epoch into its slot, then publishes
    /// the epoch. Cells relabel themselves on their next access; nothing else is touched.
    fn install(&self, new: Config) {
        // Relaxed: only reconfigurations store it, and they hold the lock.
        let epoch = self.current.load(Ordering::Relaxed);
        // 2^64 reconfigurations cannot happen; wrapping keeps it panic-free regardless (and
        // `BUSY` is never an epoch a reader waits for long).
        let next = Config {
            epoch: epoch.wrapping_add(1),
            ..new
        };
        write(&self.slots[(next.epoch % KEPT) as usize], &next);
        // SeqCst: the publication. A cell call loads its word (Acquire), then this epoch; one
        // that loads the old epoch loaded its word before this store, so it can take effect
        // before the change (the guide). Release within it publishes the slot to calls that
        // load the new epoch.
        self.current.store(next.epoch, Ordering::SeqCst);
    }

    /// The epoch in force, as a cell call loads it (after its word).
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        // SeqCst: as the store in `install`.
        self.current.load(Ordering::SeqCst)
    }

    /// The configuration in force (its epoch included), as a cell call loads it (after its
    /// word).
    #[inline]
    pub(crate) fn current(&self) -> Config {
        loop {
            // SeqCst: as the store in `install`.
            let epoch = self.current.load(Ordering::SeqCst);
            // The cast is exact: the index is below KEPT. A slot rewritten since the load
            // (KEPT reconfigurations in a few instructions) reads as `None`: load again.
            if let Some(config) = read(&self.slots[(epoch % KEPT) as usize], epoch) {
                return config;
            }
            // Lost a race with KEPT reconfigurations (and lets loom run the writer).
            crate::sync::spin_hint();
        }
    }

    /// The cells' timeline: their origin on the clock and their last time.
    #[inline]
    pub(crate) fn line(&self) -> &Timeline {
        &self.line
    }

    /// Bytes this configuration occupies (no heap).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WarmUpConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(5)?, Duration::from_secs(1))?;
    /// assert!(WarmUpConfig::new(quota, &ManualClock::new()).footprint() >= 4 * 56);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl fmt::Debug for WarmUpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = self.current();
        f.debug_struct("WarmUpConfig")
            .field("epoch", &config.epoch)
            .field("period_nanos", &config.period)
            .field("limit", &config.limit)
            .field("warm_up_nanos", &self.warm_up)
            .field("cold_factor", &self.cold_factor)
            .field("origin_nanos", &self.line.origin)
            .finish()
    }
}
