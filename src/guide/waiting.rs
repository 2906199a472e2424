//! # Waiting: one step, two loops, no lost wake-up
//!
//! Every rate limiter waits through one step,
//! [`RateLimiter::attempt`](crate::RateLimiter::attempt), looped by [`Wait`](crate::Wait):
//! the window family retries after the spec's `retry_after`, the bucket family reserves its
//! place and sleeps once (fair, in reservation order). Deadlines are checked before sleeping.
//! The [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) waits for releases instead, woken
//! through `event-listener`, and the proof below shows no wake-up is lost.
//!
//! Words this page uses in a coined sense (reservation, ticket): [the glossary](super::glossary).
//!
//! Every limiter waits the same way: a loop over one step,
//! [`RateLimiter::attempt`](crate::RateLimiter::attempt), which either grants the permits or
//! says when to ask again. The loops live in one place (`wait.rs`) and serve the blocking
//! waits (`acquire`, `acquire_n`, `try_acquire_for`) and, with the `tokio` feature, the
//! async ones (`until_ready`, `until_n_ready`).
//!
//! * The **window family** grants only permits usable now. A refusal carries the spec's
//!   `retry_after`, the earliest time the request could succeed if nobody else takes
//!   permits meanwhile; the wait sleeps that long and asks again. Waiters race each other
//!   on every retry, so window waits are not fair, but nothing is held while sleeping:
//!   dropping an async wait takes nothing.
//! * The **bucket family** ([`Reserve`](crate::Reserve)) schedules instead of refusing: a
//!   reservation moves the limiter's time word forward and tells the caller when its
//!   permits may be used. Each caller's time is fixed when it reserves, so waiters are
//!   served in reservation order, and a wait is one CAS plus one sleep. A dropped async
//!   wait cancels its reservation, which gives back whatever later reservations have not
//!   already been scheduled behind (golang's rule), so cancelling never lets a newcomer
//!   jump the queue.
//!
//! Deadlines are checked *before* sleeping: `try_acquire_for(n, timeout)` returns
//! [`WaitError::Timeout`](crate::WaitError::Timeout) at once when the earliest possible
//! time is already beyond the timeout, instead of sleeping the timeout first.
//!
//! **One boundary rule.** Permits that become available exactly at the deadline are
//! reachable in time: every family waits for them and takes them at the deadline (a window
//! sleeps until then and asks once more; a bucket reserves a time at most the timeout
//! away), and so do the policy waits (`Policy::check_within`, `until_checked`). A
//! nanosecond later is a
//! timeout at once. With no time left nothing is slept: a zero timeout is one attempt. A
//! request
//! larger than the limiter can ever grant is
//! [`ExceedsLimit`](crate::ExceedsLimit) at once, never a
//! wait for ever.
//!
//! Blocking waits sleep on the limiter's clock ([`Clock::sleep`](crate::clock::Clock::sleep)):
//! a [`ManualClock`](crate::clock::ManualClock) moves itself forward instead of blocking,
//! so tests of waits are instant and exact. Async waits sleep on tokio's timer;
//! [`TokioClock`](crate::clock) (feature `tokio`) lets tokio's paused test clock drive the
//! limiter too.
//!
//! # Concurrency waits: no lost wake-up
//!
//! A wait takes the permits if it can; otherwise it registers in the waiters word, and then
//! loops: listen, re-check, sleep until notified. A release (or a limit change) reads the
//! waiters word after its own write, and notifies only if someone is registered, so the
//! release fast path pays one load when nobody waits.
//!
//! **No lost wake-up.** A waiter registers (a `SeqCst` RMW of the waiters word) before its
//! re-check, and its re-check reads the count in the same order (`SeqCst`); a release writes
//! the count (`SeqCst` RMW) before it reads the waiters word (`SeqCst`). All four are in the
//! single total order of `SeqCst` operations, so either the release sees the registration and
//! notifies, or the re-check sees the release and takes the permits (Dekker's pattern). A
//! notification cannot slip in before the listener exists either: the listener is inserted
//! (under `event-listener`'s lock) before the re-check, and the notification takes that
//! lock after the release; had it come first, the re-check would have seen the release.
//!
//! **Who is woken.** A release of `k` permits wakes `k` more listeners when every waiter
//! wants one permit: each either takes one or finds it taken by a caller that did not wait,
//! whose own release wakes again. When some waiter wants several permits, a release wakes
//! them all: `k` single-permit wake-ups could land on waiters that the released permits do
//! not satisfy while others that they would satisfy sleep on. A limit change wakes everyone
//! too, so waits that now exceed the limit end with [`ExceedsLimit`](crate::ExceedsLimit).
//!
//! # A wait, on a manual clock
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, Wait, WindowQuota};
//! let clock = ManualClock::new();
//! let limiter = SlidingWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?.buckets(1)?)
//!     .clock(clock.clone())
//!     .build();
//! assert_eq!(limiter.acquire(), Duration::ZERO);
//! assert_eq!(limiter.acquire(), Duration::from_secs(1)); // slept on the manual clock
//! // The deadline is checked before sleeping: this returns at once.
//! assert!(limiter.try_acquire_for(1, Duration::from_millis(10)).is_err());
//! // The next permit frees exactly at the deadline: waited for, taken there.
//! assert_eq!(limiter.try_acquire_for(1, Duration::from_secs(1))?, Duration::from_secs(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! Window-family waits are not fair (waiters race on every retry); bucket-family waits are
//! served in reservation order; concurrency waits are not FIFO (a caller that does not wait
//! may take a released permit before a woken waiter re-checks). No wait sleeps past a
//! deadline it could already see it would miss, and no request larger than the limiter can
//! ever grant waits at all.
