//! The lock-free window engine behind [`SlidingWindow`](crate::SlidingWindow) (B buckets)
//! and [`FixedWindow`](crate::FixedWindow) (one bucket): fast path, claim/publish/install.
//! How it works, and why it is exact: [the guide](crate::guide::window).

use crate::epoch::{epoch_of, epochs_to_wait, until_epoch, MAX_BUCKET_EPOCH};
use crate::error::ExceedsLimit;
use crate::layout::Layout;
use crate::limiter::{Admission, Decision, Grant, Owner, Ticket};
use crate::sync::{atomic, AdminLock, AtomicU64, AtomicWord, Backoff, Ordering, RETRY_STEP};

use super::ring;
use super::word::{Claim, Head, Word64, Words, MAX_BUCKETS};

/// The words that every admission touches: kept together on one line.
struct Hot<W: Words> {
    claim: AtomicU64,
    head: W::Atomic,
}

/// Words read only on rollover and reconfiguration.
struct Cold<W: Words> {
    /// The epoch of the head a pending claim replaces (written by claimers before they
    /// claim; all racing claimers write the same value).
    base: AtomicU64,
    /// `[limit for gen 1 | limit for gen 0]`, half the width's word each.
    limits: W::Atomic,
}

/// What a rollover writes into a ring slot.
#[derive(Clone, Copy)]
enum Bucket {
    /// The admitted count of an epoch that was the head.
    Admitted(u64),
    /// An epoch skipped by a jump, or wiped by a far one: no admissions.
    Empty,
}

/// A consistent reading of the claim and the head.
struct View<W: Words> {
    claim_word: u64,
    claim: Claim,
    head_word: W::Raw,
    head: Head,
}

impl<W: Words> Clone for View<W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<W: Words> Copy for View<W> {}

impl<W: Words> View<W> {
    /// Whether the head is installed for the claimed epoch (no rollover in progress).
    fn settled(&self) -> bool {
        self.head.parity() == self.claim.parity
    }
}

/// An admitting CAS that lost to another change of the head.
struct Lost;

/// Permits leased from the head for one epoch ([`Engine::lease`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    /// The epoch they were counted in.
    pub(crate) epoch: u64,
    /// How many (possibly 0).
    pub(crate) granted: u64,
}

/// A settled view and the limit its cap was computed from.
struct Snapshot<W: Words> {
    view: View<W>,
    limit: u64,
}

/// The engine in the words of width `W` ([`Word64`] for limits up to 2^20 - 1;
/// [`Word128`](super::word::Word128) above, through `cmpxchg16b`): one algorithm, two
/// packings.
pub(crate) struct Engine<L: Layout, W: Words = Word64> {
    hot: L::Cell<Hot<W>>,
    cold: L::Cell<Cold<W>>,
    /// One slot per bucket; empty when there is one bucket (nothing of the past counts).
    ring: Box<[L::Cell<W::Atomic>]>,
    width: u64,
    buckets: u64,
    admin: AdminLock,
    /// The id stamped on this window's grants; a refund of any other grant restores 0.
    owner: Owner,
}

impl<L: Layout, W: Words> Engine<L, W> {
    /// `limit` must be in `1..=W::MAX_LIMIT`, `buckets` in `1..=MAX_BUCKETS`, `width >= 1`.
    pub(crate) fn new(limit: u64, width: u64, buckets: u64) -> Self {
        debug_assert!(limit >= 1 && limit <= W::MAX_LIMIT && width >= 1);
        debug_assert!((1..=MAX_BUCKETS).contains(&buckets));
        let slots = if buckets == 1 { 0 } else { buckets };
        let head = Head {
            seq: 0,
            generation: 0,
            cap: limit,
            count: 0,
        };
        Self {
            hot: L::cell(Hot {
                claim: atomic(
                    Claim {
                        epoch: 0,
                        parity: 0,
                    }
                    .pack(),
                ),
                head: W::Atomic::new(W::pack(head)),
            }),
            cold: L::cell(Cold {
                base: atomic(0),
                limits: W::Atomic::new(W::limits(limit)),
            }),
            ring: (0..slots)
                .map(|_| L::cell(W::Atomic::new(W::pack_slot(0, 0))))
                .collect(),
            width,
            buckets,
            admin: AdminLock::new(),
            owner: Owner::new(),
        }
    }

    /// Bytes this engine occupies, its ring included.
    pub(crate) fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.ring.len() * L::cell_size::<W::Atomic>()
    }

    pub(crate) fn width(&self) -> u64 {
        self.width
    }

    pub(crate) fn buckets(&self) -> u64 {
        self.buckets
    }

    /// Takes one permit at time `now`: the hot path.
    #[inline]
    pub(crate) fn try_acquire(&self, now: u64) -> bool {
        self.acquire_one(now).is_some()
    }

    /// Takes one permit; `Some(remaining)` when admitted.
    #[inline]
    fn acquire_one(&self, now: u64) -> Option<u64> {
        self.try_one(now)
            .unwrap_or_else(|Lost| self.acquire_one_again(now))
    }

    /// [`acquire_one`](Self::acquire_one) after a lost CAS, out of line so that the
    /// uncontended call pays nothing for it: a backoff (from `RETRY_STEP`) before each try.
    /// The backoff is what a mutex's spinning waiters give its holder: the winner makes a
    /// run of calls with the line to itself. A blind `fetch_add` never loses, so nobody
    /// backs off and the line moves on every call: it runs below a `parking_lot` mutex at 2
    /// to 8 threads, and this path above it, at the same cost on one thread (`cargo run
    /// --release --example compare -- --only sliding_window,fixed_window,allow`; figures:
    /// docs/BENCHMARKS.md, Backoff and retry tuning).
    #[cold]
    #[inline(never)]
    fn acquire_one_again(&self, now: u64) -> Option<u64> {
        let backoff = Backoff::starting_at(RETRY_STEP);
        loop {
            backoff.spin();
            if let Ok(decided) = self.try_one(now) {
                return decided;
            }
        }
    }

    /// One try at one permit: `Ok(Some(remaining))` admitted, `Ok(None)` refused, `Err(Lost)`
    /// when the admitting CAS lost to another admission or a rollover (decide again from
    /// fresh loads).
    #[inline(always)]
    fn try_one(&self, now: u64) -> Result<Option<u64>, Lost> {
        loop {
            // Acquire: a claim is made after its maker read the settled head, so the head
            // read next is at least that head, never an older one of the same parity.
            let claim = Claim::unpack(self.hot.claim.load(Ordering::Acquire));
            // Relaxed: the decision depends on this word alone (and on the claim above).
            let word = self.hot.head.load(Ordering::Relaxed);
            let head = W::unpack(word);
            // Matching parity: the head is the claimed epoch's, or a later one; never older.
            if head.parity() == claim.parity && self.covers(claim.epoch, now) {
                if head.count >= head.cap {
                    return Ok(None);
                }
                // Set to `{ count: count + 1, ..head }`, from the word decided on.
                // Relaxed (both): the decision depends on this word alone, and success
                // proves the head still is that word (the linearization point); the
                // modification order of the head orders it against every rollover CAS.
                return match self.hot.head.compare_exchange(
                    word,
                    W::plus_one(word),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => Ok(Some(head.cap - head.count - 1)),
                    Err(_) => Err(Lost),
                };
            }
            self.advance(epoch_of(now, self.width));
        }
    }

    /// `epoch >= epoch_of(now)`, without the division on the hot path.
    #[inline]
    pub(crate) fn covers(&self, epoch: u64, now: u64) -> bool {
        epoch >= MAX_BUCKET_EPOCH
            || (epoch + 1)
                .checked_mul(self.width)
                .is_none_or(|end| now < end)
    }

    /// Takes `n >= 1` permits, all or none.
    pub(crate) fn try_acquire_n(&self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        if n == 1 {
            if let Some(remaining) = self.acquire_one(now) {
                return Ok(Decision::Admitted { remaining });
            }
        }
        self.grant(now, n).map(|(decision, _)| decision)
    }

    /// Takes `n >= 1` permits, all or none, with one CAS on a settled head; an admission
    /// comes with the epoch it was counted in (which a [`refund`](Self::refund) needs).
    ///
    /// Not the one-permit fast path: it decides on a head whose parity matches the claim it
    /// read, which a rollover between its two loads can make a later epoch's head than the
    /// claim says, so it cannot tell a grant which epoch to refund to.
    pub(crate) fn grant(&self, now: u64, n: u64) -> Result<(Decision, u64), ExceedsLimit> {
        let epoch = epoch_of(now, self.width);
        loop {
            let Snapshot { view, limit } = self.snapshot();
            // Every request for permits first moves the window to its reading, whatever its
            // outcome (see the module docs): `ExceedsLimit` too is decided only from a
            // snapshot at `now`'s epoch or later, like an admission or a refusal.
            if view.claim.epoch < epoch {
                self.advance(epoch);
                continue;
            }
            // The limit was read for exactly this head: the snapshot is the linearization
            // point, and the window already stands where the spec moves it.
            if n > limit {
                return Err(ExceedsLimit {
                    requested: n,
                    limit,
                });
            }
            let head = view.head;
            let admitted = head.admitted();
            if admitted + n > head.cap {
                match self.refusal(view, limit, now, n) {
                    Some(refused) => return Ok((refused, view.claim.epoch)),
                    None => continue,
                }
            }
            // Here count <= cap (every admission keeps it so).
            let next = Head {
                count: head.count + n,
                ..head
            };
            // The limit was read for exactly this word; a failed CAS starts over.
            if self.count_cas(view, next) {
                let remaining = head.cap - admitted - n;
                return Ok((Decision::Admitted { remaining }, view.claim.epoch));
            }
        }
    }

    /// Takes up to `size(left)` permits (never more than `left`, the permits the current
    /// epoch still has) for a [`ShardedWindow`](crate::ShardedWindow) shard: one CAS on the
    /// head. The lease's epoch is the head's, never older than `now`'s; `granted` may be 0.
    pub(crate) fn lease(&self, now: u64, size: impl Fn(u64) -> u64) -> Lease {
        let epoch = epoch_of(now, self.width);
        loop {
            let view = self.settled_view();
            if view.claim.epoch < epoch {
                self.advance(epoch);
                continue;
            }
            let admitted = view.head.admitted();
            let granted = size(view.head.cap - admitted).min(view.head.cap - admitted);
            let lease = Lease {
                epoch: view.claim.epoch,
                granted,
            };
            if granted == 0 {
                return lease;
            }
            let next = Head {
                count: admitted + granted,
                ..view.head
            };
            // The shard publishes the lease with its own Release.
            if self.count_cas(view, next) {
                return lease;
            }
        }
    }

    /// [`RateLimiter::try_grant`](crate::RateLimiter::try_grant) at `now`: a grant's mark
    /// is the epoch its permits were counted in.
    pub(crate) fn try_grant(&self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        if n == 0 {
            let remaining = self.available(now);
            return Ok(Admission::Granted(
                Grant::new(Ticket::immediate(0, now), remaining).owned_by(self.owner),
            ));
        }
        Ok(match self.grant(now, n)? {
            (Decision::Admitted { remaining }, epoch) => {
                let ticket = Ticket::new(n, now, now, u128::from(epoch));
                Admission::Granted(Grant::new(ticket, remaining).owned_by(self.owner))
            }
            (
                Decision::Refused {
                    available,
                    retry_after,
                },
                _,
            ) => Admission::Refused {
                available,
                retry_after,
            },
        })
    }

    /// [`RateLimiter::refund`](crate::RateLimiter::refund) of a grant made by
    /// [`try_grant`](Self::try_grant), at `now`; a grant this window did not make restores 0.
    pub(crate) fn refund_grant(&self, grant: Grant, now: u64) -> u64 {
        if !grant.is_from(self.owner) {
            return 0;
        }
        let ticket = grant.ticket();
        match u64::try_from(ticket.mark()) {
            Ok(epoch) => self.refund(epoch, ticket.permits(), Some(now)),
            Err(_) => 0,
        }
    }

    /// Gives back `n` permits counted in `epoch`, at a caller's reading `now` (`None`: no
    /// reading, for the sharded window's leftovers): one CAS on the head while `epoch` is
    /// still the head's and `now` is still in it; once it has passed they are dropped (that
    /// only under-admits: they expire with their epoch). Returns the permits restored.
    ///
    /// The head becomes `{ count: admitted - k, cap: max(floor, admitted - k) }` with `k =
    /// min(n, admitted)` and `floor = limit - (admitted in the previous B-1 epochs)`:
    /// - `admitted = min(count, cap)`, which is `count` (every admission keeps `count <= cap`;
    ///   the `min` is kept as a guard).
    /// - The cap: an epoch's cap is `floor`, or, after a `set_limit` that lowered the limit
    ///   below what the window had admitted, the admitted count (a full head). Invariant:
    ///   `cap >= floor`, and `cap > floor` only when `admitted == cap`. Keeping a raised cap
    ///   after a refund would re-admit permits the lowered limit refuses; lowering it to
    ///   `max(floor, admitted - k)` keeps the invariant, so the head admits `m` more iff
    ///   `prior + admitted - k + m <= limit`, exactly the spec after its refund. `floor` is
    ///   read (the limit for the head's generation and the frozen ring) only for a full
    ///   head; otherwise `cap == floor` already.
    ///
    /// The one inexact race (it only under-admits): a refund whose CAS lands after a
    /// rollover past `epoch` was claimed and before it is installed is seen by the installer
    /// (which CASes from the exact word), but a helper that read the head before it may
    /// publish the larger count into the ring; the later buckets of the window then count
    /// up to `k` permits too many. A fixed window (no ring) is exact.
    pub(crate) fn refund(&self, epoch: u64, n: u64, now: Option<u64>) -> u64 {
        if n == 0 || now.is_some_and(|now| !self.covers(epoch, now)) {
            return 0;
        }
        loop {
            let Snapshot { view, limit } = self.snapshot();
            if view.claim.epoch != epoch {
                return 0;
            }
            let head = view.head;
            let admitted = head.admitted();
            let restored = n.min(admitted);
            let cap = if admitted == head.cap {
                let prior = self.prior_counts(epoch);
                // The ring was read while the claim stood, so `prior` is this epoch's.
                if !self.claim_stands(view) {
                    continue;
                }
                limit
                    .saturating_sub(prior)
                    .max(admitted - restored)
                    .min(head.cap)
            } else {
                head.cap
            };
            let next = Head {
                count: admitted - restored,
                cap,
                ..head
            };
            if self.count_cas(view, next) {
                return restored;
            }
        }
    }

    /// Replaces the head read in `view` by `next`, which differs from it in `count` (and, for
    /// a refund, in a lowered `cap`) only; `false` if the head changed meanwhile (the caller
    /// starts over).
    fn count_cas(&self, view: View<W>, next: Head) -> bool {
        // Relaxed: as on the fast path, a count change depends on this word alone, and the
        // modification order of the head orders it against every rollover CAS.
        self.hot
            .head
            .compare_exchange(
                view.head_word,
                W::pack(next),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Whether no rollover past `epoch` has been claimed, so that permits leased in `epoch`
    /// may still be handed out (a caller never spends a lease of an epoch the limiter has
    /// left: its time never moves backwards). One load of the hot line.
    #[inline]
    pub(crate) fn is_current(&self, epoch: u64) -> bool {
        // Acquire: as in `acquire_one`.
        Claim::unpack(self.hot.claim.load(Ordering::Acquire)).epoch <= epoch
    }

    /// `false` only if the head is installed for `now`'s epoch (or a later one) and full:
    /// a lease at `now` would get nothing. The loads of the fast path, no write.
    #[inline]
    pub(crate) fn has_room(&self, now: u64) -> bool {
        // Acquire: as in `acquire_one`.
        let claim = Claim::unpack(self.hot.claim.load(Ordering::Acquire));
        // Relaxed: as in `acquire_one`.
        let head = W::unpack(self.hot.head.load(Ordering::Relaxed));
        !(head.parity() == claim.parity && self.covers(claim.epoch, now) && head.count >= head.cap)
    }

    /// Permits available at `now`, without taking any.
    pub(crate) fn available(&self, now: u64) -> u64 {
        loop {
            let Snapshot { view, limit } = self.snapshot();
            if self.covers(view.claim.epoch, now) {
                return view.head.cap - view.head.admitted();
            }
            let in_window: u64 = self
                .window_counts(view, epoch_of(now, self.width))
                .iter()
                .sum();
            if self.claim_stands(view) {
                return limit.saturating_sub(in_window);
            }
        }
    }

    /// The limit in force.
    pub(crate) fn limit(&self) -> u64 {
        self.snapshot().limit
    }

    /// Changes the limit; takes effect at one CAS on the head. `limit` is validated.
    pub(crate) fn set_limit(&self, limit: u64) {
        self.admin.with(|| {
            // Only `set_limit` flips `gen`, and it holds the admin lock: `gen` is stable.
            let generation = self.settled_view().head.generation;
            // Relaxed: only `set_limit` writes this word, and it holds the admin lock.
            let limits = self.cold.limits.load(Ordering::Relaxed);
            // Release: a `snapshot` whose (Acquire) limits load reads this value then sees
            // the earlier `set_limit` CAS that made this half inactive, so its sequence
            // re-read notices the change. Installs see it through the head CAS below.
            self.cold.limits.store(
                W::with_limit(limits, 1 - generation, limit),
                Ordering::Release,
            );
            loop {
                let view = self.settled_view();
                let admitted = view.head.admitted();
                let prior = self.prior_counts(view.claim.epoch);
                // The ring was read while the claim stood, so `prior` is this epoch's.
                if !self.claim_stands(view) {
                    continue;
                }
                let cap = limit.saturating_sub(prior).max(admitted);
                let next = view.head.relimited(cap, admitted);
                // Release: a reader that sees this head (or a later one) sees the limits
                // store above. Relaxed on failure: the loop re-reads a settled view (with
                // its own Acquire loads) before trying again.
                if self
                    .hot
                    .head
                    .compare_exchange(
                        view.head_word,
                        W::pack(next),
                        Ordering::Release,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    return;
                }
            }
        });
    }

    /// Whether the claim is still the one `view` read.
    fn claim_stands(&self, view: View<W>) -> bool {
        // Acquire: the reads made since `view` (ring slots) are then known to describe
        // this claim's window: a bucket written for a later claim is published after it.
        self.hot.claim.load(Ordering::Acquire) == view.claim_word
    }

    /// Reads the claim and the head consistently (the claim unchanged around the head).
    fn view(&self) -> View<W> {
        loop {
            // Acquire (all three): see `acquire_one`; the head's Acquire also makes the
            // install's ring writes and a `set_limit`'s limits store visible. The re-read
            // proves the head was read while this claim stood.
            let claim_word = self.hot.claim.load(Ordering::Acquire);
            let head_word = self.hot.head.load(Ordering::Acquire);
            if self.hot.claim.load(Ordering::Acquire) == claim_word {
                return View {
                    claim_word,
                    claim: Claim::unpack(claim_word),
                    head_word,
                    head: W::unpack(head_word),
                };
            }
        }
    }

    /// A view with no rollover in progress (helping one finish if needed).
    fn settled_view(&self) -> View<W> {
        loop {
            let view = self.view();
            if view.settled() {
                return view;
            }
            self.install(view);
        }
    }

    /// A settled view with the limit its head's cap came from.
    fn snapshot(&self) -> Snapshot<W> {
        loop {
            let view = self.settled_view();
            // Acquire: pairs with `set_limit`'s Release store: a value written for a later
            // generation brings the CAS that retired this one into view (see below).
            let limits = self.cold.limits.load(Ordering::Acquire);
            // Acquire: if the sequence is unchanged, no `set_limit` CAS came between the
            // view and the limits read, so the head's generation half was not rewritten
            // (`set_limit` writes only the inactive half, and a half becomes inactive only
            // through such a CAS).
            let again = W::unpack(self.hot.head.load(Ordering::Acquire));
            if again.seq == view.head.seq {
                return Snapshot {
                    view,
                    limit: W::limit_of(limits, view.head.generation),
                };
            }
        }
    }

    /// Moves the head towards `epoch`: helps a rollover in progress, or claims `epoch`.
    #[cold]
    fn advance(&self, epoch: u64) {
        let view = self.view();
        if !view.settled() {
            self.install(view);
            return;
        }
        let from = view.claim.epoch;
        if from >= epoch {
            return;
        }
        // Release: a helper that reads the claim made below (Acquire) then reads this base
        // or a later one. Every claimer racing from this settled head writes the same value.
        self.cold.base.fetch_max(from, Ordering::Release);
        let claim = Claim {
            epoch,
            parity: 1 - view.claim.parity,
        };
        // Release: a reader of the new claim then reads at least the head this claimer saw
        // settled, and the base above. Failure: someone else claimed; the next pass helps.
        let _ = self.hot.claim.compare_exchange(
            view.claim_word,
            claim.pack(),
            Ordering::Release,
            Ordering::Relaxed,
        );
    }

    /// Helps install the claimed epoch over the head in `view` (its predecessor).
    #[cold]
    fn install(&self, view: View<W>) {
        let target = view.claim.epoch;
        let old = view.head;
        // Acquire: a base newer than this claim's predecessor was written by a claimer that
        // had seen the predecessor replaced, and then the head re-read below shows it.
        let from = self.cold.base.load(Ordering::Acquire);
        // Relaxed: same-word coherence after the Acquire load above is all that is needed.
        if W::unpack(self.hot.head.load(Ordering::Relaxed)).seq != old.seq || from >= target {
            return; // installed already; the caller re-reads
        }
        let prior = if target - from >= self.buckets {
            // Nothing of the old window survives; reset every slot so none can alias later.
            if self.buckets > 1 {
                for epoch in target + 1 - self.buckets..=target {
                    if !self.publish(view.claim_word, epoch, Bucket::Empty) {
                        return;
                    }
                }
            }
            0
        } else {
            if !self.publish(view.claim_word, from, Bucket::Admitted(old.admitted())) {
                return;
            }
            for skipped in from + 1..target {
                if !self.publish(view.claim_word, skipped, Bucket::Empty) {
                    return;
                }
            }
            self.prior_counts(target)
        };
        // Relaxed: the limits half of `old.gen` cannot change while the head keeps `old`'s
        // sequence number, which the CAS below checks (see `snapshot`).
        let limit = W::limit_of(self.cold.limits.load(Ordering::Relaxed), old.generation);
        let next = old.successor(limit.saturating_sub(prior));
        // Re-validate right before the CAS, so a helper delayed since its reads gives up
        // instead of racing a later rollover (the residual ABA needs 2^W::SEQ_BITS installs
        // here: 2^22 narrow, 2^46 wide).
        if !self.claim_stands(view) {
            return;
        }
        // Release: the slots published above become visible to every later reader of the
        // head before it can act on the new epoch. Failure: the caller re-reads everything.
        let _ = self.hot.head.compare_exchange(
            view.head_word,
            W::pack(next),
            Ordering::Release,
            Ordering::Relaxed,
        );
    }

    /// Writes `bucket` into `epoch`'s slot; gives up (returning `false`) once the claim has
    /// moved on, when the install is long done.
    fn publish(&self, claim_word: u64, epoch: u64, bucket: Bucket) -> bool {
        let slot = &self.ring[(epoch % self.buckets) as usize];
        let count = match bucket {
            Bucket::Admitted(count) => count,
            Bucket::Empty => 0,
        };
        let done = |have: Option<u64>| match (bucket, have) {
            // Racing helpers publish counts they read at different moments of the same
            // epoch; the largest is the final one (the installer's). No alias is possible
            // here: the slot holds this epoch or the one B before it.
            (Bucket::Admitted(_), Some(have)) => have >= count,
            // An epoch that never was a head has no admissions: a matching tag with a non-zero
            // count is a stale bucket aliasing it, to be overwritten.
            (Bucket::Empty, Some(have)) => have == 0,
            (_, None) => false,
        };
        // Acquire: claims only move forward; unchanged means the slot value loaded before
        // holds this epoch or an older one.
        let still = || self.hot.claim.load(Ordering::Acquire) == claim_word;
        ring::write::<W>(slot, epoch, count, done, still)
    }

    /// Admitted permits in the B-1 epochs before `epoch`, all frozen and published.
    fn prior_counts(&self, epoch: u64) -> u64 {
        if self.buckets == 1 {
            return 0;
        }
        let first = (epoch + 1).saturating_sub(self.buckets);
        (first..epoch).map(|e| self.slot(e)).sum()
    }

    /// The published count of `epoch`, which must be less than B behind the settled head.
    fn slot(&self, epoch: u64) -> u64 {
        // Acquire: pairs with `publish`.
        let seen = self.ring[(epoch % self.buckets) as usize].load(Ordering::Acquire);
        W::slot_count(seen, epoch).unwrap_or(0)
    }

    /// Counts of the B buckets of the window ending at `epoch` (>= the head's), oldest
    /// first; epochs before the limiter's start count zero.
    fn window_counts(&self, view: View<W>, epoch: u64) -> Vec<u64> {
        let head_epoch = view.claim.epoch;
        (0..self.buckets)
            .map(|age| match epoch.checked_sub(self.buckets - 1 - age) {
                Some(e) if e == head_epoch => view.head.admitted(),
                Some(e) if e < head_epoch && self.buckets > 1 => self.slot(e),
                _ => 0,
            })
            .collect()
    }

    /// The refusal of `n` permits at `now` from a settled view at or after `now`'s epoch;
    /// `None` if the window moved while it was read (the caller decides again).
    #[cold]
    fn refusal(&self, view: View<W>, limit: u64, now: u64, n: u64) -> Option<Decision> {
        let epoch = view.claim.epoch;
        let counts = self.window_counts(view, epoch);
        if !self.claim_stands(view) {
            return None;
        }
        let wait = epochs_to_wait(&counts, limit, n);
        Some(Decision::Refused {
            available: view.head.cap - view.head.admitted(),
            retry_after: until_epoch(epoch + wait, self.width, now),
        })
    }
}

impl<L: Layout, W: Words> std::fmt::Debug for Engine<L, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let view = self.view();
        f.debug_struct("Engine")
            .field("epoch", &view.claim.epoch)
            .field("settled", &view.settled())
            .field("cap", &view.head.cap)
            .field("admitted", &view.head.admitted())
            .field("buckets", &self.buckets)
            .field("bucket_nanos", &self.width)
            .finish()
    }
}
