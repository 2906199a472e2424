//! The approximate two-window counter: [`ApproxSlidingWindow`] and its spec.

mod cell;
mod limiter;
// Also the rule the cells decide by; the spec types in it are the tests'.
#[cfg_attr(not(feature = "oracles"), allow(dead_code))]
mod spec;
mod word;

pub use cell::ApproxWindowCell;
pub use limiter::ApproxSlidingWindow;
#[cfg(feature = "oracles")]
pub use spec::ApproxSlidingWindowSpec;
