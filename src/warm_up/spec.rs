//! [`WarmUpSpec`]: the sequential warm-up limiter (Guava's `SmoothWarmingUp`).

use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::spec::{Spec, Step};
use crate::limiter::Decision;
use crate::limiter::{Admission, Ticket};
use crate::rate::Rate;

use super::curve::{validate, Config, Timeline};
use super::word::State;

/// The sequential warm-up limiter: Guava's `RateLimiter.create(rate, warmupPeriod, unit,
/// coldFactor)`, in nanoseconds. Guava keeps the stored permits as a `double`; this spec
/// keeps the idle time that stored them, in whole ns (`stored × W / max`, rounded up after
/// each admission, so a request is priced with at most `1 / cool_down` permits more than
/// Guava's, which can only lengthen the wait). Its prices are Guava's `double` arithmetic
/// on the permits that cooling stores; on Guava's own examples the two agree exactly.
///
/// - Idle time stores permits (one per `warm_up / max` ns, up to `max`); a request spends
///   stored permits first, each costing the interval of the warm-up curve at its position
///   (from `cold_factor × T` when full down to `T` below the threshold), then fresh permits
///   at `T`. The cost pushes back the time the *next* request may go: a request is never
///   delayed by its own cost (Guava: "the cost of a request is paid by the next request").
/// - [`decide`](Spec::decide) admits iff the limiter is free at `now` (its next free time is
///   not later), and then takes any `n` up to [`limit`](Spec::limit), the per-call bound.
///   Refused: `available: 0`, `retry_after` until the next free time (`Duration::MAX` when
///   that lies past 2^60 ns, where readings stand still: no reading reaches it).
/// - [`attempt`](Spec::attempt) reserves if the next free time is at most `max_wait` away
///   (Guava's `tryAcquire(n, timeout)`), otherwise [`WaitError::Timeout`] at once; a next
///   free time past 2^60 ns is never reserved ([`Step::RetryAfter`]`(Duration::MAX)`).
/// - [`available`](Spec::available) is `limit()` while the limiter is free, else 0: the
///   largest `n` that `decide` would admit.
/// - [`refund`](Spec::refund) (what a reservation's `cancel` does) puts the state back to
///   what it was right before the grant if nothing changed it since (no later admission,
///   reservation, refund or reconfiguration), whether or not its time has come; otherwise
///   it does nothing. Reconfigurations are counted, and a
///   ticket carries the count it was made under, so one made before any `set_rate` or
///   `set_limit` is never given back after it.
/// - Starts cold, with `max` permits stored. A reading older than the next free time never
///   stores permits, so time never runs backwards.
/// - Times are clock readings; the limiter works in nanoseconds since its origin (0 unless
///   set with [`starting_at`](Self::starting_at)), where readings saturate at 2^60 ns and
///   the schedule ends at 2^61 ns (or at `u64::MAX` on the clock). Tickets carry clock
///   readings.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::spec::{Spec, WarmUpSpec};
/// use ringlimit::Rate;
/// let mut spec = WarmUpSpec::new(Rate::per_second(2)?, Duration::from_secs(4), 3.0)?;
/// assert!(spec.decide(0, 1)?.is_admitted());
/// // Cold: the first permit costs 1.375 s, paid by the next caller.
/// assert_eq!(spec.decide(0, 1)?.retry_after(), Duration::from_millis(1375));
/// assert!(spec.decide(1_375_000_000, 1)?.is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct WarmUpSpec {
    warm_up: u64,
    cold_factor: f64,
    /// The per-call bound `set_limit` asked for (`u64::MAX`: the largest allowed).
    requested: u64,
    config: Config,
    line: Timeline,
    state: State,
}

impl WarmUpSpec {
    /// One permit per `rate.period()` once warm, warming up over `warm_up` from
    /// `cold_factor × period` (Guava's default cold factor is
    /// [`WarmUp::DEFAULT_COLD_FACTOR`](crate::WarmUp::DEFAULT_COLD_FACTOR), 3).
    ///
    /// Errors as [`WarmUp::builder`](crate::WarmUp::builder)'s `build`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::WarmUpSpec, ConfigError, Rate};
    /// let rate = Rate::per_second(10)?;
    /// assert!(WarmUpSpec::new(rate, Duration::from_secs(1), 3.0).is_ok());
    /// assert_eq!(
    ///     WarmUpSpec::new(rate, Duration::from_secs(1), 0.5).unwrap_err(),
    ///     ConfigError::InvalidColdFactor
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(rate: Rate, warm_up: Duration, cold_factor: f64) -> Result<Self, ConfigError> {
        let warm_up = validate(warm_up, cold_factor)?;
        let config = Config::new(rate, warm_up, cold_factor, u64::MAX)?;
        Ok(Self {
            warm_up,
            cold_factor,
            requested: u64::MAX,
            config,
            line: Timeline::new(0),
            state: config.cold_start(),
        })
    }

    /// The same limiter with its origin at `origin` on the clock, as a lock-free
    /// [`WarmUp`](crate::WarmUp) built when its clock read `origin`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::{Spec, WarmUpSpec}, Rate};
    /// let unix = 1_764_000_000_000_000_000;
    /// let mut spec = WarmUpSpec::new(Rate::per_second(2)?, Duration::from_secs(4), 3.0)?
    ///     .starting_at(unix);
    /// assert!(spec.decide(unix, 1)?.is_admitted());
    /// assert_eq!(spec.decide(unix, 1)?.retry_after(), Duration::from_millis(1375));
    /// assert!(spec.decide(unix + 1_375_000_000, 1)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn starting_at(self, origin: u64) -> Self {
        Self {
            line: Timeline::new(origin),
            state: self.config.cold_start(),
            ..self
        }
    }

    /// Changes the rate (Guava's `setRate`): the stored permits become `stored × new max /
    /// old max`, the same fraction of the new maximum, exactly (the state holds them as the
    /// cooling that stored them, which no rate changes); Guava's `double` product can round
    /// past the maximum by an ulp. Idle time before and after the change stores permits
    /// alike, so the reading of the change does not matter. A queue of reservations
    /// keeps its schedule; earlier reservations can no longer be cancelled. The per-call
    /// bound becomes the one `set_limit` asked for, or the largest the new cold interval
    /// allows if that is smaller.
    ///
    /// Errors as [`WarmUp::set_rate`](crate::WarmUp::set_rate); nothing changes then.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::WarmUpSpec, Rate};
    /// let mut spec = WarmUpSpec::new(Rate::per_second(2)?, Duration::from_secs(4), 3.0)?;
    /// assert_eq!(spec.stored_permits(0), 8.0);
    /// spec.set_rate(0, Rate::per_second(4)?)?;
    /// assert_eq!(spec.stored_permits(0), 16.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&mut self, _now: u64, rate: Rate) -> Result<(), ConfigError> {
        // Guava resyncs under the old curve at `now`, then scales the stored permits by
        // `new max / old max`. On the cooling that stores them both are the identity: it
        // grows by idle time whatever the rate, and stores `cooled × max / W` permits under
        // any curve of one warm-up period. So the state stays as it is, and the reading is
        // not needed (a lock-free cell never learns it).
        self.config = Config::new(rate, self.warm_up, self.cold_factor, self.requested)?
            .installed_after(&self.config);
        Ok(())
    }

    /// The stored permits at `now`, without changing anything.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::{Spec, WarmUpSpec}, Rate};
    /// let mut spec = WarmUpSpec::new(Rate::per_second(2)?, Duration::from_secs(4), 3.0)?;
    /// assert!(spec.decide(0, 8)?.is_admitted());
    /// assert_eq!(spec.stored_permits(0), 0.0);
    /// // Paid off after 6 s; then one permit is stored every 0.5 s.
    /// assert_eq!(spec.stored_permits(7_000_000_000), 2.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stored_permits(&self, now: u64) -> f64 {
        self.config.stored_at(self.state, self.line.since(now))
    }

    /// The current rate.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{spec::WarmUpSpec, Rate};
    /// let spec = WarmUpSpec::new(Rate::per_second(2)?, Duration::from_secs(4), 3.0)?;
    /// assert_eq!(spec.rate(), Rate::per_second(2)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.config.period)
    }
}

impl Spec for WarmUpSpec {
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        let (decision, next) =
            self.config
                .decide(self.state, &self.line, self.line.since(now), n)?;
        if let Some(next) = next {
            self.state = next;
        }
        Ok(decision)
    }

    fn available(&self, now: u64) -> u64 {
        self.config.available(self.state, self.line.since(now))
    }

    /// Sets the per-call bound (`1 ..= floor(2^58 ns / cold interval)`); the state is kept
    /// but the configuration moves to the next epoch, so earlier tickets stop
    /// being cancellable, exactly as in the lock-free limiter.
    fn set_limit(&mut self, _now: u64, limit: u64) -> Result<(), ConfigError> {
        self.config = self
            .config
            .with_limit(limit, self.cold_factor)?
            .installed_after(&self.config);
        self.requested = limit;
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.config.limit
    }

    fn attempt(&mut self, now: u64, n: u64, max_wait: Duration) -> Result<Step, WaitError> {
        let (step, next) =
            self.config
                .step(self.state, &self.line, self.line.since(now), n, max_wait)?;
        if let Some(next) = next {
            self.state = next;
        }
        Ok(step)
    }

    fn try_grant(&mut self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let (admission, next) =
            self.config
                .grant_now(self.state, &self.line, self.line.since(now), n)?;
        if let Some(next) = next {
            self.state = next;
        }
        Ok(admission)
    }

    fn refund(&mut self, _now: u64, ticket: &Ticket) -> u64 {
        match self.config.refund(ticket, &self.line) {
            Some((after, before)) if self.state == after => {
                self.state = before;
                ticket.permits()
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    fn guava() -> WarmUpSpec {
        WarmUpSpec::new(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0).unwrap()
    }

    #[test]
    fn reservations_are_paid_by_the_next_caller() {
        let mut spec = guava();
        let mut moments = Vec::new();
        for _ in 0..8 {
            match spec.attempt(0, 1, Duration::MAX).unwrap() {
                Step::Granted(ticket) => moments.push(ticket.act_at()),
                Step::RetryAfter(_) => unreachable!(),
            }
        }
        let ms = |t: u64| t / 1_000_000;
        assert_eq!(
            moments.into_iter().map(ms).collect::<Vec<_>>(),
            [0, 1375, 2500, 3375, 4000, 4500, 5000, 5500]
        );
    }

    #[test]
    fn cancel_puts_the_state_back_only_while_untouched() {
        let mut spec = guava();
        let Step::Granted(first) = spec.attempt(0, 1, Duration::MAX).unwrap() else {
            unreachable!()
        };
        let Step::Granted(second) = spec.attempt(0, 2, Duration::MAX).unwrap() else {
            unreachable!()
        };
        // The first is no longer the last reservation: cancelling it does nothing.
        spec.refund(0, &first);
        assert_eq!(spec.stored_permits(0), 5.0);
        // The second is: its permits come back and the next caller goes at its time.
        spec.refund(0, &second);
        assert_eq!(spec.stored_permits(0), 7.0);
        assert_eq!(
            spec.decide(0, 1).unwrap().retry_after(),
            Duration::from_millis(1375)
        );
        // Then the first is the last again.
        spec.refund(0, &first);
        assert_eq!(spec.stored_permits(0), 8.0);
        assert!(spec.decide(0, 1).unwrap().is_admitted());
        // A refund is the holder's word that the permits were not used: even once their
        // time has passed, an untouched grant is undone as if it had never been made.
        let before = spec.stored_permits(0);
        let Step::Granted(third) = spec.attempt(0, 1, Duration::MAX).unwrap() else {
            unreachable!()
        };
        assert_eq!(spec.refund(third.act_at() + 1, &third), 1);
        assert_eq!(spec.stored_permits(0), before);
    }

    #[test]
    fn set_limit_bounds_each_call_and_ends_cancellation() {
        let mut spec = guava();
        let Step::Granted(ticket) = spec.attempt(0, 1, Duration::MAX).unwrap() else {
            unreachable!()
        };
        spec.set_limit(0, 3).unwrap();
        assert_eq!(spec.limit(), 3);
        spec.refund(0, &ticket);
        assert_eq!(spec.stored_permits(0), 7.0);
        assert_eq!(
            spec.decide(10 * SECOND, 4),
            Err(ExceedsLimit {
                requested: 4,
                limit: 3
            })
        );
        // A slower rate lowers the bound only if it must.
        spec.set_rate(10 * SECOND, Rate::per_hour(1).unwrap())
            .unwrap();
        assert_eq!(spec.limit(), 3);
        assert!(spec.set_limit(0, u64::MAX).is_err());
        assert_eq!(spec.available(10 * SECOND), 3);
    }
}
