//! The packed words of the window engine, in two widths ([`Words`]): [`Word64`] (limits up
//! to 2^20 − 1, head `[seq: 22 | gen: 1 | cap: 20 | count: 21]`, slot `[tag: 44 | count:
//! 20]`) and [`Word128`] (limits up to 2^40 − 1, head `[seq: 46 | gen: 1 | cap: 40 | count:
//! 41]`, slot `[epoch: 64 | count: 64]`); the claim `[epoch: 63 | parity: 1]` is 64 bits in
//! both. Field by field, with the ABA bound: [the guide](crate::guide::window).

use std::fmt;

use crate::sync::{AtomicU128, AtomicU64, AtomicWord};

/// Bits of [`Word64`]'s cap (its largest limit is `2^CAP_BITS - 1`).
pub(crate) const CAP_BITS: u32 = 20;

/// The largest limit of the narrow engine ([`Word64`], 2^20 - 1 permits per window): every
/// window cell's and the largest an unlimited quota's engine counts to.
pub(crate) const MAX_LIMIT: u64 = <Word64 as Words>::MAX_LIMIT;
/// The largest limit of the wide engine ([`Word128`], 2^40 - 1 permits per window).
pub(crate) const WIDE_MAX_LIMIT: u64 = <Word128 as Words>::MAX_LIMIT;
/// The most buckets a sliding window may have.
pub(crate) const MAX_BUCKETS: u64 = 1 << 12;

/// An unpacked head word (either width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// The install sequence number; packing keeps its low bits (22 narrow, 46 wide).
    pub(crate) seq: u64,
    pub(crate) generation: u64,
    pub(crate) cap: u64,
    pub(crate) count: u64,
}

impl Head {
    /// Permits admitted in this epoch (at most `cap`).
    pub(crate) fn admitted(self) -> u64 {
        self.count.min(self.cap)
    }

    /// The install parity.
    pub(crate) fn parity(self) -> u64 {
        self.seq & 1
    }

    /// The head a rollover installs after this one (the sequence number wraps when packed).
    pub(crate) fn successor(self, cap: u64) -> Self {
        Self {
            seq: self.seq + 1,
            generation: self.generation,
            cap,
            count: 0,
        }
    }

    /// This head under a new limit: same parity, the other generation.
    pub(crate) fn relimited(self, cap: u64, count: u64) -> Self {
        Self {
            seq: self.seq + 2,
            generation: 1 - self.generation,
            cap,
            count,
        }
    }
}

/// An unpacked claim word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) epoch: u64,
    pub(crate) parity: u64,
}

impl Claim {
    pub(crate) fn pack(self) -> u64 {
        (self.epoch << 1) | self.parity
    }
    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            epoch: word >> 1,
            parity: word & 1,
        }
    }
}

/// The words of one width of the engine: its head, its ring slots and its two-generation
/// limits word, all of one atomic type. The engine's algorithm is the same for both widths;
/// only the packing differs. Sealed in practice: crate-private, with two implementations.
pub(crate) trait Words: Send + Sync + 'static {
    /// A packed head, slot or limits word.
    type Raw: Copy + Eq + fmt::Debug + Send + Sync;
    /// Its atomic.
    type Atomic: AtomicWord<Raw = Self::Raw>;
    /// The largest limit (and cap).
    const MAX_LIMIT: u64;

    /// The head in `raw` with one more counted (the fast path's CAS target): the count is
    /// the low field, so one more is `raw + 1` while `count < cap`, which the caller checked.
    fn plus_one(raw: Self::Raw) -> Self::Raw;

    fn pack(head: Head) -> Self::Raw;
    fn unpack(raw: Self::Raw) -> Head;
    /// A ring slot holding `count` for `epoch`.
    fn pack_slot(epoch: u64, count: u64) -> Self::Raw;
    /// The count `slot` holds for `epoch`, or `None` when it holds another epoch.
    fn slot_count(slot: Self::Raw, epoch: u64) -> Option<u64>;
    /// The limits word of a new engine: `limit` for generation 0, 0 for generation 1.
    fn limits(limit: u64) -> Self::Raw;
    /// The limit of generation `gen` (its parity) in a limits word.
    fn limit_of(limits: Self::Raw, generation: u64) -> u64;
    /// `limits` with generation `gen`'s half (its parity) replaced by `limit`.
    fn with_limit(limits: Self::Raw, generation: u64, limit: u64) -> Self::Raw;
}

/// The 64-bit words, for limits up to 2^20 - 1: head `[seq: 22 | gen: 1 | cap: 20 | count:
/// 21]` (the count's extra bit was the headroom of a former `fetch_add` fast path), slot `[tag: 44 | count: 20]` (the epoch
/// modulo 2^44: hence the far-jump wipe), limits `[odd generations: 32 | even: 32]`
/// ([`crate::limits`]).
#[derive(Debug)]
pub(crate) enum Word64 {}

mod narrow {
    pub(super) const SEQ_BITS: u32 = 22;
    pub(super) const CAP_BITS: u32 = super::CAP_BITS;
    pub(super) const COUNT_BITS: u32 = 21;
    pub(super) const CAP_SHIFT: u32 = COUNT_BITS;
    pub(super) const GEN_SHIFT: u32 = COUNT_BITS + CAP_BITS;
    pub(super) const SEQ_SHIFT: u32 = GEN_SHIFT + 1;
    pub(super) const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
    pub(super) const CAP_MASK: u64 = (1 << CAP_BITS) - 1;
    pub(super) const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
    pub(super) const SLOT_TAG_MASK: u64 = (1 << (64 - CAP_BITS)) - 1;
    const _: () = assert!(SEQ_BITS + 1 + CAP_BITS + COUNT_BITS == 64);
}

impl Words for Word64 {
    type Raw = u64;
    type Atomic = AtomicU64;
    const MAX_LIMIT: u64 = narrow::CAP_MASK;

    #[inline]
    fn plus_one(raw: u64) -> u64 {
        raw + 1
    }

    #[inline]
    fn pack(head: Head) -> u64 {
        use narrow::*;
        debug_assert!(head.cap <= CAP_MASK && head.count <= COUNT_MASK && head.generation <= 1);
        ((head.seq & SEQ_MASK) << SEQ_SHIFT)
            | (head.generation << GEN_SHIFT)
            | (head.cap << CAP_SHIFT)
            | head.count
    }

    #[inline]
    fn unpack(word: u64) -> Head {
        use narrow::*;
        Head {
            seq: word >> SEQ_SHIFT,
            generation: (word >> GEN_SHIFT) & 1,
            cap: (word >> CAP_SHIFT) & CAP_MASK,
            count: word & COUNT_MASK,
        }
    }

    fn pack_slot(epoch: u64, count: u64) -> u64 {
        use narrow::*;
        debug_assert!(count <= CAP_MASK);
        ((epoch & SLOT_TAG_MASK) << CAP_BITS) | count
    }

    fn slot_count(slot: u64, epoch: u64) -> Option<u64> {
        use narrow::*;
        (slot >> CAP_BITS == epoch & SLOT_TAG_MASK).then_some(slot & CAP_MASK)
    }

    fn limits(limit: u64) -> u64 {
        crate::gen_limits::with_limit(0, 0, limit)
    }

    fn limit_of(limits: u64, generation: u64) -> u64 {
        crate::gen_limits::limit_of(limits, generation)
    }

    fn with_limit(limits: u64, generation: u64, limit: u64) -> u64 {
        crate::gen_limits::with_limit(limits, generation, limit)
    }
}

/// The 128-bit words (`cmpxchg16b` on x86_64), for limits up to 2^40 - 1: head `[seq: 46 |
/// gen: 1 | cap: 40 | count: 41]` (the fast path's add is a CAS from the head it read),
/// slot `[epoch: 64 | count: 64]` (the whole epoch: no slot can alias another epoch),
/// limits `[odd generations: 64 | even: 64]`.
#[derive(Debug)]
pub(crate) enum Word128 {}

mod wide {
    pub(super) const SEQ_BITS: u32 = 46;
    pub(super) const CAP_BITS: u32 = 40;
    pub(super) const COUNT_BITS: u32 = 41;
    pub(super) const CAP_SHIFT: u32 = COUNT_BITS;
    pub(super) const GEN_SHIFT: u32 = COUNT_BITS + CAP_BITS;
    pub(super) const SEQ_SHIFT: u32 = GEN_SHIFT + 1;
    pub(super) const SEQ_MASK: u128 = (1 << SEQ_BITS) - 1;
    pub(super) const CAP_MASK: u128 = (1 << CAP_BITS) - 1;
    pub(super) const COUNT_MASK: u128 = (1 << COUNT_BITS) - 1;
    pub(super) const HALF: u32 = 64;
    pub(super) const LOW: u128 = u64::MAX as u128;
    const _: () = assert!(SEQ_BITS + 1 + CAP_BITS + COUNT_BITS == 128);
}

/// A field of a 128-bit word, known to fit in 64 bits by its mask.
#[inline]
fn field(word: u128, shift: u32, mask: u128) -> u64 {
    ((word >> shift) & mask) as u64
}

impl Words for Word128 {
    type Raw = u128;
    type Atomic = AtomicU128;
    const MAX_LIMIT: u64 = wide::CAP_MASK as u64;

    #[inline]
    fn plus_one(raw: u128) -> u128 {
        raw + 1
    }

    #[inline]
    fn pack(head: Head) -> u128 {
        use wide::*;
        debug_assert!(
            u128::from(head.cap) <= CAP_MASK
                && u128::from(head.count) <= COUNT_MASK
                && head.generation <= 1
        );
        ((u128::from(head.seq) & SEQ_MASK) << SEQ_SHIFT)
            | (u128::from(head.generation) << GEN_SHIFT)
            | (u128::from(head.cap) << CAP_SHIFT)
            | u128::from(head.count)
    }

    #[inline]
    fn unpack(word: u128) -> Head {
        use wide::*;
        Head {
            seq: field(word, SEQ_SHIFT, SEQ_MASK),
            generation: field(word, GEN_SHIFT, 1),
            cap: field(word, CAP_SHIFT, CAP_MASK),
            count: field(word, 0, COUNT_MASK),
        }
    }

    fn pack_slot(epoch: u64, count: u64) -> u128 {
        (u128::from(epoch) << wide::HALF) | u128::from(count)
    }

    fn slot_count(slot: u128, epoch: u64) -> Option<u64> {
        (field(slot, wide::HALF, wide::LOW) == epoch).then_some(field(slot, 0, wide::LOW))
    }

    fn limits(limit: u64) -> u128 {
        u128::from(limit)
    }

    fn limit_of(limits: u128, generation: u64) -> u64 {
        field(limits, wide::HALF * (generation & 1) as u32, wide::LOW)
    }

    fn with_limit(limits: u128, generation: u64, limit: u64) -> u128 {
        let shift = wide::HALF * (generation & 1) as u32;
        (limits & !(wide::LOW << shift)) | (u128::from(limit) << shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, generation: u64, cap: u64, count: u64) -> Head {
        Head {
            seq,
            generation,
            cap,
            count,
        }
    }

    /// The largest sequence number `W` keeps (the ABA bound counts 2^bits installs).
    fn last_seq<W: Words>() -> u64 {
        if W::MAX_LIMIT == Word64::MAX_LIMIT {
            (1 << narrow::SEQ_BITS) - 1
        } else {
            (1 << wide::SEQ_BITS) - 1
        }
    }

    fn round_trips_at_field_limits<W: Words>() {
        let count_max = 2 * W::MAX_LIMIT + 1;
        for h in [
            head(0, 0, 0, 0),
            head(last_seq::<W>(), 1, W::MAX_LIMIT, count_max),
            head(12345, 1, 7, 9),
        ] {
            assert_eq!(W::unpack(W::pack(h)), h);
        }
        // The fast path's one more moves the count alone, up to its last value.
        for (seq, cap, count) in [(3, 5, 0), (last_seq::<W>(), W::MAX_LIMIT, W::MAX_LIMIT - 1)] {
            let plus = W::plus_one(W::pack(head(seq, 1, cap, count)));
            assert_eq!(W::unpack(plus), head(seq, 1, cap, count + 1));
        }
    }

    #[test]
    fn heads_round_trip_at_field_limits() {
        round_trips_at_field_limits::<Word64>();
        round_trips_at_field_limits::<Word128>();
    }

    #[test]
    fn the_widths_hold_what_they_promise() {
        assert_eq!(MAX_LIMIT, (1 << 20) - 1);
        assert_eq!(WIDE_MAX_LIMIT, (1 << 40) - 1);
        const { assert!(WIDE_MAX_LIMIT >= 1 << 32) };
    }

    fn sequence_wraps_and_parity_follows<W: Words>() {
        let h = head(last_seq::<W>(), 0, 5, 3);
        let next = W::unpack(W::pack(h.successor(7)));
        assert_eq!(
            (next.seq, next.generation, next.cap, next.count),
            (0, 0, 7, 0)
        );
        assert_ne!(next.parity(), h.parity());
        let relimited = W::unpack(W::pack(h.relimited(2, 3)));
        assert_eq!((relimited.seq, relimited.generation), (1, 1));
        assert_eq!(relimited.parity(), h.parity());
    }

    #[test]
    fn installs_flip_parity_and_relimits_keep_it() {
        sequence_wraps_and_parity_follows::<Word64>();
        sequence_wraps_and_parity_follows::<Word128>();
    }

    fn limits_halves_are_independent<W: Words>() {
        let limits = W::with_limit(W::limits(7), 1, W::MAX_LIMIT);
        assert_eq!(W::limit_of(limits, 0), 7);
        assert_eq!(W::limit_of(limits, 1), W::MAX_LIMIT);
        assert_eq!(W::limit_of(limits, 2), 7);
        assert_eq!(W::limit_of(W::with_limit(limits, 4, 9), 0), 9);
        assert_eq!(W::limit_of(W::with_limit(limits, 4, 9), 1), W::MAX_LIMIT);
    }

    #[test]
    fn limits_words_keep_both_generations() {
        limits_halves_are_independent::<Word64>();
        limits_halves_are_independent::<Word128>();
    }

    #[test]
    fn claim_and_slots_round_trip() {
        let claim = Claim {
            epoch: (1 << 62) - 1,
            parity: 1,
        };
        assert_eq!(Claim::unpack(claim.pack()), claim);
        let slot = Word64::pack_slot((1 << 44) + 3, MAX_LIMIT);
        assert_eq!(Word64::slot_count(slot, (1 << 44) + 3), Some(MAX_LIMIT));
        assert_eq!(Word64::slot_count(slot, 3), Some(MAX_LIMIT)); // aliases: hence the far-jump wipe
        assert_eq!(Word64::slot_count(slot, 4), None);
        let wide = Word128::pack_slot((1 << 44) + 3, WIDE_MAX_LIMIT);
        assert_eq!(
            Word128::slot_count(wide, (1 << 44) + 3),
            Some(WIDE_MAX_LIMIT)
        );
        assert_eq!(Word128::slot_count(wide, 3), None); // the whole epoch: no alias
        let last = Word128::pack_slot(u64::MAX, u64::MAX);
        assert_eq!(Word128::slot_count(last, u64::MAX), Some(u64::MAX));
    }
}
