//! The lock-free engine behind [`SlidingLog`](crate::SlidingLog): a ring of timestamp
//! slots indexed by admission sequence number ([the guide](crate::guide::log)).

use crossbeam_utils::CachePadded;

use crate::clock::Clock;
use crate::limiter::Decision;
use crate::limits::{limit_of, with_limit};
use crate::sync::{atomic, AdminLock, AtomicU64, Ordering};

use super::slot::{retry_until, seq_add, seq_sub, Head, Slot, CHANGE_MASK, MAX_TIME, MIN_RING};

/// The words every call reads: the head and the limits it indexes, on one line.
struct Hot {
    head: AtomicU64,
    /// `[limit for odd changes: 32 | limit for even changes: 32]`.
    limits: AtomicU64,
}

/// The head and the slot of its seq, read in that order.
#[derive(Debug, Clone, Copy)]
struct View {
    word: u64,
    head: Head,
    slot: u64,
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
    hot: CachePadded<Hot>,
    /// `C = 2^shift` slots, `C > capacity`, so the slot a claim overwrites is never one a
    /// decision reads (those are the last `limit <= capacity` seqs).
    slots: Box<[AtomicU64]>,
    shift: u32,
    window: u64,
    capacity: u64,
    admin: AdminLock,
}

impl Ring {
    /// `1 <= limit <= capacity <= MAX_LIMIT`, `1 <= window <= MAX_WINDOW_NANOS`.
    pub(crate) fn new(limit: u64, capacity: u64, window: u64) -> Self {
        debug_assert!(1 <= limit && limit <= capacity && window >= 1);
        let len = (capacity + 1).next_power_of_two().max(MIN_RING);
        Self {
            hot: CachePadded::new(Hot {
                head: atomic(
                    Head {
                        seq: 0,
                        pending: false,
                        change: 0,
                    }
                    .pack(),
                ),
                limits: atomic(with_limit(0, 0, limit)),
            }),
            slots: (0..len).map(|_| atomic(Slot::EMPTY.pack())).collect(),
            shift: len.trailing_zeros(),
            window,
            capacity,
            admin: AdminLock::new(),
        }
    }

    /// A ring whose head starts at `seq` (a multiple of twice the ring length, so the
    /// empty slots still read as the lap before it): for testing the 2^44 wraparound.
    #[cfg(test)]
    pub(crate) fn starting_at(limit: u64, capacity: u64, window: u64, seq: u64) -> Self {
        let ring = Self::new(limit, capacity, window);
        assert_eq!(seq % (2 * ring.slots.len() as u64), 0);
        let head = Head {
            seq,
            pending: false,
            change: 0,
        };
        // Relaxed: the ring is not shared yet; handing it to other threads synchronizes.
        ring.hot.head.store(head.pack(), Ordering::Relaxed);
        ring
    }

    pub(crate) fn window(&self) -> u64 {
        self.window
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes this engine occupies, its ring included.
    pub(crate) fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.slots.len() * std::mem::size_of::<AtomicU64>()
    }

    fn slot(&self, seq: u64) -> &AtomicU64 {
        &self.slots[(seq & ((1 << self.shift) - 1)) as usize]
    }

    fn lap(&self, seq: u64) -> u64 {
        seq >> self.shift
    }

    fn parity(&self, seq: u64) -> u64 {
        self.lap(seq) & 1
    }

    /// The limit in force under `change` (valid while the head still shows `change`).
    fn limit_of(&self, change: u64) -> u64 {
        // Acquire: the half for `change` was stored before the Release head CAS that made
        // `change` pending, so a caller that read such a head sees it. But a *newer* value
        // (the same half reused by change + 2) may be read too; Acquire pairs with that
        // store's Release, so the caller's `unchanged()` re-read then sees the stamps that
        // came before it and retries (found by review; a loom model now).
        limit_of(self.hot.limits.load(Ordering::Acquire), change)
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
    fn newest_before(&self, k: u64) -> u64 {
        self.expiry(seq_sub(k, 1)).saturating_sub(self.window)
    }

    /// For `n` permits at seq `k` under `limit` at reading `t`: the log's time (never below
    /// the newest timestamp), and the expiry of seq `k+n-1-limit`, the newest entry the `n`
    /// claims would push out of the last `limit`. Admitting needs it expired (older ones
    /// expired with it). When it is seq `k-1` (as always for `limit = 1`) one read serves.
    fn time_and_pushed_out(&self, k: u64, n: u64, limit: u64, t: u64) -> (u64, u64) {
        let newest = self.expiry(seq_sub(k, 1));
        let at = t.max(newest.saturating_sub(self.window));
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
    fn view(&self) -> View {
        loop {
            // Acquire: pairs with the Release of the head CAS that moved the head here, so
            // every entry below it, published before that CAS, is visible; and with the limit
            // change whose release sequence the head carries (see `limit_of`).
            let word = self.hot.head.load(Ordering::Acquire);
            let head = Head::unpack(word);
            // Acquire: pairs with claims (so a helper sees what it completes) and with stamps
            // (so a stamp seen here comes with the limit change it made take effect).
            let slot = self.slot(head.seq).load(Ordering::Acquire);
            // Acquire: the slot must describe seq `head.seq` while the head is still there.
            // A slot word written after the head left `word` was written by a thread that
            // had seen the newer head (the slot Acquire above pairs with its Release), so
            // this re-read then sees a different head. Without it a view can take a next-lap
            // entry for a free slot and overwrite it (found by review; a loom model now).
            if self.hot.head.load(Ordering::Acquire) == word {
                return View { word, head, slot };
            }
        }
    }

    /// Whether a free slot shows that a limit change took effect at this seq after the head
    /// in `view` was read, so that the head's limit is stale. A stamp is written only while
    /// its change is pending, and the head leaves that change (counter + 1) only after the
    /// stamp; so the one stamp compatible with the head read before it is the stamp of the
    /// change the head's counter already counts. Any other stamp is newer than the head read.
    fn stale(&self, view: View) -> bool {
        match Slot::unpack(view.slot) {
            Slot::Stamp { change, .. } => (change + 1) & CHANGE_MASK != view.head.change,
            _ => false,
        }
    }

    /// A view whose seq is free and whose limit is settled, after helping whatever was in
    /// progress at the head: a claimed seq, a group, a limit change.
    fn settled<C: Clock>(&self, clock: &C) -> View {
        loop {
            let view = self.view();
            match self.classify(view.slot, view.head.seq) {
                Found::Free if view.head.pending => self.help_change(view),
                Found::Free if self.stale(view) => {}
                Found::Free => return view,
                Found::Single => self.advance(view.word, 1),
                Found::Group(n) => self.complete_group(view.head.seq, n, clock.now_nanos()),
            }
        }
    }

    /// Moves the head from `word` past `by` filled seqs. Failure means someone else did.
    fn advance(&self, word: u64, by: u64) {
        let next = Head::unpack(word).advanced(by).pack();
        // AcqRel: Release publishes the filled slots (read with Acquire, or written, by this
        // thread) to every reader of the new head, and keeps the head's release sequence
        // (which carries the limits store) unbroken. Nothing to learn on failure.
        let _ = self
            .hot
            .head
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Decides `n >= 1` permits at clock reading `now`. `detail`: compute `remaining` and
    /// `available` (a binary search); without it they are reported as zero.
    pub(crate) fn acquire<C: Clock>(&self, clock: &C, now: u64, n: u64, detail: bool) -> Outcome {
        let t = now.min(MAX_TIME);
        loop {
            let view = self.settled(clock);
            let k = view.head.seq;
            let limit = self.limit_of(view.head.change);
            if n > limit {
                if self.unchanged(view) {
                    return Outcome::ExceedsLimit(limit);
                }
                continue;
            }
            // The log's time: never below the newest admitted timestamp.
            let (at, pushed_out) = self.time_and_pushed_out(k, n, limit, t);
            // Entries still in the window at `at`; only needed for the reported numbers.
            let in_window = detail.then(|| self.in_window(k, limit, at));
            if pushed_out > at {
                // Linearized at the re-read of the slot: k was still free, so the log was
                // exactly seqs below k, and no limit change had taken effect since `view`.
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
                    expiry: at + self.window,
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
                continue;
            }
            if n == 1 {
                self.advance(view.word, 1);
            } else {
                self.complete_group(k, n, at);
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
        self.slot(view.head.seq).load(Ordering::Acquire) == view.slot
    }

    /// Completes the group of `n` reserved at seq `k`: fixes its timestamp in seq k+1, fills
    /// seqs k+2..k+n with it, and moves the head past it. `now` is a clock reading taken
    /// after the reservation was seen (the leader passes its own).
    fn complete_group(&self, k: u64, n: u64, now: u64) {
        let Some(expiry) = self.fix_time(k, n, now) else {
            return;
        };
        for j in 2..n {
            if !self.fill(k, seq_add(k, j), expiry) {
                return;
            }
        }
        loop {
            // Acquire: as in `view`.
            let word = self.hot.head.load(Ordering::Acquire);
            if Head::unpack(word).seq != k {
                return;
            }
            // AcqRel: Release publishes every fill (seen or written above) with the head.
            if self
                .hot
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
    fn fix_time(&self, k: u64, n: u64, now: u64) -> Option<u64> {
        let second = seq_add(k, 1);
        loop {
            // Acquire: a fixed time must come with everything its writer saw.
            let seen = self.slot(second).load(Ordering::Acquire);
            if let Slot::Entry { expiry, parity } = Slot::unpack(seen) {
                if parity == self.parity(second) {
                    return Some(expiry);
                }
            }
            // Acquire: as in `view` (it orders the limit and entries read below). The head
            // still at k after `seen` was read means `seen` is seq k+1-C's entry (nothing
            // but this group can claim k+1), so the CAS below cannot hit a later lap.
            let head = Head::unpack(self.hot.head.load(Ordering::Acquire));
            if head.seq != k {
                return None;
            }
            // The limit in force when the group was reserved: no change can take effect
            // while seq k is reserved (a change needs k's slot free to stamp it).
            let limit = self.limit_of(head.change);
            // max(reading, newest before k) is the spec's time. The group was admitted at
            // the leader's time, when seq k+n-1-limit had expired: with a clock that
            // only moves forward a helper's later reading satisfies that too; the third
            // term keeps a backwards-moving clock from ever over-admitting.
            let (at, pushed_out) = self.time_and_pushed_out(k, n, limit, now.min(MAX_TIME));
            let at = at.max(pushed_out);
            let fixed = Slot::Entry {
                expiry: at + self.window,
                parity: self.parity(second),
            };
            // AcqRel: Release publishes the time to the other helpers; failure re-reads.
            if self
                .slot(second)
                .compare_exchange(seen, fixed.pack(), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Some(at + self.window);
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
            if Head::unpack(self.hot.head.load(Ordering::Acquire)).seq != k {
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

    /// Helps the pending limit change at a free head seq take effect: stamp the slot (every
    /// claim decided under the old limit then fails its CAS), then switch the head to the
    /// new limit. `view` must show a free seq with a pending change.
    fn help_change(&self, view: View) {
        let stamp = Slot::Stamp {
            lap: self.lap(view.head.seq),
            change: view.head.change,
        };
        // AcqRel: Release orders the stamp after this thread's Acquire read of the pending
        // head, which the new limit's store happens-before: a claimer that reads the stamp
        // (Acquire) sees that limit, and `stale` tells it whether its head predates the
        // change. Another helper's identical stamp is replaced by itself: harmless.
        if self
            .slot(view.head.seq)
            .compare_exchange(view.slot, stamp.pack(), Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        // AcqRel: keeps the head's release sequence (the new limit's store) intact and
        // orders the switch after the stamp. Failure: someone else switched, or a claim
        // made before the stamp moved the head; the caller re-reads.
        let _ = self.hot.head.compare_exchange(
            view.word,
            view.head.changed().pack(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Permits available at clock reading `now`, without taking any.
    pub(crate) fn available<C: Clock>(&self, clock: &C, now: u64) -> u64 {
        let t = now.min(MAX_TIME);
        loop {
            let view = self.settled(clock);
            let k = view.head.seq;
            let limit = self.limit_of(view.head.change);
            let at = t.max(self.newest_before(k));
            let in_window = self.in_window(k, limit, at);
            if self.unchanged(view) {
                return limit.saturating_sub(in_window);
            }
        }
    }

    /// The limit in force.
    pub(crate) fn limit<C: Clock>(&self, clock: &C) -> u64 {
        loop {
            let view = self.settled(clock);
            let limit = self.limit_of(view.head.change);
            if self.unchanged(view) {
                return limit;
            }
        }
    }

    /// Changes the limit (`1..=capacity`, validated by the caller). Takes effect at one
    /// stamp of the head seq's free slot; returns once it has.
    pub(crate) fn set_limit<C: Clock>(&self, clock: &C, limit: u64) {
        self.admin.with(|| {
            // Only `set_limit` makes changes pending, and it holds the admin lock until its
            // change has taken effect: the view below has no change pending.
            let view = self.settled(clock);
            let change = view.head.change;
            if self.limit_of(change) == limit {
                return;
            }
            // Relaxed load: only this lock holder writes the limits word.
            let limits = self.hot.limits.load(Ordering::Relaxed);
            // Release: published by the head CAS below (its release sequence) to every
            // reader of a head showing the change pending or taken effect.
            self.hot
                .limits
                .store(with_limit(limits, change + 1, limit), Ordering::Release);
            loop {
                let view = self.view();
                if view.head.change != change {
                    return;
                }
                if !view.head.pending {
                    let pending = Head {
                        pending: true,
                        ..view.head
                    };
                    // AcqRel: Release heads the release sequence that carries the limits
                    // store to readers of the head; failure re-reads.
                    let _ = self.hot.head.compare_exchange(
                        view.word,
                        pending.pack(),
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    );
                    continue;
                }
                match self.classify(view.slot, view.head.seq) {
                    Found::Free => self.help_change(view),
                    Found::Single => self.advance(view.word, 1),
                    Found::Group(n) => {
                        self.complete_group(view.head.seq, n, clock.now_nanos());
                    }
                }
            }
        });
    }

    /// The head's sequence number (admissions so far, modulo 2^44), for `Debug`.
    pub(crate) fn seq(&self) -> u64 {
        // Relaxed: a value for display; nothing is read after it.
        Head::unpack(self.hot.head.load(Ordering::Relaxed)).seq
    }
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("seq", &self.seq())
            .field("slots", &self.slots.len())
            .field("capacity", &self.capacity)
            .field("window_nanos", &self.window)
            .finish()
    }
}
