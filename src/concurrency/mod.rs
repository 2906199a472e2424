//! The concurrency limiter: at most C permits in flight ([`ConcurrencyLimiter`]), released
//! when their permit drops, and its clockless [`ConcurrencyCell`].
//!
//! - the rule: `in_flight` (acquire `n` iff `in_flight + n <= limit`);
//! - the protocol: in `limiter` (one state word, a CAS per acquire, a `fetch_sub` per
//!   release) and `wait` (blocking and async waits, woken by releases);
//! - the words: `word` (state, configuration, cell and waiters words);
//! - the cell: `cell` ([`ConcurrencyCell`]), deciding under `config` ([`ConcurrencyConfig`]);
//! - the limiter: `limiter` ([`ConcurrencyLimiter`]) from a `quota`; its permits in `permit`,
//!   the API both share in `limit` ([`ConcurrencyLimit`]);
//! - the oracle: `spec` ([`ConcurrencySpec`]);
//! - the guide: [`guide::concurrency`](crate::guide::concurrency); terms: [`guide::glossary`](crate::guide::glossary).
//!
//! Why no separate engine: the limiter's word holds its own limit beside the count; the cell
//! holds the configuration's epoch there instead, so that many cells share one limit.

mod cell;
mod config;
mod in_flight;
mod limit;
mod limiter;
mod permit;
mod quota;
// Also the rule the cells decide by; the spec types in it are the tests'.
#[cfg_attr(not(feature = "oracles"), allow(dead_code))]
pub(crate) mod spec;
mod wait;
mod waiters;
mod word;

pub use cell::ConcurrencyCell;
pub use config::ConcurrencyConfig;
pub use limit::ConcurrencyLimit;
pub use limiter::ConcurrencyLimiter;
pub use permit::{OwnedPermit, Permit};
pub use quota::ConcurrencyQuota;
#[cfg(feature = "oracles")]
pub use spec::ConcurrencySpec;

#[cfg(feature = "oracles")]
pub(crate) use permit::{Pool, Token};
#[cfg(feature = "oracles")]
pub(crate) use waiters::Waiters;
