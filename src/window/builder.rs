//! [`WindowBuilder`]: configures a [`SlidingWindow`](crate::SlidingWindow) or a
//! [`FixedWindow`](crate::FixedWindow).

use std::marker::PhantomData;

use crate::clock::{Clock, TscClock};
use crate::layout::{Compact, Layout, Padded};
use crate::window::any_engine::AnyEngine;
use crate::window::kind::Kind;
use crate::window::limiter::Window;
use crate::window::quota::WindowQuota;
use crate::window::word::{MAX_LIMIT, WIDE_MAX_LIMIT};

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
    /// Count in 128-bit words whatever the quota's limit.
    wide: bool,
    _kind: PhantomData<(K, L)>,
}

impl<K> WindowBuilder<K> {
    pub(crate) fn new(quota: WindowQuota) -> Self {
        Self {
            quota,
            clock: TscClock::new(),
            wide: false,
            _kind: PhantomData,
        }
    }
}

impl<K, C: Clock, L: Layout> WindowBuilder<K, C, L> {
    /// Reads time from `clock` instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = SlidingWindow::builder(WindowQuota::per_second(1)?).clock(clock.clone()).build();
    /// assert!(limiter.try_acquire());
    /// assert!(!limiter.try_acquire());
    /// clock.advance(Duration::from_secs(1));
    /// assert!(limiter.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> WindowBuilder<K, C2, L> {
        WindowBuilder {
            quota: self.quota,
            clock,
            wide: self.wide,
            _kind: PhantomData,
        }
    }

    /// Uses the [`Compact`] layout (no cache padding), for many instances.
    ///
    /// ```
    /// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
    /// let quota = WindowQuota::per_second(10)?;
    /// let compact = SlidingWindow::builder(quota).compact().build();
    /// let padded = SlidingWindow::new(quota);
    /// assert!(compact.footprint() < padded.footprint());
    /// assert!(compact.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn compact(self) -> WindowBuilder<K, C, Compact> {
        self.layout()
    }

    /// Uses the [`Padded`] layout (the default).
    ///
    /// ```
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let quota = WindowQuota::per_second(10)?;
    /// let padded = SlidingWindow::builder(quota).compact().padded().build();
    /// assert_eq!(padded.footprint(), SlidingWindow::new(quota).footprint());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn padded(self) -> WindowBuilder<K, C, Padded> {
        self.layout()
    }

    fn layout<L2: Layout>(self) -> WindowBuilder<K, C, L2> {
        WindowBuilder {
            quota: self.quota,
            clock: self.clock,
            wide: self.wide,
            _kind: PhantomData,
        }
    }
}

impl<K: Kind, C: Clock, L: Layout> WindowBuilder<K, C, L> {
    /// Counts in 128-bit words whatever the quota's limit, so that
    /// [`set_limit`](crate::RateLimiter::set_limit) may later raise the limit up to
    /// [`WindowQuota::MAX_LIMIT`] (2^40 − 1). A quota above 2^20 − 1 gets them without
    /// asking; below, the default 64-bit words make the fast path one 64-bit CAS (the wide
    /// words' is a `cmpxchg16b`, about twice the instructions) and cap `set_limit` at 2^20 − 1
    /// ([`Window::max_limit`](crate::Window::max_limit)).
    ///
    /// ```
    /// use ringlimit::{RateLimiter, FixedWindow, WindowQuota};
    /// let limiter = FixedWindow::builder(WindowQuota::per_minute(100)?).wide().build();
    /// assert_eq!(limiter.max_limit(), WindowQuota::MAX_LIMIT);
    /// limiter.set_limit(5_000_000_000)?;
    /// assert!(limiter.try_acquire_n(4_000_000_000)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wide(mut self) -> Self {
        self.wide = true;
        self
    }

    /// The engine this configuration describes: `K::buckets` buckets over the window, in the
    /// words its limit (or [`wide`](Self::wide)) needs.
    pub(crate) fn engine(&self) -> AnyEngine<L> {
        let quota = &self.quota;
        let buckets = K::buckets(quota);
        let limit = quota.engine_limit();
        let ceiling = if self.wide || limit > MAX_LIMIT {
            WIDE_MAX_LIMIT
        } else {
            MAX_LIMIT
        };
        AnyEngine::new(limit, ceiling, quota.window_nanos() / buckets, buckets)
    }

    /// Builds the limiter; it cannot fail (the quota is already validated).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let limiter = FixedWindow::builder(WindowQuota::per(3, Duration::from_secs(1))?)
    ///     .clock(ManualClock::new())
    ///     .build();
    /// assert!(limiter.try_acquire_n(3)?.is_admitted());
    /// assert!(!limiter.try_acquire());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Window<K, C, L> {
        Window::from_parts(self.engine(), self.clock, self.quota.is_unlimited())
    }
}
