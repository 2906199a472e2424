//! The state word `[limit: 32 | in_flight: 32]` of
//! [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) and the waiters word `[multi: 32 | all: 32]`
//! beside it. Field by field: [the guide](crate::guide::concurrency).

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
