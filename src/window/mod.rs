//! The window family: [`SlidingWindow`] (B buckets), [`FixedWindow`] (one bucket) and their
//! sharded mode [`ShardedWindow`], on one lock-free engine; their specs and builder.

mod any_engine;
pub(crate) mod builder;
mod cell;
mod config;
pub(crate) mod engine;
mod fixed;
mod limiter;
mod quota;
mod ring;
mod sliding;
mod sliding_cell;
mod spec;
pub(crate) mod word;

pub use builder::{Fixed, Kind, Sliding, WindowBuilder};
pub use cell::FixedWindowCell;
pub use config::{SlidingConfig, WindowConfig};
pub use fixed::FixedWindow;
pub use limiter::Window;
pub use quota::WindowQuota;
pub use sliding::SlidingWindow;
pub use sliding_cell::SlidingWindowCell;
pub use spec::{FixedWindowSpec, SlidingWindowSpec};
