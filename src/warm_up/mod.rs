//! Guava's smooth warm-up: [`WarmUp`], its builder and spec.

mod builder;
mod curve;
mod limiter;
mod quota;
mod spec;
mod word;

pub use builder::WarmUpBuilder;
pub use limiter::WarmUp;
pub use quota::WarmUpQuota;
pub use spec::WarmUpSpec;
