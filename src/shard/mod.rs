//! What the sharded modes of the window and bucket families share: the packed word of one
//! shard, its limits and batch size ([`word`]), and the shard count and batch their
//! builders collect ([`settings`]).

mod settings;
mod word;

pub(crate) use settings::ShardSettings;
pub(crate) use word::{batch_size, State, Word, MAX_BATCH, MAX_SHARDS, TAKE_ONE};
