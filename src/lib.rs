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
//! | leaky bucket, shaper (leak r, max wait M) | [`LeakyBucket::shaper`] | scheduled at `s = max(next, t)`, refused if `s - t > M`; `next = s + n*T` (uber-go's `ratelimit.New(r, ratelimit.WithoutSlack)`, with a bound on the wait) | constant output rate, no slack, queueing delay at most M |
//! | warm-up (rate r, warm-up P, cold factor c) | [`WarmUp`] | Guava `SmoothWarmingUp`: stored permits cost up to `c*T` each, falling to T over P | never above r; slower after idleness |
//! | sliding or fixed window, sharded (S shards, batch k) | [`ShardedWindow`] (`.sharded()`) | as the window, each core leasing up to k permits of the current bucket | never above the window's bound; under-admits at most `min(S·(k−1), cap/2)` per bucket |
//! | token bucket or leaky meter, sharded (S shards, batch k) | [`ShardedBucket`] (`.sharded()`) | as GCRA, each core leasing up to k permits and using each before its slot of the schedule begins | at most `b + r*Δt` in any Δt (monotonic clock); under-admits at most S·(k−1) held at once; exact with one shard, batch 1 |
//! | concurrency (C in flight) | [`ConcurrencyLimiter`] | `in_flight + n <= C`; released when the permit drops | at most C at once |
//!
//! Every limiter implements [`RateLimiter`] (take permits now, look, one waiting step) and so
//! [`Wait`]: `acquire`, `acquire_n`, `try_acquire_for` (blocking), and with the `tokio`
//! feature `until_ready` / `until_n_ready` (async, cancel-safe). The bucket family also
//! hands out [`Reservation`]s ([`Reserve`]), which make waiting fair.
//!
//! Every lock-free limiter is linearizable with respect to its sequential spec in [`spec`]:
//! no interleaving over-admits, and no call is refused unless the spec would refuse it. The
//! specs under a mutex ([`baseline::Locked`]) are the comparison baselines. See [`guide`] for how the
//! lock-free algorithms work and why they are exact.
//!
//! Every limiter is built from a *quota*: a validated `Copy` value made once, where a
//! [`ConfigError`] arises, so building limiters from it (one per key, millions of times)
//! cannot fail. [`WindowQuota`] serves the window family (sliding, fixed, sharded, log,
//! approximate), [`BucketQuota`] the token bucket and the leaky meter, [`ShaperQuota`] the
//! shaper, [`WarmUpQuota`] and [`ConcurrencyQuota`] the others. The one exception: a window
//! quota holds up to 2^40 − 1 per window, the bucketed windows' bound, while the sliding log,
//! the approximate window and the keyed window cells' configurations hold less (2^20 − 1);
//! their constructors return [`ConfigError::LimitTooLarge`] for a larger quota
//! ([`WindowQuota::MAX_LIMIT`]). `unlimited()` quotas admit
//! everything (windows and buckets); [`BucketQuota::start_empty`] starts a bucket with no
//! permits; [`WindowQuota::budget`] is a budget that is never renewed.
//!
//! For millions of instances (one per user, IP or key), [`cell`] holds *clockless cells*:
//! an algorithm's lock-free state alone (16 bytes for a token bucket or a fixed window, 8
//! for a concurrency limit), deciding with a configuration many cells share and a clock the
//! caller names; reconfiguring the shared configuration converts each cell on its next
//! access, linearizably. [`keyed`] holds those cells in a concurrent map, one per key, with
//! a bound on the keys held.
//!
//! A request limited on several dimensions at once (per user, per IP, per API, global) goes
//! through a [`policy::Policy`]: all or nothing, the grants of earlier dimensions given back
//! when a later one refuses. With the `rules` feature, `ringlimit::rules::RuleSet` builds
//! policies from TOML or YAML files and reloads them atomically, counts kept (`watch` adds a
//! file watcher); with the `metrics` feature, policies record every check through the
//! `metrics` facade.
//!
//! ```
//! use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
//! let quota = WindowQuota::per_second(1000)?.buckets(10)?;
//! let limiter = SlidingWindow::new(quota);
//! if limiter.try_acquire() {
//!     // handle the request
//! }
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod approx;
pub mod baseline;
mod bucket;
pub mod clock;
mod concurrency;
mod config;
mod error;
pub mod guide;
#[cfg(feature = "keyed")]
pub mod keyed;
mod layout;
mod limiter;
mod limits;
mod log;
#[cfg(feature = "keyed")]
pub mod policy;
mod rate;
#[cfg(feature = "rules")]
pub mod rules;
mod shard;
mod sync;
mod timeline;
mod warm_up;
mod window;

pub use approx::ApproxSlidingWindow;
pub use bucket::{BucketQuota, LeakyBucket, ShaperQuota, ShardedBucket, TokenBucket};
pub use concurrency::{
    ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota, OwnedPermit, Permit,
};
pub use error::{ConfigError, ExceedsLimit, WaitError};
pub use layout::{Compact, Layout, Padded};
pub use limiter::{
    Admission, Attempt, Decision, Grant, RateLimiter, Reservation, Reserve, Ticket, Wait,
};
pub use log::SlidingLog;
pub use rate::Rate;
pub use warm_up::{WarmUp, WarmUpQuota};
pub use window::{FixedWindow, ShardedWindow, SlidingWindow, Window, WindowQuota};

pub mod builder {
    //! The builders: [`WindowBuilder`] (a [`SlidingWindow`](crate::SlidingWindow) or a
    //! [`FixedWindow`](crate::FixedWindow), and through [`WindowBuilder::sharded`] a
    //! [`ShardedWindow`](crate::ShardedWindow)), [`BucketBuilder`] (a
    //! [`TokenBucket`](crate::TokenBucket) or a [`LeakyBucket`](crate::LeakyBucket)) and
    //! [`WarmUpBuilder`].
    pub use crate::bucket::{BucketBuilder, Leaky, ShardedBucketBuilder, Token};
    pub use crate::layout::Plain;
    pub use crate::warm_up::WarmUpBuilder;
    pub use crate::window::{Fixed, Kind, ShardedBuilder, Sliding, WindowBuilder};
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
    //! | [`BucketCell`] (token bucket, leaky meter, shaper) | 16 B ([`Narrow`]: 8 B) | 128 B on x86_64 |
    //! | [`FixedWindowCell`] | 16 B | 128 B on x86_64 |
    //! | [`ApproxWindowCell`] (shares [`WindowConfig`]) | 16 B | 128 B on x86_64 |
    //! | [`SlidingWindowCell`] of `B` buckets (config [`SlidingConfig`]) | 16 + 8·B B, rounded up to 16 | a multiple of 128 B on x86_64 |
    //! | [`SlidingLogCell`] (config [`LogConfig`]) | 24 B + 8·C B of ring, `C` the power of two above `max_limit` | 128 B + the ring |
    //! | [`ConcurrencyCell`] | 8 B | 128 B on x86_64 |
    //! | [`WarmUpCell`] (config [`WarmUpConfig`]) | 16 B | 128 B on x86_64 |
    //!
    //! ```
    //! use ringlimit::cell::{BucketCell, BucketConfig};
    //! use ringlimit::clock::ManualClock;
    //! use ringlimit::{BucketQuota, Compact};
    //! let clock = ManualClock::new();
    //! let config = BucketConfig::token(BucketQuota::per_second(100)?.burst(10)?, &clock);
    //! let users: Vec<BucketCell<Compact>> = (0..1000).map(|_| BucketCell::new(&config)).collect();
    //! assert!(users[7].try_acquire(&config, &clock));
    //! assert_eq!(std::mem::size_of_val(users.as_slice()), 16_000);
    //! # Ok::<(), ringlimit::ConfigError>(())
    //! ```
    pub use crate::approx::ApproxWindowCell;
    pub use crate::bucket::{BucketCell, BucketConfig, Narrow, Wide, Width};
    pub use crate::concurrency::{ConcurrencyCell, ConcurrencyConfig};
    pub use crate::log::{LogConfig, SlidingLogCell};
    pub use crate::warm_up::{WarmUpCell, WarmUpConfig};
    pub use crate::window::{FixedWindowCell, SlidingConfig, SlidingWindowCell, WindowConfig};
}

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
}

/// The README's code blocks, compiled and run as doc-tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
