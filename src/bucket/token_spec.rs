//! [`TokenBucketSpec`]: the sequential GCRA, the token bucket's test oracle.

use crate::bucket::spec::{delegate_spec, Machine, Params};
use crate::error::ConfigError;
use crate::rate::Rate;

/// The token bucket as a sequential state machine: the GCRA with rate `r` (period `T =
/// 1/r`) and burst `b` (tolerance `τ = b·T`), starting full.
///
/// The state is the theoretical arrival time `tat`, in nanoseconds since the origin (0
/// unless set with [`starting_at`](Self::starting_at); readings below it count as it).
/// - `decide(now, n)`: with `base = max(tat, now)` and `new = base + n·T`, admits iff `new -
///   now <= τ` (then `tat = new`, `remaining = ⌊(now + τ - new)/T⌋`); else refuses with
///   `available = ⌊(now + τ - base)/T⌋` and `retry_after = new - now - τ`, writing nothing.
///   `n > b` is [`ExceedsLimit`](crate::ExceedsLimit).
/// - `attempt(now, n, max_wait)` reserves (golang's `Reserve`): `tat = new`, usable at
///   `max(new - τ, now)`, unless that is more than `max_wait` away (then nothing changes).
/// - `refund(now, ticket)` (what a reservation's `cancel` does; the amount is golang's
///   `Reservation.Cancel`): gives back `n·T - (tat - mark)` (the part no later admission or
///   reservation is scheduled behind), whether or not the ticket's time has come: once the
///   clock is past the restored time the refund changes nothing.
/// - `set_rate`, `set_burst` (= `set_limit`) keep the permits available at `now`, taken no
///   earlier than `tat - τ` (a reading every admission reaches; reservations queued more
///   than a burst ahead keep their place, and the new rate starts where they end).
///
/// A schedule past 2^61 - 1 ns after the origin (or past `u64::MAX` on the clock) is refused
/// with `retry_after = Duration::MAX`.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{spec::{Spec, TokenBucketSpec}, Rate};
/// use ringlimit::outcome::Decision;
/// let mut spec = TokenBucketSpec::new(Rate::per_second(10)?, 2)?;
/// assert_eq!(spec.decide(0, 2)?, Decision::Admitted { remaining: 0 });
/// assert_eq!(
///     spec.decide(0, 1)?,
///     Decision::Refused { available: 0, retry_after: Duration::from_millis(100) }
/// );
/// assert_eq!(spec.available(250_000_000), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBucketSpec {
    machine: Machine,
}

impl TokenBucketSpec {
    /// `burst` permits refilling at `rate`, full at time 0.
    ///
    /// Errors: [`ConfigError::ZeroBurst`], and [`ConfigError::SpanTooLong`] when `burst ×
    /// period` exceeds [`MAX_SPAN_NANOS`](crate::TokenBucket::MAX_SPAN_NANOS).
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, TokenBucketSpec}, ConfigError, Rate};
    /// assert_eq!(TokenBucketSpec::new(Rate::per_second(1)?, 3)?.limit(), 3);
    /// assert_eq!(TokenBucketSpec::new(Rate::per_second(1)?, 0), Err(ConfigError::ZeroBurst));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(rate: Rate, burst: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            machine: Machine::new(Params::meter(rate, burst)?, 0),
        })
    }

    /// The same bucket with its origin at `origin` on the clock, as a lock-free
    /// [`TokenBucket`](crate::TokenBucket) built when its clock read `origin`.
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, TokenBucketSpec}, Rate};
    /// let mut spec = TokenBucketSpec::new(Rate::per_second(1)?, 1)?.starting_at(u64::MAX - 5);
    /// // Only 5 ns of schedule are left before the clock's end: a 1 s permit cannot fit.
    /// assert!(!spec.decide(u64::MAX - 5, 1)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn starting_at(self, origin: u64) -> Self {
        let mut machine = Machine::new(self.machine.config, origin);
        machine.time = self.machine.time;
        Self { machine }
    }

    /// The same bucket starting empty: `tat = τ` at the origin, so nothing is available at
    /// first and a permit comes every period, as a [`TokenBucket`](crate::TokenBucket)
    /// built from a quota with [`start_empty`](crate::BucketQuota::start_empty).
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, TokenBucketSpec}, Rate};
    /// let mut spec = TokenBucketSpec::new(Rate::per_second(10)?, 5)?.starting_empty();
    /// assert_eq!(spec.available(0), 0);
    /// assert_eq!(spec.available(300_000_000), 3);
    /// assert_eq!(spec.available(10_000_000_000), 5);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn starting_empty(mut self) -> Self {
        self.machine.time = self.machine.config.span;
        self
    }

    /// The spec of a token bucket built from `quota` (empty at the origin if the quota
    /// starts empty); [`ConfigError::Unlimited`] for an unlimited quota, which has no spec.
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, TokenBucketSpec}, BucketQuota, ConfigError};
    /// let spec = TokenBucketSpec::from_quota(BucketQuota::per_second(4)?.start_empty())?;
    /// assert_eq!(spec.available(0), 0);
    /// assert_eq!(TokenBucketSpec::from_quota(BucketQuota::unlimited()), Err(ConfigError::Unlimited));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn from_quota(quota: crate::BucketQuota) -> Result<Self, ConfigError> {
        if quota.is_unlimited() {
            return Err(ConfigError::Unlimited);
        }
        let spec = Self {
            machine: Machine::new(quota.config(), 0),
        };
        Ok(if quota.starts_empty() {
            spec.starting_empty()
        } else {
            spec
        })
    }

    /// The refill rate.
    ///
    /// ```
    /// use ringlimit::{spec::TokenBucketSpec, Rate};
    /// let rate = Rate::per_second(4)?;
    /// assert_eq!(TokenBucketSpec::new(rate, 1)?.rate(), rate);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.machine.config.period)
    }

    /// Changes the rate at `now`, keeping the permits available then (rounded down).
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, TokenBucketSpec}, Rate};
    /// let mut spec = TokenBucketSpec::new(Rate::per_second(10)?, 4)?;
    /// spec.decide(0, 4)?;
    /// spec.set_rate(0, Rate::per_second(1)?)?;
    /// assert_eq!(spec.available(999_999_999), 0);
    /// assert_eq!(spec.available(1_000_000_000), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&mut self, now: u64, rate: Rate) -> Result<(), ConfigError> {
        let config = self.machine.config.with_rate(rate, self.machine.cap)?;
        self.machine.reconfigure(now, config);
        Ok(())
    }

    /// Changes the burst at `now`, keeping the permits available then; the same as
    /// [`Spec::set_limit`](crate::limiter::spec::Spec::set_limit).
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, TokenBucketSpec}, Rate};
    /// let mut spec = TokenBucketSpec::new(Rate::per_second(10)?, 2)?;
    /// spec.set_burst(0, 5)?;
    /// assert_eq!(spec.available(0), 2);
    /// assert_eq!(spec.available(300_000_000), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_burst(&mut self, now: u64, burst: u64) -> Result<(), ConfigError> {
        use crate::limiter::spec::Spec;
        self.machine.set_limit(now, burst)
    }
}

delegate_spec!(TokenBucketSpec);
