//! Memory layouts: cache-padded for a few hot limiters, compact for millions of keyed ones.

use std::fmt;
use std::ops::Deref;

use crossbeam_utils::CachePadded;

mod sealed {
    pub trait Sealed {}
}

/// How a limiter lays out its atomic words in memory. Implemented by [`Padded`] and [`Compact`].
///
/// ```
/// use ringlimit::{Compact, Layout, Padded};
/// // A padded cell fills whole cache lines; a compact one is the value alone.
/// assert!(Padded::cell_size::<u64>() >= 64);
/// assert_eq!(Compact::cell_size::<u64>(), 8);
/// let cell = Compact::cell(7_u64);
/// assert_eq!(*cell, 7);
/// ```
pub trait Layout: sealed::Sealed + Send + Sync + 'static {
    /// A cell holding one group of atomics.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use ringlimit::{Layout, Padded};
    /// let cell: <Padded as Layout>::Cell<AtomicU64> = Padded::cell(AtomicU64::new(1));
    /// cell.fetch_add(1, Ordering::Relaxed); // the cell derefs to its value
    /// assert_eq!(cell.load(Ordering::Relaxed), 2);
    /// ```
    type Cell<T: Send + Sync>: Deref<Target = T> + Send + Sync;
    /// Wraps a value in this layout's cell.
    ///
    /// ```
    /// use ringlimit::{Compact, Layout, Padded};
    /// assert_eq!(*Padded::cell("hot"), "hot");
    /// assert_eq!(*Compact::cell(3_u8), 3);
    /// ```
    fn cell<T: Send + Sync>(value: T) -> Self::Cell<T>;
    /// Bytes one cell of `T` occupies.
    ///
    /// ```
    /// use ringlimit::{Compact, Layout, Padded};
    /// assert!(Padded::cell_size::<u64>() > Compact::cell_size::<u64>());
    /// ```
    fn cell_size<T: Send + Sync>() -> usize {
        std::mem::size_of::<Self::Cell<T>>()
    }
}

/// Each hot word on its own cache line (`crossbeam_utils::CachePadded`: 128 bytes on
/// x86_64, where the adjacent-line prefetcher pulls lines in pairs), so threads admitting on
/// one limiter never false-share with its ring or with a neighbouring limiter. The default.
///
/// ```
/// use ringlimit::{Padded, RateLimiter, SlidingWindow, WindowQuota};
/// // The default layout; `.padded()` asks for it explicitly.
/// let limiter: SlidingWindow<_, Padded> = SlidingWindow::builder(WindowQuota::per_second(10)?).padded().build();
/// assert!(limiter.try_acquire());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Padded;

/// Words packed next to each other, for when many instances exist (keyed limiters): a
/// fraction of the memory, at the price of false sharing between neighbours under contention.
///
/// ```
/// use ringlimit::{Compact, RateLimiter, SlidingWindow, WindowQuota};
/// let quota = WindowQuota::per_second(10)?;
/// let limiter: SlidingWindow<_, Compact> = SlidingWindow::builder(quota).compact().build();
/// assert!(limiter.try_acquire());
/// assert!(limiter.footprint() < SlidingWindow::new(quota).footprint());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Compact;

impl sealed::Sealed for Padded {}
impl sealed::Sealed for Compact {}

impl Layout for Padded {
    type Cell<T: Send + Sync> = CachePadded<T>;
    fn cell<T: Send + Sync>(value: T) -> CachePadded<T> {
        CachePadded::new(value)
    }
}

impl Layout for Compact {
    type Cell<T: Send + Sync> = Plain<T>;
    fn cell<T: Send + Sync>(value: T) -> Plain<T> {
        Plain(value)
    }
}

/// The unpadded cell of [`Compact`]: the value, nothing around it.
///
/// ```
/// use ringlimit::{builder::Plain, Compact, Layout};
/// let cell: Plain<u32> = Compact::cell(5);
/// assert_eq!(*cell, 5);
/// assert_eq!(std::mem::size_of::<Plain<u32>>(), 4);
/// ```
#[derive(Default)]
pub struct Plain<T>(T);

impl<T> Deref for Plain<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Plain<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
