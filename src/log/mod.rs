//! The exact sliding log: [`SlidingLog`] and its spec.

mod cell;
mod config;
mod engine;
mod limiter;
mod spec;
#[cfg(test)]
mod tests;
mod word;

pub use cell::SlidingLogCell;
pub use config::LogConfig;
pub use limiter::SlidingLog;
pub use spec::SlidingLogSpec;
