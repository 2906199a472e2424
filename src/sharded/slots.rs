//! Where a shard's lease sits on the GCRA schedule: its slots, the slot rule that says
//! which of its fast permits may still be used, and the bound on every slots a shard has
//! stored ([the guide](crate::guide::sharded_bucket#stale-slots-the-bound)). The shard word
//! itself is both sharded families': [`crate::sharded`].

use super::Word;

/// Where a lease's fast permits sit on the schedule: its `granted` fast slots begin at
/// `first + j·period`, `j < granted` (`first` is one period after the lease's start: the
/// refiller took the first slot). They are handed out latest first: the `i`-th fast permit
/// (from 0) owns slot `j = granted − 1 − i`, and may be used at a reading `now` (ns since
/// the origin) only while its slot has not begun, `now <= first + j·period` (the slot
/// rule). Latest first, a lease whose next permit has lapsed has nothing usable left, and
/// the check is one multiplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slots {
    pub(crate) first: u64,
    pub(crate) period: u64,
}

impl Slots {
    /// The slots of a shard that has never leased: the bound of a shard that has stored none; every lease lies on or
    /// above it.
    pub(crate) const NONE: Self = Self {
        first: 0,
        period: 0,
    };

    /// The latest reading at which the `i`-th fast permit of a lease of `granted` may be
    /// used: `first + (granted − 1 − i)·period`, saturating. Callers ask only for
    /// `i < granted`; for `i ≥ granted` the slot index saturates at 0 and this is `first`.
    #[inline]
    pub(crate) fn deadline(self, i: u64, granted: u64) -> u64 {
        let slot = granted.saturating_sub(1).saturating_sub(i);
        self.first.saturating_add(slot.saturating_mul(self.period))
    }

    /// Whether `word`'s next fast permit may be used at `now`.
    #[inline]
    pub(crate) fn usable(self, word: Word, now: u64) -> bool {
        word.has_permit() && now <= self.deadline(word.taken, word.granted)
    }

    /// How many fast permits a lease with these slots may have, at most `max_batch`: the
    /// largest `g` such that slot `j` begins no earlier than `bound`'s line, `first + j·period`,
    /// for every `j < g`. `bound` is a shard's [bound](Self::widened) on every slots it has
    /// stored: a caller that read any of them and lands its `fetch_add` on this lease then
    /// never uses a permit past its own slot (the guide). Both starts are linear in `j`, so
    /// the set of such `j` is an interval from 0; exact in `i128`.
    pub(crate) fn fast_within(self, bound: Self, max_batch: u64) -> u64 {
        if self.first < bound.first {
            return 0;
        }
        // self(j) − bound(j) = (first − bound.first) − j·(bound.period − period) ≥ 0.
        let ahead = i128::from(self.first - bound.first);
        let closing = i128::from(bound.period) - i128::from(self.period);
        if closing <= 0 {
            return max_batch;
        }
        let last = ahead / closing; // the largest j with self(j) ≥ bound(j)
        u64::try_from(last.saturating_add(1)).map_or(max_batch, |g| g.min(max_batch))
    }

    /// A line lying on or above both `self` (a bound) and `slots` at every `j < max_batch`:
    /// the later `first`, and the smallest period (rounded up) reaching the later start at
    /// `j = max_batch − 1`. The starts are linear in `j`, so the two ends decide. The period
    /// is at most the larger of the two, so it fits.
    pub(crate) fn widened(self, slots: Self, max_batch: u64) -> Self {
        let d = u128::from(max_batch.saturating_sub(1));
        let at_last = |s: Self| u128::from(s.first) + d * u128::from(s.period);
        let first = self.first.max(slots.first);
        let last = at_last(self).max(at_last(slots));
        let period = match d {
            0 => self.period.max(slots.period),
            _ => u64::try_from((last - u128::from(first)).div_ceil(d)).unwrap_or(u64::MAX),
        };
        Self { first, period }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharded::MAX_BATCH;

    #[test]
    fn permits_go_latest_slot_first() {
        let slots = Slots {
            first: 100,
            period: 10,
        };
        // Four fast permits: slots at 100, 110, 120, 130; handed out 130, 120, 110, 100.
        assert_eq!(slots.deadline(0, 4), 130);
        assert_eq!(slots.deadline(3, 4), 100);
        assert_eq!(slots.deadline(4, 4), 100);
        let word = Word::open(4);
        assert!(slots.usable(word, 130));
        assert!(!slots.usable(word, 131));
        assert!(slots.usable(word.taking(3), 100));
        assert!(!slots.usable(word.taking(3), 101));
        assert!(!slots.usable(word.taking(4), 0));
        assert_eq!(Slots::NONE.deadline(0, 1), 0);
        let huge = Slots {
            first: u64::MAX - 1,
            period: u64::MAX,
        };
        assert_eq!(huge.deadline(0, 3), u64::MAX);
    }

    #[test]
    fn a_lease_keeps_only_the_fast_permits_above_the_bound() {
        let old = Slots {
            first: 100,
            period: 10,
        };
        let bound = Slots::NONE.widened(old, 32);
        assert_eq!(bound, old);
        let later = Slots {
            first: 120,
            period: 10,
        };
        assert_eq!(later.fast_within(bound, 32), 32);
        assert_eq!(old.fast_within(Slots::NONE.widened(later, 32), 32), 0);
        // A faster rate: slot j begins at 120 + 5j against 100 + 10j, so j ≤ 4.
        let faster = Slots {
            first: 120,
            period: 5,
        };
        assert_eq!(faster.fast_within(bound, 32), 5);
        assert!((0..5).all(|j| 120 + 5 * j >= 100 + 10 * j));
        let caught_up = Slots {
            first: 100 + 31 * 5,
            period: 5,
        };
        assert_eq!(caught_up.fast_within(bound, 32), 32);
        // Widening keeps both lines below the bound on the whole batch range.
        let wide = bound.widened(faster, 32);
        assert_eq!(wide.first, 120);
        for j in 0..32 {
            assert!(wide.first + j * wide.period >= 100 + 10 * j);
            assert!(wide.first + j * wide.period >= 120 + 5 * j);
        }
        assert_eq!(old.fast_within(old, MAX_BATCH), MAX_BATCH);
        assert_eq!(old.fast_within(Slots::NONE, MAX_BATCH), MAX_BATCH);
        let huge = Slots {
            first: u64::MAX,
            period: u64::MAX,
        };
        assert_eq!(Slots::NONE.widened(huge, MAX_BATCH).period, u64::MAX);
    }
}
