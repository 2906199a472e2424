//! The packed words of the concurrency family, field by field ([the
//! guide](crate::guide::concurrency) has the protocol):
//!
//! - the **configuration** word of a [`ConcurrencyConfig`](crate::cell::ConcurrencyConfig),
//!   `[epoch: 32 | limit: 32]`;
//! - the **cell** word of a [`ConcurrencyCell`](crate::cell::ConcurrencyCell),
//!   `[epoch: 32 | in_flight: 32]`, whose `epoch` labels the configuration the cell was last
//!   decided under;
//! - the **state** word `[limit: 32 | in_flight: 32]` of a
//!   [`ConcurrencyLimiter`](crate::ConcurrencyLimiter), which owns its limit ([`State`],
//!   also the pair the spec and the cell decide on);
//! - the **waiters** word `[multi: 32 | all: 32]` beside it.

/// Bits of each half of a word.
const HALF_BITS: u32 = 32;
/// The low half: `limit`, `in_flight`, or the waiters' `all`.
const LOW_MASK: u64 = (1 << HALF_BITS) - 1;
/// Where the high half (`epoch`, or the waiters' `multi`) starts.
const HIGH_SHIFT: u32 = HALF_BITS;

/// The largest limit: `limit` is a 32-bit field of the configuration word.
pub(crate) const MAX_LIMIT: u64 = LOW_MASK;

/// Epochs count modulo 2^32: the next one after `u32::MAX` is 0.
const EPOCH_MASK: u64 = LOW_MASK;

/// The state a decision is made on, the limit in force and the permits in flight; packed,
/// a limiter's state word, high to low `[limit: 32 | in_flight: 32]`.
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
        debug_assert!(self.limit <= MAX_LIMIT && self.in_flight <= LOW_MASK);
        (self.limit << HIGH_SHIFT) | self.in_flight
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            limit: word >> HIGH_SHIFT,
            in_flight: word & LOW_MASK,
        }
    }
}

/// An unpacked configuration word, high to low `[epoch: 32 | limit: 32]`.
///
/// - `limit`: the in-flight limit, `1..=MAX_LIMIT`.
/// - `epoch`: how many times `limit` has changed, modulo 2^32. Every change of `limit`
///   moves it to the next value, and nothing else writes the word, so a cell labelled with
///   the current epoch was decided under the current limit (unless exactly a multiple of
///   2^32 changes happened in between, see the guide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConfigWord {
    pub(crate) epoch: u64,
    pub(crate) limit: u64,
}

impl ConfigWord {
    /// The configuration word of a new configuration: epoch 0.
    pub(crate) fn new(limit: u64) -> Self {
        Self { epoch: 0, limit }
    }

    /// The word after a change to `limit`: the next epoch (wrapping), the new limit.
    pub(crate) fn changed(self, limit: u64) -> Self {
        Self {
            epoch: (self.epoch + 1) & EPOCH_MASK,
            limit,
        }
    }

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.epoch <= EPOCH_MASK && self.limit <= MAX_LIMIT);
        (self.epoch << HIGH_SHIFT) | self.limit
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            epoch: word >> HIGH_SHIFT,
            limit: word & LOW_MASK,
        }
    }
}

/// An unpacked cell word, high to low `[epoch: 32 | in_flight: 32]`.
///
/// - `in_flight`: permits handed out and not yet released. An acquisition CASes it up by `n`
///   only after checking `in_flight + n <= limit <= u32::MAX`, so it never carries into
///   `epoch`; a release subtracts at most `in_flight` (saturating), so it never borrows.
/// - `epoch`: the configuration epoch the cell was last decided under. Only a conversion
///   changes it, to the epoch of the configuration it just loaded, leaving `in_flight` as
///   it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellWord {
    pub(crate) epoch: u64,
    pub(crate) in_flight: u64,
}

impl CellWord {
    /// A cell with nothing in flight, labelled `epoch`.
    pub(crate) fn new(epoch: u64) -> Self {
        Self {
            epoch,
            in_flight: 0,
        }
    }

    /// This cell converted to `epoch`: the label changes, `in_flight` does not.
    pub(crate) fn converted(self, epoch: u64) -> Self {
        Self { epoch, ..self }
    }

    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.epoch <= EPOCH_MASK && self.in_flight <= LOW_MASK);
        (self.epoch << HIGH_SHIFT) | self.in_flight
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            epoch: word >> HIGH_SHIFT,
            in_flight: word & LOW_MASK,
        }
    }
}

/// What one waiter adds to the waiters word: 1 to `all`, and 1 to `multi` if it waits for
/// more than one permit.
pub(crate) fn waiter(n: u64) -> u64 {
    1 | (u64::from(n > 1) << HIGH_SHIFT)
}

/// Whether a waiters word counts any waiter for more than one permit.
pub(crate) fn has_multi(waiters: u64) -> bool {
    waiters >> HIGH_SHIFT != 0
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
    fn config_words_round_trip_at_field_limits() {
        for config in [
            ConfigWord::new(1),
            ConfigWord {
                epoch: EPOCH_MASK,
                limit: MAX_LIMIT,
            },
            ConfigWord { epoch: 3, limit: 7 },
        ] {
            assert_eq!(ConfigWord::unpack(config.pack()), config);
        }
        // Each field lands where the layout says.
        let word = ConfigWord { epoch: 1, limit: 2 }.pack();
        assert_eq!(word, (1 << 32) | 2, "{word:#x}");
    }

    #[test]
    fn a_change_moves_to_the_next_epoch_and_wraps() {
        let config = ConfigWord::new(5).changed(6);
        assert_eq!(config, ConfigWord { epoch: 1, limit: 6 });
        let last = ConfigWord {
            epoch: EPOCH_MASK,
            limit: MAX_LIMIT,
        };
        assert_eq!(last.changed(1), ConfigWord { epoch: 0, limit: 1 });
    }

    #[test]
    fn cell_words_round_trip_at_field_limits() {
        for cell in [
            CellWord::new(0),
            CellWord {
                epoch: EPOCH_MASK,
                in_flight: MAX_LIMIT,
            },
            CellWord {
                epoch: 3,
                in_flight: 7,
            },
        ] {
            assert_eq!(CellWord::unpack(cell.pack()), cell);
        }
        let word = CellWord {
            epoch: 1,
            in_flight: 2,
        }
        .pack();
        assert_eq!(word, (1 << 32) | 2, "{word:#x}");
    }

    #[test]
    fn a_conversion_is_the_identity_on_in_flight() {
        let cell = CellWord {
            epoch: 4,
            in_flight: MAX_LIMIT,
        };
        assert_eq!(
            CellWord::unpack(cell.converted(EPOCH_MASK).pack()),
            CellWord {
                epoch: EPOCH_MASK,
                in_flight: MAX_LIMIT
            }
        );
        // A full in_flight half never touches the label: releasing it all is a plain
        // subtraction of the low half.
        let full = cell.pack();
        assert_eq!(CellWord::unpack(full - MAX_LIMIT), CellWord::new(4));
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
