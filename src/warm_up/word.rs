//! The warm-up limiter's state word `[next_free: 61 | gen: 3 | stored: 64]`.
//! Field by field: [the guide](crate::guide::warm_up).

/// Bits of the configuration generation.
pub(crate) const GEN_BITS: u32 = 3;
/// Configuration slots, one per generation.
pub(crate) const GENS: usize = 1 << GEN_BITS;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const GEN_SHIFT: u32 = 64;
const NEXT_FREE_SHIFT: u32 = GEN_SHIFT + GEN_BITS;
/// The latest time `next_free` can hold: 2^61 - 1 ns.
pub(crate) const MAX_NEXT_FREE: u64 = (1 << (128 - NEXT_FREE_SHIFT)) - 1;

const _: () = assert!(128 - NEXT_FREE_SHIFT == 61);

/// An unpacked state word.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct State {
    pub(crate) next_free: u64,
    pub(crate) gen: u64,
    pub(crate) stored: f64,
}

impl State {
    pub(crate) fn pack(self) -> u128 {
        debug_assert!(self.next_free <= MAX_NEXT_FREE && self.gen <= GEN_MASK);
        (u128::from(self.next_free & MAX_NEXT_FREE) << NEXT_FREE_SHIFT)
            | (u128::from(self.gen & GEN_MASK) << GEN_SHIFT)
            | u128::from(self.stored.to_bits())
    }

    pub(crate) fn unpack(word: u128) -> Self {
        Self {
            next_free: (word >> NEXT_FREE_SHIFT) as u64,
            gen: (word >> GEN_SHIFT) as u64 & GEN_MASK,
            stored: f64::from_bits(word as u64),
        }
    }

    /// The generation after `gen`, wrapping at [`GENS`].
    pub(crate) fn next_gen(self) -> u64 {
        (self.gen + 1) & GEN_MASK
    }
}

/// The configuration slot of generation `gen` (mod [`GENS`]).
pub(crate) fn slot_of(gen: u64) -> usize {
    // Below GENS = 8, so the cast is exact.
    (gen & GEN_MASK) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_round_trips() {
        for next_free in [0, 1, 1 << 40, MAX_NEXT_FREE - 1, MAX_NEXT_FREE] {
            for gen in 0..GENS as u64 {
                for stored in [0.0, 0.5, 8.0, 1e-300, 3.5e17, f64::MIN_POSITIVE] {
                    let state = State {
                        next_free,
                        gen,
                        stored,
                    };
                    let back = State::unpack(state.pack());
                    assert_eq!(back, state);
                    assert_eq!(back.stored.to_bits(), stored.to_bits());
                }
            }
        }
    }

    #[test]
    fn fields_do_not_overlap() {
        let all = State {
            next_free: MAX_NEXT_FREE,
            gen: GEN_MASK,
            stored: f64::from_bits(u64::MAX),
        };
        assert_eq!(all.pack(), u128::MAX);
        let gen_only = State {
            next_free: 0,
            gen: GEN_MASK,
            stored: 0.0,
        };
        assert_eq!(gen_only.pack(), u128::from(GEN_MASK) << 64);
        let time_only = State {
            next_free: 1,
            gen: 0,
            stored: 0.0,
        };
        assert_eq!(time_only.pack(), 1 << 67);
    }

    #[test]
    fn generations_wrap() {
        let state = State {
            next_free: 5,
            gen: GEN_MASK,
            stored: 1.0,
        };
        assert_eq!(state.next_gen(), 0);
        assert_eq!(slot_of(state.gen), GENS - 1);
        assert_eq!(State { gen: 2, ..state }.next_gen(), 3);
    }
}
