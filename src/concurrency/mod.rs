//! The concurrency limiter: at most C permits in flight; its cell, shared configuration,
//! permits, spec and waits.

mod cell;
mod config;
mod limit;
mod limiter;
mod permit;
mod quota;
// Also the rule the cells decide by; the spec types in it are the tests'.
#[cfg_attr(not(feature = "oracles"), allow(dead_code))]
pub(crate) mod spec;
mod wait;
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
pub(crate) use wait::Waiters;
