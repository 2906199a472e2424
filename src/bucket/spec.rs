//! The bucket family's transition arithmetic, shared bit-for-bit by the sequential specs
//! ([`TokenBucketSpec`](crate::spec::TokenBucketSpec),
//! [`LeakyBucketSpec`](crate::spec::LeakyBucketSpec)) and the lock-free engine.
//!
//! Every function here is pure: it takes the state's time (`tat` for a meter, `next` for a
//! shaper) and a reading, both in nanoseconds since the limiter's origin and clamped to
//! [`CLAMP`], and returns what the state becomes. The specs apply the result to a field;
//! the engine applies it with one CAS.

use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::spec::{Spec, Step};
use crate::limiter::Decision;
use crate::limiter::{Admission, Ticket};
use crate::rate::Rate;

use super::word::{CLAMP, MAX_SPAN_NANOS, MAX_TIME};

/// Which rule decides: a GCRA meter (token bucket, leaky bucket as a meter) or a shaper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Admit iff `max(tat, now) + n·T - now <= τ`.
    Meter,
    /// Schedule at `max(next, now)`, refuse if that is more than `max_wait` away.
    Shaper,
}

/// How a meter converts when its burst does not shrink (see [`Params::convert`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Growth {
    /// Keep the permits available at the change (golang's `SetBurstAt`): a raised burst
    /// fills over time, a full bucket included. The limiters and their specs.
    #[default]
    KeepPermits,
    /// Keep the debt (the permits missing from a full bucket), scaled to the new period: a
    /// raised burst adds its extra permits at once, and a full bucket stays full, so that
    /// it stays indistinguishable from a fresh one (which a keyed limiter's eviction
    /// relies on). A shrinking burst keeps the permits, as above (a full bucket stays full
    /// then too).
    KeepDebt,
}

/// One configuration: what a slot of the engine holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) mode: Mode,
    /// T: nanoseconds per permit, `1..=MAX_PERIOD_NANOS`.
    pub(crate) period: u64,
    /// Meter: τ = burst × T. Shaper: the maximum wait. At most [`MAX_SPAN_NANOS`].
    pub(crate) span: u64,
    /// The most permits one call may take: the burst (meter) or the per-call bound
    /// (shaper), with `limit × period <= MAX_SPAN_NANOS`.
    pub(crate) limit: u64,
}

/// What a decision does: admit by moving the time, or refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Admit: the state's time becomes this.
    Admit(u64),
    /// Refuse, retry after this long; nothing changes. The permits available then are
    /// [`Params::available`], worked out only by a caller that reports them (a division:
    /// `try_acquire` needs only the verdict).
    Refuse(Duration),
}

/// A reservation worked out: the time the permits may be used and the state's new time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scheduled {
    pub(crate) act: u64,
    pub(crate) time: u64,
}

/// "Never, within this limiter's arithmetic": the retry time of a schedule past the end.
const NEVER: Duration = Duration::MAX;

/// The span `count × period`, checked against [`MAX_SPAN_NANOS`].
pub(crate) fn span(what: &'static str, count: u64, period: u64) -> Result<u64, ConfigError> {
    let nanos = u128::from(count) * u128::from(period);
    if nanos > u128::from(MAX_SPAN_NANOS) {
        return Err(ConfigError::SpanTooLong {
            what,
            nanos,
            max_nanos: MAX_SPAN_NANOS,
        });
    }
    // At most 2^60: the cast is exact.
    Ok(nanos as u64)
}

/// A shaper's maximum wait in nanoseconds, checked against [`MAX_SPAN_NANOS`].
pub(crate) fn max_wait_nanos(max_wait: Duration) -> Result<u64, ConfigError> {
    let nanos = max_wait.as_nanos();
    if nanos > u128::from(MAX_SPAN_NANOS) {
        return Err(ConfigError::SpanTooLong {
            what: "the maximum wait",
            nanos,
            max_nanos: MAX_SPAN_NANOS,
        });
    }
    // At most 2^60: the cast is exact.
    Ok(nanos as u64)
}

/// The longest time `max_wait` can mean, in nanoseconds (saturating).
fn wait_nanos(max_wait: Duration) -> u64 {
    u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX)
}

impl Params {
    /// A meter (GCRA) of `burst` permits refilling at `rate`.
    pub(crate) fn meter(rate: Rate, burst: u64) -> Result<Self, ConfigError> {
        Self {
            mode: Mode::Meter,
            period: rate.period_nanos(),
            span: 0,
            limit: 0,
        }
        .limited(burst)
    }

    /// A shaper at `rate` queueing callers up to `max_wait`, granting at most `cap` (clipped
    /// to [`shaper_bound`](Self::shaper_bound)) permits per call.
    pub(crate) fn shaper(rate: Rate, max_wait: Duration, cap: u64) -> Result<Self, ConfigError> {
        Self {
            mode: Mode::Shaper,
            period: rate.period_nanos(),
            span: max_wait_nanos(max_wait)?,
            limit: 1,
        }
        .limited(cap)
    }

    /// The same kind of limiter at `rate`, keeping the burst (meter: `SpanTooLong` if
    /// `burst × period` no longer fits) or the per-call cap `cap` (shaper, clipped to the
    /// bound at the new rate).
    pub(crate) fn with_rate(self, rate: Rate, cap: u64) -> Result<Self, ConfigError> {
        let limit = match self.mode {
            Mode::Meter => self.limit,
            Mode::Shaper => cap,
        };
        Self {
            period: rate.period_nanos(),
            ..self
        }
        .limited(limit)
    }

    /// A shaper's configuration with a new maximum wait, its per-call limit the cap `cap`
    /// clipped to the bound at the new wait; [`ConfigError::NotAShaper`] on a meter.
    pub(crate) fn with_max_wait(self, max_wait: Duration, cap: u64) -> Result<Self, ConfigError> {
        match self.mode {
            Mode::Meter => Err(ConfigError::NotAShaper),
            Mode::Shaper => Self {
                span: max_wait_nanos(max_wait)?,
                ..self
            }
            .limited(cap),
        }
    }

    /// This configuration with a new per-call limit: the burst of a meter (τ follows), the
    /// per-call cap of a shaper (clipped to [`shaper_bound`](Self::shaper_bound)).
    pub(crate) fn limited(self, limit: u64) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroBurst);
        }
        Ok(match self.mode {
            Mode::Meter => Self {
                span: span("burst × period", limit, self.period)?,
                limit,
                ..self
            },
            Mode::Shaper => Self {
                limit: limit.min(self.shaper_bound()),
                ..self
            },
        })
    }

    /// A shaper's largest per-call limit, `max(1, ⌊max_wait / T⌋)`: a call delays the next
    /// one by `n·T`, so no call imposes on its successor a wait longer than `max(T,
    /// max_wait)` (at most [`MAX_SPAN_NANOS`]: `limit × period` always fits).
    pub(crate) fn shaper_bound(&self) -> u64 {
        (self.span / self.period).max(1)
    }

    /// `Err(ExceedsLimit)` when `n` permits can never be granted at once.
    pub(crate) fn check(&self, n: u64) -> Result<(), ExceedsLimit> {
        if n > self.limit {
            return Err(ExceedsLimit {
                requested: n,
                limit: self.limit,
            });
        }
        Ok(())
    }

    /// Permits that could be taken at `now` from a state at `time`, with `end` the latest
    /// time the state may take: exactly the largest `n` that [`decide`](Self::decide) would
    /// admit (ignoring the per-call limit of a meter, its burst anyway).
    ///
    /// Meter: `⌊(min(now + τ, end) - max(time, now)) / T⌋` (0 when negative). Shaper, if a
    /// call would go at once (`time <= now`): the per-call limit, or fewer where the end is
    /// nearer (`⌊(end - now) / T⌋`); else 0.
    pub(crate) fn available(&self, time: u64, now: u64, end: u64) -> u64 {
        match self.mode {
            Mode::Meter => {
                // `now <= CLAMP` and `span <= MAX_SPAN_NANOS`: the sum fits.
                (now + self.span).min(end).saturating_sub(time.max(now)) / self.period
            }
            Mode::Shaper if time <= now => self.limit.min(end.saturating_sub(now) / self.period),
            Mode::Shaper => 0,
        }
    }

    /// The time `n` permits from `base` move the state to, if it is at most `end`.
    ///
    /// Checked: with a consistent configuration `n·T <= MAX_SPAN_NANOS` and `base <= CLAMP`,
    /// so nothing overflows; a configuration read torn (the engine's ABA residual, in
    /// [the guide](crate::guide::bucket#the-aba-residual)) may pair one slot's limit with
    /// another's period, and then the product is refused as past the end instead of
    /// overflowing.
    #[inline]
    fn advance(&self, base: u64, n: u64, end: u64) -> Option<u64> {
        n.checked_mul(self.period)
            .and_then(|cost| base.checked_add(cost))
            .filter(|&new| new <= end)
    }

    /// Decides `n` permits (`1..=limit`) at `now` from a state at `time`; `end` is the
    /// latest time the state may take.
    #[inline]
    pub(crate) fn decide(&self, time: u64, now: u64, n: u64, end: u64) -> Verdict {
        let base = time.max(now);
        let Some(new) = self.advance(base, n, end) else {
            return Verdict::Refuse(NEVER);
        };
        match self.mode {
            Mode::Meter if new - now <= self.span => Verdict::Admit(new),
            Mode::Meter => Verdict::Refuse(Duration::from_nanos(new - now - self.span)),
            Mode::Shaper if base == now => Verdict::Admit(new),
            Mode::Shaper => Verdict::Refuse(Duration::from_nanos(base - now)),
        }
    }

    /// The refusal [`decide`](Self::decide) meant by `retry_after`, with the permits
    /// available at `now` from a state at `time`.
    pub(crate) fn refused(&self, time: u64, now: u64, end: u64, retry_after: Duration) -> Decision {
        Decision::Refused {
            available: self.available(time, now, end),
            retry_after,
        }
    }

    /// Schedules `n` permits (`1..=limit`) at `now` from a state at `time`, if they can be
    /// used within `max_wait` (for a shaper, within its own maximum wait too).
    pub(crate) fn schedule(
        &self,
        time: u64,
        now: u64,
        n: u64,
        max_wait: Duration,
        end: u64,
    ) -> Result<Scheduled, WaitError> {
        let base = time.max(now);
        let limit = match self.mode {
            Mode::Meter => wait_nanos(max_wait),
            Mode::Shaper => wait_nanos(max_wait).min(self.span),
        };
        let Some(new) = self.advance(base, n, end) else {
            return Err(WaitError::Timeout {
                retry_after: NEVER,
                timeout: Duration::from_nanos(limit),
            });
        };
        let act = match self.mode {
            Mode::Meter => new.saturating_sub(self.span).max(now),
            Mode::Shaper => base,
        };
        if act - now > limit {
            return Err(WaitError::Timeout {
                retry_after: Duration::from_nanos(act - now),
                timeout: Duration::from_nanos(limit),
            });
        }
        Ok(Scheduled { act, time: new })
    }

    /// What refunding `ticket` at `now` makes of a state at `time` under the configuration
    /// numbered `epoch`: `Some((time', restored))`, the time minus
    /// `restore = min(n·T - (time - mark), mark - now)` (0 when negative) and the whole
    /// permits that gives back; `None` when nothing is left to give back.
    ///
    /// - `n·T - (time - mark)` is golang's `Reservation.Cancel` amount: the part no later
    ///   admission or reservation has been scheduled behind.
    /// - `mark - now` bounds it by the part of the grant's schedule still ahead of the clock,
    ///   i.e. `time' >= now + (time - mark)`: what came after the grant stays scheduled
    ///   behind `now`, and time the bucket has already refilled (before `now`) is never
    ///   given back twice. Before a reservation's time to act the first term is the smaller
    ///   (golang's amount); later the refund restores only what is still ahead, and once the
    ///   clock passes the mark, nothing. A full refund right after the grant is exactly as
    ///   if it had never been made.
    /// - A ticket made under another configuration (its epoch is not `epoch`) restores
    ///   nothing: its mark is a time of the old frame, which the conversion changed.
    pub(crate) fn refund(
        &self,
        epoch: u64,
        time: u64,
        now: u64,
        ticket: &Ticket,
    ) -> Option<(u64, u64)> {
        if ticket.permits() == 0 || ticket.epoch() != epoch {
            return None;
        }
        let mark = u64::try_from(ticket.mark()).ok()?;
        let reserved_after = time.saturating_sub(mark);
        let restore = ticket
            .permits()
            .saturating_mul(self.period)
            .saturating_sub(reserved_after)
            .min(mark.saturating_sub(now))
            .min(time);
        (restore > 0).then(|| (time - restore, restore / self.period))
    }

    /// The state's time after switching from this configuration to `new` at `now`.
    ///
    /// Meter (golang's `SetLimitAt`/`SetBurstAt`): the permits available at the change are
    /// kept. The change happens at `c = max(now, time - τ)`: with a monotonic clock that is
    /// `now` unless reservations have queued callers past a burst ahead (then the queue
    /// stands and the new rate starts where it ends, so no later caller is served before a
    /// queued one); with a reading older than the last admission's (a clock that ran
    /// backwards) it bounds what the older reading can mint, see the type docs. With the
    /// debt `d = time - c` (at most τ), the new debt is `max(0, τ' - (τ - d)·T'/T)`, rounded
    /// up so the change never mints a permit, and the time becomes `c + d'` (at most `end`:
    /// past it, nothing is admitted anyway). Under [`Growth::KeepDebt`], when the burst does
    /// not shrink, the new debt is `d·T'/T` instead (the same permits missing), rounded up.
    /// Both are nondecreasing in `time`, and leave a full bucket (`d = 0`) full when the
    /// burst shrinks; only `KeepDebt` does when it grows.
    /// Shaper: the schedule stands; only later calls see the new configuration.
    pub(crate) fn convert(&self, new: &Self, time: u64, now: u64, end: u64, growth: Growth) -> u64 {
        if self.mode == Mode::Shaper {
            return time;
        }
        let at = now.max(time.saturating_sub(self.span));
        // At most τ, since `at >= time - τ`.
        let debt = time.saturating_sub(at);
        if growth == Growth::KeepDebt && new.limit >= self.limit {
            // The debt in the new period, rounded up; at most τ' (d ≤ τ = b·T, so
            // d·T'/T ≤ b·T' ≤ b'·T' = τ'), clipped anyway.
            let debt =
                (u128::from(debt) * u128::from(new.period)).div_ceil(u128::from(self.period));
            let time = u128::from(at) + debt.min(u128::from(new.span));
            // Clipped at `end <= MAX_TIME`, so the cast is exact.
            return time.min(u128::from(end)) as u64;
        }
        // Time of the permits still in the bucket, in the new period, rounded down.
        let free = u128::from(self.span - debt) * u128::from(new.period) / u128::from(self.period);
        let time = u128::from(at) + u128::from(new.span).saturating_sub(free);
        // Clipped at `end <= MAX_TIME`, so the cast is exact.
        time.min(u128::from(end)) as u64
    }
}

/// The bucket family's timeline: state times up to [`MAX_TIME`], readings clamped at
/// [`CLAMP`].
pub(crate) type Timeline = crate::timeline::Timeline<MAX_TIME, CLAMP>;

impl Timeline {
    /// The ticket of `n` permits granted at `now_raw` under the configuration numbered
    /// `epoch`, usable at `scheduled.act`.
    pub(crate) fn ticket(&self, n: u64, now_raw: u64, scheduled: Scheduled, epoch: u64) -> Ticket {
        // `act <= time <= end <= u64::MAX - origin`: the sum cannot overflow.
        Ticket::new(
            n,
            now_raw.max(self.origin),
            self.origin + scheduled.act,
            u128::from(scheduled.time),
        )
        .with_epoch(epoch)
    }
}

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
pub(crate) use delegate_spec;

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(period: u64, burst: u64) -> Params {
        Params {
            mode: Mode::Meter,
            period,
            span: period * burst,
            limit: burst,
        }
    }

    #[test]
    fn meter_admits_a_burst_then_one_per_period() {
        let c = meter(10, 3);
        let end = MAX_TIME;
        let mut tat = 0;
        for _ in 0..3 {
            match c.decide(tat, 0, 1, end) {
                Verdict::Admit(t) => tat = t,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(tat, 30);
        assert_eq!(
            c.decide(tat, 0, 1, end),
            Verdict::Refuse(Duration::from_nanos(10))
        );
        assert_eq!(
            c.refused(tat, 0, end, Duration::from_nanos(10)),
            Decision::Refused {
                available: 0,
                retry_after: Duration::from_nanos(10)
            }
        );
        assert_eq!(c.decide(tat, 10, 1, end), Verdict::Admit(40));
        assert_eq!(c.available(40, 25, end), 1);
        // Past the end: refused, never wrapped, and nothing is available.
        assert_eq!(c.decide(0, end - 5, 1, end), Verdict::Refuse(NEVER));
        assert_eq!(c.available(0, end - 5, end), 0);
        // Near it: only what fits before the end.
        assert_eq!(c.available(0, end - 25, end), 2);
        assert_eq!(c.decide(0, end - 25, 2, end), Verdict::Admit(end - 5));
        assert_eq!(c.decide(0, end - 25, 3, end), Verdict::Refuse(NEVER));
    }

    #[test]
    fn available_is_the_largest_admissible_n() {
        let end = 1_000;
        for c in [
            meter(7, 5),
            Params {
                mode: Mode::Shaper,
                period: 7,
                span: 30,
                limit: 4,
            },
        ] {
            for time in (0..=end).step_by(13) {
                for now in (0..=end + 40).step_by(11) {
                    let available = c.available(time, now, end);
                    let admits = |n| matches!(c.decide(time, now, n, end), Verdict::Admit(_));
                    assert!(available == 0 || admits(available), "{c:?} {time} {now}");
                    if available < c.limit {
                        assert!(!admits(available + 1), "{c:?} {time} {now}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_torn_configuration_never_overflows() {
        // The largest limit with the largest period (never one configuration: their product
        // is 2^116), at the largest reading.
        let torn = Params {
            mode: Mode::Meter,
            period: 1 << 56,
            span: MAX_SPAN_NANOS,
            limit: MAX_SPAN_NANOS,
        };
        for mode in [Mode::Meter, Mode::Shaper] {
            let torn = Params { mode, ..torn };
            for now in [0, CLAMP] {
                assert_eq!(
                    torn.decide(MAX_TIME, now, MAX_SPAN_NANOS, MAX_TIME),
                    Verdict::Refuse(NEVER)
                );
                assert!(torn
                    .schedule(MAX_TIME, now, MAX_SPAN_NANOS, Duration::MAX, MAX_TIME)
                    .is_err());
                torn.available(MAX_TIME, now, MAX_TIME);
            }
        }
    }

    #[test]
    fn keeping_the_debt_keeps_a_full_bucket_full_and_adds_a_raise_at_once() {
        let old = meter(10, 4);
        let keep = Growth::KeepDebt;
        // Full (tat 0 at now 5): full after any change, the burst growing or shrinking.
        for new in [meter(10, 6), meter(3, 4), meter(30, 8), meter(10, 1)] {
            assert_eq!(old.convert(&new, 0, 5, MAX_TIME, keep), 5, "{new:?}");
        }
        // tat 25 at now 0: 2.5 permits owed. Burst 6: still 2.5 owed (3.5 available).
        assert_eq!(old.convert(&meter(10, 6), 25, 0, MAX_TIME, keep), 25);
        // Period 3, same burst: 2.5 permits owed = 7.5 ns, rounded up.
        assert_eq!(old.convert(&meter(3, 4), 25, 0, MAX_TIME, keep), 8);
        // A shrinking burst keeps the permits, as the limiters do.
        assert_eq!(
            old.convert(&meter(10, 2), 25, 0, MAX_TIME, keep),
            old.convert(&meter(10, 2), 25, 0, MAX_TIME, Growth::KeepPermits)
        );
        // Nondecreasing in the time, for every change.
        for new in [meter(10, 6), meter(3, 4), meter(30, 8), meter(10, 1)] {
            let times: Vec<u64> = (0..80)
                .map(|time| old.convert(&new, time, 10, MAX_TIME, keep))
                .collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "{new:?}: {times:?}");
        }
    }

    #[test]
    fn conversion_keeps_available_permits_and_rounds_up() {
        let old = meter(10, 4);
        // tat 25 at now 0: 2.5 permits owed, 1.5 available. Burst 6: still 1.5 available,
        // so 4.5 owed.
        assert_eq!(
            old.convert(&meter(10, 6), 25, 0, MAX_TIME, Growth::KeepPermits),
            45
        );
        // Period 3: 1.5 permits = 4.5 ns of room, rounded down to 4, so 12 - 4 = 8 owed.
        assert_eq!(
            old.convert(&meter(3, 4), 25, 0, MAX_TIME, Growth::KeepPermits),
            8
        );
        // Burst 1 with 4 available: full, nothing owed.
        assert_eq!(
            old.convert(&meter(10, 1), 25, 100, MAX_TIME, Growth::KeepPermits),
            100
        );
        // Owing more than a burst (reservations queued to 55 - 40 = 15): the queue stands,
        // the new configuration starts where it ends, with its burst owed.
        assert_eq!(
            old.convert(&meter(3, 4), 55, 0, MAX_TIME, Growth::KeepPermits),
            15 + 12
        );
        assert_eq!(
            old.convert(&meter(30, 4), 55, 0, MAX_TIME, Growth::KeepPermits),
            15 + 120
        );
        // Clipped at the end.
        assert_eq!(
            old.convert(&meter(10, 8), 25, 0, 30, Growth::KeepPermits),
            30
        );
    }

    #[test]
    fn an_older_reading_converts_no_more_leniently_than_a_burst_back() {
        // Burst 1 at T = 100, spent at 1000 (tat 1100); rate raised to T' = 1. At the true
        // reading 1000 the bucket is empty: tat' = 1001. A reading of 0 converts as at
        // 1000 = tat - τ: the same, not 11 (what re-rating [0, 1000] at T' gave).
        let (old, new) = (meter(100, 1), meter(1, 1));
        assert_eq!(
            old.convert(&new, 1100, 1000, MAX_TIME, Growth::KeepPermits),
            1001
        );
        assert_eq!(
            old.convert(&new, 1100, 0, MAX_TIME, Growth::KeepPermits),
            1001
        );
        // The residual bound in the type docs: converting at a reading δ behind that of the
        // admission that left `tat` mints at most ⌈min(δ, τ)·(1/T' - 1/T)⌉ permits (none
        // when T' >= T), and at most b'.
        let end = MAX_TIME;
        for (period, burst, new_period, new_burst) in [
            (100, 4, 1, 4),
            (100, 4, 30, 2),
            (7, 3, 3, 9),
            (10, 5, 10, 2),
            (3, 5, 11, 2),
        ] {
            let (old, new) = (meter(period, burst), meter(new_period, new_burst));
            for time in (period..1_500u64).step_by(7) {
                // The reading of an admission that left `tat = time`: in [tat - τ, tat - T].
                for truth in (time.saturating_sub(old.span)..=time - period).step_by(3) {
                    let fair = new.available(
                        old.convert(&new, time, truth, end, Growth::KeepPermits),
                        truth,
                        end,
                    );
                    for stale in (0..=truth).step_by(23) {
                        let converted = old.convert(&new, time, stale, end, Growth::KeepPermits);
                        let minted = new.available(converted, truth, end).saturating_sub(fair);
                        let delta = u128::from((truth - stale).min(old.span));
                        let (t, t2) = (u128::from(period), u128::from(new_period));
                        let bound = (delta * t.saturating_sub(t2)).div_ceil(t * t2);
                        assert!(
                            u128::from(minted) <= bound.min(u128::from(new_burst)),
                            "{old:?} -> {new:?}, tat {time}, read {stale} at {truth}: {minted}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn shaper_schedules_each_call_behind_the_previous() {
        let c = Params {
            mode: Mode::Shaper,
            period: 10,
            span: 25,
            limit: 100,
        };
        let s = c.schedule(0, 0, 2, Duration::MAX, MAX_TIME).unwrap();
        assert_eq!((s.act, s.time), (0, 20));
        let s = c.schedule(20, 0, 1, Duration::MAX, MAX_TIME).unwrap();
        assert_eq!((s.act, s.time), (20, 30));
        assert_eq!(
            c.schedule(30, 0, 1, Duration::MAX, MAX_TIME),
            Err(WaitError::Timeout {
                retry_after: Duration::from_nanos(30),
                timeout: Duration::from_nanos(25)
            })
        );
        assert_eq!(c.available(30, 29, MAX_TIME), 0);
        assert_eq!(c.available(30, 30, MAX_TIME), 100);
    }

    #[test]
    fn a_shapers_per_call_limit_is_bounded_by_its_wait() {
        let second = Rate::per_second(1).unwrap();
        let shaper = |max_wait, cap| Params::shaper(second, max_wait, cap).unwrap().limit;
        // max(1, ⌊max_wait / T⌋), clipped further by what was set.
        assert_eq!(shaper(Duration::ZERO, u64::MAX), 1);
        assert_eq!(shaper(Duration::from_millis(2_500), u64::MAX), 2);
        assert_eq!(shaper(Duration::from_secs(60), 7), 7);
        let c = Params::shaper(second, Duration::from_secs(60), 7).unwrap();
        // A shorter wait or a slower rate clips the cap; a longer one restores it.
        let c = c.with_max_wait(Duration::from_secs(3), 7).unwrap();
        assert_eq!(c.limit, 3);
        assert_eq!(c.with_max_wait(Duration::from_secs(9), 7).unwrap().limit, 7);
        let slow = Rate::every(Duration::from_secs(2)).unwrap();
        assert_eq!(c.with_rate(slow, 7).unwrap().limit, 1);
        assert_eq!(c.limited(0), Err(ConfigError::ZeroBurst));
        assert_eq!(
            meter(1, 1).with_max_wait(Duration::ZERO, 1),
            Err(ConfigError::NotAShaper)
        );
    }
}
