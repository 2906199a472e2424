//! [`WindowBuilder`]: configures a [`SlidingWindow`](crate::SlidingWindow) or a
//! [`FixedWindow`](crate::FixedWindow).

use std::marker::PhantomData;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::layout::{Compact, Layout, Padded};

/// Marker: the builder makes a [`SlidingWindow`](crate::SlidingWindow).
#[derive(Debug, Clone, Copy)]
pub struct Sliding;
/// Marker: the builder makes a [`FixedWindow`](crate::FixedWindow).
#[derive(Debug, Clone, Copy)]
pub struct Fixed;

/// Builds a window limiter: `limit` permits per `window`, with a clock and a layout.
///
/// Defaults: [`TscClock`], [`Padded`] layout, and (sliding windows) 10 buckets.
#[derive(Debug, Clone)]
pub struct WindowBuilder<K, C = TscClock, L = Padded> {
    pub(crate) limit: u64,
    pub(crate) window: Duration,
    pub(crate) buckets: u64,
    pub(crate) clock: C,
    _kind: PhantomData<(K, L)>,
}

impl<K> WindowBuilder<K> {
    pub(crate) fn new(limit: u64, window: Duration) -> Self {
        Self {
            limit,
            window,
            buckets: 10,
            clock: TscClock::new(),
            _kind: PhantomData,
        }
    }
}

impl<K, C: Clock, L: Layout> WindowBuilder<K, C, L> {
    /// Reads time from `clock` instead.
    pub fn clock<C2: Clock>(self, clock: C2) -> WindowBuilder<K, C2, L> {
        WindowBuilder {
            limit: self.limit,
            window: self.window,
            buckets: self.buckets,
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
            limit: self.limit,
            window: self.window,
            buckets: self.buckets,
            clock: self.clock,
            _kind: PhantomData,
        }
    }
}

impl<C: Clock, L: Layout> WindowBuilder<Sliding, C, L> {
    /// The number of buckets B (1 ..= 4096); the window is counted in steps of `window / B`.
    pub fn buckets(mut self, buckets: u64) -> Self {
        self.buckets = buckets;
        self
    }
}
