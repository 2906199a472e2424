//! The bucket family: [`TokenBucket`] (GCRA), [`LeakyBucket`] (meter and shaper) on one
//! lock-free scheduling engine; the cell many keys can share a configuration with
//! ([`BucketCell`], [`BucketConfig`]); their specs and builder.

pub(crate) mod builder;
mod cell;
pub(crate) mod engine;
mod leaky;
mod leaky_spec;
pub(crate) mod limiter;
mod quota;
mod shared;
pub(crate) mod spec;
mod token;
mod token_spec;
mod width;
pub(crate) mod word;

pub use builder::{BucketBuilder, Leaky, Token};
pub use cell::BucketCell;
pub use leaky::LeakyBucket;
pub use leaky_spec::LeakyBucketSpec;
pub use quota::{BucketQuota, ShaperQuota};
pub use shared::BucketConfig;
pub use token::TokenBucket;
pub use token_spec::TokenBucketSpec;
pub use width::{Narrow, Wide, Width};
