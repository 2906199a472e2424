//! The bucket family: [`TokenBucket`] (GCRA) and [`LeakyBucket`] (meter and shaper), one
//! generic [`Bucket`] on one lock-free scheduling engine; the clockless [`BucketCell`] many
//! keys share a [`BucketConfig`] with; their specs and builder.
//!
//! - the rule: `gcra` (every transition, pure arithmetic on a time and a reading);
//! - the protocol: `engine` (one state word `[time: 61 | gen: 3]` and eight configuration
//!   slots; CAS the word, reconfigure by moving `gen`);
//! - the words: `word` (state word, cell words), `width` ([`Wide`], [`Narrow`]);
//! - the cell: `cell` ([`BucketCell`]), deciding under `config` ([`BucketConfig`]);
//! - the limiter: `limiter` ([`Bucket`]), its kinds in `token` and `leaky`, built by `builder`
//!   from a `quota`;
//! - the oracle: `spec` ([`TokenBucketSpec`], [`LeakyBucketSpec`]);
//! - the guide: [`guide::bucket`](crate::guide::bucket); terms: [`guide::glossary`](crate::guide::glossary).
//!
//! Why an engine and a cell: a limiter owns its configuration, so its word can name one of
//! eight slots by `gen`; a cell shares one configuration with millions of others and so
//! carries the configuration's epoch (or a tag of it) in its own word instead.

pub(crate) mod builder;
mod cell;
mod config;
pub(crate) mod engine;
pub(crate) mod gcra;
mod leaky;
pub(crate) mod limiter;
mod quota;
#[cfg(feature = "oracles")]
mod spec;
mod token;
mod width;
pub(crate) mod word;

pub use builder::{BucketBuilder, Leaky, Token};
pub use cell::BucketCell;
pub use config::BucketConfig;
pub use leaky::LeakyBucket;
pub use limiter::Bucket;
pub use quota::{BucketQuota, ShaperQuota};
#[cfg(feature = "oracles")]
pub use spec::{LeakyBucketSpec, TokenBucketSpec};
pub use token::TokenBucket;
// The keyed buckets' cells and the oracles' tests name the widths.
#[allow(unused_imports)]
pub use width::{Narrow, Wide, Width};
