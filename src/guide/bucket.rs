//! # The bucket family: one scheduling word (GCRA engine and reconfiguration)
//!
//! [`TokenBucket`](crate::TokenBucket) and [`LeakyBucket`](crate::LeakyBucket) (meter and
//! shaper) share one engine: the GCRA (the token bucket, the leaky bucket as a meter) and the
//! leaky bucket as a shaper are both one scheduling word, decided with one load and one CAS.
//! Reconfiguration takes effect at one CAS of that word; a stale clock reading only makes a
//! decision stricter. Cells sharing one configuration (keyed limiters) use a wider word and
//! convert lazily ([below](#cells-and-a-shared-configuration)). Two residuals remain, both
//! stated at the end: an ABA on the 3-bit configuration generation (with, on the hot path, a
//! wrap of a 32-bit count), and a bounded mint with a clock that runs backwards across a
//! rate increase.
//!
//! Words this page uses in a coined sense (tat, gen, origin, epoch, tag, label, kept, cell): [the glossary](super::glossary).
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
//!   next call may go. 61 bits hold `MAX_STATE_TIME` ≈ 73 years of uptime; a schedule that would
//!   pass it (or pass `u64::MAX` on the clock) is refused, never wrapped.
//! - `gen`: which of the `SLOTS` configuration slots (period, span, limit) is in force.
//!   Reconfiguration writes slot `gen + 1` (mod `SLOTS`) and then moves `time` and `gen`
//!   in one CAS, so every decision, being a CAS from (or a re-checked load of) one word, is
//!   made wholly under one configuration.
//!
//! ## A decision: one load, one CAS
//!
//! A caller reads the clock once, loads the word (Acquire), reads the slot its `gen` names,
//! and computes the spec's transition (`gcra`, the same functions the sequential specs
//! call, so the two agree bit for bit). To admit it CASes the word from the exact value it
//! read to the new time, same `gen`; on failure it re-derives everything from the value the
//! CAS observed, keeping its clock reading. A refusal writes nothing: it re-loads the word
//! and returns only if it is unchanged, so the refusal held at the first load under the
//! configuration it read.
//!
//! A plain CAS loop, not a `fetch_add`: GCRA's `max(tat, t)` is not an addition, and an
//! optimistic add-then-undo would refuse others spuriously. Re-deriving everything from the
//! value a failed CAS observed means a retry never computes its new time from a stale `time`:
//! each attempt's transition starts from the word it will CAS from.
//!
//! ## The hot path
//!
//! `try_acquire` (one permit) makes the same decision with its loads in another order: it
//! reads `current`, the count of reconfigurations so far (its slot is the count modulo 8),
//! and that slot *first*, then the word, and decides from them only if the word names that
//! slot and `current` reads the same count again after the word (anything else, a reading
//! past the end or a refusal whose word moved, goes to the general path above, out of
//! line). Why the order matters: on one thread a call costs about one TSC
//! read, and what is left is the chain from one admission's CAS to the next, since the next
//! call's load of the word waits for the line that CAS wrote. Read after the word, the slot
//! added a dependent load to that chain (the word's `gen` picks its address): measured on the
//! 2-core AMD EPYC, 0.91-0.92x governor's `check()` in the comparison tool's interleaved
//! samples (pinned to one core), and 1.00-1.08x after (with the second load of `current`). The admitted word is computed on the packed words,
//! `max(word, [now | gen]) + [T | 0]` (a shaper's from `now` alone), so the word's load is
//! followed by a compare, a conditional move and an add before the CAS.
//!
//! Why the slot read first is the one in force at the word the call decides on. A
//! reconfiguration writes slot `gen + 1` (Release stores), CASes the word to it (Release),
//! and then stores `current`, the count of reconfigurations so far (Release), all under the
//! admin lock; `gen` is that count modulo 8. A call loads `current` (Acquire), getting `k`:
//! it sees the slot stores of the `k`-th reconfiguration, and the word it loads next is that
//! configuration's or a later one's. It decides only if the word names `k mod 8` *and* a
//! second load of `current`, after the word, still returns `k`. A word of a later
//! configuration was CASed after the previous reconfiguration stored its count, and the
//! word's load (Acquire, through the release sequence of admissions' CASes) makes that store
//! visible to the second load, so the count differs and the general path decides instead,
//! reading the slot after the word. Without that second load the bound would not be the ABA
//! one below: a call stalled between its slot loads and its word load while eight
//! reconfigurations ran found a word naming its slot again, of a configuration eight
//! reconfigurations later, with no word value repeated, and admitted a third permit from a
//! bucket of two (the loom model
//! `a_stalled_hot_path_never_admits_under_the_slot_of_eight_reconfigurations_ago` builds that
//! interleaving; the others are beside it in `loom-tests/tests/models/token_bucket.rs`).
//! The count wraps after 2^32 reconfigurations within one call, the only way the check can
//! pass wrongly. A call that read a slot while it was being rewritten (eight
//! reconfigurations again) synchronizes with the store it read, so its second load sees a
//! later count too. A refusal re-loads the word as before.
//!
//! The clock reading is converted with branches to cold code, not conditional moves, for the
//! same chain: `Timeline::since` saturates below the origin and past the clamp, neither taken
//! in practice (perf_probe `tb`, pinned to one core: 93.5 -> 98.2 Mops/s).
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
//! ## Cells and a shared configuration
//!
//! A keyed limiter holds millions of buckets under one configuration, so a bucket there is a
//! [`BucketCell`](crate::cell::BucketCell): one 128-bit word `[time: 64 | epoch: 64]` (16
//! bytes compact; the keyed token bucket's is the 8-byte narrow word below) and nothing else, deciding with a
//! [`BucketConfig`](crate::cell::BucketConfig) that all the cells share. The decisions are
//! the same functions as above; what differs is reconfiguration, which can no longer CAS
//! every bucket's word.
//!
//! - `epoch`: the configuration epoch `time` is expressed in, the number of
//!   reconfigurations before the one the cell was last decided under. 64 bits never wrap
//!   (one reconfiguration a nanosecond would take 584 years), so a cell untouched across any
//!   number of reconfigurations is never taken for a current one.
//! - The configuration: `current`, the epoch in force (`AtomicU64`), and a ring of 32
//!   slots; slot `e mod 32` holds epoch `e`'s `(T, span, limit)`, a seqlock stamp naming `e`
//!   (a reader checks it before and after the fields and discards a slot being rewritten),
//!   and the reading (ns since the origin) at which `e` took effect, in a word
//!   `[epoch: 64 | reading: 64]` so that fixing it cannot land on a reused slot.
//! - A decision reads the clock, loads the cell, then loads `current`; when the cell's epoch
//!   is current (always, but for the first access after a reconfiguration) it reads that
//!   slot and decides with one 128-bit CAS, exactly as above.
//! - A reconfiguration, under the configuration's admin lock, writes slot `e + 1` with its
//!   reading *unset*, publishes it by storing `current = e + 1` (SeqCst), then reads the
//!   clock and fixes the reading (a CAS from unset: whoever fixes it first, this call or a
//!   cell's access, wins). No cell is touched.
//! - A call that finds its cell at an older epoch replays each reconfiguration since, at that
//!   reconfiguration's reading, with the spec's own conversion, and writes the result with
//!   the new epoch in one CAS *before* it decides, even if it then refuses. Where the chain
//!   is broken (the cell is more than 31 epochs behind, or a slot it needs is being reused
//!   by a racing reconfiguration) it restarts after the break from the emptiest state the
//!   cell could be in: a meter a new burst behind the latest of its time, that epoch's
//!   reading and the highest reading any epoch took effect at (kept in the configuration:
//!   with a clock set back, a lost epoch's reading can be later than a kept one's), a
//!   shaper as it is. A conversion at `ρ` leaves a time of at most `max(ρ, time) + τ'`, so
//!   by induction no history ends later; conversions are monotone in the time, so this can
//!   only refuse more (at most one burst, for one burst's refill), and it never waits for
//!   the racing reconfiguration. A cell belongs to the configuration it was made under.
//!
//! ### The narrow cell: 8 bytes per key
//!
//! The keyed token bucket ([`Buckets`](crate::keyed::Buckets)) holds
//! [`BucketCell<Compact, Narrow>`](crate::bucket::Narrow): one `AtomicU64` `[time: 58 | tag:
//! 6]`, half the wide word, so that a key and its cell fit a map slot of 16 bytes.
//!
//! - `time`: ns since the configuration's origin, at most 2^58 - 1 (about 9.1 years). The
//!   configuration of a keyed token bucket ends its timeline there: past it every decision
//!   refuses with `retry_after = Duration::MAX` and nothing is available, as the wide cell
//!   does past 2^61 - 1 ns (73 years). Nothing wraps, so nothing is over-admitted; a
//!   limiter meant to outlive 9 years is rebuilt (keys then start full).
//! - `tag`: the epoch modulo 64. A decision loads the word, then `current` (as before), and
//!   reads the tag as the latest epoch at or before `current` with that tag: exact for a
//!   cell at most 63 epochs behind, after which the ring (32 epochs) has long been lost and
//!   the conversion starts from the emptiest state anyway.
//! - A cell 64 or more epochs behind would be read as a later epoch. The configuration
//!   makes that harmless by the *quiet rule*: an epoch `j` is quiet when it takes effect at
//!   a reading `ρ(j)` above `ρ(j-1) + W`, `W` the widest span (burst × period) any epoch has
//!   had (every published epoch's, whether or not narrow cells existed yet; a refused
//!   reconfiguration's span does not count). Every cell written under an epoch up to
//!   `j - 2`, or converted to one from that epoch's reading, then holds a time below
//!   `ρ(j)` (a decision under epoch `e` read the clock before `e + 1` was published, and
//!   admits at most a span ahead of its reading). The exception is a conversion from the
//!   emptiest state, which is a burst behind the latest reading of any epoch and may land
//!   after later epochs took effect: its time can pass `ρ(j)`, but it is already the
//!   emptiest state the spec allows, so a reused tag only makes it refuse more (within
//!   the deviation stated for cells left 32 or more reconfigurations behind). Epoch `n` is published only if some
//!   epoch `j >= n - 62` is quiet (`n` itself, when its reconfiguration reads the clock late
//!   enough); otherwise the reconfiguration fails with
//!   [`ConfigError::ReconfiguredTooOften`](crate::ConfigError::ReconfiguredTooOften) and
//!   the time to wait. Narrow cells decide at no reading earlier than the latest quiet
//!   reading (a time the clock showed inside the call, since that reading preceded the
//!   publication of every epoch after it), so a cell named by a reused tag reads as a full
//!   bucket, or an emptier one after a conversion from the emptiest state: never more
//!   permits than its history allows. The same bound rules out ABA on the narrow word: a
//!   word cannot come back after a quiet epoch, since every decision or conversion after it
//!   leaves a time no earlier than its reading.
//! - In practice: 62 reconfigurations back to back, each within the widest burst's refill
//!   time of the last, pass; the 63rd waits for that refill time. Rules reloads, which
//!   reconfigure on change, never come near it. A burst whose refill time (burst × period)
//!   reaches past the narrow timeline's end (about 9.1 years after the origin) makes
//!   every later 63rd reconfiguration in a row fail for good, with a `retry_after` of
//!   [`Duration::MAX`](std::time::Duration::MAX): keep such bursts well below 9 years.
//! - Only a configuration that keeps debt (a full bucket stays full:
//!   [`BucketConfig::keeping_debt`](crate::cell::BucketConfig::keeping_debt), which keyed
//!   limiters use) or a shaper's may hold narrow cells: under keeping permits a grown
//!   burst leaves an untouched cell short of full, and a reused tag would read it as full.
//!   [`BucketCell::try_new`](crate::cell::BucketCell::try_new) refuses any other with
//!   [`ConfigError::NarrowKeepsPermits`](crate::ConfigError::NarrowKeepsPermits).
//!
//! Why the limiters keep their own 64-bit word: measured on an AMD EPYC (this project's
//! development machine), a `portable-atomic` 128-bit CAS (`cmpxchg16b`) costs 6.5 ns against
//! 3.8 ns for a 64-bit one, and a 128-bit load 2 ns; a [`TokenBucket`](crate::TokenBucket)
//! on the cell took 20 ns per admission against 15 ns. A limiter owns its configuration, so
//! its reconfiguration can convert its one word in place, and a 3-bit generation suffices.
//!
//! ### Why a shared reconfiguration is linearizable per cell
//!
//! As if every cell had converted at the reconfiguration:
//!
//! 1. **The reconfiguration's instant.** It takes effect when its reading `ρ` is fixed:
//!    after `current` was published and before the call returns (it fixes `ρ` itself if no
//!    cell did). `ρ` is a reading taken after seeing the new epoch in force, so it is a time
//!    the clock showed within the call.
//! 2. **Calls that saw the new epoch** come after that instant: each needs `ρ` (to convert,
//!    it fixes it first if unset) or finds its cell already converted.
//! 3. **Calls that saw the old epoch** (they loaded `current` before the publication) loaded
//!    their cell *before* `current`, so before the publication. Such a call's CAS succeeds
//!    only if the cell still holds the word it loaded; every call that saw the new epoch
//!    writes the conversion before deciding, so a late CAS on an unconverted cell means no
//!    such call touched the cell in between, and the stale call linearizes at its load,
//!    before the reconfiguration. There is no ABA: the word never takes a value twice
//!    (within an epoch `time` only moves forward, since cells take no refunds, and every
//!    conversion moves the epoch forward), so a CAS that succeeds found the word unchanged
//!    since its load.
//! 4. **Readings.** A stale call read its clock before loading `current` (old); `ρ` is read
//!    after loading `current` (new). With `current`'s store and loads SeqCst (and the
//!    [`ManualClock`](crate::clock::ManualClock)'s accesses SeqCst), `ρ` is no older than any
//!    stale call's reading, so the conversion at `ρ` re-rates nothing those calls saw (the
//!    mint of the residual below cannot arise). For another clock this needs its readings
//!    ordered with the loads of `current` as well as monotonic across cores; quanta's plain
//!    `rdtsc` and [`RecentClock`](crate::clock::RecentClock) give no such order, and a
//!    reading out of order is then bounded as the residual below states.
//! 5. **Calls after the conversion** decide from the converted word, a call whose reading is
//!    older than `ρ` as any call with a reading older than the state's does (a meter's
//!    converted time is at least `ρ`, so such a call only decides more strictly).
//!
//! ## Time, overflow and the end of the word
//!
//! `time` never decreases except by refunds and reconfiguration: an admission moves it to
//! `max(time, now) + n·T`, so a stale reading only makes a decision stricter. A schedule that
//! would pass `MAX_STATE_TIME` (73 years after the origin), or `u64::MAX` on the
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
//! lock-serialized reconfigurations, so the residual is stated instead. The hot path (above)
//! reads its slot before the word, but decides from it only if `current` reads the same
//! count after the word, so its window is the same, between the word's load and its CAS,
//! and there it decides under one configuration of eight or more reconfigurations ago, never
//! a mix; or, stalled across 2^32 reconfigurations between its two loads of `current`, under
//! the slot it read.
//!
//! With a clock that runs backwards across a rate increase, a reading δ behind the last
//! admission's can mint at most `⌈min(δ, τ)·(1/T' - 1/T)⌉` permits (none unless the rate
//! rises; never more than the new burst). A schedule that would pass 2^61 ns (73 years after
//! the origin) is refused, never wrapped.
