//! The warm-up limiter (Guava's `SmoothWarmingUp`): a [`WarmUpCell`], a [`WarmUpConfig`]
//! and a clock. Decisions, reconfiguration and cancellation: [the guide](crate::guide::warm_up).

use std::fmt;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::layout::Padded;
use crate::limiter::spec::Step;
use crate::limiter::{Admission, Attempt, Grant, Owner, Reservation, Reserve, Schedule, Ticket};
use crate::limiter::{Decision, RateLimiter};
use crate::rate::Rate;

use super::builder::WarmUpBuilder;
use super::cell::WarmUpCell;
use super::config::WarmUpConfig;
use super::curve::{DEFAULT_COLD_FACTOR, MAX_SPAN_NANOS};
use super::quota::WarmUpQuota;

/// A lock-free warm-up limiter with the semantics of Guava's
/// `RateLimiter.create(permitsPerSecond, warmupPeriod, unit, coldFactor)`.
///
/// Once warm it lets one permit through every `rate.period()` (T). Idle time stores
/// permits, up to `max = 0.5 W / T + 2 W / (T + C)` for a warm-up period W and a cold
/// interval `C = cold_factor × T` (3 × T by default); taking a stored permit costs the
/// warm-up curve's interval at its position, from C when all are stored down to T once at
/// most half a warm-up's worth are. So after idleness the limiter starts slowly and speeds up
/// to the stable rate over the warm-up period. It starts cold (full), as Guava does. The
/// cost of a request is charged to the *next* one: a free limiter admits any request at
/// once (up to the per-call bound [`limit`](RateLimiter::limit)) and makes the next caller
/// wait for it. The exact rules are [`WarmUpSpec`](crate::spec::WarmUpSpec)'s.
///
/// **Concurrency.** Linearizable with respect to the spec: an admission or reservation takes
/// effect at its CAS on the cell's word; a refusal, an `available()` or a timeout at its
/// load of the word. Calls are decided at their own clock reading; a reading older than the
/// next free time stores nothing, so time never runs backwards. `set_rate` and `set_limit`
/// publish a new configuration epoch; the cell relabels itself on its next access before
/// deciding, so a call still deciding under the old configuration fails its CAS (the one
/// residual: [`WarmUpCell`](crate::cell::WarmUpCell)'s label wrap).
///
/// **Hot path.** `try_acquire`: a clock read, one 128-bit load (on x86_64 a `cmpxchg16b`, or
/// a plain 16-byte load where the CPU guarantees its atomicity), the configuration's
/// epoch and slot (a few loads), the `f64` arithmetic of Guava (skipped when the call finds
/// the limiter free and cold, `max` permits stored: one permit's cost from there is computed
/// once per configuration), and one 128-bit CAS. A refusal is the loads alone. [`AtomicU128::is_lock_free`](portable_atomic::AtomicU128::is_lock_free) is
/// true on x86_64 with `cmpxchg16b` and on aarch64; elsewhere `portable-atomic` falls back
/// to a lock.
///
/// **Bounds.** The warm-up period and the cold interval are at most [`WarmUp::MAX_SPAN_NANOS`]
/// (2^58 ns, about 9 years), the warm-up at least 1 ns, the cold factor a finite number of
/// at least 1. One call may ask for at most `floor(2^58 ns / C)` permits (its cost is at
/// most `n × C`); `set_limit` lowers that bound. Times are nanoseconds since the limiter's
/// origin, its clock's reading at `build`, so any clock works, one counting from the Unix
/// epoch included; tickets carry readings of the clock. Readings saturate 2^60 ns after the
/// origin (time then stands still) and the schedule ends 2^61 ns after it (or at `u64::MAX`
/// on the clock): a reservation that would end past it is not made ([`Attempt::RetryAfter`]
/// until the queue ahead drains). Nor is one for a moment past 2^60 ns, which the limiter's
/// time never reaches: busy until then is busy for ever, so in saturated time every wait
/// grants only what [`try_acquire`](RateLimiter::try_acquire) admits (the limiter free at
/// the reading) and refuses the rest as the bucket and window families refuse past their
/// end: `retry_after` is `Duration::MAX`, a timed wait is [`WaitError::Timeout`] at once,
/// an unbounded one [`WaitError::TimeExhausted`], a reservation `Timeout`.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, Rate, RateLimiter, Wait, WarmUp, WarmUpQuota};
/// let clock = ManualClock::new();
/// let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?)
///     .clock(clock.clone())
///     .build();
/// // Cold: the interval starts at 3 × 0.5 s and falls to 0.5 s over the warm-up.
/// let waits: Vec<u128> = (0..6).map(|_| limiter.acquire().as_millis()).collect();
/// assert_eq!(waits, [0, 1375, 1125, 875, 625, 500]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **How it works:** [`guide::warm_up`](crate::guide::warm_up) (the curve, reconfiguration, cancellation).
pub struct WarmUp<C = TscClock> {
    /// The state, a cache line of its own.
    cell: WarmUpCell<Padded>,
    /// Rate, warm-up period, cold factor, per-call bound and the origin of the cell's times
    /// (the clock's reading at `build`).
    config: WarmUpConfig,
    /// The id stamped on this limiter's grants; a refund of any other grant restores 0.
    owner: Owner,
    clock: C,
}

impl WarmUp {
    /// The largest warm-up period and cold interval, in ns (2^58).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConfigError, Rate, WarmUp, WarmUpQuota};
    /// let too_long = Duration::from_nanos(WarmUp::MAX_SPAN_NANOS + 1);
    /// let result = WarmUpQuota::new(Rate::per_second(1)?, too_long);
    /// assert!(matches!(result, Err(ConfigError::SpanTooLong { .. })));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_SPAN_NANOS: u64 = MAX_SPAN_NANOS;

    /// Guava's default cold factor, 3: a cold limiter lets permits through at a third of the
    /// stable rate.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::new(WarmUpQuota::new(Rate::per_second(1)?, Duration::from_secs(1))?);
    /// assert_eq!(limiter.cold_factor(), WarmUp::DEFAULT_COLD_FACTOR);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub const DEFAULT_COLD_FACTOR: f64 = DEFAULT_COLD_FACTOR;

    /// A warm-up limiter of `quota`, cold, on the default [`TscClock`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, RateLimiter, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::new(WarmUpQuota::new(Rate::per_second(100)?, Duration::from_secs(10))?);
    /// assert!(limiter.try_acquire());
    /// assert_eq!(limiter.cold_factor(), 3.0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: WarmUpQuota) -> Self {
        Self::builder(quota).build()
    }

    /// Configures a warm-up limiter of `quota`: the [`TscClock`] unless changed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, Rate, RateLimiter, WarmUp, WarmUpQuota};
    /// let quota = WarmUpQuota::new(Rate::per_second(10)?, Duration::from_secs(1))?;
    /// let limiter = WarmUp::builder(quota).clock(ManualClock::new()).build();
    /// assert!(limiter.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn builder(quota: WarmUpQuota) -> WarmUpBuilder {
        WarmUpBuilder::new(quota)
    }
}

impl<C: Clock> WarmUp<C> {
    pub(crate) fn from_quota(quota: WarmUpQuota, clock: C) -> Self {
        let config = WarmUpConfig::new(quota, &clock);
        Self {
            cell: WarmUpCell::new(&config),
            config,
            owner: Owner::new(),
            clock,
        }
    }

    /// The rate once warm.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::new(WarmUpQuota::new(Rate::per_second(4)?, Duration::from_secs(1))?);
    /// assert_eq!(limiter.rate().period(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        self.config.rate()
    }

    /// The warm-up period.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::new(WarmUpQuota::new(Rate::per_second(4)?, Duration::from_secs(3))?);
    /// assert_eq!(limiter.warm_up(), Duration::from_secs(3));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn warm_up(&self) -> Duration {
        self.config.warm_up()
    }

    /// How many times slower than the stable rate a cold limiter lets permits through.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(4)?, Duration::from_secs(3))?.cold_factor(2.5)?)
    ///     .build();
    /// assert_eq!(limiter.cold_factor(), 2.5);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn cold_factor(&self) -> f64 {
        self.config.cold_factor()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::{Clock, ManualClock}, Rate, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(1)?, Duration::from_secs(1))?)
    ///     .clock(ManualClock::new())
    ///     .build();
    /// limiter.clock().advance(Duration::from_nanos(7));
    /// assert_eq!(limiter.clock().now_nanos(), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Bytes one instance occupies (no heap): the cache-padded cell (its 128-bit word) and
    /// the configuration with its four slots.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{Rate, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::new(WarmUpQuota::new(Rate::per_second(10)?, Duration::from_secs(1))?);
    /// assert!(limiter.footprint() >= 128);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// The permits stored now (Guava's `storedPermits`, brought up to the clock's time):
    /// `max` when cold, 0 right after a burst.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, Rate, RateLimiter, Wait, WarmUp, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?)
    ///     .clock(clock.clone())
    ///     .build();
    /// // 0.5 × 4 s / 0.5 s + 2 × 4 s / (0.5 s + 1.5 s) = 8.
    /// assert_eq!(limiter.stored_permits(), 8.0);
    /// assert!(limiter.try_acquire_n(3)?.is_admitted());
    /// assert_eq!(limiter.stored_permits(), 5.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stored_permits(&self) -> f64 {
        self.cell.stored_permits(&self.config, &self.clock)
    }

    /// Changes the rate (Guava's `setRate`), linearizably with concurrent calls: the stored
    /// permits are brought up to now under the old curve, then scaled by `new max / old
    /// max` and capped at the new max (Guava does not cap; the product can exceed it by an
    /// ulp); a queue of reservations keeps its schedule. Reservations made before it can no
    /// longer be cancelled. The per-call bound becomes the one `set_limit` asked for, or the
    /// largest the new cold interval allows if that is smaller.
    ///
    /// Errors, and then nothing changes: [`ConfigError::SpanTooLong`] if `cold_factor ×
    /// rate.period()` exceeds [`WarmUp::MAX_SPAN_NANOS`]; [`ConfigError::ColdFactorTooLarge`]
    /// if the new curve's warm-up part is lost to rounding.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, Rate, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?)
    ///     .clock(ManualClock::new())
    ///     .build();
    /// limiter.set_rate(Rate::per_second(4)?)?;
    /// assert_eq!(limiter.rate(), Rate::per_second(4)?);
    /// assert_eq!(limiter.stored_permits(), 16.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        self.config.set_rate(rate)
    }
}

impl<C: Clock> RateLimiter for WarmUp<C> {
    #[inline]
    fn try_acquire(&self) -> bool {
        self.cell.try_acquire(&self.config, &self.clock)
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        self.cell.try_acquire_n(&self.config, &self.clock, n)
    }

    fn available(&self) -> u64 {
        self.cell.available(&self.config, &self.clock)
    }

    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        self.cell
            .grant(&self.config, &self.clock, n)
            .map(|admission| admission.owned_by(self.owner))
    }

    fn refund(&self, grant: Grant) -> u64 {
        if !grant.is_from(self.owner) {
            return 0;
        }
        self.cell.refund(&self.config, grant.ticket())
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        self.config.set_limit(limit)
    }

    fn limit(&self) -> u64 {
        self.config.limit()
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn attempt(&self, n: u64, max_wait: Duration) -> Result<Attempt<'_>, WaitError> {
        Ok(
            match self.cell.step(&self.config, &self.clock, n, max_wait)? {
                Step::Granted(ticket) => Attempt::Granted(Reservation::scheduled(self, ticket)),
                Step::RetryAfter(after) => Attempt::RetryAfter(after),
            },
        )
    }
}

impl<C: Clock> Reserve for WarmUp<C> {
    fn reserve_within(&self, n: u64, max_wait: Duration) -> Result<Reservation<'_>, WaitError> {
        match self.attempt(n, max_wait)? {
            Attempt::Granted(reservation) => Ok(reservation),
            Attempt::RetryAfter(retry_after) => Err(WaitError::Timeout {
                retry_after,
                timeout: max_wait,
            }),
        }
    }
}

impl<C: Clock> Schedule for WarmUp<C> {
    fn schedule_clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn owner(&self) -> Owner {
        self.owner
    }

    fn refund(&self, ticket: &Ticket) -> u64 {
        self.cell.refund(&self.config, ticket)
    }
}

impl<C> fmt::Debug for WarmUp<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarmUp")
            .field("cell", &self.cell)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::limiter::spec::Spec;
    use crate::spec::WarmUpSpec;

    fn guava(clock: &ManualClock) -> WarmUp<ManualClock> {
        WarmUp::builder(
            WarmUpQuota::new(Rate::per_second(2).unwrap(), Duration::from_secs(4)).unwrap(),
        )
        .clock(clock.clone())
        .build()
    }

    #[test]
    fn the_state_word_is_lock_free_on_x86_64() {
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        assert!(portable_atomic::AtomicU128::is_lock_free());
    }

    #[test]
    fn set_limit_and_set_rate_keep_the_limiter_on_its_spec() {
        let clock = ManualClock::new();
        let limiter = guava(&clock);
        let mut spec = WarmUpSpec::new(limiter.rate(), limiter.warm_up(), 3.0).unwrap();
        for round in 0..300u64 {
            clock.set_nanos(round * 300_000_000);
            let now = clock.now_nanos();
            if round % 3 == 0 {
                let rate = Rate::per_second(1 + round % 5).unwrap();
                limiter.set_rate(rate).unwrap();
                spec.set_rate(now, rate).unwrap();
            } else {
                limiter.set_limit(1 + round).unwrap();
                spec.set_limit(now, 1 + round).unwrap();
            }
            for n in [1, 2, round + 3] {
                assert_eq!(limiter.try_acquire_n(n), spec.decide(now, n), "{round}");
            }
            assert_eq!(limiter.limit(), spec.limit());
            assert_eq!(
                limiter.stored_permits().to_bits(),
                spec.stored_permits(now).to_bits()
            );
        }
        // 300 reconfigurations: the cell's 8-bit label wrapped; the epoch counts them all.
        assert_eq!(limiter.config.current().epoch, 300);
    }

    #[test]
    fn debug_shows_the_state() {
        let limiter = guava(&ManualClock::new());
        let shown = format!("{limiter:?}");
        assert!(shown.contains("cooled: 4000000000"), "{shown}");
    }
}
