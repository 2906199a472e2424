//! Design notes: how the lock-free limiters work, why they are exact, and what they cost.
//!
//! # The contract
//!
//! Every limiter has a sequential specification in [`crate::spec`]. A lock-free limiter is
//! *linearizable* with respect to it: in any concurrent run, each call takes effect at one
//! instant inside the call, at a time the clock could have shown inside the call, and the
//! outcomes are those of the spec run in that order. Two consequences are checked by the loom
//! models (`loom-tests/`) and the stress tests (`tests/stress.rs`): no interleaving admits
//! more than the spec, and no call is refused that the spec would admit.
//!
//! # The window engine (fixed and sliding windows)
//!
//! Time is cut into epochs of one bucket width `w`. The state is:
//!
//! * a **claim** word `[epoch | parity]`: the full epoch the head has, or is being rolled
//!   to, and the install parity the head has once it is installed there;
//! * a **head** word `[seq | gen | cap | count]` for the current epoch, where `seq` counts
//!   installs and `cap = limit - (admitted in the previous B-1 epochs)`;
//! * a **ring** of B slots `[tag | count]` holding the admitted count of recent epochs.
//!
//! ## Admitting one permit: a load and one `fetch_add`
//!
//! The caller loads the claim and the head (one cache line). If the head's install parity
//! matches the claim's (it is installed for the claimed epoch) and that epoch is not older
//! than the caller's clock reading (a multiplication, no division), and if `count < cap`, it
//! adds one to the head and is admitted iff the old count was below `cap`.
//!
//! Refused callers that raced past the `count < cap` check inflate `count` beyond `cap`, but
//! only once the epoch is full, so the admitted count is always `min(count, cap)`: exact and
//! wait-free. Inflation is bounded by the number of racing threads, far below the field's
//! headroom. This is DESIGN.md §4's proposal; what follows is how rollover keeps it exact.
//!
//! ## Rolling over: claim, publish, install
//!
//! A caller whose clock has passed the head's epoch records the head's epoch in a `base`
//! word (every claimer racing from the same head writes the same value) and CASes the claim
//! forward, flipping its parity. Every caller
//! that then sees the claim ahead of the head *helps*: it publishes the old head's
//! `min(count, cap)` into the old epoch's ring slot, zeroes the slots of epochs the jump
//! skipped, computes the new cap from the ring, and CASes the head from the exact word it
//! read to the new epoch's word. The CAS succeeds for exactly one helper, and that helper read
//! the old epoch's final count, so the cap it installs is exact. Fast-path adds that land on
//! the old head before the install are counted (the install CAS fails on any change and the
//! helpers retry with the new count).
//!
//! Publication is a CAS from the value the helper observed, attempted only while the claim
//! it is helping still stands. While it stands, the slot holds this epoch's bucket or an older
//! one, so a helper delayed arbitrarily long can never overwrite a newer bucket (the hazard
//! that a monotone `fetch_max` on a wrapping tag would reintroduce at each tag wrap).
//!
//! ## Time never moves backwards
//!
//! A caller whose reading is older than the head's epoch uses the head's epoch (it cannot
//! claim backwards: claims only move forward). A reading that overflows the epoch range
//! saturates at 2^62 epochs, where time stands still: that can only refuse more.
//!
//! ## Tags and wraparound
//!
//! The head carries no epoch at all: the claim has the full epoch, and the head's install
//! parity says whether it is installed for that claim. At most one rollover is in progress,
//! and a reader of a claim (Acquire) reads a head at least as new as the one its claimer saw
//! settled, so a head whose parity matches the claim is the claimed epoch's or a newer one,
//! never an old one, whatever the jump. Helpers learn the predecessor's epoch from `base`,
//! and check that the head has not been installed since (a newer `base` is only written
//! after the install).
//!
//! Ring slots carry 44-bit tags. A jump of B epochs or more (*far*) leaves nothing of the old
//! window: the helpers overwrite all B slots with empty buckets before installing, so after
//! a limiter sat idle for years, no slot can alias a current epoch. Tests jump the clock by
//! 2^14, 2^22, 2^32, 2^40 and 2^44 bucket widths.
//!
//! ## Changing the limit
//!
//! The limits word holds two limits, one per generation. A head records the generation its
//! cap came from, and a rollover keeps it. `set_limit` writes the *other* generation's
//! limit, then CASes the head to the new cap and flipped generation (and the install
//! sequence plus two, so the parity stays): one instant at which the change takes effect. A
//! reader pairs a head with its limit by re-reading the head's sequence after the limits
//! word: unchanged means no `set_limit` CAS came between, so the half it read is the one the
//! cap came from. Every admission is decided by a single head word, so it is wholly
//! before or wholly after that instant. Admitted permits stay counted (the new cap is never
//! below what this epoch already admitted). `set_limit` calls serialize on a lock; admissions
//! never touch it.
//!
//! ## What the hot path costs
//!
//! | operation | atomics |
//! |---|---|
//! | admit one | 2 loads (one line) + 1 `fetch_add` |
//! | refuse | 2 loads |
//! | admit `n > 1` | 5 loads + 1 CAS (retried on contention) |
//! | rollover (once per bucket width) | 1 claim CAS + per helper: slot CAS(es) + B-1 slot loads + 1 head CAS |
//! | far jump | as rollover, plus B slot CASes |
//!
//! ## Residual assumptions
//!
//! The install sequence is 22 bits. A helper re-validates the claim immediately before its
//! install CAS; a stale install could only succeed if, between those two instructions, the
//! head's sequence advanced by a multiple of 2^22 = 4,194,304 (each install adds 1, each
//! `set_limit` adds 2, so: millions of rollovers into new buckets, or about two million
//! `set_limit` calls, or a mix) and came back to the same generation, cap and count. Each install takes at least one bucket
//! width of clock time and well over 50 ns of work, so that is a stall of over 0.2 s between
//! two adjacent instructions, during millions of rollovers. (The first design used 14-bit
//! *epoch* tags; an independent review showed a two-rollover ABA on them, now a loom
//! regression model.) The count field's headroom (2^21 - 2^20) bounds the number of threads
//! that may race one full epoch's fast path at about a million.
//!
//! # Layouts and memory
//!
//! [`Padded`](crate::Padded) puts the claim/head line, the limits and each ring slot on
//! their own 128-byte lines. [`Compact`](crate::Compact) packs them: about 8 bytes per bucket
//! plus under 100 bytes per limiter, for keyed limiters with millions of instances.
//!
//! # The bucket family: one scheduling word
//!
//! [`TokenBucket`](crate::TokenBucket), [`LeakyBucket`](crate::LeakyBucket) (meter and
//! shaper) share one engine: an `AtomicU64` `[time: 61 | gen: 3]` and eight configuration
//! slots `(period T, span, limit)` indexed by `gen`. A meter's `time` is GCRA's theoretical
//! arrival time `tat`, a shaper's is `next`, the earliest time the next call may go; both
//! are nanoseconds since the limiter's origin (its clock's first reading).
//!
//! * **A decision is one load and one CAS.** A caller reads the clock once, loads the word
//!   (Acquire), reads the slot its `gen` names, and computes the spec's transition (the same
//!   functions the sequential specs call, so the two agree bit for bit). To admit, it CASes
//!   the word from the exact value it read; on failure it re-derives everything from the
//!   value the CAS observed (DESIGN §3, "stale time on CAS retry"). A refusal writes
//!   nothing: it re-loads the word and returns only if it is unchanged, so the refusal held
//!   at the first load. A plain CAS loop, not a `fetch_add`: GCRA's `max(tat, t)` is not an
//!   addition, and an optimistic add-then-undo would refuse others spuriously.
//! * **Reconfiguration** (`set_rate`, `set_burst`, `set_max_wait`, `set_limit`) serializes
//!   on an admin lock, writes slot `gen + 1`, and CASes the word to (converted time,
//!   `gen + 1`). Every admission CASes a word carrying the `gen` whose slot it read, so it
//!   is decided wholly under the old configuration or wholly under the new. The meter keeps
//!   the permits available at the change (golang's `SetLimitAt`), rounded so that a change
//!   never mints a permit. A reconfiguration loads the word *before* it reads the clock (and
//!   re-reads after a failed CAS), and admissions CAS with Release, so it never converts at
//!   a reading older than an admission it follows (that re-rated the time between the two
//!   readings at the new rate, minting permits when the rate rose). Residuals: a caller
//!   stalled between its load and its CAS across a multiple of eight reconfigurations that
//!   leave `time` exactly where it was could decide that one call under a mix of the two
//!   configurations the slot held (the arithmetic is checked: no panic, no wrap); and with a
//!   clock that runs backwards across a rate increase, at most `⌈min(δ, τ)·(1/T' - 1/T)⌉`
//!   permits are minted for a reversal δ (the conversion happens no earlier than `tat - τ`).
//! * **Time never runs backwards in effect.** `time` only grows (except by refunds and
//!   reconfiguration): an admission moves it to `max(time, now) + n·T`, so a stale reading
//!   can only make a decision stricter, and nothing is minted (golang/go#71360). A schedule
//!   that would pass 2^61 ns (73 years after the origin) is refused, never wrapped.
//!
//! [`WarmUp`](crate::WarmUp) needs two values (Guava's `nextFreeTicket` and
//! `storedPermits`), so its state is one 128-bit word `[next_free: 61 | gen: 3 | stored:
//! f64]` (`portable_atomic::AtomicU128`: `cmpxchg16b` on x86_64), with the same protocol:
//! one load and one CAS per grant, eight configuration slots for `set_rate`, and the same
//! pure transition (Guava's resync and trapezoid pricing, in nanoseconds) shared with
//! `WarmUpSpec`. A grant (or reservation) can be refunded only while nothing has touched the
//! state since it: the state then goes back exactly to what it was.
//!
//! # Refunds
//!
//! [`RateLimiter::try_grant`](crate::RateLimiter::try_grant) returns a
//! [`Grant`](crate::Grant) that [`RateLimiter::refund`](crate::RateLimiter::refund) takes
//! back by value: neither `Copy` nor `Clone`, so a double refund does not compile. A
//! reservation's [`cancel`](crate::Reservation::cancel) is the same refund of the grant it
//! holds. A refund is one CAS while the grant's epoch (windows) or schedule (buckets) is
//! current; afterwards it restores nothing (the permits are dropped: under-admission only).
//! The sequential specs' [`Spec::refund`](crate::spec::Spec::refund) define exactly what
//! each restores, and the mutex baselines refund exactly as their spec does:
//!
//! | limiter | a refund of `n` restores |
//! |---|---|
//! | [`SlidingWindow`](crate::SlidingWindow) | `min(n, admitted in the head bucket)` iff the grant's bucket is still the head and the caller's clock is still in it; a later bucket: 0 (past buckets are frozen) |
//! | [`FixedWindow`](crate::FixedWindow) | the same, for the current window |
//! | [`ShardedWindow`](crate::ShardedWindow) | its grants come from the shared window (not a shard), so the same, to the shared window |
//! | [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) | `min(n, cur)` while the grant's window is the current one; once it is `prev`, 0 |
//! | [`TokenBucket`](crate::TokenBucket), [`LeakyBucket`](crate::LeakyBucket) (meter and shaper) | `n·T - (time - mark)`: the part no later admission or reservation has been scheduled behind (golang's amount), whether or not the time to act has come; reported in whole permits |
//! | [`WarmUp`](crate::WarmUp) | all `n` iff nothing touched the state since the grant (no admission, reservation, refund or reconfiguration); else 0 |
//! | [`SlidingLog`](crate::SlidingLog), [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) | 0 (the log's slots are timestamps, not counts; a concurrency permit is released by dropping it) |
//!
//! **Windows.** The head is `{cap, count}`, admitted `= min(count, cap)` (refused fast-path
//! adds inflate `count`). A refund CASes it to `{count: admitted - k, cap: max(floor,
//! admitted - k)}`, `k = min(n, admitted)`, `floor = limit - (previous B-1 buckets)`. The cap
//! matters after `set_limit` lowered the limit below what the window had admitted: the head
//! then keeps `cap = admitted` (a full head), and a refund that kept that cap would re-admit
//! permits the lower limit refuses; lowering it keeps the invariant `cap >= floor`, `cap >
//! floor` only when full, so the head admits `m` more iff `prior + admitted - k + m <=
//! limit`, the spec after its refund. One race is inexact, in the safe direction: a refund
//! landing between a rollover's claim and its install is seen by the installer, but a
//! helper that read the head earlier may publish the larger count into the ring, so the
//! later buckets of that window count up to `k` permits too many (a fixed window, with no
//! ring, is exact).
//!
//! **Buckets.** The grant's mark is the time its admission moved the state to. Unlike
//! golang, a refund after the time to act still restores (a refund is the holder's word that
//! the permits were not used, and all-or-nothing admission refunds microseconds later on a
//! real clock); once the clock passes the restored time the refund changes nothing, since
//! decisions start from `max(time, now)`. After a reconfiguration the state's time was
//! converted and `T` is the new period, so a refund of an earlier grant restores up to `n`
//! permits *of the new rate* minus what is scheduled behind it: not exactly "as if never
//! granted" (the grant's own cost was `n` old periods), but never more than `n` permits and
//! never past the new burst.
//!
//! # Concurrency limits
//!
//! [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) keeps `[limit: 32 | in_flight: 32]` in
//! one word: an acquisition is a load and a CAS (a refusal is the load alone), a release is
//! one `fetch_sub` from the permit's `Drop` (so a panicking holder releases during
//! unwinding, and a leaked permit stays counted: it can only under-admit), and `set_limit`
//! CASes the limit half. The outcome is a pure function of the word's value, so there is no
//! ABA hazard at all. Waiters count themselves in a second word and sleep on an
//! `event-listener` event; a release notifies only when that count is non-zero, and the
//! Dekker-style pairing (register, listen, re-check; release, then read the count, both
//! `SeqCst`) means no wake-up is lost, which the loom models check as deadlock freedom.
//!
//! # Scaling past one cache line: the sharded window
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
//! # Waiting
//!
//! Every limiter waits the same way: a loop over one step,
//! [`RateLimiter::attempt`](crate::RateLimiter::attempt), which either grants the permits or
//! says when to ask again. The loops live in one place (`wait.rs`) and serve the blocking
//! waits (`acquire`, `acquire_n`, `try_acquire_for`) and, with the `tokio` feature, the
//! async ones (`until_ready`, `until_n_ready`).
//!
//! * The **window family** grants only permits usable now. A refusal carries the spec's
//!   `retry_after`, the earliest time the request could succeed if nobody else takes
//!   permits meanwhile; the wait sleeps that long and asks again. Waiters race each other
//!   on every retry, so window waits are not fair, but nothing is held while sleeping:
//!   dropping an async wait takes nothing.
//! * The **bucket family** ([`Reserve`](crate::Reserve)) schedules instead of refusing: a
//!   reservation moves the limiter's time word forward and tells the caller when its
//!   permits may be used. Each caller's time is fixed when it reserves, so waiters are
//!   served in reservation order, and a wait is one CAS plus one sleep. A dropped async
//!   wait cancels its reservation, which gives back whatever later reservations have not
//!   already been scheduled behind (golang's rule), so cancelling never lets a newcomer
//!   jump the queue.
//!
//! Deadlines are checked *before* sleeping: `try_acquire_for(n, timeout)` returns
//! [`WaitError::Timeout`](crate::WaitError::Timeout) at once when the earliest possible
//! time is already beyond the timeout, instead of sleeping the timeout first. A request
//! larger than the limiter can ever grant is
//! [`ExceedsLimit`](crate::ExceedsLimit) at once, never a
//! wait for ever.
//!
//! Blocking waits sleep on the limiter's clock ([`Clock::sleep`](crate::clock::Clock::sleep)):
//! a [`ManualClock`](crate::clock::ManualClock) moves itself forward instead of blocking,
//! so tests of waits are instant and exact. Async waits sleep on tokio's timer;
//! [`TokioClock`](crate::clock) (feature `tokio`) lets tokio's paused test clock drive the
//! limiter too.
