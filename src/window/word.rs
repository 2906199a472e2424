//! The packed words of the window engine: head `[seq: 22 | gen: 1 | cap: 20 | count: 21]`,
//! claim `[epoch: 63 | parity: 1]`, slot `[tag: 44 | count: 20]`. Field by field, with the ABA
//! bound: [the guide](crate::guide::window).

pub(crate) const SEQ_BITS: u32 = 22;
pub(crate) const CAP_BITS: u32 = 20;
pub(crate) const COUNT_BITS: u32 = 21;
const COUNT_SHIFT: u32 = 0;
const CAP_SHIFT: u32 = COUNT_BITS;
const GEN_SHIFT: u32 = COUNT_BITS + CAP_BITS;
const SEQ_SHIFT: u32 = GEN_SHIFT + 1;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
const CAP_MASK: u64 = (1 << CAP_BITS) - 1;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

const _: () = assert!(SEQ_BITS + 1 + CAP_BITS + COUNT_BITS == 64);

/// The largest limit the window engine can represent (2^20 - 1 permits per window).
pub(crate) const MAX_LIMIT: u64 = CAP_MASK;
/// The most buckets a sliding window may have.
pub(crate) const MAX_BUCKETS: u64 = 1 << 12;

/// Adds one to the count field of a head word.
pub(crate) const ONE: u64 = 1 << COUNT_SHIFT;

/// An unpacked head word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) gen: u64,
    pub(crate) cap: u64,
    pub(crate) count: u64,
}

impl Head {
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.cap <= CAP_MASK && self.count <= COUNT_MASK && self.gen <= 1);
        ((self.seq & SEQ_MASK) << SEQ_SHIFT)
            | (self.gen << GEN_SHIFT)
            | (self.cap << CAP_SHIFT)
            | (self.count << COUNT_SHIFT)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            seq: word >> SEQ_SHIFT,
            gen: (word >> GEN_SHIFT) & 1,
            cap: (word >> CAP_SHIFT) & CAP_MASK,
            count: (word >> COUNT_SHIFT) & COUNT_MASK,
        }
    }

    /// Permits admitted in this epoch (racing fast-path adds beyond `cap` were refused).
    pub(crate) fn admitted(self) -> u64 {
        self.count.min(self.cap)
    }

    /// The install parity.
    pub(crate) fn parity(self) -> u64 {
        self.seq & 1
    }

    /// The head a rollover installs after this one.
    pub(crate) fn successor(self, cap: u64) -> Self {
        Self {
            seq: (self.seq + 1) & SEQ_MASK,
            gen: self.gen,
            cap,
            count: 0,
        }
    }

    /// This head under a new limit: same parity, the other generation.
    pub(crate) fn relimited(self, cap: u64, count: u64) -> Self {
        Self {
            seq: (self.seq + 2) & SEQ_MASK,
            gen: 1 - self.gen,
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

const SLOT_TAG_SHIFT: u32 = CAP_BITS;
const SLOT_TAG_MASK: u64 = (1 << (64 - CAP_BITS)) - 1;

/// A ring slot: `[tag: 44 | count: 20]`.
pub(crate) fn pack_slot(epoch: u64, count: u64) -> u64 {
    debug_assert!(count <= CAP_MASK);
    ((epoch & SLOT_TAG_MASK) << SLOT_TAG_SHIFT) | count
}

/// The count a slot holds for `epoch`, or `None` when it holds another epoch.
pub(crate) fn slot_count(slot: u64, epoch: u64) -> Option<u64> {
    (slot >> SLOT_TAG_SHIFT == epoch & SLOT_TAG_MASK).then_some(slot & CAP_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, gen: u64, cap: u64, count: u64) -> Head {
        Head {
            seq,
            gen,
            cap,
            count,
        }
    }

    #[test]
    fn head_round_trips_at_field_limits() {
        for h in [
            head(0, 0, 0, 0),
            head(SEQ_MASK, 1, MAX_LIMIT, COUNT_MASK),
            head(12345, 1, 7, 9),
        ] {
            assert_eq!(Head::unpack(h.pack()), h);
        }
        assert_eq!(head(3, 1, 5, 0).pack() + ONE, head(3, 1, 5, 1).pack());
    }

    #[test]
    fn counting_past_cap_never_touches_cap_gen_or_seq() {
        let word = head(9, 1, MAX_LIMIT, MAX_LIMIT).pack();
        let inflated = Head::unpack(word + (COUNT_MASK - MAX_LIMIT) * ONE);
        assert_eq!(
            (inflated.seq, inflated.gen, inflated.cap),
            (9, 1, MAX_LIMIT)
        );
        assert_eq!(inflated.admitted(), MAX_LIMIT);
    }

    #[test]
    fn installs_flip_parity_and_relimits_keep_it() {
        let h = head(SEQ_MASK, 0, 5, 3);
        let next = h.successor(7);
        assert_eq!((next.seq, next.gen, next.cap, next.count), (0, 0, 7, 0));
        assert_ne!(next.parity(), h.parity());
        let relimited = h.relimited(2, 3);
        assert_eq!((relimited.seq, relimited.gen), (1, 1));
        assert_eq!(relimited.parity(), h.parity());
    }

    #[test]
    fn claim_and_slot_round_trip() {
        let claim = Claim {
            epoch: (1 << 62) - 1,
            parity: 1,
        };
        assert_eq!(Claim::unpack(claim.pack()), claim);
        let slot = pack_slot((1 << 44) + 3, MAX_LIMIT);
        assert_eq!(slot_count(slot, (1 << 44) + 3), Some(MAX_LIMIT));
        assert_eq!(slot_count(slot, 3), Some(MAX_LIMIT)); // aliases: hence the far-jump wipe
        assert_eq!(slot_count(slot, 4), None);
    }
}
