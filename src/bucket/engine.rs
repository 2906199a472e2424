//! The lock-free engine behind [`TokenBucket`](crate::TokenBucket) and
//! [`LeakyBucket`](crate::LeakyBucket): one state word and eight configuration slots
//! ([the guide](crate::guide::bucket)).

use std::fmt;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::layout::Layout;
use crate::limiter::Decision;
use crate::limiter::{Admission, Grant, Owner, Ticket};
use crate::sync::{atomic, AdminLock, AtomicU32, AtomicU64, Backoff, Ordering, LONG_RETRY_STEP};

use super::gcra::{Growth, Mode, Params, Timeline, Verdict};
use super::word::{State, SLOTS};

/// One configuration, as [`Params`] (the mode is the engine's, fixed), and its number.
struct Slot {
    period: AtomicU64,
    span: AtomicU64,
    limit: AtomicU64,
    /// The configuration epoch: how many reconfigurations came before this configuration.
    /// A grant's ticket carries it, and a refund of a ticket from another epoch restores
    /// nothing (the word's 3-bit `gen` wraps after eight reconfigurations; this does not).
    epoch: AtomicU64,
}

impl Slot {
    fn new(config: &Params) -> Self {
        Self {
            period: atomic(config.period),
            span: atomic(config.span),
            limit: atomic(config.limit),
            epoch: atomic(0),
        }
    }
}

pub(crate) struct Engine<L: Layout> {
    /// `[time: 61 | gen: 3]`, see [`super::word`].
    word: L::Cell<AtomicU64>,
    /// The configurations, indexed by the word's `gen`. Slot `gen + 1` is written only by
    /// a reconfiguration, under `admin`, before the CAS that makes it current.
    slots: L::Cell<[Slot; SLOTS]>,
    /// How many reconfigurations have taken effect, modulo 2^32 (the last one's epoch; `gen`
    /// is this modulo `SLOTS`): stored after the CAS that made that configuration current,
    /// under `admin`. [`try_acquire`](Self::try_acquire) reads it and the slot it names
    /// *before* the word, so that neither load waits for the word's line, and decides from
    /// them only if the word names the same `gen` and `current` still reads the same after
    /// the word. Four bytes in padding (no larger a limiter): with [`Padded`](crate::cell::Padded)
    /// in the tail beside `cap`, `line` and `admin`; in [`Compact`](crate::cell::Compact) usually
    /// on the word's line.
    current: AtomicU32,
    /// A shaper's per-call cap as last set (`u64::MAX`: none); read and written under
    /// `admin` only.
    cap: AtomicU64,
    mode: Mode,
    line: Timeline,
    admin: AdminLock,
    /// The id stamped on this bucket's grants; a refund of any other grant restores 0.
    owner: Owner,
}

impl<L: Layout> Engine<L> {
    /// An engine in `config` whose state's time is `time` at `origin` on its clock: 0 for a
    /// full meter or an idle shaper, `τ` for an empty meter.
    pub(crate) fn new(config: Params, origin: u64, time: u64) -> Self {
        Self {
            word: L::cell(atomic(
                State {
                    time,
                    generation: 0,
                }
                .pack(),
            )),
            slots: L::cell(std::array::from_fn(|_| Slot::new(&config))),
            current: AtomicU32::new(0),
            cap: atomic(u64::MAX),
            mode: config.mode,
            line: Timeline::new(origin),
            admin: AdminLock::new(),
            owner: Owner::new(),
        }
    }

    /// The configuration in slot `gen`.
    #[inline]
    fn slot(&self, generation: usize) -> Params {
        let slot = &self.slots[generation];
        // Acquire (all three): the word that names `gen` was loaded (Acquire) before, or, on
        // the hot path, `current` naming it was, so this slot's latest reconfiguration is
        // visible; Acquire also keeps a refusal's confirming re-load of the word after these
        // loads.
        Params {
            mode: self.mode,
            period: slot.period.load(Ordering::Acquire),
            span: slot.span.load(Ordering::Acquire),
            limit: slot.limit.load(Ordering::Acquire),
        }
    }

    /// The configuration epoch of slot `gen`. Read only off the hot path (grants,
    /// reservations, refunds), after the word that made `gen` current was loaded.
    #[inline]
    fn epoch(&self, generation: usize) -> u64 {
        // Acquire: as the slot's other fields in `slot`; the word naming `gen` was loaded
        // (Acquire) before, so the epoch its reconfiguration stored is visible.
        self.slots[generation].epoch.load(Ordering::Acquire)
    }

    /// Loads the state word.
    #[inline]
    fn load(&self) -> u64 {
        // Acquire: pairs with the Release CAS of the reconfiguration that made this word's
        // `gen` current (admission CASes continue its release sequence), so its slot is
        // visible to loads after this one (and the hot path's re-load of `current` sees at
        // least the store of the reconfiguration before it).
        self.word.load(Ordering::Acquire)
    }

    /// Whether the state word still is `word`: a decision made without writing (a refusal,
    /// an error, a snapshot) then held at the first load, under the slot it read.
    #[inline]
    fn confirm(&self, word: u64) -> bool {
        // Acquire: as in `load`; it comes after the slot loads (themselves Acquire).
        self.word.load(Ordering::Acquire) == word
    }

    /// Moves the state from `word` to `to`; `Err(observed)` if it was not `word`.
    #[inline]
    fn swap(&self, word: u64, to: State) -> Result<(), u64> {
        self.swap_packed(word, to.pack())
    }

    /// [`swap`](Self::swap) to a word already packed.
    #[inline]
    fn swap_packed(&self, word: u64, to: u64) -> Result<(), u64> {
        // Release on success: the caller's clock reading happens-before any reconfiguration
        // that loads this word or a later one (Acquire), so that reconfiguration's own
        // reading, taken after its load, is no older than this one (for a clock that is an
        // atomic, by coherence; the TSC is monotonic on one core and, where invariant,
        // across cores). A plain store on x86; a later reader still synchronizes with the
        // last reconfiguration through the release sequence this read-modify-write
        // continues. Acquire on failure: the observed word may carry a newer `gen`, whose
        // slot the retry reads.
        self.word
            .compare_exchange(word, to, Ordering::Release, Ordering::Acquire)
            .map(|_| ())
    }

    /// The id this bucket stamps on its grants.
    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    /// The configuration in force, read consistently with the word.
    pub(crate) fn config(&self) -> Params {
        loop {
            let word = self.load();
            let config = self.slot(State::unpack(word).generation);
            if self.confirm(word) {
                return config;
            }
        }
    }

    /// Takes one permit at `now_raw` (clock ns): the hot path.
    ///
    /// It reads `current` and the slot it names first, then the word: the slot's loads do
    /// not wait for the word (whose line the last admission's CAS wrote), so the chain from
    /// one CAS to the next is the word's load, a compare, a conditional move or a predicted
    /// branch, an add and the CAS, as short as governor's. It decides from them only if the
    /// word names that slot's `gen` and `current` reads the same again after the word;
    /// anything else goes to [`try_acquire_from`](Self::try_acquire_from), which decides as
    /// every other call does. Why the slot read first is the one in force at the word
    /// ([the guide](crate::guide::bucket#the-hot-path)): `current` is stored (Release) after
    /// the CAS that made its configuration current, so its load (Acquire) sees that slot's
    /// stores, and the word loaded after it is that configuration's or a later one's; a
    /// later configuration's word comes after a later store of `current`, which the re-load
    /// then sees (the count wraps only after 2^32 reconfigurations). Always inlined: as a
    /// call it cost the caller's loop a call and a return.
    #[inline(always)]
    pub(crate) fn try_acquire(&self, now_raw: u64) -> bool {
        let now = self.line.since(now_raw);
        // Acquire: pairs with the Release store of the reconfiguration that made this
        // configuration current, so its slot's stores are visible to the loads in `slot`.
        let seq = self.current.load(Ordering::Acquire);
        let generation = seq as usize % SLOTS;
        let config = self.slot(generation);
        let word = self.load();
        let state = State::unpack(word);
        let end = self.line.end;
        // Relaxed: a word of a later configuration `k' >= seq + 8` naming this `gen` is in the
        // release sequence of reconfiguration k''s CAS, which the word's load (Acquire)
        // synchronizes with; k' - 1 stored `current` before releasing the admin lock that k'
        // took before its CAS, so this load reads at least k' - 1, not `seq`. A slot load
        // that read a rewrite of the slot synchronizes with it the same way (the Release
        // stores in `reconfigure`).
        if state.generation != generation
            || self.current.load(Ordering::Relaxed) != seq
            || now > end
            || config.limit == 0
        {
            return self.try_acquire_from(now, word);
        }
        let base = state.time.max(now);
        let Some(new) = base.checked_add(config.period).filter(|&new| new <= end) else {
            return self.try_acquire_from(now, word);
        };
        let to = match self.mode {
            // `max` and the add on the packed words, which share `gen`, so that the word's
            // load is followed by a compare and an add, not an unpack and a pack (`now` and
            // `period` fit shifted: both are at most `new <= end <= MAX_STATE_TIME`).
            Mode::Meter if new - now <= config.span => {
                word.max(
                    State {
                        time: now,
                        generation,
                    }
                    .pack(),
                ) + State::packed(config.period)
            }
            // Admitted only when its slot is now: the new word depends on `now` alone.
            Mode::Shaper if base == now => State {
                time: new,
                generation,
            }
            .pack(),
            // A refusal, held at the word's load (confirmed by a re-load, as `try_once`'s).
            _ if self.confirm(word) => return false,
            _ => return self.try_acquire_from(now, self.load()),
        };
        debug_assert_eq!(to, state.at(new).pack());
        match self.swap_packed(word, to) {
            Ok(()) => true,
            Err(observed) => self.try_acquire_again(now, observed),
        }
    }

    /// [`try_acquire`](Self::try_acquire) from `word` as every decision is made, out of line:
    /// what the hot path leaves (a `gen` or count other than `current`'s, a reading or a
    /// schedule past the end, a limit of 0, which no configuration has, a refusal whose word
    /// moved).
    #[cold]
    #[inline(never)]
    fn try_acquire_from(&self, now: u64, word: u64) -> bool {
        match self.try_once(now, 1, word) {
            Ok(decided) => matches!(decided, Ok(Outcome::Admitted(..))),
            Err(observed) => self.try_acquire_again(now, observed),
        }
    }

    /// [`try_acquire`](Self::try_acquire)'s retries ([`admit_again`](Self::admit_again)),
    /// answering a `bool` so that the hot path's call site stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn try_acquire_again(&self, now: u64, word: u64) -> bool {
        matches!(self.admit_again(now, 1, word), Ok(Outcome::Admitted(..)))
    }

    /// Decides `n` permits at `now_raw`.
    pub(crate) fn decide(&self, now_raw: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        let now = self.line.since(now_raw);
        let end = self.line.end;
        Ok(match self.admit(now, n)? {
            Outcome::Admitted(config, time, _) | Outcome::Unchanged(config, time) => {
                Decision::Admitted {
                    remaining: config.available(time, now, end),
                }
            }
            Outcome::Refused(config, time, retry_after) => {
                config.refused(time, now, end, retry_after)
            }
        })
    }

    /// The decision loop at `now` (ns since the origin).
    ///
    /// The clock is read once, by the caller, inside the call: a retry after a failed CAS
    /// re-derives everything from the word the CAS observed but keeps that reading. The call
    /// takes effect at its successful CAS (or its confirming re-load), deciding as the spec
    /// does at that reading; a reading older than the state only makes decisions stricter.
    #[inline]
    fn admit(&self, now: u64, n: u64) -> Result<Outcome, ExceedsLimit> {
        match self.try_once(now, n, self.load()) {
            Ok(decided) => decided,
            Err(observed) => self.admit_again(now, n, observed),
        }
    }

    /// [`admit`](Self::admit) for a grant: its retries start from the shortest backoff. A
    /// grant is a step of a composite decision (a policy's dimension, before its next
    /// dimensions), so the caller goes on to other lines before it comes back here: a lost
    /// CAS is another caller's one admission, not the start of its run of them, and the
    /// long wait that lets a run go by only delays this call (the policy rows of `cargo run
    /// --release --example compare -- --only policy`: figures in docs/BENCHMARKS.md).
    #[inline]
    fn admit_grant(&self, now: u64, n: u64) -> Result<Outcome, ExceedsLimit> {
        match self.try_once(now, n, self.load()) {
            Ok(decided) => decided,
            Err(observed) => self.retry(now, n, observed, Backoff::new()),
        }
    }

    /// [`admit`](Self::admit)'s retries, out of line so that the uncontended first try pays
    /// nothing for them: each after a backoff (`sync::Backoff`), from the word the last try
    /// observed. Measured on the 2-core machine (2 to 8 threads, the compare tool's allow
    /// rows, lock_free/parking_lot): retrying at once 0.75-0.81x on a busy run, 1.04-1.18x
    /// on a quieter one; backing off first 1.15-1.40x and 1.17-1.48x. The backoff starts at
    /// `sync::LONG_RETRY_STEP` (its docs: the shaper at two threads, 0.55-1.27x from step 0,
    /// 1.17-1.53x from it).
    #[cold]
    #[inline(never)]
    fn admit_again(&self, now: u64, n: u64, word: u64) -> Result<Outcome, ExceedsLimit> {
        self.retry(now, n, word, Backoff::starting_at(LONG_RETRY_STEP))
    }

    /// Tries again from `word` after each spin of `backoff`, until one try decides.
    #[cold]
    #[inline(never)]
    fn retry(
        &self,
        now: u64,
        n: u64,
        mut word: u64,
        backoff: Backoff,
    ) -> Result<Outcome, ExceedsLimit> {
        loop {
            backoff.spin();
            match self.try_once(now, n, word) {
                Ok(decided) => return decided,
                Err(observed) => word = observed,
            }
        }
    }

    /// One try of [`admit`](Self::admit) from `word`: `Ok` with the outcome, or
    /// `Err(observed)` when the word had moved (a lost CAS, or a refusal's re-load that found
    /// another word): decide again from `observed`.
    #[inline]
    fn try_once(&self, now: u64, n: u64, word: u64) -> Result<Result<Outcome, ExceedsLimit>, u64> {
        let state = State::unpack(word);
        let config = self.slot(state.generation);
        let verdict = config
            .check(n)
            .map(|()| (n > 0).then(|| config.decide(state.time, now, n, self.line.end)));
        match verdict {
            Ok(Some(Verdict::Admit(time))) => self
                .swap(word, state.at(time))
                .map(|()| Ok(Outcome::Admitted(config, time, state.generation))),
            _ if !self.confirm(word) => Err(self.load()),
            Ok(Some(Verdict::Refuse(retry_after))) => {
                Ok(Ok(Outcome::Refused(config, state.time, retry_after)))
            }
            Ok(None) => Ok(Ok(Outcome::Unchanged(config, state.time))),
            Err(error) => Ok(Err(error)),
        }
    }

    /// Permits available at `now_raw`.
    pub(crate) fn available(&self, now_raw: u64) -> u64 {
        let now = self.line.since(now_raw);
        loop {
            let word = self.load();
            let state = State::unpack(word);
            let available = self
                .slot(state.generation)
                .available(state.time, now, self.line.end);
            if self.confirm(word) {
                return available;
            }
        }
    }

    /// Reserves `n` permits at `now_raw`, usable within `max_wait`.
    pub(crate) fn attempt(
        &self,
        now_raw: u64,
        n: u64,
        max_wait: Duration,
    ) -> Result<Ticket, WaitError> {
        let now = self.line.since(now_raw);
        let mut word = self.load();
        loop {
            let state = State::unpack(word);
            let config = self.slot(state.generation);
            let scheduled = config.check(n).map_err(WaitError::from).and_then(|()| {
                (n > 0)
                    .then(|| config.schedule(state.time, now, n, max_wait, self.line.end))
                    .transpose()
            });
            match scheduled {
                Ok(Some(scheduled)) => match self.swap(word, state.at(scheduled.time)) {
                    Ok(()) => {
                        let epoch = self.epoch(state.generation);
                        return Ok(self.line.ticket(n, now_raw, scheduled, epoch));
                    }
                    // Retry at once from the observed word: reservations are not the hot
                    // path (`admit_again` backs off; this loop was not measured with it).
                    Err(observed) => word = observed,
                },
                _ if !self.confirm(word) => word = self.load(),
                Ok(None) => return Ok(Ticket::immediate(0, now_raw)),
                Err(error) => return Err(error),
            }
        }
    }

    /// Takes `n` permits at `now_raw` as [`decide`](Self::decide) does; a grant's mark is
    /// the time its admission moved the state to and its epoch the configuration's, which
    /// [`refund`](Self::refund) needs.
    pub(crate) fn grant(&self, now_raw: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let now = self.line.since(now_raw);
        let end = self.line.end;
        let at = now_raw.max(self.line.origin);
        let admission = match self.admit_grant(now, n)? {
            Outcome::Admitted(config, time, generation) => Admission::Granted(Grant::new(
                // The slot of `gen` keeps its epoch until eight more reconfigurations (the
                // ABA bound in the guide): it is the epoch the admission decided under.
                Ticket::new(n, at, at, u128::from(time)).with_epoch(self.epoch(generation)),
                config.available(time, now, end),
            )),
            Outcome::Unchanged(config, time) => Admission::Granted(Grant::new(
                Ticket::immediate(0, at),
                config.available(time, now, end),
            )),
            Outcome::Refused(config, time, retry_after) => Admission::Refused {
                available: config.available(time, now, end),
                retry_after,
            },
        };
        Ok(admission.owned_by(self.owner))
    }

    /// Gives back what can be given back of `ticket` (see [`Params::refund`]) at a reading
    /// of `clock`: one CAS from the word it read, retried from the observed word; returns
    /// the whole permits restored.
    ///
    /// The clock is read *after* the word is loaded, and again after every failed CAS,
    /// keeping the latest reading (as [`reconfigure`](Self::reconfigure) does): an
    /// admission's CAS is Release and its reading comes before it, so the refund's reading
    /// is no older than that of any admission in the word it changes. An older reading
    /// would make `mark - now` larger and give back time the bucket had already refilled.
    ///
    /// Under the admin lock: a refund is the only call that moves the state's time
    /// backwards, so, with an admission, it can bring the word back to the value a
    /// reconfiguration loaded (ABA); that reconfiguration's CAS would then win and convert,
    /// at its older reading, a state that holds the admission, re-rating the time between
    /// the two readings and minting permits when the rate rises. With refunds excluded, the
    /// word only moves forward while a reconfiguration holds the lock. Still one CAS, off
    /// the admission path; admissions never take the lock.
    pub(crate) fn refund(&self, clock: &dyn Clock, ticket: &Ticket) -> u64 {
        self.admin.with(|| self.refund_locked(clock, ticket))
    }

    /// Whether a refund of `ticket` would restore nothing at a reading of `clock` taken now:
    /// a refund that may skip the drain a restoring one needs. Conservative: the word is
    /// loaded before the clock is read (an older reading only restores more), the result
    /// is confirmed by a re-load (as `refund_locked`'s), and later admissions only move the
    /// time forward and a reconfiguration only changes the epoch, neither of which makes a
    /// refund restore; a concurrent refund that moves the time back is ordered after this
    /// one, which takes effect at the confirmed load.
    pub(crate) fn refunds_nothing(&self, clock: &dyn Clock, ticket: &Ticket) -> bool {
        let word = self.load();
        let now = self.line.since(clock.now_nanos());
        let state = State::unpack(word);
        let epoch = self.epoch(state.generation);
        let refund = self
            .slot(state.generation)
            .refund(epoch, state.time, now, ticket);
        refund.is_none() && self.confirm(word)
    }

    /// `change` applied to the configuration in force, its result dropped: a check before
    /// a drain that [`reconfigure`](Self::reconfigure) then repeats under the admin lock.
    pub(crate) fn check_change(
        &self,
        change: impl FnOnce(Params, u64) -> Result<(Params, u64), ConfigError>,
    ) -> Result<(), ConfigError> {
        // Relaxed: a pre-check only; `reconfigure` reads `cap` again under the lock.
        change(self.config(), self.cap.load(Ordering::Relaxed)).map(|_| ())
    }

    /// [`refund`](Self::refund), the admin lock held.
    fn refund_locked(&self, clock: &dyn Clock, ticket: &Ticket) -> u64 {
        let mut word = self.load();
        let mut now = self.line.since(clock.now_nanos());
        loop {
            let state = State::unpack(word);
            let epoch = self.epoch(state.generation);
            let refund = self
                .slot(state.generation)
                .refund(epoch, state.time, now, ticket);
            let Some((time, restored)) = refund else {
                if self.confirm(word) {
                    return 0;
                }
                word = self.load();
                now = now.max(self.line.since(clock.now_nanos()));
                continue;
            };
            match self.swap(word, state.at(time)) {
                Ok(()) => return restored,
                Err(observed) => {
                    word = observed;
                    now = now.max(self.line.since(clock.now_nanos()));
                }
            }
        }
    }

    /// Replaces the configuration with `change(current, cap)`, which returns the new
    /// configuration and the shaper's new per-call cap, at a reading of `clock` taken under
    /// the admin lock. Linearizable: the state's time is converted and the new slot made
    /// current in one CAS, retried from the observed word if an admission came between.
    ///
    /// The clock is read *after* the word is loaded, and again after every failed CAS,
    /// keeping the latest reading: an admission's CAS is Release and its reading comes
    /// before it, so the reading this conversion uses is no older than that of any
    /// admission in the word it converts (a conversion at an older reading would re-rate
    /// the time between the two at the new rate, minting permits when the rate rises).
    pub(crate) fn reconfigure(
        &self,
        clock: &dyn Clock,
        change: impl FnOnce(Params, u64) -> Result<(Params, u64), ConfigError>,
    ) -> Result<(), ConfigError> {
        self.admin.with(|| {
            let mut word = self.load();
            let mut now = self.line.since(clock.now_nanos());
            let generation = State::unpack(word).generation;
            let old = self.slot(generation);
            // Relaxed: `cap` is only touched under the admin lock, which orders it.
            let (new, cap) = change(old, self.cap.load(Ordering::Relaxed))?;
            let next = State::unpack(word).next_gen();
            let slot = &self.slots[next];
            // Relaxed: slot `gen`'s epoch was written under this lock, which orders it.
            let epoch = self.slots[generation].epoch.load(Ordering::Relaxed) + 1;
            debug_assert_eq!(epoch as usize % SLOTS, next);
            // Release (the three the hot path reads), though the CAS below (Release)
            // publishes them to every decision that loads the word after it: a call that read
            // this slot while it was being rewritten had stalled across eight
            // reconfigurations. On the general path that is the ABA bound in the type docs.
            // On the hot path, a load of one of these stores (Acquire) synchronizes with it,
            // so that call's re-load of `current`, after its word, sees at least the count
            // stored before this rewrite, not the one it started from, and it decides again.
            // Admin path only. (Loom keeps too few stores per atomic to reach this; the
            // argument is the evidence.)
            slot.period.store(new.period, Ordering::Release);
            slot.span.store(new.span, Ordering::Release);
            slot.limit.store(new.limit, Ordering::Release);
            // Relaxed: published by the Release CAS below; only read after a word naming
            // this slot (grants, refunds), never on the hot path.
            slot.epoch.store(epoch, Ordering::Relaxed);
            // Relaxed: as the load above.
            self.cap.store(cap, Ordering::Relaxed);
            loop {
                // Only reconfigurations change `gen`, and they hold the lock: still `gen`.
                let time = old.convert(
                    &new,
                    State::unpack(word).time,
                    now,
                    self.line.end,
                    Growth::KeepPermits,
                );
                let to = State {
                    time,
                    generation: next,
                }
                .pack();
                // Release: publishes the slot to every decision that loads this word or a
                // later one (Acquire). Acquire on failure: synchronizes with the admission
                // that wrote the observed word, so the clock reading below is no older than
                // its reading.
                match self
                    .word
                    .compare_exchange(word, to, Ordering::Release, Ordering::Acquire)
                {
                    Ok(_) => {
                        // Release: publishes the slot's stores above to a hot path that
                        // loads `current` (Acquire) and then the slot, before the word.
                        // The epoch modulo 2^32 (the truncation is the wrap the hot path's
                        // re-check states); `epoch % SLOTS == next`.
                        self.current.store(epoch as u32, Ordering::Release);
                        return Ok(());
                    }
                    Err(observed) => {
                        word = observed;
                        now = now.max(self.line.since(clock.now_nanos()));
                    }
                }
            }
        })
    }
}

/// What [`Engine::take_unless_plenty`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direct {
    /// Took one permit.
    Admitted,
    /// Not one permit available; nothing written.
    Refused,
    /// Enough available for a lease; nothing written.
    Plenty,
}

/// A batch of permits one admission took for a [sharded bucket](crate::ShardedBucket)'s
/// shard: `granted` permits whose slots on the schedule are `[start + i·period, start +
/// (i+1)·period)` for `i < granted` ([the guide](crate::guide::sharded_bucket)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    /// The schedule time (ns since the origin) the first permit's slot begins at:
    /// `max(time, now)` before the admission.
    pub(crate) start: u64,
    /// The period `T` of the configuration the lease was admitted under.
    pub(crate) period: u64,
    /// Permits admitted, at least 1.
    pub(crate) granted: u64,
}

impl<L: Layout> Engine<L> {
    /// `now_raw` (clock ns) as ns since the origin, as decisions read it.
    #[inline]
    pub(crate) fn since(&self, now_raw: u64) -> u64 {
        self.line.since(now_raw)
    }

    /// A shard's caller with nothing usable in its lease, at `now` (ns since the origin):
    /// [`Direct::Plenty`] if at least `plenty` permits are available and `worth(start,
    /// period)` says a lease whose slots begin at `start` (`max(time, now)`) would hold more
    /// than the caller's permit (worth a lease; nothing written), else one permit taken
    /// here, exactly as [`try_acquire`](Self::try_acquire) ([`Direct::Admitted`]), or a
    /// refusal confirmed by a re-load ([`Direct::Refused`]). One pass over the word and no
    /// division of its own: `decide` for `plenty` permits, then for one (`worth` may divide:
    /// the sharded bucket's does after a faster rate).
    pub(crate) fn take_unless_plenty(
        &self,
        now: u64,
        plenty: u64,
        worth: impl Fn(u64, u64) -> bool,
    ) -> Direct {
        let end = self.line.end;
        let mut word = self.load();
        loop {
            let state = State::unpack(word);
            let config = self.slot(state.generation);
            let verdict = match config.decide(state.time, now, plenty, end) {
                Verdict::Admit(_) if worth(state.time.max(now), config.period) => None,
                _ => Some(config.decide(state.time, now, 1, end)),
            };
            match verdict {
                Some(Verdict::Admit(time)) => match self.swap(word, state.at(time)) {
                    Ok(()) => return Direct::Admitted,
                    // Retry at once from the observed word, as `admit` does.
                    Err(observed) => word = observed,
                },
                _ if !self.confirm(word) => word = self.load(),
                Some(Verdict::Refuse(_)) => return Direct::Refused,
                None => return Direct::Plenty,
            }
        }
    }

    /// Admits a batch at `now` (ns since the origin) for a shard, in one CAS: `batch(left,
    /// start, period)` says how many of the `left` permits available to take (clamped to
    /// `1..=left`) given where the batch's slots would start and the period; `None` when
    /// not one permit is available (a refusal, confirmed by a re-load of the word, as
    /// `admit`'s). Every retry re-derives `left`, `start` and the batch from the observed
    /// word.
    pub(crate) fn lease(&self, now: u64, batch: impl Fn(u64, u64, u64) -> u64) -> Option<Lease> {
        let end = self.line.end;
        let mut word = self.load();
        loop {
            let state = State::unpack(word);
            let config = self.slot(state.generation);
            let left = config.available(state.time, now, end);
            let start = state.time.max(now);
            let granted = batch(left, start, config.period).clamp(1, left.max(1));
            let verdict = (left > 0).then(|| config.decide(state.time, now, granted, end));
            match verdict {
                Some(Verdict::Admit(time)) => match self.swap(word, state.at(time)) {
                    Ok(()) => {
                        return Some(Lease {
                            start,
                            period: config.period,
                            granted,
                        })
                    }
                    // Retry at once from the observed word, as `admit` does.
                    Err(observed) => word = observed,
                },
                _ if !self.confirm(word) => word = self.load(),
                _ => return None,
            }
        }
    }
}

/// What the decision loop did.
enum Outcome {
    /// Admitted under this configuration, in slot `gen` (the last field); the state's time
    /// became this.
    Admitted(Params, u64, usize),
    /// Refused under this configuration at this time, retry after this long; nothing
    /// changed.
    Refused(Params, u64, Duration),
    /// Nothing to decide (`n = 0`): the configuration and time it saw.
    Unchanged(Params, u64),
}

impl<L: Layout> fmt::Debug for Engine<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = State::unpack(self.load());
        f.debug_struct("Engine")
            .field("state", &state)
            .field("config", &self.slot(state.generation))
            .field("line", &self.line)
            .finish()
    }
}
