//! All-or-nothing limits across dimensions: [`Policy`] (DESIGN.md §9).

mod check;
pub(crate) mod dimension;
mod wait;

pub use check::{Policy, PolicyBuilder, PolicyDecision, PolicyError};
