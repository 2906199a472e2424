//! Input validation shared by the specs and the lock-free limiters, so both refuse the same
//! input: windows, limits, bucket widths.

use std::time::Duration;

use crate::error::ConfigError;

/// The longest window any limiter accepts: 2^60 ns, about 36 years.
pub(crate) const MAX_WINDOW_NANOS: u64 = 1 << 60;

/// The window in nanoseconds, or why it is unusable.
pub(crate) fn window_nanos(window: Duration) -> Result<u64, ConfigError> {
    let nanos = window.as_nanos();
    if nanos == 0 {
        return Err(ConfigError::ZeroWindow);
    }
    if nanos > u128::from(MAX_WINDOW_NANOS) {
        return Err(ConfigError::WindowTooLong {
            window_nanos: nanos,
            max_nanos: MAX_WINDOW_NANOS,
        });
    }
    Ok(nanos as u64)
}

/// `limit` if it is in `1..=max`.
pub(crate) fn limit(limit: u64, max: u64) -> Result<u64, ConfigError> {
    match limit {
        0 => Err(ConfigError::ZeroLimit),
        l if l > max => Err(ConfigError::LimitTooLarge { limit, max }),
        l => Ok(l),
    }
}

/// The bucket width `window / buckets` in ns (the effective window is `buckets * width`).
pub(crate) fn bucket_nanos(window: Duration, buckets: u64, max: u64) -> Result<u64, ConfigError> {
    let window_nanos = window_nanos(window)?;
    if buckets == 0 {
        return Err(ConfigError::ZeroBuckets);
    }
    if buckets > max {
        return Err(ConfigError::TooManyBuckets { buckets, max });
    }
    match window_nanos / buckets {
        0 => Err(ConfigError::BucketTooNarrow {
            window_nanos: u128::from(window_nanos),
            buckets,
        }),
        width => Ok(width),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_messages_are_specific() {
        assert_eq!(window_nanos(Duration::ZERO), Err(ConfigError::ZeroWindow));
        assert_eq!(limit(0, 10), Err(ConfigError::ZeroLimit));
        assert!(matches!(
            bucket_nanos(Duration::from_nanos(3), 4, 1024),
            Err(ConfigError::BucketTooNarrow { .. })
        ));
        assert!(ConfigError::BucketTooNarrow {
            window_nanos: 3,
            buckets: 4
        }
        .to_string()
        .contains("narrower than 1 ns"));
    }
}
