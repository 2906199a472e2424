//! The token bucket: GCRA on one atomic word.

use crate::bucket::builder::{BucketBuilder, Token};
use crate::bucket::limiter::Bucket;
use crate::bucket::quota::BucketQuota;
use crate::bucket::word::MAX_SPAN_NANOS;
use crate::clock::{Clock, TscClock};
use crate::error::ConfigError;
use crate::layout::{Layout, Padded};
use crate::rate::Rate;

/// A lock-free token bucket: `burst` permits, refilled at `rate`, starting full; the GCRA
/// (generic cell rate algorithm) on one atomic word.
///
/// Admits `n` at time `t` iff `max(tat, t) + n·T - t <= τ`, with `T` the rate's period and
/// `τ = burst·T` (see [`TokenBucketSpec`](crate::spec::TokenBucketSpec)).
///
/// **Guarantee.** At most `burst + ⌊Δt/T⌋` permits in any interval of length `Δt`.
/// Linearizable with respect to the spec with no deviation: no interleaving over-admits,
/// and no call is refused unless the spec would refuse it at its linearization point (an
/// admission's is its CAS; a refusal's, its load of the word, confirmed by a re-load).
/// Waits are reservations ([`Reserve`](crate::Reserve)): each waiter's time is fixed when it
/// asks, so waiters are served in order; [`Reservation::cancel`](crate::outcome::Reservation::cancel)
/// and [`refund`](crate::RateLimiter::refund) (one operation) give back what no later
/// admission or reservation is scheduled behind (see [the guide](crate::guide::refunds)).
///
/// **Reconfiguration.** [`set_rate`](Self::set_rate) and [`set_burst`](Self::set_burst) (and
/// `set_limit`, the same) keep the permits available at the moment of the change, rounded so
/// a change never mints a permit. They take effect at one CAS of the word: every admission
/// is decided wholly under the old or the new configuration. The change reads the clock
/// after loading the word (and again after each failed CAS), so it never converts at a
/// reading older than an admission it follows. Reservations queued more than a burst ahead
/// keep their place: the new rate starts where the queue ends, so no later caller goes
/// before a queued one.
///
/// **Residual: a clock running backwards across a change.** With a clock that is not
/// monotonic across cores, a change whose reading is δ behind the last admission's mints at
/// most `⌈min(δ, τ)·(1/T' - 1/T)⌉` permits (T' the new period; none unless the rate rises,
/// never more than the new burst): the conversion takes place no earlier than `tat - τ`,
/// which every admission's reading reaches. A monotonic clock (the default TSC where
/// invariant, [`ManualClock`](crate::clock::ManualClock)) has no residual.
///
/// **Residual: ABA on the configuration slots.** The word is `[time: 61 | gen: 3]`; a
/// reconfiguration writes the next of eight configuration slots and then moves `gen` to it.
/// An admitter's CAS succeeds only on the exact word it read, so a stale configuration can
/// decide an admission only if the admitter stalled between its load of the word and its
/// CAS (a few instructions: one slot read and the GCRA arithmetic) while a multiple of eight
/// reconfigurations (serialized on a lock) ran and left the time field exactly where it was.
/// Refusals re-load the word after reading the slot, with the same bound. If it ever
/// happened, that one call could be decided under a mix of the two configurations the slot
/// held (its rate from one, its burst from the other): a configuration never in force, but
/// one call only, and never a panic or a wrapped time (the arithmetic is checked).
/// `try_acquire` reads its slot before the word but has the same window (from the word's
/// load to its CAS), where it decides under one configuration, not a mix; it could also use
/// the slot it read if it stalled across 2^32 reconfigurations between its two loads of the
/// reconfiguration count ([the guide](crate::guide::bucket#the-hot-path)).
///
/// **Hot path.** `try_acquire` reads the clock, the reconfiguration count and the slot it
/// names (read-mostly lines, loaded before the word so that they do not wait for it), then
/// the word and the count again, and admits with one CAS
/// ([the guide](crate::guide::bucket#the-hot-path)); a refusal is those loads and a re-load
/// of the word, no write. Under contention a failed CAS retries from the observed word after a
/// short exponential backoff (crossbeam's `Backoff`, out of line: the first try pays nothing
/// for it). No division on the `try_acquire` path, admitted or refused; `try_acquire_n`
/// divides once, to report `remaining` or `available`.
///
/// **Limits.** `burst >= 1`, `burst × period <=` [`MAX_SPAN_NANOS`](crate::TokenBucket::MAX_SPAN_NANOS)
/// (2^60 ns); checked when the [`BucketQuota`] is made. Times run 2^61 ns (73 years) from the
/// origin (the clock's reading at `build`); a schedule past that, or past `u64::MAX` on the
/// clock, is refused rather than wrapped (with nothing available). Memory: [`Padded`] (default) puts the word on its
/// own cache line and the slots on another; [`Compact`](crate::cell::Compact) packs them
/// ([`footprint`](Self::footprint)).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket, Wait};
/// let clock = ManualClock::new();
/// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 2)?).clock(clock.clone()).build();
/// assert!(bucket.try_acquire_n(2)?.is_admitted());
/// assert!(!bucket.try_acquire());
/// // One permit back every 100 ms; a blocking acquire waits exactly that on this clock.
/// assert_eq!(bucket.acquire(), Duration::from_millis(100));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **How it works:** [`guide::bucket`](crate::guide::bucket) (the GCRA engine, reconfiguration, residuals).
pub type TokenBucket<C = TscClock, L = Padded> = Bucket<Token, C, L>;

impl TokenBucket {
    /// The longest `burst × period` (and schedule span) a token bucket represents: 2^60 ns.
    ///
    /// ```
    /// use ringlimit::TokenBucket;
    /// assert_eq!(TokenBucket::MAX_SPAN_NANOS, 1 << 60);
    /// ```
    pub const MAX_SPAN_NANOS: u64 = MAX_SPAN_NANOS;

    /// A token bucket of `quota` (its rate and burst, full unless it says
    /// [`start_empty`](BucketQuota::start_empty)), on the default clock and layout.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, RateLimiter, TokenBucket};
    /// let bucket = TokenBucket::new(BucketQuota::per_second(100)?.burst(10)?);
    /// assert_eq!(bucket.limit(), 10);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: BucketQuota) -> Self {
        Self::builder(quota).build()
    }

    /// Starts building a token bucket of `quota`.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, RateLimiter, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(1)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.available(), 1);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn builder(quota: BucketQuota) -> BucketBuilder<Token> {
        BucketBuilder::new(quota)
    }
}

impl<C: Clock, L: Layout> BucketBuilder<Token, C, L> {
    /// Builds the bucket, full (or empty, as the quota says), its origin the clock's reading
    /// now; it cannot fail.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, RateLimiter, TokenBucket};
    /// let quota = BucketQuota::per_second(1)?.burst(3)?;
    /// let bucket = TokenBucket::builder(quota).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.available(), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> TokenBucket<C, L> {
        let (engine, clock, unlimited) = self.engine();
        Bucket::from_parts(engine, clock, unlimited)
    }
}

impl<C: Clock, L: Layout> TokenBucket<C, L> {
    /// The refill rate in force.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, TokenBucket};
    /// let rate = Rate::per_second(5)?;
    /// let bucket = TokenBucket::builder(BucketQuota::new(rate, 1)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.rate(), rate);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.core.engine.config().period)
    }

    /// The burst in force (also [`limit`](crate::RateLimiter::limit)).
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(5)?, 7)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.burst(), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn burst(&self) -> u64 {
        self.core.engine.config().limit
    }

    /// Changes the rate now, keeping the permits available now (rounded down).
    /// [`ConfigError::SpanTooLong`] if `burst × period` would no longer fit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket, Wait};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
    /// assert!(bucket.try_acquire());
    /// bucket.set_rate(Rate::per_second(1)?)?;
    /// assert_eq!(bucket.try_acquire_n(1)?.retry_after(), Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        if self.core.unlimited {
            return Err(ConfigError::Unlimited);
        }
        self.core
            .engine
            .reconfigure(&self.core.clock, |config, cap| {
                Ok((config.with_rate(rate, cap)?, cap))
            })
    }

    /// Changes the burst now, keeping the permits available now; the same as
    /// [`set_limit`](crate::RateLimiter::set_limit).
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket, Wait};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(ManualClock::new()).build();
    /// bucket.set_burst(3)?;
    /// assert_eq!(bucket.available(), 1); // the two new permits refill at the rate
    /// assert!(bucket.set_burst(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_burst(&self, burst: u64) -> Result<(), ConfigError> {
        crate::RateLimiter::set_limit(self, burst)
    }
}
