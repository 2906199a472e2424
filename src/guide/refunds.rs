//! Refunds: giving back what a grant took, for all-or-nothing admission across limiters.
//!
//! A policy over several dimensions (per user, per IP, global) admits on each limiter in
//! turn and gives back what the earlier ones granted when a later one refuses. The grant is
//! the handle for that: one CAS restores it while its bucket or schedule is current; after
//! that it is dropped, which can only under-admit.
//!
//! Words this page uses in a coined sense (grant, ticket, owner, current): [the glossary](super::glossary).
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
//! use ringlimit::outcome::Admission;
//! let clock = ManualClock::new();
//! let user = SlidingWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?.buckets(1)?).clock(clock.clone()).build();
//! let Admission::Granted(grant) = user.try_grant(1)? else { unreachable!() };
//! assert_eq!(user.available(), 1);
//! // A later dimension refused: give the permit back.
//! assert_eq!(user.refund(grant), 1);
//! assert_eq!(user.available(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//!
//! [`RateLimiter::try_grant`](crate::RateLimiter::try_grant) returns a
//! [`Grant`](crate::outcome::Grant) that [`RateLimiter::refund`](crate::RateLimiter::refund) takes
//! back by value: neither `Copy` nor `Clone`, so a double refund does not compile. A
//! reservation's [`cancel`](crate::outcome::Reservation::cancel) is the same refund of the grant it
//! holds. A refund is one CAS while the grant's epoch (windows) or schedule (buckets) is
//! current; afterwards it restores nothing (the permits are dropped: under-admission only).
//! The sequential specs' [`Spec::refund`](crate::spec::Spec::refund) define exactly what
//! each restores, and the mutex baselines refund exactly as their spec does.
//!
//! Two rules hold for every limiter, checked before anything else:
//!
//! - **A grant refunded to a limiter that did not make it restores nothing.** Each limiter
//!   (mutex baselines included) takes a process-unique id when it is made and stamps it on
//!   its grants and reservations; a refund of a grant with another id is 0. (Without it, a
//!   window's grant refunded to a full twin let the twin admit twice its limit.)
//! - **A grant from a wait is not refundable,** unless it is a bucket-family reservation.
//!   The window family's waits grant at once with `Ticket::immediate`,
//!   whose mark no limiter accepts, so its cancel and the refund of its grant restore 0, in
//!   the lock-free types and the baselines alike. Take permits meant to be given back with
//!   `try_grant`.
//!
//! What each limiter restores of its own grants:
//!
//! | limiter | a refund of `n` restores |
//! |---|---|
//! | [`SlidingWindow`](crate::SlidingWindow) | `min(n, admitted in the head bucket)` iff the grant's bucket is still the head and the caller's clock is still in it; a later bucket: 0 (past buckets are frozen) |
//! | [`FixedWindow`](crate::FixedWindow) | the same, for the current window |
//! | [`ShardedWindow`](crate::ShardedWindow) | its grants come from the shared window (not a shard), so the same, to the shared window |
//! | [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) | `min(n, cur)` while the grant's window is the current one; once it is `prev`, 0 |
//! | [`TokenBucket`](crate::TokenBucket), [`LeakyBucket`](crate::LeakyBucket) (meter and shaper) | `min(n·T - (time - mark), mark - now)`: the part no later admission or reservation has been scheduled behind (golang's amount), bounded by the part of the grant still ahead of the clock; 0 after a reconfiguration; reported in whole permits |
//! | [`WarmUp`](crate::WarmUp) | all `n` iff nothing touched the state since the grant (no admission, reservation, refund or reconfiguration); else 0 |
//! | [`SlidingLog`](crate::SlidingLog), [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) | 0 (the log's slots are timestamps, not counts; a concurrency permit is released by dropping it) |
//!
//! **Windows.** The head is `{cap, count}`, admitted `= min(count, cap)` (since the fast path
//! admits by a CAS on the word it read, `count` never exceeds `cap`; the `min` is kept as a
//! guard). A refund CASes it to `{count: admitted - k, cap: max(floor,
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
//! **Buckets.** The grant's mark is the time its admission moved the state to, and its
//! ticket carries the configuration epoch it was made under. A refund at `now` moves the
//! state's time back by `restore = min(n·T - (time - mark), mark - now)` (0 when negative):
//!
//! - `n·T - (time - mark)` is golang's amount: what later admissions and reservations were
//!   scheduled behind the grant stays taken.
//! - `mark - now` keeps `time' >= now + (time - mark)`: time the bucket has already refilled
//!   is never given back a second time. Without it, a grant of 5 at t = 0 on a bucket of 10
//!   at 1/s, one admission at t = 3 and the refund would let 10 more through at t = 3 (11
//!   at one instant). With it the refund restores 2, exactly as if the grant had never
//!   been made. Before a reservation's time to act the first term is the smaller, so
//!   golang's behaviour is kept; a refund after the time to act still restores what is
//!   ahead of the clock (a refund is the holder's word that the permits were not used), and
//!   nothing once the clock has passed the mark.
//! - The engine reads `now` after loading the state word and again on each CAS retry, so it
//!   is never older than the reading of an admission already in the word.
//!
//! **A refund after a reconfiguration restores nothing.** `set_rate`, `set_burst`,
//! `set_capacity`, `set_max_wait` and `set_limit` convert the state's time into the new
//! configuration's frame; a mark of the old frame says nothing about the new one (compared
//! with it, a grant of 1000 followed by `set_burst(10)` was refunded 15 permits). Each of
//! the engine's eight configuration slots keeps the configuration's epoch (a 64-bit count
//! of reconfigurations, which the word's 3-bit generation is not: it wraps after eight),
//! and a grant from another epoch restores 0, which only under-admits.
//!
