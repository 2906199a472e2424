//! The warm-up curve (Guava's `SmoothWarmingUp`) and every state transition of the warm-up
//! limiter, as pure functions shared by [`WarmUpSpec`](crate::spec::WarmUpSpec) and
//! [`WarmUp`](crate::WarmUp). The arithmetic: [the guide](crate::guide::warm_up).

use std::time::Duration;

use crate::epoch::NEVER;
use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::spec::Step;
use crate::limiter::Decision;
use crate::limiter::{Admission, Grant as Granted, Ticket};
use crate::rate::Rate;

use super::word::{State, MAX_COOLED, MAX_NEXT_FREE};

/// The longest warm-up period and the longest cold interval (`period × cold_factor`): 2^58 ns,
/// about 9 years. One call's cost is at most `n × cold interval`, so the per-call bound
/// `floor(2^58 / cold interval)` keeps every wait below 2^58 ns.
pub(crate) const MAX_SPAN_NANOS: u64 = 1 << 58;

// A warm-up period fits the word's cooling field.
const _: () = assert!(MAX_SPAN_NANOS <= MAX_COOLED);

/// Readings saturate here (2^60 ns, 36 years after the origin): time then stands still,
/// which can only refuse more. With a wait below 2^58 (plus `f64` rounding), an admission at
/// a time at most this schedules the next one before [`MAX_NEXT_FREE`]. It is also the last
/// moment a caller may act at: a `next_free` past it is never reached by the limiter's time,
/// so a refusal until it is [`NEVER`] and no reservation is made for it (the clock, read past
/// this while the limiter's time stands still, would otherwise let such a reservation go at
/// once).
pub(crate) const MAX_NOW: u64 = 1 << 60;

/// Guava's default cold factor.
pub(crate) const DEFAULT_COLD_FACTOR: f64 = 3.0;

/// The warm-up's timeline: `next_free` up to [`MAX_NEXT_FREE`], readings saturated at
/// [`MAX_NOW`].
pub(crate) type Timeline = crate::timeline::Timeline<MAX_NEXT_FREE, MAX_NOW>;

/// The warm-up period in ns, after checking it and the cold factor.
pub(crate) fn validate(warm_up: Duration, cold_factor: f64) -> Result<u64, ConfigError> {
    if !cold_factor.is_finite() || cold_factor < 1.0 {
        return Err(ConfigError::InvalidColdFactor);
    }
    match warm_up.as_nanos() {
        0 => Err(ConfigError::ZeroWarmUp),
        nanos if nanos > u128::from(MAX_SPAN_NANOS) => Err(ConfigError::SpanTooLong {
            what: "the warm-up period",
            nanos,
            max_nanos: MAX_SPAN_NANOS,
        }),
        // At most 2^58, so it fits.
        nanos => Ok(nanos as u64),
    }
}

/// One configuration: the curve of a rate, warm-up and cold factor, and the per-call bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Config {
    /// The stable interval T, in ns.
    pub(crate) period: u64,
    /// Stored permits up to which the interval is T.
    pub(crate) threshold: f64,
    /// The most permits that can be stored.
    pub(crate) max: f64,
    /// How fast the interval climbs above `threshold`, in ns per stored permit.
    pub(crate) slope: f64,
    /// Idle time that stores one permit, in ns: `W / max`.
    pub(crate) cool_down: f64,
    /// The warm-up period `W` in ns (`1 ..= 2^58`): the cooling that stores `max` permits.
    pub(crate) warm_up: u64,
    /// The most permits one call may ask for.
    pub(crate) limit: u64,
    /// One permit reserved from a cold state (`cooled >= W`, `max` stored: the state of a
    /// limiter called less often than its stable rate): [`reserve`](Self::reserve)'s wait
    /// (as `next_free`, from 0) and cooling left, computed once by that same code, so
    /// [`decide_one`](Self::decide_one) skips the curve's floating point with a
    /// bit-identical result.
    pub(crate) full_one: State,
    /// How many reconfigurations came before this configuration was installed (0 for the
    /// first). Tickets carry it, so a reservation made under another configuration is never
    /// cancelled under this one, however a cell's 8-bit label has wrapped.
    pub(crate) epoch: u64,
}

/// The outcome of [`Config::grant`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Grant {
    /// Reserved: the state becomes `next`; the caller may go at `moment`. `before` is the
    /// state right before (after the resync), for the ticket's mark.
    Granted {
        next: State,
        moment: u64,
        before: State,
    },
    /// The caller could not go within its maximum wait; it could in `retry_after` ns.
    Later { retry_after: u64 },
    /// The schedule cannot hold the reservation now (it would end past the timeline's
    /// `end`, 2^61 ns after the origin); it can once the queue ahead has drained, in
    /// `retry_after` ns.
    Beyond { retry_after: u64 },
    /// The caller could go only after [`MAX_NOW`], a moment the limiter's time never
    /// reaches: refused for ever, whatever the wait.
    Never,
}

impl Config {
    /// The curve of one permit every `rate.period()`, warming up over `warm_up_nanos` from
    /// `cold_factor × period`; the per-call bound is `requested`, or the largest the cold
    /// interval allows if that is smaller.
    pub(crate) fn new(
        rate: Rate,
        warm_up_nanos: u64,
        cold_factor: f64,
        requested: u64,
    ) -> Result<Self, ConfigError> {
        let stable = rate.period_nanos() as f64;
        let cold = stable * cold_factor;
        // T >= 1 and the factor is finite: `cold` is a number, possibly infinite.
        if cold > MAX_SPAN_NANOS as f64 {
            return Err(ConfigError::SpanTooLong {
                what: "the cold interval (period × cold factor)",
                // `as` saturates: an infinite product shows as u128::MAX.
                nanos: cold.ceil() as u128,
                max_nanos: MAX_SPAN_NANOS,
            });
        }
        let warm = warm_up_nanos as f64;
        let threshold = 0.5 * warm / stable;
        let max = threshold + 2.0 * warm / (stable + cold);
        let slope = (cold - stable) / (max - threshold);
        // `2 W / (T + C)` below half an ulp of the threshold: `max == threshold`, the slope
        // is infinite (or NaN for a factor of 1) and the warm-up region is gone. (A NaN
        // anywhere makes the slope NaN, so this also refuses it.)
        if max <= threshold || !slope.is_finite() {
            return Err(ConfigError::ColdFactorTooLarge);
        }
        // The cooling is kept in whole ns (`cooled_after`): below 1 ns per permit, spending
        // one would give back all its cooling, and the limiter would never warm up.
        if warm / max < 1.0 {
            return Err(ConfigError::CoolDownBelowOneNanosecond);
        }
        Ok(Self {
            period: rate.period_nanos(),
            threshold,
            max,
            slope,
            cool_down: warm / max,
            warm_up: warm_up_nanos,
            limit: requested.min(max_limit(cold)),
            epoch: 0,
            full_one: State {
                next_free: 0,
                cooled: 0,
            },
        }
        .with_full_one())
    }

    /// This curve with [`full_one`](Self::full_one) filled in: [`reserve`](Self::reserve)'s
    /// general path for one permit from `{ next_free: 0, cooled: W }` (its wait is the new
    /// `next_free`; `W <= 2^58` and a wait of at most `C <= 2^60` never reach `u64::MAX`).
    /// Were it ever to fail, the wait would be `u64::MAX`: the shortcut then refuses (its
    /// end check), never admits for free.
    fn with_full_one(self) -> Self {
        let cold = State {
            next_free: 0,
            cooled: self.warm_up,
        };
        let full_one = self.reserve(cold, 1, u64::MAX);
        debug_assert!(
            full_one.is_some(),
            "one permit from cold fits before u64::MAX"
        );
        Self {
            full_one: full_one.unwrap_or(State {
                next_free: u64::MAX,
                cooled: 0,
            }),
            ..self
        }
    }

    /// This configuration, installed by the reconfiguration that follows `old`'s.
    #[cfg_attr(not(feature = "oracles"), allow(dead_code))]
    pub(crate) fn installed_after(self, old: &Config) -> Self {
        Self {
            // 2^64 reconfigurations cannot happen; wrapping keeps it panic-free regardless.
            epoch: old.epoch.wrapping_add(1),
            ..self
        }
    }

    /// This curve with another per-call bound (`1 ..= the largest the cold interval allows`).
    pub(crate) fn with_limit(self, limit: u64, cold_factor: f64) -> Result<Self, ConfigError> {
        let max = max_limit(self.period as f64 * cold_factor);
        match limit {
            0 => Err(ConfigError::ZeroLimit),
            l if l > max => Err(ConfigError::LimitTooLarge { limit, max }),
            l => Ok(Self { limit: l, ..self }),
        }
    }

    /// The stable interval as Guava's `double`.
    fn stable(&self) -> f64 {
        self.period as f64
    }

    /// The state a new limiter starts in: cold, with `max` permits stored (as Guava does),
    /// that is a whole warm-up period of cooling.
    pub(crate) fn cold_start(&self) -> State {
        State {
            next_free: 0,
            cooled: self.warm_up,
        }
    }

    /// Guava's `resync`, in integers: idle time since `next_free` adds as much cooling, up
    /// to `W`, whatever the rate.
    #[inline]
    pub(crate) fn resync(&self, state: State, now: u64) -> State {
        if now <= state.next_free {
            return state;
        }
        State {
            next_free: now,
            // `cooled <= 2^58` and `now <= 2^61`: no overflow.
            cooled: (state.cooled + (now - state.next_free)).min(self.warm_up),
        }
    }

    /// The permits `cooled` ns of cooling store under this curve: `cooled / cool_down`, at
    /// most `max`, exactly `max` when cold.
    #[inline]
    pub(crate) fn stored(&self, cooled: u64) -> f64 {
        if cooled >= self.warm_up {
            return self.max;
        }
        (cooled as f64 / self.cool_down).min(self.max)
    }

    /// The permits stored at `now` (Guava's `storedPermits` after a resync).
    pub(crate) fn stored_at(&self, state: State, now: u64) -> f64 {
        self.stored(self.resync(state, now).cooled)
    }

    /// The cooling left once `spend` of the `stored` permits that `cooled` holds are spent:
    /// none if all are, else the rest's cooling rounded *up* to a whole ns (more stored
    /// permits only lengthen waits: the guide) and never more than before. One permit thus
    /// spends `floor(cool_down)` ns of cooling, not `cool_down`: the warm-up can take up to
    /// `cool_down / floor(cool_down)` times as long as Guava's (0.1% for a `cool_down` of
    /// 1 µs; `Config::new` refuses one below 1 ns).
    #[inline]
    fn cooled_after(&self, cooled: u64, stored: f64, spend: f64) -> u64 {
        if spend >= stored {
            return 0;
        }
        let exact = (stored - spend) * self.cool_down;
        // `exact.ceil()`, without the libm call `ceil` is on x86_64 without SSE4.1: `as`
        // truncates a non-negative value (and saturates); below 2^53 the comparison is exact,
        // above every `f64` is whole.
        let whole = exact as u64;
        let up = whole.saturating_add(u64::from((whole as f64) < exact));
        up.min(cooled)
    }

    /// Guava's `permitsToTime`: the interval at `permits` above the threshold.
    fn permits_to_time(&self, permits: f64) -> f64 {
        self.stable() + permits * self.slope
    }

    /// Guava's `storedPermitsToWaitTime`: the trapezoid above the threshold (its area
    /// truncated to whole ns) plus `T` per permit below it (truncated too).
    #[inline]
    pub(crate) fn stored_wait(&self, stored: f64, take: f64) -> u64 {
        let above = stored - self.threshold;
        let mut take = take;
        let mut wait = 0u64;
        if above > 0.0 {
            let above_take = above.min(take);
            let length = self.permits_to_time(above) + self.permits_to_time(above - above_take);
            // `as` truncates towards zero like Java's `(long)`, and saturates.
            wait = (above_take * length / 2.0) as u64;
            take -= above_take;
        }
        wait.saturating_add((self.stable() * take) as u64)
    }

    /// Guava's `reserveEarliestAvailable` on a resynced state: spends stored permits first,
    /// then fresh ones at `T`, and pushes `next_free` by their cost. `None` when `next_free`
    /// would pass `end` (at most [`MAX_NEXT_FREE`]).
    #[inline]
    fn reserve(&self, state: State, n: u64, end: u64) -> Option<State> {
        let required = n as f64;
        let stored = self.stored(state.cooled);
        let spend = required.min(stored);
        let fresh = required - spend;
        let wait = self
            .stored_wait(stored, spend)
            .saturating_add((fresh * self.stable()) as u64);
        let next_free = state.next_free.checked_add(wait).filter(|&t| t <= end)?;
        Some(State {
            next_free,
            cooled: self.cooled_after(state.cooled, stored, spend),
        })
    }

    /// Reserves `n >= 1` permits at `now` if the caller can go within `max_wait` ns (Guava's
    /// `canAcquire`, then `reserveEarliestAvailable`) and no later than [`MAX_NOW`],
    /// scheduling no later than `end`.
    #[inline]
    pub(crate) fn grant(&self, state: State, now: u64, n: u64, max_wait: u64, end: u64) -> Grant {
        let state = self.resync(state, now);
        if state.next_free > MAX_NOW {
            // `now <= MAX_NOW`, so the limiter is busy until a moment no reading reaches.
            return Grant::Never;
        }
        // `next_free >= now` after the resync.
        let retry_after = state.next_free - now;
        if retry_after > max_wait {
            return Grant::Later { retry_after };
        }
        match self.reserve(state, n, end) {
            Some(next) => Grant::Granted {
                next,
                moment: state.next_free,
                before: state,
            },
            None => Grant::Beyond { retry_after },
        }
    }

    /// Permits a call could take at `now` without waiting: any number up to `limit` while
    /// the limiter is free (its cost is charged to the next caller), none otherwise.
    pub(crate) fn available(&self, state: State, now: u64) -> u64 {
        if state.next_free <= now {
            self.limit
        } else {
            0
        }
    }

    /// `try_acquire_n(n)` at `now` (ns since `line`'s origin; Guava's `tryAcquire(n, 0)`):
    /// the decision, and the new state if it changes.
    #[inline]
    pub(crate) fn decide(
        &self,
        state: State,
        line: &Timeline,
        now: u64,
        n: u64,
    ) -> Result<(Decision, Option<State>), ExceedsLimit> {
        if let Some(done) =
            crate::limiter::spec::trivial(n, self.limit, || self.available(state, now))?
        {
            return Ok((done, None));
        }
        Ok(match self.grant(state, now, n, 0, line.end) {
            Grant::Granted { next, .. } => (
                Decision::Admitted {
                    remaining: self.available(next, now),
                },
                Some(next),
            ),
            Grant::Later { retry_after } => (
                Decision::Refused {
                    available: 0,
                    retry_after: Duration::from_nanos(retry_after),
                },
                None,
            ),
            Grant::Beyond { retry_after } => (
                Decision::Refused {
                    available: 0,
                    retry_after: beyond(retry_after),
                },
                None,
            ),
            Grant::Never => (
                Decision::Refused {
                    available: 0,
                    retry_after: NEVER,
                },
                None,
            ),
        })
    }

    /// [`decide`](Self::decide)`(state, line, now, 1)`, the lock-free cell's `try_acquire`:
    /// the same result, without the curve's floating point when the call finds the limiter
    /// free and cold (the common case of a limiter called below its stable rate), which
    /// [`full_one`](Self::full_one) holds ready. The spec keeps Guava's formulation, so the
    /// oracle tests check this shortcut against it.
    ///
    /// Why it is the same: one permit is within every per-call bound (at least 1), so
    /// `decide` goes to `grant` with a wait of 0, which reserves from the resynced state when
    /// its `next_free` is `now` (the limiter is free). From `cooled >= W`, `reserve` stores
    /// `max` whatever `cooled` is, so its wait is `full_one`'s; its cooling left is
    /// `up.min(cooled)` for the `up` of `max`, and `full_one.cooled` is `up.min(W)`, so
    /// `full_one.cooled.min(cooled)` is the same when `cooled >= W`.
    #[inline]
    pub(crate) fn decide_one(
        &self,
        state: State,
        line: &Timeline,
        now: u64,
    ) -> Result<(Decision, Option<State>), ExceedsLimit> {
        let resynced = self.resync(state, now);
        if resynced.next_free != now || resynced.cooled < self.warm_up {
            return self.decide(state, line, now, 1);
        }
        let next = resynced
            .next_free
            .checked_add(self.full_one.next_free)
            .filter(|&t| t <= line.end)
            .map(|next_free| State {
                next_free,
                cooled: self.full_one.cooled.min(resynced.cooled),
            });
        Ok(match next {
            Some(next) => (
                Decision::Admitted {
                    remaining: self.available(next, now),
                },
                Some(next),
            ),
            None => (
                Decision::Refused {
                    available: 0,
                    retry_after: beyond(0),
                },
                None,
            ),
        })
    }

    /// One wait step at `now` (ns since `line`'s origin; Guava's `tryAcquire(n, timeout)`): a
    /// reservation whose time is at most `max_wait` away, and the new state if it changes.
    /// The ticket's times are on the clock (`origin + ` the limiter's times), so
    /// [`Reservation::ready_in`](crate::outcome::Reservation::ready_in) and `wait` compare them with
    /// the clock's readings.
    pub(crate) fn step(
        &self,
        state: State,
        line: &Timeline,
        now: u64,
        n: u64,
        max_wait: Duration,
    ) -> Result<(Step, Option<State>), WaitError> {
        if n > self.limit {
            return Err(WaitError::ExceedsLimit(ExceedsLimit {
                requested: n,
                limit: self.limit,
            }));
        }
        if n == 0 {
            return Ok((
                Step::Granted(Ticket::immediate(0, line.on_clock(now))),
                None,
            ));
        }
        match self.grant(state, now, n, crate::limiter::nanos(max_wait), line.end) {
            Grant::Granted {
                next,
                moment,
                before,
            } => {
                let ticket = self.ticket(line, n, now, moment, next, before);
                Ok((Step::Granted(ticket), Some(next)))
            }
            Grant::Later { retry_after } => Err(WaitError::Timeout {
                retry_after: Duration::from_nanos(retry_after),
                timeout: max_wait,
            }),
            Grant::Beyond { retry_after } => Ok((Step::RetryAfter(beyond(retry_after)), None)),
            Grant::Never => Ok((Step::RetryAfter(NEVER), None)),
        }
    }

    /// What refunding `ticket` under this configuration does: `Some((after, before))`,
    /// meaning "if the state is still `after`, the state right after the grant, put back
    /// `before`, the state right before it (resynced at its time)". `None`: nothing to give
    /// back (no permits, or the ticket was made under another configuration: an earlier
    /// one, or none at all). `line` turns the ticket's times on the clock back into the
    /// limiter's. Whether the ticket's time has come does not matter: a refund is the
    /// holder's word that the permits were not used, and `before` is resynced lazily like
    /// any state, so putting it back later is as if the grant had never been made.
    pub(crate) fn refund(&self, ticket: &Ticket, line: &Timeline) -> Option<(State, State)> {
        let mark = State::from_mark(ticket.mark());
        let act = line.since_origin(ticket.act_at());
        let plausible = ticket.epoch() == self.epoch
            && mark.cooled <= self.warm_up
            && act <= mark.next_free
            && ticket.permits() > 0;
        if !plausible {
            return None;
        }
        // The grant spent what `reserve` spends from `mark.cooled` under this configuration
        // (the epoch matches): the same function gives the same state.
        let stored = self.stored(mark.cooled);
        let spend = (ticket.permits() as f64).min(stored);
        let after = State {
            cooled: self.cooled_after(mark.cooled, stored, spend),
            ..mark
        };
        let before = State {
            next_free: act,
            ..mark
        };
        Some((after, before))
    }

    /// `try_grant(n)` at `now` (ns since `line`'s origin): as [`decide`](Self::decide), with
    /// a ticket a refund can undo (the reservation of [`step`](Self::step) with no wait),
    /// its times on the clock.
    pub(crate) fn grant_now(
        &self,
        state: State,
        line: &Timeline,
        now: u64,
        n: u64,
    ) -> Result<(Admission, Option<State>), ExceedsLimit> {
        if let Some(done) =
            crate::limiter::spec::trivial(n, self.limit, || self.available(state, now))?
        {
            let remaining = match done {
                Decision::Admitted { remaining } => remaining,
                Decision::Refused { available, .. } => available,
            };
            let ticket = Ticket::immediate(0, line.on_clock(now));
            return Ok((Admission::Granted(Granted::new(ticket, remaining)), None));
        }
        Ok(match self.grant(state, now, n, 0, line.end) {
            Grant::Granted {
                next,
                moment,
                before,
            } => {
                let ticket = self.ticket(line, n, now, moment, next, before);
                let remaining = self.available(next, now);
                (
                    Admission::Granted(Granted::new(ticket, remaining)),
                    Some(next),
                )
            }
            Grant::Later { retry_after } => (
                Admission::Refused {
                    available: 0,
                    retry_after: Duration::from_nanos(retry_after),
                },
                None,
            ),
            Grant::Beyond { retry_after } => (
                Admission::Refused {
                    available: 0,
                    retry_after: beyond(retry_after),
                },
                None,
            ),
            Grant::Never => (
                Admission::Refused {
                    available: 0,
                    retry_after: NEVER,
                },
                None,
            ),
        })
    }

    /// The ticket of a grant of `n` at `now` that may act at `moment` and left the state
    /// `next`: its mark is `next` with the cooling it found (what a refund puts back), its
    /// times on the clock, its epoch this configuration's.
    fn ticket(
        &self,
        line: &Timeline,
        n: u64,
        now: u64,
        moment: u64,
        next: State,
        before: State,
    ) -> Ticket {
        let mark = State {
            cooled: before.cooled,
            ..next
        };
        Ticket::new(n, line.on_clock(now), line.on_clock(moment), mark.mark())
            .with_epoch(self.epoch)
    }

    /// The time (ns since the origin) from which `state` is indistinguishable from a fresh
    /// cold one (free, with `W` of cooling), or `None` if it already is at `now`.
    pub(crate) fn idle_from(&self, state: State, now: u64) -> Option<u64> {
        // `cooled <= W`: the cooling still missing; `next_free < 2^61`, no overflow.
        let cold_at = state.next_free + (self.warm_up - state.cooled.min(self.warm_up));
        (cold_at > now).then_some(cold_at)
    }
}

/// The retry time of a refusal at `now` by a limiter busy until `next_free` (`now <
/// next_free`): the time between, or [`NEVER`] when `next_free` lies past [`MAX_NOW`], the
/// last reading the limiter's time reaches. What [`Config::decide`] says of a busy state,
/// for the cell's refusals that skip it.
#[inline]
pub(crate) fn until_free(next_free: u64, now: u64) -> Duration {
    if next_free > MAX_NOW {
        NEVER
    } else {
        Duration::from_nanos(next_free - now)
    }
}

/// The retry time of a reservation the schedule cannot hold: until the queue ahead drains,
/// or [`NEVER`] with no queue ahead (the call goes at `now` and still ends past the
/// schedule's end; waiting only moves its start later).
fn beyond(retry_after: u64) -> Duration {
    match retry_after {
        0 => NEVER,
        nanos => Duration::from_nanos(nanos),
    }
}

/// The largest per-call bound for a cold interval of `cold` ns (at most 2^58): at least 1.
fn max_limit(cold: f64) -> u64 {
    ((MAX_SPAN_NANOS as f64 / cold) as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guava_example() -> Config {
        // Guava's testWarmUp: 2 permits/s, 4 s warm-up, cold factor 3.
        let rate = Rate::per_second(2).unwrap();
        Config::new(rate, 4_000_000_000, 3.0, u64::MAX).unwrap()
    }

    /// `decide_one` is `decide(.., 1)`: over periods, warm-ups, cold factors (including
    /// ones whose `max` is below one permit), states around cold and free, and ends that
    /// cut the schedule.
    #[test]
    fn decide_one_is_decide_of_one() {
        let mut checked = 0;
        for period in [1, 3, 4, 7, 1000, 999_983, 3_600_000_000_000] {
            for warm_up in [1, 2, 100, 1_000_000, 123_456_789, 1 << 40] {
                for factor in [1.5, 2.0, 3.0, 7.25, 100.0] {
                    let Ok(config) =
                        Config::new(Rate::from_period_nanos(period), warm_up, factor, u64::MAX)
                    else {
                        continue;
                    };
                    for cooled in [0, warm_up / 2, warm_up - 1, warm_up] {
                        for (next_free, now) in
                            [(0, 0), (0, 5), (100, 100), (100, 99), (7, 1 << 40)]
                        {
                            for end in [MAX_NEXT_FREE, now + 1, now + period] {
                                let line = Timeline { origin: 0, end };
                                let state = State { next_free, cooled };
                                assert_eq!(
                                    config.decide_one(state, &line, now),
                                    config.decide(state, &line, now, 1),
                                    "T {period} W {warm_up} factor {factor} {state:?} at {now} end {end}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    /// `decide_one` against `decide(.., 1)` on pseudo-random curves, in and around
    /// the shortcut's region (free and cold), with ends cutting the schedule.
    #[test]
    fn decide_one_matches_the_curve_on_random_states() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut shortcut = 0;
        for i in 0..300_000u64 {
            let period = match i % 3 {
                0 => 1 + next() % 1000,
                1 => 1 + next() % (1 << 40),
                _ => 1 + next() % (1 << 56),
            };
            let warm_up = match i % 4 {
                0 => 1 + next() % 1000,
                1 => 1 + next() % (1 << 58),
                2 => 1 << 58,
                _ => 1 + next() % (1 << 30),
            };
            let factor = [1.0000001, 1.5, 2.0, 3.0, 7.25, 100.0, 1e6][(next() % 7) as usize]
                + (next() % 1000) as f64 / 997.0;
            let Ok(config) =
                Config::new(Rate::from_period_nanos(period), warm_up, factor, u64::MAX)
            else {
                continue;
            };
            let now = next() % MAX_NOW;
            let next_free = match i % 3 {
                0 => now,
                1 => now.saturating_sub(next() % (2 * warm_up)),
                _ => now + next() % 3,
            };
            let cooled = match i % 2 {
                0 => warm_up,
                _ => warm_up - next() % warm_up.min(3),
            };
            let wait = config.full_one.next_free;
            for end in [
                MAX_NEXT_FREE,
                now + wait,
                (now + wait).saturating_sub(1),
                now,
                now + 1,
            ] {
                let line = Timeline {
                    origin: 0,
                    end: end.min(MAX_NEXT_FREE),
                };
                let state = State { next_free, cooled };
                let resynced = config.resync(state, now);
                if resynced.next_free == now && resynced.cooled >= warm_up {
                    shortcut += 1;
                }
                assert_eq!(
                    config.decide_one(state, &line, now),
                    config.decide(state, &line, now, 1),
                    "{config:?} {state:?} at {now} end {end}"
                );
            }
        }
        assert!(shortcut > 100_000, "{shortcut}");
    }

    #[test]
    fn the_curve_is_guavas() {
        let config = guava_example();
        assert_eq!(config.threshold, 4.0);
        assert_eq!(config.max, 8.0);
        assert_eq!(config.slope, 250_000_000.0);
        assert_eq!(config.cool_down, 500_000_000.0);
        // 2^58 ns / 1.5 s.
        assert_eq!(config.limit, (MAX_SPAN_NANOS as f64 / 1.5e9) as u64);
        // The whole trapezoid: (T + C) / 2 per permit above the threshold.
        assert_eq!(config.stored_wait(8.0, 4.0), 4_000_000_000);
        assert_eq!(config.stored_wait(8.0, 8.0), 6_000_000_000);
        assert_eq!(config.stored_wait(8.0, 1.0), 1_375_000_000);
        assert_eq!(config.stored_wait(3.0, 1.5), 750_000_000);
    }

    #[test]
    fn waits_truncate_like_guava() {
        // 1 ns period: a fraction of a permit below the threshold costs 0 ns, as Guava's
        // `(long)` cast gives.
        let rate = Rate::every(Duration::from_nanos(1)).unwrap();
        let config = Config::new(rate, 100, 9.0, u64::MAX).unwrap();
        assert_eq!(config.stored_wait(0.3, 0.3), 0);
        // 1 ns of cooling stores 0.7 permits (cool_down 100 / 70 ns): 0.7 stored and 0.3
        // fresh, each truncated to 0 ns.
        let state = State {
            next_free: 10,
            cooled: 1,
        };
        assert!((config.stored(1) - 0.7).abs() < 1e-12);
        let next = config.reserve(state, 1, MAX_NEXT_FREE).unwrap();
        assert_eq!(
            next,
            State {
                next_free: 10,
                cooled: 0
            }
        );
    }

    #[test]
    fn bad_configurations_are_errors() {
        let rate = Rate::per_second(2).unwrap();
        let second = Duration::from_secs(1);
        for factor in [0.99, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                validate(second, factor),
                Err(ConfigError::InvalidColdFactor)
            );
        }
        assert_eq!(validate(second, 1.0), Ok(1_000_000_000));
        assert_eq!(validate(Duration::ZERO, 3.0), Err(ConfigError::ZeroWarmUp));
        assert!(matches!(
            validate(Duration::from_nanos(MAX_SPAN_NANOS + 1), 3.0),
            Err(ConfigError::SpanTooLong { .. })
        ));
        assert!(validate(Duration::from_nanos(MAX_SPAN_NANOS), 3.0).is_ok());
        let slow = Rate::every(Duration::from_nanos(crate::rate::MAX_PERIOD_NANOS)).unwrap();
        assert!(matches!(
            Config::new(slow, 1, 4.5, u64::MAX),
            Err(ConfigError::SpanTooLong { .. })
        ));
        // 4 × 2^56 = 2^58: the longest cold interval, one permit per call.
        let config = Config::new(slow, 1, 4.0, u64::MAX).unwrap();
        assert_eq!(config.limit, 1);
        assert_eq!(
            config.with_limit(2, 4.0),
            Err(ConfigError::LimitTooLarge { limit: 2, max: 1 })
        );
        assert_eq!(config.with_limit(0, 4.0), Err(ConfigError::ZeroLimit));
        assert!(Config::new(rate, 1, f64::MAX, u64::MAX).is_err());
    }

    #[test]
    fn no_reservation_acts_past_2_pow_60_or_ends_past_the_schedule() {
        let config = guava_example();
        // Busy until past 2^60 ns, which readings never pass: never, whatever the wait.
        let late = State {
            next_free: MAX_NOW + 1,
            cooled: 0,
        };
        for now in [0, MAX_NOW - 1, MAX_NOW] {
            assert_eq!(
                config.grant(late, now, 1, u64::MAX, MAX_NEXT_FREE),
                Grant::Never
            );
        }
        assert_eq!(until_free(MAX_NOW + 1, MAX_NOW), NEVER);
        // Busy until 2^60 ns exactly: reachable, reserved.
        let last = State {
            next_free: MAX_NOW,
            cooled: 0,
        };
        assert!(matches!(
            config.grant(last, MAX_NOW - 100, 1, 100, MAX_NEXT_FREE),
            Grant::Granted {
                moment: MAX_NOW,
                ..
            }
        ));
        assert_eq!(
            until_free(MAX_NOW, MAX_NOW - 100),
            Duration::from_nanos(100)
        );
        // A schedule that ends early (a clock origin near `u64::MAX`): behind a queue, a
        // reservation that would end past it waits for the queue to drain.
        let queued = State {
            next_free: 2_800_000_000,
            cooled: 0,
        };
        assert_eq!(
            config.grant(queued, 1_000_000_000, 1, u64::MAX, 3_000_000_000),
            Grant::Beyond {
                retry_after: 1_800_000_000
            }
        );
        // An admission at the saturated time still fits the largest call.
        let free = config.cold_start();
        assert!(matches!(
            config.grant(free, MAX_NOW, config.limit, 0, MAX_NEXT_FREE),
            Grant::Granted { .. }
        ));
    }

    #[test]
    fn a_vanishing_warm_up_part_is_an_error() {
        let one_ns = Rate::every(Duration::from_nanos(1)).unwrap();
        let huge = (1u64 << 55) as f64;
        // 2 W / (T + C) = 2^21 / (1 + 2^55) is below half an ulp of the threshold 2^19.
        assert_eq!(
            Config::new(one_ns, 1 << 20, huge, u64::MAX),
            Err(ConfigError::ColdFactorTooLarge)
        );
        let config = Config::new(one_ns, 1 << 20, huge / 2.0, u64::MAX).unwrap();
        assert!(config.max > config.threshold && config.slope.is_finite());
        // A factor of 1 has a flat curve: slope 0, accepted (at 2 ns: at 1 ns its cool-down,
        // 2/3 ns, is below the whole ns the cooling is kept in).
        let two_ns = Rate::every(Duration::from_nanos(2)).unwrap();
        assert_eq!(
            Config::new(two_ns, 1 << 20, 1.0, u64::MAX).unwrap().slope,
            0.0
        );
        assert_eq!(
            Config::new(one_ns, 1 << 20, 1.0, u64::MAX),
            Err(ConfigError::CoolDownBelowOneNanosecond)
        );
    }

    #[test]
    fn epochs_count_reconfigurations_and_cooling_converts_both_ways() {
        let rate = Rate::per_second(3).unwrap();
        let old = Config::new(rate, 4_000_000_000, 3.0, u64::MAX).unwrap();
        let new = old.installed_after(&old);
        assert_eq!((old.epoch, new.epoch), (0, 1));
        assert_eq!(new.installed_after(&new).epoch, 2);
        // Epochs never overflow into a panic.
        let last = Config {
            epoch: u64::MAX,
            ..old
        };
        assert_eq!(old.installed_after(&last).epoch, 0);
        // Guava's example: 0.5 s of cooling per permit, 8 at most.
        let guava = guava_example();
        assert_eq!(guava.stored(4_000_000_000), 8.0);
        assert_eq!(guava.stored(1_000_000_000), 2.0);
        assert_eq!(guava.cooled_after(4_000_000_000, 8.0, 6.0), 1_000_000_000);
        assert_eq!(guava.cooled_after(4_000_000_000, 8.0, 8.0), 0);
        // Rounded up to a whole ns, never above what was there.
        assert_eq!(guava.cooled_after(3, 6e-9, 1e-9), 3);
        assert_eq!(guava.cooled_after(7, 8e-9, 6.5e-9), 1);
    }

    #[test]
    fn resync_adds_idle_time_up_to_the_warm_up() {
        let guava = guava_example();
        let state = State {
            next_free: 1_000,
            cooled: 0,
        };
        let resynced = guava.resync(state, 1_000 + 500_000_000);
        assert_eq!(
            resynced,
            State {
                next_free: 500_001_000,
                cooled: 500_000_000
            }
        );
        assert_eq!(guava.stored_at(state, 1_000 + 500_000_000), 1.0);
        assert_eq!(guava.stored_at(state, MAX_NOW), 8.0);
        // A reading before `next_free` stores nothing.
        assert_eq!(guava.resync(state, 10), state);
    }

    #[test]
    fn idle_from_is_when_the_cooling_reaches_the_warm_up() {
        let guava = guava_example();
        let state = State {
            next_free: 100,
            cooled: 3_000_000_000,
        };
        assert_eq!(guava.idle_from(state, 0), Some(1_000_000_100));
        assert_eq!(guava.idle_from(state, 1_000_000_099), Some(1_000_000_100));
        assert_eq!(guava.idle_from(state, 1_000_000_100), None);
    }

    #[test]
    fn cancel_needs_the_epoch_the_ticket_was_made_under() {
        let config = guava_example();
        let line = Timeline::new(0);
        let state = config.cold_start();
        let (step, next) = config.step(state, &line, 0, 2, Duration::MAX).unwrap();
        let (Step::Granted(ticket), Some(next)) = (step, next) else {
            unreachable!()
        };
        assert_eq!(ticket.epoch(), 0);
        let (after, before) = config.refund(&ticket, &line).unwrap();
        assert_eq!((after, before), (next, state));
        // Same curve, another epoch: nothing to give back.
        let later = Config { epoch: 8, ..config };
        assert_eq!(later.refund(&ticket, &line), None);
        let (step, _) = later.step(state, &line, 0, 2, Duration::MAX).unwrap();
        let Step::Granted(ticket) = step else {
            unreachable!()
        };
        assert_eq!(ticket.epoch(), 8);
        assert!(later.refund(&ticket, &line).is_some());
        assert_eq!(config.refund(&ticket, &line), None);
    }
}
