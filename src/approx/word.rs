//! The packed words of [`ApproxSlidingWindow`](crate::ApproxSlidingWindow): head
//! `[seq: 23 | gen: 1 | prev: 20 | cur: 20]`, claim `[epoch: 62 | parity: 1 | near: 1]`, limits.
//! Field by field: [the guide](crate::guide::approx).

/// Bits of the head's install sequence number.
pub(crate) const SEQ_BITS: u32 = 23;
/// Bits of each counter (`prev`, `cur`).
pub(crate) const COUNT_BITS: u32 = 20;
const CUR_SHIFT: u32 = 0;
const PREV_SHIFT: u32 = COUNT_BITS;
const GEN_SHIFT: u32 = 2 * COUNT_BITS;
const SEQ_SHIFT: u32 = GEN_SHIFT + 1;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

const _: () = assert!(SEQ_BITS + 1 + 2 * COUNT_BITS == 64);

/// The largest limit the packed counters can hold: 1 048 575 permits per window.
pub(crate) const MAX_LIMIT: u64 = COUNT_MASK;

/// The last window index the claim word can hold; later readings join it (time then stands
/// still, which only refuses more). Reached only by windows shorter than 4 ns, after 2^62
/// of them.
pub(crate) const LAST_WINDOW: u64 = (1 << 62) - 1;

/// An unpacked head word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) generation: u64,
    pub(crate) prev: u64,
    pub(crate) cur: u64,
}

impl Head {
    /// The limiter's first head: window 0, generation 0, install parity 0.
    pub(crate) const FIRST: Self = Self {
        seq: 0,
        generation: 0,
        prev: 0,
        cur: 0,
    };

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.seq <= SEQ_MASK && self.generation <= 1);
        debug_assert!(self.prev <= COUNT_MASK && self.cur <= COUNT_MASK);
        (self.seq << SEQ_SHIFT)
            | (self.generation << GEN_SHIFT)
            | (self.prev << PREV_SHIFT)
            | (self.cur << CUR_SHIFT)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            seq: word >> SEQ_SHIFT,
            generation: (word >> GEN_SHIFT) & 1,
            prev: (word >> PREV_SHIFT) & COUNT_MASK,
            cur: (word >> CUR_SHIFT) & COUNT_MASK,
        }
    }

    /// The install parity: the claim's parity once this head is installed for it.
    pub(crate) fn parity(self) -> u64 {
        self.seq & 1
    }

    /// Whether this head is installed for `claim`: the claimed window's own head (or, when
    /// read without re-checking the claim, possibly a head two or more claims later).
    pub(crate) fn is_for(self, claim: Claim) -> bool {
        self.parity() == claim.parity
    }

    /// The first head of the window claimed after this one's: sequence + 1 (parity flips),
    /// same generation, the given `prev` and `cur = 0`.
    pub(crate) fn successor(self, prev: u64) -> Self {
        Self {
            seq: (self.seq + 1) & SEQ_MASK,
            generation: self.generation,
            prev,
            cur: 0,
        }
    }

    /// This head under the other generation's limit: sequence + 2 (parity kept), same
    /// counters.
    pub(crate) fn relimited(self) -> Self {
        Self {
            seq: (self.seq + 2) & SEQ_MASK,
            generation: self.generation ^ 1,
            ..self
        }
    }
}

/// An unpacked claim word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) epoch: u64,
    pub(crate) parity: u64,
    pub(crate) near: bool,
}

impl Claim {
    /// The limiter's first claim: window 0, parity 0 (that of [`Head::FIRST`]).
    pub(crate) const FIRST: Self = Self {
        epoch: 0,
        parity: 0,
        near: false,
    };

    /// The claim of window `epoch` following the settled claim `self`.
    pub(crate) fn successor(self, epoch: u64) -> Self {
        debug_assert!(epoch > self.epoch && epoch <= LAST_WINDOW);
        Self {
            epoch,
            parity: self.parity ^ 1,
            near: epoch == self.epoch + 1,
        }
    }

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.epoch <= LAST_WINDOW && self.parity <= 1);
        (self.epoch << 2) | (self.parity << 1) | u64::from(self.near)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            epoch: word >> 2,
            parity: (word >> 1) & 1,
            near: word & 1 == 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, generation: u64, prev: u64, cur: u64) -> Head {
        Head {
            seq,
            generation,
            prev,
            cur,
        }
    }

    #[test]
    fn head_round_trips_at_field_limits() {
        for h in [
            Head::FIRST,
            head(SEQ_MASK, 1, MAX_LIMIT, MAX_LIMIT),
            head(5, 1, 7, 9),
        ] {
            assert_eq!(Head::unpack(h.pack()), h);
        }
        // Each field lands where the layout says.
        let word = head(1, 1, 1, 1).pack();
        assert_eq!(word, (1 << 41) | (1 << 40) | (1 << 20) | 1, "{word:#x}");
        assert_eq!(head(SEQ_MASK, 0, 0, 0).pack() >> 41, SEQ_MASK);
    }

    #[test]
    fn full_counters_never_touch_their_neighbours() {
        let unpacked = Head::unpack(head(3, 0, MAX_LIMIT, MAX_LIMIT).pack());
        assert_eq!((unpacked.seq, unpacked.generation), (3, 0));
        assert_eq!((unpacked.prev, unpacked.cur), (MAX_LIMIT, MAX_LIMIT));
    }

    #[test]
    fn installs_flip_parity_and_relimits_keep_it() {
        let last = head(SEQ_MASK, 1, 4, 3);
        // The sequence wraps; 2^23 is even, so parity still alternates across the wrap.
        let next = last.successor(3);
        assert_eq!(next, head(0, 1, 3, 0));
        assert_ne!(next.parity(), last.parity());
        let relimited = last.relimited();
        assert_eq!(relimited, head(1, 0, 4, 3));
        assert_eq!(relimited.parity(), last.parity());
        // A word recurs only after 2^23 sequence steps: 2^22 `set_limit`s here.
        let mut h = Head::FIRST;
        for step in 1..=1u64 << (SEQ_BITS - 1) {
            h = h.relimited();
            assert_eq!(
                h == Head::FIRST,
                step == 1 << (SEQ_BITS - 1),
                "after {step}"
            );
        }
    }

    #[test]
    fn heads_match_only_claims_of_their_parity() {
        let first = Claim {
            epoch: (1 << 40) + 5,
            parity: 0,
            near: false,
        };
        let next = first.successor(first.epoch + (1 << 14));
        assert!(!next.near && next.parity == 1);
        assert!(first.successor(first.epoch + 1).near);
        let old = head(6, 1, 3, 2);
        assert!(old.is_for(first));
        assert!(!old.is_for(next));
        assert!(old.successor(0).is_for(next));
        assert!(old.relimited().is_for(first));
    }

    #[test]
    fn claim_and_limits_round_trip() {
        for claim in [
            Claim {
                epoch: LAST_WINDOW,
                parity: 1,
                near: true,
            },
            Claim::FIRST,
            Claim {
                epoch: 1 << 32,
                parity: 1,
                near: false,
            },
        ] {
            assert_eq!(Claim::unpack(claim.pack()), claim);
        }
    }
}
