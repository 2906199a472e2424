//! The algorithm families a [`Keyed`](super::Keyed) limiter holds one cell of per key.

use crate::cell::{FixedWindowCell, SlidingConfig, SlidingWindowCell, WindowConfig};
use crate::clock::Clock;
use crate::error::ExceedsLimit;
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
/// let per_ip: Keyed<u32, FixedWindows> = Keyed::new(WindowQuota::per_minute(100)?);
/// assert!(per_ip.try_acquire(&0x7f00_0001));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait Family: sealed::Sealed + Send + Sync + 'static {
    /// The configuration every key shares.
    type Config: Send + Sync;
    /// What one key holds.
    type Cell: Send + Sync;

    #[doc(hidden)]
    fn cell(config: &Self::Config) -> Self::Cell;
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
    /// `None` if `cell` is indistinguishable from a fresh one at `clock`'s reading, else the
    /// reading from which it will be (absent new admissions), both from one settled state.
    #[doc(hidden)]
    fn idle_at<C: Clock + ?Sized>(
        cell: &Self::Cell,
        config: &Self::Config,
        clock: &C,
    ) -> Option<u64>;
}

/// A family whose configuration is built from a quota (with the clock, for families whose
/// times count from it), so that building a keyed limiter cannot fail.
///
/// ```
/// use ringlimit::keyed::{FixedWindows, Keyed};
/// use ringlimit::WindowQuota;
/// // `Keyed::new` takes the family's quota: a `WindowQuota` for fixed windows.
/// let limits: Keyed<u64, FixedWindows> = Keyed::new(WindowQuota::per_second(10)?);
/// assert_eq!(limits.available(&1), 10);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait FromQuota: Family {
    /// The quota.
    type Quota;
    #[doc(hidden)]
    fn config<C: Clock + ?Sized>(quota: Self::Quota, clock: &C) -> Self::Config;
}

/// Binds the four decisions of a family to its cell's methods of the same names.
macro_rules! decisions {
    () => {
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
        fn idle_at<C: Clock + ?Sized>(
            cell: &Self::Cell,
            config: &Self::Config,
            clock: &C,
        ) -> Option<u64> {
            cell.idle_at(config, clock)
        }
    };
}

/// Fixed windows: a [`FixedWindowCell`] of 16 bytes per key, built from a [`WindowQuota`].
///
/// ```
/// use ringlimit::keyed::{FixedWindows, Keyed};
/// use ringlimit::WindowQuota;
/// let per_user: Keyed<String, FixedWindows> = Keyed::new(WindowQuota::per_minute(1)?);
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
    decisions!();
}

impl FromQuota for FixedWindows {
    type Quota = WindowQuota;
    fn config<C: Clock + ?Sized>(quota: WindowQuota, _: &C) -> WindowConfig {
        WindowConfig::new(quota)
    }
}

/// Sliding windows of `B` buckets: a [`SlidingWindowCell`] of `16 + 8·B` bytes per key
/// (96 for 10), built from a [`SlidingConfig`] (`Keyed::with_config`).
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
    decisions!();
}
