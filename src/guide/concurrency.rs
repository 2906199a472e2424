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
//! Words this page uses in a coined sense (word, epoch, cell, config): [the glossary](super::glossary).
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
//! ## Cells and a shared configuration
//!
//! For keyed limiters, a [`ConcurrencyCell`](crate::cell::ConcurrencyCell) keeps
//! `[epoch: 32 | in_flight: 32]` in one word and decides under a
//! [`ConcurrencyConfig`](crate::cell::ConcurrencyConfig), one word `[epoch: 32 | limit: 32]`
//! that any number of cells share; `set_limit` writes the configuration only. Every
//! operation on a cell (acquire, release, `available`, `in_flight`) loads the cell word,
//! *then* the configuration word; if the cell's `epoch` label is not the configuration's
//! epoch, it first converts the cell (a CAS to `{ epoch: config's, in_flight }`) and goes on
//! from the converted word. A release is therefore a CAS loop, not a `fetch_sub`: that is
//! why [`ConcurrencyLimiter`](crate::ConcurrencyLimiter), which owns its limit, keeps its
//! one word `[limit | in_flight]` above: its acquire + drop measured 11.5 ns with the
//! `fetch_sub`, 13.3 ns when built on a cell (criterion `concurrency/allow`, AMD EPYC).
//!
//! **Configuration** (`AtomicU64`), high to low: `[epoch: 32 | limit: 32]`
//! - `limit`: `1..=u32::MAX`.
//! - `epoch`: how many times the limit changed, modulo 2^32; `set_limit` to the limit it
//!   already has writes nothing.
//!
//! **Cell** (`AtomicU64`), high to low: `[epoch: 32 | in_flight: 32]`
//! - `in_flight`: permits handed out and not yet released. An acquisition CASes it up by `n`
//!   only after checking `in_flight + n <= limit <= u32::MAX`, so it never carries into
//!   `epoch`; a release subtracts at most `in_flight`, so it never borrows. After the limit
//!   is lowered `in_flight` may exceed it (permits already out stay valid); it never exceeds
//!   the largest limit ever set.
//! - `epoch`: the configuration epoch the cell was last decided under, written only by
//!   conversions.
//!
//! ### Why a cell is linearizable with a shared configuration
//!
//! **Claim.** A configuration `C` and a cell `X` used with it are, together, linearizable
//! with respect to [`ConcurrencySpec`](crate::spec::ConcurrencySpec) (its `set_limit` being
//! `C`'s): every run's outcomes are those of some sequential run of the spec that keeps
//! every *happens-before* order between operations. It holds for each cell sharing `C`
//! (projected on `C` and that cell), with no deviation, under the C++/Rust memory model,
//! provided no operation stays between its configuration load and its last CAS for 2^32
//! limit changes (the epoch wraps; see the end).
//!
//! **Facts used.** (F1) Every write to `X` after its initialization is a CAS (a
//! read-modify-write), and a successful CAS reads the write just before it in `X`'s
//! modification order. (F2) Conversions succeed with `AcqRel`; every read of `X` that may be
//! converted next (the loads, and failed CASes) is `Acquire` or stronger. By F1, every write
//! after a conversion is in that conversion's release sequence, so an `Acquire` read of any
//! later word *synchronizes with* the conversion. (F3) Coherence: reads and writes of one
//! atomic that are ordered by happens-before see its modification order in that order,
//! whatever their `Ordering`. Number `C`'s writes `c0, c1, …` in modification order: `ce`
//! is epoch `e`. A cell is made with the epoch it loads from `C`, and reaches other threads
//! only through something that orders that load before theirs.
//!
//! **Lemma 1 (labels only grow).** Along `X`'s modification order, labels never decrease.
//! Only conversions change a label. Take a conversion by `P`: it read a word `w` labelled `e`
//! from `X`, then loaded `cj` from `C` (`j != e`), and its CAS succeeded. The label `e` was
//! written by a conversion `Q` that loaded `ce` before its CAS (or by the cell's making); by
//! F2 `P`'s read of `w` synchronizes with `Q`, so `Q`'s load of `ce` happens before `P`'s
//! load, and by F3 `j >= e`, so `j > e`. By F1 `P`'s CAS read the write just before it, equal
//! to `w`, so labelled `e`: the label goes from `e` up to `j`. (This is why the cell word is
//! loaded *before* the configuration: loaded after, `P` could read `ce` and then a word `Q`
//! had already moved past it, and convert it back.)
//!
//! **Lemma 2 (a conversion fences off older decisions).** An acquisition or release writes
//! only with a CAS expecting a word labelled with the epoch `e` of the configuration it
//! decided under. Once any write labelled `e' > e` is in `X`'s modification order, by Lemma
//! 1 no later word is labelled `e`, so that CAS fails, and the operation starts over under a
//! newer configuration.
//!
//! **Linearization.** Give each cell operation the epoch `e` of the configuration word it
//! decided under; it decided from a word labelled `e` (F1/protocol). Its point is its CAS
//! (a write), or, for a refusal, `ExceedsLimit` or a snapshot, just after the write it read
//! in `X`'s order. A `set_limit` that writes `ce` is at that write; one that writes nothing
//! (same limit) at its load. Order everything by epoch, then by position in `X`'s
//! modification order; by Lemma 1 the two agree, so within `X` this is its modification
//! order. Each operation then sees exactly the spec's state: the limit of `ce`, and the
//! `in_flight` its own CAS or read found (every earlier write of `X` comes before it, no
//! later one does), and it applied the spec's transition to it. Happens-before is kept: if
//! a `set_limit` writing `ce` happens before a cell operation, the latter's configuration
//! loads see epoch `e` or later (F3); if a cell operation of epoch `e` happens before a
//! `set_limit` writing `ce'`, its load of `ce` came before that write, so `e < e'` (F3); two
//! operations on `X` ordered by happens-before are ordered the same way in `X`'s
//! modification order (F3).
//!
//! **The hazards, one by one.** An operation that loaded the *old*
//! configuration read the cell word before that load (program order, and `Acquire`), so
//! (F3) from a write before any conversion to the new epoch; its CAS succeeds only if no
//! conversion came between (Lemma 2), so it takes effect in the old epoch, before the
//! reconfiguration. Every operation that saw the new configuration converts the cell first,
//! so any CAS decided under the old one and landing later fails. *ABA* (an acquisition and a
//! release returning the word to the value a stale acquisition read): a release is a CAS
//! that converts, so if either of the two saw the new configuration, the label moved on and
//! the stale CAS fails; if both are stale, they are in the old epoch too, and the stale
//! acquisition's CAS decides on the state at its own instant, which is all the spec asks
//! (within one epoch the outcome is a pure function of the word's value). A plain
//! `fetch_sub` release leaves the label alone and so would let the stale CAS land after
//! a release that came after the reconfiguration: loom model (a) fails on it.
//!
//! **Why an epoch, not the limit itself.** Labelled with the limit, `1 → 2 → 1` returns the
//! label to a value it had: a conversion to `2` decided before the second change can then
//! succeed after it (its expected word `[1 | x]` is back), and an acquisition decided under
//! `2` lands after operations decided under the final `1`: over-admission. Lemma 1 fails
//! for values; it holds for epochs. Loom model (d) fails on value labels.
//!
//! **Wrapping.** Epochs count modulo 2^32. A cell left untouched across any number of
//! changes is harmless (a conversion is the identity on `in_flight`: deciding under the
//! current limit without one is the same decision); the proof above needs only that no
//! single operation is suspended between its configuration load and its CAS while exactly
//! a multiple of 2^32 changes land (minutes of nothing but `set_limit` at full speed). A
//! `set_limit` that does not change the limit does not count.
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
//!
//! ## Cells sharing a configuration
//!
//! ```
//! use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
//! use ringlimit::ConcurrencyQuota;
//! use ringlimit::cell::Compact;
//! let config = ConcurrencyConfig::new(ConcurrencyQuota::new(2)?);
//! let cells: Vec<ConcurrencyCell<Compact>> =
//!     (0..3).map(|_| ConcurrencyCell::with_layout(&config)).collect();
//! assert!(cells[0].try_acquire(&config, 2)?);
//! config.set_limit(1)?; // one store; no cell is touched
//! assert_eq!(cells[0].in_flight(&config), 2); // converts on access; permits stay
//! assert!(!cells[0].try_acquire(&config, 1)?);
//! assert!(cells[1].try_acquire(&config, 1)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
