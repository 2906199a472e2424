//! The bucketed sliding window: the core limiter.

use std::fmt;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::config;
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::limiter::{Admission, Decision, Grant, RateLimiter, Ticket};
use crate::window::builder::{Sliding, WindowBuilder};
use crate::window::engine::Engine;
use crate::window::quota::WindowQuota;
use crate::window::word::{MAX_BUCKETS, MAX_LIMIT};

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
/// a permit is left, does one `fetch_add` on it: wait-free, no CAS loop. A refusal is the
/// loads alone. Rollover (once per bucket width), `try_acquire_n` with `n > 1`, and
/// `set_limit` use CAS on the same word. The proof: [`guide::window`](crate::guide::window).
///
/// **Memory.** [`Padded`] (default): 384 bytes (hot line, cold line, fields) plus 128 per bucket,
/// so nothing false-shares. [`Compact`](crate::Compact): 80 bytes plus 8 per bucket
/// ([`SlidingWindow::footprint`] gives the exact figure).
///
/// **Limits.** `limit <= 1_048_575` per window ([`WindowQuota::MAX_LIMIT`]), `1 <= B <= 4096`,
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
pub struct SlidingWindow<C = TscClock, L: Layout = Padded> {
    engine: Engine<L>,
    clock: C,
    /// Built from [`WindowQuota::unlimited`]: admit whatever the engine refuses. Read only
    /// after the engine refused (or by the cold paths), so it costs an admission nothing.
    unlimited: bool,
}

impl SlidingWindow {
    /// The largest limit per window (2^20 − 1): the head word's count field.
    ///
    /// ```
    /// use ringlimit::SlidingWindow;
    /// assert_eq!(SlidingWindow::MAX_LIMIT, 1_048_575);
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;
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
    pub const MAX_WINDOW_NANOS: u64 = config::MAX_WINDOW_NANOS;

    /// Starts building a sliding window of `quota`.
    pub fn builder(quota: WindowQuota) -> WindowBuilder<Sliding> {
        WindowBuilder::new(quota)
    }

    /// A sliding window of `quota`, on the default clock and layout.
    pub fn new(quota: WindowQuota) -> Self {
        Self::builder(quota).build()
    }
}

impl<C: Clock, L: Layout> WindowBuilder<Sliding, C, L> {
    /// Builds the limiter; it cannot fail (the quota is already validated).
    pub fn build(self) -> SlidingWindow<C, L> {
        SlidingWindow {
            engine: self.engine(),
            unlimited: self.quota.is_unlimited(),
            clock: self.clock,
        }
    }
}

impl<C: Clock, L: Layout> SlidingWindow<C, L> {
    /// Bytes this limiter occupies, its ring included (not counting the clock's shared state).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?).build();
    /// assert_eq!(limiter.footprint(), 384 + 10 * 128); // padded: 128 bytes per bucket
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        self.engine.footprint()
    }

    /// The width of one bucket.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?).build();
    /// assert_eq!(limiter.bucket_width(), Duration::from_millis(100));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn bucket_width(&self) -> Duration {
        Duration::from_nanos(self.engine.width())
    }

    /// The number of buckets B.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?).build();
    /// assert_eq!(limiter.buckets(), 10);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn buckets(&self) -> u64 {
        self.engine.buckets()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?).build();
    /// let _now = ringlimit::clock::Clock::now_nanos(limiter.clock());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock, L: Layout> RateLimiter for SlidingWindow<C, L> {
    #[inline]
    fn try_acquire(&self) -> bool {
        // An unlimited limiter's flag is read only once the engine refused.
        self.engine.try_acquire(self.clock.now_nanos()) || self.unlimited
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        if self.unlimited {
            return Ok(Decision::Admitted {
                remaining: u64::MAX,
            });
        }
        let now = self.clock.now_nanos();
        if n == 0 {
            return Ok(Decision::Admitted {
                remaining: self.engine.available(now),
            });
        }
        self.engine.try_acquire_n(now, n)
    }

    fn available(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.engine.available(self.clock.now_nanos())
    }

    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        if self.unlimited {
            // Nothing was counted, so there is nothing a refund could give back.
            let now = self.clock.now_nanos();
            return Ok(Admission::Granted(Grant::new(
                Ticket::immediate(n, now),
                u64::MAX,
            )));
        }
        self.engine.try_grant(self.clock.now_nanos(), n)
    }

    fn refund(&self, grant: Grant) -> u64 {
        self.engine.refund_grant(grant, self.clock.now_nanos())
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.unlimited {
            return Err(ConfigError::Unlimited);
        }
        self.engine.set_limit(config::limit(limit, MAX_LIMIT)?);
        Ok(())
    }

    fn limit(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.engine.limit()
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}

impl<C, L: Layout> fmt::Debug for SlidingWindow<C, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingWindow")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}
