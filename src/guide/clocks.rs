//! # Clocks: time never moves backwards, and clocks that disagree
//!
//! Limiters read a [`Clock`](crate::clock::Clock) in nanoseconds, and do not trust it to be
//! monotonic: the TSC is not always monotonic across cores (quanta #111, governor #299), and
//! golang's x/time/rate minted tokens from a stale reading (golang/go#71360). Each limiter
//! keeps its own notion of time from moving backwards, so a stale reading can only make a
//! decision stricter. Where clocks that *disagree across threads* can still shift a decision,
//! the deviation is bounded and stated below.
//!
//! ## Time never moves backwards
//!
//! - **Windows** ([window engine](super::window)): A caller whose reading is older than the head's epoch uses the head's epoch (it cannot
//!   claim backwards: claims only move forward). A reading that overflows the epoch range
//!   saturates at 2^62 epochs, where time stands still: that can only refuse more.
//! - **Approximate window**: a reading older than the newest window is decided at that
//!   window's first instant (`r = 0`).
//! - **Bucket family** ([bucket](super::bucket)): `time` only grows (except by `cancel` and
//!   reconfiguration): an admission moves it to `max(time, now) + n·T`.
//! - **Sliding log** ([log](super::log)): a call's time is `max(reading, newest timestamp)`.
//! - **Warm-up**: a reading older than the next free time stores nothing.
//! - **Specs** treat a reading older than the newest they acted on as that newest time.
//!
//! A reading behind the limiter's time is refused where the newest time would refuse it:
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter};
//! let clock = ManualClock::new();
//! let limiter = FixedWindow::builder(1, Duration::from_secs(1)).clock(clock.clone()).build()?;
//! clock.set(Duration::from_millis(1_500));
//! assert!(limiter.try_acquire()); // window [1 s, 2 s)
//! clock.set(Duration::from_millis(500)); // the clock runs backwards
//! assert!(!limiter.try_acquire()); // joins [1 s, 2 s), not the past window [0, 1 s)
//! # Ok::<(), ringlimit::ConfigError>(())
//! ```
//!
//! ## Clocks that disagree: what is left
//!
//! - **Bucket family, rate increase.** The order matters: a conversion at a reading older than an admission it converts would
//!   re-rate the time between the two readings at the new rate, minting permits when the rate
//!   rises. An admission reads the clock before its CAS, which is Release; the
//!   reconfiguration's load (or failed CAS) of that word is Acquire and its reading comes
//!   after, so its reading is no older (for the [`ManualClock`](crate::clock::ManualClock), an
//!   atomic, by coherence; for a hardware clock, as far as the clock is monotonic across
//!   cores). Defence in depth for clocks that are not: the conversion takes place at `max(now,
//!   tat - τ)`, which every plain admission's reading reaches (so with a monotonic clock it
//!   changes nothing, except that a queue of reservations more than a burst ahead stands and
//!   the new rate starts where it ends). A reading δ behind the last admission's can then
//!   mint at most `⌈min(δ, τ)·(1/T' - 1/T)⌉` permits (none unless the rate rises; never more
//!   than the new burst).
//! - **Sliding log, helped groups.** A group completed by a helper takes the helper's reading;
//!   if that is older than the leader's, the group's logged time may be one no clock showed,
//!   and a later call whose reading lies between the two may be admitted where no sequential
//!   run with those per-thread readings would admit it. Never over the logged times.
//! - **Saturation.** Readings past the end of a limiter's timeline (2^60 to 2^62 ns, by
//!   limiter) saturate: time stands still there, which can only refuse more.
