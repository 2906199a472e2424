//! The packed state word of [`ConcurrencyLimiter`](crate::ConcurrencyLimiter), and the
//! waiter-count word beside it.
//!
//! **State** (`AtomicU64`), high to low: `[limit: 32 | in_flight: 32]`
//! - `in_flight`: permits handed out and not yet released. An acquisition CASes it up by `n`
//!   only after checking `in_flight + n <= limit <= u32::MAX`, so it never carries into
//!   `limit`; a release `fetch_sub`s exactly what one acquisition added, so it never borrows
//!   from `limit` either. After the limit is lowered `in_flight` may exceed `limit` (permits
//!   already out stay valid); it still never exceeds the largest limit ever set.
//! - `limit`: written only by `set_limit`, with a CAS of the whole word, so every acquisition
//!   (a CAS of the whole word too) is decided wholly under one limit.
//!
//! **Waiters** (`AtomicU64`), high to low: `[multi: 32 | all: 32]`: threads and tasks
//! blocked in a wait, and how many of them wait for more than one permit. A release reads it
//! to skip the wake-up entirely when nobody waits. Each field counts live waits, each of
//! which holds a listener allocation, so neither can reach 2^32.

/// Bits of each half of the state word.
const HALF_BITS: u32 = 32;
const IN_FLIGHT_MASK: u64 = (1 << HALF_BITS) - 1;
const LIMIT_SHIFT: u32 = HALF_BITS;

/// The largest limit: `limit` is a 32-bit field of the state word.
pub(crate) const MAX_LIMIT: u64 = IN_FLIGHT_MASK;

/// An unpacked state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) limit: u64,
    pub(crate) in_flight: u64,
}

impl State {
    /// The state of a new limiter: `limit` permits, none in flight.
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            limit,
            in_flight: 0,
        }
    }

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.limit <= MAX_LIMIT && self.in_flight <= IN_FLIGHT_MASK);
        (self.limit << LIMIT_SHIFT) | self.in_flight
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            limit: word >> LIMIT_SHIFT,
            in_flight: word & IN_FLIGHT_MASK,
        }
    }
}

/// What one waiter adds to the waiters word: 1 to `all`, and 1 to `multi` if it waits for
/// more than one permit.
pub(crate) fn waiter(n: u64) -> u64 {
    1 | (u64::from(n > 1) << HALF_BITS)
}

/// Whether a waiters word counts any waiter for more than one permit.
pub(crate) fn has_multi(waiters: u64) -> bool {
    waiters >> HALF_BITS != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_at_field_limits() {
        for state in [
            State::new(1),
            State {
                limit: MAX_LIMIT,
                in_flight: MAX_LIMIT,
            },
            State {
                limit: 3,
                in_flight: 7,
            },
        ] {
            assert_eq!(State::unpack(state.pack()), state);
        }
        // Each field lands where the layout says.
        let word = State {
            limit: 1,
            in_flight: 2,
        }
        .pack();
        assert_eq!(word, (1 << 32) | 2, "{word:#x}");
    }

    #[test]
    fn a_full_in_flight_half_never_touches_the_limit() {
        let full = State {
            limit: 5,
            in_flight: MAX_LIMIT,
        }
        .pack();
        assert_eq!(State::unpack(full).limit, 5);
        // Releasing what was taken is a plain subtraction of the low half.
        assert_eq!(
            State::unpack(full - MAX_LIMIT),
            State {
                limit: 5,
                in_flight: 0
            }
        );
    }

    #[test]
    fn waiters_count_multi_permit_waits_apart() {
        assert_eq!(waiter(0), 1);
        assert_eq!(waiter(1), 1);
        assert_eq!(waiter(2), 1 | (1 << 32));
        assert!(!has_multi(waiter(1) * 5));
        assert!(has_multi(waiter(1) + waiter(3)));
        assert!(!has_multi(waiter(1) + waiter(3) - waiter(3)));
    }
}
