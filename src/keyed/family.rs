//! The algorithm families a [`Keyed`](super::Keyed) limiter holds one cell of per key.

use crate::bucket::{BucketQuota, Narrow, ShaperQuota};
use crate::cell::{
    BucketCell, BucketConfig, ConcurrencyCell, ConcurrencyConfig, FixedWindowCell, LogConfig,
    SlidingConfig, SlidingLogCell, SlidingWindowCell, WindowConfig,
};
use crate::clock::Clock;
use crate::concurrency::ConcurrencyQuota;
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::Compact;
use crate::limiter::Decision;
use crate::window::WindowQuota;

mod sealed {
    pub trait Sealed {}
}

/// An algorithm family of [`Keyed`](super::Keyed) limiters: the configuration all keys share
/// and the cell each key holds (compact: the map holds millions).
///
/// ```
/// use ringlimit::keyed::{FixedWindows, Keyed};
/// use ringlimit::WindowQuota;
/// let per_ip: Keyed<u32, FixedWindows> = Keyed::try_new(WindowQuota::per_minute(100)?)?;
/// assert!(per_ip.try_acquire(&0x7f00_0001));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait Family: sealed::Sealed + Send + Sync + 'static {
    /// The configuration every key shares.
    type Config: Send + Sync;
    /// What one key holds.
    type Cell: Send + Sync;
    /// Whether the cell holds all its state inline (nothing on the heap), so that a bounded
    /// limiter keeps its cells in a table of slots allocated ahead of the keys.
    #[doc(hidden)]
    const INLINE: bool = true;

    /// The configuration as the keyed limiter keeps it (the bucket family's meters convert
    /// so that a full bucket stays full).
    #[doc(hidden)]
    fn adopt(config: Self::Config) -> Self::Config {
        config
    }
    #[doc(hidden)]
    fn cell(config: &Self::Config) -> Self::Cell;
    /// Makes `cell`, idle, as [`cell`](Self::cell) would make it now, for a table that hands
    /// a dropped key's slot to another key; the caller has the cell to itself. Nothing for
    /// the families whose idle cell is fresh under any configuration (the windows and
    /// in-flight counts: their limits are read at each decision).
    #[doc(hidden)]
    fn renew(_cell: &Self::Cell, _config: &Self::Config) {}
    /// `None` if `cell` is indistinguishable from a fresh one at clock reading `at` (and at
    /// every later one, under every later reconfiguration), else the reading from which it
    /// will be (absent new admissions), both from one settled state. `clock` is read fresh
    /// for anything else settling needs (a conversion's reading), never `at`.
    #[doc(hidden)]
    fn idle_at<C: Clock + ?Sized>(
        cell: &Self::Cell,
        config: &Self::Config,
        clock: &C,
        at: u64,
    ) -> Option<u64>;
}

/// A family of rate limits (every family but [`InFlight`]): a key's permits are taken and
/// never given back, so [`Keyed::try_acquire`](super::Keyed::try_acquire) and its kin apply.
///
/// ```
/// use ringlimit::keyed::{Buckets, Keyed};
/// use ringlimit::BucketQuota;
/// let per_user: Keyed<u64, Buckets> = Keyed::new(BucketQuota::per_second(5)?.burst(1)?);
/// assert!(per_user.try_acquire(&3) && !per_user.try_acquire(&3));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait RateFamily: Family {
    #[doc(hidden)]
    fn try_acquire<C: Clock + ?Sized>(cell: &Self::Cell, config: &Self::Config, clock: &C) -> bool;
    #[doc(hidden)]
    fn try_acquire_n<C: Clock + ?Sized>(
        cell: &Self::Cell,
        config: &Self::Config,
        clock: &C,
        n: u64,
    ) -> Result<Decision, ExceedsLimit>;
    #[doc(hidden)]
    fn available<C: Clock + ?Sized>(cell: &Self::Cell, config: &Self::Config, clock: &C) -> u64;
    /// What a fresh cell has available: the limit in force (`u64::MAX` unlimited).
    #[doc(hidden)]
    fn capacity(config: &Self::Config) -> u64;
    /// `try_acquire_n`, with the mark a refund of an admission needs (`None`: not
    /// refundable).
    #[doc(hidden)]
    fn grant<C: Clock + ?Sized>(
        cell: &Self::Cell,
        config: &Self::Config,
        clock: &C,
        n: u64,
    ) -> Result<(Decision, Option<(u64, u64)>), ExceedsLimit> {
        Ok((Self::try_acquire_n(cell, config, clock, n)?, None))
    }
    /// The reading from which the cell is indistinguishable from a fresh one again after an
    /// admission marked `mark`, if no other permit is taken meanwhile, when the mark alone
    /// says it (`None`: ask [`Family::idle_at`] of the cell).
    #[doc(hidden)]
    fn reset_at(_config: &Self::Config, _mark: (u64, u64)) -> Option<u64> {
        None
    }
    /// Gives back up to `n` permits of the admission marked `mark`; the permits restored.
    #[doc(hidden)]
    fn refund<C: Clock + ?Sized>(
        _cell: &Self::Cell,
        _config: &Self::Config,
        _clock: &C,
        _mark: (u64, u64),
        _n: u64,
    ) -> u64 {
        0
    }
}

/// A family whose configuration is built from a quota (with the clock, for families whose
/// times count from it), so that building a keyed limiter cannot fail: every quota of the
/// family fits its cells. The window families' cells hold less than a
/// [`WindowQuota`](crate::WindowQuota) may ask for
/// ([`WindowQuota::MAX_LIMIT`](crate::WindowQuota::MAX_LIMIT)), so they are built from
/// their quota by [`Keyed::try_new`](super::Keyed::try_new) ([`TryFromQuota`]), which says
/// when a quota does not fit.
///
/// ```
/// use ringlimit::keyed::{Buckets, Keyed};
/// use ringlimit::BucketQuota;
/// // `Keyed::new` takes the family's quota: a `BucketQuota` for token buckets.
/// let limits: Keyed<u64, Buckets> = Keyed::new(BucketQuota::per_second(10)?);
/// assert_eq!(limits.available(&1), 10);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait FromQuota: Family {
    /// The quota.
    type Quota;
    #[doc(hidden)]
    fn config<C: Clock + ?Sized>(quota: Self::Quota, clock: &C) -> Self::Config;
}

/// Every family: its configuration built from a quota (with the clock, for families whose
/// times count from it), refused when the quota does not fit the family's cells (the window
/// families' cells hold limits up to their configuration's `MAX_LIMIT`), so that every
/// keyed limiter is built from its quota ([`Keyed::try_new`](super::Keyed::try_new)).
///
/// ```
/// use ringlimit::keyed::{FixedWindows, Keyed, SlidingLogs, SlidingWindows};
/// use ringlimit::WindowQuota;
/// let quota = WindowQuota::per_minute(100)?;
/// let fixed: Keyed<u64, FixedWindows> = Keyed::try_new(quota)?;
/// let sliding: Keyed<u64, SlidingWindows> = Keyed::try_new(quota)?;
/// let logs: Keyed<u64, SlidingLogs> = Keyed::try_new(quota)?;
/// assert!(fixed.try_acquire(&1) && sliding.try_acquire(&1) && logs.try_acquire(&1));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait TryFromQuota: Family {
    /// The quota.
    type Quota;
    #[doc(hidden)]
    fn try_config<C: Clock + ?Sized>(
        quota: Self::Quota,
        clock: &C,
    ) -> Result<Self::Config, ConfigError>;
}

/// `TryFromQuota` of a window family, whose configuration is made from the quota alone.
macro_rules! window_from_quota {
    ($family:ty $(, $generics:tt)?; $config:ty) => {
        impl$(<const $generics: usize>)? TryFromQuota for $family {
            type Quota = WindowQuota;
            fn try_config<C: Clock + ?Sized>(
                quota: WindowQuota,
                _: &C,
            ) -> Result<$config, ConfigError> {
                <$config>::new(quota)
            }
        }
    };
}

/// `TryFromQuota` of a family built from its quota infallibly ([`FromQuota`]).
macro_rules! infallibly_from_quota {
    ($($family:ty),+) => {
        $(impl TryFromQuota for $family {
            type Quota = <$family as FromQuota>::Quota;
            fn try_config<C: Clock + ?Sized>(
                quota: Self::Quota,
                clock: &C,
            ) -> Result<Self::Config, ConfigError> {
                Ok(<$family as FromQuota>::config(quota, clock))
            }
        })+
    };
}

window_from_quota!(FixedWindows; WindowConfig);
window_from_quota!(SlidingWindows<B>, B; SlidingConfig<B>);
window_from_quota!(SlidingLogs; LogConfig);
infallibly_from_quota!(Buckets, Shapers, InFlight);

/// Binds a family's `idle_at` to its cell's method of the same name.
macro_rules! idle_at {
    () => {
        fn idle_at<C: Clock + ?Sized>(
            cell: &Self::Cell,
            config: &Self::Config,
            clock: &C,
            at: u64,
        ) -> Option<u64> {
            cell.idle_at(config, clock, at)
        }
    };
}

/// The [`RateFamily`] impl of a family whose cell has the usual methods.
macro_rules! decisions {
    ($family:ty $(, $generics:tt)? $(; $refunds:ident)?) => {
        impl$(<const $generics: usize>)? RateFamily for $family {
            fn try_acquire<C: Clock + ?Sized>(
                cell: &Self::Cell,
                config: &Self::Config,
                clock: &C,
            ) -> bool {
                cell.try_acquire(config, clock)
            }
            fn try_acquire_n<C: Clock + ?Sized>(
                cell: &Self::Cell,
                config: &Self::Config,
                clock: &C,
                n: u64,
            ) -> Result<Decision, ExceedsLimit> {
                cell.try_acquire_n(config, clock, n)
            }
            fn available<C: Clock + ?Sized>(
                cell: &Self::Cell,
                config: &Self::Config,
                clock: &C,
            ) -> u64 {
                cell.available(config, clock)
            }
            fn capacity(config: &Self::Config) -> u64 {
                config.limit()
            }
            refunds!($($refunds)?);
        }
    };
}

/// The grant and refund of a family whose cell refunds (windows: the window or bucket
/// counted; buckets: the time mark and the epoch).
macro_rules! refunds {
    () => {};
    (window) => {
        fn grant<C: Clock + ?Sized>(
            cell: &Self::Cell,
            config: &Self::Config,
            clock: &C,
            n: u64,
        ) -> Result<(Decision, Option<(u64, u64)>), ExceedsLimit> {
            let (decision, window) = cell.grant(config, clock, n)?;
            Ok((decision, window.map(|w| (w, 0))))
        }
        fn reset_at(config: &Self::Config, (window, _): (u64, u64)) -> Option<u64> {
            Some(config.reset_at(window))
        }
        fn refund<C: Clock + ?Sized>(
            cell: &Self::Cell,
            config: &Self::Config,
            _clock: &C,
            (window, _): (u64, u64),
            n: u64,
        ) -> u64 {
            cell.refund(config, window, n)
        }
    };
    (bucket) => {
        fn grant<C: Clock + ?Sized>(
            cell: &Self::Cell,
            config: &Self::Config,
            clock: &C,
            n: u64,
        ) -> Result<(Decision, Option<(u64, u64)>), ExceedsLimit> {
            cell.grant(config, clock, n)
        }
        fn refund<C: Clock + ?Sized>(
            cell: &Self::Cell,
            config: &Self::Config,
            clock: &C,
            mark: (u64, u64),
            n: u64,
        ) -> u64 {
            cell.refund(config, clock, mark, n)
        }
    };
}

/// Fixed windows: a [`FixedWindowCell`] of 16 bytes per key, built from a [`WindowConfig`]
/// ([`Keyed::try_new`](super::Keyed::try_new) of a
/// [`WindowQuota`]), which holds limits up to [`WindowConfig::MAX_LIMIT`].
///
/// ```
/// use ringlimit::keyed::{FixedWindows, Keyed};
/// use ringlimit::WindowQuota;
/// let per_user: Keyed<String, FixedWindows> = Keyed::try_new(WindowQuota::per_minute(1)?)?;
/// assert!(per_user.try_acquire("alice") && !per_user.try_acquire("alice"));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug)]
pub enum FixedWindows {}

impl sealed::Sealed for FixedWindows {}

impl Family for FixedWindows {
    type Config = WindowConfig;
    type Cell = FixedWindowCell<Compact>;
    fn cell(_: &WindowConfig) -> Self::Cell {
        FixedWindowCell::new()
    }
    idle_at!();
}

decisions!(FixedWindows; window);

/// Sliding windows of `B` buckets: a [`SlidingWindowCell`] of `16 + 8·B` bytes per key
/// (96 for 10), built from a [`SlidingConfig`] ([`Keyed::try_new`](super::Keyed::try_new) of a
/// [`WindowQuota`]).
///
/// ```
/// use ringlimit::cell::SlidingConfig;
/// use ringlimit::clock::TscClock;
/// use ringlimit::keyed::{Keyed, SlidingWindows};
/// use ringlimit::WindowQuota;
/// let config = SlidingConfig::new(WindowQuota::per_minute(2)?)?; // 10 buckets of 6 s
/// let per_user: Keyed<u64, SlidingWindows> = Keyed::with_config(config, TscClock::new());
/// assert!(per_user.try_acquire(&1) && per_user.try_acquire(&1));
/// assert!(!per_user.try_acquire(&1));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug)]
pub enum SlidingWindows<const B: usize = 10> {}

impl<const B: usize> sealed::Sealed for SlidingWindows<B> {}

impl<const B: usize> Family for SlidingWindows<B> {
    type Config = SlidingConfig<B>;
    type Cell = SlidingWindowCell<B, Compact>;
    fn cell(_: &SlidingConfig<B>) -> Self::Cell {
        SlidingWindowCell::new()
    }
    idle_at!();
}

decisions!(SlidingWindows<B>, B; window);

/// Exact sliding logs: a [`SlidingLogCell`] per key, 24 bytes plus its ring of `8·C` bytes
/// (`C` the power of two above the configuration's `max_limit`: 1 KiB for a limit of 100),
/// built from a [`LogConfig`] ([`Keyed::try_new`](super::Keyed::try_new) of a
/// [`WindowQuota`]), which holds limits up to
/// [`LogConfig::MAX_LIMIT`]. Exact, and the dearest per key: for millions of keys prefer
/// [`SlidingWindows`].
///
/// ```
/// use ringlimit::keyed::{Keyed, SlidingLogs};
/// use ringlimit::WindowQuota;
/// let per_user: Keyed<u64, SlidingLogs> = Keyed::try_new(WindowQuota::per_minute(2)?)?;
/// assert!(per_user.try_acquire(&1) && per_user.try_acquire(&1));
/// assert!(!per_user.try_acquire(&1));
/// assert!(per_user.try_acquire(&2));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug)]
pub enum SlidingLogs {}

impl sealed::Sealed for SlidingLogs {}

impl Family for SlidingLogs {
    type Config = LogConfig;
    type Cell = SlidingLogCell<Compact>;
    /// A log's ring is on the heap, sized from the limit: the map allocates one per key.
    const INLINE: bool = false;
    fn cell(config: &LogConfig) -> Self::Cell {
        SlidingLogCell::new(config)
    }
    idle_at!();
}

decisions!(SlidingLogs);

/// Token buckets, equivalently leaky-bucket meters (GCRA): a narrow [`BucketCell`] of 8
/// bytes per key (`[time: 58 | tag: 6]`, see [`Narrow`]), built from a [`BucketQuota`] or a
/// [`BucketConfig`] ([`Keyed::with_config`](super::Keyed::with_config)).
///
/// **Range.** Times count from the limiter's creation up to 2^58 - 1 ns, about 9.1 years;
/// past that every request is refused (`retry_after` of `Duration::MAX`), never admitted
/// by a wrapped time. The cell keeps the configuration epoch modulo 64, so the configuration
/// refuses, with [`ConfigError::ReconfiguredTooOften`](crate::ConfigError::ReconfiguredTooOften),
/// the 63rd of a run of reconfigurations that each came within the widest burst's refill
/// time of the one before ([the guide](crate::guide::bucket#the-narrow-cell-8-bytes-per-key)).
///
/// **Reconfiguration.** A keyed limiter's buckets keep a full bucket full across every
/// change of the shared configuration (raising the burst adds its extra permits to every
/// bucket at once), where [`TokenBucket::set_burst`](crate::TokenBucket::set_burst) keeps
/// the permits available: a full bucket must stay indistinguishable from a key never seen,
/// which starts full, so that dropping it can never change a decision. Reconfigure with
/// [`Keyed::clock`](super::Keyed::clock). The one exception, inherited from
/// [`BucketCell`]: a cell left untouched by 32 or more reconfigurations converts from the
/// emptiest state it could be in (a whole burst behind), so a full bucket kept that long
/// refuses where a dropped one would admit (fewer admitted, never more). A new key always
/// starts full: a bounded limiter's table renews a dropped key's cell before another key
/// takes its slot, and a fresh cell converts exactly however far behind it is.
///
/// ```
/// use ringlimit::clock::ManualClock;
/// use ringlimit::keyed::{Buckets, Keyed};
/// use ringlimit::{BucketQuota, Rate};
/// let clock = ManualClock::new();
/// let per_user: Keyed<u64, Buckets, _> =
///     Keyed::with_clock(BucketQuota::per_second(10)?.burst(2)?, clock.clone());
/// assert!(per_user.try_acquire(&1) && per_user.try_acquire(&1));
/// assert!(!per_user.try_acquire(&1));
/// per_user.config().set_limit(&clock, 5)?; // 3 more for every bucket, at once
/// assert_eq!(per_user.available(&1), 3);
/// assert_eq!(per_user.available(&2), 5);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug)]
pub enum Buckets {}

impl sealed::Sealed for Buckets {}

impl Family for Buckets {
    type Config = BucketConfig;
    type Cell = BucketCell<Compact, Narrow>;
    fn adopt(config: BucketConfig) -> BucketConfig {
        config.keeping_debt().narrowed()
    }
    fn cell(config: &BucketConfig) -> Self::Cell {
        // `adopt` made the configuration keep debt and marked it as holding narrow cells.
        BucketCell::fresh(config)
    }
    fn renew(cell: &Self::Cell, config: &BucketConfig) {
        cell.renew(config);
    }
    idle_at!();
}

decisions!(Buckets; bucket);

impl FromQuota for Buckets {
    type Quota = BucketQuota;
    fn config<C: Clock + ?Sized>(quota: BucketQuota, clock: &C) -> BucketConfig {
        BucketConfig::token(quota, clock)
    }
}

/// Shapers (leaky buckets that delay rather than refuse, for a per-key pace): a
/// [`BucketCell`] of 16 bytes per key, built from a [`ShaperQuota`]. A key is idle once its
/// schedule has drained.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::clock::ManualClock;
/// use ringlimit::keyed::{Keyed, Shapers};
/// use ringlimit::{Rate, ShaperQuota};
/// let clock = ManualClock::new();
/// let quota = ShaperQuota::new(Rate::per_second(10)?, Duration::from_millis(100))?;
/// let per_user: Keyed<u64, Shapers, _> = Keyed::with_clock(quota, clock.clone());
/// assert!(per_user.try_acquire(&1)); // goes now
/// assert!(!per_user.try_acquire(&1)); // would wait 100 ms, the most it may
/// assert!(per_user.try_acquire(&2));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug)]
pub enum Shapers {}

impl sealed::Sealed for Shapers {}

impl Family for Shapers {
    type Config = BucketConfig;
    type Cell = BucketCell<Compact>;
    fn cell(config: &BucketConfig) -> Self::Cell {
        BucketCell::new(config)
    }
    fn renew(cell: &Self::Cell, config: &BucketConfig) {
        cell.renew(config);
    }
    idle_at!();
}

decisions!(Shapers; bucket);

impl FromQuota for Shapers {
    type Quota = ShaperQuota;
    fn config<C: Clock + ?Sized>(quota: ShaperQuota, clock: &C) -> BucketConfig {
        BucketConfig::shaper(quota, clock)
    }
}

/// Concurrency limits per key: a [`ConcurrencyCell`] of 8 bytes per key counting the permits
/// in flight, built from a [`ConcurrencyQuota`]. Permits are taken with
/// [`Keyed::try_acquire_permit`](super::Keyed::try_acquire_permit) and given back when the
/// [`KeyedPermit`](super::KeyedPermit) drops; a key is idle while nothing is in flight.
///
/// ```
/// use ringlimit::keyed::{InFlight, Keyed};
/// use ringlimit::ConcurrencyQuota;
/// let per_user: Keyed<u64, InFlight> = Keyed::new(ConcurrencyQuota::new(2)?);
/// let first = per_user.try_acquire_permit(&7)?.expect("1 of 2");
/// let _second = per_user.try_acquire_permit(&7)?.expect("2 of 2");
/// assert!(per_user.try_acquire_permit(&7)?.is_none());
/// drop(first);
/// assert_eq!(per_user.in_flight(&7), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum InFlight {}

impl sealed::Sealed for InFlight {}

impl Family for InFlight {
    type Config = ConcurrencyConfig;
    type Cell = ConcurrencyCell<Compact>;
    fn cell(config: &ConcurrencyConfig) -> Self::Cell {
        ConcurrencyCell::with_layout(config)
    }
    /// Idle while nothing is in flight; time alone never makes a key idle.
    fn idle_at<C: Clock + ?Sized>(
        cell: &Self::Cell,
        config: &ConcurrencyConfig,
        _: &C,
        _: u64,
    ) -> Option<u64> {
        (cell.in_flight(config) > 0).then_some(u64::MAX)
    }
}

impl FromQuota for InFlight {
    type Quota = ConcurrencyQuota;
    fn config<C: Clock + ?Sized>(quota: ConcurrencyQuota, _: &C) -> ConcurrencyConfig {
        ConcurrencyConfig::new(quota)
    }
}
