//! # The exact sliding log: a ring of timestamps indexed by sequence number
//!
//! [`SlidingLog`](crate::SlidingLog) admits `n` permits at `t` iff at most `limit - n` were
//! admitted in `(t - window, t]`, exactly. Every admitted permit owns a sequence number and
//! its expiry lives in ring slot `seq mod C`; because timestamps never decrease along
//! sequence numbers, one slot read decides. Claims are CASes on slots, groups (`n >= 2`) are
//! reserved in one CAS and completed by whoever reaches them, and a limit change is stamped
//! into the head's free slot. What remains (wraparound after 2^44 admissions inside one
//! stalled call, clocks that disagree across threads) is listed at the end.
//!
//! Words this page uses in a coined sense (head, seq, lap, stamp, label, settle, help): [the glossary](super::glossary).
//!
//! ## How it works
//!
//! Every admitted permit gets a *sequence number* (seq) `k`, and its entry, the expiry
//! `t + window` of its timestamp `t`, lives in ring slot `k mod C`. Timestamps are
//! nondecreasing along seqs (a call's time is `max(clock reading, newest timestamp)`), so
//! the in-window entries are always the newest ones, and *`n` more permits fit at `t` iff
//! seq `k + n - 1 - limit` has expired at `t`*: one slot read decides, whatever the history.
//!
//! The head word holds the next seq. One permit at clock reading `t`:
//! 1. read the head (seq `k`), then slot `k`, then the head again (unchanged, or start
//!    over: otherwise slot `k` could already hold a next-lap entry). If slot `k` is already
//!    claimed (its entry's
//!    lap parity is `k`'s) the head lags: move it on and retry. A group reservation or a
//!    relabel under way is helped the same way.
//! 2. `t' = max(t, timestamp of seq k-1)`; read the expiry of seq `k - limit`.
//! 3. Expired: CAS slot `k` from the value read in step 1 to `(t' + window, parity)`. That
//!    CAS is the admission; then CAS the head `k -> k+1` (failure means a helper did it).
//!    Not expired: re-read slot `k`; unchanged means no one claimed `k` meanwhile, so the
//!    refusal is linearized at that read. `retry_after` is the time until seq
//!    `k + n - 1 - limit` expires, exactly the spec's.
//!
//! **Why it never over-admits.** A claim of seq `k` replaces the entry of seq `k - C`,
//! older than every seq a decision reads (`C > limit`), and succeeds only if slot `k` is
//! unchanged since step 1, where it was read while the head stood at `k`, so the reads
//! describe the log exactly. An entry replaced is one that had expired at a time `<= t'`, and times only
//! grow along seqs, so no in-window entry is ever lost. Each slot's expiry strictly grows
//! from one occupant to the next (and group and stamp words carry their lap), so no CAS
//! can succeed on a recycled value (ABA).
//!
//! **Groups (`n >= 2`).** Claiming `n` slots one by one is not atomic, so a group is
//! *reserved* in one CAS: slot `k` gets `Group { lap, n }` (checked exactly like a single
//! claim, against seq `k + n - 1 - limit`). From then on, everyone who reaches seq `k`
//! completes the group before doing anything else: the first to fill seq `k + 1` fixes the
//! group's time (the leader's own, or a helper's clock reading taken after it saw the
//! reservation), the rest of the seqs are filled with it, and the head jumps to `k + n`.
//! The group is linearized when its time is fixed; no one else can claim a seq in between,
//! so it is all-or-nothing with no partial claims and no spurious refusals. The group's
//! first slot keeps the size; its expiry is read from the second.
//!
//! **Limit changes: relabels.** The limit lives in a [`LogConfig`](crate::cell::LogConfig),
//! which one log owns or many [`SlidingLogCell`](crate::cell::SlidingLogCell)s share: a
//! setting word `[label | limit | prior]` whose label counts the changes. The head carries
//! the label of the setting the log is decided under. A call that finds the setting's
//! label differ from the head's *relabels* before deciding anything: it *stamps* the free
//! slot of the head seq with the new label (a new value that means no permit), then switches
//! the head's label. The stamp is the linearization point of the change for this log: a
//! claim decided under the old limit CASes slot `k` from the value it read before the stamp,
//! so it fails and retries under the new one; a call that reads the stamp but a head still
//! carrying the old label finishes the switch first. Decisions read only the last
//! `limit <= max_limit < C` seqs, so the slot a claim or a stamp overwrites is never one a
//! decision needs: that is why the ring is sized by `max_limit`.
//!
//! ## The words
//!
//! **Head** (`AtomicU64`), high to low: `[seq: 44 | label: 20]`
//! - `seq`: the admission sequence number the next claim takes, modulo 2^44. Every admitted
//!   permit owns one seq; seq `k` lives in ring slot `k mod C` (C, the ring length, is a
//!   power of two, so the modulus survives the wrap of `seq`). The head may lag one claimed
//!   seq (or one reserved group) behind; whoever sees that helps it forward, after a short
//!   backoff that gives the claimer the time to move it itself (helping at once made every
//!   admission race the claimer's own CAS on the head: under contention the log then ran at
//!   about half a mutex's rate; with the backoff, above it).
//! - `label`: the label (a count of limit changes, modulo 2^20) of the configuration's
//!   setting the log was last relabelled with; the limit in force is that setting's.
//!
//! **Slot** (`AtomicU64`, one per ring position), one of three forms told apart by the low
//! bits:
//! - `Entry`: `[expiry: 62 | parity: 1 | 0]`, an admitted permit: its timestamp plus the
//!   window, and the parity of its lap (`seq / C`), which tells seq `k`'s entry from seq
//!   `k - C`'s, the only other one the slot can hold while the head is at `k`.
//! - `Group`: `[lap: 42 | n: 20 | 0 | 1]`, the first seq of an admitted group of `n >= 2`
//!   permits. The group's common expiry is in the entry of its second seq.
//! - `Stamp`: `[lap: 42 | label: 20 | 1 | 1]`, written over the head seq's free slot by a
//!   relabel: the free slot's value changes, so every claim decided under the old limit
//!   fails its CAS. A stamp never means a permit.
//!
//! Entry expiries grow strictly from one occupant of a slot to the next (an entry replaces
//! one that had expired at its own timestamp, and the window is at least 1 ns), groups and
//! stamps carry their lap, and stamps their label (labels only move forward: a relabeller
//! loads the setting after the head, so never an older one than the head's): so a slot never
//! shows the same word twice within 2^44 admissions and 2^20 limit changes, which is what
//! makes every CAS on a slot ABA-free.
//!
//! ## The sliding-log cell
//!
//! [`SlidingLogCell`](crate::cell::SlidingLogCell) is the head and the ring alone (24 bytes
//! and `8·C` of ring compact); [`SlidingLog`](crate::SlidingLog) is one cell, its own
//! [`LogConfig`](crate::cell::LogConfig) and a clock, so both run the protocol above. What
//! sharing one configuration among many cells adds:
//!
//! - **Lazy, linearizable per cell.** [`LogConfig::set_limit`](crate::cell::LogConfig::set_limit)
//!   touches no cell (one `SeqCst` update of the setting word). Each cell takes the change at
//!   its own relabel, on its next access. A call loads the head, then its slot, then the
//!   setting (`SeqCst`): if it loaded the old setting, it is decided under the old label,
//!   and its claim or refusal is confirmed on a slot no relabel has stamped yet, so it took
//!   effect before the change did for this cell. A call that starts after `set_limit`
//!   returned loads the new setting and relabels first. `SlidingLog::set_limit` relabels its
//!   cell before returning, so the change is in force when it returns, as before.
//! - **Nothing to convert.** A log's entries mean the same under any limit: the limit is
//!   read fresh from the setting at every decision and only decides how many of the newest
//!   entries count. So the label needs no history: a cell untouched across any number of
//!   changes, even a multiple of 2^20 that brings its own label round again, decides under
//!   the limit in force (a test runs 2^20 + 3 changes past an idle cell).
//! - **Groups across changes.** A group reserved under label `L` blocks relabels until it is
//!   complete (a relabel needs the head seq's slot free), but the shared setting can move on
//!   meanwhile. The leader completes its group with the limit it decided under; a helper
//!   needs that limit only for the guard against backwards clocks in fixing the group's time
//!   (`max(reading, newest before k, expiry of seq k + n - 1 - limit)`), and finds it in the
//!   setting's `limit` (label `L`) or `prior` (label `L + 1`). After two changes more it uses
//!   the ring's capacity, the largest limit any of its configurations can have: the weakest
//!   guard (the expiry of an older seq), which had passed at the leader's time, so the group
//!   is never stamped later than the leader could have stamped it. A smaller stand-in would
//!   be wrong: its guard can lie in the future, and a group stamped there moves the log's
//!   time forward, past entries still in the window (with `n` as the stand-in, 6 permits
//!   admitted within one window of limit 5; the loom model
//!   `a_group_helped_after_two_changes_never_lets_a_later_call_over_admit` builds it). What
//!   the capacity gives up is the guard's full reach for a helper whose clock reads earlier
//!   than the leader's, and only after two changes during one group.
//! - **A cell belongs to its configuration.** Its ring is sized by that configuration's
//!   `max_limit`; under a configuration with a larger one it decides with its own capacity
//!   `C - 1` at most (refusing more, never counting past its ring).
//! - **Concurrent changes.** `LogConfig::set_limit` takes no lock: two changes racing are
//!   ordered by the setting word, and a cell relabelled straight to the later label took
//!   both at once.
//!
//! ## Memory per permit
//!
//! The log is exact because it keeps every admission of the window: one 8-byte slot per
//! permit. The ring has `C = max(4, 2^⌈log2(max_limit + 1)⌉)` slots (a power of two, so a
//! sequence number maps to its slot with a mask, and above the limit, so the slot a claim
//! overwrites is never one a decision reads), so a log of limit `L` costs `8 · C` bytes,
//! between `8 · (L + 1)` and `16 · L`:
//!
//! | limit `L` | slots `C` | ring |
//! |---|---|---|
//! | 100 | 128 | 1 KiB |
//! | 1 000 | 1 024 | 8 KiB |
//! | 100 000 | 131 072 | 1 MiB |
//! | 2^20 − 1 ([`SlidingLog::MAX_LIMIT`](crate::SlidingLog::MAX_LIMIT)) | 2^20 | 8 MiB |
//! | 10 000 000 (not accepted) | 2^24 | 128 MiB |
//!
//! A 10-million-per-hour log is not sensible: 128 MiB for one limiter (per key, in a keyed
//! map), and every admission writes a slot of a ring far larger than any cache, so each is a
//! cache miss. Its exactness buys little at that scale: a bucketed
//! [`SlidingWindow`](crate::SlidingWindow) of `B` buckets costs 8 bytes per bucket whatever
//! the limit, and is exact to one bucket width (`window / B`).
//!
//! ## A window that slides, on a manual clock
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, RateLimiter, SlidingLog, WindowQuota};
//! let clock = ManualClock::new();
//! let limiter = SlidingLog::with_clock(WindowQuota::per(2, Duration::from_secs(1))?, clock.clone())?;
//! assert!(limiter.try_acquire());
//! clock.advance(Duration::from_millis(600));
//! assert!(limiter.try_acquire());
//! assert!(!limiter.try_acquire());
//! clock.advance(Duration::from_millis(400)); // the first permit leaves the window
//! assert!(limiter.try_acquire());
//! assert!(!limiter.try_acquire()); // the second is still in (0.6 s, 1.6 s]
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
//!
//! # Deviations and assumptions (all documented, none over-admits)
//!
//! - **Wraparound.** Seqs are counted modulo 2^44 and limit changes modulo 2^20. A thread
//!   suspended inside one call while 2^44 (1.7e13) permits are admitted, or 2^20 limit
//!   changes made, could see a recycled word; nothing shorter can.
//! - **Backwards clocks and helped groups.** A group completed by a helper takes the
//!   helper's reading (with the guard of the limit it was reserved under; after two limit
//!   changes during the group, the weaker guard of the ring's capacity, as above). With a clock that only moves forward that reading is one the clock
//!   showed during the leader's call, and the result is exact. If the helper's reading is
//!   older than the leader's (a clock moving backwards across threads), the group's time is
//!   raised to the earliest time at which it fits, which is at most the leader's: never
//!   over-admits the logged times, but the logged time may be one no clock showed, and a
//!   later call whose reading lies between the two may then be admitted where no
//!   sequential run with those per-thread readings would admit it (it
//!   needs clocks that disagree across threads).
//! - **`remaining` of a helped group.** The leader computes `remaining` at its own time.
//!   When a helper fixed a later time, entries that expired in between are still counted:
//!   the reported `remaining` can differ from the spec's at the group's logged time (lower;
//!   higher with a backwards helper clock as above): a snapshot, never an admission
//!   decision.
//! - **Time** saturates at 2^61 ns (73 years after the clock's origin), as in the spec.
