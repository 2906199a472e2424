//! # Layouts: padded or compact, and what each costs in bytes
//!
//! A few hot limiters want each contended word on its own cache line; millions of keyed
//! limiters want bytes. [`Padded`](crate::cell::Padded) (the default) puts each group of atomics on
//! its own 128-byte line; [`Compact`](crate::cell::Compact) packs them, at the price of false
//! sharing between neighbours under contention. Every limiter reports its size with
//! `footprint()`.
//!
//! Words this page uses in a coined sense (cell, word): [the glossary](super::glossary).
//!
//! [`Padded`](crate::cell::Padded) puts the claim/head line, the limits and each ring slot on
//! their own 128-byte lines. [`Compact`](crate::cell::Compact) packs them: about 8 bytes per bucket
//! plus under 100 bytes per limiter, for keyed limiters with millions of instances.
//!
//! | limiter | padded | compact |
//! |---|---|---|
//! | [`SlidingWindow`](crate::SlidingWindow) | 384 bytes + 128 per bucket | 80 bytes + 8 per bucket |
//! | [`FixedWindow`](crate::FixedWindow) | 384 bytes | 80 bytes |
//! | [`ShardedWindow`](crate::ShardedWindow) | the window's engine + 128 per shard | |
//! | [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) | one 128-byte line (x86_64) | 24 bytes |
//! | [`SlidingLog`](crate::SlidingLog) | a ring of 8-byte slots (the power of two above `max_limit`) + one padded line | |
//! | [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) | 256 bytes, whatever the limit | |
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
//! let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?).build();
//! assert_eq!(limiter.footprint(), 384 + 10 * 128);
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! Sizes are measured on x86_64 (128-byte padding, as crossbeam's `CachePadded`); other
//! targets pad to their own line size. The clock's shared state is not counted.
