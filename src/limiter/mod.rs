//! The traits every limiter implements and what they return: [`RateLimiter`] (the core),
//! [`Wait`] (waits, for every limiter), [`Reserve`] (the bucket family's reservations), the
//! [`Decision`] and the grants ([`Ticket`], [`Grant`], [`Admission`], [`Reservation`],
//! [`Attempt`]).
//!
//! Dependencies point one way: `grant` knows no trait, `rate_limiter` knows `grant`,
//! `wait` and `reserve` know both.

mod grant;
mod rate_limiter;
mod reserve;
// Also the rule the cells decide by; the spec types in it are the tests'.
#[cfg_attr(not(feature = "oracles"), allow(dead_code))]
pub(crate) mod spec;
mod wait;

pub use grant::{Admission, Attempt, Grant, Reservation, Ticket};
pub(crate) use grant::{Owner, Schedule};
pub use rate_limiter::{Decision, RateLimiter};
pub use reserve::Reserve;
pub(crate) use wait::nanos;
pub use wait::Wait;
