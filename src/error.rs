//! Error types: every bad input is a value, never a panic.

use std::fmt;

/// A limiter was configured with values it cannot honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The limit was zero: such a limiter could never admit anything.
    ZeroLimit,
    /// The window was zero nanoseconds long.
    ZeroWindow,
    /// The sliding window was given zero buckets.
    ZeroBuckets,
    /// `window / buckets` is below one nanosecond, the clock's resolution.
    BucketTooNarrow {
        /// The window, in nanoseconds.
        window_nanos: u128,
        /// The number of buckets asked for.
        buckets: u64,
    },
    /// The limit does not fit the limiter's packed atomic word.
    LimitTooLarge {
        /// The limit asked for.
        limit: u64,
        /// The largest limit this limiter can represent.
        max: u64,
    },
    /// The window is longer than the limiter's time arithmetic can represent.
    WindowTooLong {
        /// The window, in nanoseconds.
        window_nanos: u128,
        /// The longest window this limiter accepts, in nanoseconds.
        max_nanos: u64,
    },
    /// More buckets than the limiter supports.
    TooManyBuckets {
        /// The number of buckets asked for.
        buckets: u64,
        /// The most buckets this limiter supports.
        max: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroLimit => f.write_str("the limit must be at least 1 permit per window"),
            Self::ZeroWindow => f.write_str("the window must be longer than zero"),
            Self::ZeroBuckets => f.write_str("a sliding window needs at least 1 bucket"),
            Self::BucketTooNarrow {
                window_nanos,
                buckets,
            } => write!(
                f,
                "{buckets} buckets over a {window_nanos} ns window makes buckets narrower than 1 ns; \
                 use fewer buckets or a longer window"
            ),
            Self::LimitTooLarge { limit, max } => write!(
                f,
                "a limit of {limit} does not fit this limiter's packed counters (at most {max})"
            ),
            Self::WindowTooLong {
                window_nanos,
                max_nanos,
            } => write!(
                f,
                "a window of {window_nanos} ns is longer than the supported {max_nanos} ns"
            ),
            Self::TooManyBuckets { buckets, max } => {
                write!(f, "{buckets} buckets is more than the supported {max}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// A request that no amount of waiting could ever satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireError {
    /// More permits were asked for in one call than the limit allows in a whole window.
    ExceedsLimit {
        /// Permits asked for.
        requested: u64,
        /// The limiter's current limit.
        limit: u64,
    },
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ExceedsLimit { requested, limit } => write!(
                f,
                "{requested} permits were requested at once but the limit is {limit} per window, \
                 so the request can never be granted"
            ),
        }
    }
}

impl std::error::Error for AcquireError {}
