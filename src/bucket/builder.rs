//! [`BucketBuilder`]: configures a [`TokenBucket`](crate::TokenBucket) or a
//! [`LeakyBucket`](crate::LeakyBucket).

use std::marker::PhantomData;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::ConfigError;
use crate::layout::{Compact, Layout, Padded};
use crate::rate::Rate;

use super::engine::Engine;
use super::spec::Config;

/// Marker: the builder makes a [`TokenBucket`](crate::TokenBucket).
#[derive(Debug, Clone, Copy)]
pub struct Token;
/// Marker: the builder makes a [`LeakyBucket`](crate::LeakyBucket).
#[derive(Debug, Clone, Copy)]
pub struct Leaky;

/// What the limiter will be.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Setup {
    Meter { rate: Rate, burst: u64 },
    Shaper { rate: Rate, max_wait: Duration },
}

/// Builds a bucket-family limiter with a clock and a layout.
///
/// Defaults: [`TscClock`] and the [`Padded`] layout. The limiter's origin is the clock's
/// reading when [`build`](BucketBuilder::build) runs.
///
/// ```
/// use ringlimit::{clock::ManualClock, Rate, RateLimiter, TokenBucket};
/// let bucket = TokenBucket::builder(Rate::per_second(10)?, 5)
///     .clock(ManualClock::new())
///     .compact()
///     .build()?;
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
    pub(crate) fn new(setup: Setup) -> Self {
        Self {
            setup,
            clock: TscClock::new(),
            _kind: PhantomData,
        }
    }
}

impl<K, C: Clock, L: Layout> BucketBuilder<K, C, L> {
    /// Reads time from `clock` instead.
    pub fn clock<C2: Clock>(self, clock: C2) -> BucketBuilder<K, C2, L> {
        BucketBuilder {
            setup: self.setup,
            clock,
            _kind: PhantomData,
        }
    }

    /// Uses the [`Compact`] layout (no cache padding), for many instances.
    pub fn compact(self) -> BucketBuilder<K, C, Compact> {
        self.layout()
    }

    /// Uses the [`Padded`] layout (the default).
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

    /// Validates the configuration and makes the engine, its origin read from the clock.
    pub(crate) fn engine(self) -> Result<(Engine<L>, C), ConfigError> {
        let config = match self.setup {
            Setup::Meter { rate, burst } => Config::meter(rate, burst)?,
            Setup::Shaper { rate, max_wait } => Config::shaper(rate, max_wait, u64::MAX)?,
        };
        let origin = self.clock.now_nanos();
        Ok((Engine::new(config, origin), self.clock))
    }
}
