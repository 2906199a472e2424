//! The window family: [`SlidingWindow`] (B buckets) and [`FixedWindow`] (one bucket), one
//! generic [`Window`] on one lock-free engine, and the clockless cells keyed limiters keep.
//!
//! - the rule: the specs' arithmetic on epochs (`crate::epoch`), the same in every file;
//! - the protocol: `engine` (claim, publish, install; `any_engine` picks a word width),
//!   `ring` (the guarded write of a ring slot, shared with the sliding cell);
//! - the words: `word` ([`Words`](word::Words): 64- and 128-bit heads, claims, slots);
//! - the cells: `cell` ([`FixedWindowCell`]) and `sliding_cell` ([`SlidingWindowCell`]),
//!   deciding under `config` ([`WindowConfig`], [`SlidingConfig`]);
//! - the limiter: `limiter` ([`Window`]), its kinds in `sliding` and `fixed`, built by
//!   `builder` from a `quota`; the sharded mode is [`crate::sharded`];
//! - the oracle: `spec` ([`SlidingWindowSpec`], [`FixedWindowSpec`]);
//! - the guide: [`guide::window`](crate::guide::window); terms: [`guide::glossary`](crate::guide::glossary).
//!
//! Why an engine and a cell: a limiter owns its limit, so its head names one of two limits by
//! a 1-bit `gen` and fixes `cap` at each install; a cell shares its configuration with many
//! others and carries the configuration's label in its own word instead.

mod any_engine;
pub(crate) mod builder;
mod cell;
mod config;
pub(crate) mod engine;
mod fixed;
pub(crate) mod kind;
mod limiter;
mod quota;
mod ring;
mod sliding;
mod sliding_cell;
#[cfg(feature = "oracles")]
mod spec;
pub(crate) mod word;

pub use builder::WindowBuilder;
pub use cell::FixedWindowCell;
pub use config::{SlidingConfig, WindowConfig};
pub use fixed::FixedWindow;
pub use kind::{Fixed, Kind, Sliding};
pub use limiter::Window;
pub use quota::WindowQuota;
pub use sliding::SlidingWindow;
pub use sliding_cell::SlidingWindowCell;
#[cfg(feature = "oracles")]
pub use spec::{FixedWindowSpec, SlidingWindowSpec};
