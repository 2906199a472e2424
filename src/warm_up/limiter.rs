//! The warm-up limiter (Guava's `SmoothWarmingUp`), lock-free on one 128-bit word.
//! Decisions, reconfiguration and cancellation: [the guide](crate::guide::warm_up).

use std::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::spec::Step;
use crate::limiter::{Admission, Attempt, Grant, Owner, Reservation, Reserve, Schedule, Ticket};
use crate::limiter::{Decision, RateLimiter};
use crate::rate::Rate;
use crate::sync::{atomic, AdminLock, AtomicU128, AtomicU64, Ordering};

use super::builder::WarmUpBuilder;
use super::curve::{self, Config, Timeline, DEFAULT_COLD_FACTOR, MAX_SPAN_NANOS};
use super::quota::WarmUpQuota;
use super::slot::Slot;
use super::word::{slot_of, State, GENS};

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
/// effect at its CAS on the state word; a refusal, an `available()` or a timeout at its load
/// of the word. Calls are decided at their own clock reading; a reading older than the next
/// free time stores nothing, so time never runs backwards.
///
/// **Residual assumption (ABA).** A decision pairs the word it loaded with the
/// configuration slot of the word's 3-bit generation, loaded right after. Slot `g` is
/// rewritten only by the reconfiguration that moves the word to generation `g` again, the
/// 8th after the one that installed the generation the caller read. So a call can be
/// decided under a configuration not in force only if 8 `set_rate`/`set_limit` calls
/// (serialized on a lock) run between its word load and its slot loads, a few
/// instructions, and its CAS then succeeds only if the word is bit for bit what it loaded.
/// Without reconfiguration a repeated word is harmless: the word *is* the state (a cancel
/// may bring back an earlier word, and then the state really is that one again), so a CAS
/// from it decides correctly; only a generation reused by 8 reconfigurations can make the
/// same bits mean another configuration. Cancels do not share this residue: a reservation
/// made before a reconfiguration is never given back after it, however many came between
/// (its ticket carries the configuration's epoch, checked under the admin lock).
///
/// **Hot path.** `try_acquire`: a clock read, one 128-bit load (on x86_64 a `cmpxchg16b`, or
/// a plain 16-byte load where the CPU guarantees its atomicity), a few loads of the
/// configuration slot, the `f64` arithmetic of Guava, and one 128-bit CAS. A refusal is the
/// loads alone. [`AtomicU128::is_lock_free`](portable_atomic::AtomicU128::is_lock_free) is
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
/// until the queue ahead drains).
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
    /// `[next_free: 61 | gen: 3 | stored: f64 bits]`, see [the guide](crate::guide::warm_up).
    state: CachePadded<AtomicU128>,
    /// The configuration of each generation; slot `gen` is written only while no word
    /// refers to it (under `admin`, before the CAS that installs `gen`).
    slots: [Slot; GENS],
    admin: AdminLock,
    /// The per-call bound `set_limit` asked for (`u64::MAX`: the largest allowed); read and
    /// written only under `admin`.
    requested: AtomicU64,
    warm_up: u64,
    cold_factor: f64,
    /// The origin (the clock's reading at `build`) and the end of the limiter's times.
    line: Timeline,
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
        let (warm_up, config) = quota.parts();
        let cold_factor = quota.cold_factor_value();
        let line = Timeline::new(clock.now_nanos());
        Self {
            state: CachePadded::new(AtomicU128::new(config.cold_start().pack())),
            slots: std::array::from_fn(|_| Slot::new(&config)),
            admin: AdminLock::new(),
            owner: Owner::new(),
            requested: atomic(u64::MAX),
            warm_up,
            cold_factor,
            line,
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
        let (_, _, config) = self.load();
        Rate::from_period_nanos(config.period)
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
        Duration::from_nanos(self.warm_up)
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
        self.cold_factor
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

    /// Bytes one instance occupies (no heap): the cache-padded 128-bit state word and the
    /// eight configuration slots.
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
        let now = self.now();
        let (_, state, config) = self.load();
        config.resync(state, now).stored
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
        self.admin.with(|| {
            // Relaxed: written only under the admin lock, which orders it.
            let requested = self.requested.load(Ordering::Relaxed);
            let new = Config::new(rate, self.warm_up, self.cold_factor, requested)?;
            let now = self.now();
            self.install(&new, |old, state| old.reconfigure(&new, state, now));
            Ok(())
        })
    }

    /// Under the admin lock: writes `new` (numbered one epoch after the configuration in
    /// force) into the next generation's slot, then moves the word to that generation with
    /// `convert(old config, old state)` in one CAS.
    fn install(&self, new: &Config, convert: impl Fn(&Config, State) -> State) {
        // Acquire: pairs with the Release CAS that installed this word's generation.
        let mut word = self.state.load(Ordering::Acquire);
        let gen = State::unpack(word).gen;
        // Only reconfigurations change `gen`, and they hold the lock: the word stays in this
        // generation until the CAS below, so its slot is the configuration in force
        // throughout, and no decision reads the slot being written.
        let old = self.config_of(gen);
        let new = new.installed_after(&old);
        let next_gen = State::unpack(word).next_gen();
        // Relaxed (all): published by the Release CAS below that installs `next_gen`.
        self.slots[slot_of(next_gen)].store(&new, Ordering::Relaxed);
        loop {
            let state = State::unpack(word);
            // Set to `{ gen: gen + 1, ..convert(state) }`.
            let next = convert(&old, state);
            debug_assert_eq!(next.gen, next_gen);
            // Release: publishes the slot written above to every caller that acquires this
            // word or a later one. Failure: Acquire, as the load above; the word seen
            // differs only by admissions (same generation, so `old` still applies): retry
            // from it.
            match self.state.compare_exchange(
                word,
                next.pack(),
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(seen) => word = seen,
            }
        }
    }

    /// The word, its state, and the configuration of its generation.
    #[inline]
    fn load(&self) -> (u128, State, Config) {
        // Acquire: pairs with the Release CAS that installed this word's generation, so
        // its slot's configuration is visible; admission CASes continue that release
        // sequence.
        let word = self.state.load(Ordering::Acquire);
        self.view(word)
    }

    #[inline]
    fn view(&self, word: u128) -> (u128, State, Config) {
        let state = State::unpack(word);
        (word, state, self.config_of(state.gen))
    }

    /// Runs one transition of the spec on the state word until it sticks: `transition` maps
    /// the state and configuration to an outcome and, if it changes, the new state.
    #[inline]
    fn transition<R, E>(
        &self,
        transition: impl Fn(&Config, State) -> Result<(R, Option<State>), E>,
    ) -> Result<R, E> {
        let (mut word, mut state, mut config) = self.load();
        loop {
            let (outcome, next) = transition(&config, state)?;
            let Some(next) = next else {
                return Ok(outcome);
            };
            // Relaxed: the outcome depends on this word alone (its generation's slot was
            // read under the Acquire load), and success proves the word is still that one:
            // the linearization point. Failure: Acquire, as the load; retry from the word
            // seen, with the same clock reading (a time inside the call).
            match self.state.compare_exchange(
                word,
                next.pack(),
                Ordering::Relaxed,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(outcome),
                // Retry at once from the observed word (no PAUSE: it measured slower).
                Err(seen) => (word, state, config) = self.view(seen),
            }
        }
    }

    #[inline]
    fn decide(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        let now = self.now();
        self.transition(|config, state| config.decide(state, &self.line, now, n))
    }
}

impl<C: Clock> RateLimiter for WarmUp<C> {
    #[inline]
    fn try_acquire(&self) -> bool {
        self.decide(1).is_ok_and(|decision| decision.is_admitted())
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        self.decide(n)
    }

    /// `limit()` while the limiter is free (a call now goes at once, whatever its size up to
    /// the bound), else 0.
    fn available(&self) -> u64 {
        let now = self.now();
        let (_, state, config) = self.load();
        config.available(state, now)
    }

    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        let now = self.now();
        self.transition(|config, state| config.grant_now(state, &self.line, now, n))
            .map(|admission| admission.owned_by(self.owner))
    }

    /// Puts the state back to what it was right before the grant if nothing (no admission,
    /// reservation, refund or reconfiguration) came after it; else restores nothing.
    fn refund(&self, grant: Grant) -> u64 {
        if !grant.is_from(self.owner) {
            return 0;
        }
        self.give_back(grant.ticket())
    }

    /// Sets the per-call bound (`1 ..= floor(2^58 ns / cold interval)`), linearizably with
    /// concurrent calls; the state is kept. Reservations made before it can no longer be
    /// cancelled. Errors: [`ConfigError::ZeroLimit`], [`ConfigError::LimitTooLarge`].
    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        self.admin.with(|| {
            let (_, _, current) = self.load();
            let new = current.with_limit(limit, self.cold_factor)?;
            // Relaxed: read and written only under the admin lock.
            self.requested.store(limit, Ordering::Relaxed);
            self.install(&new, |_, state| State {
                gen: state.next_gen(),
                ..state
            });
            Ok(())
        })
    }

    /// The most permits one call may ask for.
    fn limit(&self) -> u64 {
        self.load().2.limit
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    /// Reserves `n` permits if the caller can go within `max_wait` (Guava's `tryAcquire(n,
    /// timeout)`): waiters are served in order, each at the time its reservation fixed.
    fn attempt(&self, n: u64, max_wait: Duration) -> Result<Attempt<'_>, WaitError> {
        let now = self.now();
        let step =
            self.transition(|config, state| config.step(state, &self.line, now, n, max_wait))?;
        Ok(match step {
            Step::Granted(ticket) => Attempt::Granted(Reservation::scheduled(self, ticket)),
            Step::RetryAfter(after) => Attempt::RetryAfter(after),
        })
    }
}

impl<C: Clock> Reserve for WarmUp<C> {
    /// Reserves `n` permits if the caller can go within `max_wait`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, Rate, Reserve, WarmUp, WarmUpQuota};
    /// let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?)
    ///     .clock(ManualClock::new())
    ///     .build();
    /// assert_eq!(limiter.reserve(1)?.delay(), Duration::ZERO);
    /// let second = limiter.reserve(1)?;
    /// assert_eq!(second.delay(), Duration::from_millis(1375));
    /// // Cancelled before its time, the reservation gives its permit back.
    /// second.cancel();
    /// assert_eq!(limiter.stored_permits(), 7.0);
    /// assert!(limiter.reserve_within(1, Duration::from_secs(1)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
        self.give_back(ticket)
    }
}

impl<C: Clock> WarmUp<C> {
    /// The clock's reading as the limiter's time: ns since its origin, saturated.
    #[inline]
    fn now(&self) -> u64 {
        self.line.since(self.clock.now_nanos())
    }
}

impl<C> WarmUp<C> {
    /// Puts the state back to what it was right before the grant, if no reconfiguration
    /// came since and the word is still exactly what the grant left (see
    /// [`WarmUpSpec`](crate::spec::WarmUpSpec)): a lock-free look at the word, then, only if
    /// it may succeed, one CAS under the admin lock, no retry. Returns the permits restored.
    fn give_back(&self, ticket: &Ticket) -> u64 {
        let (after, _) = curve::undo(ticket, &self.line);
        // Relaxed: a filter only. Another word means something came after the grant (the
        // refund does nothing, taking effect at this load); the same word is decided again
        // below.
        if self.state.load(Ordering::Relaxed) != after {
            return 0;
        }
        self.admin.with(|| {
            // The lock orders every slot write before these loads (Relaxed inside), and no
            // reconfiguration can run until the CAS below: a matching epoch means the
            // configuration of the ticket's `gen` is the one the grant was made under.
            let config = self.config_of(State::unpack(ticket.mark()).gen);
            let Some((after, before)) = config.refund(ticket, &self.line) else {
                return 0;
            };
            // Relaxed: success proves the word is the one the grant left and, with the
            // epoch checked above under the lock, that nothing came after it; the state put
            // back is a pure function of it and the ticket. Failure: Relaxed, something
            // came after it: nothing to give back.
            match self
                .state
                .compare_exchange(after, before, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => ticket.permits(),
                Err(_) => 0,
            }
        })
    }

    /// Generation `gen`'s configuration. Relaxed (all): the caller's Acquire load of a word
    /// of this generation (or the admin lock, for a cancel) ordered the slot's writes, which
    /// came before that word's installing Release CAS, before these loads.
    fn config_of(&self, gen: u64) -> Config {
        self.slots[slot_of(gen)].load(Ordering::Relaxed)
    }
}

impl<C> fmt::Debug for WarmUp<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed (the slot): a diagnostic snapshot, not a decision. Acquire (the word): as
        // in `load`.
        let state = State::unpack(self.state.load(Ordering::Acquire));
        let config = self.config_of(state.gen);
        f.debug_struct("WarmUp")
            .field("origin_nanos", &self.line.origin)
            .field("next_free_nanos", &state.next_free)
            .field("stored", &state.stored)
            .field("max", &config.max)
            .field("period_nanos", &config.period)
            .field("warm_up_nanos", &self.warm_up)
            .field("cold_factor", &self.cold_factor)
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
    fn set_limit_and_set_rate_install_new_generations() {
        let clock = ManualClock::new();
        let limiter = guava(&clock);
        let mut spec = WarmUpSpec::new(limiter.rate(), limiter.warm_up(), 3.0).unwrap();
        for round in 0..20u64 {
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
        // 20 reconfigurations: the 3-bit generation wrapped twice; the epoch counts them all.
        assert_eq!(
            State::unpack(limiter.state.load(Ordering::Relaxed)).gen,
            20 % 8
        );
        assert_eq!(limiter.load().2.epoch, 20);
    }

    #[test]
    fn debug_shows_the_state() {
        let limiter = guava(&ManualClock::new());
        let shown = format!("{limiter:?}");
        assert!(shown.contains("stored: 8.0"), "{shown}");
    }
}
