//! # ringlimit-redis
//!
//! ringlimit's limits shared by many machines, on Redis or Redis Cluster.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod algorithm;
mod blocking;
mod concurrency;
mod connection;
mod error;
mod failure;
mod fleet;
mod key;
mod leased;
mod limiter;
mod policy;
mod script;
mod verdict;

pub use algorithm::{Algorithm, QuotaError, MAX_LIMIT, MAX_SPAN_MICROS};
pub use blocking::Blocking;
pub use concurrency::{Lease, LeaseDecision, RedisConcurrency};
pub use connection::{Connection, DEFAULT_TIMEOUT, RETRY_AFTER_FAILURE};
pub use error::Error;
pub use failure::OnFailure;
pub use fleet::Fleet;
pub use key::{KeyTooLong, DEFAULT_MAX_KEY_LEN};
pub use leased::{LeasedWindow, LeasedWindowBuilder, MAX_BATCH};
pub use limiter::{RedisLimiter, RedisLimiterBuilder, DEFAULT_PREFIX};
pub use policy::{PolicyVerdict, RedisPolicy, RedisPolicyBuilder};
pub use verdict::{Source, Verdict};
