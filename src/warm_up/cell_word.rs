//! The warm-up cell's word, high to low `[next_free: 61 | label: 8 | cooled: 59]`.
//! Field by field: [the guide](crate::guide::warm_up#the-warm-up-cell).

use crate::window::labelled::Packed;

use super::curve::MAX_SPAN_NANOS;
use super::word::MAX_NEXT_FREE;

/// Bits of the configuration label.
const LABEL_BITS: u32 = 8;
/// Labels are configuration epochs modulo 256.
const LABEL_MASK: u64 = (1 << LABEL_BITS) - 1;
/// Bits of the cooling: up to the warm-up period, at most 2^58 ns.
const COOLED_BITS: u32 = 59;
const COOLED_MASK: u64 = (1 << COOLED_BITS) - 1;
const LABEL_SHIFT: u32 = COOLED_BITS;
const NEXT_FREE_SHIFT: u32 = LABEL_SHIFT + LABEL_BITS;

const _: () = assert!(128 - NEXT_FREE_SHIFT == 61 && MAX_NEXT_FREE == (1 << 61) - 1);
const _: () = assert!(MAX_SPAN_NANOS <= COOLED_MASK);

/// An unpacked cell word, high to low `[next_free: 61 | label: 8 | cooled: 59]`.
///
/// - `next_free`: Guava's `nextFreeTicket`, ns since the configuration's origin (at most
///   [`MAX_NEXT_FREE`], 2^61 - 1): no call is admitted before it.
/// - `label`: the epoch of the configuration the cell was last decided under, modulo 256: a
///   call that loads a configuration of another epoch relabels the cell (its own CAS) before
///   deciding.
/// - `cooled`: Guava's `storedPermits` as the idle time that stored them, in whole ns
///   (`stored × cool_down = stored × W / max`), `0 ..= W` with `W <= 2^58` the warm-up period.
///   It means the same under every rate of the same `W`, so a rate change converts nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellState {
    pub(crate) next_free: u64,
    pub(crate) label: u64,
    pub(crate) cooled: u64,
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
                for cooled in [0, 1, 4_000_000_000, MAX_SPAN_NANOS, COOLED_MASK] {
                    let state = CellState {
                        next_free,
                        label,
                        cooled,
                    };
                    assert_eq!(CellState::unpack(state.pack()), state);
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
