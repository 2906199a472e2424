//! Time in epochs: the epoch (bucket number) a reading falls in, when an epoch starts, how
//! many epochs a refused request waits, and [`NEVER`], the retry time of a refusal no wait
//! can end. Shared by the window family's specs, engine and cells.

use std::time::Duration;

/// Epoch numbers saturate here (2^62), far beyond any real clock: time then stands still,
/// which can only refuse more, never admit more.
pub(crate) const MAX_BUCKET_EPOCH: u64 = 1 << 62;

/// The retry time of a refusal no wait can end: "never, within this limiter's time". A
/// limiter's time saturates (it stands still past its last representable instant), so a
/// refusal that needs a later time would be refused again at every later reading; saying
/// `Duration::ZERO` there would make a wait ask again for ever.
pub(crate) const NEVER: Duration = Duration::MAX;

/// The epoch (bucket number) a time falls in, saturating at [`MAX_BUCKET_EPOCH`].
#[inline]
pub(crate) fn epoch_of(now: u64, width: u64) -> u64 {
    (now / width).min(MAX_BUCKET_EPOCH)
}

/// The time until `epoch` starts, measured from `now` (zero if it already has); [`NEVER`]
/// for an epoch past [`MAX_BUCKET_EPOCH`], which the saturated epoch numbers never reach, however
/// far the clock goes.
#[inline]
pub(crate) fn until_epoch(epoch: u64, width: u64, now: u64) -> Duration {
    if epoch > MAX_BUCKET_EPOCH {
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
    fn epochs_saturate() {
        assert_eq!(epoch_of(u64::MAX, 1), MAX_BUCKET_EPOCH);
    }

    #[test]
    fn epochs_past_the_last_are_never() {
        // The last epoch starts at 2^62 ns (1 ns buckets); the one after it never does, even
        // though its start is a time the clock can show.
        let now = MAX_BUCKET_EPOCH + 1;
        assert_eq!(until_epoch(MAX_BUCKET_EPOCH + 1, 1, now), NEVER);
        assert_eq!(
            until_epoch(MAX_BUCKET_EPOCH, 1, MAX_BUCKET_EPOCH - 3),
            Duration::from_nanos(3)
        );
        assert_eq!(until_epoch(5, 10, 42), Duration::from_nanos(8));
    }
}
