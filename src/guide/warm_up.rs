//! # Warm-up (Guava's `SmoothWarmingUp`) on one 128-bit word
//!
//! [`WarmUp`](crate::WarmUp) needs two values (Guava's `nextFreeTicket` and `storedPermits`),
//! so its state is one 128-bit word `[next_free: 61 | gen: 3 | stored: f64]`
//! (`portable_atomic::AtomicU128`: `cmpxchg16b` on x86_64), with the bucket family's protocol:
//! one load and one CAS per grant, eight configuration slots for `set_rate`, and the same pure
//! transition (Guava's resync and trapezoid pricing, in nanoseconds) shared with
//! [`WarmUpSpec`](crate::spec::WarmUpSpec). A grant (or reservation) can be refunded only while nothing
//! has touched the state since it: the state then goes back exactly to what it was.
//!
//! ## How a decision works
//!
//! The whole state, Guava's `nextFreeTicket` and `storedPermits`, is one `AtomicU128`
//! `[next_free: 61 | gen: 3 | stored: f64]` (layout in `word`). A call loads it, loads the
//! configuration slot of its `gen`, and runs the same pure transition as the spec
//! (`curve`): resync, check the next free time against the caller's reading, and price
//! the permits on the warm-up curve. A grant is one CAS from the exact word read to the new
//! state; a refusal writes nothing. A failed CAS retries from the word it saw, with the same
//! clock reading (a time inside the call).
//!
//! ## How reconfiguration stays linearizable
//!
//! `set_rate` and `set_limit` run under an admin lock. Each writes the new configuration
//! into the slot of the next generation, which no current word refers to, and then installs
//! it with a CAS that moves the word to that generation (`set_rate` also resyncs and scales
//! the stored permits, as Guava's `doSetRate`). The CAS is the instant the new configuration
//! takes effect: a decision pairs the word it read with the slot of that word's `gen`, and
//! its own CAS fails if any reconfiguration came in between.
//!
//! ## How refunds (and cancellation) stay linearizable
//!
//! The 3-bit `gen` wraps, and `set_limit` (or `set_rate` behind a queue, where 0.0 stored
//! permits scale to 0.0) leaves the other bits alone, so after 8 reconfigurations the word
//! can be bit for bit what a reservation left. The word alone therefore cannot tell a
//! cancel that nothing came after the reservation. Each slot also holds its configuration's
//! `epoch`, the number of reconfigurations before it; a reservation copies it into its
//! [`Ticket`](crate::Ticket), and a cancel goes through only if the slot of the ticket's `gen` still holds
//! that epoch *and* the word is still what the reservation left. A cancel that may succeed
//! (its lock-free first look finds that word) makes both checks and its CAS under the admin
//! lock, so no reconfiguration can come between them: there is no ABA window.
//!
//! ## The curve
//!
//! The arithmetic is Guava's, in nanoseconds instead of microseconds: stable interval `T`,
//! cold interval `C = T × cold_factor`, warm-up `W`;
//! `threshold = 0.5 W / T`, `max = threshold + 2 W / (T + C)`,
//! `slope = (C - T) / (max - threshold)`, `cool_down = W / max`. The interval between
//! permits is `T` while at most `threshold` permits are stored and climbs linearly to `C`
//! at `max`; taking stored permits costs the integral of that interval over them.
//!
//! A configuration whose warm-up part `max - threshold` rounds away next to `threshold`
//! (cold factors around 2^54 and above) is refused: its slope would be infinite and the
//! warm-up lost ([`ConfigError::ColdFactorTooLarge`](crate::ConfigError::ColdFactorTooLarge)).
//!
//! ## The word
//!
//! **State** (`AtomicU128`), high to low: `[next_free: 61 | gen: 3 | stored: 64]`
//! - `next_free`: Guava's `nextFreeTicket`, in ns on the limiter's clock: the time the next
//!   request may go. At most `MAX_NEXT_FREE` = 2^61 - 1 (73 years); a reservation that
//!   would schedule past it is not made.
//! - `gen`: the configuration generation (mod 8). Every `set_rate` and `set_limit` writes the
//!   new configuration into slot `gen + 1` and installs it with one CAS that moves the word to
//!   `gen + 1`, so a decision pairs the word it read with the configuration of that word's
//!   `gen` and its CAS fails if the configuration changed (the ABA bound is in
//!   [`WarmUp`](crate::WarmUp)'s rustdoc). Cancels do not trust `gen` alone, which wraps
//!   after 8 reconfigurations: tickets also carry the configuration's epoch.
//! - `stored`: the stored permits, the bits of a non-negative `f64` (Guava keeps them as a
//!   `double`; so does the spec, so both compute the same bits).
//!
//! A [`Ticket`](crate::Ticket)'s mark uses the same layout for what a cancel needs:
//! `[next_free after the reservation | gen | stored before it]`.
//!
//! ## Cold start, on a manual clock
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::{clock::ManualClock, Rate, RateLimiter, Wait, WarmUp, WarmUpQuota};
//! let clock = ManualClock::new();
//! let limiter = WarmUp::builder(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?)
//!     .clock(clock.clone())
//!     .build();
//! // Cold: the interval starts at 3 × 0.5 s and falls to 0.5 s over the warm-up.
//! let waits: Vec<u128> = (0..6).map(|_| limiter.acquire().as_millis()).collect();
//! assert_eq!(waits, [0, 1375, 1125, 875, 625, 500]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! One residual (ABA): a call can be decided under a configuration not in force only if 8
//! `set_rate`/`set_limit` calls run between its word load and its slot loads (a few
//! instructions) and its CAS then finds the word bit for bit what it loaded; cancels do not
//! share it. The full statement, and the bounds on spans and schedules (the schedule ends at
//! 2^61 ns), are on [`WarmUp`](crate::WarmUp).
