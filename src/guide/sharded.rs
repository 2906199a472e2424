//! # Scaling past one cache line: the sharded window
//!
//! [`ShardedWindow`](crate::ShardedWindow) gives each core a cache-padded shard that leases
//! small batches of permits from the [window engine](super::window), so most admissions are
//! one `fetch_add` on a core-local line. It never over-admits (every permit a shard hands out
//! was counted in the engine for the bucket it is used in); the price is a bounded
//! under-admission, leased permits left unused when their bucket ends.
//!
//! Words this page uses in a coined sense (shard, lease, batch, head, epoch): [the glossary](super::glossary).
//!
//! One shared word caps throughput at one cache line's transfer rate. `SlidingWindow` and
//! `FixedWindow` built with `.sharded()` ([`ShardedWindow`](crate::ShardedWindow)) give
//! each core a cache-padded shard that leases small batches of permits from the window
//! engine (one CAS on the shared head per batch), so most admissions are a `fetch_add` on a
//! core-local line.
//!
//! * **Exact where it matters.** Every permit a shard hands out was counted in the engine
//!   for the epoch (bucket) it is used in: a lease is used only while its epoch is not older
//!   than the caller's reading and the engine has not moved past it, and leftovers of an
//!   old epoch are dropped (they were counted there and expire with it). So per bucket the
//!   sharded admissions are at most the engine's counts: no over-admission, by the same
//!   argument as the core engine.
//! * **What it costs.** Leased but unused permits count as used until their bucket ends: at
//!   most `min(S × (b − 1), cap / 2)` per bucket for `S` shards and batch `b`, `cap` being
//!   what the bucket could admit when it began. The batch shrinks as the bucket fills
//!   (`clamp(left / 2S, 1, b)`), so the last permits are handed out one at a time. With
//!   one shard and `b = 1` it decides exactly as the spec.
//! * `set_limit` freezes the shards, gives their unused permits back to the engine (one CAS
//!   each, dropped if the bucket has passed), changes the limit and reopens them empty.
//!
//! ## How an admission works
//!
//! Each shard is one `CachePadded` pair of words: the packed lease word
//! `[state | granted | taken]` (see `word`) and the full epoch the lease was counted in.
//! A thread uses the shard of its round-robin thread number, modulo the shard count.
//!
//! * **Fast path**: load the lease word; if it is open with `taken < granted`, load the lease
//!   epoch (Acquire); if that epoch is not older than the caller's clock reading, one
//!   `fetch_add` on `taken`, admitted iff the returned word was open with `taken < granted`.
//! * **Refill**: otherwise (the lease is spent, or its epoch has passed) the caller CASes the
//!   word from what it saw to `Refilling`, leases `clamp(left / 2S, 1, b)` permits from the
//!   engine (one CAS on the shared head; `left` is what the current epoch still has, `S` the
//!   shard count, `b` the maximum batch), keeps one for itself, stores the lease's epoch
//!   (Release) and opens the word with the rest. Leftovers of an older epoch are dropped: they
//!   were counted in that epoch and expire with it.
//! * A caller that finds its shard `Refilling` or `Frozen`, or whose n > 1, takes its permits
//!   from the engine directly, exactly as the unsharded limiter would.
//! * A spent lease whose epoch is current, with the engine full, is a refusal made of loads.
//!
//! ## Why it never over-admits
//!
//! Every permit a shard hands out was counted in the engine's head for the epoch `E` of its
//! lease, and the admission is in epoch `E` too. So per epoch, the sharded admissions are at
//! most the engine's counts, which the engine keeps within the spec's bound (at most `limit`
//! in any B consecutive epochs). `E` is a time the clock could have shown during the call:
//! it is never older than the caller's reading (checked), and a newer `E` was installed by a
//! caller whose clock had reached it before the lease, so the caller joins the newest epoch
//! exactly as the core engine's callers do.
//!
//! What keeps the check honest is that the `fetch_add` can never land on a lease older than
//! the epoch read before it. Refills of one shard are serialized (each owns the shard from
//! its close to its open) and their epochs never decrease (each leases after the previous one
//! opened). A refill closes the old lease before it stores the new epoch with Release; a
//! caller that reads that epoch with Acquire therefore has the close in its past, so its
//! `fetch_add` comes after the close in the word's modification order: it lands on the
//! closed word (refused), on this lease, or on a later one (epoch at least as new). No tag
//! of the epoch lives in the lease word, so no tag can wrap around and make a lease left
//! over from before a long idle look current.
//!
//! `set_limit` freezes every shard (waiting out refills in progress, which are a few atomic
//! steps), gives the unused permits of current leases back to the engine (one CAS each),
//! changes the engine's limit and reopens the shards empty. A lease taken under the old limit
//! can therefore not serve an admission decided after the change.
//!
//!
//! ## The shard word
//!
//! **Shard word** (`AtomicU64`), high to low: `[state: 2 | granted: 20 | taken: 42]`
//! - `state`: `State::Open` (the lease may be taken from), `State::Refilling` (one caller
//!   owns the shard while it leases a new batch from the shared window) or `State::Frozen`
//!   (`set_limit` is draining the shards). Only an open word hands out permits.
//! - `granted`: permits of the current lease left to the shard (the refiller's own permit is
//!   not among them), at most `MAX_BATCH`.
//! - `taken`: fast-path increments. Permits handed out = `min(taken, granted)`. A caller checks
//!   `taken < granted` before its `fetch_add`, so `taken` exceeds `granted` only by the callers
//!   racing between that load and their add: at most one per thread, against 2^42 of headroom,
//!   so the add never carries into `granted`.
//!
//! The lease's epoch is not in the word: it sits, in full, in the shard's second word, written
//! only while the shard is `State::Refilling` (see [`crate::ShardedWindow`] for why no tag
//! of the epoch can alias a stale lease).
//!
//! ## Leases, on a manual clock
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
//! let clock = ManualClock::new();
//! let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?)
//!     .clock(clock.clone())
//!     .sharded()
//!     .shards(2)
//!     .batch(8)
//!     .build();
//! assert!(limiter.try_acquire()); // leases 8 (100 / (2 × 2), capped at 8), uses one
//! assert_eq!(limiter.available(), 92); // the 7 left in the shard count as used
//! clock.advance(Duration::from_secs(1)); // the lease's bucket has left the window
//! assert_eq!(limiter.available(), 100);
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! Leased but unused permits count as used until their epoch ends. A shard holds one lease
//! at a time and only its last lease of an epoch can be left unused, by at most its size
//! minus the refiller's own permit. So in every epoch (bucket) at most
//! `min(S × (b − 1), cap / 2)` permits are counted but never admitted, `cap` being what the
//! epoch could admit when it began: a refusal can come while the spec would still admit that
//! many. A sliding window counts each bucket's shortfall for the B buckets it stays in the
//! window. With one shard and `b = 1` nothing is ever left over and the limiter decides
//! exactly as its spec.
