//! The approximate two-window counter: [`ApproxSlidingWindow`] and its spec.

mod limiter;
mod spec;
mod word;

pub use limiter::ApproxSlidingWindow;
pub use spec::ApproxSlidingWindowSpec;
