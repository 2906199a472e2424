//! The sharded mode of the window and bucket families: per-core shards that lease small
//! batches of permits from one shared limiter.
//!
//! | file | what it holds |
//! |---|---|
//! | [`word`] | the packed word of one shard `[state: 2 \| granted: 20 \| taken: 42]`, its limits and the batch a shard leases |
//! | [`settings`] | the shard count and batch a sharded builder collects |
//! | `window` | [`ShardedWindow`]: leases of a window engine's count ([guide](crate::guide::sharded)) |
//! | `bucket` | [`ShardedBucket`]: leases of slots on the GCRA schedule ([guide](crate::guide::sharded_bucket)) |
//! | `slots` | where a bucket shard's lease sits on the schedule, and the slot rule |
//!
//! Terms (lease, shard, batch, slot): [the glossary](crate::guide::glossary).

mod bucket;
mod settings;
mod slots;
mod window;
mod word;

pub use bucket::{ShardedBucket, ShardedBucketBuilder};
pub use window::{ShardedBuilder, ShardedWindow};

pub(crate) use settings::ShardSettings;
pub(crate) use word::{batch_size, State, Word, MAX_BATCH, MAX_SHARDS, TAKE_ONE};
