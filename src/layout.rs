//! Memory layouts: cache-padded for a few hot limiters, compact for millions of keyed ones.

use std::fmt;
use std::ops::Deref;

use crossbeam_utils::CachePadded;

mod sealed {
    pub trait Sealed {}
}

/// How a limiter lays out its atomic words in memory. Implemented by [`Padded`] and [`Compact`].
pub trait Layout: sealed::Sealed + Send + Sync + 'static {
    /// A cell holding one group of atomics.
    type Cell<T: Send + Sync>: Deref<Target = T> + Send + Sync;
    /// Wraps a value in this layout's cell.
    fn cell<T: Send + Sync>(value: T) -> Self::Cell<T>;
    /// Bytes one cell of `T` occupies.
    fn cell_size<T: Send + Sync>() -> usize {
        std::mem::size_of::<Self::Cell<T>>()
    }
}

/// Each hot word on its own cache line (`crossbeam_utils::CachePadded`: 128 bytes on
/// x86_64, where the adjacent-line prefetcher pulls lines in pairs), so threads admitting on
/// one limiter never false-share with its ring or with a neighbouring limiter. The default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Padded;

/// Words packed next to each other, for when many instances exist (keyed limiters): a
/// fraction of the memory, at the price of false sharing between neighbours under contention.
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
