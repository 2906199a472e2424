//! Guava's smooth warm-up: [`WarmUp`], its builder and spec, and the clockless
//! [`WarmUpCell`] with the [`WarmUpConfig`] many cells share.

mod builder;
mod cell;
mod config;
mod curve;
mod limiter;
mod quota;
mod slot;
mod spec;
mod word;

pub use builder::WarmUpBuilder;
pub use cell::WarmUpCell;
pub use config::WarmUpConfig;
pub use limiter::WarmUp;
pub use quota::WarmUpQuota;
pub use spec::WarmUpSpec;
