//! [`WindowBuilder`]: configures a [`SlidingWindow`](crate::SlidingWindow) or a
//! [`FixedWindow`](crate::FixedWindow).

use std::marker::PhantomData;

use crate::clock::{Clock, TscClock};
use crate::layout::{Compact, Layout, Padded};
use crate::window::engine::Engine;
use crate::window::quota::WindowQuota;

/// Marker: the builder makes a [`SlidingWindow`](crate::SlidingWindow).
#[derive(Debug, Clone, Copy)]
pub struct Sliding;
/// Marker: the builder makes a [`FixedWindow`](crate::FixedWindow).
#[derive(Debug, Clone, Copy)]
pub struct Fixed;

/// Builds a window limiter from a [`WindowQuota`], with a clock and a layout. Nothing here
/// can fail: the quota was validated when it was made.
///
/// Defaults: [`TscClock`] and the [`Padded`] layout.
///
/// ```
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
/// let limiter = SlidingWindow::builder(WindowQuota::per_second(10)?.buckets(5)?)
///     .clock(ManualClock::new())
///     .compact()
///     .build();
/// assert_eq!(limiter.buckets(), 5);
/// assert_eq!(limiter.available(), 10);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WindowBuilder<K, C = TscClock, L = Padded> {
    pub(crate) quota: WindowQuota,
    pub(crate) clock: C,
    _kind: PhantomData<(K, L)>,
}

impl<K> WindowBuilder<K> {
    pub(crate) fn new(quota: WindowQuota) -> Self {
        Self {
            quota,
            clock: TscClock::new(),
            _kind: PhantomData,
        }
    }
}

impl<K, C: Clock, L: Layout> WindowBuilder<K, C, L> {
    /// Reads time from `clock` instead.
    pub fn clock<C2: Clock>(self, clock: C2) -> WindowBuilder<K, C2, L> {
        WindowBuilder {
            quota: self.quota,
            clock,
            _kind: PhantomData,
        }
    }

    /// Uses the [`Compact`] layout (no cache padding), for many instances.
    pub fn compact(self) -> WindowBuilder<K, C, Compact> {
        self.layout()
    }

    /// Uses the [`Padded`] layout (the default).
    pub fn padded(self) -> WindowBuilder<K, C, Padded> {
        self.layout()
    }

    fn layout<L2: Layout>(self) -> WindowBuilder<K, C, L2> {
        WindowBuilder {
            quota: self.quota,
            clock: self.clock,
            _kind: PhantomData,
        }
    }
}

impl<C: Clock, L: Layout> WindowBuilder<Sliding, C, L> {
    /// The engine of a sliding window: the quota's buckets.
    pub(crate) fn engine(&self) -> Engine<L> {
        let quota = &self.quota;
        let buckets = quota.bucket_count();
        Engine::new(
            quota.engine_limit(),
            quota.window_nanos() / buckets,
            buckets,
        )
    }
}

impl<C: Clock, L: Layout> WindowBuilder<Fixed, C, L> {
    /// The engine of a fixed window: one bucket as wide as the window.
    pub(crate) fn engine(&self) -> Engine<L> {
        Engine::new(self.quota.engine_limit(), self.quota.window_nanos(), 1)
    }
}
