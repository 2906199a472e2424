//! # The approximate sliding window: two counters, one cache line
//!
//! [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) keeps the spec's two counters (`prev`,
//! `cur`) in one head word beside a full-width claim and the limits: O(1) memory whatever the
//! limit. An admission is one CAS of the head (not a `fetch_add`, which would make later
//! callers refuse spuriously); a rollover is a claim CAS and one install CAS; a re-load of the
//! claim ties the head to the window it was read for. The one residual is an ABA on the
//! 23-bit install sequence, stated on the type and at the end of this page.
//!
//! Words this page uses in a coined sense (head, claim, install, seq, gen, label): [the glossary](super::glossary).
//!
//! ## How a decision works
//!
//! The state is three words on one cache line (layouts in `word`): the full-width
//! **claim** (the window index the limiter is in, or is rolling over to), the **head**
//! `[seq | gen | prev | cur]` of that window, and the **limits** (`gen` picks the half in
//! force). A decision loads the claim, the head and the limits, re-loads the claim, computes
//! the spec's estimate at the caller's position `r`, and then:
//! - admits with one CAS of the head from the exact word it read to `cur + n`, so the
//!   check and the count are one atomic step (a `fetch_add` would let refused callers
//!   inflate `cur` and make later callers with a larger `r` refuse spuriously);
//! - refuses with the loads alone, after re-loading the head's install sequence: unchanged,
//!   it proves no `set_limit` came between the head and the limits loads.
//!
//! The claim re-load is what ties the head to the claim. A head whose install parity matches
//! the claim's is that claim's own head *or one two or more rollovers newer* (the head has no
//! window index to tell them apart), and a newer one would be mis-weighed at the caller's
//! stale position. Any newer head was installed by a helper that had read the newer claim
//! first; the head load (Acquire) makes that claim visible, so the re-load would see it.
//! Unchanged, the claim proves the head was its own when loaded: the decision's state.
//!
//! ## How a rollover works (claim, install)
//!
//! A caller whose reading is in a later window CASes the claim from a settled view (head
//! installed for the claim) to its own window, flipping the claim's `parity` and setting
//! `near` when it is exactly the next window. Anyone who then sees a claim ahead of its head
//! helps install it: it re-checks the claim and CASes the head from the exact predecessor
//! word it read to the new window's first head (install sequence + 1, so the parity flips;
//! `prev = old cur` if `near`, else 0; `cur = 0`; same `gen`). Exactly one helper succeeds,
//! and it read the predecessor's final count.
//!
//! ## Why a stale word never looks current
//!
//! A caller compares its own reading with the *full-width* claim: an idle limiter whose head
//! is decades old still holds the claim of its last window, so the first caller after a jump
//! of 2^32 or 2^40 windows sees the claim behind and rolls over. The head's install sequence
//! (23 bits) makes every head CAS (install, admission, `set_limit`) fail if the head changed
//! at all since it was read, unless it went through a multiple of 2^23 sequence steps and
//! came back to the same counters (see the type's rustdoc). Under the first design, a 14-bit
//! window tag took the sequence's place: a jump of exactly 2^14 windows recreated a head
//! word, and one preempted install helper then overwrote the newer window (loom model
//! `install_aba_across_a_far_jump_cannot_over_admit`).
//!
//! ## How `set_limit` works
//!
//! Under an admin lock, `set_limit` writes the new limit into the inactive half of the
//! limits word, then flips `gen` and adds 2 to the install sequence in one CAS on the head,
//! keeping the counters (and the parity: a rollover in progress is unaffected, and its
//! install keeps the new `gen`). It computes nothing from the window, so unlike the window
//! engine's it has no reads to re-validate against the claim. A decision pairs the head it
//! read with the limit of the head's `gen`: an admission through its CAS (which fails if the
//! head changed), a refusal or a snapshot by re-reading the install sequence after the limits
//! word; so each decision is made wholly under one limit.
//!
//! ## Cells and a shared configuration
//!
//! For keyed limiters, an [`ApproxWindowCell`](crate::cell::ApproxWindowCell) holds the
//! whole state in one 128-bit word `[window: 62 | label: 26 | prev: 20 | cur: 20]` (16
//! bytes compact) and decides with the [`WindowConfig`](crate::cell::WindowConfig) the
//! fixed-window cells use, `[epoch: 44 | limit: 20]`, shared by all cells. The protocol is
//! the fixed-window cell's ([its proof](super::window#cells-and-a-shared-configuration)): a
//! call loads the word, then the configuration; it builds the spec's own snapshot at its
//! reading (the same `Snapshot::at`, so `prev` and `cur` shift or vanish exactly as the
//! spec's do, and an older reading joins the newest window); if the label is not the
//! configuration's epoch (modulo 2^26), or a request for `n >= 1` finds the snapshot moved
//! the window, it writes the relabelled, rolled-over word in its own CAS first; then it
//! admits with a CAS of `cur`, or refuses after re-loading the word unchanged. Labels only
//! grow (modulo 2^26: a call would have to stall across a multiple of 2^26 limit changes to
//! see an old label recur), so a call still deciding under an older limit fails its CAS.
//! One 128-bit CAS per admission, where [`ApproxSlidingWindow`](crate::ApproxSlidingWindow)
//! keeps its 64-bit word.
//!
//! ## The words
//!
//! **Head** (`AtomicU64`), high to low: `[seq: 23 | gen: 1 | prev: 20 | cur: 20]`
//! - `prev`, `cur`: the spec's two counters for the head's window: permits admitted in the
//!   window before it (frozen when the head was installed) and in this one. Admissions only
//!   ever CAS `cur` up by `n` after checking the limit, so `cur <= limit <= MAX_LIMIT` and
//!   nothing ever carries out of a field.
//! - `seq`: the install sequence number (mod 2^23). Every install (rollover) adds 1 and every
//!   `set_limit` adds 2, so its low bit is the *install parity*, compared with the claim's:
//!   the head is installed for the claim iff they match. Every head CAS compares the whole
//!   word, so a CAS from a word read earlier can only succeed if the head went through a
//!   multiple of 2^23 sequence steps meanwhile (the ABA bound; see the type's rustdoc). The
//!   head carries no window index: the claim has it, full width.
//! - `gen`: which half of the limits word holds the limit in force. A rollover keeps its
//!   predecessor's `gen`; `set_limit` writes the other half and then flips `gen` (and adds 2
//!   to `seq`) with one CAS on the head, so a limit change takes effect at exactly one step of
//!   the head.
//!
//! **Claim** (`AtomicU64`): `[epoch: 62 | parity: 1 | near: 1]`. The full window index the
//! head has, or is being rolled over to. It only grows, so it never repeats and never
//! aliases. `parity` flips with every claim (it is the parity the head's `seq` has once the
//! claim is installed); `near` is set when the claim is exactly one window past the head it
//! replaces (the new head's `prev` is then the old `cur`; otherwise both counters start at
//! zero).
//!
//! **Limits** (`AtomicU64`): `[limit for gen 1: 32 | limit for gen 0: 32]`.
//!
//! ## The estimate, on a manual clock
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, ApproxSlidingWindow, RateLimiter, WindowQuota};
//! let clock = ManualClock::new();
//! let limiter = ApproxSlidingWindow::with_clock(WindowQuota::per(10, Duration::from_secs(1))?, clock.clone())?;
//! assert!(limiter.try_acquire_n(10)?.is_admitted());
//! // 1.25 s: 75% of the previous window's 10 permits still count.
//! clock.advance(Duration::from_millis(1250));
//! assert_eq!(limiter.available(), 3);
//! // A jump of 2^32 windows: the full-width claim sees it, no tag aliases.
//! clock.advance(Duration::from_secs(1 << 32));
//! assert_eq!(limiter.available(), 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! The estimate is exact only for uniform arrivals in the previous window (the spec's
//! approximation, not the implementation's). The implementation's one residual: a stale head
//! word can pass for the current one only if the 23-bit install sequence advanced by a
//! multiple of 2^23 (8 388 608 rollovers, or 4 194 304 `set_limit` calls, or a mix) while its
//! thread stalled between two adjacent steps, and the counters came back to the same values;
//! see [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) for the full statement.
