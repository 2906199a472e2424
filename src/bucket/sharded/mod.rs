//! The sharded mode of the bucket family: permits leased per core from the GCRA schedule
//! ([the guide](crate::guide::sharded_bucket)).

mod limiter;
mod slots;

pub use limiter::{ShardedBucket, ShardedBucketBuilder};
