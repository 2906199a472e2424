//! The approximate two-window counter: [`ApproxSlidingWindow`] and its spec.

mod cell;
mod estimate;
mod limiter;
mod spec;
mod word;

pub use cell::ApproxWindowCell;
pub use limiter::ApproxSlidingWindow;
pub use spec::ApproxSlidingWindowSpec;
