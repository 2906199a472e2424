//! What a keyed call can fail with.

use std::fmt;

use crate::error::ExceedsLimit;

/// Why a keyed request was not decided.
///
/// ```
/// use ringlimit::keyed::{FixedWindows, Keyed, KeyedError};
/// use ringlimit::WindowQuota;
/// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(2)?)?.max_keys(1);
/// assert!(limits.try_acquire(&7));
/// assert!(matches!(limits.try_acquire_n(&7, 3), Err(KeyedError::ExceedsLimit(_))));
/// // Key 7 holds the only place, and is not idle: key 8 is refused, never admitted unlimited.
/// assert_eq!(limits.try_acquire_n(&8, 1), Err(KeyedError::Full { max_keys: 1 }));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyedError {
    /// More permits than the limit in force.
    ExceedsLimit(ExceedsLimit),
    /// The key is new and the limiter already holds `max_keys` keys none of which is idle
    /// (indistinguishable from a fresh one, so that dropping it could change a decision), or,
    /// in a bounded limiter's table, the key's probe run of 512 slots has none free (rare:
    /// the live slots fill at most 5/6 of the table): the request is refused rather than
    /// admitted without a limit.
    Full {
        /// The bound in force (`max_keys` at build, or `set_max_keys` since).
        max_keys: usize,
    },
    /// A wait for the key ([`Keyed::acquire_key`](super::Keyed::acquire_key) and its kin)
    /// was refused with a retry time no reading of the clock can reach: the limiter's time
    /// is exhausted, as [`WaitError::TimeExhausted`](crate::WaitError::TimeExhausted) says.
    TimeExhausted,
}

impl fmt::Display for KeyedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ExceedsLimit(exceeds) => exceeds.fmt(f),
            Self::Full { max_keys } => write!(
                f,
                "a new key was refused: all {max_keys} keys the limiter may hold are in use"
            ),
            Self::TimeExhausted => f.write_str(
                "the wait cannot end: the limiter's time is exhausted and it refuses for ever",
            ),
        }
    }
}

impl std::error::Error for KeyedError {}

impl From<ExceedsLimit> for KeyedError {
    fn from(exceeds: ExceedsLimit) -> Self {
        Self::ExceedsLimit(exceeds)
    }
}
