//! # The window engine (fixed and sliding windows)
//!
//! [`SlidingWindow`](crate::SlidingWindow) (B buckets) and [`FixedWindow`](crate::FixedWindow)
//! (one bucket) share one lock-free engine: a head word for the current bucket (epoch) whose
//! `cap` is fixed at rollover from the frozen previous B-1 buckets, so admitting one permit is
//! a load and one CAS; rollover is claim, publish, install, where exactly one helper
//! installs the new head and it read the old epoch's final count. This page gives the words,
//! the protocol, why stale words never look current after long idles, how `set_limit` takes
//! effect at one step, and the one ABA residual.
//!
//! Words this page uses in a coined sense (epoch, head, claim, publish, install, cap, ring, tag, gen, seal, label): [the glossary](super::glossary).
//!
//! Time is cut into epochs of one bucket width `w`. The state is:
//!
//! * a [**claim**](super::glossary#steps) word `[epoch | parity]`: the full epoch the head has, or is being rolled
//!   to, and the install parity the head has once it is installed there;
//! * a [**head**](super::glossary#words-and-their-fields) word `[seq | gen | cap | count]` for the current epoch, where `seq` counts
//!   installs and `cap = limit - (admitted in the previous B-1 epochs)`;
//! * a [**ring**](super::glossary#words-and-their-fields) of B slots `[tag | count]` holding the admitted count of recent epochs.
//!
//! ## Admitting one permit: a load and one CAS
//!
//! The caller loads the claim and the head (one cache line). If the head's install parity
//! matches the claim's (it is installed for the claimed epoch) and that epoch is not older
//! than the caller's clock reading (a multiplication, no division), and if `count < cap`, it
//! CASes the head from the word it read to the same word with one more counted, and is
//! admitted when the CAS succeeds: the head was still that word, the linearization point.
//! A lost CAS (another admission, a rollover, a `set_limit`) backs off and decides again from
//! fresh loads, so `count` never exceeds `cap`: exact and lock-free.
//!
//! Why not a blind `fetch_add`? It would be wait-free (refused callers racing past the check
//! inflate `count` beyond `cap` only once the epoch is full, so the admitted count is
//! `min(count, cap)`), but it never loses, so no thread ever backs off and the line moves
//! between cores on every call: under contention it runs below a `parking_lot` mutex, whose
//! spinning waiters let its holder make runs of calls. The CAS's backoff after a loss
//! (`sync::RETRY_STEP`) gives the winner those runs, above the mutex at 2 to 8 threads and
//! at the same cost on one thread (`cargo run --release --example compare -- --only
//! sliding_window,fixed_window,allow`; the figures are in the repository's
//! `docs/BENCHMARKS.md`, *Backoff and retry tuning*). What follows is how rollover keeps it
//! exact.
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
//! the old epoch's final count, so the cap it installs is exact. Admissions that land on the
//! old head before the install are counted (the install CAS fails on any change and the
//! helpers retry with the new count).
//!
//! Publication is a CAS from the value the helper observed, attempted only while the claim
//! it is helping still stands. While it stands, the slot holds this epoch's bucket or an older
//! one, so a helper delayed arbitrarily long can never overwrite a newer bucket (the hazard
//! that a monotone `fetch_max` on a wrapping tag would reintroduce at each tag wrap).
//!
//! In steps:
//!
//! 1. **Claim**: a caller whose clock is past the head's epoch records the head's epoch in
//!    the `base` word, then CASes the claim word from the head's epoch to its own, flipping
//!    the install parity. At most one rollover is in progress: a new claim is only made from
//!    a claim whose head is installed.
//! 2. **Publish**: any caller that sees a claim ahead of the head helps: it writes the old
//!    head's admitted count into the old epoch's ring slot (and zero into the slots of the
//!    epochs the jump skipped), each with a CAS from the value it observed, made only while
//!    the claim is still pending, so a late helper can never overwrite a newer bucket.
//! 3. **Install**: the helper computes the new cap, `limit - sum(previous B-1 epochs)`, and
//!    CASes the head from the exact old word it read to the new epoch's word (install
//!    sequence + 1). Exactly one helper succeeds, and it read the final count of the old
//!    epoch.
//!
//! ## Time never moves backwards
//!
//! A caller whose reading is older than the head's epoch uses the head's epoch (it cannot
//! claim backwards: claims only move forward). A reading that overflows the epoch range
//! saturates at 2^62 epochs, where time stands still: that can only refuse more.
//!
//! ## Which calls move time
//!
//! Every request for `n >= 1` permits moves the limiter's time to its reading first,
//! whatever its outcome: admitted, refused, or
//! [`ExceedsLimit`](crate::ExceedsLimit) (more than the limit in
//! force). `n = 0` and `available` move nothing. The specs of the window family (fixed,
//! sliding, approximate) say the same, and the limiters decide every outcome, `ExceedsLimit`
//! included, from a snapshot taken once the window stands at the caller's epoch or later, so
//! the outcome is linearized at that snapshot, where the window already is where the spec
//! moves it. The other rule ("`ExceedsLimit` moves nothing") is not what a lock-free rollover
//! can give: a caller that rolled the window under one limit can find, when it decides, a
//! lower limit set meanwhile by a racing `set_limit`, and then neither order of the two calls
//! explains a moved window and an `ExceedsLimit` (found by an external adversarial checker;
//! `tests/core/exceeds_limit.rs` and the loom models replay it).
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
//! ## Cells and a shared configuration
//!
//! A keyed limiter holds millions of fixed windows under one limit, so a fixed window there
//! is a [`FixedWindowCell`](crate::cell::FixedWindowCell): one 128-bit word `[window: 64 |
//! epoch: 44 | count: 20]` (16 bytes compact), deciding with a
//! [`WindowConfig`](crate::cell::WindowConfig) that all the cells share, whose word is
//! `[epoch: 44 | limit: 20]`. A change of the limit is one CAS on the configuration (a new
//! epoch, unless the limit is unchanged); no cell is touched.
//!
//! - `window` is the number of the window counted (64 bits: no tag, nothing wraps), `count`
//!   the permits admitted in it, `epoch` a label: the configuration epoch the count was last
//!   decided under. A call loads the word, *then* the configuration (SeqCst, as the change).
//!   If the epochs differ, or (for a request of `n >= 1`) the word counts an older window
//!   than the reading's, the call first writes the relabelled (and rolled-over) word in one
//!   CAS, then decides from it under the limit it loaded with that epoch: admit with a CAS
//!   to `count + n`, or refuse after re-loading the word unchanged. Counts are kept across a
//!   change, as the spec keeps them.
//! - **Labels only grow.** A call loads the word before the configuration, and configuration
//!   epochs only grow, so the epoch it writes is at least the cell's: a cell's label never
//!   goes back, and a CAS expecting an older label always fails once any call has relabelled.
//!   (The first design labelled cells with the limit's value; with the limit going `L → L'
//!   → L → L'`, a relabel prepared under the middle `L` could restore, after the last
//!   change, exactly a word a stalled admission had loaded; the loom model
//!   `a_stale_relabel_never_restores_a_word_a_stalled_admission_loaded` builds that
//!   interleaving with three preemptions.)
//! - **Why it is linearizable per cell.** A call that loaded the old configuration loaded its
//!   word before that, so before the change; its CAS succeeds only on the word it loaded,
//!   and every call that saw the new epoch relabelled the cell before deciding, so a late
//!   CAS means no such call touched the cell in between and the stale call takes effect at
//!   its load, before the change. Within one label and window the count only grows and
//!   windows only move forward, so the word never takes a value twice (cells take no
//!   refunds; the 44-bit epoch would have to wrap, 1.7·10^13 changes, while one call stalls).
//! - The clock plays no part in a limit change (the conversion is the identity on counts),
//!   so unlike the bucket family's cells no reading has to be fixed. A cell belongs to the
//!   configuration it was made under (window numbers of two window lengths do not compare).
//! - The cost: one 128-bit CAS per admission (`cmpxchg16b`; 6.5 ns against 3.8 ns for a
//!   64-bit CAS on the AMD EPYC this was measured on), which is why
//!   [`FixedWindow`](crate::FixedWindow) keeps the engine above, with its one 64-bit CAS.
//!
//! ## The sliding-window cell
//!
//! A [`SlidingWindowCell`](crate::cell::SlidingWindowCell) of `B` buckets is a 128-bit head
//! `[epoch: 64 | sealed: 1 | label: 23 | prior: 20 | count: 20]` and a ring of `B` slots
//! `[tag: 44 | count: 20]` (`16 + 8·B` bytes compact, rounded up to 16; the ring is an array
//! of the cell's const parameter, so a keyed map holds the whole cell inline, with no
//! allocation per key). `count` is what the head's bucket admitted, `prior` what the `B - 1`
//! buckets before it admitted (fixed when the head is installed, those buckets being frozen
//! by then): a decision reads the head alone and admits `n` iff `prior + count + n <=
//! limit`. It decides with a [`SlidingConfig`](crate::cell::SlidingConfig): the
//! [`WindowConfig`](crate::cell::WindowConfig) word `[epoch: 44 | limit: 20]` and the bucket
//! width. Labels work as in the fixed-window cell above: a call loads the head, then the
//! configuration, and relabels the head in its own CAS before deciding if the epochs differ.
//! The limit itself comes from the configuration at every decision (a count needs no
//! conversion), so a label only has to tell apart the configurations one stalled call can
//! span: 23 bits, 8.4·10^6 limit changes while one call stalls between its configuration
//! load and its last head CAS (or re-load), the same kind of bound as the engine's 22-bit
//! install sequence. A cell untouched across any number of changes is decided under the
//! limit in force.
//!
//! - **A rollover is the decision's own CAS**, in the common case. A request whose reading
//!   falls in a later bucket `t` than the settled head's `f`, at most `2^44 - B` buckets
//!   later, publishes `f`'s count into slot `f % B` for a near jump (the largest publication
//!   wins; a head that counted nothing publishes nothing), then reads the `B` slots of `t`'s
//!   window once: the buckets it keeps (`t-B+1 ..= f`, none for a far jump) are summed into
//!   the new head's `prior`, and the rest (`f+1 ..= t`, or all `B` for a far jump) must read
//!   as empty for their buckets. They do unless a tag aliases: a slot is only ever written
//!   by a publication of a head's count (or, on the sealed path below, emptied), so the slot
//!   of a bucket the window has not reached yet holds an older bucket, `B` or more behind,
//!   whose tag differs unless the two are a multiple of 2^44 apart. Then one CAS from the
//!   word read installs `t` with the request's own count: it fails if anything admitted,
//!   refunded or moved the head meanwhile, and the request starts again. No other thread
//!   writes the ring for this rollover, and losers' publications of `f` land in `f`'s own
//!   slot, outside `t`'s window but for `f` itself; the jump's bound keeps their tag from
//!   aliasing a bucket of the new window. A kept bucket read after the publication holds
//!   its final count or a larger one (a publication read before a refund), so `prior`
//!   never counts less than was admitted. `SlidingWindowCell::jump_head` has the steps;
//!   the loom models of the cells below race it (a variant that skips the publication fails
//!   three of them), and `tests/core/sliding_cells.rs` jumps by multiples of 2^44 buckets so
//!   that the aliasing check and the sealed path run.
//! - **The sealed rollover**, when a slot aliases or the jump is longer than `2^44 - B`
//!   buckets. The rest of this list is its argument. It has one target, fixed by the head.
//!   A request whose reading falls in a
//!   later bucket `t` than the head's `f` first publishes the head's count into slot `f`
//!   (the largest publication wins), then *seals* the head with one CAS from exactly the word
//!   whose count it published: `sealed` set, and the distance `d = min(t - f, B)` in the
//!   count field. From then on nobody admits in `f`, and every helper (any call that loads
//!   the sealed head) empties the same slots, fixed by the sealed word alone: the buckets
//!   `f+1 ..= f+d` the jump skips and lands on, or all `B` for a far jump (`d = B`), each
//!   written only if its slot reads a count for its bucket (an aliasing tag; any other
//!   content already reads as empty for it). Then one CAS from the
//!   sealed word installs bucket `f + d` with count 0; a far seal carries its target `t` in
//!   the head's `epoch` instead (nothing of `f`'s window survives), and every helper empties
//!   the slots of `t-B+1 ..= t` and installs `t`, whatever its own reading. Without
//!   the seal, helpers reading different clocks emptied the buckets *their* readings skip: a
//!   helper bound for `f + 3` erased bucket `f - B + 3`, which the window of a racing install
//!   of `f + 1` still counts (the loom model `near_and_far_rollovers_racing_agree_with_one_order`
//!   finds that design's over-admission).
//! - **The ring invariant.** While the head is settled at `e`, each bucket `x` in
//!   `e-B+1 ..= e` *reads* from slot `x % B` (through its tag) its final count or more for
//!   `x < e` (a publication read before a refund counts more, never less), 0 if it was never
//!   a head or counted nothing, and nothing for `e` itself; `prior` is at least the sum of
//!   the final counts. By induction over installs, either path: a near install from `f`
//!   published `f`'s count, found or made every skipped bucket's slot and the target's read
//!   as empty, and kept the older buckets of the old window; a far install found or made
//!   all `B` read as empty, and no bucket of its window was ever a head. A slot that reads
//!   as empty for a bucket is not written until that bucket leaves the window or becomes
//!   the head, so the reading holds while the head stands (a writer stalled meanwhile is
//!   the residual below). On the sealed path each helper finishes every write of the
//!   rollover itself (or sees it done) before it sums the new window, so all helpers
//!   install the same `prior`.
//! - **Nobody writes the window while the head stands.** The head's own publication writes
//!   slot `f % B`, which holds bucket `f - B`, outside the window. A helper of an older sealed
//!   head writes a slot only by a CAS from the value it loaded *before* checking that the
//!   head was still that sealed word, so a stalled helper's write succeeds only if the slot
//!   still holds the value it loaded (unchanged since then, barring the residual below), and
//!   then it writes the very value the installer wrote before installing. Admissions and refusals read only the head. A refusal's wait and a snapshot
//!   at a later bucket than the head's read the ring too, then re-load the head unchanged, so
//!   those reads fall while the head stood and see the invariant's window.
//! - **Head words recur only as the same state.** Epochs only grow and labels only grow; within
//!   one epoch and label the count grows with admissions and falls with refunds (a keyed
//!   grant given back), so a head word can come back: an admission from count `c` and its
//!   refund restore the very word `c` was in. A stale CAS from that word then succeeds, and
//!   it decides on exactly the state in force (the same bucket, label, `prior` and count),
//!   so it is linearizable at its CAS. A word of an older epoch or label never comes back,
//!   unless the label wrapped while that call stalled (above).
//! - **Time.** A caller whose reading is behind the head's bucket joins the head's bucket (the
//!   spec's `max(t, newest)`). Every installed bucket is one the sealing caller read, so each
//!   call takes effect at a time the clock could have shown inside it. (A first version sent
//!   a far install to `max(helper's reading, f + B)`, a bucket nobody had read; the loom model
//!   `a_far_install_lands_on_the_sealing_callers_bucket` builds that interleaving.) A request for
//!   `n >= 1` rolls before deciding, so an `ExceedsLimit` moves the window as the spec does.
//! - **Residual: slot tags are 44 bits.** A slot write is a CAS from the value its writer
//!   loaded before checking the head, so it lands on an *equal* value, not only on the same
//!   write. A writer stalled between that check and its CAS while the cell's time moves on by
//!   a multiple of 2^44 buckets (4.9 hours of 1 ns buckets, 203 days of 1 µs ones, 557 years
//!   of 1 ms ones) can find its value again, written for a bucket 2^44 later with the same
//!   count, and overwrite it: that bucket's permits are then lost from later windows. The
//!   engine's ring shares the bound; the interleaving needs a clock jumping a multiple of
//!   2^44 buckets (3·2^44, say) during one stalled call.
//! - **An admission is a CAS on the word read**, as in the engine, whose head carries a cap
//!   fixed when the head was installed or relimited. A cell's limit changes lazily, with no
//!   CAS on the cell, so an add that did not check the word would admit under the old limit.
//! - **Cost**: an admission loads the head and the configuration and CASes the head
//!   (`cmpxchg16b`), as the fixed-window cell does; a rollover adds one slot CAS (a near
//!   jump's publication) and `B` slot loads, the admission's CAS installing the new bucket.
//!   The sealed path adds the seal, the install and a CAS per aliasing slot. (A first version summed the
//!   `B - 1` slots at every decision: 29 ns per admission against 14 with `prior` in the head,
//!   `perf_probe swc`, AMD EPYC; loads after a locked CAS do not overlap the next call.)
//!
//! ## What the hot path costs
//!
//! | operation | atomics |
//! |---|---|
//! | admit one | 2 loads (one line) + 1 CAS (after a loss: backoff, then again) |
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
//! *epoch* tags, which allow a two-rollover ABA; the loom model `fixed_head_tag_aba_over_admits`
//! builds it against the current head.)
//!
//! # The words
//!
//! **Head** (`AtomicU64`), high to low: `[seq: 22 | gen: 1 | cap: 20 | count: 21]`
//! - `seq`: the install sequence number (mod 2^22). Every rollover's install adds 1 and every
//!   `set_limit` adds 2, so the low bit is the *install parity* the claim word is compared
//!   with, and a helper's CAS from a head word it read long ago can only succeed if the
//!   sequence advanced by a multiple of 2^22 meanwhile (installs count 1, `set_limit`s 2:
//!   the ABA bound).
//! - `gen`: which half of the limits word (`[limit for gen 1: 32 | limit for gen 0: 32]`)
//!   `cap` was computed from. A rollover keeps its predecessor's `gen`; `set_limit` writes the
//!   other half and flips `gen` in the same CAS that installs the new cap, so a limit change
//!   takes effect at exactly one CAS on the head.
//! - `cap`: permits this epoch may admit: `limit - (admitted in the previous B-1 epochs)`,
//!   fixed when the epoch is installed (those epochs are frozen by then) and changed only by
//!   `set_limit`.
//! - `count`: admitted in this epoch, at most `cap`: an admission CASes `count + 1` onto the
//!   word in which it saw `count < cap`. (Its 21 bits, one more than `cap`'s, are the
//!   headroom the former `fetch_add` fast path needed for refused callers racing past the
//!   check; the packing is kept.)
//!
//! **Claim** (`AtomicU64`): `[epoch: 63 | parity: 1]`. The full epoch the head has, or is being
//! rolled over to, and the install parity the head will have once it is installed there: the
//! head is *settled* (installed for the claim) iff `head.seq & 1 == parity`.
//!
//! **Slot** (`AtomicU64`, one per ring bucket): `[tag: 44 | count: 20]`, the admitted count of
//! the epoch whose low 44 bits are `tag`. Every epoch from the last far jump on has its slot
//! written (a count, or zero for an epoch skipped or wiped by the jump), so a slot read for
//! an epoch less than B behind the head holds that epoch or one B before it: a tag can never
//! alias a stale bucket.
//!
//! # The wide words: limits up to 2^40 − 1
//!
//! A quota above 2^20 − 1 permits per window ("10 000 000 per hour"), or a builder asking for
//! [`wide`](crate::builder::WindowBuilder::wide) words, builds the same engine over 128-bit
//! words (`cmpxchg16b` on x86_64, through `portable-atomic`): one algorithm, generic over the
//! packing, so every argument above holds word for word; only the field widths change.
//!
//! | word | 64-bit (limits ≤ 2^20 − 1) | 128-bit (limits ≤ 2^40 − 1) |
//! |---|---|---|
//! | head | `[seq: 22 \| gen: 1 \| cap: 20 \| count: 21]` | `[seq: 46 \| gen: 1 \| cap: 40 \| count: 41]` |
//! | slot | `[tag: 44 \| count: 20]` | `[epoch: 64 \| count: 64]` |
//! | limits | `[gen 1: 32 \| gen 0: 32]` | `[gen 1: 64 \| gen 0: 64]` |
//! | claim | `[epoch: 63 \| parity: 1]` | the same |
//!
//! - The fast path's CAS is a `cmpxchg16b`, the same step on a wider word.
//! - The ABA bound grows to 2^46 installs; slots hold whole epochs, so they cannot alias at
//!   all (the far-jump wipe stays, harmless).
//! - The width is fixed at build ([`Window::max_limit`](crate::Window::max_limit)):
//!   `set_limit` past 2^20 − 1 on a window built in 64-bit words is
//!   [`ConfigError::LimitTooLarge`](crate::ConfigError::LimitTooLarge). The 64-bit words
//!   stay the default below 2^20, where the fast path is one 64-bit CAS.
//! - The engine's loom models of admission, rollover and `set_limit` run in both widths
//!   (`loom-tests/tests/models/window.rs` and `window_wide.rs`, on the models of `window_model`);
//!   `wide_refunds_and_shards.rs` adds refunds (racing admissions, a rollover, a lowering `set_limit`)
//!   and a sharded boundary in the wide words. `tests/core/wide_window.rs` checks
//!   the wide words against the spec: traces at small limits, limits past 2^32, and ten
//!   million per hour admitted exactly in lock-step by four threads.
//!
//! # A rollover, on a manual clock
//!
//! Four buckets of 250 ms: the two permits taken at 0 leave the window when their bucket does,
//! and a jump of 2^32 bucket widths (over 34 years) finds a fresh window, not a stale slot.
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
//! let clock = ManualClock::new();
//! let limiter = SlidingWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?.buckets(4)?)
//!     .clock(clock.clone())
//!     .build();
//! assert!(limiter.try_acquire_n(2)?.is_admitted());
//! clock.advance(Duration::from_millis(750)); // three buckets on: still in the window
//! assert!(!limiter.try_acquire());
//! clock.advance(Duration::from_millis(250)); // the first bucket has left
//! assert_eq!(limiter.available(), 2);
//! assert!(limiter.try_acquire_n(2)?.is_admitted());
//! clock.advance(Duration::from_secs(1 << 30)); // 2^32 bucket widths
//! assert_eq!(limiter.available(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! - No over-admission, no spurious refusal, under any interleaving (the contract), except:
//! - ABA: a stale install needs the 22-bit install sequence to advance by a multiple of 2^22
//!   (millions of rollovers or about two million `set_limit` calls) inside one stall between
//!   two adjacent instructions.
//! - Time saturates at 2^62 epochs, where it stands still: that can only refuse more.
