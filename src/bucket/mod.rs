//! The bucket family: [`TokenBucket`] (GCRA), [`LeakyBucket`] (meter and shaper) on one
//! lock-free scheduling engine; the cell many keys can share a configuration with
//! ([`BucketCell`], [`BucketConfig`]); their specs and builder.

pub(crate) mod builder;
mod cell;
pub(crate) mod engine;
mod leaky;
#[cfg(feature = "oracles")]
mod leaky_spec;
pub(crate) mod limiter;
mod quota;
mod sharded;
mod shared;
// Also the GCRA rule the cells decide by; the spec machine in it is the tests'.
#[cfg_attr(
    not(feature = "oracles"),
    allow(dead_code, unused_macros, unused_imports)
)]
pub(crate) mod spec;
mod token;
#[cfg(feature = "oracles")]
mod token_spec;
mod width;
pub(crate) mod word;

pub use builder::{BucketBuilder, Leaky, Token};
pub use cell::BucketCell;
pub use leaky::LeakyBucket;
#[cfg(feature = "oracles")]
pub use leaky_spec::LeakyBucketSpec;
pub use quota::{BucketQuota, ShaperQuota};
pub use sharded::{ShardedBucket, ShardedBucketBuilder};
pub use shared::BucketConfig;
pub use token::TokenBucket;
#[cfg(feature = "oracles")]
pub use token_spec::TokenBucketSpec;
// The keyed buckets' cells and the oracles' tests name the widths.
#[allow(unused_imports)]
pub use width::{Narrow, Wide, Width};
