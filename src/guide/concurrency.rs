//! # Concurrency limits: one word, no ABA
//!
//! [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) keeps `[limit: 32 | in_flight: 32]` in
//! one word: an acquisition is a load and a CAS (a refusal is the load alone), a release is one
//! `fetch_sub` from the permit's `Drop` (so a panicking holder releases during unwinding, and a
//! leaked permit stays counted: it can only under-admit), and `set_limit` CASes the limit half.
//! The outcome is a pure function of the word's value, so there is no ABA hazard at all.
//! Waiters count themselves in a second word and sleep on an `event-listener` event; how no
//! wake-up is lost is in [waiting](super::waiting).
//!
//! ## How it works
//!
//! One state word `[limit: 32 | in_flight: 32]` (layout in `word`) decides everything:
//! - an acquisition loads it, applies the spec's transition (`spec::decide`) and CASes the
//!   word from the exact value it read to `in_flight + n`; a refusal is the load alone, no
//!   write, so refused callers never disturb the count (no "increment, check, roll back");
//! - a release is one `fetch_sub` of what its permit took: it can neither underflow nor
//!   borrow from the limit half;
//! - `set_limit` CASes the limit half, so every acquisition (a CAS of the whole word) is
//!   decided wholly under one limit.
//!
//! There is no ABA hazard and so no residual bound: an acquisition's outcome is a pure
//! function of the word's value, so a CAS that succeeds because the word came back to the
//! value it read (other permits taken and released meanwhile) is still decided on the state
//! at the instant of the CAS, which is its linearization point.
//!
//! Waits register in a second word beside it, the waiters count, and sleep on an
//! `event-listener` event; a release reads the count after its `fetch_sub` and notifies only
//! when it is non-zero (see `wait` for why no wake-up is lost).
//!
//! ## The words
//!
//! **State** (`AtomicU64`), high to low: `[limit: 32 | in_flight: 32]`
//! - `in_flight`: permits handed out and not yet released. An acquisition CASes it up by `n`
//!   only after checking `in_flight + n <= limit <= u32::MAX`, so it never carries into
//!   `limit`; a release `fetch_sub`s exactly what one acquisition added, so it never borrows
//!   from `limit` either. After the limit is lowered `in_flight` may exceed `limit` (permits
//!   already out stay valid); it still never exceeds the largest limit ever set.
//! - `limit`: written only by `set_limit`, with a CAS of the whole word, so every acquisition
//!   (a CAS of the whole word too) is decided wholly under one limit.
//!
//! **Waiters** (`AtomicU64`), high to low: `[multi: 32 | all: 32]`: threads and tasks
//! blocked in a wait, and how many of them wait for more than one permit. A release reads it
//! to skip the wake-up entirely when nobody waits. Each field counts live waits, each of
//! which holds a listener allocation, so neither can reach 2^32.
//!
//! ## Permits, released on drop
//!
//! ```
//! use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
//! let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?);
//! let first = limiter.try_acquire().expect("1 of 2");
//! let second = limiter.try_acquire().expect("2 of 2");
//! assert!(limiter.try_acquire().is_none()); // a refusal writes nothing
//! drop(first); // one `fetch_sub`
//! assert_eq!(limiter.available(), 1);
//! std::mem::forget(second); // a leaked permit stays counted: it can only under-admit
//! assert_eq!(limiter.in_flight(), 1);
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! None: linearizable with no deviation. After a limit is lowered, `in_flight` may exceed it
//! (permits already out stay valid) but never the largest limit ever set; waits are not FIFO.
