//! [`SlidingWindowCell`]: a bucketed sliding window's whole state (a head word and a ring of
//! `B` buckets), deciding with a [`SlidingConfig`] many cells share, for keyed limiters
//! ([the guide](crate::guide::window#the-sliding-window-cell)).

use std::fmt;

use crate::clock::Clock;
use crate::epoch::{epoch_of, epochs_to_wait, until_epoch};
use crate::error::ExceedsLimit;
use crate::layout::{Layout, Padded};
use crate::limiter::Decision;
use crate::sync::{AtomicU128, AtomicU64, Ordering};

use super::config::{SlidingConfig, WindowConfig};
use super::ring;
use super::word::{Word64, Words, MAX_BUCKETS};

/// Bits of a head's configuration label.
const LABEL_BITS: u32 = 23;
const LABEL_MASK: u64 = (1 << LABEL_BITS) - 1;
/// Bits of a count, a prior or a rollover distance (a count is at most
/// [`WindowConfig::MAX_LIMIT`], 2^20 - 1).
const COUNT_BITS: u32 = 20;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
const PRIOR_SHIFT: u32 = COUNT_BITS;
const LABEL_SHIFT: u32 = 2 * COUNT_BITS;
const SEALED: u64 = 1 << 63;

const _: () = assert!(
    1 + LABEL_BITS + 2 * COUNT_BITS == 64
        && MAX_BUCKETS <= COUNT_MASK
        && WindowConfig::MAX_LIMIT <= COUNT_MASK
);

/// An unpacked head word, high to low `[epoch: 64 | sealed: 1 | label: 23 | prior: 20 |
/// count: 20]`.
///
/// Settled (`sealed` clear), `count` is the permits admitted in bucket `epoch` and `prior`
/// those of the `B - 1` buckets before it (frozen when the head was installed), so a decision
/// reads this word alone. Sealed, a rollover is under way and `count` is its distance `d`:
/// `d < B` moves the head from `epoch` to `epoch + d`; `d == B` (*far*: nothing of the window
/// survives) moves it to `epoch`, the sealing caller's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    /// The bucket counted: `floor(t / w)` of the newest reading that moved the cell.
    epoch: u64,
    sealed: bool,
    /// The configuration epoch (mod 2^23) the cell was last decided under.
    label: u64,
    /// Permits admitted in buckets `epoch-B+1 .. epoch` (at most `MAX_LIMIT`: every
    /// admission kept its window within a limit).
    prior: u64,
    count: u64,
}

impl Head {
    fn pack(self) -> u128 {
        debug_assert!(
            self.label <= LABEL_MASK && self.prior <= COUNT_MASK && self.count <= COUNT_MASK
        );
        let low = if self.sealed { SEALED } else { 0 }
            | (self.label << LABEL_SHIFT)
            | (self.prior << PRIOR_SHIFT)
            | self.count;
        (u128::from(self.epoch) << 64) | u128::from(low)
    }

    fn unpack(word: u128) -> Self {
        // The halves are 64 bits: the casts are exact.
        let low = word as u64;
        Self {
            epoch: (word >> 64) as u64,
            sealed: low & SEALED != 0,
            label: (low >> LABEL_SHIFT) & LABEL_MASK,
            prior: (low >> PRIOR_SHIFT) & COUNT_MASK,
            count: low & COUNT_MASK,
        }
    }
}

/// The words of one cell.
struct State<const B: usize> {
    /// `[epoch: 64 | sealed: 1 | label: 23 | prior: 20 | count: 20]`, see [`Head`].
    head: AtomicU128,
    /// Bucket `e` of the window lives in slot `e % B` as `[tag: 44 | count: 20]`.
    ring: [AtomicU64; B],
}

/// The count slot `epoch % B` holds for `epoch` (0 if it holds another bucket).
fn bucket<const B: usize>(ring: &[AtomicU64; B], epoch: u64) -> u64 {
    bucket_word(ring, epoch).unwrap_or(0)
}

/// The count slot `epoch % B` holds for `epoch`, `None` if it holds another bucket.
fn bucket_word<const B: usize>(ring: &[AtomicU64; B], epoch: u64) -> Option<u64> {
    // Acquire: pairs with the Release CAS that published the bucket (before the install whose
    // head the caller read, or before the caller saw the write done).
    let seen = ring[(epoch % B as u64) as usize].load(Ordering::Acquire);
    Word64::slot_count(seen, epoch)
}

/// A settled head and the window a decision sees through it: the buckets up to `at`.
struct Window<'a, const B: usize> {
    head: Head,
    /// The bucket the decision is made in (the head's, or a later one for a snapshot).
    at: u64,
    ring: &'a [AtomicU64; B],
}

impl<const B: usize> Window<'_, B> {
    /// The admitted count of bucket `epoch` (at most `B - 1` before the head's).
    fn count(&self, epoch: u64) -> u64 {
        if epoch == self.head.epoch {
            return self.head.count;
        }
        if epoch > self.head.epoch {
            return 0;
        }
        bucket(self.ring, epoch)
    }

    /// The buckets of the window ending at `at`, oldest first (before epoch 0: none).
    fn epochs(&self) -> impl DoubleEndedIterator<Item = u64> + use<B> {
        (self.at + 1).saturating_sub(B as u64)..=self.at
    }

    /// Permits admitted in the window: the head's own word when the window ends at its
    /// bucket (a decision), the ring's buckets otherwise (a snapshot at a later bucket).
    fn used(&self) -> u64 {
        if self.at == self.head.epoch {
            return self.head.prior + self.head.count;
        }
        self.epochs().map(|epoch| self.count(epoch)).sum()
    }

    /// The counts of the window's `B` buckets, oldest first (for a refusal's wait).
    fn counts(&self) -> Vec<u64> {
        let missing = (B as u64).saturating_sub(self.at + 1) as usize;
        std::iter::repeat_n(0, missing)
            .chain(self.epochs().map(|epoch| self.count(epoch)))
            .collect()
    }
}

/// One bucketed sliding window's state in one 128-bit head word and a ring of `B` 64-bit
/// buckets (`16 + 8·B` bytes compact, rounded up to 16; a cache line or more padded),
/// deciding with a [`SlidingConfig`] many cells share and a clock the caller names. Admits
/// `n` at `t` iff the counts of buckets `e-B+1 ..= e` (`e = t / w`) plus `n` stay within
/// the limit, exactly as [`SlidingWindow`](crate::SlidingWindow) and its spec, and
/// linearizable when the shared limit changes under it. A cell belongs to the configuration
/// it was made under: to move a key to another configuration, start a new cell. Residuals,
/// both needing one call stalled between two adjacent atomic steps: 2^23 limit changes, or
/// the cell's time moving on by a multiple of 2^44 buckets, during that stall
/// ([the guide](crate::guide::window#the-sliding-window-cell)). A grant taken from a cell (through a keyed limiter) refunds while its bucket is the head's.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// // 2 per second in 2 buckets of 500 ms.
/// let config = SlidingConfig::new(WindowQuota::per_second(2)?.buckets(2)?)?;
/// let cell = SlidingWindowCell::<2, Compact>::new();
/// assert_eq!(cell.footprint(), 32);
/// clock.set(Duration::from_millis(900));
/// assert!(cell.try_acquire(&config, &clock) && cell.try_acquire(&config, &clock));
/// clock.set(Duration::from_millis(1_100)); // the bucket of 900 ms still counts
/// assert!(!cell.try_acquire(&config, &clock));
/// clock.set(Duration::from_millis(1_500)); // and now it has left the window
/// assert!(cell.try_acquire(&config, &clock));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct SlidingWindowCell<const B: usize = 10, L: Layout = Padded> {
    state: L::Cell<State<B>>,
}

impl<const B: usize, L: Layout> Default for SlidingWindowCell<B, L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const B: usize, L: Layout> SlidingWindowCell<B, L> {
    /// An empty cell (nothing admitted in any bucket yet), under any configuration of `B`
    /// buckets.
    ///
    /// ```
    /// use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let config = SlidingConfig::new(WindowQuota::per_second(7)?)?;
    /// let cell: SlidingWindowCell = SlidingWindowCell::new();
    /// assert_eq!(cell.available(&config, &ManualClock::new()), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new() -> Self {
        const { assert!(B >= 1 && B as u64 <= MAX_BUCKETS, "1 <= B <= 4096") };
        Self {
            // Bucket 0, label 0, nothing counted; every slot empty. The first access relabels
            // the head if the configuration has moved on.
            state: L::cell(State {
                head: AtomicU128::new(0),
                ring: std::array::from_fn(|_| AtomicU64::new(0)),
            }),
        }
    }

    /// Takes one permit.
    ///
    /// ```
    /// use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = SlidingConfig::new(WindowQuota::per_second(1)?)?;
    /// let cell: SlidingWindowCell = SlidingWindowCell::new();
    /// assert!(cell.try_acquire(&config, &clock));
    /// assert!(!cell.try_acquire(&config, &clock));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_acquire<C: Clock + ?Sized>(&self, config: &SlidingConfig<B>, clock: &C) -> bool {
        if config.window.is_unlimited() {
            return true;
        }
        self.call(config, clock.now_nanos(), true, |window, limit| {
            if window.used() < limit {
                Ok((window.head.count + 1, true))
            } else {
                Err(false)
            }
        })
    }

    /// Decides `n` permits: admitted with what remains in the window, or refused with the
    /// time until enough buckets expire; [`ExceedsLimit`] for more than the limit. A request
    /// for `n >= 1` moves the cell to the bucket of its reading whatever its outcome, as the
    /// spec does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// use ringlimit::cell::Compact;
    /// use ringlimit::outcome::Decision;
    /// let clock = ManualClock::new();
    /// let config = SlidingConfig::new(WindowQuota::per_second(3)?.buckets(2)?)?;
    /// let cell = SlidingWindowCell::<2, Compact>::new();
    /// assert_eq!(cell.try_acquire_n(&config, &clock, 2)?, Decision::Admitted { remaining: 1 });
    /// clock.advance(Duration::from_millis(600));
    /// assert_eq!(
    ///     cell.try_acquire_n(&config, &clock, 2)?,
    ///     Decision::Refused { available: 1, retry_after: Duration::from_millis(400) }
    /// );
    /// assert!(cell.try_acquire_n(&config, &clock, 4).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_n<C: Clock + ?Sized>(
        &self,
        config: &SlidingConfig<B>,
        clock: &C,
        n: u64,
    ) -> Result<Decision, ExceedsLimit> {
        self.grant(config, clock, n).map(|(decision, _)| decision)
    }

    /// [`try_acquire_n`](Self::try_acquire_n), with the bucket an admission was counted in
    /// (for [`refund`](Self::refund)).
    pub(crate) fn grant<C: Clock + ?Sized>(
        &self,
        config: &SlidingConfig<B>,
        clock: &C,
        n: u64,
    ) -> Result<(Decision, Option<u64>), ExceedsLimit> {
        if config.window.is_unlimited() {
            return Ok((
                Decision::Admitted {
                    remaining: u64::MAX,
                },
                None,
            ));
        }
        let now = clock.now_nanos();
        self.call(config, now, n > 0, |window, limit| {
            if n > limit {
                return Err(Err(ExceedsLimit {
                    requested: n,
                    limit,
                }));
            }
            let used = window.used();
            if n == 0 {
                return Err(Ok((
                    Decision::Admitted {
                        remaining: limit.saturating_sub(used),
                    },
                    None,
                )));
            }
            if used + n <= limit {
                let remaining = limit - used - n;
                let admitted = Decision::Admitted { remaining };
                return Ok((
                    window.head.count + n,
                    Ok((admitted, Some(window.head.epoch))),
                ));
            }
            let wait = epochs_to_wait(&window.counts(), limit, n);
            Err(Ok((
                Decision::Refused {
                    available: limit.saturating_sub(used),
                    retry_after: until_epoch(window.at + wait, config.width, now),
                },
                None,
            )))
        })
    }

    /// Gives back up to `n` permits counted in bucket `epoch`: one CAS while the head still
    /// counts that bucket (they are taken off its count); once it has moved on they are
    /// dropped (they leave the window with their bucket: that only under-admits). Returns
    /// the permits restored. The one inexact race, as [`SlidingWindow`](crate::SlidingWindow)'s:
    /// a refund landing after a rollover published the bucket's count and before the
    /// rollover's CAS (which then fails and is retried) or seal, or whose count a stalled
    /// publisher loaded before it and publishes after, is counted as restored, but the
    /// published count (the larger one: publishers keep the largest count they see) still
    /// holds the permits until the bucket leaves the window; fewer admitted, never more.
    /// That late publication is why the ring's kept buckets read their final count *or
    /// more*, and why a rollover's `prior` is clamped to the count field.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn refund(&self, config: &SlidingConfig<B>, epoch: u64, n: u64) -> u64 {
        if config.window.is_unlimited() || n == 0 {
            return 0;
        }
        // Moves nothing (a reading of 0 rolls no head): the head's count is `epoch`'s while
        // the head still shows it, settled.
        self.call(config, 0, false, |window, _| {
            let restored = n.min(window.head.count);
            if window.head.epoch != epoch || restored == 0 {
                return Err(0);
            }
            Ok((window.head.count - restored, restored))
        })
    }

    /// Permits available now. Moves nothing (a snapshot), but relabels a cell decided under
    /// an older limit.
    ///
    /// ```
    /// use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = SlidingConfig::new(WindowQuota::per_second(5)?)?;
    /// let cell: SlidingWindowCell = SlidingWindowCell::new();
    /// cell.try_acquire_n(&config, &clock, 2)?;
    /// assert_eq!(cell.available(&config, &clock), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn available<C: Clock + ?Sized>(&self, config: &SlidingConfig<B>, clock: &C) -> u64 {
        if config.window.is_unlimited() {
            return u64::MAX;
        }
        self.call(config, clock.now_nanos(), false, |window, limit| {
            Err(limit.saturating_sub(window.used()))
        })
    }

    /// `None` if the cell is indistinguishable from a fresh one at clock reading `now`
    /// (nothing counted in that reading's window, and not moved past it), else the reading
    /// from which it will be. One settled head decides both.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn idle_at<C: Clock + ?Sized>(
        &self,
        config: &SlidingConfig<B>,
        _clock: &C,
        now: u64,
    ) -> Option<u64> {
        if config.window.is_unlimited() {
            return None;
        }
        let reading = epoch_of(now, config.width);
        self.call(config, now, false, |window, _| {
            let newest = window.epochs().rev().find(|&epoch| window.count(epoch) > 0);
            Err(match newest {
                Some(epoch) => Some((epoch + B as u64).saturating_mul(config.width)),
                // Ahead of the reading (moved there by a later one): fresh only once the
                // readings reach its bucket.
                None if window.head.epoch > reading => {
                    Some(window.head.epoch.saturating_mul(config.width))
                }
                None => None,
            })
        })
    }

    /// Bytes this cell occupies: `16 + 8·B` compact (rounded up to 16), a multiple of the
    /// cache line padded.
    ///
    /// ```
    /// use ringlimit::cell::SlidingWindowCell;
    /// use ringlimit::cell::{Compact, Padded};
    /// assert_eq!(SlidingWindowCell::<10, Compact>::new().footprint(), 96);
    /// assert_eq!(SlidingWindowCell::<5, Compact>::new().footprint(), 64);
    /// assert!(SlidingWindowCell::<10, Padded>::new().footprint() >= 96);
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// One call at `now`. Loads the head, then the configuration; a sealed head is helped
    /// to its install, a head labelled with an older configuration epoch is relabelled, and
    /// (when `moves`) a head behind `now`'s bucket is rolled over, each in its own CAS before
    /// anything is decided. Then `decide(window, limit)` returns `Ok((count, result))` to set
    /// the head's count to `count` (one CAS, retried from the observed head, then `result`) or
    /// `Err(result)`, returned once the head is confirmed unchanged, so that the ring was read
    /// while it stood.
    #[inline]
    fn call<R>(
        &self,
        config: &SlidingConfig<B>,
        now: u64,
        moves: bool,
        mut decide: impl FnMut(&Window<'_, B>, u64) -> Result<(u64, R), R>,
    ) -> R {
        let reading = epoch_of(now, config.width);
        let mut word = self.load();
        loop {
            let head = Head::unpack(word);
            if head.sealed {
                self.install(word);
                word = self.load();
                continue;
            }
            let (epoch, limit) = config.window.epoch_and_limit();
            let label = epoch & LABEL_MASK;
            if head.label != label {
                word = self.swap(word, Head { label, ..head });
                continue;
            }
            // The head the decision counts: this one, or, for a rollover to the reading's
            // bucket, the head its install would leave, written by the decision's own CAS
            // (`jumped`).
            let (head, jumped) = if moves && reading > head.epoch {
                match self.jump_head(head, reading) {
                    Some(fresh) => (fresh, true),
                    None => {
                        word = self.roll(word, head, reading);
                        continue;
                    }
                }
            } else {
                (head, false)
            };
            let window = Window {
                head,
                at: reading.max(head.epoch),
                ring: &self.state.ring,
            };
            match decide(&window, limit) {
                Ok((count, result)) => {
                    let next = Head { count, ..head };
                    match self.cas(word, next) {
                        Ok(()) => return result,
                        Err(observed) => word = observed,
                    }
                }
                // A jump moves the cell whatever the outcome, as a rollover would.
                Err(result) if jumped => match self.cas(word, head) {
                    Ok(()) => return result,
                    Err(observed) => word = observed,
                },
                Err(result) => {
                    let again = self.load();
                    if again == word {
                        return result;
                    }
                    word = again;
                }
            }
        }
    }

    /// Loads the head.
    #[inline]
    fn load(&self) -> u128 {
        // Acquire: pairs with the Release CAS that wrote it, so the ring buckets published
        // before an install are seen, and the configuration is loaded after this (the
        // guide's argument needs the order).
        self.state.head.load(Ordering::Acquire)
    }

    /// Moves the head from `from` to `to`; `Err(observed)` if it was not `from`.
    #[inline]
    fn cas(&self, from: u128, to: Head) -> Result<(), u128> {
        // Release on success: publishes the buckets written before it (an install) and this
        // decision to the next call that loads the head. Acquire on failure: as `load`.
        self.state
            .head
            .compare_exchange(from, to.pack(), Ordering::Release, Ordering::Acquire)
            .map(|_| ())
    }

    /// Tries to move the head from `from` to `to`; returns the head now in force (`to` if
    /// this call moved it).
    fn swap(&self, from: u128, to: Head) -> u128 {
        match self.cas(from, to) {
            Ok(()) => to.pack(),
            Err(observed) => observed,
        }
    }

    /// The head a rollover of the settled head `head` to bucket `target` installs, if the
    /// caller's own CAS from `head` may install it (with its decision), with no seal and no
    /// helpers. That needs a ring that already reads right for the new window: `head`'s
    /// count published into its slot (a near jump; the largest publication is kept, as in
    /// the sealed rollover), and every other bucket of the new window reading its final
    /// count or, for a bucket the jump skips or a far jump's window, nothing. A slot is
    /// written only by a publication of a head's count, or emptied by a sealed rollover's
    /// [`install`](Self::install) where its tag aliased a skipped bucket, so the skipped
    /// buckets' slots hold older buckets and read as empty for them, unless a 44-bit tag
    /// aliases one with a count; the jump is also at most `2^44 - B` buckets, so that a
    /// racing publication of `head`'s count (the one write that can still land while `head`
    /// stands) cannot alias a bucket of the new window. `None`: an aliasing slot, a longer jump, or a head that
    /// moved during the publication; the sealed rollover ([`roll`](Self::roll)) decides.
    #[inline]
    fn jump_head(&self, head: Head, target: u64) -> Option<Head> {
        let buckets = B as u64;
        let distance = target - head.epoch;
        if distance > (1 << 44) - buckets {
            return None;
        }
        let near = distance < buckets;
        if near {
            let still = |now: Head| now.epoch == head.epoch && !now.sealed;
            // A slot holding another bucket reads as 0 for this one: a head that counted
            // nothing has nothing to publish.
            let done = |have: Option<u64>| have.unwrap_or(0) >= head.count;
            if !self.write_slot(head.epoch, head.count, done, still) {
                return None;
            }
        }
        // One pass over the new window's slots, oldest first: the buckets it keeps from the
        // old window (and, near, `head`'s own) are summed, read after the publication, so
        // each is final or larger (a late publication only raises a count) and the sum never
        // counts less than was admitted; the buckets the jump skips and its target must read
        // as empty.
        let first = (target + 1).saturating_sub(buckets);
        // Buckets `first..kept` are kept (none for a far jump); `kept..=target` are new.
        let kept = if near { head.epoch + 1 } else { first };
        let mut prior = 0;
        // The slots from `first`'s on, wrapping, one per bucket of the window.
        let (before, from) = self.state.ring.split_at((first % buckets) as usize);
        for (epoch, slot) in (first..=target).zip(from.iter().chain(before)) {
            // Acquire: as in `bucket`.
            let count = Word64::slot_count(slot.load(Ordering::Acquire), epoch).unwrap_or(0);
            if epoch < kept {
                prior += count;
            } else if count != 0 {
                return None;
            }
        }
        Some(Head {
            epoch: target,
            sealed: false,
            label: head.label,
            // A late publication (a count loaded before a refund) can raise kept buckets
            // past what was admitted, and their sum past the field: the window never held
            // more than the largest limit, at most the field's bound.
            prior: prior.min(COUNT_MASK),
            count: 0,
        })
    }

    /// Starts the rollover of the settled head `head` (word `word`) to bucket `target`:
    /// publishes its count into its slot (unless the jump is far), then seals it with the
    /// distance, then helps it to its install. Returns the head now in force.
    #[cold]
    fn roll(&self, word: u128, head: Head, target: u64) -> u128 {
        let distance = (target - head.epoch).min(B as u64);
        let near = distance < B as u64;
        if near {
            let still = |now: Head| now.epoch == head.epoch && !now.sealed;
            // Racing publishers read the count at different moments of the bucket; the
            // largest is the final one (the sealer's, read from the word it seals).
            let done = |have: Option<u64>| have.is_some_and(|have| have >= head.count);
            if !self.write_slot(head.epoch, head.count, done, still) {
                return self.load();
            }
        }
        // A far seal names its target: helpers install that bucket, whatever their readings.
        let sealed = Head {
            epoch: if near { head.epoch } else { target },
            sealed: true,
            count: distance,
            ..head
        };
        // The seal succeeds only on the count just published: a later admission fails it.
        let now = self.swap(word, sealed);
        if now == sealed.pack() {
            self.install(now);
            return self.load();
        }
        now
    }

    /// Helps the sealed head `word` to its install: empties the buckets the jump skips (for
    /// a far one, all `B` buckets of the target's window), then CASes the head to the next
    /// bucket. Every helper empties the same buckets and installs the same head, fixed by the
    /// sealed word alone (a far seal carries its target in `epoch`), whatever its own reading.
    /// A skipped bucket whose slot already reads as empty for it (the slot holds another
    /// bucket, or this one with 0) is left as it is: only a slot whose 44-bit tag aliases it
    /// with a count, after the cell's time moved on by a multiple of 2^44 buckets, is written.
    #[cold]
    fn install(&self, word: u128) {
        let head = Head::unpack(word);
        let buckets = B as u64;
        let near = head.count < buckets;
        // The buckets the jump skips and the one it lands on, whose slot the next rollover's
        // publication reads (a count aliasing it there would pass for a racing publication).
        let (emptied, next) = if near {
            (
                head.epoch + 1..head.epoch + head.count + 1,
                head.epoch + head.count,
            )
        } else {
            // A far target is at least `B` past the sealed bucket, so this cannot underflow.
            (head.epoch + 1 - buckets..head.epoch + 1, head.epoch)
        };
        let still = |now: Head| now == head;
        let empty = |have: Option<u64>| have.is_none_or(|count| count == 0);
        for epoch in emptied {
            // A plain look first: an aliasing count is the rare case the write is for.
            if empty(bucket_word::<B>(&self.state.ring, epoch)) {
                continue;
            }
            if !self.write_slot(epoch, 0, empty, still) {
                return;
            }
        }
        // Every slot of the new window is final now (this helper wrote or saw each write),
        // so every helper sums the same prior; a far jump leaves none.
        let prior = if near {
            ((next + 1).saturating_sub(buckets)..next)
                .map(|epoch| bucket(&self.state.ring, epoch))
                .sum::<u64>()
                // As in `jump_head`: late publications may raise the sum past the field.
                .min(COUNT_MASK)
        } else {
            0
        };
        let installed = Head {
            epoch: next,
            sealed: false,
            label: head.label,
            prior,
            count: 0,
        };
        // Failure: another helper installed it (or will; the caller re-reads).
        let _ = self.cas(word, installed);
    }

    /// Writes `(epoch, count)` into `epoch`'s slot ([`ring::write`]) while the head satisfies
    /// `still`.
    fn write_slot(
        &self,
        epoch: u64,
        count: u64,
        done: impl Fn(Option<u64>) -> bool,
        still: impl Fn(Head) -> bool,
    ) -> bool {
        let slot = &self.state.ring[(epoch % B as u64) as usize];
        ring::write::<Word64>(slot, epoch, count, done, || {
            still(Head::unpack(self.load()))
        })
    }
}

impl<const B: usize, L: Layout> fmt::Debug for SlidingWindowCell<B, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingWindowCell")
            .field("head", &Head::unpack(self.load()))
            .field("buckets", &B)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::WindowQuota;
    use crate::ConfigError;

    /// A window quota holds more than a sliding cell's 20-bit counts: the configuration
    /// refuses it, naming its own bound.
    #[test]
    fn limits_beyond_the_counts_are_refused() {
        let max = SlidingConfig::<10>::MAX_LIMIT;
        for limit in [max + 1, 10_000_000, WindowQuota::MAX_LIMIT] {
            let quota = WindowQuota::per_hour(limit).unwrap();
            assert_eq!(
                SlidingConfig::<10>::new(quota).err(),
                Some(ConfigError::LimitTooLarge { limit, max })
            );
        }
        let largest = WindowQuota::per_hour(max).unwrap();
        assert_eq!(SlidingConfig::<10>::new(largest).unwrap().limit(), max);
        let unlimited = SlidingConfig::<4>::new(WindowQuota::unlimited()).unwrap();
        assert_eq!(unlimited.limit(), u64::MAX);
    }

    #[test]
    fn heads_round_trip_at_field_limits() {
        for head in [
            Head {
                epoch: 0,
                sealed: false,
                label: 0,
                prior: 0,
                count: 0,
            },
            Head {
                epoch: u64::MAX,
                sealed: true,
                label: LABEL_MASK,
                prior: COUNT_MASK,
                count: COUNT_MASK,
            },
            Head {
                epoch: 12_345,
                sealed: false,
                label: 7,
                prior: 5,
                count: 3,
            },
        ] {
            assert_eq!(Head::unpack(head.pack()), head);
        }
        // Each field lands where the layout says.
        let word = Head {
            epoch: 1,
            sealed: true,
            label: 2,
            prior: 4,
            count: 3,
        }
        .pack();
        assert_eq!(word, (1 << 64) | (1 << 63) | (2 << 40) | (4 << 20) | 3);
    }
}
