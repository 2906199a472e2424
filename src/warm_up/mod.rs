//! Guava's smooth warm-up: [`WarmUp`], its builder and spec, and the clockless
//! [`WarmUpCell`] with the [`WarmUpConfig`] many cells share.

mod builder;
mod cell;
mod curve;
mod limiter;
mod quota;
mod shared;
mod slot;
#[cfg(feature = "oracles")]
mod spec;
mod word;

pub use builder::WarmUpBuilder;
pub use cell::WarmUpCell;
pub use limiter::WarmUp;
pub use quota::WarmUpQuota;
pub use shared::WarmUpConfig;
#[cfg(feature = "oracles")]
pub use spec::WarmUpSpec;
