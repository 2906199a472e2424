//! The packed words of [`ApproxSlidingWindow`](crate::ApproxSlidingWindow), with their bit
//! layouts.
//!
//! **Head** (`AtomicU64`), high to low: `[tag: 14 | parity: 1 | gen: 1 | prev: 24 | cur: 24]`
//! - `prev`, `cur`: the spec's two counters for the head's window: permits admitted in the
//!   window before it (frozen when the head was installed) and in this one. Admissions only
//!   ever CAS `cur` up by `n` after checking the limit, so `cur <= limit <= MAX_LIMIT` and
//!   nothing ever carries out of a field.
//! - `tag`: the head's window index modulo 2^14, and `parity`: the claim's parity (below)
//!   when the head was installed. `parity` alone tells the head apart from its predecessor
//!   during a rollover (successive claims alternate it), so a claim may jump straight to any
//!   window, even an exact multiple of 2^14 ahead. The `tag` is the margin against ABA: a
//!   head word can only recur exactly for a window 2^14 or more later, and the admission
//!   path re-checks the full-width claim whenever that would matter (see `mod.rs`).
//! - `gen`: which half of the limits word holds the limit in force. A rollover keeps its
//!   predecessor's `gen`; `set_limit` writes the other half and then flips `gen` with one CAS
//!   on the head, so a limit change takes effect at exactly one step of the head.
//!
//! **Claim** (`AtomicU64`): `[epoch: 62 | parity: 1 | near: 1]`. The full window index the
//! head has, or is being rolled over to. It only grows, so it never repeats and never
//! aliases. `parity` flips with every claim; `near` is set when the claim is exactly one
//! window past the head it replaces (the new head's `prev` is then the old `cur`; otherwise
//! both counters start at zero).
//!
//! **Limits** (`AtomicU64`): `[limit for gen 1: 32 | limit for gen 0: 32]`.

/// Bits of the head's window tag.
pub(crate) const TAG_BITS: u32 = 14;
/// Bits of each counter (`prev`, `cur`).
pub(crate) const COUNT_BITS: u32 = 24;
const CUR_SHIFT: u32 = 0;
const PREV_SHIFT: u32 = COUNT_BITS;
const GEN_SHIFT: u32 = 2 * COUNT_BITS;
const PARITY_SHIFT: u32 = GEN_SHIFT + 1;
const TAG_SHIFT: u32 = PARITY_SHIFT + 1;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

const _: () = assert!(TAG_BITS + 1 + 1 + 2 * COUNT_BITS == 64);

/// A head word can recur only for a window at least this many windows later.
pub(crate) const TAG_SPAN: u64 = 1 << TAG_BITS;

/// The largest limit the packed counters can hold: 16 777 215 permits per window.
pub(crate) const MAX_LIMIT: u64 = COUNT_MASK;

/// The last window index the claim word can hold; later readings join it (time then stands
/// still, which only refuses more). Reached only by windows shorter than 4 ns, after 2^62
/// of them.
pub(crate) const MAX_EPOCH: u64 = (1 << 62) - 1;

/// An unpacked head word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) tag: u64,
    pub(crate) parity: u64,
    pub(crate) gen: u64,
    pub(crate) prev: u64,
    pub(crate) cur: u64,
}

impl Head {
    /// The first head of the window `claim` names, generation `gen`.
    pub(crate) fn installed(claim: Claim, gen: u64, prev: u64) -> Self {
        Self {
            tag: claim.epoch & TAG_MASK,
            parity: claim.parity,
            gen,
            prev,
            cur: 0,
        }
    }

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.tag <= TAG_MASK && self.parity <= 1 && self.gen <= 1);
        debug_assert!(self.prev <= COUNT_MASK && self.cur <= COUNT_MASK);
        (self.tag << TAG_SHIFT)
            | (self.parity << PARITY_SHIFT)
            | (self.gen << GEN_SHIFT)
            | (self.prev << PREV_SHIFT)
            | (self.cur << CUR_SHIFT)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            tag: word >> TAG_SHIFT,
            parity: (word >> PARITY_SHIFT) & 1,
            gen: (word >> GEN_SHIFT) & 1,
            prev: (word >> PREV_SHIFT) & COUNT_MASK,
            cur: (word >> CUR_SHIFT) & COUNT_MASK,
        }
    }

    /// Whether this head was installed for `claim` (or, read without a consistent view, for
    /// a window at least [`TAG_SPAN`] later that aliases it).
    pub(crate) fn is_for(self, claim: Claim) -> bool {
        self.tag == claim.epoch & TAG_MASK && self.parity == claim.parity
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
    /// The claim of window `epoch` following the settled claim `self`.
    pub(crate) fn successor(self, epoch: u64) -> Self {
        debug_assert!(epoch > self.epoch && epoch <= MAX_EPOCH);
        Self {
            epoch,
            parity: self.parity ^ 1,
            near: epoch == self.epoch + 1,
        }
    }

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.epoch <= MAX_EPOCH && self.parity <= 1);
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

/// The limit of generation `gen` in a limits word `[gen 1: 32 | gen 0: 32]`.
pub(crate) fn limit_of(limits: u64, gen: u64) -> u64 {
    (limits >> (32 * gen)) & u64::from(u32::MAX)
}

/// `limits` with generation `gen`'s limit replaced by `limit`.
pub(crate) fn with_limit(limits: u64, gen: u64, limit: u64) -> u64 {
    debug_assert!(limit <= MAX_LIMIT && gen <= 1);
    let shift = 32 * gen;
    (limits & !(u64::from(u32::MAX) << shift)) | (limit << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_round_trips_at_field_limits() {
        let heads = [
            Head {
                tag: 0,
                parity: 0,
                gen: 0,
                prev: 0,
                cur: 0,
            },
            Head {
                tag: TAG_MASK,
                parity: 1,
                gen: 1,
                prev: MAX_LIMIT,
                cur: MAX_LIMIT,
            },
            Head {
                tag: 5,
                parity: 1,
                gen: 0,
                prev: 7,
                cur: 9,
            },
        ];
        for head in heads {
            assert_eq!(Head::unpack(head.pack()), head);
        }
        // Each field lands where the layout says.
        let word = Head {
            tag: 1,
            parity: 1,
            gen: 1,
            prev: 1,
            cur: 1,
        }
        .pack();
        assert_eq!(
            word,
            (1 << 50) | (1 << 49) | (1 << 48) | (1 << 24) | 1,
            "{word:#x}"
        );
    }

    #[test]
    fn full_counters_never_touch_their_neighbours() {
        let full = Head {
            tag: 3,
            parity: 0,
            gen: 0,
            prev: MAX_LIMIT,
            cur: MAX_LIMIT,
        };
        let unpacked = Head::unpack(full.pack());
        assert_eq!((unpacked.tag, unpacked.parity, unpacked.gen), (3, 0, 0));
        assert_eq!((unpacked.prev, unpacked.cur), (MAX_LIMIT, MAX_LIMIT));
    }

    #[test]
    fn installed_heads_match_only_their_claim() {
        let first = Claim {
            epoch: (1 << 40) + 5,
            parity: 0,
            near: false,
        };
        // A jump of exactly 2^14 windows keeps the tag but flips the parity.
        let next = first.successor(first.epoch + TAG_SPAN);
        assert!(!next.near);
        let old = Head::installed(first, 1, 3);
        assert!(old.is_for(first));
        assert!(!old.is_for(next));
        assert!(Head::installed(next, 1, 0).is_for(next));
        assert!(first.successor(first.epoch + 1).near);
    }

    #[test]
    fn claim_and_limits_round_trip() {
        for claim in [
            Claim {
                epoch: MAX_EPOCH,
                parity: 1,
                near: true,
            },
            Claim {
                epoch: 0,
                parity: 0,
                near: false,
            },
            Claim {
                epoch: 1 << 32,
                parity: 1,
                near: false,
            },
        ] {
            assert_eq!(Claim::unpack(claim.pack()), claim);
        }
        let limits = with_limit(with_limit(0, 0, MAX_LIMIT), 1, 9);
        assert_eq!(limit_of(limits, 0), MAX_LIMIT);
        assert_eq!(limit_of(limits, 1), 9);
        assert_eq!(limit_of(with_limit(limits, 0, 2), 1), 9);
    }
}
