//! Guava's smooth warm-up: [`WarmUp`] and its clockless [`WarmUpCell`].
//!
//! - the rule: `curve` (Guava's `SmoothWarmingUp` and every state transition, pure);
//! - the protocol: in `cell` (one 128-bit word, relabelled through [`crate::relabel`]);
//! - the words: `word` (`[next_free: 61 | label: 8 | cooled: 59]`);
//! - the cell: `cell` ([`WarmUpCell`]), deciding under `config` ([`WarmUpConfig`], its
//!   history of configurations in `slot`s);
//! - the limiter: `limiter` ([`WarmUp`]: a cell, its own configuration and a clock), built
//!   by `builder` from a `quota`;
//! - the oracle: `spec` ([`WarmUpSpec`]);
//! - the guide: [`guide::warm_up`](crate::guide::warm_up); terms: [`guide::glossary`](crate::guide::glossary).
//!
//! Why no separate engine: the state is one word whatever owns the configuration, so the
//! limiter is a cell with a configuration of its own.

mod builder;
mod cell;
mod config;
mod curve;
mod limiter;
mod quota;
mod slot;
#[cfg(feature = "oracles")]
mod spec;
mod word;

pub use builder::WarmUpBuilder;
pub use cell::WarmUpCell;
pub use config::WarmUpConfig;
pub use limiter::WarmUp;
pub use quota::WarmUpQuota;
#[cfg(feature = "oracles")]
pub use spec::WarmUpSpec;
