//! The bucket family's sequential specifications, its test oracles: [`TokenBucketSpec`] (the
//! sequential GCRA) and [`LeakyBucketSpec`] (a meter or a shaper), both one [`Machine`]
//! applying the rule of [`gcra`](super::gcra).

use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::spec::{Spec, Step};
use crate::limiter::{Admission, Decision, Ticket};
use crate::rate::Rate;

use super::gcra::{Growth, Mode, Params, Timeline, Verdict};

/// The sequential bucket: a configuration, a timeline and the state's time. The specs
/// [`TokenBucketSpec`](crate::spec::TokenBucketSpec) and
/// [`LeakyBucketSpec`](crate::spec::LeakyBucketSpec) are this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Machine {
    pub(crate) config: Params,
    pub(crate) line: Timeline,
    pub(crate) time: u64,
    /// A shaper's per-call cap as last set (`u64::MAX`: none); `config.limit` is it clipped.
    pub(crate) cap: u64,
    /// Reconfigurations so far: the configuration epoch a grant's ticket carries, so that a
    /// refund can tell a grant of an earlier configuration.
    pub(crate) epoch: u64,
}

impl Machine {
    pub(crate) fn new(config: Params, origin: u64) -> Self {
        Self {
            config,
            line: Timeline::new(origin),
            time: 0,
            cap: u64::MAX,
            epoch: 0,
        }
    }

    /// Replaces the configuration at `now` (raw), converting the state.
    pub(crate) fn reconfigure(&mut self, now_raw: u64, config: Params) {
        let now = self.line.since(now_raw);
        self.time =
            self.config
                .convert(&config, self.time, now, self.line.end, Growth::KeepPermits);
        self.config = config;
        self.epoch += 1;
    }
}

impl Spec for Machine {
    fn decide(&mut self, now_raw: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        let now = self.line.since(now_raw);
        let end = self.line.end;
        self.config.check(n)?;
        if n == 0 {
            return Ok(Decision::Admitted {
                remaining: self.config.available(self.time, now, end),
            });
        }
        Ok(match self.config.decide(self.time, now, n, end) {
            Verdict::Admit(time) => {
                self.time = time;
                Decision::Admitted {
                    remaining: self.config.available(time, now, end),
                }
            }
            Verdict::Refuse(retry_after) => self.config.refused(self.time, now, end, retry_after),
        })
    }

    fn available(&self, now_raw: u64) -> u64 {
        self.config
            .available(self.time, self.line.since(now_raw), self.line.end)
    }

    fn set_limit(&mut self, now_raw: u64, limit: u64) -> Result<(), ConfigError> {
        let config = self.config.limited(limit)?;
        if config.mode == Mode::Shaper {
            self.cap = limit;
        }
        self.reconfigure(now_raw, config);
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.config.limit
    }

    fn attempt(&mut self, now_raw: u64, n: u64, max_wait: Duration) -> Result<Step, WaitError> {
        self.config.check(n)?;
        if n == 0 {
            return Ok(Step::Granted(Ticket::immediate(0, now_raw)));
        }
        let now = self.line.since(now_raw);
        let scheduled = self
            .config
            .schedule(self.time, now, n, max_wait, self.line.end)?;
        self.time = scheduled.time;
        Ok(Step::Granted(
            self.line.ticket(n, now_raw, scheduled, self.epoch),
        ))
    }

    fn try_grant(&mut self, now_raw: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let decision = self.decide(now_raw, n)?;
        Ok(decision.granting(|| {
            let at = now_raw.max(self.line.origin);
            let mark = if n == 0 { 0 } else { u128::from(self.time) };
            Ticket::new(n, at, at, mark).with_epoch(self.epoch)
        }))
    }

    fn refund(&mut self, now_raw: u64, ticket: &Ticket) -> u64 {
        let now = self.line.since(now_raw);
        match self.config.refund(self.epoch, self.time, now, ticket) {
            Some((time, restored)) => {
                self.time = time;
                restored
            }
            None => 0,
        }
    }
}

/// Implements [`Spec`] for a public spec type wrapping a [`Machine`] in field `machine`.
macro_rules! delegate_spec {
    ($spec:ty) => {
        impl $crate::limiter::spec::Spec for $spec {
            fn decide(
                &mut self,
                now: u64,
                n: u64,
            ) -> Result<$crate::outcome::Decision, $crate::ExceedsLimit> {
                self.machine.decide(now, n)
            }
            fn available(&self, now: u64) -> u64 {
                self.machine.available(now)
            }
            fn set_limit(&mut self, now: u64, limit: u64) -> Result<(), $crate::ConfigError> {
                self.machine.set_limit(now, limit)
            }
            fn limit(&self) -> u64 {
                self.machine.limit()
            }
            fn attempt(
                &mut self,
                now: u64,
                n: u64,
                max_wait: std::time::Duration,
            ) -> Result<$crate::limiter::spec::Step, $crate::WaitError> {
                self.machine.attempt(now, n, max_wait)
            }
            fn try_grant(
                &mut self,
                now: u64,
                n: u64,
            ) -> Result<$crate::outcome::Admission, $crate::ExceedsLimit> {
                self.machine.try_grant(now, n)
            }
            fn refund(&mut self, now: u64, ticket: &$crate::outcome::Ticket) -> u64 {
                self.machine.refund(now, ticket)
            }
        }
    };
}

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

/// The leaky bucket as a sequential state machine, in one of two modes.
///
/// - **Meter** (capacity `b`, leak rate `r`, `T = 1/r`): exactly the GCRA of
///   [`TokenBucketSpec`](crate::spec::TokenBucketSpec) with burst `b`: water `n` is poured
///   in iff it fits, and leaks at `r`. Smooth, no queue.
/// - **Shaper** (leak rate `r`, maximum wait `w`; uber-go's `ratelimit.New(r,
///   ratelimit.WithoutSlack)`, not its default `Take` nor Guava's `SmoothBursty`): the state
///   is `next`, the earliest time the next call may go. A call for `n` at `now` is
///   scheduled at `s = max(next, now)` and must wait `s - now`; it is refused (nothing
///   changes) iff `s - now > w`, else `next = s + n·T`. Each call pays for itself by
///   delaying the next one, so the first call on an idle shaper goes at once. `decide`
///   admits only a call that would not wait (`Refused { available: 0, retry_after: s - now
///   }` otherwise); `attempt` schedules with the caller's `max_wait` capped at `w`. The
///   limit is the most permits one call may take: `max(1, ⌊w / T⌋)`, so no call delays the
///   next by more than `max(T, w)` (a larger call is `ExceedsLimit`); `set_limit` caps it,
///   and the cap is remembered: `set_rate` and `set_max_wait` recompute the limit as the
///   cap clipped to the new bound, and leave the schedule as it is. `available` is that
///   limit when a call would go at once (fewer where the end of the timeline is nearer),
///   else 0.
///
/// Times are nanoseconds since the origin (0 unless set with
/// [`starting_at`](Self::starting_at)); a schedule past 2^61 - 1 ns from it (or past
/// `u64::MAX` on the clock) is refused.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{spec::{LeakyBucketSpec, Spec, Step}, Rate};
/// let mut shaper = LeakyBucketSpec::shaper(Rate::per_second(10)?, Duration::from_secs(1))?;
/// let Step::Granted(first) = shaper.attempt(0, 1, Duration::MAX)? else { unreachable!() };
/// let Step::Granted(second) = shaper.attempt(0, 1, Duration::MAX)? else { unreachable!() };
/// assert_eq!((first.act_at(), second.act_at()), (0, 100_000_000));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakyBucketSpec {
    machine: Machine,
}

impl LeakyBucketSpec {
    /// A meter: `capacity` permits leaking at `leak`, empty (all capacity free) at time 0.
    ///
    /// ```
    /// use ringlimit::{spec::{LeakyBucketSpec, Spec}, Rate};
    /// let mut meter = LeakyBucketSpec::meter(2, Rate::per_second(1)?)?;
    /// assert!(meter.decide(0, 2)?.is_admitted());
    /// assert!(!meter.decide(0, 1)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn meter(capacity: u64, leak: Rate) -> Result<Self, ConfigError> {
        Ok(Self {
            machine: Machine::new(Params::meter(leak, capacity)?, 0),
        })
    }

    /// A shaper: callers leave at `leak`, each queued at most `max_wait` (at most
    /// [`MAX_SPAN_NANOS`](crate::LeakyBucket::MAX_SPAN_NANOS), else [`ConfigError::SpanTooLong`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::{LeakyBucketSpec, Spec}, Rate};
    /// let mut shaper = LeakyBucketSpec::shaper(Rate::per_second(1)?, Duration::from_secs(5))?;
    /// assert!(shaper.decide(0, 5)?.is_admitted()); // goes at once, delays the next by 5 s
    /// assert_eq!(shaper.decide(0, 1)?.retry_after(), Duration::from_secs(5));
    /// assert!(shaper.decide(0, 6).is_err()); // one call may delay the next 5 s at most
    /// assert!(LeakyBucketSpec::shaper(Rate::per_second(1)?, Duration::MAX).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shaper(leak: Rate, max_wait: Duration) -> Result<Self, ConfigError> {
        Ok(Self {
            machine: Machine::new(Params::shaper(leak, max_wait, u64::MAX)?, 0),
        })
    }

    /// The same bucket with its origin at `origin` on the clock, as a lock-free
    /// [`LeakyBucket`](crate::LeakyBucket) built when its clock read `origin`.
    ///
    /// ```
    /// use ringlimit::{spec::{LeakyBucketSpec, Spec}, Rate};
    /// let spec = LeakyBucketSpec::meter(1, Rate::per_second(1)?)?.starting_at(1_000);
    /// assert_eq!(spec.available(0), 1);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn starting_at(self, origin: u64) -> Self {
        let mut machine = Machine::new(self.machine.config, origin);
        machine.cap = self.machine.cap;
        machine.time = self.machine.time;
        Self { machine }
    }

    /// A meter starting full of water: `tat = τ` at the origin, so no capacity is free at
    /// first and one permit's worth leaks out every period, as a
    /// [`LeakyBucket::meter`](crate::LeakyBucket::meter) built from a quota with
    /// [`start_empty`](crate::BucketQuota::start_empty). A shaper is left as it is.
    ///
    /// ```
    /// use ringlimit::{spec::{LeakyBucketSpec, Spec}, Rate};
    /// let mut meter = LeakyBucketSpec::meter(4, Rate::per_second(2)?)?.starting_empty();
    /// assert_eq!(meter.available(0), 0);
    /// assert_eq!(meter.available(1_000_000_000), 2);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn starting_empty(mut self) -> Self {
        if self.machine.config.mode == Mode::Meter {
            self.machine.time = self.machine.config.span;
        }
        self
    }

    /// Whether this is a shaper (else a meter).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::LeakyBucketSpec, Rate};
    /// assert!(LeakyBucketSpec::shaper(Rate::per_second(1)?, Duration::ZERO)?.is_shaper());
    /// assert!(!LeakyBucketSpec::meter(1, Rate::per_second(1)?)?.is_shaper());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn is_shaper(&self) -> bool {
        self.machine.config.mode == Mode::Shaper
    }

    /// Changes the leak rate at `now`: a meter keeps the permits available then, a shaper
    /// keeps its schedule.
    ///
    /// ```
    /// use ringlimit::{spec::{LeakyBucketSpec, Spec}, Rate};
    /// let mut meter = LeakyBucketSpec::meter(1, Rate::per_second(1)?)?;
    /// meter.decide(0, 1)?;
    /// meter.set_rate(0, Rate::per_second(2)?)?;
    /// assert_eq!(meter.available(500_000_000), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&mut self, now: u64, leak: Rate) -> Result<(), ConfigError> {
        let config = self.machine.config.with_rate(leak, self.machine.cap)?;
        self.machine.reconfigure(now, config);
        Ok(())
    }

    /// Changes a shaper's maximum wait; [`ConfigError::NotAShaper`] on a meter.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::LeakyBucketSpec, ConfigError, Rate};
    /// let mut shaper = LeakyBucketSpec::shaper(Rate::per_second(1)?, Duration::ZERO)?;
    /// shaper.set_max_wait(0, Duration::from_secs(3))?;
    /// let mut meter = LeakyBucketSpec::meter(1, Rate::per_second(1)?)?;
    /// assert_eq!(meter.set_max_wait(0, Duration::ZERO), Err(ConfigError::NotAShaper));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn set_max_wait(&mut self, now: u64, max_wait: Duration) -> Result<(), ConfigError> {
        let config = self
            .machine
            .config
            .with_max_wait(max_wait, self.machine.cap)?;
        self.machine.reconfigure(now, config);
        Ok(())
    }
}

delegate_spec!(LeakyBucketSpec);
