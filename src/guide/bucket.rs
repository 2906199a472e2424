//! # The bucket family: one scheduling word (GCRA engine and reconfiguration)
//!
//! [`TokenBucket`](crate::TokenBucket) and [`LeakyBucket`](crate::LeakyBucket) (meter and
//! shaper) share one engine: the GCRA (the token bucket, the leaky bucket as a meter) and the
//! leaky bucket as a shaper are both one scheduling word, decided with one load and one CAS.
//! Reconfiguration takes effect at one CAS of that word; a stale clock reading only makes a
//! decision stricter. Two residuals remain, both stated at the end: an ABA on the 3-bit
//! configuration generation, and a bounded mint with a clock that runs backwards across a rate
//! increase.
//!
//! ## The state
//!
//! One `AtomicU64` `[time: 61 | gen: 3]` (layout in `word`) and eight configuration
//! slots `(period T, span, limit)` indexed by `gen`. A meter's `time` is the theoretical
//! arrival time `tat`, a shaper's is `next`; both in nanoseconds since the limiter's origin,
//! its clock's first reading (a reading below the origin counts as the origin).
//!
//! **State** (`AtomicU64`), high to low: `[time: 61 | gen: 3]`
//! - `time`: nanoseconds since the limiter's origin (its clock's first reading). For a meter
//!   it is the theoretical arrival time `tat`; for a shaper, `next`, the earliest time the
//!   next call may go. 61 bits hold `MAX_TIME` ≈ 73 years of uptime; a schedule that would
//!   pass it (or pass `u64::MAX` on the clock) is refused, never wrapped.
//! - `gen`: which of the `SLOTS` configuration slots (period, span, limit) is in force.
//!   Reconfiguration writes slot `gen + 1` (mod `SLOTS`) and then moves `time` and `gen`
//!   in one CAS, so every decision, being a CAS from (or a re-checked load of) one word, is
//!   made wholly under one configuration.
//!
//! ## A decision: one load, one CAS
//!
//! A caller reads the clock once, loads the word (Acquire), reads the slot its `gen` names,
//! and computes the spec's transition (`spec`, the same functions the sequential specs
//! call, so the two agree bit for bit). To admit it CASes the word from the exact value it
//! read to the new time, same `gen`; on failure it re-derives everything from the value the
//! CAS observed, keeping its clock reading. A refusal writes nothing: it re-loads the word
//! and returns only if it is unchanged, so the refusal held at the first load under the
//! configuration it read.
//!
//! A plain CAS loop, not a `fetch_add`: GCRA's `max(tat, t)` is not an addition, and an
//! optimistic add-then-undo would refuse others spuriously. Re-deriving everything from the
//! value a failed CAS observed avoids DESIGN §3's "stale time on CAS retry".
//!
//! ## The shaper
//!
//! A shaper's `time` is `next`: a call for `n` at `t` is scheduled at `s = max(next, t)`,
//! refused (nothing changes) if its own wait `s - t` exceeds `max_wait`, and otherwise moves
//! `next` to `s + n·T`. With `n = 1` that is uber-go's `ratelimit.New(rate,
//! ratelimit.WithoutSlack)`, where each `Take` sleeps until `last + perRequest`, plus a bound
//! on the wait. It is neither uber-go's default `Take` (which has slack: up to 10 requests'
//! worth of idle time is saved up and spent at once) nor Guava's `SmoothBursty` (which stores
//! up to a second of idle permits): an idle shaper saves nothing, and calls leave `n·T` apart.
//!
//! ## Reconfiguration
//!
//! `set_rate`, `set_burst`, `set_limit` and `set_max_wait` serialize on an admin lock, load
//! the word, *then* read the clock, write the new configuration into slot `gen + 1` (mod 8),
//! and CAS the word to (converted time, `gen + 1`); if an admission came between, they
//! re-read the clock (keeping the latest reading) and recompute the converted time from the
//! observed word. The change takes effect at that one CAS: every admission before it CASed
//! a word with the old `gen` (decided under the old slot), every one after it reads the new
//! word and slot. The meter's conversion keeps the permits available at the reading
//! (golang's `SetLimitAt`/`SetBurstAt`), rounded so a change never mints a permit; a
//! shaper's schedule stands.
//!
//! The order matters: a conversion at a reading older than an admission it converts would
//! re-rate the time between the two readings at the new rate, minting permits when the rate
//! rises. An admission reads the clock before its CAS, which is Release; the
//! reconfiguration's load (or failed CAS) of that word is Acquire and its reading comes
//! after, so its reading is no older (for the [`ManualClock`](crate::clock::ManualClock), an
//! atomic, by coherence; for a hardware clock, as far as the clock is monotonic across
//! cores). Defence in depth for clocks that are not: the conversion takes place at `max(now,
//! tat - τ)`, which every plain admission's reading reaches (so with a monotonic clock it
//! changes nothing, except that a queue of reservations more than a burst ahead stands and
//! the new rate starts where it ends). A reading δ behind the last admission's can then
//! mint at most `⌈min(δ, τ)·(1/T' - 1/T)⌉` permits (none unless the rate rises; never more
//! than the new burst).
//!
//! ## Time, overflow and the end of the word
//!
//! `time` never decreases except by refunds and reconfiguration: an admission moves it to
//! `max(time, now) + n·T`, so a stale reading only makes a decision stricter. A schedule that
//! would pass `MAX_TIME` (73 years after the origin), or `u64::MAX` on the
//! clock, is refused (`retry_after = Duration::MAX`, nothing available) or times out: it
//! never wraps. The transition's arithmetic is checked (`n·T` and the sum refuse as past the
//! end on overflow), so even a configuration read torn (the ABA residual: one slot's limit
//! with another's period) can neither panic nor wrap.
//!
//! ## GCRA, on a manual clock
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
//! let clock = ManualClock::new();
//! let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 2)?).clock(clock.clone()).build();
//! assert!(bucket.try_acquire_n(2)?.is_admitted()); // starts full
//! assert_eq!(bucket.try_acquire_n(1)?.retry_after(), Duration::from_millis(100));
//! clock.advance(Duration::from_millis(100)); // tat - t is back to one period below the burst
//! assert!(bucket.try_acquire());
//! assert!(!bucket.try_acquire());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The ABA residual
//!
//! The three fields of a slot are loaded one by one and confirmed only through the word. A
//! caller stalled between its load of the word and its CAS (or confirming re-load) across a
//! multiple of eight reconfigurations that left `time` exactly where it was can decide one
//! call under a mix of the fields of the two configurations that slot held (a
//! configuration never in force). A per-slot stamp (seqlock) would close it at two more
//! loads and a fence on every decision; the window is a few instructions against eight
//! lock-serialized reconfigurations, so the residual is stated instead.
//!
//! With a clock that runs backwards across a rate increase, a reading δ behind the last
//! admission's can mint at most `⌈min(δ, τ)·(1/T' - 1/T)⌉` permits (none unless the rate
//! rises; never more than the new burst). A schedule that would pass 2^61 ns (73 years after
//! the origin) is refused, never wrapped.
