//! The leaky bucket: a GCRA meter, or a shaper that schedules callers at a constant rate.

use std::time::Duration;

use crate::bucket::builder::{BucketBuilder, Leaky};
use crate::bucket::gcra::Mode;
use crate::bucket::limiter::Bucket;
use crate::bucket::quota::{BucketQuota, ShaperQuota};
use crate::bucket::word::MAX_SPAN_NANOS;
use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, WaitError};
use crate::layout::{Layout, Padded};
use crate::rate::Rate;

/// A lock-free leaky bucket, as a **meter** or as a **shaper** (see
/// [`LeakyBucketSpec`](crate::spec::LeakyBucketSpec) for both rules).
///
/// - [`LeakyBucket::meter`]`(BucketQuota::new(leak, capacity)?)`: the GCRA, exactly a
///   [`TokenBucket`](crate::TokenBucket) with burst `capacity`: smooth, no queue; at most
///   `capacity + ⌊Δt/T⌋` permits in any `Δt`.
/// - [`LeakyBucket::shaper`]`(ShaperQuota::new(leak, max_wait)?)`: every call is scheduled at `s = max(next,
///   now)` and delays the next one by `n·T`, so calls leave at a constant rate, `n·T` apart
///   and never closer; a call that would wait more than `max_wait` is refused and changes
///   nothing. This is uber-go's `ratelimit.New(rate, ratelimit.WithoutSlack)` (each `Take`
///   sleeps until `last + perRequest`) with a bound on the wait: not uber-go's default
///   `Take`, which has slack (idle time saved up for a burst), nor Guava's `SmoothBursty`
///   (up to a second of idle permits stored). [`shape`](Self::shape) schedules and returns
///   the wait, [`acquire`](crate::Wait::acquire) schedules and sleeps (uber-go's `Take` without slack),
///   `try_acquire` admits only a call that would
///   not wait, and the blocking waits reserve a slot in the queue. Its
///   [`limit`](crate::RateLimiter::limit) is the most permits one call may take: `max(1,
///   ⌊max_wait / T⌋)`, so no call delays the next by more than `max(T, max_wait)`; a larger
///   call is [`ExceedsLimit`](crate::ExceedsLimit). `set_limit`
///   sets a cap on it, remembered across `set_rate` and `set_max_wait`, which recompute the
///   limit as the cap clipped to the bound. `available()` is that limit when a call would
///   go at once, else 0.
///
/// **Concurrency, reconfiguration, residuals, hot path.** As
/// [`TokenBucket`](crate::TokenBucket)'s: the same engine, one word `[time: 61 | gen: 3]`
/// and eight configuration slots; linearizable with respect to the spec, every call decided
/// wholly under one configuration, up to the same residuals: a caller stalled between its
/// load and its CAS across a multiple of eight reconfigurations that left the time field
/// where it was may decide that one call under a mix of two configurations (never panicking
/// or wrapping; `try_acquire`'s window is the same, plus a stall across 2^32
/// reconfigurations), and a meter's rate change at a reading that ran backwards may mint the
/// bounded amount stated there. A shaper's `set_rate`, `set_max_wait` and `set_limit` leave
/// its schedule as it is (so a shaper has no clock residual).
///
/// **Limits.** Capacity `>= 1`, `capacity × period` and `max_wait` at most
/// [`MAX_SPAN_NANOS`](crate::LeakyBucket::MAX_SPAN_NANOS) (2^60 ns), checked when the [`BucketQuota`] or
/// [`ShaperQuota`] is made. Schedules run 2^61 ns (73 years) from the origin (the clock's
/// reading at `build`).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, LeakyBucket, Rate, ShaperQuota};
/// let clock = ManualClock::new();
/// let shaper = LeakyBucket::shaper_builder(ShaperQuota::new(Rate::per_second(10)?, Duration::from_secs(1))?)
///     .clock(clock.clone())
///     .build();
/// assert_eq!(shaper.shape(1)?, Duration::ZERO);
/// assert_eq!(shaper.shape(2)?, Duration::from_millis(100));
/// assert_eq!(shaper.shape(1)?, Duration::from_millis(300));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **How it works:** [`guide::bucket`](crate::guide::bucket) (the GCRA engine, the shaper, reconfiguration, residuals).
pub type LeakyBucket<C = TscClock, L = Padded> = Bucket<Leaky, C, L>;

impl LeakyBucket {
    /// The longest `capacity × period` or maximum wait a leaky bucket represents: 2^60 ns.
    ///
    /// ```
    /// use ringlimit::{LeakyBucket, TokenBucket};
    /// assert_eq!(LeakyBucket::MAX_SPAN_NANOS, TokenBucket::MAX_SPAN_NANOS);
    /// ```
    pub const MAX_SPAN_NANOS: u64 = MAX_SPAN_NANOS;

    /// A meter of `quota`: capacity the quota's burst, leaking at its rate (the same
    /// argument order as [`TokenBucket::new`](crate::TokenBucket::new)), on the default clock
    /// and layout. It starts with all its capacity free unless the quota says
    /// [`start_empty`](BucketQuota::start_empty) (then it starts full of water).
    ///
    /// ```
    /// use ringlimit::{BucketQuota, LeakyBucket, RateLimiter};
    /// let meter = LeakyBucket::meter(BucketQuota::per_second(10)?.burst(5)?);
    /// assert_eq!(meter.limit(), 5);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn meter(quota: BucketQuota) -> Self {
        Self::meter_builder(quota).build()
    }

    /// A shaper of `quota`: callers leave at its rate, each queued at most its maximum wait;
    /// on the default clock and layout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{LeakyBucket, Rate, ShaperQuota};
    /// let shaper = LeakyBucket::shaper(ShaperQuota::new(Rate::per_second(100)?, Duration::from_millis(50))?);
    /// assert_eq!(shaper.max_wait(), Some(Duration::from_millis(50)));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn shaper(quota: ShaperQuota) -> Self {
        Self::shaper_builder(quota).build()
    }

    /// Starts building a meter.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, LeakyBucket, RateLimiter};
    /// let quota = BucketQuota::per_second(1)?.burst(3)?;
    /// let meter = LeakyBucket::meter_builder(quota).clock(ManualClock::new()).build();
    /// assert_eq!(meter.available(), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn meter_builder(quota: BucketQuota) -> BucketBuilder<Leaky> {
        BucketBuilder::new(quota)
    }

    /// Starts building a shaper.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, LeakyBucket, Rate, ShaperQuota};
    /// let shaper = LeakyBucket::shaper_builder(ShaperQuota::new(Rate::per_second(1)?, Duration::ZERO)?)
    ///     .clock(ManualClock::new())
    ///     .compact()
    ///     .build();
    /// assert!(shaper.is_shaper());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn shaper_builder(quota: ShaperQuota) -> BucketBuilder<Leaky> {
        BucketBuilder::new(quota)
    }
}

impl<C: Clock, L: Layout> BucketBuilder<Leaky, C, L> {
    /// Builds the bucket (a meter with its capacity free unless the quota starts it empty,
    /// an idle shaper), its origin the clock's reading now; it cannot fail.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, LeakyBucket, Rate, RateLimiter};
    /// let clock = ManualClock::new();
    /// let meter = LeakyBucket::meter_builder(BucketQuota::new(Rate::per_second(10)?, 2)?)
    ///     .clock(clock.clone())
    ///     .build();
    /// assert!(meter.try_acquire_n(2)?.is_admitted()); // the capacity is free at first
    /// assert!(!meter.try_acquire());
    /// clock.advance(Duration::from_millis(100)); // one permit leaks out
    /// assert!(meter.try_acquire());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> LeakyBucket<C, L> {
        let (engine, clock, unlimited) = self.engine();
        Bucket::from_parts(engine, clock, unlimited)
    }
}

impl<C: Clock, L: Layout> LeakyBucket<C, L> {
    /// Whether this bucket shapes (queues callers) rather than meters.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, LeakyBucket, Rate};
    /// assert!(!LeakyBucket::meter(BucketQuota::new(Rate::per_second(1)?, 1)?).is_shaper());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn is_shaper(&self) -> bool {
        self.core.engine.config().mode == Mode::Shaper
    }

    /// The leak rate in force.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, LeakyBucket, Rate};
    /// let leak = Rate::per_minute(30)?;
    /// assert_eq!(LeakyBucket::meter(BucketQuota::new(leak, 1)?).rate(), leak);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.core.engine.config().period)
    }

    /// A meter's capacity; a shaper's per-call limit. Both are
    /// [`limit`](crate::RateLimiter::limit).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{BucketQuota, LeakyBucket, Rate, ShaperQuota};
    /// assert_eq!(LeakyBucket::meter(BucketQuota::new(Rate::per_second(1)?, 4)?).capacity(), 4);
    /// let shaper = LeakyBucket::shaper(ShaperQuota::new(Rate::per_second(1)?, Duration::from_secs(5))?);
    /// assert_eq!(shaper.capacity(), 5); // ⌊max_wait / T⌋: one call delays the next 5 s at most
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        self.core.engine.config().limit
    }

    /// A shaper's maximum wait; `None` for a meter.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, LeakyBucket, Rate};
    /// assert_eq!(LeakyBucket::meter(BucketQuota::new(Rate::per_second(1)?, 1)?).max_wait(), None);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_wait(&self) -> Option<Duration> {
        let config = self.core.engine.config();
        (config.mode == Mode::Shaper).then(|| Duration::from_nanos(config.span))
    }

    /// Changes the leak rate now: a meter keeps the permits available now, a shaper keeps
    /// its schedule (a shaper's per-call limit becomes `max(1, ⌊max_wait / T⌋)` at the new
    /// period, or the cap set with `set_limit` if lower).
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, LeakyBucket, Rate};
    /// let meter = LeakyBucket::meter_builder(BucketQuota::new(Rate::per_second(1)?, 1)?).clock(ManualClock::new()).build();
    /// meter.set_rate(Rate::per_second(2)?)?;
    /// assert_eq!(meter.rate(), Rate::per_second(2)?);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn set_rate(&self, leak: Rate) -> Result<(), ConfigError> {
        if self.core.unlimited {
            return Err(ConfigError::Unlimited);
        }
        self.core
            .engine
            .reconfigure(&self.core.clock, |config, cap| {
                Ok((config.with_rate(leak, cap)?, cap))
            })
    }

    /// Changes a meter's capacity (keeping the permits available now) or caps a shaper's
    /// per-call limit (the limit in force is the cap clipped to `max(1, ⌊max_wait / T⌋)`);
    /// the same as [`set_limit`](crate::RateLimiter::set_limit).
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, LeakyBucket, Rate, RateLimiter};
    /// let meter = LeakyBucket::meter_builder(BucketQuota::new(Rate::per_second(1)?, 1)?).clock(ManualClock::new()).build();
    /// meter.set_capacity(2)?;
    /// assert_eq!(meter.limit(), 2);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn set_capacity(&self, capacity: u64) -> Result<(), ConfigError> {
        crate::RateLimiter::set_limit(self, capacity)
    }

    /// Changes a shaper's maximum wait (its schedule stands; its per-call limit becomes
    /// `max(1, ⌊max_wait / T⌋)`, or the cap set with `set_limit` if lower);
    /// [`ConfigError::NotAShaper`] on a meter.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, LeakyBucket, Rate, ShaperQuota};
    /// let shaper = LeakyBucket::shaper_builder(ShaperQuota::new(Rate::per_second(1)?, Duration::ZERO)?)
    ///     .clock(ManualClock::new())
    ///     .build();
    /// shaper.set_max_wait(Duration::from_secs(2))?;
    /// assert_eq!(shaper.max_wait(), Some(Duration::from_secs(2)));
    /// assert_eq!(shaper.capacity(), 2);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn set_max_wait(&self, max_wait: Duration) -> Result<(), ConfigError> {
        if self.core.unlimited {
            return Err(ConfigError::NotAShaper);
        }
        self.core
            .engine
            .reconfigure(&self.core.clock, |config, cap| {
                Ok((config.with_max_wait(max_wait, cap)?, cap))
            })
    }

    /// Schedules `n` permits and returns how long the caller must sleep before using them
    /// (already scheduled: it cannot be given back). A shaper refuses with
    /// [`WaitError::Timeout`] (nothing scheduled) when that would exceed its maximum wait; a
    /// meter schedules however far ahead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, LeakyBucket, Rate, ShaperQuota, WaitError};
    /// let shaper = LeakyBucket::shaper_builder(ShaperQuota::new(Rate::per_second(10)?, Duration::from_millis(100))?)
    ///     .clock(ManualClock::new())
    ///     .build();
    /// assert_eq!(shaper.shape(1)?, Duration::ZERO);
    /// assert_eq!(shaper.shape(1)?, Duration::from_millis(100));
    /// assert!(matches!(shaper.shape(1), Err(WaitError::Timeout { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shape(&self, n: u64) -> Result<Duration, WaitError> {
        if self.core.unlimited {
            return Ok(Duration::ZERO);
        }
        let now = self.core.clock.now_nanos();
        let ticket = self.core.engine.attempt(now, n, Duration::MAX)?;
        Ok(Duration::from_nanos(ticket.act_at().saturating_sub(now)))
    }
}
