//! The approximate sliding window: [`ApproxSlidingWindow`] (two counters and a weighted
//! estimate, O(1) memory) and its clockless [`ApproxWindowCell`].
//!
//! - the rule: `estimate` (where a reading falls, the weighted estimate, the decision on a
//!   snapshot of the counters);
//! - the protocol: in `limiter` ([`ApproxSlidingWindow`]: a head CAS, a rollover by claim and
//!   install);
//! - the words: `word` (head `[seq | gen | prev | cur]`, claim, limits);
//! - the cell: `cell` ([`ApproxWindowCell`]), deciding under a
//!   [`WindowConfig`](crate::cell::WindowConfig) through [`crate::relabel`];
//! - the oracle: `spec` ([`ApproxSlidingWindowSpec`]);
//! - the guide: [`guide::approx`](crate::guide::approx); terms: [`guide::glossary`](crate::guide::glossary).
//!
//! Why no separate engine: the limiter's protocol is small enough to live beside its only
//! user; the cell is the same rule on one 128-bit word labelled with its configuration's
//! epoch, so that millions of keys share one configuration.

mod cell;
mod estimate;
mod limiter;
// Also the rule the cells decide by; the spec types in it are the tests'.
#[cfg_attr(not(feature = "oracles"), allow(dead_code))]
mod spec;
mod word;

pub use cell::ApproxWindowCell;
pub use limiter::ApproxSlidingWindow;
#[cfg(feature = "oracles")]
pub use spec::ApproxSlidingWindowSpec;
