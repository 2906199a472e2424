//! The exact sliding log: [`SlidingLog`] and its spec.

mod cell;
mod config;
mod limiter;
mod ring;
mod slot;
#[cfg(feature = "oracles")]
mod spec;
#[cfg(test)]
mod tests;

pub use cell::SlidingLogCell;
pub use config::LogConfig;
pub use limiter::SlidingLog;
#[cfg(feature = "oracles")]
pub use spec::SlidingLogSpec;
