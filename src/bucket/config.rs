//! [`BucketConfig`]: the configuration many bucket cells share, with the history a cell needs
//! to convert itself lazily after reconfigurations ([the guide](crate::guide::bucket#cells-and-a-shared-configuration)).

use std::fmt;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::ConfigError;
use crate::rate::Rate;
use crate::sync::{atomic, seq_cst_gap, AdminLock, AtomicU128, AtomicU64, Ordering};

use super::gcra::{Growth, Mode, Params, Timeline};
use super::quota::{BucketQuota, ShaperQuota};
use super::word::{CellState, NARROW_MAX_TIME, TAGS};

/// Configurations kept: the one in force and the 31 before it (48 bytes each). A cell last
/// decided under an older one converts conservatively (see `BucketConfig::convert`).
#[cfg(not(loom))]
pub(crate) const KEPT: u64 = 32;
/// Configurations kept: under loom 4, half the 8 tags a narrow word keeps there (as 32 is
/// half of 64), so that models reach the conservative conversion and a tag's reuse in a
/// few reconfigurations.
#[cfg(loom)]
pub(crate) const KEPT: u64 = 4;

const _: () = assert!(2 * KEPT <= TAGS);

/// A slot's stamp while a reconfiguration rewrites it: no epoch has this number.
const BUSY: u64 = u64::MAX;

/// A slot's reading before it is fixed (no reading since the origin is this large: readings
/// are clamped at [`CLAMP`](super::word::CLAMP)).
const UNSET: u64 = u64::MAX;

/// The reading word of a slot, `[epoch: 64 | reading: 64]`: the epoch it belongs to beside
/// the reading, so that a CAS fixing the reading of one epoch fails on a slot that a later
/// reconfiguration has reused.
fn reading_word(epoch: u64, reading: u64) -> u128 {
    (u128::from(epoch) << 64) | u128::from(reading)
}

/// One configuration of the ring and the epoch it belongs to.
struct Slot {
    /// The epoch whose configuration the slot holds ([`BUSY`] while it is rewritten): a
    /// seqlock stamp, read before and after the fields.
    stamp: AtomicU64,
    period: AtomicU64,
    span: AtomicU64,
    limit: AtomicU64,
    /// `[epoch | reading]`: the reading (ns since the origin) at which the configuration took
    /// effect, [`UNSET`] until fixed. Read only by conversions.
    reading: AtomicU128,
}

impl Slot {
    fn new(epoch: u64, params: &Params, reading: u64) -> Self {
        Self {
            stamp: atomic(epoch),
            period: atomic(params.period),
            span: atomic(params.span),
            limit: atomic(params.limit),
            reading: AtomicU128::new(reading_word(epoch, reading)),
        }
    }
}

/// One configuration read whole from its slot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) params: Params,
    /// When it took effect, ns since the origin; [`UNSET`] until fixed.
    reading: u64,
}

/// The configuration of one or many bucket cells: rate, burst (or a shaper's maximum wait
/// and per-call bound), the origin of their times, and the history of recent
/// reconfigurations that lets a cell convert itself on its next access.
///
/// A [`TokenBucket`](crate::TokenBucket) or [`LeakyBucket`](crate::LeakyBucket) is one
/// [`BucketCell`](crate::cell::BucketCell), one `BucketConfig` and a clock; a keyed limiter
/// shares one `BucketConfig` among all its cells.
///
/// ```
/// use ringlimit::cell::{BucketCell, BucketConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::{BucketQuota, Rate};
/// use ringlimit::cell::Compact;
///
/// let clock = ManualClock::new();
/// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(10)?, 2)?, &clock);
/// let (alice, bob) = (BucketCell::<Compact>::new(&config), BucketCell::<Compact>::new(&config));
/// assert!(alice.try_acquire(&config, &clock) && alice.try_acquire(&config, &clock));
/// assert!(!alice.try_acquire(&config, &clock)); // alice's burst is spent
/// assert!(bob.try_acquire(&config, &clock)); // bob's is not
/// config.set_limit(&clock, 5)?; // both cells convert on their next access
/// assert_eq!(bob.available(&config, &clock), 1); // keeping the permit bob had
/// assert_eq!(config.limit(), 5);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct BucketConfig {
    /// The epoch in force: how many reconfigurations came before it.
    current: AtomicU64,
    /// The latest reading any epoch took effect at (ns since the origin): a bound on the
    /// readings of the epochs the ring no longer holds, which a conservative conversion
    /// needs when the clock has been set back.
    high: AtomicU64,
    /// Slot `e % KEPT` holds epoch `e`'s configuration while `e > current - KEPT`.
    slots: [Slot; KEPT as usize],
    mode: Mode,
    line: Timeline,
    /// A shaper's per-call cap as last set (`u64::MAX`: none); read and written under
    /// `admin` only.
    cap: AtomicU64,
    /// Serializes reconfigurations; decisions never take it.
    admin: AdminLock,
    /// Built from an unlimited quota: every call is admitted, and it cannot be reconfigured.
    unlimited: bool,
    /// How a meter's cells convert when the burst does not shrink: as the limiters do
    /// (keeping permits), or keeping a full bucket full (keyed limiters, see `keeping_debt`).
    growth: Growth,
    /// 1 once a [`Narrow`](super::Narrow) cell may hold this configuration's epochs modulo
    /// [`TAGS`]: reconfigurations then keep the quiet rule (see `quiet_rule`). Set before
    /// any such cell reads the epoch in force.
    tagged: AtomicU64,
    /// The latest quiet epoch (see `quiet_rule`); read and written under `admin` only.
    quiet: AtomicU64,
    /// The reading (ns since the origin) the latest quiet reconfiguration was judged at:
    /// narrow cells decide no earlier (see `floor`).
    floor: AtomicU64,
    /// The longest span any epoch had (a shaper's cells keep their schedules across
    /// conversions); read and written under `admin` only.
    widest: AtomicU64,
}

impl BucketConfig {
    /// A token bucket's (or a leaky meter's) configuration, its origin read from `clock`.
    /// Cells start full ([`BucketCell::new`](crate::cell::BucketCell::new)), whatever the
    /// quota's [`start_empty`](BucketQuota::start_empty) says: a cell made later has no
    /// reading to be empty at.
    ///
    /// ```
    /// use ringlimit::cell::BucketConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(5)?, 2)?, &ManualClock::new());
    /// assert_eq!((config.rate(), config.limit()), (Rate::per_second(5)?, 2));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn token<C: Clock + ?Sized>(quota: BucketQuota, clock: &C) -> Self {
        Self::new(quota.config(), clock.now_nanos(), quota.is_unlimited())
    }

    /// A shaper's configuration, its origin read from `clock`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{Rate, ShaperQuota};
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::shaper(ShaperQuota::new(Rate::per_second(10)?, Duration::from_millis(100))?, &clock);
    /// let cell: BucketCell = BucketCell::new(&config);
    /// assert!(cell.try_acquire(&config, &clock));
    /// assert!(!cell.try_acquire(&config, &clock)); // the next call would have to wait 100 ms
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn shaper<C: Clock + ?Sized>(quota: ShaperQuota, clock: &C) -> Self {
        Self::new(quota.config(), clock.now_nanos(), false)
    }

    /// A configuration of `params` whose times start at `origin` on its clock.
    pub(crate) fn new(params: Params, origin: u64, unlimited: bool) -> Self {
        Self {
            current: atomic(0),
            high: atomic(0),
            // Epoch 0 took effect at the origin; the other slots belong to no epoch yet.
            slots: std::array::from_fn(|i| {
                let epoch = if i == 0 { 0 } else { BUSY };
                Slot::new(epoch, &params, 0)
            }),
            mode: params.mode,
            line: Timeline::new(origin),
            cap: atomic(u64::MAX),
            admin: AdminLock::new(),
            unlimited,
            growth: Growth::KeepPermits,
            tagged: atomic(0),
            quiet: atomic(0),
            floor: atomic(0),
            widest: atomic(params.span),
        }
    }

    /// This configuration, its meter cells keeping their debt when the burst grows: a full
    /// bucket stays full across every reconfiguration, as a fresh cell is (what lets a keyed
    /// limiter drop a full bucket without changing any decision), where by default a cell
    /// keeps its count of permits. A token bucket or leaky meter's
    /// [`Narrow`](super::Narrow) cells need it (see [`BucketCell::try_new`](crate::cell::BucketCell::try_new)).
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// use ringlimit::cell::Compact;
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 1)?, &clock).keeping_debt();
    /// let cell = BucketCell::<Compact>::new(&config);
    /// assert!(cell.try_acquire(&config, &clock)); // one permit in debt
    /// config.set_limit(&clock, 3)?;
    /// assert_eq!(cell.available(&config, &clock), 2); // still one in debt
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    #[must_use]
    pub fn keeping_debt(mut self) -> Self {
        self.growth = Growth::KeepDebt;
        self
    }

    /// This configuration, for [`Narrow`](super::Narrow) cells from the start: its timeline
    /// ends where their word does (2^58 - 1 ns after the origin, about 9.1 years), and its
    /// reconfigurations keep the quiet rule.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn narrowed(mut self) -> Self {
        self.line.end = self.line.end.min(NARROW_MAX_TIME);
        self.tagged = atomic(1);
        self
    }

    /// Marks this configuration as holding [`Narrow`](super::Narrow) cells, before a new
    /// one reads the epoch in force; `false` (and no mark) if this is a token bucket's or
    /// leaky meter's configuration that keeps permits (not
    /// [`keeping_debt`](Self::keeping_debt)): the quiet rule's argument needs a full bucket
    /// to stay full across every reconfiguration, and under keeping permits a misread old
    /// cell would read as full under a grown burst (an over-admission).
    #[inline]
    pub(crate) fn hold_tagged_cells(&self) -> bool {
        if self.mode != Mode::Shaper && self.growth != Growth::KeepDebt {
            return false;
        }
        // Acquire: a cell that finds the mark set by another reads the epoch after that
        // store (SeqCst), which therefore precedes, in the SeqCst order, every
        // reconfiguration that could reuse this cell's tag: they load the mark after.
        if self.tagged.load(Ordering::Acquire) == 0 {
            // SeqCst: ordered before this cell's SeqCst load of the epoch in force, hence
            // before the publication of every later epoch and the reconfigurations after.
            self.tagged.store(1, Ordering::SeqCst);
        }
        true
    }

    /// Whether this configuration is marked as holding narrow cells (a debug check).
    pub(crate) fn holds_tagged_cells(&self) -> bool {
        // Relaxed: a debug assertion's reading, ordering nothing.
        self.tagged.load(Ordering::Relaxed) != 0
    }

    /// The earliest reading (ns since the origin) a [`Narrow`](super::Narrow) cell decides
    /// at, loaded after the epoch in force: the reading at which the latest quiet
    /// reconfiguration found every cell that a reused tag could name full. A reading
    /// older than that, seen with an epoch published after it, was taken before a clock
    /// reading that precedes the epoch's publication: raising it to the floor is a time the
    /// clock showed inside the call.
    #[inline]
    pub(crate) fn floor(&self) -> u64 {
        // Acquire: pairs with the Release store before the quiet epoch's publication, so a
        // call that loaded that epoch (or a later one) sees this floor or a later one.
        self.floor.load(Ordering::Acquire)
    }

    /// The quiet rule of [`Narrow`](super::Narrow) cells, checked under the admin lock by a
    /// reconfiguration from `epoch` before it publishes `epoch + 1`: `Err` if it
    /// must be refused, else `Ok(Some(reading))` when it had to read the clock to find the
    /// new epoch quiet, `Ok(None)` when it may go ahead regardless (and
    /// [`note_quiet`](Self::note_quiet) then judges it at its own reading).
    ///
    /// With `W` the widest span any epoch has had: a cell last written under epoch `e` has a
    /// time of at most `ρ(e+1) + W` (its decision read the clock before the next epoch was
    /// published, hence before that epoch's reading `ρ(e+1)`), and one converted to `e`
    /// from its reading `ρ(e)` (a replay of the kept history) at most `ρ(e) + W`. So if
    /// epoch `j` takes effect at a reading above `ρ(j-1) + W` (`j` is *quiet*), every cell
    /// last written under an epoch up to `j - 2` holds a time below that reading, with one
    /// exception: a cell converted to `e` from its *emptiest* state (one 31 or more epochs
    /// behind, or whose slot was being reused) is a burst behind `high`, the latest reading
    /// of any epoch fixed before the conversion, which may belong to an epoch after `e`
    /// published between the conversion's check and its CAS; such a cell can hold a time
    /// up to `ρ(h) + W` for a later epoch `h`, past the quiet reading. That cell is already
    /// the emptiest the spec allows: read under a reused tag it is at most as full as then
    /// (a meter in debt, keeping debt, never gains permits from a conversion), so it
    /// refuses more, for at most one burst's refill, and never admits more than the spec;
    /// this widens the documented emptiest-conversion deviation, nothing else. A tag is
    /// reused when epoch `e + TAGS` is published, making the cells of
    /// `e` and earlier read as later epochs; that is harmless when their times are below
    /// every reading they are decided at (they read as full buckets, or emptier after a
    /// conversion, under any epoch): narrow cells decide no earlier than the latest quiet
    /// reading ([`floor`](Self::floor)). Hence the rule: epoch `n` is published only if an
    /// epoch `j >= n - TAGS + 2` is quiet, `n` itself included; otherwise the
    /// reconfiguration is refused until just after `ρ(n-1) + W`. The same bound rules out
    /// ABA on a narrow word: a call whose CAS expects a word of epoch `e` loaded it before
    /// `e + 1` was published, and a cell decided or converted after a quiet epoch holds a
    /// time no earlier than its reading, so the word cannot come back.
    fn quiet_rule<C: Clock + ?Sized>(
        &self,
        clock: &C,
        epoch: u64,
    ) -> Result<Option<u64>, ConfigError> {
        // `W` here is the widest span of the epochs published so far (up to `epoch`): the
        // quiet claim for `epoch + 1` is about the cells of epochs up to `epoch - 1`, so the
        // new configuration's span is not needed, and it joins `widest` only once published
        // (a refused reconfiguration leaves no trace).
        // Relaxed: under the admin lock.
        if epoch + 1 - self.quiet.load(Ordering::Relaxed) <= TAGS - 2 {
            return Ok(None);
        }
        let settled = self.settled_after(epoch);
        let now = self.line.since(clock.now_nanos());
        if now > settled {
            return Ok(Some(now));
        }
        // A bound past the narrow timeline's end (a span of about 9 years, or a
        // configuration that old) is never reached while a decision can still admit: say
        // so rather than suggest a wait.
        let retry_after = if settled >= self.line.end.min(NARROW_MAX_TIME) {
            Duration::MAX
        } else {
            Duration::from_nanos(settled.saturating_add(1) - now)
        };
        Err(ConfigError::ReconfiguredTooOften { retry_after })
    }

    /// A bound on the time of every cell converted to `epoch` or written under it before
    /// the next epoch's publication: `ρ(epoch)` plus the widest span any epoch has had (a
    /// meter's conversion leaves a time at most the new span past its reading; a shaper's
    /// keeps the schedule, which any earlier span may have set).
    fn settled_after(&self, epoch: u64) -> u64 {
        // Relaxed: under the admin lock.
        let widest = self.widest.load(Ordering::Relaxed);
        // `epoch`'s reading, fixed by its own reconfiguration before it returned (0 for
        // epoch 0). An unfixed one (never: the slot is the one in force) counts as never.
        self.entry(epoch)
            .map(|entry| entry.reading)
            .filter(|&reading| reading != UNSET)
            .map_or(u64::MAX, |reading| reading.saturating_add(widest))
    }

    /// Records `next` (just published from `epoch`, configuration `old`) as quiet if it was
    /// found so before its publication (`pre`), or took effect at a `reading` late enough.
    /// Under the admin lock, before any later epoch is published.
    fn note_quiet(&self, next: u64, pre: Option<u64>, reading: Option<u64>) {
        let quiet = pre.or_else(|| reading.filter(|&at| at > self.settled_after(next - 1)));
        if let Some(at) = quiet {
            // Relaxed: under the admin lock.
            self.quiet.store(next, Ordering::Relaxed);
            // Release: before any later epoch's publication (a SeqCst store, also a
            // Release), so a narrow cell that loads such an epoch sees this floor; the
            // cells a reused tag names only appear from epoch `next + TAGS - 2` on.
            self.floor.fetch_max(at, Ordering::Release);
        }
    }

    /// Whether this was built from an unlimited quota.
    pub(crate) fn unlimited(&self) -> bool {
        self.unlimited
    }

    /// The rate in force (a shaper's leak rate).
    ///
    /// ```
    /// use ringlimit::cell::BucketConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// let config = BucketConfig::token(BucketQuota::per_second(3)?, &ManualClock::new());
    /// assert_eq!(config.rate(), Rate::per_second(3)?);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.params().period)
    }

    /// The most permits one call may take: the burst (a meter's capacity), or a shaper's
    /// per-call bound; `u64::MAX` when unlimited.
    ///
    /// ```
    /// use ringlimit::cell::BucketConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::BucketQuota;
    /// let config = BucketConfig::token(BucketQuota::per_second(3)?.burst(9)?, &ManualClock::new());
    /// assert_eq!(config.limit(), 9);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.params().limit
    }

    /// Changes the rate for every cell, at a reading of `clock`: a meter keeps the permits
    /// each cell has at that reading (rounded down), a shaper's schedule stands.
    /// [`ConfigError::Unlimited`] on an unlimited configuration.
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(1)?, 1)?, &clock);
    /// let cell: BucketCell = BucketCell::new(&config);
    /// assert!(cell.try_acquire(&config, &clock));
    /// config.set_rate(&clock, Rate::per_second(1000)?)?;
    /// clock.advance_nanos(1_000_000);
    /// assert!(cell.try_acquire(&config, &clock));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn set_rate<C: Clock + ?Sized>(&self, clock: &C, rate: Rate) -> Result<(), ConfigError> {
        if self.unlimited {
            return Err(ConfigError::Unlimited);
        }
        self.reconfigure(clock, |params, cap| Ok((params.with_rate(rate, cap)?, cap)))
    }

    /// Changes the burst (a meter's capacity) for every cell, keeping the permits each has,
    /// or caps a shaper's per-call bound; the meaning of
    /// [`RateLimiter::set_limit`](crate::RateLimiter::set_limit).
    ///
    /// ```
    /// use ringlimit::cell::{BucketCell, BucketConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::BucketQuota;
    /// let clock = ManualClock::new();
    /// let config = BucketConfig::token(BucketQuota::per_second(10)?.burst(1)?, &clock);
    /// let cell: BucketCell = BucketCell::new(&config);
    /// config.set_limit(&clock, 4)?;
    /// assert_eq!(cell.available(&config, &clock), 1); // the three new permits refill at the rate
    /// assert_eq!(config.limit(), 4);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn set_limit<C: Clock + ?Sized>(&self, clock: &C, limit: u64) -> Result<(), ConfigError> {
        if self.unlimited {
            return Err(ConfigError::Unlimited);
        }
        self.reconfigure(clock, |params, cap| {
            let cap = match params.mode {
                Mode::Meter => cap,
                Mode::Shaper => limit,
            };
            Ok((params.limited(limit)?, cap))
        })
    }

    /// The cells' timeline: their origin on the clock and their last time.
    pub(crate) fn line(&self) -> &Timeline {
        &self.line
    }

    /// The epoch in force.
    #[inline]
    pub(crate) fn current(&self) -> u64 {
        // SeqCst: the reconfiguration's store is SeqCst; a decision that reads the old epoch
        // here read its clock before (the gap below orders the two under loom), so its
        // reading is no later than the reading the new epoch's conversions use, which is
        // taken after that store (the guide's proof).
        seq_cst_gap();
        self.current.load(Ordering::SeqCst)
    }

    /// Epoch `epoch`'s configuration, or `None` if its slot has been reused (the epoch is
    /// [`KEPT`] or more reconfigurations old) or is being rewritten: the hot path's read.
    #[inline]
    pub(crate) fn params_at(&self, epoch: u64) -> Option<Params> {
        self.read(epoch, |_| ()).map(|(params, ())| params)
    }

    /// Epoch `epoch`'s configuration and reading, as [`params_at`](Self::params_at).
    pub(crate) fn entry(&self, epoch: u64) -> Option<Entry> {
        self.read(epoch, |slot| {
            // Acquire: as the fields below.
            let word = slot.reading.load(Ordering::Acquire);
            if word >> 64 == u128::from(epoch) {
                // The low half: the cast is exact.
                word as u64
            } else {
                UNSET
            }
        })
        .map(|(params, reading)| Entry { params, reading })
    }

    /// Reads epoch `epoch`'s slot (its fields and `extra`) between two loads of its stamp.
    #[inline]
    fn read<T>(&self, epoch: u64, extra: impl FnOnce(&Slot) -> T) -> Option<(Params, T)> {
        // The cast is exact: the index is below KEPT.
        let slot = &self.slots[(epoch % KEPT) as usize];
        // Acquire (stamp and fields): pairs with the Release stores of a rewrite, so fields
        // written before the stamp that names `epoch` are visible, and each load stays
        // before the next. A field read from a later rewrite makes the closing stamp load
        // see that rewrite's `BUSY` or a later stamp, whose store came before it.
        if slot.stamp.load(Ordering::Acquire) != epoch {
            return None;
        }
        let params = Params {
            mode: self.mode,
            period: slot.period.load(Ordering::Acquire),
            span: slot.span.load(Ordering::Acquire),
            limit: slot.limit.load(Ordering::Acquire),
        };
        let extra = extra(slot);
        (slot.stamp.load(Ordering::Acquire) == epoch).then_some((params, extra))
    }

    /// The configuration in force.
    pub(crate) fn params(&self) -> Params {
        loop {
            if let Some(params) = self.params_at(self.current()) {
                return params;
            }
        }
    }

    /// Epoch `epoch`'s reading, fixing it at a fresh reading of `clock` if nobody has yet.
    /// Called only after `epoch` was seen in force, so the fresh reading is taken after the
    /// epoch was published.
    fn reading<C: Clock + ?Sized>(&self, epoch: u64, entry: &Entry, clock: &C) -> u64 {
        if entry.reading != UNSET {
            return entry.reading;
        }
        seq_cst_gap();
        let now = self.line.since(clock.now_nanos());
        let slot = &self.slots[(epoch % KEPT) as usize];
        // AcqRel, before the reading is fixed: a conversion that finds this epoch's slot
        // reused (so its reading fixed, after this) then sees a high mark no lower.
        self.high.fetch_max(now, Ordering::AcqRel);
        // AcqRel: the first fixer's reading is the one every conversion of this epoch uses;
        // Acquire on failure reads it. The word names the epoch, so the CAS fails on a slot
        // a later reconfiguration has reused.
        match slot.reading.compare_exchange(
            reading_word(epoch, UNSET),
            reading_word(epoch, now),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => now,
            // The low half of the fixed word (exact cast); `now` if the slot was reused (the
            // caller's closing check then sees the epoch gone and retries).
            Err(word) if word >> 64 == u128::from(epoch) => word as u64,
            Err(_) => now,
        }
    }

    /// `state` (of a cell last decided under `state.epoch`) converted to epoch `to`, loaded
    /// in force by the caller, with `to`'s configuration; `None` if `to`'s own slot was
    /// reused meanwhile (the configuration moved on: the caller reloads the epoch).
    ///
    /// Each reconfiguration between is replayed at its own reading, as the spec applies it
    /// ([`Params::convert`]). Where the chain is broken (the cell is more than
    /// [`KEPT`]` - 1` epochs behind, or a slot it needs is being reused by a reconfiguration
    /// racing this call), it restarts after the break from the emptiest state the cell could
    /// be in (`emptiest`). Conversions are monotone in the time, so this never admits more
    /// than the exact chain would; and it never waits for the racing reconfiguration.
    pub(crate) fn convert<C: Clock + ?Sized>(
        &self,
        state: CellState,
        to: u64,
        clock: &C,
    ) -> Option<(CellState, Params)> {
        // A cell of this configuration is never ahead of it; one that is (used with another
        // configuration, which it does not belong to) is treated as one with no history.
        let gap = to.checked_sub(state.epoch).filter(|&gap| gap < KEPT);
        // The time and configuration so far, `None` while the chain is broken.
        let mut done = gap
            .and_then(|_| self.params_at(state.epoch))
            .map(|params| (state.time, params));
        let first = match gap {
            Some(_) => state.epoch + 1,
            None => to.saturating_sub(KEPT - 1),
        };
        for epoch in first..=to {
            let Some(entry) = self.entry(epoch) else {
                if epoch == to {
                    return None;
                }
                done = None;
                continue;
            };
            let reading = self.reading(epoch, &entry, clock);
            let time = match done {
                Some((time, params)) => {
                    params.convert(&entry.params, time, reading, self.line.end, self.growth)
                }
                None => self.emptiest(state.time, &entry.params, reading),
            };
            done = Some((time, entry.params));
        }
        // `to`'s slot was read last: confirm it was not reused while converting.
        self.params_at(to)?;
        done.map(|(time, params)| (CellState { time, epoch: to }, params))
    }

    /// The emptiest state a cell whose time was `time` can be in just after a
    /// reconfiguration to `params` at `reading`, whatever the configurations and readings in
    /// between: a meter a whole new burst behind the latest of its time, this reading and
    /// every earlier one (a conversion at `ρ` leaves a time of at most `max(ρ, time) + τ'`,
    /// so by induction no history ends later), a shaper's schedule as it is (its
    /// conversions leave it alone). Under a configuration keeping debt (a keyed limiter's),
    /// a meter at time 0 (a fresh cell, or one a keyed table renewed for a new key) is full
    /// at every reading, so full after every conversion (they keep a full bucket full): it
    /// stays at 0, as the exact chain would leave it full. (Keeping permits instead, a
    /// growing burst leaves a full bucket short of the new burst: no such shortcut.)
    fn emptiest(&self, time: u64, params: &Params, reading: u64) -> u64 {
        match self.mode {
            Mode::Shaper => time,
            Mode::Meter if time == 0 && self.growth == Growth::KeepDebt => 0,
            Mode::Meter => {
                // Acquire: pairs with the AcqRel `fetch_max` of every fixer, which came before
                // the reading CAS this conversion's slot reads depend on.
                let high = self.high.load(Ordering::Acquire);
                // Times and readings are at most `CLAMP`, far below `u64::MAX - span`.
                (time.max(reading).max(high) + params.span).min(self.line.end)
            }
        }
    }

    /// Replaces the configuration with `change(current, cap)`, which returns the new
    /// configuration and the shaper's new per-call cap. Linearizable for every cell: the
    /// new epoch takes effect when its reading is fixed (by this call, before it returns, or
    /// by a cell's access just before), and each cell converts on its next access.
    pub(crate) fn reconfigure<C: Clock + ?Sized>(
        &self,
        clock: &C,
        change: impl FnOnce(Params, u64) -> Result<(Params, u64), ConfigError>,
    ) -> Result<(), ConfigError> {
        self.admin.with(|| {
            // Relaxed: only reconfigurations store it, and they hold the lock.
            let epoch = self.current.load(Ordering::Relaxed);
            let old = self.params();
            // Relaxed: `cap` is only touched under the admin lock, which orders it.
            let (new, cap) = change(old, self.cap.load(Ordering::Relaxed))?;
            let next = epoch + 1;
            // SeqCst: see `hold_tagged_cells`.
            let tagged = self.tagged.load(Ordering::SeqCst) != 0;
            let pre = if tagged {
                self.quiet_rule(clock, epoch)?
            } else {
                None
            };
            let slot = &self.slots[(next % KEPT) as usize];
            // Relaxed: the Release stores below come after it, so a reader that sees any of
            // them sees this stamp (or a later one) at its closing check.
            slot.stamp.store(BUSY, Ordering::Relaxed);
            // Release (fields and reading): a reader that loads one of these (Acquire) then
            // sees `BUSY` or later at its closing stamp check and discards what it read.
            slot.period.store(new.period, Ordering::Release);
            slot.span.store(new.span, Ordering::Release);
            slot.limit.store(new.limit, Ordering::Release);
            // A fresh word, not a CAS: no fixer CASes this epoch's word before the stamp
            // below names it. (The loom stand-in has no store; a CAS from the loaded value
            // that cannot fail under the lock does the same.)
            let old_reading = slot.reading.load(Ordering::Acquire);
            let stored = slot.reading.compare_exchange(
                old_reading,
                reading_word(next, UNSET),
                Ordering::Release,
                Ordering::Relaxed,
            );
            debug_assert!(
                stored.is_ok(),
                "no other call writes a slot being rewritten"
            );
            // Release: publishes the fields to readers that load this stamp (Acquire).
            slot.stamp.store(next, Ordering::Release);
            // Relaxed: as the load above.
            self.cap.store(cap, Ordering::Relaxed);
            // Relaxed (both): under the admin lock. Every reconfiguration, tagged or not,
            // folds its span in once it is sure to be published, so `widest` is right
            // whenever tagging starts (a configuration reconfigured before its first narrow
            // cell, or a reconfiguration racing that cell's `hold_tagged_cells`).
            let widest = self.widest.load(Ordering::Relaxed).max(new.span);
            self.widest.store(widest, Ordering::Relaxed);
            if pre.is_some() {
                // Found quiet before the publication: the floor goes out with it.
                self.note_quiet(next, pre, None);
            }
            // SeqCst: the publication (see `current`); Release within it publishes the slot
            // to decisions that load the new epoch.
            self.current.store(next, Ordering::SeqCst);
            let reading = self
                .entry(next)
                .map(|entry| self.reading(next, &entry, clock));
            if tagged && pre.is_none() {
                self.note_quiet(next, None, reading);
            }
            Ok(())
        })
    }

    /// Bytes this configuration occupies.
    ///
    /// ```
    /// use ringlimit::cell::BucketConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::{BucketQuota, Rate};
    /// let config = BucketConfig::token(BucketQuota::new(Rate::per_second(5)?, 1)?, &ManualClock::new());
    /// assert!(config.footprint() >= 8 * 48);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl fmt::Debug for BucketConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketConfig")
            .field("epoch", &self.current())
            .field("params", &self.params())
            .field("line", &self.line)
            .finish()
    }
}
