//! The packed words of the window engine, with their bit layouts.
//!
//! **Head** (`AtomicU64`), high to low: `[tag: 14 | gen: 1 | cap: 24 | count: 25]`
//! - `tag`: the head's epoch modulo 2^14. It only has to tell the head apart from its
//!   predecessor during a rollover and from the claimed epoch (see `Claim`); the full epoch
//!   lives in the claim word.
//! - `cap`: permits this epoch may admit: `limit - (admitted in the previous B-1 epochs)`,
//!   fixed when the epoch starts (those epochs are frozen by then) and changed only by
//!   `set_limit`.
//! - `gen`: which half of the limits word (`[limit for gen 1: 32 | limit for gen 0: 32]`)
//!   `cap` was computed from. A rollover keeps its predecessor's `gen`; `set_limit` writes the
//!   other half and flips `gen` in the same CAS that installs the new cap, so every epoch's
//!   cap comes from the limit in force when the epoch was installed, and a limit change takes
//!   effect at exactly one CAS on the head.
//! - `count`: fast-path increments. Admitted in this epoch = `min(count, cap)`. A fast-path
//!   caller checks `count < cap` before its `fetch_add`, so `count` exceeds `cap` only by the
//!   callers racing between that load and their add: at most one per thread. 25 bits leave
//!   2^25 - 2^24 ≈ 16 million of headroom, so the add never carries into `cap`.
//!
//! **Claim** (`AtomicU64`): `[epoch: 63 | far: 1]`. The full epoch the head has, or is being
//! rolled over to. `far` is set when the claim jumped at least B epochs past the head it
//! replaces (nothing of the old window survives).
//!
//! **Slot** (`AtomicU64`, one per ring bucket): `[tag: 40 | count: 24]`, the admitted count of
//! the epoch whose low 40 bits are `tag`. Every epoch from the last far jump on has its slot
//! written (a count, or zero for an epoch skipped or wiped by the jump), so a slot read for
//! an epoch less than B behind the head holds that epoch or an older one fewer than 2^40
//! epochs away: a tag can never alias a stale bucket.

pub(crate) const TAG_BITS: u32 = 14;
pub(crate) const CAP_BITS: u32 = 24;
pub(crate) const COUNT_BITS: u32 = 25;
const COUNT_SHIFT: u32 = 0;
const CAP_SHIFT: u32 = COUNT_BITS;
const GEN_SHIFT: u32 = COUNT_BITS + CAP_BITS;
const TAG_SHIFT: u32 = GEN_SHIFT + 1;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const CAP_MASK: u64 = (1 << CAP_BITS) - 1;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

const _: () = assert!(TAG_BITS + 1 + CAP_BITS + COUNT_BITS == 64);

/// The largest limit the window engine can represent.
pub const MAX_LIMIT: u64 = CAP_MASK;
/// The most buckets a sliding window may have; below 2^TAG_BITS so a non-far rollover's
/// predecessor epoch is recoverable from its tag.
pub const MAX_BUCKETS: u64 = 1 << 12;
const _: () = assert!(MAX_BUCKETS < 1 << TAG_BITS);

/// Adds one to the count field of a head word.
pub(crate) const ONE: u64 = 1 << COUNT_SHIFT;

/// An unpacked head word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) tag: u64,
    pub(crate) gen: u64,
    pub(crate) cap: u64,
    pub(crate) count: u64,
}

impl Head {
    /// A fresh head for `epoch`.
    pub(crate) fn new(epoch: u64, gen: u64, cap: u64, count: u64) -> Self {
        Self {
            tag: epoch & TAG_MASK,
            gen,
            cap,
            count,
        }
    }

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.cap <= CAP_MASK && self.count <= COUNT_MASK && self.gen <= 1);
        (self.tag << TAG_SHIFT)
            | (self.gen << GEN_SHIFT)
            | (self.cap << CAP_SHIFT)
            | (self.count << COUNT_SHIFT)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            tag: word >> TAG_SHIFT,
            gen: (word >> GEN_SHIFT) & 1,
            cap: (word >> CAP_SHIFT) & CAP_MASK,
            count: (word >> COUNT_SHIFT) & COUNT_MASK,
        }
    }

    /// Permits admitted in this epoch (racing fast-path adds beyond `cap` were refused).
    pub(crate) fn admitted(self) -> u64 {
        self.count.min(self.cap)
    }

    /// Whether this head belongs to `epoch` (modulo 2^TAG_BITS).
    pub(crate) fn is_for(self, epoch: u64) -> bool {
        self.tag == epoch & TAG_MASK
    }

    /// The head's full epoch, given a later epoch less than 2^TAG_BITS ahead of it.
    pub(crate) fn epoch_before(self, later: u64) -> u64 {
        later - (later.wrapping_sub(self.tag) & TAG_MASK)
    }
}

/// Whether `to` may be claimed as the successor of `from`: the tags must differ, so a
/// reader can never mistake the old head for the claimed one.
pub(crate) fn tags_differ(from: u64, to: u64) -> bool {
    (from ^ to) & TAG_MASK != 0
}

/// An unpacked claim word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) epoch: u64,
    pub(crate) far: bool,
}

impl Claim {
    pub(crate) fn pack(self) -> u64 {
        (self.epoch << 1) | u64::from(self.far)
    }
    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            epoch: word >> 1,
            far: word & 1 == 1,
        }
    }
}

/// The limit of generation `gen` in a limits word `[gen 1: 32 | gen 0: 32]`.
pub(crate) fn limit_of(limits: u64, gen: u64) -> u64 {
    (limits >> (32 * gen)) & u64::from(u32::MAX)
}

/// `limits` with generation `gen`'s limit replaced by `limit`.
pub(crate) fn with_limit(limits: u64, gen: u64, limit: u64) -> u64 {
    let shift = 32 * gen;
    (limits & !(u64::from(u32::MAX) << shift)) | (limit << shift)
}

const SLOT_TAG_SHIFT: u32 = CAP_BITS;
const SLOT_TAG_MASK: u64 = (1 << (64 - CAP_BITS)) - 1;

/// A ring slot: `[tag: 40 | count: 24]`.
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

    #[test]
    fn head_round_trips_at_field_limits() {
        for head in [
            Head::new(0, 0, 0, 0),
            Head::new(u64::MAX, 1, MAX_LIMIT, COUNT_MASK),
            Head::new(12345, 1, 7, 9),
        ] {
            assert_eq!(Head::unpack(head.pack()), head);
        }
        assert_eq!(
            Head::new(3, 1, 5, 0).pack() + ONE,
            Head::new(3, 1, 5, 1).pack()
        );
        assert_eq!(limit_of(with_limit(with_limit(0, 0, 7), 1, 9), 0), 7);
        assert_eq!(limit_of(with_limit(with_limit(0, 0, 7), 1, 9), 1), 9);
    }

    #[test]
    fn counting_past_cap_never_touches_cap_or_tag() {
        let word = Head::new(9, 1, MAX_LIMIT, MAX_LIMIT).pack();
        let inflated = Head::unpack(word + (COUNT_MASK - MAX_LIMIT) * ONE);
        assert_eq!(
            (inflated.tag, inflated.gen, inflated.cap),
            (9, 1, MAX_LIMIT)
        );
        assert_eq!(inflated.admitted(), MAX_LIMIT);
    }

    #[test]
    fn predecessor_epoch_is_recovered_from_its_tag() {
        let head = Head::new((1 << 40) + 5, 0, 1, 0);
        assert_eq!(
            head.epoch_before((1 << 40) + 5 + MAX_BUCKETS - 1),
            (1 << 40) + 5
        );
        let wrapped = Head::new((1 << TAG_BITS) - 1, 0, 1, 0);
        assert_eq!(wrapped.epoch_before(1 << TAG_BITS), (1 << TAG_BITS) - 1);
        assert!(!tags_differ(7, 7 + (1 << TAG_BITS)));
        assert!(tags_differ(7, 8));
    }

    #[test]
    fn claim_and_slot_round_trip() {
        let claim = Claim {
            epoch: (1 << 62) - 1,
            far: true,
        };
        assert_eq!(Claim::unpack(claim.pack()), claim);
        let slot = pack_slot((1 << 40) + 3, MAX_LIMIT);
        assert_eq!(slot_count(slot, (1 << 40) + 3), Some(MAX_LIMIT));
        assert_eq!(slot_count(slot, 3), Some(MAX_LIMIT)); // aliases: hence the far-jump wipe
        assert_eq!(slot_count(slot, 4), None);
    }
}
