//! [`Wide`] and [`Narrow`]: the two words a [`BucketCell`](crate::cell::BucketCell) can hold
//! its state in, one 128-bit `[time: 64 | epoch: 64]` or one 64-bit `[time: 58 | tag: 6]`.

use crate::sync::{AtomicU128, AtomicU64, AtomicWord};

use super::word::{CellState, NarrowWord, MAX_STATE_TIME, NARROW_MAX_TIME};

mod sealed {
    use super::AtomicWord;

    /// The word's operations, out of the public API.
    pub trait Sealed {
        /// The atomic word.
        type Atomic: AtomicWord<Raw = Self::Raw>;
        /// Its value.
        type Raw: Copy + Eq + std::fmt::Debug;
        /// The latest time the word holds.
        const MAX_CELL_TIME: u64;
        /// Whether the word holds the epoch modulo [`TAGS`](crate::bucket::word::TAGS)
        /// only (its configuration must then guard the reuse of tags).
        const TAGGED: bool;
        /// The word of a state at `time` under epoch `epoch`.
        fn pack(time: u64, epoch: u64) -> Self::Raw;
        /// The `(time, epoch)` of `raw`, with `current` the epoch in force loaded after it
        /// (which only the narrow word needs).
        fn unpack(raw: Self::Raw, current: u64) -> (u64, u64);
    }
}

/// The word a [`BucketCell`](crate::cell::BucketCell) holds its state in: [`Wide`] (16
/// bytes, the whole epoch) or [`Narrow`] (8 bytes, the epoch modulo 64, under a
/// configuration that refuses the reconfigurations that could make that ambiguous).
pub trait Width: sealed::Sealed + Send + Sync + 'static {}

impl Width for Wide {}
impl Width for Narrow {}

/// The 16-byte word `[time: 64 | epoch: 64]` (a `cmpxchg16b` on x86_64): the whole epoch,
/// so any number of reconfigurations may pass between two accesses.
#[derive(Debug)]
pub enum Wide {}

/// The 8-byte word `[time: 58 | tag: 6]` (one `AtomicU64`), the keyed token bucket's: times
/// up to 2^58 - 1 ns (about 9.1 years) after the configuration's origin, past which every
/// decision refuses; the epoch modulo 64, read as the latest epoch at or before the one in
/// force. Its configuration then refuses (with
/// [`ConfigError::ReconfiguredTooOften`](crate::ConfigError::ReconfiguredTooOften)) a
/// reconfiguration that would let a tag name two epochs whose cells could decide
/// differently (the guide's quiet rule). A token bucket's or leaky meter's configuration
/// must keep debt ([`BucketConfig::keeping_debt`](crate::cell::BucketConfig::keeping_debt),
/// as keyed limiters' do), or [`BucketCell::try_new`](crate::cell::BucketCell::try_new)
/// refuses it with [`ConfigError::NarrowKeepsPermits`](crate::ConfigError::NarrowKeepsPermits).
#[derive(Debug)]
pub enum Narrow {}

impl sealed::Sealed for Wide {
    type Atomic = AtomicU128;
    type Raw = u128;
    const MAX_CELL_TIME: u64 = MAX_STATE_TIME;
    const TAGGED: bool = false;

    #[inline]
    fn pack(time: u64, epoch: u64) -> u128 {
        CellState { time, epoch }.pack()
    }

    #[inline]
    fn unpack(raw: u128, _current: u64) -> (u64, u64) {
        let state = CellState::unpack(raw);
        (state.time, state.epoch)
    }
}

impl sealed::Sealed for Narrow {
    type Atomic = AtomicU64;
    type Raw = u64;
    const MAX_CELL_TIME: u64 = NARROW_MAX_TIME;
    const TAGGED: bool = true;

    #[inline]
    fn pack(time: u64, epoch: u64) -> u64 {
        NarrowWord::pack(CellState { time, epoch })
    }

    #[inline]
    fn unpack(raw: u64, current: u64) -> (u64, u64) {
        let state = NarrowWord::unpack(raw, current);
        (state.time, state.epoch)
    }
}
