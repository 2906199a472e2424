//! The bucketed sliding window: the core limiter.

use crate::clock::TscClock;
use crate::layout::Padded;
use crate::validate;
use crate::window::builder::WindowBuilder;
use crate::window::kind::Sliding;
use crate::window::limiter::Window;
use crate::window::quota::WindowQuota;
use crate::window::word::{MAX_BUCKETS, WIDE_MAX_LIMIT};
#[cfg(doc)]
use crate::{error::ExceedsLimit, RateLimiter};

/// A lock-free bucketed sliding window: at most `limit` permits in any B consecutive
/// buckets of width `window / B`.
///
/// **Guarantee.** Linearizable with respect to
/// [`SlidingWindowSpec`](crate::spec::SlidingWindowSpec): never more than `limit` in any
/// B consecutive buckets (so in any interval of length `window - window/B`), and no call is
/// refused unless the spec would refuse it, with one bounded exception for refunds: a
/// [`refund`](RateLimiter::refund) of `k` permits whose CAS lands between a rollover's claim
/// and its install can be missed by a helper that publishes the old bucket's count into the
/// ring, so the next B−1 buckets count up to `k` permits too many. That is a spurious
/// refusal of at most `k` permits in each of those B−1 buckets, per such refund, and never
/// an over-admission ([guide](crate::guide::refunds)); without refunds the window is exact.
/// Up to 2N can still pass inside one `window` in
/// the worst case (a full bucket at each end); more buckets shrink that slack. Every request
/// for `n >= 1` permits moves the window to its reading, whatever its outcome (an
/// [`ExceedsLimit`] too), as in the spec; `n = 0` and `available` move nothing
/// ([guide](crate::guide::window#which-calls-move-time)).
///
/// **Hot path.** `try_acquire` reads the clock, loads one cache line (claim and head) and, if
/// a permit is left, CASes one more onto the head it read; a lost CAS backs off (so that
/// under contention the winner makes a run of calls, as a mutex's holder does) and decides
/// again. A refusal is the loads alone. Rollover (once per bucket width), `try_acquire_n` with `n > 1`, and
/// `set_limit` use CAS on the same word. The proof: [`guide::window`](crate::guide::window).
///
/// **Wide limits.** Limits up to 2^20 − 1 count in 64-bit words (the above); a quota above
/// that (up to [`SlidingWindow::MAX_LIMIT`], 2^40 − 1: "10 000 000 per hour" is one) builds
/// the same engine in 128-bit words, whose fast path adds with a `cmpxchg16b` from the head
/// it loaded (a CAS loop under contention; lock-free where the target has a 128-bit CAS, as
/// x86_64 and aarch64 do, else `portable-atomic`'s lock table), and whose ring slots hold
/// whole epochs. [`WindowBuilder::wide`](crate::builder::WindowBuilder::wide) asks for them at
/// any limit, so that `set_limit` may later go past 2^20 − 1.
///
/// **Memory.** [`Padded`] (default): 384 bytes (hot line, cold line, fields) plus 128 per bucket,
/// so nothing false-shares. [`Compact`](crate::cell::Compact): 80 bytes plus 8 per bucket. A wide
/// window holds those bytes and a boxed engine of 128-bit words (Padded: 384 plus 128 per
/// bucket again; Compact: 112 plus 16 per bucket). [`SlidingWindow::footprint`] gives the
/// exact figure.
///
/// **Limits.** `limit <=` [`SlidingWindow::MAX_LIMIT`] per window, `1 <= B <= 4096`,
/// `window / B >= 1 ns`; checked when the [`WindowQuota`] is made, so building cannot fail.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
/// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?).build();
/// assert!(limiter.try_acquire());
/// assert_eq!(limiter.available(), 99);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
///
/// **How it works:** [`guide::window`](crate::guide::window) (engine, rollover, ABA bound).
pub type SlidingWindow<C = TscClock, L = Padded> = Window<Sliding, C, L>;

impl Window<Sliding> {
    /// The largest limit per window (2^40 − 1, about 1.1 × 10^12): the wide head word's cap
    /// field. Limits up to 2^20 − 1 count in 64-bit words (see
    /// [`max_limit`](crate::Window::max_limit)).
    ///
    /// ```
    /// use ringlimit::SlidingWindow;
    /// assert_eq!(SlidingWindow::MAX_LIMIT, 1_099_511_627_775);
    /// ```
    pub const MAX_LIMIT: u64 = WIDE_MAX_LIMIT;
    /// The most buckets (4096).
    ///
    /// ```
    /// use ringlimit::SlidingWindow;
    /// assert_eq!(SlidingWindow::MAX_BUCKETS, 4096);
    /// ```
    pub const MAX_BUCKETS: u64 = MAX_BUCKETS;
    /// The longest window: 2^60 ns, about 36 years.
    ///
    /// ```
    /// use ringlimit::SlidingWindow;
    /// assert!(SlidingWindow::MAX_WINDOW_NANOS >= 365 * 24 * 3600 * 1_000_000_000);
    /// ```
    pub const MAX_WINDOW_NANOS: u64 = validate::MAX_WINDOW_NANOS;

    /// Starts building a sliding window of `quota`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = SlidingWindow::builder(WindowQuota::per(4, Duration::from_secs(1))?.buckets(4)?)
    ///     .clock(clock.clone())
    ///     .build();
    /// assert!(limiter.try_acquire_n(4)?.is_admitted());
    /// // A quarter-second bucket later the window still holds all four permits...
    /// clock.advance(Duration::from_millis(250));
    /// assert!(!limiter.try_acquire());
    /// // ...until the bucket they were taken in slides out.
    /// clock.advance(Duration::from_millis(750));
    /// assert_eq!(limiter.available(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(quota: WindowQuota) -> WindowBuilder<Sliding> {
        WindowBuilder::new(quota)
    }

    /// A sliding window of `quota`, on the default clock and layout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::new(WindowQuota::per(100, Duration::from_secs(1))?);
    /// assert!(limiter.try_acquire());
    /// assert_eq!((limiter.available(), limiter.limit()), (99, 100));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Self {
        Self::builder(quota).build()
    }
}
