//! [`Bucket`]: the one limiter type of the bucket family, whose kinds are
//! [`TokenBucket`](crate::TokenBucket) (GCRA) and [`LeakyBucket`](crate::LeakyBucket) (a
//! GCRA meter or a shaper), all on one scheduling word. The state, decisions,
//! reconfiguration order, time and overflow and the ABA residual:
//! [the guide](crate::guide::bucket).

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::layout::{Layout, Padded};
use crate::limiter::{
    Admission, Attempt, Decision, Grant, Owner, RateLimiter, Reservation, Reserve, Schedule, Ticket,
};

use super::builder::{Leaky, Token};
use super::engine::Engine;
use super::gcra::{Mode, Params};

mod sealed {
    /// The kinds of [`Bucket`](super::Bucket), out of the public API.
    pub trait Kind: Send + Sync + 'static {
        /// The kind's type name, for `Debug`.
        const NAME: &'static str;
    }
}

impl sealed::Kind for Token {
    const NAME: &'static str = "TokenBucket";
}

impl sealed::Kind for Leaky {
    const NAME: &'static str = "LeakyBucket";
}

/// A lock-free bucket limiter of kind `K`: [`TokenBucket`](crate::TokenBucket) (`K =`
/// [`Token`](crate::builder::Token)) or [`LeakyBucket`](crate::LeakyBucket) (`K =`
/// [`Leaky`](crate::builder::Leaky)). The two are the same engine, differing only in the
/// rule their quota sets (a meter or a shaper) and in their kind's methods, so they share
/// this type and its one [`RateLimiter`] impl; use them by their names.
///
/// ```
/// use ringlimit::{builder::Token, Bucket, BucketQuota, RateLimiter, TokenBucket};
/// let bucket: Bucket<Token> = TokenBucket::new(BucketQuota::per_second(10)?.burst(2)?);
/// assert!(bucket.try_acquire_n(2)?.is_admitted());
/// assert!(!bucket.try_acquire());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Bucket<K, C = TscClock, L: Layout = Padded> {
    pub(crate) core: Scheduled<C, L>,
    kind: PhantomData<fn() -> K>,
}

impl<K, C, L: Layout> Bucket<K, C, L> {
    pub(crate) fn from_parts(engine: Engine<L>, clock: C, unlimited: bool) -> Self {
        Self {
            core: Scheduled {
                engine,
                clock,
                unlimited,
            },
            kind: PhantomData,
        }
    }
}

/// What every bucket-family limiter holds ([`Bucket`] and
/// [`ShardedBucket`](crate::ShardedBucket)): the engine, the clock, and whether the quota was
/// unlimited; and the calls they answer alike.
pub(crate) struct Scheduled<C, L: Layout> {
    pub(crate) engine: Engine<L>,
    pub(crate) clock: C,
    /// Built from an unlimited quota: admit whatever the engine refuses (read only after a
    /// refusal, or by the cold paths).
    pub(crate) unlimited: bool,
}

impl<C: Clock, L: Layout> Scheduled<C, L> {
    /// [`RateLimiter::try_acquire_n`], decided by the engine alone.
    pub(crate) fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        if self.unlimited {
            return Ok(Decision::UNLIMITED);
        }
        self.engine.decide(self.clock.now_nanos(), n)
    }

    /// [`RateLimiter::available`], by the engine alone.
    pub(crate) fn available(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.engine.available(self.clock.now_nanos())
    }

    /// [`RateLimiter::try_grant`], granted by the engine alone.
    pub(crate) fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        if self.unlimited {
            return Ok(Admission::unlimited(n, self.clock.now_nanos()));
        }
        self.engine.grant(self.clock.now_nanos(), n)
    }

    /// [`RateLimiter::limit`].
    pub(crate) fn limit(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.engine.config().limit
    }
}

/// The change [`RateLimiter::set_limit`] makes to a bucket-family configuration and its
/// per-call cap: a meter keeps its cap, a shaper's cap becomes the new limit.
pub(crate) fn limit_change(
    limit: u64,
) -> impl Fn(Params, u64) -> Result<(Params, u64), ConfigError> + Copy {
    move |config: Params, cap| {
        let cap = match config.mode {
            Mode::Meter => cap,
            Mode::Shaper => limit,
        };
        Ok((config.limited(limit)?, cap))
    }
}

impl<K, C: Clock, L: Layout> Bucket<K, C, L> {
    /// Bytes this limiter occupies (not counting the clock's shared state).
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, TokenBucket};
    /// let compact = TokenBucket::builder(BucketQuota::new(Rate::per_second(1)?, 1)?)
    ///     .clock(ManualClock::new())
    ///     .compact()
    ///     .build();
    /// assert!(compact.footprint() <= 320);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use ringlimit::{clock::{Clock, ManualClock}, BucketQuota, Rate, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(1)?, 1)?).clock(ManualClock::new()).build();
    /// bucket.clock().advance_nanos(3);
    /// assert_eq!(bucket.clock().now_nanos(), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.core.clock
    }
}

impl<K: sealed::Kind, C: Clock, L: Layout> RateLimiter for Bucket<K, C, L> {
    // Always inlined, with the engine's hot path: with `#[inline]` alone LLVM kept it out of
    // a caller's loop (a call and a return per attempt) once the speculative slot read made
    // it longer.
    #[inline(always)]
    fn try_acquire(&self) -> bool {
        // An unlimited bucket's flag is read only once the engine refused.
        self.core.engine.try_acquire(self.core.clock.now_nanos()) || self.core.unlimited
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        self.core.try_acquire_n(n)
    }

    fn available(&self) -> u64 {
        self.core.available()
    }

    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        self.core.try_grant(n)
    }

    fn refund(&self, grant: Grant) -> u64 {
        if !grant.is_from(self.core.engine.owner()) {
            return 0;
        }
        self.core.engine.refund(&self.core.clock, grant.ticket())
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.core.unlimited {
            return Err(ConfigError::Unlimited);
        }
        self.core
            .engine
            .reconfigure(&self.core.clock, limit_change(limit))
    }

    fn limit(&self) -> u64 {
        self.core.limit()
    }

    fn clock(&self) -> &dyn Clock {
        &self.core.clock
    }

    fn attempt(&self, n: u64, max_wait: Duration) -> Result<Attempt<'_>, WaitError> {
        Reserve::reserve_within(self, n, max_wait).map(Attempt::Granted)
    }
}

impl<K: sealed::Kind, C: Clock, L: Layout> Reserve for Bucket<K, C, L> {
    fn reserve_within(&self, n: u64, max_wait: Duration) -> Result<Reservation<'_>, WaitError> {
        let now = self.core.clock.now_nanos();
        if self.core.unlimited {
            return Ok(Reservation::immediate(
                &self.core.clock,
                Ticket::immediate(n, now),
            ));
        }
        let ticket = self.core.engine.attempt(now, n, max_wait)?;
        Ok(Reservation::scheduled(self, ticket))
    }
}

impl<K: sealed::Kind, C: Clock, L: Layout> Schedule for Bucket<K, C, L> {
    fn schedule_clock(&self) -> &dyn Clock {
        &self.core.clock
    }

    fn owner(&self) -> Owner {
        self.core.engine.owner()
    }

    fn refund(&self, ticket: &Ticket) -> u64 {
        self.core.engine.refund(&self.core.clock, ticket)
    }
}

impl<K: sealed::Kind, C, L: Layout> fmt::Debug for Bucket<K, C, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(K::NAME)
            .field("engine", &self.core.engine)
            .finish_non_exhaustive()
    }
}
