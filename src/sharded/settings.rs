//! The shard count and batch a sharded builder collects
//! ([`ShardedBuilder`](crate::builder::ShardedBuilder),
//! [`ShardedBucketBuilder`](crate::builder::ShardedBucketBuilder)).

use super::word::{MAX_BATCH, MAX_SHARDS};

/// A sharded builder's shard count and maximum batch. Each is clamped to its range when it
/// is set rather than refused, so building cannot fail.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShardSettings {
    /// `1..=MAX_SHARDS`, or the default.
    shards: Option<u64>,
    /// `1..=MAX_BATCH`.
    batch: u64,
}

impl ShardSettings {
    /// The default shard count and the family's default `batch`, clamped to
    /// `1..=MAX_BATCH`.
    pub(crate) fn new(batch: u64) -> Self {
        Self {
            shards: None,
            batch: batch.clamp(1, MAX_BATCH),
        }
    }

    /// Sets the shard count, clamped to `1..=MAX_SHARDS`.
    pub(crate) fn set_shards(&mut self, shards: u64) {
        self.shards = Some(shards.clamp(1, MAX_SHARDS));
    }

    /// Sets the largest batch a shard leases, clamped to `1..=MAX_BATCH`.
    pub(crate) fn set_batch(&mut self, batch: u64) {
        self.batch = batch.clamp(1, MAX_BATCH);
    }

    /// The shard count, rounded up to a power of two; by default
    /// `std::thread::available_parallelism()`, clamped and rounded up the same way.
    pub(crate) fn shards(&self) -> u64 {
        let shards = self.shards.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get() as u64)
                .clamp(1, MAX_SHARDS)
        });
        shards.next_power_of_two()
    }

    /// The largest batch a shard leases.
    pub(crate) fn batch(&self) -> u64 {
        self.batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_settings_are_clamped() {
        let mut settings = ShardSettings::new(32);
        assert_eq!(settings.batch(), 32);
        assert!(settings.shards().is_power_of_two());
        assert!(settings.shards() <= MAX_SHARDS);
        settings.set_shards(0);
        settings.set_batch(0);
        assert_eq!((settings.shards(), settings.batch()), (1, 1));
        settings.set_shards(3);
        settings.set_batch(MAX_BATCH);
        assert_eq!((settings.shards(), settings.batch()), (4, MAX_BATCH));
        settings.set_shards(u64::MAX);
        settings.set_batch(u64::MAX);
        assert_eq!(
            (settings.shards(), settings.batch()),
            (MAX_SHARDS, MAX_BATCH)
        );
        assert_eq!(ShardSettings::new(u64::MAX).batch(), MAX_BATCH);
    }
}
