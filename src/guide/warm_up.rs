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
//! ## The warm-up cell
//!
//! A keyed limiter holds one warm-up state per key, so the family also has a clockless
//! [`WarmUpCell`](crate::cell::WarmUpCell) deciding with a
//! [`WarmUpConfig`](crate::cell::WarmUpConfig) that all cells share (DESIGN.md §8). The
//! cell decides exactly as `WarmUp`'s `try_acquire_n` (admit iff `next_free <= now`, the
//! cost charged to the next caller); it has no reservations or refunds.
//!
//! **The word** (`AtomicU128`, 16 bytes compact, a cache line padded), high to low
//! `[next_free: 61 | label: 8 | cooled: 59]`:
//! - `next_free`: Guava's `nextFreeTicket`, ns since the configuration's origin (the clock's
//!   reading when it was made, so a Unix-epoch clock works, as for `WarmUp`).
//! - `label`: the epoch of the configuration the cell was last decided under, mod 256.
//! - `cooled`: the stored permits as the idle time that stored them, in whole ns:
//!   `cooled = stored × cool_down = stored × W / max`, in `0 ..= W` (`W <= 2^58`). A fresh
//!   cell is cold: `cooled = W` (`stored = max`), `next_free = 0`.
//!
//! **Why a rate change converts nothing.** The configuration keeps the warm-up period `W`
//! and the cold factor (only `set_rate` and `set_limit` exist), and `cool_down = W / max`.
//! Guava's `setRate` does two things to the stored permits, and both are configuration-free
//! on `cooled`:
//! - *resync* under the old rate at the change's time `r`: `stored += (r - next_free) /
//!   cool_down`, capped at `max`, is `cooled = min(W, cooled + (r - next_free))` — no rate
//!   in it; and two resyncs compose, `min(W, min(W, c + (r - f)) + (t - r)) = min(W, c + (t -
//!   f))`, so resyncing at the change and again at the next access `t` is one resync at `t`;
//! - *rescale*: `stored' = stored × new max / old max`, that is `cooled' / W = cooled / W`:
//!   the identity.
//!
//! So a cell untouched across any number of changes is already in the state Guava would have
//! brought it to: the next access reads `stored = cooled / cool_down` under the curve in
//! force. `next_free` is untouched by `setRate` in Guava too. The configuration still has to
//! be published consistently (it is six numbers): a ring of four slots, each stamped with
//! its epoch and read between two stamp loads (a seqlock, as `BucketConfig`'s), and an
//! `AtomicU64` epoch stored `SeqCst` after the slot; reconfigurations serialize on a lock.
//!
//! **Why it is linearizable per cell: the relabel.** The clock plays no part in a change,
//! and nothing is converted, but a call decided under the old configuration must not land
//! after a call that saw the new one. As in the window cells
//! ([`window`](crate::guide::window#cells-and-a-shared-configuration)): a call loads the
//! word (Acquire), *then* the configuration; if the word's label is not the loaded epoch
//! mod 256, it writes the same state with the new label in its own CAS and starts over.
//! Only then does it decide (an admission is one CAS from the labelled word; a refusal, an
//! `ExceedsLimit`, `available` and `stored_permits` are confirmed by re-loading the word
//! unchanged). A call that loaded the old epoch loaded its word before the change's
//! `SeqCst` store; every call that loaded the new epoch changed the word (a relabel) before
//! deciding, so if the stale call's CAS (or confirmation) still finds its word, no such call
//! has touched the cell, and the stale call takes effect just before the change. Within one
//! label the word is the state, so a repeated word decides the same way.
//!
//! **Rounding, and why it only lengthens waits.** An admission spends `stored` permits as
//! `Config::decide` does in `f64`, and writes back `cooled' = ceil(stored' × cool_down)`,
//! capped at `W`: at most 1 ns of cooling (`1 / cool_down` permits) more than the exact
//! value, where `WarmUp` keeps the `f64`. (For `W <= 2^53` ns, 104 days, every cooling is
//! exact in `f64`; above, the product's own rounding, relative 2^-53, adds to that.) More
//! stored permits only make a request wait longer: taking `k` permits with `s` stored costs
//! the integral of the interval `I(x)` over the stored permits it spends, plus `T` per
//! fresh permit, where `I(x) = T` below the threshold and rises linearly (slope `(C - T) /
//! (max - threshold) >= 0`) above it, so `I` is nondecreasing and `I >= T`. As a function of
//! `s`, the cost `∫_{s-k}^{s} I` (for `s >= k`) has derivative `I(s) - I(s - k) >= 0`, and
//! `∫_0^s I + (k - s) T` (for `s < k`) has derivative `I(s) - T >= 0`: the wait is
//! nondecreasing in `s`, and the extra cooling pushes `next_free` later by at most `C /
//! cool_down = c/2 + 2c/(1 + c) < c/2 + 2` ns per admission (cold factor `c`). Admission
//! itself depends on `next_free` alone, so this never lets a call in earlier from the same
//! state. Two limits to the claim, stated plainly: Guava truncates each part of a wait to
//! whole ns (the part above the threshold, below it, and the fresh permits), so the
//! *truncated* wait can fall by up to 2 ns where the exact one rises (the rounding can cost
//! at most that); and the claim is per decision — across a history, a later `next_free` also
//! resyncs less cooling, so the cell and `WarmUp` are not ordered step by step; they stay
//! within these per-decision bounds of each other. On Guava's examples (values exact in
//! `f64`) they agree to the ns, and the tests compare the cell with a sequential model of
//! exactly its arithmetic.
//!
//! **Residual: the label wraps.** The label is the epoch mod 256. A call that loads the
//! configuration and then stalls while 256 (or a multiple) reconfigurations run, and whose
//! cell was not touched meanwhile, finds its label current again and decides under a
//! configuration that is no longer in force; its CAS still needs the word bit for bit what
//! it loaded. The same kind of bound as the sliding-window cell's 23-bit label. A cell
//! untouched across 256 changes is not at risk: its state needs no conversion, so deciding
//! it under the curve in force is right whatever its label says.
//!
//! **Eviction.** A cell is indistinguishable from a fresh one (for readings no earlier than
//! the last) once it is free and its cooling is back to `W`: from `next_free + (W -
//! cooled)` on.
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::cell::{WarmUpCell, WarmUpConfig};
//! use ringlimit::clock::ManualClock;
//! use ringlimit::{Compact, Rate, WarmUpQuota};
//! let clock = ManualClock::new();
//! let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
//! let cell = WarmUpCell::<Compact>::new(&config);
//! assert!(cell.try_acquire_n(&config, &clock, 3)?.is_admitted());
//! assert_eq!(cell.stored_permits(&config, &clock), 5.0);
//! for _ in 0..1000 {
//!     config.set_rate(Rate::per_second(3)?)?; // the cell is not touched
//! }
//! config.set_rate(Rate::per_second(4)?)?;
//! // 5 of max 8 is 10 of max 16: Guava's rescaling, with nothing converted.
//! assert_eq!(cell.stored_permits(&config, &clock), 10.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! One residual (ABA): a call can be decided under a configuration not in force only if 8
//! `set_rate`/`set_limit` calls run between its word load and its slot loads (a few
//! instructions) and its CAS then finds the word bit for bit what it loaded; cancels do not
//! share it. The full statement, and the bounds on spans and schedules (the schedule ends at
//! 2^61 ns), are on [`WarmUp`](crate::WarmUp). The cell's residual is its 8-bit label (256
//! reconfigurations while one call stalls), and its departure the rounding of stored permits
//! up to whole ns of cooling (above).
