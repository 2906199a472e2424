//! # The contract: linearizable with respect to a sequential spec
//!
//! Every limiter is defined first as a plain sequential state machine, its *spec*, and every
//! lock-free limiter is proven against it: whatever the interleaving, its outcomes are the
//! spec's, run in some order. The rest of the guide argues this for each algorithm and states
//! plainly where an argument needs an assumption.
//!
//! Every limiter has a sequential specification in [`crate::spec`]. A lock-free limiter is
//! *linearizable* with respect to it: in any concurrent run, each call takes effect at one
//! instant inside the call, at a time the clock could have shown inside the call, and the
//! outcomes are those of the spec run in that order. Two consequences are checked by the loom
//! models (`loom-tests/`) and the stress tests (`tests/stress.rs`): no interleaving admits
//! more than the spec, and no call is refused that the spec would admit.
//!
//! Wrapped in a mutex, each spec is also the comparison baseline
//! ([`baseline::Locked`](crate::baseline::Locked)).
//!
//! A limiter and its spec, fed the same times, decide the same:
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
//! use ringlimit::spec::{FixedWindowSpec, Spec};
//! let mut spec = FixedWindowSpec::new(1, Duration::from_secs(1))?;
//! let clock = ManualClock::new();
//! let limiter = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(clock.clone()).build();
//! for (ms, expected) in [(0, true), (500, false), (1_000, true), (1_999, false)] {
//!     clock.set(Duration::from_millis(ms));
//!     assert_eq!(spec.decide(ms * 1_000_000, 1)?.is_admitted(), expected);
//!     assert_eq!(limiter.try_acquire(), expected);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Hazards a lock-free limiter must not fall into
//!
//! Each of these makes a counter over-admit or mint permits; each family's page shows how
//! its protocol avoids them, and the naive limiters of the comparison
//! (`cargo run --release --example compare`) show what they cost.
//!
//! - **Check, then add.** Reading the count, deciding, and adding later lets concurrent
//!   callers all pass the same check. Admission and counting must be one atomic step: a CAS
//!   from the word the decision read ([`engines`](super::engines)).
//! - **Reset in place.** Resetting an expired bucket's start and its count in two steps loses
//!   the increments that land between them. The epoch (or its tag) and the count live in one
//!   word, and a rollover is a CAS on that word ([`window`](super::window)).
//! - **Time going backwards.** A reading taken before a lock, or a clock that is not monotonic
//!   across cores, can mint permits. A limiter's time never moves backwards: a caller whose
//!   reading is older than the newest epoch joins the newest ([`clocks`](super::clocks)).
//! - **Stale values on a CAS retry.** Everything a CAS depends on is derived again from the
//!   value the failed CAS observed, never from the first load.
//! - **Wraparound.** A keyed limiter can sit idle for months: a tag that wraps must never make
//!   a stale bucket look current ([`window`](super::window), [`bucket`](super::bucket)).
//! - **Count overflow.** A `fetch_add` that also counts refused calls must not carry into the
//!   next field of its word.
//!
//! # Residuals
//!
//! None at this level: the contract is absolute for over-admission. Where an algorithm cannot
//! reach exactness under every assumption, its page ends with the deviation, bounded and
//! stated (sequence numbers that would have to wrap during one stalled call, clocks that
//! disagree across threads, leased permits of the [sharded window](super::sharded)).
