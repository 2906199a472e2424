//! [`BucketBuilder`]: configures a [`TokenBucket`](crate::TokenBucket) or a
//! [`LeakyBucket`](crate::LeakyBucket).

use std::marker::PhantomData;

use crate::clock::{Clock, TscClock};
use crate::layout::{Compact, Layout, Padded};

use super::engine::Engine;
use super::gcra::Params;
use super::quota::{BucketQuota, ShaperQuota};

/// Marker: the builder makes a [`TokenBucket`](crate::TokenBucket).
///
/// ```
/// use ringlimit::builder::{BucketBuilder, Token};
/// use ringlimit::{BucketQuota, RateLimiter, TokenBucket};
/// let builder: BucketBuilder<Token> = TokenBucket::builder(BucketQuota::per_second(10)?);
/// let bucket: TokenBucket = builder.build();
/// assert_eq!(bucket.available(), 10);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Token;
/// Marker: the builder makes a [`LeakyBucket`](crate::LeakyBucket).
///
/// ```
/// use ringlimit::builder::{BucketBuilder, Leaky};
/// use ringlimit::{BucketQuota, LeakyBucket};
/// let builder: BucketBuilder<Leaky> = LeakyBucket::meter_builder(BucketQuota::per_second(10)?);
/// assert!(!builder.build().is_shaper());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Leaky;

/// What the limiter will be: a validated configuration, where its state starts, and
/// whether it is unlimited.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup {
    config: Params,
    empty: bool,
    pub(crate) unlimited: bool,
}

impl From<BucketQuota> for Setup {
    fn from(quota: BucketQuota) -> Self {
        Self {
            config: quota.config(),
            empty: quota.starts_empty(),
            unlimited: quota.is_unlimited(),
        }
    }
}

impl From<ShaperQuota> for Setup {
    fn from(quota: ShaperQuota) -> Self {
        Self {
            config: quota.config(),
            empty: false,
            unlimited: false,
        }
    }
}

/// Builds a bucket-family limiter from a quota, with a clock and a layout. Nothing here can
/// fail: the quota was validated when it was made.
///
/// Defaults: [`TscClock`] and the [`Padded`] layout. The limiter's origin is the clock's
/// reading when [`build`](BucketBuilder::build) runs.
///
/// ```
/// use ringlimit::{clock::ManualClock, BucketQuota, RateLimiter, TokenBucket};
/// let bucket = TokenBucket::builder(BucketQuota::per_second(10)?.burst(5)?)
///     .clock(ManualClock::new())
///     .compact()
///     .build();
/// assert_eq!(bucket.available(), 5);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct BucketBuilder<K, C = TscClock, L = Padded> {
    pub(crate) setup: Setup,
    pub(crate) clock: C,
    _kind: PhantomData<fn() -> (K, L)>,
}

impl<K> BucketBuilder<K> {
    pub(crate) fn new(setup: impl Into<Setup>) -> Self {
        Self {
            setup: setup.into(),
            clock: TscClock::new(),
            _kind: PhantomData,
        }
    }
}

impl<K, C: Clock, L: Layout> BucketBuilder<K, C, L> {
    /// Reads time from `clock` instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
    /// assert!(bucket.try_acquire());
    /// assert!(!bucket.try_acquire());
    /// clock.advance(Duration::from_millis(100));
    /// assert!(bucket.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> BucketBuilder<K, C2, L> {
        BucketBuilder {
            setup: self.setup,
            clock,
            _kind: PhantomData,
        }
    }

    /// Uses the [`Compact`] layout (no cache padding), for many instances.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, RateLimiter, TokenBucket};
    /// let quota = BucketQuota::per_second(10)?;
    /// let compact = TokenBucket::builder(quota).compact().build();
    /// assert!(compact.footprint() < TokenBucket::new(quota).footprint());
    /// assert!(compact.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn compact(self) -> BucketBuilder<K, C, Compact> {
        self.layout()
    }

    /// Uses the [`Padded`] layout (the default).
    ///
    /// ```
    /// use ringlimit::{BucketQuota, TokenBucket};
    /// let quota = BucketQuota::per_second(10)?;
    /// let padded = TokenBucket::builder(quota).compact().padded().build();
    /// assert_eq!(padded.footprint(), TokenBucket::new(quota).footprint());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn padded(self) -> BucketBuilder<K, C, Padded> {
        self.layout()
    }

    fn layout<L2: Layout>(self) -> BucketBuilder<K, C, L2> {
        BucketBuilder {
            setup: self.setup,
            clock: self.clock,
            _kind: PhantomData,
        }
    }

    /// Makes the engine, its origin read from the clock; an empty meter starts at `tat = τ`.
    pub(crate) fn engine(self) -> (Engine<L>, C, bool) {
        let Setup {
            config,
            empty,
            unlimited,
        } = self.setup;
        let time = if empty { config.span } else { 0 };
        let origin = self.clock.now_nanos();
        (Engine::new(config, origin, time), self.clock, unlimited)
    }
}
