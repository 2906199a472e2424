//! The fixed window: one counter per aligned window.

use std::fmt;

use crate::clock::{Clock, TscClock};
use crate::config;
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::limiter::{Admission, Decision, Grant, RateLimiter, Ticket};
use crate::window::builder::{Fixed, WindowBuilder};
use crate::window::engine::Engine;
use crate::window::quota::WindowQuota;
use crate::window::word::MAX_LIMIT;

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
/// line and one `fetch_add`; a refusal is the load alone. Rollover is one claim CAS and one
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
pub struct FixedWindow<C = TscClock, L: Layout = Padded> {
    engine: Engine<L>,
    clock: C,
    /// Built from [`WindowQuota::unlimited`]: admit whatever the engine refuses. Read only
    /// after the engine refused (or by the cold paths), so it costs an admission nothing.
    unlimited: bool,
}

impl FixedWindow {
    /// The largest limit per window (2^20 − 1): the head word's count field.
    ///
    /// ```
    /// use ringlimit::{FixedWindow, SlidingWindow};
    /// assert_eq!(FixedWindow::MAX_LIMIT, SlidingWindow::MAX_LIMIT);
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;
    /// The longest window: 2^60 ns, about 36 years.
    ///
    /// ```
    /// use ringlimit::FixedWindow;
    /// assert!(FixedWindow::MAX_WINDOW_NANOS >= 365 * 24 * 3600 * 1_000_000_000);
    /// ```
    pub const MAX_WINDOW_NANOS: u64 = config::MAX_WINDOW_NANOS;

    /// Starts building a fixed window of `quota`.
    pub fn builder(quota: WindowQuota) -> WindowBuilder<Fixed> {
        WindowBuilder::new(quota)
    }

    /// A fixed window of `quota`, on the default clock and layout.
    pub fn new(quota: WindowQuota) -> Self {
        Self::builder(quota).build()
    }
}

impl<C: Clock, L: Layout> WindowBuilder<Fixed, C, L> {
    /// Builds the limiter; it cannot fail (the quota is already validated).
    pub fn build(self) -> FixedWindow<C, L> {
        FixedWindow {
            engine: self.engine(),
            unlimited: self.quota.is_unlimited(),
            clock: self.clock,
        }
    }
}

impl<C: Clock, L: Layout> FixedWindow<C, L> {
    /// Bytes this limiter occupies.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(clock.clone()).build();
    /// assert!(limiter.footprint() >= 384); // padded: hot line, cold line, fields
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        self.engine.footprint()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(clock.clone()).build();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(ringlimit::clock::Clock::now_nanos(limiter.clock()), 1_000_000_000);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock, L: Layout> RateLimiter for FixedWindow<C, L> {
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

impl<C, L: Layout> fmt::Debug for FixedWindow<C, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedWindow")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}
