//! [`LeakyBucketSpec`]: the sequential leaky bucket, as a meter or as a shaper.

use std::time::Duration;

use crate::bucket::spec::{delegate_spec, Machine, Mode, Params};
use crate::error::ConfigError;
use crate::rate::Rate;

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
