//! [`WarmUpCell`]: a warm-up limiter's whole state in one word, deciding with a
//! [`WarmUpConfig`] many cells share ([the guide](crate::guide::warm_up#the-state-stored-permits-as-nanoseconds-of-cooling)).

use std::fmt;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::{ExceedsLimit, WaitError};
use crate::layout::{Layout, Padded};
use crate::limiter::spec::Step;
use crate::limiter::{Admission, Decision, Ticket};
use crate::relabel::{self, Packed};
use crate::sync::AtomicU128;

use super::config::WarmUpConfig;
use super::curve::{until_free, Config};
use super::word::{label_of, CellState, State};

/// One warm-up limiter's state (Guava's `SmoothWarmingUp`): the next free time, the label of
/// the configuration it was last decided under, and its stored permits as nanoseconds of
/// cooling, in one 128-bit word `[next_free: 61 | label: 8 | cooled: 59]` (16 bytes compact,
/// a cache line padded). It holds no clock, lock or configuration: every call names the
/// [`WarmUpConfig`] and the clock it decides with, which many cells share.
///
/// Decisions are [`WarmUp`](crate::WarmUp)'s `try_acquire_n`: admitted iff the cell is free
/// at the reading (the cost of a request is paid by the next one), refused with `available:
/// 0` and the time until it is free (`Duration::MAX` when that lies past 2^60 ns after the
/// origin, where readings stand still), [`ExceedsLimit`] above the per-call bound. A cell
/// starts cold (all `max` permits stored), as `WarmUp` does. Linearizable per cell, also
/// across [`set_rate`](WarmUpConfig::set_rate) and [`set_limit`](WarmUpConfig::set_limit): a
/// call that sees a new configuration relabels the cell in its own CAS before deciding, so a
/// call still deciding under the old one fails its CAS and decides again; the stored permits
/// need no conversion, however many changes the cell missed.
///
/// The stored permits are kept as whole ns of cooling (`stored × W / max`), rounded *up*
/// after each admission, in [`WarmUp`](crate::WarmUp) and
/// [`WarmUpSpec`](crate::spec::WarmUpSpec) alike: a cell decides exactly as the spec.
///
/// **Residual (label wrap).** The label is the configuration epoch modulo 256. A cell
/// untouched across any number of reconfigurations decides exactly (its state means the
/// same under every configuration). What the label cannot tell apart: a call stalled
/// between its load of the configuration and its CAS while 256 reconfigurations run *and*
/// the cell, touched meanwhile, comes back bit for bit to the word the call loaded; its CAS
/// then lands a decision made under a configuration no longer in force (the guide).
///
/// A cell belongs to the configuration it was made under (times count from that
/// configuration's origin): to move a key to another configuration, start a new cell.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::{Rate, WarmUpQuota};
/// use ringlimit::cell::Compact;
///
/// let clock = ManualClock::new();
/// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
/// let cell = WarmUpCell::<Compact>::new(&config);
/// assert_eq!(cell.footprint(), 16);
/// // Cold: the interval starts at 3 × 0.5 s and falls to 0.5 s over the warm-up.
/// let mut waits = Vec::new();
/// for _ in 0..6 {
///     // Guava's `acquire()`: wait until the cell is free, then go.
///     let decision = cell.try_acquire_n(&config, &clock, 1)?;
///     if !decision.is_admitted() {
///         clock.advance(decision.retry_after());
///         assert!(cell.try_acquire(&config, &clock));
///     }
///     waits.push(decision.retry_after().as_millis());
/// }
/// assert_eq!(waits, [0, 1375, 1125, 875, 625, 500]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **How it works:** [`guide::warm_up`](crate::guide::warm_up#the-state-stored-permits-as-nanoseconds-of-cooling).
pub struct WarmUpCell<L: Layout = Padded> {
    /// `[next_free: 61 | label: 8 | cooled: 59]`, see `CellState`.
    word: L::Cell<AtomicU128>,
}

impl<L: Layout> WarmUpCell<L> {
    /// A cold cell (all `max` permits stored, free at once) under `config`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
    /// let cell: WarmUpCell = WarmUpCell::new(&config);
    /// assert_eq!(cell.stored_permits(&config, &clock), 8.0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(config: &WarmUpConfig) -> Self {
        let current = config.current();
        let cold = current.cold_start().labelled(label_of(current.epoch));
        Self {
            word: L::cell(AtomicU128::new(cold.pack())),
        }
    }

    /// One call ([`relabel::run_with`]): the word is relabelled with the epoch of the
    /// configuration in force (loaded after it) in its own CAS if it differs, then `decide`
    /// returns `Ok((next, result))` to write `next` in one CAS, or `Err(result)` to return
    /// once the word is confirmed unchanged.
    #[inline]
    fn call<R>(
        &self,
        config: &WarmUpConfig,
        decide: impl FnMut(State, &Config) -> Result<(State, R), R>,
    ) -> R {
        self.call_from(config, relabel::load(&self.word), decide)
    }

    /// [`call`](Self::call) from a word already loaded.
    #[inline]
    fn call_from<R>(
        &self,
        config: &WarmUpConfig,
        loaded: u128,
        mut decide: impl FnMut(State, &Config) -> Result<(State, R), R>,
    ) -> R {
        relabel::run_from(
            &self.word,
            loaded,
            || config.current(),
            |state: CellState, current| {
                let label = label_of(current.epoch);
                (CellState { label, ..state }, current)
            },
            |state, current| {
                let (next, result) = decide(state.state(), current)?;
                Ok((next.labelled(state.label), result))
            },
        )
    }

    /// A call that writes the state `decide` returns with it, if any.
    #[inline]
    fn transition<R, E>(
        &self,
        config: &WarmUpConfig,
        decide: impl FnMut(State, &Config) -> Result<(R, Option<State>), E>,
    ) -> Result<R, E> {
        self.transition_from(config, relabel::load(&self.word), decide)
    }

    /// [`transition`](Self::transition) from a word already loaded.
    #[inline]
    fn transition_from<R, E>(
        &self,
        config: &WarmUpConfig,
        loaded: u128,
        mut decide: impl FnMut(State, &Config) -> Result<(R, Option<State>), E>,
    ) -> Result<R, E> {
        self.call_from(config, loaded, |state, current| {
            match decide(state, current) {
                Ok((result, Some(next))) => Ok((next, Ok(result))),
                Ok((result, None)) => Err(Ok(result)),
                Err(error) => Err(Err(error)),
            }
        })
    }

    /// Takes one permit: `try_acquire_n(1)` admitted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
    /// let cell: WarmUpCell = WarmUpCell::new(&config);
    /// assert!(cell.try_acquire(&config, &clock));
    /// assert!(!cell.try_acquire(&config, &clock));
    /// clock.advance(Duration::from_millis(1375));
    /// assert!(cell.try_acquire(&config, &clock));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire<C: Clock + ?Sized>(&self, config: &WarmUpConfig, clock: &C) -> bool {
        // Every per-call bound is at least 1.
        self.try_acquire_n(config, clock, 1)
            .is_ok_and(|decision| decision.is_admitted())
    }

    /// Decides `n` permits (Guava's `tryAcquire(n, 0)`): admitted, with `limit()` remaining
    /// if the cell is still free at the reading (after a zero-cost request) and 0 otherwise;
    /// or refused with `available: 0` and the time until the cell is free;
    /// [`ExceedsLimit`] above the per-call bound.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// use ringlimit::outcome::Decision;
    /// let clock = ManualClock::new();
    /// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
    /// let cell: WarmUpCell = WarmUpCell::new(&config);
    /// assert_eq!(cell.try_acquire_n(&config, &clock, 2)?, Decision::Admitted { remaining: 0 });
    /// // Two cold permits: 1.375 s + 1.125 s, paid by the next caller.
    /// assert_eq!(cell.try_acquire_n(&config, &clock, 1)?.retry_after(), Duration::from_millis(2500));
    /// config.set_limit(3)?;
    /// assert!(cell.try_acquire_n(&config, &clock, 4).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_n<C: Clock + ?Sized>(
        &self,
        config: &WarmUpConfig,
        clock: &C,
        n: u64,
    ) -> Result<Decision, ExceedsLimit> {
        let line = config.line();
        let now = line.since(clock.now_nanos());
        let loaded = relabel::load(&self.word);
        let state = CellState::unpack(loaded);
        if n == 1 && now < state.next_free && state.label == label_of(config.epoch()) {
            // Busy: refused until `next_free` under every configuration (every per-call
            // bound is at least 1, and a busy state's refusal involves no curve). The label
            // is the epoch in force, loaded after the word: every call still deciding under
            // an older configuration expects another label and fails its CAS, so no call
            // can be ordered before this one and change the state it saw. The refusal takes
            // effect at the load, without the configuration's slot or a confirming reload:
            // the hot refusal path. (Without the label check, a stalled older call landing
            // after the load would make it a refusal no order of the spec explains.)
            return Ok(Decision::Refused {
                available: 0,
                retry_after: until_free(state.next_free, now),
            });
        }
        self.transition_from(config, loaded, |state, current| {
            if now < state.next_free && n != 0 && n <= current.limit {
                // Busy: refused until `next_free`, exactly as `Config::decide` refuses
                // (Guava's `tryAcquire(n, 0)`), without its out-of-line call: the hot refusal
                // path (measured 32 ns -> 15 ns per refusal).
                let retry_after = until_free(state.next_free, now);
                let refused = Decision::Refused {
                    available: 0,
                    retry_after,
                };
                return Ok((refused, None));
            }
            if n == 1 {
                return current.decide_one(state, line, now);
            }
            current.decide(state, line, now, n)
        })
    }

    /// [`try_acquire_n`](Self::try_acquire_n) with a ticket a [`refund`](Self::refund) can
    /// undo (its times on the clock).
    pub(crate) fn grant<C: Clock + ?Sized>(
        &self,
        config: &WarmUpConfig,
        clock: &C,
        n: u64,
    ) -> Result<Admission, ExceedsLimit> {
        let line = config.line();
        let now = line.since(clock.now_nanos());
        self.transition(config, |state, current| {
            current.grant_now(state, line, now, n)
        })
    }

    /// One wait step: a reservation of `n` whose time is at most `max_wait` away (Guava's
    /// `tryAcquire(n, timeout)`), its ticket's times on the clock.
    pub(crate) fn step<C: Clock + ?Sized>(
        &self,
        config: &WarmUpConfig,
        clock: &C,
        n: u64,
        max_wait: Duration,
    ) -> Result<Step, WaitError> {
        let line = config.line();
        let now = line.since(clock.now_nanos());
        self.transition(config, |state, current| {
            current.step(state, line, now, n, max_wait)
        })
    }

    /// Gives back `ticket`'s permits if nothing came after its grant: one CAS from the word
    /// the grant left to the one before it, made only while the configuration the grant was
    /// decided under is still in force (its epoch, 64 bits, on the ticket). Returns the
    /// permits restored (0: dropped, which can only under-admit).
    pub(crate) fn refund(&self, config: &WarmUpConfig, ticket: &Ticket) -> u64 {
        let current = config.current();
        let Some((after, before)) = current.refund(ticket, config.line()) else {
            return 0;
        };
        let label = label_of(current.epoch);
        // The configuration was loaded before the CAS: one changed since leaves a cell that
        // any later call relabels first, so the CAS succeeds only on a word no call has seen
        // under the new configuration, and the refund takes effect before the change.
        match relabel::swap(
            &self.word,
            after.labelled(label).pack(),
            before.labelled(label),
        ) {
            Ok(_) => ticket.permits(),
            Err(_) => 0,
        }
    }

    /// Permits a call could take now without waiting: the per-call bound while the cell is
    /// free, else 0 (as [`WarmUp`](crate::WarmUp)'s `available`). Moves nothing, but
    /// relabels a cell decided under an older configuration.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
    /// config.set_limit(5)?;
    /// let cell: WarmUpCell = WarmUpCell::new(&config);
    /// assert_eq!(cell.available(&config, &clock), 5);
    /// cell.try_acquire(&config, &clock);
    /// assert_eq!(cell.available(&config, &clock), 0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn available<C: Clock + ?Sized>(&self, config: &WarmUpConfig, clock: &C) -> u64 {
        let now = config.line().since(clock.now_nanos());
        self.call(config, |state, current| Err(current.available(state, now)))
    }

    /// The permits stored now (Guava's `storedPermits`, brought up to the clock's reading):
    /// the cell's cooling over the configuration's `cool_down`; `max` when cold.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// let clock = ManualClock::new();
    /// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
    /// let cell: WarmUpCell = WarmUpCell::new(&config);
    /// assert!(cell.try_acquire_n(&config, &clock, 3)?.is_admitted());
    /// assert_eq!(cell.stored_permits(&config, &clock), 5.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stored_permits<C: Clock + ?Sized>(&self, config: &WarmUpConfig, clock: &C) -> f64 {
        let now = config.line().since(clock.now_nanos());
        self.call(config, |state, current| Err(current.stored_at(state, now)))
    }

    /// `None` if the cell is indistinguishable from a fresh cold one at `clock`'s reading
    /// (free, its cooling back to the whole warm-up period), else the clock reading from
    /// which it will be, absent new admissions. One settled word decides both.
    // For keyed eviction: no keyed family of warm-up cells is wired yet (the unit tests use
    // it).
    #[allow(dead_code)]
    pub(crate) fn idle_at<C: Clock + ?Sized>(
        &self,
        config: &WarmUpConfig,
        clock: &C,
    ) -> Option<u64> {
        let line = config.line();
        let now = line.since(clock.now_nanos());
        self.call(config, |state, current| {
            Err(current.idle_from(state, now).map(|at| line.on_clock(at)))
        })
    }

    /// Bytes this cell occupies: 16 compact, a whole cache line (or two) padded.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{WarmUpCell, WarmUpConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, WarmUpQuota};
    /// use ringlimit::cell::{Compact, Padded};
    /// let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &ManualClock::new());
    /// assert_eq!(WarmUpCell::<Compact>::new(&config).footprint(), 16);
    /// assert!(WarmUpCell::<Padded>::new(&config).footprint() >= 64);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl<L: Layout> fmt::Debug for WarmUpCell<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarmUpCell")
            .field("state", &CellState::unpack(relabel::load(&self.word)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::layout::Compact;
    use crate::rate::Rate;
    use crate::warm_up::WarmUpQuota;

    fn guava(clock: &ManualClock) -> WarmUpConfig {
        let quota = WarmUpQuota::new(Rate::per_second(2).unwrap(), Duration::from_secs(4));
        WarmUpConfig::new(quota.unwrap(), clock)
    }

    #[test]
    fn a_fresh_cell_is_idle_until_admitted_and_again_once_cooled() {
        let clock = ManualClock::starting_at(1_000);
        let config = guava(&clock);
        let cell = WarmUpCell::<Compact>::new(&config);
        assert_eq!(cell.idle_at(&config, &clock), None);
        assert!(cell
            .try_acquire_n(&config, &clock, 8)
            .unwrap()
            .is_admitted());
        // 8 cold permits: 6 s to pay, then 4 s to cool down again.
        assert_eq!(cell.idle_at(&config, &clock), Some(1_000 + 10_000_000_000));
        clock.set_nanos(1_000 + 10_000_000_000 - 1);
        assert_eq!(cell.idle_at(&config, &clock), Some(1_000 + 10_000_000_000));
        clock.advance_nanos(1);
        assert_eq!(cell.idle_at(&config, &clock), None);
    }

    #[test]
    fn a_relabel_is_its_own_write_and_changes_nothing_else() {
        let clock = ManualClock::new();
        let config = guava(&clock);
        let cell = WarmUpCell::<Compact>::new(&config);
        assert!(cell.try_acquire(&config, &clock));
        let before = CellState::unpack(relabel::load(&cell.word));
        config.set_rate(Rate::per_second(3).unwrap()).unwrap();
        // A refusal under the new configuration still writes the new label.
        assert!(!cell.try_acquire(&config, &clock));
        let after = CellState::unpack(relabel::load(&cell.word));
        assert_eq!(after, CellState { label: 1, ..before });
        let shown = format!("{cell:?} {config:?}");
        assert!(
            shown.contains("label: 1") && shown.contains("epoch: 1"),
            "{shown}"
        );
    }
}
