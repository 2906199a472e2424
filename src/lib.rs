//! # ringlimit
//!
//! Lock-free rate limiters for hot paths, exact under concurrency.
//!
//! | algorithm | type | admits `n` at time `t` iff | guarantee |
//! |---|---|---|---|
//! | fixed window (N, W) | [`FixedWindow`] | `count[t/W] + n <= N` | at most N per aligned window; up to 2N inside any W |
//! | sliding window, bucketed (N, W, B) | [`SlidingWindow`] | `sum(count[e-B+1..=e]) + n <= N`, `e = t/(W/B)` | at most N in any B consecutive buckets (any interval of `W - W/B`); up to 2N inside W at worst |
//! | sliding log, exact (N, W) | [`SlidingLog`] | `#{admitted s in (t-W, t]} + n <= N` | at most N in every interval of length W, exactly |
//! | sliding window, approximate (N, W) | [`ApproxSlidingWindow`] | `prev*(W - t mod W)/W + cur + n <= N` | O(1) memory; exact only for uniform arrivals in the previous window |
//! | token bucket, GCRA (rate r = 1/T, burst b) | [`TokenBucket`] | `max(tat, t) + n*T - t <= b*T` | at most `b + r*Δt` in any Δt; starts full |
//! | leaky bucket, meter (capacity b, leak r) | [`LeakyBucket::meter`] | as GCRA with capacity b | smooth, no queue |
//! | leaky bucket, shaper (leak r, max wait M) | [`LeakyBucket::shaper`] | scheduled at `s = max(next, t)`, refused if `s - t > M`; `next = s + n*T` | constant output rate, queueing delay at most M |
//! | warm-up (rate r, warm-up P, cold factor c) | [`WarmUp`] | Guava `SmoothWarmingUp`: stored permits cost up to `c*T` each, falling to T over P | never above r; slower after idleness |
//! | concurrency (C in flight) | [`ConcurrencyLimiter`] | `in_flight + n <= C`; released when the permit drops | at most C at once |
//!
//! Every limiter can be waited on: `acquire`, `acquire_n`, `try_acquire_for` (blocking), and
//! with the `tokio` feature `until_ready` / `until_n_ready` (async, cancel-safe). The bucket
//! family also hands out [`Reservation`]s ([`Reserve`]), which make waiting fair.
//!
//! Every lock-free limiter is linearizable with respect to its sequential spec in [`spec`]:
//! no interleaving over-admits, and no call is refused unless the spec would refuse it. The
//! specs under a mutex ([`Locked`]) are the comparison baselines. See [`guide`] for how the
//! lock-free algorithms work and why they are exact.
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{RateLimiter, SlidingWindow};
//! let limiter = SlidingWindow::builder(1000, Duration::from_secs(1)).buckets(10).build()?;
//! if limiter.try_acquire() {
//!     // handle the request
//! }
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod approx_window;
pub mod builder;
pub mod clock;
mod concurrency;
mod config;
mod error;
mod fixed_window;
mod gcra;
pub mod guide;
mod layout;
mod leaky_bucket;
mod limiter;
mod locked;
mod rate;
mod reservation;
mod sharded;
mod sliding_log;
mod sliding_window;
pub mod spec;
mod sync;
mod token_bucket;
mod wait;
mod warm_up;
mod window;

pub use approx_window::ApproxSlidingWindow;
pub use concurrency::{
    ConcurrencyLimit, ConcurrencyLimiter, LockedConcurrencyLimiter, OwnedPermit,
    ParkingLotConcurrencyLimiter, Permit, StdLockedConcurrencyLimiter,
};
pub use config::MAX_WINDOW_NANOS;
pub use error::{AcquireError, ConfigError, WaitError};
pub use fixed_window::FixedWindow;
pub use gcra::word::{MAX_SPAN_NANOS, MAX_TIME};
pub use layout::{Compact, Layout, Padded, Plain};
pub use leaky_bucket::LeakyBucket;
pub use limiter::{Decision, RateLimiter};
pub use locked::{Locked, ParkingLotLocked, SpecMutex, StdLocked};
pub use rate::{Rate, MAX_PERIOD_NANOS};
pub use reservation::{Attempt, Reservation, Reserve, Ticket};
pub use sharded::{ShardedWindow, DEFAULT_BATCH, MAX_BATCH, MAX_SHARDS};
pub use sliding_log::SlidingLog;
pub use sliding_window::SlidingWindow;
pub use token_bucket::TokenBucket;
pub use warm_up::{WarmUp, WarmUpBuilder};
pub use window::word::{MAX_BUCKETS, MAX_LIMIT};

/// The README's code blocks, compiled and run as doc-tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
