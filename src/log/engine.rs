//! The lock-free protocol behind [`SlidingLogCell`](crate::cell::SlidingLogCell) and
//! [`SlidingLog`](crate::SlidingLog): a ring of timestamp slots indexed by admission
//! sequence number, decided under a [`LogConfig`] ([the guide](crate::guide::log)).

use crate::clock::Clock;
use crate::limiter::Decision;
use crate::sync::{AtomicU64, Backoff, Ordering, LONG_RETRY_STEP};

use super::config::LogConfig;
use super::word::{retry_until, seq_add, seq_sub, slots_for, Head, Slot, MAX_STAMP};

/// The head and the slot of its seq, read in that order (two words: the head unpacks on
/// use, which keeps the view in registers).
#[derive(Debug, Clone, Copy)]
struct View {
    word: u64,
    slot: u64,
}

impl View {
    #[inline]
    fn head(self) -> Head {
        Head::unpack(self.word)
    }
}

/// The outcome of one admission attempt, before the caller shapes it into its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Admitted or refused, with the details the caller asked for.
    Decided(Decision),
    /// More permits than the limit in force at the decision.
    ExceedsLimit(u64),
}

/// What the head seq's slot says about that seq.
enum Found {
    /// Not claimed yet: the slot holds the entry of seq `k - C`, or a stamp.
    Free,
    /// Claimed by a single permit; the head has not moved past it yet.
    Single,
    /// Reserved by a group of `n`, which must be completed before the head moves on.
    Group(u64),
}

pub(crate) struct Ring {
    /// `[seq: 44 | label: 20]`, see [`Head`].
    head: AtomicU64,
    /// `C` slots, a power of two above the configuration's `max_limit`, so the slot a claim
    /// overwrites is never one a decision reads (those are the last `limit < C` seqs).
    slots: Box<[AtomicU64]>,
}

impl Ring {
    /// A ring with room for limits up to `capacity` (at least 1), its head at seq 0 under
    /// label 0.
    pub(crate) fn new(capacity: u64) -> Self {
        let len = slots_for(capacity);
        Self {
            head: AtomicU64::new(Head { seq: 0, label: 0 }.pack()),
            slots: (0..len)
                .map(|_| AtomicU64::new(Slot::EMPTY.pack()))
                .collect(),
        }
    }

    /// A ring whose head starts at `seq` (a multiple of twice the ring length, so the
    /// empty slots still read as the lap before it): for testing the 2^44 wraparound.
    #[cfg(test)]
    pub(crate) fn starting_at(capacity: u64, seq: u64) -> Self {
        let ring = Self::new(capacity);
        assert_eq!(seq % (2 * ring.slots.len() as u64), 0);
        // Relaxed: the ring is not shared yet; handing it to other threads synchronizes.
        ring.head
            .store(Head { seq, label: 0 }.pack(), Ordering::Relaxed);
        ring
    }

    /// The largest limit this ring decides: `C - 1`.
    pub(crate) fn capacity(&self) -> u64 {
        self.slots.len() as u64 - 1
    }

    /// Bytes of the ring's slots (the rest is the caller's).
    pub(crate) fn slot_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<AtomicU64>()
    }

    fn slot(&self, seq: u64) -> &AtomicU64 {
        // The length is a power of two: the mask keeps the index in bounds.
        &self.slots[(seq & (self.slots.len() as u64 - 1)) as usize]
    }

    fn lap(&self, seq: u64) -> u64 {
        seq >> self.slots.len().trailing_zeros()
    }

    fn parity(&self, seq: u64) -> u64 {
        self.lap(seq) & 1
    }

    fn classify(&self, slot: u64, seq: u64) -> Found {
        match Slot::unpack(slot) {
            Slot::Entry { parity, .. } if parity == self.parity(seq) => Found::Single,
            Slot::Group { lap, n } if lap == self.lap(seq) => Found::Group(n),
            _ => Found::Free,
        }
    }

    /// The expiry of seq `seq`'s entry, for a seq below the head and at most `C - 1` behind
    /// it. A group's first seq holds the group's size; its expiry is in the second seq.
    /// Values read after the head has moved are garbage, which every caller detects by a
    /// failed CAS or re-read of the head seq's slot.
    fn expiry(&self, seq: u64) -> u64 {
        // Acquire (both): if this returns a word written after the caller's view (the head
        // has moved on, or a group reserved at the head seq is filling slots), its writer
        // had seen the head seq claimed, so the caller's final re-read of that slot (or its
        // CAS) sees the claim and discards what was computed from this garbage. (The entry
        // itself would be visible with Relaxed: the caller's Acquire head read orders it.)
        match Slot::unpack(self.slot(seq).load(Ordering::Acquire)) {
            Slot::Entry { expiry, .. } => expiry,
            Slot::Group { .. } => {
                match Slot::unpack(self.slot(seq_add(seq, 1)).load(Ordering::Acquire)) {
                    Slot::Entry { expiry, .. } => expiry,
                    _ => 0,
                }
            }
            Slot::Stamp { .. } => 0,
        }
    }

    /// The latest timestamp logged before seq `k` (the log's time never goes below it).
    fn newest_before(&self, k: u64, window: u64) -> u64 {
        self.expiry(seq_sub(k, 1)).saturating_sub(window)
    }

    /// For `n` permits at seq `k` under `limit` at reading `t`: the log's time (never below
    /// the newest timestamp), and the expiry of seq `k+n-1-limit`, the newest entry the `n`
    /// claims would push out of the last `limit`. Admitting needs it expired (older ones
    /// expired with it). When it is seq `k-1` (as always for `limit = 1`) one read serves.
    fn time_and_pushed_out(&self, k: u64, n: u64, limit: u64, t: u64, window: u64) -> (u64, u64) {
        let newest = self.expiry(seq_sub(k, 1));
        let at = t.max(newest.saturating_sub(window));
        let pushed_out = if n == limit {
            newest
        } else {
            self.expiry(seq_sub(seq_add(k, n - 1), limit))
        };
        (at, pushed_out)
    }

    /// Entries among the `limit` seqs below `k` still in the window at `at` (their
    /// expiries are nondecreasing along seqs, so a binary search finds the first one).
    fn in_window(&self, k: u64, limit: u64, at: u64) -> u64 {
        let (mut lo, mut hi) = (0, limit);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.expiry(seq_sub(k, mid)) > at {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// Reads the head, then its seq's slot, while the head stays put.
    #[inline]
    fn view(&self) -> View {
        let mut backoff: Option<Backoff> = None;
        loop {
            // Acquire: pairs with the Release of the head CAS that moved the head here, so
            // every entry below it, published before that CAS, is visible; and with the
            // relabel that put its label there (whose configuration load it orders before
            // this thread's, see `settled`).
            let word = self.head.load(Ordering::Acquire);
            let seq = Head::unpack(word).seq;
            // Acquire: pairs with claims (so a helper sees what it completes) and with stamps
            // (so a stamp seen here comes with the configuration load that chose its label).
            let slot = self.slot(seq).load(Ordering::Acquire);
            // Acquire: the slot must describe seq `head.seq` while the head is still there.
            // A slot word written after the head left `word` was written by a thread that
            // had seen the newer head (the slot Acquire above pairs with its Release), so
            // this re-read then sees a different head. Without it a view can take a next-lap
            // entry for a free slot and overwrite it (the loom model
            // `stale_head_view_claims_over_next_lap_entry` builds that interleaving).
            if self.head.load(Ordering::Acquire) == word {
                return View { word, slot };
            }
            // The head moved under the view: back off before the next. Each of the three loads
            // may wait for a line to come from another core, and retried soon against
            // threads that keep moving the head a view can fail again and again while cross-core
            // transfers are slow; starting from `LONG_RETRY_STEP`, not step 0, keeps the log
            // from collapsing then (`cargo run --release --example compare -- --only
            // sliding_log`; figures: docs/BENCHMARKS.md, Backoff and retry tuning).
            backoff
                .get_or_insert_with(|| Backoff::starting_at(LONG_RETRY_STEP))
                .spin();
        }
    }

    /// The label of a relabel under way at the head seq: its free slot is stamped with a
    /// label the head does not carry yet. A stamp is written only at the head seq of its
    /// lap, from a view of that seq free, and the head takes the stamp's label only after
    /// it; labels only move forward. So a stamp of this lap whose label the head lacks is
    /// the latest one, and the head still carries the label before it.
    fn relabel_under_way(&self, view: View) -> Option<u64> {
        match Slot::unpack(view.slot) {
            Slot::Stamp { lap, label }
                if lap == self.lap(view.head().seq) && label != view.head().label =>
            {
                Some(label)
            }
            _ => None,
        }
    }

    /// A view whose seq is free and whose label is the configuration's, with the limit of
    /// that label (at most this ring's capacity), after helping whatever was in progress at
    /// the head: a claimed seq, a group, a relabel.
    #[inline]
    fn settled<C: Clock + ?Sized>(&self, config: &LogConfig, clock: &C) -> (View, u64) {
        let mut backoff: Option<Backoff> = None;
        loop {
            let view = self.view();
            match self.classify(view.slot, view.head().seq) {
                // Another thread's claim, not yet followed by its head move: give it the
                // time to make that move itself (a backoff, `sync::Backoff`) before helping.
                // Helping at once races every claimer's own CAS on the head, two contended
                // lines per admission; this and the backoff after a lost claim below keep the
                // log above a mutex at 2 to 8 threads (`cargo run --release --example compare
                // -- --only sliding_log`; figures: docs/BENCHMARKS.md, Backoff and retry
                // tuning).
                Found::Single => {
                    backoff
                        .get_or_insert_with(|| Backoff::starting_at(LONG_RETRY_STEP))
                        .spin();
                    self.advance(view.word, 1)
                }
                Found::Group(n) => {
                    self.complete_group(config, view.head().seq, n, clock.now_nanos(), None);
                }
                Found::Free => {
                    if let Some(label) = self.relabel_under_way(view) {
                        self.switch(view.word, label);
                        continue;
                    }
                    // Loaded after the head (Acquire): at least as new as the setting whose
                    // label the head carries (the relabeller loaded it before its stamp).
                    let setting = config.setting();
                    if setting.label != view.head().label {
                        self.relabel(view, setting.label);
                        continue;
                    }
                    return (view, setting.limit.min(self.capacity()));
                }
            }
        }
    }

    /// Moves the head from `word` past `by` filled seqs. Failure means someone else did.
    fn advance(&self, word: u64, by: u64) {
        let next = Head::unpack(word).advanced(by).pack();
        // AcqRel: Release publishes the filled slots (read with Acquire, or written, by this
        // thread) to every reader of the new head, and keeps the head's release sequence
        // (which carries its relabels) unbroken. Nothing to learn on failure.
        let _ = self
            .head
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Decides `n >= 1` permits at clock reading `now`. `detail`: compute `remaining` and
    /// `available` (a binary search); without it they are reported as zero.
    pub(crate) fn acquire<C: Clock + ?Sized>(
        &self,
        config: &LogConfig,
        clock: &C,
        now: u64,
        n: u64,
        detail: bool,
    ) -> Outcome {
        let t = now.min(MAX_STAMP);
        let window = config.window_nanos();
        let mut backoff: Option<Backoff> = None;
        loop {
            let (view, limit) = self.settled(config, clock);
            let k = view.head().seq;
            if n > limit {
                if self.unchanged(view) {
                    return Outcome::ExceedsLimit(limit);
                }
                continue;
            }
            // The log's time: never below the newest admitted timestamp.
            let (at, pushed_out) = self.time_and_pushed_out(k, n, limit, t, window);
            // Entries still in the window at `at`; only needed for the reported numbers.
            let in_window = detail.then(|| self.in_window(k, limit, at));
            if pushed_out > at {
                // Linearized at the re-read of the slot: k was still free, so the log was
                // exactly seqs below k, and the cell had not been relabelled since `view`.
                if !self.unchanged(view) {
                    continue;
                }
                return Outcome::Decided(Decision::Refused {
                    available: in_window.map_or(0, |w| limit.saturating_sub(w)),
                    retry_after: retry_until(pushed_out, now),
                });
            }
            let claim = if n == 1 {
                Slot::Entry {
                    expiry: at + window,
                    parity: self.parity(k),
                }
            } else {
                Slot::Group {
                    lap: self.lap(k),
                    n,
                }
            };
            // AcqRel: Release publishes the claim to helpers and to whoever moves the head
            // past it; Acquire is not needed on success (we read `view.slot` already), and
            // on failure the loop re-reads everything.
            if self
                .slot(k)
                .compare_exchange(view.slot, claim.pack(), Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                // Lost the claim to another thread: back off before the retry (see
                // `settled`).
                backoff
                    .get_or_insert_with(|| Backoff::starting_at(LONG_RETRY_STEP))
                    .spin();
                continue;
            }
            if n == 1 {
                self.advance(view.word, 1);
            } else {
                self.complete_group(config, k, n, at, Some(limit));
            }
            return Outcome::Decided(Decision::Admitted {
                remaining: in_window.map_or(0, |w| limit - w - n),
            });
        }
    }

    /// Whether the head seq's slot still holds what `view` saw (no claim, reservation or
    /// stamp since): then the reads made since describe the log as of this re-read.
    fn unchanged(&self, view: View) -> bool {
        // Acquire: pairs with claims and stamps. Any word this thread read since the view
        // that was written after the head seq's claim (see `expiry`) makes the claim
        // visible here, so decisions built on such garbage are discarded.
        self.slot(view.head().seq).load(Ordering::Acquire) == view.slot
    }

    /// Completes the group of `n` reserved at seq `k`: fixes its timestamp in seq k+1, fills
    /// seqs k+2..k+n with it, and moves the head past it. `now` is a clock reading taken
    /// after the reservation was seen; the leader passes its own, and the limit it decided
    /// under as `leader_limit`.
    fn complete_group(
        &self,
        config: &LogConfig,
        k: u64,
        n: u64,
        now: u64,
        leader_limit: Option<u64>,
    ) {
        let Some(expiry) = self.fix_time(config, k, n, now, leader_limit) else {
            return;
        };
        for j in 2..n {
            if !self.fill(k, seq_add(k, j), expiry) {
                return;
            }
        }
        loop {
            // Acquire: as in `view`.
            let word = self.head.load(Ordering::Acquire);
            if Head::unpack(word).seq != k {
                return;
            }
            // AcqRel: Release publishes every fill (seen or written above) with the head.
            if self
                .head
                .compare_exchange(
                    word,
                    Head::unpack(word).advanced(n).pack(),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return;
            }
        }
    }

    /// The expiry of the group at `k`: whoever first fills seq k+1 fixes it. `None` when the
    /// head has already moved past the group (it is complete).
    fn fix_time(
        &self,
        config: &LogConfig,
        k: u64,
        n: u64,
        now: u64,
        leader_limit: Option<u64>,
    ) -> Option<u64> {
        let second = seq_add(k, 1);
        let window = config.window_nanos();
        loop {
            // Acquire: a fixed time must come with everything its writer saw.
            let seen = self.slot(second).load(Ordering::Acquire);
            if let Slot::Entry { expiry, parity } = Slot::unpack(seen) {
                if parity == self.parity(second) {
                    return Some(expiry);
                }
            }
            // Acquire: as in `view` (it orders the entries read below). The head still at k
            // after `seen` was read means `seen` is seq k+1-C's entry (nothing but this
            // group can claim k+1), so the CAS below cannot hit a later lap.
            let head = Head::unpack(self.head.load(Ordering::Acquire));
            if head.seq != k {
                return None;
            }
            // The limit the group was reserved under, for the guard below: the leader knows
            // it; a helper takes that of the head's label (no relabel can happen while seq k
            // is reserved: it needs k's slot free to stamp it), which the configuration
            // knows while at most one change has come since. After more, the ring's capacity
            // stands in, the largest limit any configuration of this ring has: its guard is
            // the weakest (an older seq's expiry, at most the leader's pushed-out one, which
            // had expired at the leader's time), so it never moves the group past the time
            // the leader decided at. It must never be a smaller limit: a guard from a newer
            // seq can lie in the future and would stamp the group there, moving the log's
            // time forward and over-admitting (the loom model
            // `a_group_helped_after_two_changes_never_lets_a_later_call_over_admit`).
            let limit = leader_limit.unwrap_or_else(|| {
                config
                    .setting()
                    .limit_of(head.label)
                    .map_or(self.capacity(), |limit| limit.min(self.capacity()))
                    .max(n)
            });
            // max(reading, newest before k) is the spec's time. The group was admitted at
            // the leader's time, when seq k+n-1-limit had expired: with a clock that
            // only moves forward a helper's later reading satisfies that too; the third
            // term keeps a backwards-moving clock from over-admitting (with the exact
            // limit; with the capacity standing in, only as far as that guard reaches).
            let (at, pushed_out) =
                self.time_and_pushed_out(k, n, limit, now.min(MAX_STAMP), window);
            let at = at.max(pushed_out);
            let fixed = Slot::Entry {
                expiry: at + window,
                parity: self.parity(second),
            };
            // AcqRel: Release publishes the time to the other helpers; failure re-reads.
            if self
                .slot(second)
                .compare_exchange(seen, fixed.pack(), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Some(at + window);
            }
        }
    }

    /// Fills seq `seq` of the group at `k` with `expiry`; `false` if the head moved on.
    fn fill(&self, k: u64, seq: u64, expiry: u64) -> bool {
        let entry = Slot::Entry {
            expiry,
            parity: self.parity(seq),
        }
        .pack();
        loop {
            // Acquire: as in `fix_time`.
            let seen = self.slot(seq).load(Ordering::Acquire);
            if matches!(self.classify(seen, seq), Found::Single) {
                return true;
            }
            // Acquire: as in `view`; head still at k means `seen` is from the lap before
            // (see `fix_time`).
            if Head::unpack(self.head.load(Ordering::Acquire)).seq != k {
                return false;
            }
            // AcqRel: Release publishes the entry to whoever moves the head past it.
            if self
                .slot(seq)
                .compare_exchange(seen, entry, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
        }
    }

    /// Relabels the head in `view` (a free seq, no relabel under way) with `label`: stamp the
    /// slot (every claim decided under the old label then fails its CAS), then switch the
    /// head to the label.
    fn relabel(&self, view: View, label: u64) {
        let stamp = Slot::Stamp {
            lap: self.lap(view.head().seq),
            label,
        };
        // AcqRel: Release orders the stamp after this thread's load of the setting that
        // named `label`, so a caller that reads the stamp (Acquire) and then the setting
        // reads that setting or a later one. Failure: the seq was claimed or stamped since;
        // the caller re-reads.
        if self
            .slot(view.head().seq)
            .compare_exchange(view.slot, stamp.pack(), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.switch(view.word, label);
        }
    }

    /// Moves the head in `word` to `label`, whose stamp is in the head seq's slot.
    fn switch(&self, word: u64, label: u64) {
        let next = Head {
            label,
            ..Head::unpack(word)
        };
        // AcqRel: keeps the head's release sequence intact and orders the switch after the
        // stamp (read or written by this thread), so a reader of the new label reads the
        // setting it came from or a later one. Failure: someone else switched.
        let _ = self
            .head
            .compare_exchange(word, next.pack(), Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Permits available at clock reading `now`, without taking any.
    pub(crate) fn available<C: Clock + ?Sized>(
        &self,
        config: &LogConfig,
        clock: &C,
        now: u64,
    ) -> u64 {
        let t = now.min(MAX_STAMP);
        loop {
            let (view, limit) = self.settled(config, clock);
            let at = t.max(self.newest_before(view.head().seq, config.window_nanos()));
            let in_window = self.in_window(view.head().seq, limit, at);
            if self.unchanged(view) {
                return limit.saturating_sub(in_window);
            }
        }
    }

    /// The limit in force for this ring, once relabelled with the configuration's.
    pub(crate) fn limit<C: Clock + ?Sized>(&self, config: &LogConfig, clock: &C) -> u64 {
        loop {
            let (view, limit) = self.settled(config, clock);
            if self.unchanged(view) {
                return limit;
            }
        }
    }

    /// `None` if the log is indistinguishable from an empty one at reading `now` (its newest
    /// entry has left the window, so the log's time is the reading), else the reading from
    /// which it will be.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn idle_at<C: Clock + ?Sized>(
        &self,
        config: &LogConfig,
        clock: &C,
        now: u64,
    ) -> Option<u64> {
        loop {
            let (view, _) = self.settled(config, clock);
            let newest = self.expiry(seq_sub(view.head().seq, 1));
            if self.unchanged(view) {
                return (newest > now.min(MAX_STAMP)).then_some(newest);
            }
        }
    }

    /// The head's sequence number (admissions so far, modulo 2^44), for `Debug`.
    pub(crate) fn seq(&self) -> u64 {
        // Relaxed: a value for display; nothing is read after it.
        Head::unpack(self.head.load(Ordering::Relaxed)).seq
    }

    /// The number of slots, for `Debug`.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("seq", &self.seq())
            .field("slots", &self.slots.len())
            .finish()
    }
}
