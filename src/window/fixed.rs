//! The fixed window: one counter per aligned window.

use crate::clock::TscClock;
#[cfg(doc)]
use crate::error::ExceedsLimit;
use crate::layout::Padded;
use crate::validate;
use crate::window::builder::WindowBuilder;
use crate::window::kind::Fixed;
use crate::window::limiter::Window;
use crate::window::quota::WindowQuota;
use crate::window::word::WIDE_MAX_LIMIT;

/// A lock-free fixed window: at most `limit` permits per aligned window `[kW, (k+1)W)`.
///
/// **Guarantee.** Linearizable with respect to
/// [`FixedWindowSpec`](crate::spec::FixedWindowSpec). Up to 2N can pass inside one
/// interval of length W that straddles a boundary; use [`SlidingWindow`](crate::SlidingWindow)
/// when that matters. Every request for `n >= 1` permits moves the limiter to its window,
/// whatever its outcome (an [`ExceedsLimit`] too), as in the spec; `n = 0` and
/// `available` move nothing ([guide](crate::guide::window#which-calls-move-time)).
///
/// **Hot path.** The sliding window's engine with one bucket: a load of the claim and head
/// line and one CAS (after a lost CAS, a backoff and again); a refusal is the load alone. Rollover is one claim CAS and one
/// install CAS, with no ring. Memory: 384 bytes padded, 80 compact.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
/// let clock = ManualClock::new();
/// let limiter = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(clock.clone()).build();
/// assert!(limiter.try_acquire());
/// assert!(!limiter.try_acquire());
/// clock.advance(Duration::from_secs(1));
/// assert!(limiter.try_acquire());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
///
/// **How it works:** [`guide::window`](crate::guide::window) (engine, rollover, ABA bound).
pub type FixedWindow<C = TscClock, L = Padded> = Window<Fixed, C, L>;

impl Window<Fixed> {
    /// The largest limit per window (2^40 − 1), the same as the sliding window's: the wide
    /// head word's cap field (limits up to 2^20 − 1 count in the 64-bit words).
    ///
    /// ```
    /// use ringlimit::{FixedWindow, SlidingWindow};
    /// assert_eq!(FixedWindow::MAX_LIMIT, SlidingWindow::MAX_LIMIT);
    /// ```
    pub const MAX_LIMIT: u64 = WIDE_MAX_LIMIT;
    /// The longest window: 2^60 ns, about 36 years.
    ///
    /// ```
    /// use ringlimit::FixedWindow;
    /// assert!(FixedWindow::MAX_WINDOW_NANOS >= 365 * 24 * 3600 * 1_000_000_000);
    /// ```
    pub const MAX_WINDOW_NANOS: u64 = validate::MAX_WINDOW_NANOS;

    /// Starts building a fixed window of `quota`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = FixedWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?)
    ///     .clock(clock.clone())
    ///     .compact()
    ///     .build();
    /// assert!(limiter.try_acquire_n(2)?.is_admitted());
    /// assert!(!limiter.try_acquire());
    /// clock.advance(Duration::from_secs(1)); // the next aligned window
    /// assert_eq!(limiter.available(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(quota: WindowQuota) -> WindowBuilder<Fixed> {
        WindowBuilder::new(quota)
    }

    /// A fixed window of `quota`, on the default clock and layout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{FixedWindow, RateLimiter, WindowQuota};
    /// let limiter = FixedWindow::new(WindowQuota::per(10, Duration::from_secs(1))?);
    /// assert!(limiter.try_acquire_n(10)?.is_admitted());
    /// assert!(!limiter.try_acquire());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Self {
        Self::builder(quota).build()
    }
}
