//! The warm-up state ([`State`]: the next free time and the stored permits as nanoseconds
//! of cooling) and the cell's word holding it, high to low
//! `[next_free: 61 | label: 8 | cooled: 59]`. Field by field:
//! [the guide](crate::guide::warm_up#the-state-stored-permits-as-nanoseconds-of-cooling).

use crate::relabel::Packed;

/// Bits of the configuration label.
const LABEL_BITS: u32 = 8;
/// Labels are configuration epochs modulo 256.
const LABEL_MASK: u64 = (1 << LABEL_BITS) - 1;
/// Bits of the cooling: up to the warm-up period, at most 2^58 ns.
const COOLED_BITS: u32 = 59;
const COOLED_MASK: u64 = (1 << COOLED_BITS) - 1;
/// The most cooling the word holds: 2^59 - 1 ns.
pub(crate) const MAX_COOLED: u64 = COOLED_MASK;
const LABEL_SHIFT: u32 = COOLED_BITS;
const NEXT_FREE_SHIFT: u32 = LABEL_SHIFT + LABEL_BITS;

/// The latest time `next_free` can hold: 2^61 - 1 ns.
pub(crate) const MAX_NEXT_FREE: u64 = (1 << (128 - NEXT_FREE_SHIFT)) - 1;

const _: () = assert!(128 - NEXT_FREE_SHIFT == 61);

/// A warm-up limiter's state, the same in [`WarmUpSpec`](crate::spec::WarmUpSpec), a
/// [`WarmUpCell`](crate::cell::WarmUpCell) and [`WarmUp`](crate::WarmUp):
/// - `next_free`: Guava's `nextFreeTicket`, ns since the origin (at most [`MAX_NEXT_FREE`]):
///   no call is admitted before it.
/// - `cooled`: Guava's `storedPermits` as the idle time that stored them, in whole ns
///   (`stored × cool_down = stored × W / max`), `0 ..= W` for the warm-up period
///   `W <= 2^58`. It means the same under every rate of one warm-up period, so a rate change
///   converts nothing (Guava's rescaling by `new max / old max` is the identity on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) next_free: u64,
    pub(crate) cooled: u64,
}

impl State {
    /// The state as a ticket's mark: `[next_free: 64 | cooled: 64]`.
    pub(crate) fn mark(self) -> u128 {
        (u128::from(self.next_free) << 64) | u128::from(self.cooled)
    }

    /// The state a ticket's [`mark`](Self::mark) holds.
    pub(crate) fn from_mark(mark: u128) -> Self {
        Self {
            // Each half is 64 bits: the casts are exact.
            next_free: (mark >> 64) as u64,
            cooled: mark as u64,
        }
    }

    /// This state in a cell labelled `label`.
    pub(crate) fn labelled(self, label: u64) -> CellState {
        CellState {
            next_free: self.next_free,
            label,
            cooled: self.cooled,
        }
    }
}

/// A cell's unpacked word, high to low `[next_free: 61 | label: 8 | cooled: 59]`: the
/// [`State`], and the epoch of the configuration the cell was last decided under modulo 256
/// (`label`). A call that loads a configuration of another epoch relabels the cell (its own
/// CAS) before deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellState {
    pub(crate) next_free: u64,
    pub(crate) label: u64,
    pub(crate) cooled: u64,
}

impl CellState {
    /// The state, without the label.
    pub(crate) fn state(self) -> State {
        State {
            next_free: self.next_free,
            cooled: self.cooled,
        }
    }
}

/// The label of configuration epoch `epoch`.
pub(crate) fn label_of(epoch: u64) -> u64 {
    epoch & LABEL_MASK
}

impl Packed for CellState {
    fn pack(self) -> u128 {
        debug_assert!(
            self.next_free <= MAX_NEXT_FREE
                && self.label <= LABEL_MASK
                && self.cooled <= COOLED_MASK
        );
        (u128::from(self.next_free & MAX_NEXT_FREE) << NEXT_FREE_SHIFT)
            | (u128::from(self.label & LABEL_MASK) << LABEL_SHIFT)
            | u128::from(self.cooled & COOLED_MASK)
    }

    fn unpack(word: u128) -> Self {
        // Each field is masked to at most 61 bits: the casts are exact.
        Self {
            next_free: (word >> NEXT_FREE_SHIFT) as u64,
            label: (word >> LABEL_SHIFT) as u64 & LABEL_MASK,
            cooled: word as u64 & COOLED_MASK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_round_trips() {
        for next_free in [0, 1, 1 << 40, MAX_NEXT_FREE - 1, MAX_NEXT_FREE] {
            for label in [0, 1, 17, LABEL_MASK] {
                for cooled in [0, 1, 4_000_000_000, 1 << 58, COOLED_MASK] {
                    let state = CellState {
                        next_free,
                        label,
                        cooled,
                    };
                    assert_eq!(CellState::unpack(state.pack()), state);
                    assert_eq!(State::from_mark(state.state().mark()), state.state());
                    assert_eq!(state.state().labelled(label), state);
                }
            }
        }
    }

    #[test]
    fn fields_land_where_the_layout_says() {
        let all = CellState {
            next_free: MAX_NEXT_FREE,
            label: LABEL_MASK,
            cooled: COOLED_MASK,
        };
        assert_eq!(all.pack(), u128::MAX);
        let one_each = CellState {
            next_free: 1,
            label: 1,
            cooled: 1,
        };
        assert_eq!(one_each.pack(), (1 << 67) | (1 << 59) | 1);
        assert_eq!((label_of(255), label_of(256), label_of(257)), (255, 0, 1));
    }
}
