//! All-or-nothing limits across dimensions: [`Policy`]. With the `metrics`
//! feature, every check is recorded per dimension through the `metrics` facade
//! (`policy::metrics`: requests, window count and utilization, labelled by dimension name).

mod check;
pub(crate) mod dimension;
#[cfg(feature = "metrics")]
pub mod metrics;
mod wait;

pub use check::{Policy, PolicyBuilder, PolicyDecision, PolicyError};
