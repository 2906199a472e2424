//! The names most programs need, in one import: `use ringlimit::prelude::*;`.
//!
//! The limiters, their quotas and [`Rate`], the traits whose methods they are called through
//! ([`RateLimiter`], [`Wait`] for the blocking and async waits, [`Reserve`],
//! [`ConcurrencyLimit`]), the errors, [`Decision`], the clocks ([`Clock`], [`TscClock`], the
//! default, and [`ManualClock`] for tests) and, with the `keyed` feature, [`Keyed`].
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::prelude::*;
//! let clock = ManualClock::new();
//! let limiter = TokenBucket::builder(BucketQuota::per_second(1)?).clock(clock.clone()).build();
//! assert_eq!(limiter.acquire(), Duration::ZERO); // `Wait` is in scope
//! assert_eq!(limiter.try_acquire_for(1, Duration::from_secs(1))?, Duration::from_secs(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::clock::{Clock, ManualClock, TscClock};
#[cfg(feature = "keyed")]
pub use crate::keyed::Keyed;
pub use crate::outcome::Decision;
pub use crate::{
    ApproxSlidingWindow, BucketQuota, ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota,
    ConfigError, ExceedsLimit, FixedWindow, LeakyBucket, Rate, RateLimiter, Reserve, ShaperQuota,
    ShardedBucket, ShardedWindow, SlidingLog, SlidingWindow, TokenBucket, Wait, WaitError, WarmUp,
    WarmUpQuota, WindowQuota,
};
