//! # Scaling past one cache line: the sharded bucket
//!
//! [`ShardedBucket`](crate::ShardedBucket) (`TokenBucket::builder(..).sharded()`,
//! `LeakyBucket::meter_builder(..).sharded()`) gives each core a cache-padded shard that
//! leases small batches of permits from the [GCRA engine](super::bucket): one CAS on the
//! shared schedule word per batch, then one `fetch_add` on a core-local line per admission.
//!
//! Words this page uses in a coined sense (shard, lease, batch, slot, tat): [the glossary](super::glossary).
//!
//! * **Never over-admits.** Every permit handed out owns a slot of the schedule that has not
//!   begun when it is used (the *slot rule*), so the admissions keep the bucket's bound:
//!   at most `burst + ⌊Δt/T⌋` in any interval of length `Δt`.
//! * **What it costs.** Permits leased and not yet used count as taken: at most
//!   `S × (b − 1)` at any instant for `S` shards and maximum batch `b`. A leased permit whose
//!   slot begins unused is dropped. The batch is `clamp(available / 2S, 1, b)`, so it shrinks
//!   as the bucket empties and the last `4S` permits go one by one; with one shard and
//!   `b = 1` it decides exactly as the spec.
//! * A refund, `set_limit` or `set_rate` drains the shards first (dropping their leases).
//!
//! ## Slots: what a GCRA admission really promises
//!
//! The engine's state is a time `tat`; admitting `n` permits at reading `t` moves it from
//! `tat` to `max(tat, t) + n·T` if that is at most `t + τ` (`τ = burst·T`). Give each
//! admitted permit its *slot*: the admission's `n` permits own the consecutive intervals
//! `[max(tat, t) + i·T, max(tat, t) + (i+1)·T)`, `i < n`. Slots of different admissions are
//! disjoint (each starts where the schedule was), every slot begins no earlier than the
//! admission's reading and ends no later than `t + τ`.
//!
//! **Lemma.** If every permit, used at time `u`, owns a slot `[s, s + T)` with `u ≤ s` and
//! `s + T ≤ u + τ`, the slots being disjoint, then at most `burst + (y − x)/T` permits are
//! used in any interval `[x, y]`. *Proof:* their slots are disjoint, of length `T`, and lie
//! inside `[x, y + τ]`, which holds at most `(y − x + τ)/T` of them. ∎
//!
//! The unsharded bucket satisfies the lemma with `u = t`. A shard's lease is one admission
//! of `k` permits at the refiller's reading `t₀`, with slots from `start = max(tat, t₀)`:
//! the refiller uses the first at `t₀ ≤ start`; the other `g = k − 1` slots begin at
//! `first + j·T`, `first = start + T`, `j < g`, and the fast path hands them out latest
//! first: its `i`-th permit (from 0) owns slot `j = g − 1 − i`. A caller reading `now` may
//! use it only while that slot has not begun: `now ≤ first + j·T`. That is the **slot
//! rule**; it
//! gives `u ≤ s`, and `s + T ≤ t₀ + τ ≤ u + τ` holds because the use comes after the lease
//! (the caller's reading may be older than `t₀`, but the clock showed `t₀` before the
//! caller's `fetch_add`, so the call can be placed at `max(now, t₀) ≤ s`, inside the call).
//! So the lemma applies: **no over-admission**.
//!
//! Why the rule is also the right amount of caution: while a shard holds a permit whose
//! slot has begun, the engine, which counted it at its slot, has already refilled that
//! slot's worth; the shard and the engine together would hold more than a full bucket.
//! Leases therefore expire one permit per period once their slots begin. While the bucket
//! is full that loses nothing the spec keeps (a full bucket loses its refill too); in
//! general a lease loses at most its `k − 1` fast permits.
//!
//! ## How an admission works
//!
//! Each shard is a `CachePadded` triple: the packed lease word `[state | granted | taken]`,
//! and the lease's slots `first` and `period` (see [below](#the-shard-word)). A thread uses
//! the shard of its round-robin thread number, modulo the shard count.
//!
//! * **Fast path**: load the lease word; if it is open with `taken < granted`, load `first`
//!   then `period` (Acquire); if the next permit passes the slot rule
//!   (`now ≤ first + (granted − 1 − taken)·T`), one `fetch_add` on `taken`, admitted iff
//!   the returned word was open with `taken < granted` and the permit it names passes the
//!   slot rule. No division: handed out latest slot first, a lease whose next permit has
//!   lapsed has nothing usable left.
//! * **Direct**: otherwise, unless at least `4S` permits are available (a batch of 2 or
//!   more) and a lease starting where the schedule is would keep a fast permit above the
//!   shard's bound (see [below](#stale-slots-the-bound)), the engine decides the call as
//!   the unsharded bucket would, in one pass over its word without a division: one CAS
//!   taking the permit, or a refusal made of loads (confirmed); the shard is left as it is.
//! * **Refill**: otherwise the caller CASes the word from what it saw to `Refilling`,
//!   leases `clamp(available / 2S, 1, b)` permits from the engine (one CAS on the schedule),
//!   keeps the first, stores the new slots (`period`, then `first`, Release) and opens the
//!   word with the rest (Release swap). The engine refusing is the caller's refusal, decided
//!   exactly at the engine's confirmed load.
//! * The refill's CAS may close a later lease whose word equals the one judged (ABA: same
//!   `granted` and `taken`). The caller, owning the shard, checks the closed word against
//!   the stored slots (now that lease's) and, if its next permit is usable, takes it and
//!   reopens the lease instead of dropping it.
//! * A caller that finds its shard `Refilling` or `Frozen`, or asks for `n` permits, goes to
//!   the engine directly, exactly as the unsharded bucket would.
//!
//! ## Stale slots: the bound
//!
//! The slots a caller loads belong to one lease; its `fetch_add` (or CAS) can land on a
//! later lease of the same shard if refills ran in between. Refills of a shard are
//! serialized (each owns the shard from its close to its open), and a refill stores its
//! slots after its close; the caller's Acquire loads of `first` then `period` therefore
//! order the close of every lease older than the ones it read before its add, so the add
//! lands on the closed word (`Refilling`: refused), on the lease whose `period` it read, or
//! a later one. It checked the deadline `first_a + j·T_b` (`first` of lease `a`, `period`
//! of lease `b`, `a ≤ b`, since `period` is stored before `first`; `j` from the word its add
//! returned, so from lease `c`, `j < g_c`) and used slot `j` of lease `c ≥ b`.
//!
//! Each shard keeps a **bound**: a line `B(j) = B₀ + j·P` on or above the slots of every
//! lease it ever stored, at every `j < b` (the largest batch). A refill gives its lease only
//! the fast permits `j < g` whose slots begin on or above the bound, `first_c + j·T_c ≥ B(j)`
//! (both lines are linear in `j`, so that is an interval from 0, found exactly in one
//! division), and, if it stores slots, widens the bound to lie above them too: the later
//! `B₀`, and the least period (rounded up) reaching the later of the two starts at
//! `j = b − 1`; a line on or above two lines at both ends is on or above them in between.
//! Every stored `first` then is at least the previous ones (`j = 0`), hence
//! `first_a + j·T_b ≤ first_b + j·T_b ≤ B(j) ≤ first_c + j·T_c` for `j < g_c` (the middle
//! step when b was stored before c; when `b = c` the chain is `first_a + j·T_c ≤ first_c +
//! j·T_c` directly): the
//! permit's own slot begins no earlier than the deadline checked, and the slot rule holds
//! for it. A slow-path caller whose lease would keep no fast permit decides on the engine
//! directly instead of refilling.
//!
//! **What the bound costs.** After a refund moved the schedule back, or a faster rate, new
//! leases' slots start below the old ones': a lease keeps only the fast permits above the
//! old line, and while that is none its shard's calls take the direct path (one CAS on the
//! engine, as unsharded). Going from `T_old` to a faster `T_new`, a lease whose fast slots
//! start at `f = s + T_new` keeps the fast permits `j ≤ (f − B₀)/(P − T_new)`; full
//! batches again once `f ≥ B₀ + (b − 1)·(P − T_new)`, at the latest when the new slots
//! start past the last slot the old line reaches, `B₀ + (b − 1)·P`: at most `(b − 1)·T_old`
//! later than the start of the old lease's first fast slot (so at most `b·T_old` after the
//! change). From 1 ms to 1 µs with `b = 256`, leases 10 ms after the change keep about 10
//! fast permits, 100 ms after about 100, and full batches return after about 256 ms:
//! direct decisions, then smaller batches, never a refill for a single permit.

//! ## Refunds and reconfiguration
//!
//! A refund moves the schedule back, which would move the slots of leases taken after the
//! refunded grant earlier than their deadlines; a reconfiguration converts the schedule
//! under a new period. Both therefore run *drained*: under the limiter's admin lock, every
//! shard is frozen (one CAS each, waiting out a refill in progress), its lease dropped, the
//! engine changed, and the shards reopened empty. Every permit of a dropped lease used
//! before the freeze was used before the change, so each admission is decided wholly under
//! one configuration and before or after the refund, as in the unsharded bucket (whose
//! refund and conversion arguments then apply: a refund shifts the slots of later
//! admissions back by no more than `mark − now`, so each still begins after its use).
//! Those arguments need the change's clock reading to be no older than that of any
//! admission it folds in. A fast-path use of a dropped lease is ordered before the drain's
//! reading: its `fetch_add` (or slow-path CAS) is Release and follows its reading; the
//! freeze's Acquire CAS reads that add or a later read-modify-write of the word (every
//! write to a shard word is one, so they continue the add's release sequence) and so
//! synchronizes with it; the change reads the clock after every freeze. A use whose add
//! lands after the freeze finds the word `Frozen` and goes to the engine. A refund that
//! would restore nothing (no permits, another epoch, a mark passed: checked on the engine's
//! word, then the clock, conservatively) and a change refused as invalid against the
//! configuration in force do not drain.
//! The drain's cost is the dropped leases: at most `S × (b − 1)` permits per change.
//!
//! ## The shard word
//!
//! **Shard word** (`AtomicU64`), high to low: `[state: 2 | granted: 20 | taken: 42]`
//! - `state`: `Open` (the lease may be taken from), `Refilling` (one caller owns the shard
//!   while it leases a new batch) or `Frozen` (a refund or reconfiguration is draining the
//!   shards). Only an open word hands out permits.
//! - `granted`: permits of the current lease left to the fast path (the refiller's own
//!   permit is not among them), at most `MAX_BATCH` (4096).
//! - `taken`: fast-path increments; the add that returns `taken = i` took fast permit `i`
//!   (slot `granted − 1 − i`).
//!   A caller checks `taken < granted` before its `fetch_add`, so `taken` passes `granted`
//!   only by callers racing between that load and their add: at most one per thread,
//!   against 2^42 of headroom, so the add never carries into `granted`.
//!
//! Beside it, on the same line, `first` (the schedule time, ns since the origin, at which
//! fast permit 0's slot begins) and `period` (`T` of the lease's configuration), and the
//! bound's `B₀` and `P`: written only while the shard is `Refilling`, the slots only with a
//! lease whose fast permits lie on or above the bound.
//!
//! ## Leases, on a manual clock
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
//! let clock = ManualClock::new();
//! let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(1_000)?, 100)?)
//!     .clock(clock.clone())
//!     .sharded()
//!     .shards(2)
//!     .batch(8)
//!     .build();
//! assert!(bucket.try_acquire_on(0)); // leases 8 (100 / (2 × 2), capped at 8), uses one
//! assert_eq!(bucket.available(), 92); // the 7 left in the shard count as taken
//! // Their slots begin 1, 2, …, 7 ms from now: 3 ms later, five of them are still usable.
//! clock.advance(Duration::from_millis(3));
//! assert_eq!((0..4).filter(|_| bucket.try_acquire_on(0)).count(), 4);
//! assert_eq!(bucket.available(), 95); // those four came from the lease, not the bucket
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! * **Over-admission: none.** At most `burst + ⌊Δt/T⌋` admissions in any interval of
//!   length `Δt`, with any number of shards and threads, across refunds and reconfiguration.
//! * **Under-admission.** A call is refused only when its shard had no usable permit when
//!   the caller looked and the engine, at its (later) confirmed load, has none either: two
//!   facts at different instants, so a permit leased to the shard in between (by another
//!   caller's refill) may go unseen; that is within the held permits below. The engine
//!   counts as taken the
//!   unused permits of every open lease, at most `S × (b − 1)` at any instant, and the
//!   permits of leases that lapsed unused (their slots began before anyone used them), at
//!   most `b − 1` per lease; the batch is at most `available / 2S`, so near empty the leases
//!   are single permits and nothing lapses. A drain (refund, `set_limit`, `set_rate`) drops
//!   at most `S × (b − 1)` permits.
//! * **Residual: a clock that runs backwards.** A permit from a lease counts at the later
//!   of the caller's reading and the lease's `t₀`. With a clock that runs backwards, a
//!   reading δ behind `t₀` may use a slot ending up to `t₀ + τ`, more than a burst after the
//!   reading: measured at the readings themselves, at most `⌈δ_max/T⌉` too many in any
//!   interval, `δ_max` the largest such lag: a use at reading `u` owns a slot inside
//!   `[u, u + τ + δ_max)` (`u ≤ s` by the slot rule, `s + T ≤ t₀ + τ`), so the uses in
//!   `[x, y]` own disjoint slots inside `[x, y + τ + δ_max]`, whatever lease each came
//!   from. None with a monotonic clock.
//! * **Exact** with one shard and `b = 1`: every call is one engine decision. A shaper is
//!   always built with `b = 1`.
