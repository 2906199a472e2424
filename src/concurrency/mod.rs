//! The concurrency limiter: at most C permits in flight; its cell, shared configuration,
//! permits, spec and waits.

mod cell;
mod config;
mod in_flight;
mod limit;
mod limiter;
mod permit;
mod quota;
pub(crate) mod spec;
mod wait;
mod word;

pub use cell::ConcurrencyCell;
pub use config::ConcurrencyConfig;
pub use limit::ConcurrencyLimit;
pub use limiter::ConcurrencyLimiter;
pub use permit::{OwnedPermit, Permit};
pub use quota::ConcurrencyQuota;
pub use spec::ConcurrencySpec;

pub(crate) use permit::{Pool, Token};
pub(crate) use wait::Waiters;
