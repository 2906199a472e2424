//! The exact sliding log: [`SlidingLog`] and its spec.

mod limiter;
mod ring;
mod slot;
mod spec;
#[cfg(test)]
mod tests;

pub use limiter::SlidingLog;
pub use spec::SlidingLogSpec;
