//! The window family: [`SlidingWindow`] (B buckets), [`FixedWindow`] (one bucket) and their
//! sharded mode [`ShardedWindow`], on one lock-free engine; their specs and builder.

mod any_engine;
pub(crate) mod builder;
mod cell;
pub(crate) mod engine;
mod fixed;
#[cfg(feature = "oracles")]
mod fixed_spec;
pub(crate) mod labelled;
mod limiter;
mod quota;
mod ring;
pub(crate) mod sharded;
mod sliding;
mod sliding_cell;
#[cfg(feature = "oracles")]
mod sliding_spec;
pub(crate) mod word;

pub use builder::{Fixed, Kind, Sliding, WindowBuilder};
pub use cell::{FixedWindowCell, WindowConfig};
pub use fixed::FixedWindow;
#[cfg(feature = "oracles")]
pub use fixed_spec::FixedWindowSpec;
pub use limiter::Window;
pub use quota::WindowQuota;
pub use sharded::{ShardedBuilder, ShardedWindow};
pub use sliding::SlidingWindow;
pub use sliding_cell::{SlidingConfig, SlidingWindowCell};
#[cfg(feature = "oracles")]
pub use sliding_spec::SlidingWindowSpec;
