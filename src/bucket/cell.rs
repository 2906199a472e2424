//! [`BucketCell`]: the bucket family's lock-free state, one word `[time: 64 | epoch: 64]`
//! ([`Wide`]) or `[time: 58 | tag: 6]` ([`Narrow`]) and nothing else
//! ([the guide](crate::guide::bucket#cells-and-a-shared-configuration)).

use std::fmt;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::limiter::{Decision, Ticket};
use crate::sync::{AtomicWord, Ordering};

use super::config::BucketConfig;
use super::gcra::{Params, Verdict};
use super::width::{Narrow, Wide, Width};
use super::word::CellState;

/// One token bucket, leaky meter or shaper's state: the time its schedule has reached and the
/// configuration epoch that time is expressed in, in one 128-bit word ([`Wide`], the
/// default: 16 bytes compact, a cache line padded) or one 64-bit word
/// ([`Narrow`](crate::bucket::Narrow): 8 bytes compact, the keyed token bucket's; the epoch
/// modulo 64 and times up to about 9.1 years after the configuration's origin). It holds no clock, lock or configuration: every call names the
/// [`BucketConfig`] and the clock it decides with, which many cells share.
///
/// A cell is decided under the configuration in force at its call: one last decided under
/// an earlier one converts itself first, in the same CAS loop, at the reading each
/// reconfiguration took effect (the guide proves this linearizable per cell). A cell belongs
/// to the configuration it was made under; used with another, it is taken for one with no
/// history (as below).
///
/// **Deviation: a cell left behind by more than 31 reconfigurations.** The configuration
/// keeps the last 32; a cell last decided under an older one cannot replay the change it
/// missed and converts from the emptiest state it could be in (a new burst behind the latest
/// reading of any reconfiguration). It never admits more than the spec; it may refuse up to
/// one burst more, for at most one burst's refill time after that reading. A shaper cell
/// converts exactly (a shaper's conversions leave its schedule alone), and so does a fresh
/// cell under a configuration [keeping debt](BucketConfig::keeping_debt) (full at every
/// reading, it stays full).
///
/// ```
/// use ringlimit::cell::{BucketCell, BucketConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::{BucketQuota, Rate};
/// use ringlimit::cell::Compact;
///
/// let clock = ManualClock::new();
/// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 1)?, &clock);
/// let cell = BucketCell::<Compact>::new(&config);
/// assert_eq!(std::mem::size_of_val(&cell), 16);
/// assert!(cell.try_acquire(&config, &clock));
/// assert!(!cell.try_acquire(&config, &clock));
/// clock.advance(std::time::Duration::from_secs(1));
/// assert!(cell.try_acquire(&config, &clock));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
///
/// The narrow cell, 8 bytes:
///
/// ```
/// use ringlimit::cell::{BucketCell, BucketConfig};
/// use ringlimit::spec::Narrow;
/// use ringlimit::clock::ManualClock;
/// use ringlimit::{BucketQuota, Rate};
/// use ringlimit::cell::Compact;
///
/// let clock = ManualClock::new();
/// // A meter's narrow cells need a configuration that keeps debt (an error otherwise).
/// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 2)?, &clock).keeping_debt();
/// let cell = BucketCell::<Compact, Narrow>::try_new(&config)?;
/// assert_eq!(std::mem::size_of_val(&cell), 8);
/// assert!(cell.try_acquire(&config, &clock));
/// config.set_limit(&clock, 3)?; // converts on the next access, keeping its debt of one
/// assert_eq!(cell.available(&config, &clock), 2);
/// assert!(cell.try_acquire(&config, &clock) && cell.try_acquire(&config, &clock));
/// assert!(!cell.try_acquire(&config, &clock));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct BucketCell<L: Layout = Padded, W: Width = Wide> {
    /// `[time: 64 | epoch: 64]` or `[time: 58 | tag: 6]`, see [`super::word`].
    word: L::Cell<W::Atomic>,
}

/// What the decision loop did, and the reading it decided at.
enum Outcome {
    /// Admitted under this configuration (and epoch) at this reading; the state's time
    /// became this.
    Admitted {
        params: Params,
        time: u64,
        epoch: u64,
        now: u64,
    },
    /// Refused under this configuration at this reading, from this time, retry after this
    /// long; nothing changed.
    Refused {
        params: Params,
        time: u64,
        now: u64,
        retry_after: Duration,
    },
    /// Nothing to decide (`n = 0`): the configuration, time and reading it saw.
    Unchanged { params: Params, time: u64, now: u64 },
}

/// A cell's word brought to the configuration in force.
struct Settled<R> {
    /// The word the cell holds now (after this call's conversion, if it made one).
    word: R,
    state: CellState,
    params: Params,
}

impl<L: Layout> BucketCell<L, Wide> {
    /// A full bucket (or an idle shaper) under `config`'s configuration in force.
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 3)?, &clock);
    /// let cell: BucketCell = BucketCell::new(&config);
    /// assert_eq!(cell.available(&config, &clock), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(config: &BucketConfig) -> Self {
        Self::fresh(config)
    }
}

impl<L: Layout> BucketCell<L, Narrow> {
    /// A full 8-byte bucket (or an idle shaper) under `config`'s configuration in force, or
    /// [`ConfigError::NarrowKeepsPermits`] under a token bucket's or leaky meter's
    /// configuration that keeps permits (the default): the narrow word's tags are only safe
    /// when a full bucket stays full across reconfigurations, as under
    /// [`BucketConfig::keeping_debt`] (a shaper's configuration needs nothing).
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::spec::Narrow;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, ConfigError, Rate};
    /// use ringlimit::cell::Compact;
    /// let clock = ManualClock::new();
    /// let quota = BucketQuota::new(Rate::per_second(1)?, 3)?;
    /// let keeping_permits = BucketConfig::token(quota, &clock);
    /// assert_eq!(
    ///     BucketCell::<Compact, Narrow>::try_new(&keeping_permits).unwrap_err(),
    ///     ConfigError::NarrowKeepsPermits
    /// );
    /// let config = keeping_permits.keeping_debt();
    /// let cell = BucketCell::<Compact, Narrow>::try_new(&config)?;
    /// assert_eq!(cell.available(&config, &clock), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_new(config: &BucketConfig) -> Result<Self, ConfigError> {
        if config.hold_tagged_cells() {
            Ok(Self::fresh(config))
        } else {
            Err(ConfigError::NarrowKeepsPermits)
        }
    }
}

impl<L: Layout, W: Width> BucketCell<L, W> {
    /// A full bucket (or an idle shaper) under the configuration in force; a narrow cell's
    /// caller has marked `config` as holding tagged cells
    /// ([`BucketConfig::hold_tagged_cells`], or a keyed limiter's
    /// [`narrowed`](BucketConfig::narrowed) configuration).
    pub(crate) fn fresh(config: &BucketConfig) -> Self {
        debug_assert!(!W::TAGGED || config.holds_tagged_cells());
        let state = CellState {
            time: 0,
            epoch: config.current(),
        };
        Self {
            word: L::cell(W::Atomic::new(W::pack(state.time, state.epoch))),
        }
    }

    /// Makes this cell [`fresh`](Self::fresh) again under `config`'s configuration in force,
    /// for a keyed limiter's table that hands a dropped key's slot to another key: a cell
    /// left untouched by many reconfigurations converts from the emptiest state it could be
    /// in, where a new key starts full. The caller has the cell to itself (no thread can
    /// reach it until the caller publishes it).
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn renew(&self, config: &BucketConfig) {
        // Relaxed: no thread can reach the cell; whatever publishes it next (the slot's
        // claim) orders this store before every access through it.
        self.word
            .store(W::pack(0, config.current()), Ordering::Relaxed);
    }

    /// The latest time this cell's schedule may reach under `config`: its timeline's end,
    /// or the narrow word's, whichever comes first.
    #[inline]
    fn end(config: &BucketConfig) -> u64 {
        config.line().end.min(W::MAX_CELL_TIME)
    }

    /// `now` as a decision of this cell under `config` uses it, once settled (the epoch in
    /// force loaded): a narrow cell decides no earlier than the configuration's floor, the
    /// reading at which its latest quiet reconfiguration found every cell a reused tag could
    /// name full ([`BucketConfig::floor`]).
    #[inline]
    fn at_least_floor(config: &BucketConfig, now: u64) -> u64 {
        if W::TAGGED {
            now.max(config.floor())
        } else {
            now
        }
    }

    /// Loads the word.
    #[inline]
    fn load(&self) -> W::Raw {
        // Acquire: pairs with the Release CAS of the decision or conversion that wrote it, so
        // that call's clock reading happens-before everything this call does after (a
        // refund's reading is then no older than the admissions in the word).
        self.word.load(Ordering::Acquire)
    }

    /// Whether the word still is `word`: a decision made without writing (a refusal, an
    /// error, a snapshot) then held at the first load.
    #[inline]
    fn confirm(&self, word: W::Raw) -> bool {
        // Acquire: as in `load`.
        self.word.load(Ordering::Acquire) == word
    }

    /// Moves the word from `word` to `to`; `Err(observed)` if it was not `word`.
    #[inline]
    fn swap(&self, word: W::Raw, to: CellState) -> Result<W::Raw, W::Raw> {
        let to = W::pack(to.time, to.epoch);
        // Release on success: publishes this call's decision (and its clock reading, before
        // it) to the next call that loads the word. Acquire on failure: as `load`.
        self.word
            .compare_exchange(word, to, Ordering::Release, Ordering::Acquire)
            .map(|_| to)
    }

    /// `word` under the configuration in force, converted (one CAS) if it was last decided
    /// under an earlier one; `Err(observed)` when the word moved or a configuration slot was
    /// reused meanwhile: retry from `observed`.
    ///
    /// The word was loaded (or written by this call) *before* the epoch in force is loaded:
    /// a call that then sees the old epoch loaded the word before the reconfiguration
    /// published the new one, which places it before the reconfiguration (the guide).
    #[inline]
    fn settle<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        word: W::Raw,
    ) -> Result<Settled<W::Raw>, W::Raw> {
        let epoch = config.current();
        // The narrow word's tag is read against the epoch loaded after it.
        let (time, of) = W::unpack(word, epoch);
        let state = CellState { time, epoch: of };
        if state.epoch != epoch {
            return self.convert_from(config, clock, word, state, epoch);
        }
        let params = config.params_at(epoch).ok_or(word)?;
        Ok(Settled {
            word,
            state,
            params,
        })
    }

    /// [`settle`](Self::settle) from `word`, again from each word it observed instead, until a
    /// word settles.
    #[inline]
    fn settled<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        mut word: W::Raw,
    ) -> Settled<W::Raw> {
        loop {
            match self.settle(config, clock, word) {
                Ok(settled) => return settled,
                Err(observed) => word = observed,
            }
        }
    }

    /// [`settle`](Self::settle)'s conversion: off the hot path, once per cell and
    /// reconfiguration.
    #[cold]
    #[inline(never)]
    fn convert_from<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        word: W::Raw,
        state: CellState,
        epoch: u64,
    ) -> Result<Settled<W::Raw>, W::Raw> {
        let (mut state, params) = config.convert(state, epoch, clock).ok_or(word)?;
        // Past the word's end every time decides alike (refusing): the word holds the end.
        state.time = state.time.min(W::MAX_CELL_TIME);
        // Every call that sees a newer epoch writes the conversion before deciding, even
        // one that then refuses: a call still deciding under the old epoch then fails its
        // CAS and retries under the new one.
        let word = self.swap(word, state)?;
        Ok(Settled {
            word,
            state,
            params,
        })
    }

    /// Takes one permit: the hot path.
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 1)?, &clock);
    /// let cell: BucketCell = BucketCell::new(&config);
    /// assert!(cell.try_acquire(&config, &clock));
    /// assert!(!cell.try_acquire(&config, &clock));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire<C: Clock + ?Sized>(&self, config: &BucketConfig, clock: &C) -> bool {
        let line = config.line();
        let now = line.since(clock.now_nanos());
        let end = Self::end(config);
        let mut word = self.load();
        loop {
            let Settled {
                word: settled,
                state,
                params,
            } = self.settled(config, clock, word);
            word = settled;
            let now = Self::at_least_floor(config, now);
            // `admit` for one permit, which every configuration allows (its limit is at
            // least 1), without building an outcome.
            match params.decide(state.time, now, 1, end) {
                Verdict::Admit(time) => match self.swap(word, state.at(time)) {
                    Ok(_) => return true,
                    // Retry at once from the observed word: a cell is one key's, rarely
                    // contended (the limiters' engine backs off, `Engine::admit_again`).
                    Err(observed) => word = observed,
                },
                // An unlimited configuration's flag is read only once the cell refused.
                Verdict::Refuse(_) if self.confirm(word) => return config.unlimited(),
                Verdict::Refuse(_) => word = self.load(),
            }
        }
    }

    /// Decides `n` permits: admitted with what remains, or refused with when to retry.
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// use ringlimit::outcome::Decision;
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 3)?, &clock);
    /// let cell: BucketCell = BucketCell::new(&config);
    /// assert_eq!(cell.try_acquire_n(&config, &clock, 2), Ok(Decision::Admitted { remaining: 1 }));
    /// assert!(cell.try_acquire_n(&config, &clock, 4).is_err()); // more than the burst
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_acquire_n<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        n: u64,
    ) -> Result<Decision, ExceedsLimit> {
        self.grant(config, clock, n).map(|(decision, _)| decision)
    }

    /// [`try_acquire_n`](Self::try_acquire_n), with what a refund needs of an admission: the
    /// configuration epoch it was decided under and the state's time right after it (its
    /// mark).
    pub(crate) fn grant<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        n: u64,
    ) -> Result<(Decision, Option<(u64, u64)>), ExceedsLimit> {
        if config.unlimited() {
            return Ok((
                Decision::Admitted {
                    remaining: u64::MAX,
                },
                None,
            ));
        }
        let now = config.line().since(clock.now_nanos());
        let end = Self::end(config);
        Ok(match self.admit(config, clock, now, n)? {
            Outcome::Admitted {
                params,
                time,
                epoch,
                now,
            } => (
                Decision::Admitted {
                    remaining: params.available(time, now, end),
                },
                Some((time, epoch)),
            ),
            Outcome::Unchanged { params, time, now } => (
                Decision::Admitted {
                    remaining: params.available(time, now, end),
                },
                None,
            ),
            Outcome::Refused {
                params,
                time,
                now,
                retry_after,
            } => (params.refused(time, now, end, retry_after), None),
        })
    }

    /// Gives back up to `n` permits of the admission whose mark (the state's time right
    /// after it) was `mark` under configuration epoch `epoch`, as the limiters' refunds do
    /// ([`Params::refund`]): one CAS moving the state's time back by the part of the grant
    /// still ahead of the clock and not scheduled behind; nothing once a reconfiguration
    /// converted the cell (the mark is a time of the old frame) or the clock has passed the
    /// mark. Returns the permits restored.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn refund<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        (mark, epoch): (u64, u64),
        n: u64,
    ) -> u64 {
        if config.unlimited() || n == 0 {
            return 0;
        }
        let now = config.line().since(clock.now_nanos());
        let ticket = Ticket::new(n, 0, 0, u128::from(mark)).with_epoch(epoch);
        let mut word = self.load();
        loop {
            let Settled {
                word: settled,
                state,
                params,
            } = self.settled(config, clock, word);
            word = settled;
            let now = Self::at_least_floor(config, now);
            let Some((time, restored)) = params.refund(state.epoch, state.time, now, &ticket)
            else {
                if self.confirm(word) {
                    return 0;
                }
                word = self.load();
                continue;
            };
            match self.swap(word, state.at(time)) {
                Ok(_) => return restored,
                Err(observed) => word = observed,
            }
        }
    }

    /// The decision loop at `now` (ns since the origin), read by the caller before the
    /// word: a retry after a failed CAS re-derives everything from the word it observed but
    /// keeps that reading. The call takes effect at its successful CAS (or its confirming
    /// re-load), deciding as the spec does at that reading; a reading older than the state
    /// only makes decisions stricter.
    #[inline]
    fn admit<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        now: u64,
        n: u64,
    ) -> Result<Outcome, ExceedsLimit> {
        let end = Self::end(config);
        let mut word = self.load();
        loop {
            let Settled {
                word: settled,
                state,
                params,
            } = self.settled(config, clock, word);
            word = settled;
            let now = Self::at_least_floor(config, now);
            let verdict = params
                .check(n)
                .map(|()| (n > 0).then(|| params.decide(state.time, now, n, end)));
            match verdict {
                Ok(Some(Verdict::Admit(time))) => match self.swap(word, state.at(time)) {
                    Ok(_) => {
                        return Ok(Outcome::Admitted {
                            params,
                            time,
                            epoch: state.epoch,
                            now,
                        })
                    }
                    // Retry at once from the observed word: a cell of a keyed limiter is rarely
                    // contended, and a PAUSE here (~140 cycles on recent Xeons) made contended
                    // admissions slower than governor's (the limiters' engine backs off
                    // instead: `sync::Backoff`, measured on an AMD EPYC).
                    Err(observed) => word = observed,
                },
                _ if !self.confirm(word) => word = self.load(),
                Ok(Some(Verdict::Refuse(retry_after))) => {
                    return Ok(Outcome::Refused {
                        params,
                        time: state.time,
                        now,
                        retry_after,
                    })
                }
                Ok(None) => {
                    return Ok(Outcome::Unchanged {
                        params,
                        time: state.time,
                        now,
                    })
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Permits available now.
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 4)?, &clock);
    /// let cell: BucketCell = BucketCell::new(&config);
    /// cell.try_acquire(&config, &clock);
    /// assert_eq!(cell.available(&config, &clock), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn available<C: Clock + ?Sized>(&self, config: &BucketConfig, clock: &C) -> u64 {
        if config.unlimited() {
            return u64::MAX;
        }
        let now = config.line().since(clock.now_nanos());
        let end = Self::end(config);
        let mut word = self.load();
        loop {
            let Settled {
                word: settled,
                state,
                params,
            } = self.settled(config, clock, word);
            let available = params.available(state.time, Self::at_least_floor(config, now), end);
            if self.confirm(settled) {
                return available;
            }
            word = self.load();
        }
    }

    /// `None` if the cell is indistinguishable from a fresh one at clock reading `at` (its
    /// bucket full, or a shaper's schedule empty), else the reading from which it will be
    /// (absent new admissions). One settled state decides both, so a reconfiguration cannot
    /// slip between them. `clock` is read fresh for what settling needs (the reading a new
    /// configuration takes effect at, if this is the first call to see it): never `at`,
    /// which a sweep fixes before it starts, and which is older than a reconfiguration
    /// published since (a conversion at `at` would refill every key in debt at the new rate
    /// for time that passed before the change).
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn idle_at<C: Clock + ?Sized>(
        &self,
        config: &BucketConfig,
        clock: &C,
        at: u64,
    ) -> Option<u64> {
        if config.unlimited() {
            return None;
        }
        let now = config.line().since(at);
        let mut word = self.load();
        loop {
            let Settled {
                word: settled,
                state,
                ..
            } = self.settled(config, clock, word);
            let now = Self::at_least_floor(config, now);
            let idle_at = (state.time > now).then(|| config.line().on_clock(state.time));
            if self.confirm(settled) {
                return idle_at;
            }
            word = self.load();
        }
    }

    /// Bytes this cell occupies: 16 compact ([`Narrow`](crate::bucket::Narrow): 8), a whole
    /// cache line (or two) padded.
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// use ringlimit::cell::Compact;
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 1)?, &ManualClock::new());
    /// assert_eq!(BucketCell::<Compact>::new(&config).footprint(), 16);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl<L: Layout, W: Width> fmt::Debug for BucketCell<L, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketCell")
            .field("word", &self.load())
            .finish()
    }
}
