#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod approx;
#[cfg(feature = "oracles")]
pub mod baseline;
mod bucket;
pub mod clock;
mod concurrency;
mod epoch;
mod error;
mod gen_limits;
pub mod guide;
#[cfg(feature = "keyed")]
pub mod keyed;
mod layout;
mod limiter;
mod log;
#[cfg(feature = "keyed")]
pub mod policy;
mod rate;
mod relabel;
#[cfg(feature = "rules")]
pub mod rules;
mod sharded;
mod sync;
mod timeline;
mod validate;
mod warm_up;
mod window;

pub use approx::ApproxSlidingWindow;
pub use bucket::{Bucket, BucketQuota, LeakyBucket, ShaperQuota, TokenBucket};
pub use concurrency::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
pub use error::{ConfigError, ExceedsLimit, WaitError};
pub use limiter::{RateLimiter, Reserve, Wait};
pub use log::SlidingLog;
pub use rate::Rate;
pub use sharded::{ShardedBucket, ShardedWindow};
pub use warm_up::{WarmUp, WarmUpQuota};
pub use window::{FixedWindow, SlidingWindow, Window, WindowQuota};

pub mod prelude;

pub mod outcome {
    //! What the limiters answer: a [`Decision`] (admitted or refused, and when to retry), a
    //! [`Grant`] of permits that can be refunded (inside an [`Admission`]), a
    //! [`Reservation`] of the bucket family (permits usable at a time that may lie ahead,
    //! with its [`Ticket`]), and the concurrency limiters' [`Permit`] and [`OwnedPermit`],
    //! which give their permit back when dropped.
    //!
    //! ```
    //! use ringlimit::outcome::Decision;
    //! use ringlimit::{FixedWindow, RateLimiter, WindowQuota};
    //! let limiter = FixedWindow::new(WindowQuota::per_second(2)?);
    //! assert_eq!(limiter.try_acquire_n(2)?, Decision::Admitted { remaining: 0 });
    //! assert!(!limiter.try_acquire_n(1)?.is_admitted());
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use crate::concurrency::{OwnedPermit, Permit};
    pub use crate::limiter::{Admission, Decision, Grant, Reservation, Ticket};
}

pub mod builder {
    //! The builders: [`WindowBuilder`] (a [`SlidingWindow`](crate::SlidingWindow) or a
    //! [`FixedWindow`](crate::FixedWindow), and through [`WindowBuilder::sharded`] a
    //! [`ShardedWindow`](crate::ShardedWindow)), [`BucketBuilder`] (a
    //! [`TokenBucket`](crate::TokenBucket) or a [`LeakyBucket`](crate::LeakyBucket)) and
    //! [`WarmUpBuilder`].
    pub use crate::bucket::{BucketBuilder, Leaky, Token};
    pub use crate::sharded::{ShardedBucketBuilder, ShardedBuilder};
    pub use crate::warm_up::WarmUpBuilder;
    pub use crate::window::{Fixed, Kind, Sliding, WindowBuilder};
}

pub mod cell {
    //! Clockless cells: each algorithm's lock-free state alone, and the configuration many
    //! cells share ([the guide](crate::guide::bucket#cells-and-a-shared-configuration)).
    //!
    //! A cell holds only its atomic words; every call names the configuration and the clock
    //! it decides with. A limiter such as [`TokenBucket`](crate::TokenBucket) is one cell,
    //! its own configuration and a clock; a keyed limiter is a map of cells sharing one
    //! configuration. Reconfiguring a shared configuration touches no cell: each converts
    //! itself on its next access, linearizably
    //! ([the guide](crate::guide::bucket#cells-and-a-shared-configuration)).
    //!
    //! | cell | compact | padded |
    //! |---|---|---|
    //! | [`BucketCell`] (token bucket, leaky meter, shaper) | 16 B (8 B in a keyed limiter) | 128 B on x86_64 |
    //! | [`FixedWindowCell`] | 16 B | 128 B on x86_64 |
    //! | [`ApproxWindowCell`] (shares [`WindowConfig`]) | 16 B | 128 B on x86_64 |
    //! | [`SlidingWindowCell`] of `B` buckets (config [`SlidingConfig`]) | 16 + 8·B B, rounded up to 16 | a multiple of 128 B on x86_64 |
    //! | [`SlidingLogCell`] (config [`LogConfig`]) | 24 B + 8·C B of ring, `C` the power of two above `max_limit` | 128 B + the ring |
    //! | [`ConcurrencyCell`] | 8 B | 128 B on x86_64 |
    //! | [`WarmUpCell`] (config [`WarmUpConfig`]) | 16 B | 128 B on x86_64 |
    //!
    //! ```
    //! use ringlimit::cell::{BucketCell, BucketConfig, Compact};
    //! use ringlimit::clock::ManualClock;
    //! use ringlimit::BucketQuota;
    //! let clock = ManualClock::new();
    //! let config = BucketConfig::token(BucketQuota::per_second(100)?.burst(10)?, &clock);
    //! let users: Vec<BucketCell<Compact>> = (0..1000).map(|_| BucketCell::new(&config)).collect();
    //! assert!(users[7].try_acquire(&config, &clock));
    //! assert_eq!(std::mem::size_of_val(users.as_slice()), 16_000);
    //! # Ok::<(), ringlimit::ConfigError>(())
    //! ```
    pub use crate::approx::ApproxWindowCell;
    pub use crate::bucket::{BucketCell, BucketConfig};
    pub use crate::concurrency::{ConcurrencyCell, ConcurrencyConfig};
    pub use crate::layout::{Compact, Layout, Padded};
    pub use crate::log::{LogConfig, SlidingLogCell};
    pub use crate::warm_up::{WarmUpCell, WarmUpConfig};
    pub use crate::window::{FixedWindowCell, SlidingConfig, SlidingWindowCell, WindowConfig};
}

#[cfg(feature = "oracles")]
pub mod spec {
    //! Sequential specifications: the test oracle of every lock-free limiter ([the
    //! contract](crate::guide::contract)).
    //!
    //! Each spec is a plain state machine over a time in nanoseconds. Wrapped in a mutex by
    //! [`Locked`](crate::baseline::Locked) it is also the "mutex version" the lock-free
    //! limiters are measured against. Specs never let time run backwards: a reading older
    //! than the newest one they acted on is treated as that newest time (each spec says
    //! exactly how).
    //!
    //! ```
    //! use std::time::Duration;
    //! use ringlimit::spec::{SlidingWindowSpec, Spec};
    //! let mut spec = SlidingWindowSpec::new(2, Duration::from_secs(1), 2)?;
    //! assert!(spec.decide(0, 2)?.is_admitted());
    //! assert!(!spec.decide(400_000_000, 1)?.is_admitted());
    //! assert!(spec.decide(1_000_000_000, 1)?.is_admitted());
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use crate::approx::ApproxSlidingWindowSpec;
    pub use crate::bucket::{LeakyBucketSpec, TokenBucketSpec};
    pub use crate::concurrency::ConcurrencySpec;
    pub use crate::limiter::spec::{Spec, Step};
    pub use crate::log::SlidingLogSpec;
    pub use crate::warm_up::WarmUpSpec;
    pub use crate::window::{FixedWindowSpec, SlidingWindowSpec};

    /// The step of a wait as [`RateLimiter::attempt`](crate::RateLimiter::attempt) takes it,
    /// and the widths of a [`BucketCell`](crate::cell::BucketCell): internals the tests
    /// compare with the specs, public only with the `oracles` feature.
    pub use crate::bucket::{Narrow, Wide, Width};
    pub use crate::limiter::Attempt;
}
