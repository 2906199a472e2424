//! The keyed table: where a bounded [`Keyed`](crate::keyed::Keyed) limiter keeps its cells.
//!
//! **Summary.** A keyed limiter built with [`max_keys`](crate::keyed::Keyed::max_keys) keeps
//! its cells in a fixed array of slots sized from the bound, each slot a tag word (a keyed
//! fingerprint of the key and the slot's state) beside the family's cell, inline. A call
//! hashes its key, probes from the key's home group (one cache line for the 8-byte cells) and
//! decides on the first slot whose tag is its key's, live: no lock, no write to any line other
//! threads share but the cell's own CAS. An insertion claims a free slot by a CAS of its tag.
//! A sweep frees idle cells in two steps around a *grace period*, so that a call stalled
//! between finding a slot and deciding on its cell can never charge the key that reuses the
//! slot. Without `max_keys` (or with a bound above 2^27 keys, or for the sliding log, whose
//! cells hold a ring on the heap) the cells stay in a growing concurrent map (dashmap).
//!
//! # Slots
//!
//! | part | what it holds |
//! |---|---|
//! | tag, 8 bytes | `[fingerprint: 62 | state: 2]`: the top 62 bits of the key's hash under the limiter's keyed hasher (std's `RandomState`, SipHash-1-3 with a random key, unless [`with_hasher`](crate::keyed::Keyed::with_hasher) names another), and the state: empty (the whole tag 0, never used), live, retiring, free |
//! | cell | the family's cell, inline: 8 bytes for [`Buckets`](crate::keyed::Buckets) and [`InFlight`](crate::keyed::InFlight), 16 for [`Shapers`](crate::keyed::Shapers) and [`FixedWindows`](crate::keyed::FixedWindows) (a 16-byte atomic, so the slot is 32), `16 + 8·B` rounded up to 16 for [`SlidingWindows<B>`](crate::keyed::SlidingWindows) (the slot 16 more: 112 bytes for 10 buckets) |
//!
//! Slots come four to a group aligned to 64 bytes: a group of the 16-byte slots of 8-byte
//! cells is one cache line. The table has a fifth more slots than `max_keys` (rounded up
//! to a group), so at the bound at most 5/6 of the slots are live: 19.2 bytes per key for
//! the token bucket at the bound. A key's home group is its hash's top bits scaled to the number
//! of groups; its probe run is the next 128 groups (wrapping). The slots are allocated in up
//! to 256 segments, each when an insertion first needs a slot in it (a segment not allocated
//! reads as empty slots), so a limiter bounded at a million keys that holds a hundred
//! allocates a hundred segments at most.
//!
//! # The protocol
//!
//! - **Lookup.** Pin (below); walk the probe run; the first slot whose tag is the key's live
//!   tag is the key's. An empty slot ends the walk (the key is absent: slots never become
//!   empty again, and an insertion takes the first free slot of the run, so no empty slot
//!   precedes a key's). A slot of the key's that is *retiring* is first taken back, a CAS
//!   from retiring to live; if the sweep freed it first, the walk goes on (the key was idle,
//!   and is absent now). Then the family's decision on the cell, and unpin.
//! - **Insertion.** Under the lock of the key's stripe (64 stripes by home group), pinned:
//!   look the key up again; if absent, reserve room under the bound, and claim the first free
//!   slot (empty or freed) of the run by a CAS of its tag to the key's live tag. Keys of
//!   different stripes race for a free slot by that CAS alone. No free slot in the run: the
//!   reservation goes back and the key is refused ([`KeyedError::Full`](crate::keyed::KeyedError::Full)).
//! - **Sweep** (one at a time, when a new key finds the limiter full, or
//!   [`evict_idle`](crate::keyed::Keyed::evict_idle)): (1) every live slot whose cell is idle
//!   (indistinguishable from a fresh one now and under every later reconfiguration) goes
//!   *retiring* by a CAS of its tag; (2) a grace period: every call pinned before it ends;
//!   (3) every slot still retiring is judged again and, still idle, freed by a CAS from
//!   retiring to free (else back to live).
//!
//! # Grace periods
//!
//! Readers count themselves in one of two sides of counters (64 counters a side, each on its
//! own cache line, one per thread slot): load the epoch, increment the counter of side
//! `epoch % 2`, load the epoch again (counting again on the new side if it moved). A sweep's
//! grace period increments the epoch and waits until every counter of the side it left reads
//! zero. Every access to the epoch, the counters and the tags is `SeqCst`: the reader's
//! (count, then load the epoch and the tags) and the sweep's (mark tags, flip the epoch, then
//! load the counts) are the store-buffering pattern, and in the single total order either
//! the sweep's load sees the reader's count (the sweep waits for it) or the reader's loads
//! come after the flip, and see the epoch moved (it recounts on the new side) and every tag
//! marked before it.
//!
//! # Why it is exact
//!
//! - **One cell per key.** Every insertion of a key holds its stripe's lock and looks the
//!   key up first, so a second insertion finds the first's slot.
//! - **A stalled call never charges a reused slot.** A call that loaded a live tag is pinned
//!   from before that load until after its decision. The sweep frees a slot only after a
//!   grace period that began after the slot was marked retiring: by then every call that
//!   loaded the live tag is done. A call that loads the retiring tag touches the cell only
//!   after taking the slot back, which makes the free's CAS fail. So once the tag is free, no
//!   call holds the old key's cell; the key that claims the slot next gets a cell no stalled
//!   call can reach.
//! - **Eviction never loses a permit.** The free's CAS succeeds only from retiring, after a
//!   judgment made when no call could be touching the cell (every call that found it live
//!   is done; any later one would have taken it back, failing the CAS). The cell is idle,
//!   indistinguishable from a fresh one at every later reading and reconfiguration, so the
//!   key that claims the slot next, or the same key inserted again, decides as on a fresh
//!   cell. Decisions never read the clock below the sweep's reading (the limiter's floor).
//! - **The bound holds.** Slots are claimed only after a reservation under `max_keys`,
//!   given back when a sweep frees a slot or when the run has no free slot.
//!
//! **Fingerprints.** The table stores no keys: two keys whose hashes agree in their top 62
//! bits share a home group and one slot, and so one cell, which makes each of them see the
//! other's permits: fewer admitted, never more. The hasher is keyed with a random key per
//! limiter, so a client cannot pick keys that collide. The chance that any two of `n` keys
//! held at once collide is about `n² / 2^63`: 1.1 × 10⁻⁷ for a million keys, 1.1 × 10⁻³ for
//! a hundred million; a new key collides with one of `n` held with chance `n / 2^62`
//! (2.2 × 10⁻¹³ for a million).
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::cell::WindowConfig;
//! use ringlimit::clock::ManualClock;
//! use ringlimit::keyed::{FixedWindows, Keyed, KeyedError};
//! use ringlimit::WindowQuota;
//! let clock = ManualClock::new();
//! let config = WindowConfig::new(WindowQuota::per_second(1)?)?;
//! // A table of four slots for at most two keys.
//! let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(config, clock.clone()).max_keys(2);
//! assert!(limits.try_acquire(&1) && limits.try_acquire(&2));
//! assert_eq!(limits.try_acquire_n(&3, 1), Err(KeyedError::Full { max_keys: 2 }));
//! clock.advance(Duration::from_secs(1)); // both windows passed: both keys idle
//! assert!(limits.try_acquire(&3)); // a sweep frees them; key 3 takes a slot
//! assert_eq!(limits.len(), 1);
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
//!
//! # Costs and residuals
//!
//! - A call's pin is two RMWs (count, uncount) on a counter of its own thread slot's, a cache
//!   line no other core writes unless more than 64 threads share the slots. A lookup that
//!   excludes a concurrent free without a lock needs the free to know who may hold the slot,
//!   and a per-thread counter is the cheapest such record that loom can check (a fingerprint
//!   and generation inside the cell's CAS would need every family's word to carry them).
//! - A lookup that meets its key's slot retiring (a sweep judged it idle and waits for its
//!   grace period) takes it back with a CAS of the tag: the one write of a lookup to a line
//!   other threads share besides the cell's, and only while a sweep runs.
//! - Keys assigned a tier ([`Keyed::assign`](crate::keyed::Keyed::assign)) live in a map of
//!   their own (dashmap); once any key has one, every call first looks there, under that
//!   map's shard read lock, before the table.
//! - A new key whose probe run (128 groups) has no free slot, in a table not full, gets one
//!   sweep when one is due (its idle keys dropped) and one more try, then
//!   [`KeyedError::Full`](crate::keyed::KeyedError::Full): with a randomly keyed hasher a
//!   run fills long after the table does.
//! - Insertions of keys of one stripe take its lock (lookups never do); a sweep waits for
//!   the calls pinned when its grace period begins (each one decision long, unless its
//!   thread is descheduled meanwhile).
//! - A probe run with no free slot refuses a new key below the bound (the live slots fill at
//!   most 5/6: filled to the bound with random keys, tables of a million and ten million keys
//!   found a slot for every key), and tells it apart from
//!   nothing: both are [`KeyedError::Full`](crate::keyed::KeyedError::Full).
//! - Memory follows the bound, not the keys: a table allocates a segment as soon as one key
//!   needs it, so a few thousand keys spread over all 256 segments and the table holds
//!   `1.2 × max_keys` slots (a sliding window of 10 buckets bounded at a million keys: about
//!   134 MB, where the map would hold about 250 bytes per key in it). Growing by doublings
//!   would need a migration of live slots, which is not built.
//! - [`set_max_keys`](crate::keyed::Keyed::set_max_keys) may raise the bound above the one
//!   the table was built for; the table then holds what its slots hold, refusing new keys
//!   with `Full` beyond that.
//! - The loom models are `loom-tests/tests/models/keyed_table.rs`.
