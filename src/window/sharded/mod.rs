//! The sharded mode of the window family: permits leased per core from the engine.

mod limiter;
mod word;

pub use limiter::{ShardedBuilder, ShardedWindow};
