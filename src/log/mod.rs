//! The exact sliding log: [`SlidingLog`] and its clockless [`SlidingLogCell`].
//!
//! - the rule: admit `n` at `t` iff at most `limit - n` were admitted in `(t - window, t]`
//!   (the `spec`, exactly);
//! - the protocol: `engine` (a ring of timestamp slots indexed by sequence number, groups,
//!   limit stamps, settling and helping);
//! - the words: `word` (head `[seq | label]`, entry, group and stamp slots);
//! - the cell: `cell` ([`SlidingLogCell`]), deciding under `config` ([`LogConfig`]);
//! - the limiter: `limiter` ([`SlidingLog`]: a cell, its own configuration and a clock);
//! - the oracle: `spec` ([`SlidingLogSpec`]); `tests` compares them on fixed traces;
//! - the guide: [`guide::log`](crate::guide::log); terms: [`guide::glossary`](crate::guide::glossary).
//!
//! Why the engine serves both: the ring already carries its configuration's label in its
//! head, so the limiter is one cell with a configuration of its own.

mod cell;
mod config;
mod engine;
mod limiter;
#[cfg(feature = "oracles")]
mod spec;
#[cfg(test)]
mod tests;
mod word;

pub use cell::SlidingLogCell;
pub use config::LogConfig;
pub use limiter::SlidingLog;
#[cfg(feature = "oracles")]
#[cfg(feature = "oracles")]
pub use spec::SlidingLogSpec;
