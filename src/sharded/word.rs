//! The packed word of one shard of a sharded limiter ([`ShardedWindow`](crate::ShardedWindow),
//! [`ShardedBucket`](crate::ShardedBucket)): `[state: 2 | granted: 20 | taken: 42]`, its
//! limits, and the batch a shard leases. Field by field: the guides'
//! [window](crate::guide::sharded#the-shard-word) and
//! [bucket](crate::guide::sharded_bucket#the-shard-word) sections. What a lease's permits
//! mean (an epoch's count, or slots of a schedule) is each family's, beside the word in its
//! shard.

/// The largest batch a shard leases at once.
pub(crate) const MAX_BATCH: u64 = 1 << 12;
/// The most shards a sharded limiter may have.
pub(crate) const MAX_SHARDS: u64 = 1 << 10;

const TAKEN_BITS: u32 = 42;
const GRANTED_BITS: u32 = 20;
const TAKEN_SHIFT: u32 = 0;
const GRANTED_SHIFT: u32 = TAKEN_BITS;
const STATE_SHIFT: u32 = TAKEN_BITS + GRANTED_BITS;
const TAKEN_MASK: u64 = (1 << TAKEN_BITS) - 1;
const GRANTED_MASK: u64 = (1 << GRANTED_BITS) - 1;

const _: () = assert!(STATE_SHIFT + 2 == 64 && MAX_BATCH <= GRANTED_MASK);

/// Adds one to the `taken` field of a shard word.
pub(crate) const TAKE_ONE: u64 = 1 << TAKEN_SHIFT;

/// Who may use a shard's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Its permits may be taken.
    Open = 0,
    /// A caller is leasing a new batch; others go to the shared window or schedule
    /// directly.
    Refilling = 1,
    /// A drain took the lease back (`set_limit`; a sharded bucket's `set_rate` and refunds
    /// too); others go to the shared window or schedule directly.
    Frozen = 2,
}

/// An unpacked shard word, high to low `[state: 2 | granted: 20 | taken: 42]`:
/// - `state`: see [`State`]; only an open word hands out permits.
/// - `granted`: the lease's permits left to the fast path (the refiller's own permit is not
///   among them), at most [`MAX_BATCH`].
/// - `taken`: fast-path increments; the `i`-th (from 0) takes the lease's fast permit `i`,
///   so the permits handed out are `min(taken, granted)`. It passes `granted` only by
///   callers racing between their load and their add (one per thread), against 2^42 of
///   headroom: the add never carries into `granted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) state: State,
    pub(crate) granted: u64,
    pub(crate) taken: u64,
}

impl Word {
    /// An open lease of `granted` fast permits, none taken yet.
    pub(crate) fn open(granted: u64) -> Self {
        Self {
            state: State::Open,
            granted,
            taken: 0,
        }
    }

    /// This word with `taken` set.
    pub(crate) fn taking(self, taken: u64) -> Self {
        Self { taken, ..self }
    }

    /// A shard owned by a refilling caller.
    pub(crate) const REFILLING: Self = Self {
        state: State::Refilling,
        granted: 0,
        taken: 0,
    };

    /// A shard drained by a reconfiguration (or a sharded bucket's refund).
    pub(crate) const FROZEN: Self = Self {
        state: State::Frozen,
        granted: 0,
        taken: 0,
    };

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.granted <= GRANTED_MASK && self.taken <= TAKEN_MASK);
        ((self.state as u64) << STATE_SHIFT)
            | (self.granted << GRANTED_SHIFT)
            | (self.taken << TAKEN_SHIFT)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        let state = match word >> STATE_SHIFT {
            0 => State::Open,
            1 => State::Refilling,
            _ => State::Frozen,
        };
        Self {
            state,
            granted: (word >> GRANTED_SHIFT) & GRANTED_MASK,
            taken: (word >> TAKEN_SHIFT) & TAKEN_MASK,
        }
    }

    /// Whether a `fetch_add` that returned this word took a fast permit (its index is
    /// `taken`).
    #[inline]
    pub(crate) fn has_permit(self) -> bool {
        self.state == State::Open && self.taken < self.granted
    }

    /// Permits of the lease never handed out.
    pub(crate) fn unused(self) -> u64 {
        self.granted - self.taken.min(self.granted)
    }
}

/// How many permits a shard leases when `left` are available (what the window's current
/// bucket, or the bucket's schedule, still has) and there are `shards` shards:
/// `clamp(left / (2 × shards), 1, max_batch)` (the engine then grants at most `left`). The
/// batch shrinks as `left` does; from `left < 4 × shards` on, every lease is the
/// refiller's own single permit, so the last permits are handed out one by one.
pub(crate) fn batch_size(left: u64, shards: u64, max_batch: u64) -> u64 {
    (left / shards.saturating_mul(2).max(1)).clamp(1, max_batch.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_round_trips_at_field_limits() {
        for w in [
            Word::open(0),
            Word::open(MAX_BATCH),
            Word {
                state: State::Open,
                granted: GRANTED_MASK,
                taken: TAKEN_MASK,
            },
            Word::REFILLING,
            Word::FROZEN,
            Word {
                state: State::Frozen,
                granted: 3,
                taken: 9,
            },
            Word::open(3).taking(9),
        ] {
            assert_eq!(Word::unpack(w.pack()), w);
        }
        assert_eq!(
            Word::open(5).pack() + TAKE_ONE,
            Word::open(5).taking(1).pack()
        );
    }

    #[test]
    fn taking_past_granted_never_touches_granted_or_state() {
        let word = Word::open(MAX_BATCH).pack() + MAX_BATCH * TAKE_ONE;
        let inflated = Word::unpack(word + 1_000_000 * TAKE_ONE);
        assert_eq!((inflated.state, inflated.granted), (State::Open, MAX_BATCH));
        assert!(!inflated.has_permit());
        assert_eq!(inflated.unused(), 0);
        let refilling = Word::unpack(Word::REFILLING.pack() + TAKE_ONE);
        assert_eq!(refilling.state, State::Refilling);
        assert!(!refilling.has_permit());
        assert!(!Word::unpack(Word::FROZEN.pack() + TAKE_ONE).has_permit());
    }

    #[test]
    fn only_open_words_with_room_hand_out_permits() {
        assert!(Word::open(1).has_permit());
        assert!(!Word::open(0).has_permit());
        assert!(!Word {
            state: State::Frozen,
            granted: 2,
            taken: 0
        }
        .has_permit());
        assert_eq!(Word::open(4).taking(3).unused(), 1);
    }

    #[test]
    fn batch_shrinks_as_what_is_left_shrinks() {
        // 4 shards, max batch 32: a quarter of half of what is left, capped.
        assert_eq!(batch_size(1_000_000, 4, 32), 32);
        assert_eq!(batch_size(200, 4, 32), 25);
        assert_eq!(batch_size(16, 4, 32), 2);
        assert_eq!(batch_size(15, 4, 32), 1);
        assert_eq!(batch_size(0, 4, 32), 1);
        assert_eq!(batch_size(u64::MAX, u64::MAX, 0), 1);
    }
}
