//! The two-generation limits word of the window engine and the approximate window:
//! `[limit of odd generations: 32 | limit of even generations: 32]` (the sliding log keeps
//! its limits in its own configuration's setting word).
//!
//! A reconfiguration writes the new limit into the half the current generation does not
//! use, then moves the generation (in the limiter's own state word) with one CAS: every
//! decision reads the half its state word's generation names, so it is decided wholly
//! under one limit. Only the parity of a generation matters here.

/// Bits of one half.
const HALF: u32 = 32;
/// A half's mask, before shifting.
const MASK: u64 = (1 << HALF) - 1;

/// The limit of generation `gen` (its parity) in a limits word.
#[inline]
pub(crate) fn limit_of(limits: u64, generation: u64) -> u64 {
    (limits >> (HALF * (generation & 1) as u32)) & MASK
}

/// `limits` with generation `gen`'s half (its parity) replaced by `limit` (< 2^32).
#[inline]
pub(crate) fn with_limit(limits: u64, generation: u64, limit: u64) -> u64 {
    debug_assert!(limit <= MASK);
    let shift = HALF * (generation & 1) as u32;
    (limits & !(MASK << shift)) | (limit << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_are_independent_and_only_parity_matters() {
        let limits = with_limit(with_limit(0, 0, 7), 1, (1 << 20) - 1);
        assert_eq!(limit_of(limits, 0), 7);
        assert_eq!(limit_of(limits, 1), (1 << 20) - 1);
        assert_eq!(limit_of(limits, 2), 7);
        assert_eq!(limit_of(with_limit(limits, 4, 9), 1), (1 << 20) - 1);
        assert_eq!(limit_of(with_limit(limits, 4, 9), 0), 9);
        assert_eq!(
            limit_of(with_limit(0, 1, u64::from(u32::MAX)), 1),
            u64::from(u32::MAX)
        );
    }
}
