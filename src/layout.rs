//! Memory layouts: cache-padded for a few hot limiters, compact for millions of keyed ones.

use std::fmt;
use std::ops::Deref;

use crossbeam_utils::CachePadded;

pub(crate) mod sealed {
    use std::ops::Deref;

    /// What a layout does, for the crate's cells only.
    pub trait Sealed {
        /// A cell holding one group of atomics.
        type Cell<T: Send + Sync>: Deref<Target = T> + Send + Sync;
        /// Wraps a value in this layout's cell.
        fn cell<T: Send + Sync>(value: T) -> Self::Cell<T>;
        /// Bytes one cell of `T` occupies.
        fn cell_size<T: Send + Sync>() -> usize {
            std::mem::size_of::<Self::Cell<T>>()
        }
    }
}

/// How a limiter lays out its atomic words in memory. Implemented by [`Padded`] and
/// [`Compact`] only (sealed).
///
/// ```
/// use std::mem::size_of;
/// use ringlimit::cell::{Compact, FixedWindowCell, Layout, Padded};
/// fn bytes<L: Layout>() -> usize {
///     size_of::<FixedWindowCell<L>>()
/// }
/// // A padded cell fills whole cache lines; a compact one is its words alone.
/// assert_eq!(bytes::<Compact>(), 16);
/// assert!(bytes::<Padded>() >= 64);
/// ```
pub trait Layout: sealed::Sealed + Send + Sync + 'static {}

/// Each hot word on its own cache line (`crossbeam_utils::CachePadded`: 128 bytes on
/// x86_64, where the adjacent-line prefetcher pulls lines in pairs), so threads admitting on
/// one limiter never false-share with its ring or with a neighbouring limiter. The default.
///
/// ```
/// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
/// use ringlimit::cell::Padded;
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
/// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
/// use ringlimit::cell::Compact;
/// let quota = WindowQuota::per_second(10)?;
/// let limiter: SlidingWindow<_, Compact> = SlidingWindow::builder(quota).compact().build();
/// assert!(limiter.try_acquire());
/// assert!(limiter.footprint() < SlidingWindow::new(quota).footprint());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Compact;

impl Layout for Padded {}

impl sealed::Sealed for Padded {
    type Cell<T: Send + Sync> = CachePadded<T>;
    fn cell<T: Send + Sync>(value: T) -> CachePadded<T> {
        CachePadded::new(value)
    }
}

impl Layout for Compact {}

impl sealed::Sealed for Compact {
    type Cell<T: Send + Sync> = Plain<T>;
    fn cell<T: Send + Sync>(value: T) -> Plain<T> {
        Plain(value)
    }
}

/// The unpadded cell of [`Compact`]: the value, nothing around it (internal).
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
