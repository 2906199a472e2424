//! The bucket family's words: a limiter's state word `[time: 61 | gen: 3]`, a shared-config
//! cell's wide word `[time: 64 | epoch: 64]` and narrow word `[time: 58 | tag: 6]`, and the
//! bounds of their arithmetic.
//! Field by field: [the guide](crate::guide::bucket).

/// Bits of the `gen` field.
pub(crate) const GEN_BITS: u32 = 3;
/// Configuration slots, one per value of `gen`.
pub(crate) const SLOTS: usize = 1 << GEN_BITS;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const TIME_SHIFT: u32 = GEN_BITS;

/// The latest time (ns since the limiter's origin) the state word can hold: 2^61 - 1 ns,
/// about 73 years.
pub(crate) const MAX_STATE_TIME: u64 = (1 << (64 - GEN_BITS)) - 1;

/// The longest span a bucket-family limiter accepts: `burst × period` (a token bucket's
/// tolerance τ), a shaper's maximum wait, and a shaper's `limit × period`: 2^60 ns, about 36
/// years. Half of [`MAX_STATE_TIME`], so a full burst ahead of any time below the end still fits.
pub(crate) const MAX_SPAN_NANOS: u64 = 1 << 60;

/// Readings are clamped here (ns since the origin) before any arithmetic: far past
/// [`MAX_STATE_TIME`], so every decision past the end refuses as it would without the clamp, and
/// `time + span + n × period` never overflows a `u64`.
pub(crate) const CLAMP: u64 = 1 << 62;

const _: () = assert!(MAX_SPAN_NANOS < MAX_STATE_TIME && MAX_STATE_TIME < CLAMP);
const _: () = assert!(CLAMP.checked_add(2 * MAX_SPAN_NANOS).is_some());

/// An unpacked state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State {
    /// `tat` (meter) or `next` (shaper), ns since the origin; at most [`MAX_STATE_TIME`].
    pub(crate) time: u64,
    /// The configuration slot in force.
    pub(crate) generation: usize,
}

impl State {
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.time <= MAX_STATE_TIME && self.generation < SLOTS);
        (self.time << TIME_SHIFT) | (self.generation as u64 & GEN_MASK)
    }

    pub(crate) fn unpack(word: u64) -> Self {
        Self {
            time: word >> TIME_SHIFT,
            // At most 7: the cast is exact.
            generation: (word & GEN_MASK) as usize,
        }
    }

    /// A duration as a packed word's time field: `nanos << 3`, so that adding it to a word
    /// adds to the time and keeps `gen`. The sum must stay within [`MAX_STATE_TIME`].
    #[inline]
    pub(crate) fn packed(nanos: u64) -> u64 {
        debug_assert!(nanos <= MAX_STATE_TIME);
        nanos << TIME_SHIFT
    }

    /// This state at `time`, same configuration.
    pub(crate) fn at(self, time: u64) -> Self {
        Self { time, ..self }
    }

    /// The slot a reconfiguration writes next.
    pub(crate) fn next_gen(self) -> usize {
        (self.generation + 1) % SLOTS
    }
}

/// Bits of each half of a cell's word.
const HALF: u32 = 64;
const EPOCH_MASK: u128 = (1 << HALF) - 1;

/// An unpacked [`BucketCell`](crate::cell::BucketCell) word `[time: 64 | epoch: 64]`: the
/// wide word of a cell whose configuration is shared, so that a reconfiguration never
/// touches it (the limiters' own word is [`State`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellState {
    /// `tat` (meter) or `next` (shaper), ns since the origin; at most [`MAX_STATE_TIME`].
    pub(crate) time: u64,
    /// The configuration epoch the time is expressed in: the number of reconfigurations of
    /// the shared configuration before the one this cell was last decided under. 64 bits:
    /// one reconfiguration a nanosecond would take 584 years to wrap it.
    pub(crate) epoch: u64,
}

impl CellState {
    pub(crate) fn pack(self) -> u128 {
        debug_assert!(self.time <= MAX_STATE_TIME);
        (u128::from(self.time) << HALF) | u128::from(self.epoch)
    }

    pub(crate) fn unpack(word: u128) -> Self {
        Self {
            // Each half is 64 bits: both casts are exact.
            time: (word >> HALF) as u64,
            epoch: (word & EPOCH_MASK) as u64,
        }
    }

    /// This state at `time`, same epoch.
    pub(crate) fn at(self, time: u64) -> Self {
        Self { time, ..self }
    }
}

/// Bits of a narrow cell word's `tag` field.
const TAG_FIELD_BITS: u32 = 6;
/// Bits of the field the tag uses: all 6, but under loom 3 (8 tags, the ring of kept
/// configurations shrunk to match), so that a model reaches a tag's reuse, and the races
/// around it, within a few reconfigurations. The word's layout stays the same.
#[cfg(not(loom))]
pub(crate) const TAG_BITS: u32 = TAG_FIELD_BITS;
/// Bits of the field the tag uses: all 6, but under loom 3 (8 tags, the ring of kept
/// configurations shrunk to match), so that a model reaches a tag's reuse, and the races
/// around it, within a few reconfigurations. The word's layout stays the same.
#[cfg(loom)]
pub(crate) const TAG_BITS: u32 = 3;
/// The values a tag takes: a narrow cell's epoch is known modulo this.
pub(crate) const TAGS: u64 = 1 << TAG_BITS;
const TAG_MASK: u64 = TAGS - 1;
const NARROW_TIME_SHIFT: u32 = TAG_FIELD_BITS;

/// The latest time (ns since the configuration's origin) a narrow word holds: 2^58 - 1 ns,
/// about 9.1 years. A configuration of narrow cells ends its timeline here: past it, every
/// decision refuses (retry after `Duration::MAX`) and nothing is available, as the wide
/// cell does past [`MAX_STATE_TIME`]; nothing ever wraps.
pub(crate) const NARROW_MAX_TIME: u64 = (1 << (64 - TAG_FIELD_BITS)) - 1;

const _: () = assert!(NARROW_MAX_TIME < MAX_STATE_TIME && TAG_BITS <= TAG_FIELD_BITS);

/// The narrow cell word `[time: 58 | tag: 6]` (8 bytes, one `AtomicU64`):
///
/// ```text
///  63                                                    6 5        0
/// +-------------------------------------------------------+----------+
/// | time: tat (meter) or next (shaper), ns since origin    | tag      |
/// +-------------------------------------------------------+----------+
/// ```
///
/// - `time`: as [`CellState::time`], at most [`NARROW_MAX_TIME`] (packing clips there:
///   every time past the end decides alike, refusing).
/// - `tag`: the configuration epoch the time is expressed in, modulo [`TAGS`]. Unpacking
///   takes the epoch in force, loaded after the word, and reads the tag as the latest epoch
///   at or before it with that tag, so a cell at most `TAGS - 1` epochs behind is read
///   exactly. A cell further behind would be read as a later epoch: the configuration
///   refuses a reconfiguration that could make such a cell matter (`BucketConfig`'s quiet
///   rule: a reused tag only ever names cells that are full under every history, which
///   read as full, or emptier, under any epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NarrowWord;

impl NarrowWord {
    pub(crate) fn pack(state: CellState) -> u64 {
        (state.time.min(NARROW_MAX_TIME) << NARROW_TIME_SHIFT) | (state.epoch & TAG_MASK)
    }

    /// The word's state, its tag read against `current`, the epoch in force loaded after
    /// the word: the latest epoch at or before `current` with that tag. (Below `TAGS`
    /// reconfigurations the subtraction wraps to an epoch ahead of `current`, which a
    /// conversion treats as a cell with no history, as the wide cell treats a foreign one.)
    pub(crate) fn unpack(word: u64, current: u64) -> CellState {
        let behind = current.wrapping_sub(word & TAG_MASK) & TAG_MASK;
        CellState {
            time: word >> NARROW_TIME_SHIFT,
            epoch: current.wrapping_sub(behind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_at_field_limits() {
        for state in [
            State {
                time: 0,
                generation: 0,
            },
            State {
                time: MAX_STATE_TIME,
                generation: SLOTS - 1,
            },
            State {
                time: 123_456_789,
                generation: 5,
            },
        ] {
            assert_eq!(State::unpack(state.pack()), state);
        }
        assert_eq!(
            State {
                time: MAX_STATE_TIME,
                generation: 7
            }
            .pack(),
            u64::MAX
        );
    }

    #[test]
    fn generations_cycle_through_every_slot() {
        let mut state = State {
            time: 9,
            generation: 0,
        };
        for expected in (1..SLOTS).chain([0]) {
            state.generation = state.next_gen();
            assert_eq!(state.generation, expected);
        }
        assert_eq!(state.at(MAX_STATE_TIME).time, MAX_STATE_TIME);
        assert_eq!(state.at(MAX_STATE_TIME).generation, 0);
    }

    #[test]
    fn cell_state_round_trips_at_field_limits() {
        for state in [
            CellState { time: 0, epoch: 0 },
            CellState {
                time: MAX_STATE_TIME,
                epoch: u64::MAX,
            },
            CellState {
                time: 123_456_789,
                epoch: 5,
            },
        ] {
            assert_eq!(CellState::unpack(state.pack()), state);
        }
        // Each field lands where the layout says.
        assert_eq!(CellState { time: 1, epoch: 2 }.pack(), (1 << 64) | 2);
        assert_eq!(CellState { time: 9, epoch: 1 }.at(MAX_STATE_TIME).epoch, 1);
    }

    #[test]
    fn narrow_word_round_trips_at_field_limits() {
        for (state, current) in [
            (CellState { time: 0, epoch: 0 }, 0),
            (
                CellState {
                    time: NARROW_MAX_TIME,
                    epoch: TAGS - 1,
                },
                TAGS - 1,
            ),
            (
                CellState {
                    time: 123_456_789,
                    epoch: 5,
                },
                5,
            ),
            (
                CellState {
                    time: 77,
                    epoch: u64::MAX,
                },
                u64::MAX,
            ),
        ] {
            assert_eq!(NarrowWord::unpack(NarrowWord::pack(state), current), state);
        }
        // Each field lands where the layout says.
        assert_eq!(
            NarrowWord::pack(CellState { time: 1, epoch: 2 }),
            (1 << 6) | 2
        );
        assert_eq!(
            NarrowWord::pack(CellState {
                time: NARROW_MAX_TIME,
                epoch: TAGS - 1
            }),
            u64::MAX
        );
        assert_eq!(
            NarrowWord::pack(CellState { time: 9, epoch: 70 }) & TAG_MASK,
            6
        );
        // Packing clips a time past the end to the end.
        assert_eq!(
            NarrowWord::unpack(
                NarrowWord::pack(CellState {
                    time: u64::MAX,
                    epoch: 0
                }),
                0
            )
            .time,
            NARROW_MAX_TIME
        );
    }

    #[test]
    fn narrow_tags_read_as_the_latest_epoch_at_or_before_the_current() {
        let word = NarrowWord::pack(CellState {
            time: 9,
            epoch: 100,
        });
        // Up to TAGS - 1 epochs behind: exact.
        for current in 100..100 + TAGS {
            assert_eq!(NarrowWord::unpack(word, current).epoch, 100, "{current}");
        }
        // TAGS behind: read as the current epoch (what the quiet rule makes harmless).
        assert_eq!(NarrowWord::unpack(word, 100 + TAGS).epoch, 100 + TAGS);
        // Fewer epochs than the tag: read as an epoch ahead, no history.
        let ahead = NarrowWord::unpack(NarrowWord::pack(CellState { time: 0, epoch: 10 }), 3);
        assert!(ahead.epoch > 3);
        // Across the wrap of the epoch counter itself.
        let word = NarrowWord::pack(CellState {
            time: 1,
            epoch: u64::MAX - 1,
        });
        assert_eq!(NarrowWord::unpack(word, 2).epoch, u64::MAX - 1);
    }
}
