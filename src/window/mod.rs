//! The window family: [`SlidingWindow`] (B buckets), [`FixedWindow`] (one bucket) and their
//! sharded mode [`ShardedWindow`], on one lock-free engine; their specs and builder.

mod any_engine;
pub(crate) mod builder;
mod cell;
pub(crate) mod engine;
mod fixed;
mod fixed_spec;
mod limiter;
mod quota;
mod ring;
mod sliding;
mod sliding_cell;
mod sliding_spec;
pub(crate) mod word;

pub use builder::{Fixed, Kind, Sliding, WindowBuilder};
pub use cell::{FixedWindowCell, WindowConfig};
pub use fixed::FixedWindow;
pub use fixed_spec::FixedWindowSpec;
pub use limiter::Window;
pub use quota::WindowQuota;
pub use sliding::SlidingWindow;
pub use sliding_cell::{SlidingConfig, SlidingWindowCell};
pub use sliding_spec::SlidingWindowSpec;
