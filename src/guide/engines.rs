//! How the lock-free limiters work, in one page: the words each family decides on, and
//! where the full argument lives.
//!
//! Words this page uses in a coined sense (word, gen, head, claim, install, label, tag, engine, cell): [the glossary](super::glossary).
//!
//! The fixed and sliding windows share one engine: a head word `[tag | gen | cap | count]` for
//! the current bucket, where `cap` is what this bucket may admit given the previous B-1, so
//! admitting one permit is two loads on one cache line and one CAS from the head just read (a
//! refusal is the loads alone). Rollover is claim → publish → install with helping, so no thread
//! ever waits on another. Under contention a thread whose CAS lost backs off before deciding
//! again (31 PAUSEs before its first retry), so that the winner makes a run of calls with the
//! line to itself, as a mutex's holder does while its waiters spin; a blind `fetch_add` never
//! loses, and runs below a `parking_lot` mutex at 2 to 8 threads for it (the comparison tool's
//! rows; figures in `docs/BENCHMARKS.md` in the repository, *Backoff and retry tuning*).
//!
//! The token and leaky buckets share one scheduling word `[time | gen]` (GCRA's theoretical
//! arrival time, or the shaper's next slot) plus eight configuration slots: a decision is one
//! load and one CAS, a refusal is the load alone, and `set_rate`/`set_burst` install a new slot
//! with the same CAS, so each admission is decided wholly under one configuration; a lost CAS
//! retries after a short exponential backoff (crossbeam's `Backoff`, out of line, so the first
//! try pays nothing), which is what keeps a contended bucket at or above a mutex. The sharded
//! bucket's shards lease batches from that word: a leased permit is used only before its own
//! slot of the schedule begins, which is what keeps it within `b + r*Δt`. `WarmUp`
//! is a `WarmUpCell` (one 128-bit word: the next free time, Guava's stored permits as the
//! nanoseconds of idle time that stored them, and an 8-bit configuration label; `cmpxchg16b`
//! through `portable-atomic`), a `WarmUpConfig` and a clock; a rate change converts nothing
//! (the cooling means the same under every rate), so a cell only relabels itself; the price of
//! one permit from cold and full, the common case below the stable rate, is computed once per
//! configuration, so that call does no floating point. The approximate window decides with two
//! `u128` multiplications and no division. `ConcurrencyLimiter` is one word `[limit |
//! in_flight]`: a CAS to acquire, a `fetch_sub` to release, and waiters woken only when some are
//! registered.
//!
//! The full argument is in the crate docs (`cargo doc --open`), one rendered and
//! doc-tested page per topic under `ringlimit::guide`: `contract`, `window` (engine, rollover,
//! which calls move time, ABA bound), `sharded`, `sharded_bucket`, `bucket`, `approx`, `log`, `warm_up`,
//! `concurrency`, `refunds`, `waiting`, `clocks`, `layouts`.
//!
//! For keyed limiters, `ringlimit::cell` holds *clockless cells*: an algorithm's lock-free state
//! alone, deciding with a configuration many cells share and a clock the caller names
//! (`BucketCell` 16 bytes, `FixedWindowCell` 16, `ApproxWindowCell` 16, `ConcurrencyCell` 8,
//! `SlidingWindowCell` 16 + 8·B, 96 for 10 buckets, its ring inline).
//! Reconfiguring a shared configuration touches no cell: each cell carries the configuration
//! epoch it was last decided under and converts itself on its next access, linearizably
//! (proofs in `guide::bucket`, `guide::window`, `guide::approx`, `guide::concurrency`).
