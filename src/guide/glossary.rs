//! # Glossary: the words this crate coins
//!
//! The guide and the code use a few words in one precise meaning each. Where a word names a
//! field of a packed word, the field's layout is on the family's guide page.
//!
//! ## Time
//!
//! - **origin**: the clock's reading when a limiter (or a shared configuration) was built.
//!   Families that store absolute times (the bucket family's schedule, the warm-up's next
//!   free time) store nanoseconds since the origin, so a clock counting from the Unix epoch
//!   works as well as one counting from the process start ([`clocks`](super::clocks)).
//! - **epoch**: (1) in the window families, the number of a slice of time, `floor(t / w)` for
//!   a bucket width `w` (a fixed window's epoch is its window); epoch numbers saturate far
//!   beyond any real clock, and time then stands still, which only refuses more. (2) for a
//!   shared configuration, how many reconfigurations came before the one in force: a cell
//!   carries the epoch it was last decided under ([`window`](super::window),
//!   [`bucket`](super::bucket#cells-and-a-shared-configuration)).
//! - **bucket**: (1) in the sliding window, one of the `B` slices of the window, `w = W / B`
//!   long, each with its admitted count. (2) the bucket *family*: the token bucket and the
//!   leaky bucket, both the GCRA on one scheduling word ([`bucket`](super::bucket)).
//! - **tat**, **next**: the time a bucket-family state word holds: a meter's theoretical
//!   arrival time (GCRA), a shaper's earliest time the next call may go.
//! - **floor**: the lowest reading a keyed limiter decides at: a sweep raises it to its own
//!   reading, so no decision after the sweep reads the clock below it (`guide::keyed_table`,
//!   feature `keyed`). Elsewhere `floor(x)` is the arithmetic function.
//!
//! ## Words and their fields
//!
//! - **word**: one atomic integer (64 or 128 bits) holding several fields packed, decided on
//!   with one compare-and-swap (CAS). Every family keeps its words, masks and shifts in its
//!   `word.rs`, with a round-trip test ([`engines`](super::engines)).
//! - **gen** (generation; the field is `generation` in code, `gen` being a keyword): a small counter in a limiter's state word naming which of its
//!   configurations is in force: the bucket engine's 3-bit `gen` picks one of eight
//!   configuration slots, the window engine's 1-bit `gen` picks a half of its limits word. A
//!   reconfiguration writes the next configuration, then moves `gen` in one CAS, so every
//!   decision is made wholly under one configuration.
//! - **head**: the word a decision CASes: the window engine's `[seq | gen | cap | count]` of
//!   the current epoch, the approximate window's `[seq | gen | prev | cur]`, the sliding log's
//!   `[seq | label]`, the sliding-window cell's head of its ring.
//! - **current**: the epoch (window, schedule) a head is installed for, when no later reading
//!   has moved past it; a word is *stale* when it names an older epoch or configuration. A
//!   stale word never looks current: every tag or epoch a word carries is wide enough, or
//!   checked, so that it cannot alias a current one after any idle time.
//! - **cap**: the window head's room, `limit - (admitted in the previous B - 1 buckets)`,
//!   fixed when the head is installed, so admitting one permit is `count < cap`.
//! - **ring**: the `B` slots of a sliding window holding recent buckets' counts, or the
//!   sliding log's slots of admission times indexed by sequence number.
//! - **seq** (sequence number): a counter in a head: the window engine's and the approximate
//!   window's install count (so a helper can tell installs apart), the sliding log's count
//!   of admissions (slot `seq mod C` holds the admission numbered `seq`).
//! - **lap**: how many times the sliding log's sequence numbers went round its ring; a slot
//!   word carries its lap, so no CAS on a slot can succeed on an older occupant.
//! - **tag**: a few bits standing for a larger number: a window ring slot's tag is its epoch,
//!   a narrow bucket cell's 6-bit tag is its configuration epoch modulo 64 (its
//!   configuration refuses the reconfigurations that could make a tag ambiguous), a keyed
//!   table slot's tag is a fingerprint of its key and the slot's state.
//! - **label**: the configuration epoch (or its low bits) a cell's word carries, naming the
//!   configuration it was last decided under; a cell whose label differs from its
//!   configuration's **relabels** itself (converts its state, in its own CAS) before
//!   deciding ([`window`](super::window#cells-and-a-shared-configuration)).
//! - **stamp**: a counter read before and after the fields it guards (a seqlock): a reader
//!   that sees the same stamp twice read a consistent configuration; the sliding log's stamp
//!   slots record a limit in force.
//!
//! ## Steps
//!
//! - **claim**: the first step of a window rollover: the claim word `[epoch | parity]` is
//!   CASed forward to the new epoch, so every caller knows a rollover is under way.
//! - **publish**: the second step: helpers write the old head's final count into its ring
//!   slot, so the next head's `cap` can be computed from frozen counts.
//! - **install**: the last step: exactly one CAS replaces the head with the new epoch's head
//!   (its `cap` computed from the published counts); a caller that sees a claim ahead of the
//!   head helps rather than waits, so the protocol stays lock-free.
//! - **seal**: a far jump's install in the sliding-window cell: a sealed head carries its
//!   target epoch, and the buckets it skips are emptied before it is unsealed.
//! - **settle**: bringing a sliding log's ring up to date with the reading (completing the
//!   admissions and expiries another call left half done) before deciding on it; any call
//!   that reads the log settles it ([`log`](super::log)).
//! - **help**: completing another thread's step (a rollover's publish or install, a log
//!   entry) instead of waiting for it: what keeps every protocol here lock-free.
//!
//! ## Shared configurations and cells
//!
//! - **cell**: one algorithm's atomic state alone, without clock or configuration: every
//!   call names the configuration and the clock it decides with. A keyed limiter is a map of
//!   cells; a limiter such as [`TokenBucket`](crate::TokenBucket) is an engine, its own
//!   configuration and a clock ([`crate::cell`]).
//! - **engine**: a family's lock-free protocol on a limiter that owns its configuration, so
//!   its word can name the configuration by a small `gen`; a cell shares its configuration
//!   with many others and carries a label instead.
//! - **config** (shared configuration): the configuration many cells decide under, published
//!   under an epoch with the history a cell needs to convert itself lazily
//!   ([`BucketConfig`](crate::cell::BucketConfig), [`WindowConfig`](crate::cell::WindowConfig)).
//! - **kept**: how many past configurations a shared configuration remembers, so that a cell
//!   labelled with one of them can still convert itself.
//! - **spec**: a family's sequential specification, its test oracle ([`contract`](super::contract)).
//! - **rule**: the pure arithmetic of one transition, shared by the spec, the engine and the
//!   cell so that they agree bit for bit (the bucket family's `gcra`, the warm-up `curve`,
//!   the approximate window's `estimate`, the concurrency limiter's `in_flight`).
//!
//! ## Grants, leases and waits
//!
//! - **grant**: an admission that can be given back: [`Grant`](crate::outcome::Grant) carries a
//!   ticket, and [`RateLimiter::refund`](crate::RateLimiter::refund) restores its permits
//!   while the bucket or schedule it was counted in is current ([`refunds`](super::refunds)).
//! - **ticket**: what a grant or a reservation records: how many permits, when, and the
//!   mark (the state after the admission) a refund checks against.
//! - **owner**: the limiter a grant came from; a refund to another limiter restores nothing.
//! - **reservation**: a grant scheduled in the future: [`Reserve`](crate::Reserve) books
//!   the permits now and says when to act ([`waiting`](super::waiting)).
//! - **shard**, **lease**, **batch**: a sharded limiter gives each core a shard that leases a
//!   batch of permits from the shared limiter and admits from it with no shared write; a
//!   lease never holds more than the shared limiter granted, so sharding never over-admits,
//!   and what it under-admits is bounded by the leases outstanding ([`sharded`](super::sharded),
//!   [`sharded_bucket`](super::sharded_bucket)).
//! - **slot**: (1) one entry of a configuration history or of a ring. (2) in the sharded
//!   bucket, one permit's place on the GCRA schedule that a shard's lease covers.
//! - **cooled**: the warm-up's stored permits, kept as the nanoseconds of idle time that
//!   stored them ([`warm_up`](super::warm_up)).
//!
//! ```
//! // Every term above is used in one of these meanings; a spec and its limiter agree.
//! use ringlimit::spec::{Spec, TokenBucketSpec};
//! use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
//! let mut spec = TokenBucketSpec::new(Rate::per_second(10)?, 2)?;
//! let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 2)?)
//!     .clock(ManualClock::new())
//!     .build();
//! for _ in 0..3 {
//!     assert_eq!(spec.decide(0, 1)?.is_admitted(), bucket.try_acquire());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
