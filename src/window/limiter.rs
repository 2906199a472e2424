//! [`Window`]: the one limiter type of the window family, whose kinds are
//! [`SlidingWindow`](crate::SlidingWindow) and [`FixedWindow`](crate::FixedWindow).

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::limiter::{Admission, Decision, Grant, RateLimiter};
use crate::validate;
use crate::window::any_engine::AnyEngine;
use crate::window::kind::Kind;

/// A lock-free window limiter of kind `K`: [`SlidingWindow`](crate::SlidingWindow) (`K =`
/// [`Sliding`](crate::builder::Sliding), the quota's buckets) or
/// [`FixedWindow`](crate::FixedWindow) (`K =` [`Fixed`](crate::builder::Fixed), one
/// bucket). The two are the same engine, differing only in how many buckets the quota's
/// window is split into, so they share this type and its one [`RateLimiter`] impl; use them
/// by their names.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{builder::Fixed, FixedWindow, RateLimiter, Window, WindowQuota};
/// let limiter: Window<Fixed> = FixedWindow::new(WindowQuota::per(2, Duration::from_secs(1))?);
/// assert!(limiter.try_acquire_n(2)?.is_admitted());
/// assert!(!limiter.try_acquire());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Window<K, C = TscClock, L: Layout = Padded> {
    pub(crate) engine: AnyEngine<L>,
    pub(crate) clock: C,
    /// Built from [`WindowQuota::unlimited`](crate::WindowQuota::unlimited): admit whatever
    /// the engine refuses. Read only after the engine refused (or by the cold paths), so it
    /// costs an admission nothing.
    pub(crate) unlimited: bool,
    kind: PhantomData<fn() -> K>,
}

impl<K, C, L: Layout> Window<K, C, L> {
    pub(crate) fn from_parts(engine: AnyEngine<L>, clock: C, unlimited: bool) -> Self {
        Self {
            engine,
            clock,
            unlimited,
            kind: PhantomData,
        }
    }
}

impl<K, C: Clock, L: Layout> Window<K, C, L> {
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

    /// The largest limit [`set_limit`](RateLimiter::set_limit) accepts, fixed when the window
    /// was built: [`WindowQuota::MAX_LIMIT`](crate::WindowQuota::MAX_LIMIT) (2^40 − 1) if
    /// its quota's limit is above 2^20 − 1 or its builder asked for
    /// [`wide`](crate::builder::WindowBuilder::wide) words, else 2^20 − 1 (the 64-bit
    /// words, whose fast path is one 64-bit CAS).
    ///
    /// ```
    /// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
    /// let narrow = SlidingWindow::new(WindowQuota::per_hour(1_000)?);
    /// assert_eq!(narrow.max_limit(), (1 << 20) - 1);
    /// assert!(narrow.set_limit(1 << 20).is_err());
    /// let wide = SlidingWindow::new(WindowQuota::per_hour(10_000_000)?);
    /// assert_eq!(wide.max_limit(), WindowQuota::MAX_LIMIT);
    /// let widened = SlidingWindow::builder(WindowQuota::per_hour(1_000)?).wide().build();
    /// widened.set_limit(1 << 32)?;
    /// assert_eq!(widened.limit(), 1 << 32);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_limit(&self) -> u64 {
        self.engine.max_limit()
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

impl<K, C: Clock, L: Layout> RateLimiter for Window<K, C, L> {
    // Always: the width's dispatch makes the body large enough for LLVM to stop inlining it
    // into the caller's loop (callgrind: +19 instructions per call with a call and its
    // register saves), which the 64-bit engine alone never did.
    #[inline(always)]
    fn try_acquire(&self) -> bool {
        // An unlimited limiter's flag is read only once the engine refused.
        self.engine.try_acquire(self.clock.now_nanos()) || self.unlimited
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        if self.unlimited {
            return Ok(Decision::UNLIMITED);
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
            return Ok(Admission::unlimited(n, self.clock.now_nanos()));
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
        self.engine
            .set_limit(validate::limit(limit, self.engine.max_limit())?);
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

impl<K: Kind, C, L: Layout> fmt::Debug for Window<K, C, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(K::NAME)
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}
