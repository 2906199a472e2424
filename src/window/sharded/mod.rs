//! The sharded mode of the window family: permits leased per core from the engine.

mod limiter;

pub use limiter::{ShardedBuilder, ShardedWindow};
