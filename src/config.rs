//! Validation shared by the specs and the lock-free limiters, so both refuse the same input.

use std::time::Duration;

use crate::error::ConfigError;

/// The longest window any limiter accepts: 2^60 ns, about 36 years.
pub(crate) const MAX_WINDOW_NANOS: u64 = 1 << 60;

/// Epoch numbers saturate here (2^62), far beyond any real clock: time then stands still,
/// which can only refuse more, never admit more.
pub(crate) const MAX_EPOCH: u64 = 1 << 62;

/// The retry time of a refusal no wait can end: "never, within this limiter's time". A
/// limiter's time saturates (it stands still past its last representable instant), so a
/// refusal that needs a later time would be refused again at every later reading; saying
/// `Duration::ZERO` there would make a wait ask again for ever.
pub(crate) const NEVER: Duration = Duration::MAX;

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

/// The epoch (bucket number) a time falls in, saturating at [`MAX_EPOCH`].
#[inline]
pub(crate) fn epoch_of(now: u64, width: u64) -> u64 {
    (now / width).min(MAX_EPOCH)
}

/// The time until `epoch` starts, measured from `now` (zero if it already has); [`NEVER`]
/// for an epoch past [`MAX_EPOCH`], which the saturated epoch numbers never reach, however
/// far the clock goes.
#[inline]
pub(crate) fn until_epoch(epoch: u64, width: u64, now: u64) -> Duration {
    if epoch > MAX_EPOCH {
        return NEVER;
    }
    let start = u128::from(epoch) * u128::from(width);
    Duration::from_nanos(u64::try_from(start.saturating_sub(u128::from(now))).unwrap_or(u64::MAX))
}

/// How many epochs after the current one a refused request of `n` must wait, given the
/// admitted counts of the window's buckets, oldest first and the current one last, so that
/// the buckets still in the window then hold at most `limit - n`.
pub(crate) fn epochs_to_wait(counts_oldest_first: &[u64], limit: u64, n: u64) -> u64 {
    let mut in_window: u64 = counts_oldest_first.iter().sum();
    for (k, expiring) in counts_oldest_first.iter().enumerate() {
        in_window -= expiring;
        if in_window + n <= limit {
            return k as u64 + 1;
        }
    }
    counts_oldest_first.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_enough_old_buckets_expire() {
        // Limit 5: buckets [2, 1, 2]; asking 2 needs the oldest (2) to go: 1 epoch.
        assert_eq!(epochs_to_wait(&[2, 1, 2], 5, 2), 1);
        // Asking 3 needs 2 + 1 to go: 2 epochs.
        assert_eq!(epochs_to_wait(&[2, 1, 2], 5, 3), 2);
        // Asking 4 needs everything gone: 3 epochs.
        assert_eq!(epochs_to_wait(&[2, 1, 2], 5, 4), 3);
        // Asking 5 needs everything gone: 3 epochs.
        assert_eq!(epochs_to_wait(&[2, 1, 2], 5, 5), 3);
    }

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
        assert_eq!(epoch_of(u64::MAX, 1), MAX_EPOCH);
    }

    #[test]
    fn epochs_past_the_last_are_never() {
        // The last epoch starts at 2^62 ns (1 ns buckets); the one after it never does, even
        // though its start is a time the clock can show.
        let now = MAX_EPOCH + 1;
        assert_eq!(until_epoch(MAX_EPOCH + 1, 1, now), NEVER);
        assert_eq!(
            until_epoch(MAX_EPOCH, 1, MAX_EPOCH - 3),
            Duration::from_nanos(3)
        );
        assert_eq!(until_epoch(5, 10, 42), Duration::from_nanos(8));
    }
}
