//! # Warm-up (Guava's `SmoothWarmingUp`): a cell, a shared configuration and a clock
//!
//! [`WarmUp`](crate::WarmUp) is a [`WarmUpCell`](crate::cell::WarmUpCell) (its state, one
//! 128-bit word), a [`WarmUpConfig`](crate::cell::WarmUpConfig) (rate, warm-up period, cold
//! factor, per-call bound, origin) and a clock. The cell, the limiter and
//! [`WarmUpSpec`](crate::spec::WarmUpSpec) hold one state and run one pure transition
//! (`curve`: Guava's resync and trapezoid pricing, in nanoseconds), so they decide alike to
//! the nanosecond; `tests/core/warm_up_exact.rs` compares all three on random histories with
//! reconfigurations, grants, refunds, reservations and out-of-order readings.
//!
//! Words this page uses in a coined sense (cooled, next free time, label, epoch, kept): [the glossary](super::glossary).
//!
//! ## The state: stored permits as nanoseconds of cooling
//!
//! Guava's state is `nextFreeTicket` and `storedPermits` (a `double`). Here the stored
//! permits are kept as the idle time that stored them, in whole ns:
//! `cooled = stored × cool_down = stored × W / max`, in `0 ..= W` (`W <= 2^58`). A fresh
//! limiter is cold: `cooled = W` (`stored = max`), `next_free = 0`.
//!
//! **The word** (`AtomicU128`, 16 bytes compact, a cache line padded), high to low
//! `[next_free: 61 | label: 8 | cooled: 59]`:
//! - `next_free`: Guava's `nextFreeTicket`, ns since the configuration's origin (the clock's
//!   reading when it was made, so a Unix-epoch clock works). At most `MAX_NEXT_FREE` =
//!   2^61 - 1 (73 years); a reservation that would schedule past it is not made. Readings
//!   saturate at `MAX_NOW` = 2^60 (time then stands still), so a caller may act no later
//!   than that: a `next_free` past it is busy for ever (`retry_after` is `Duration::MAX`),
//!   and no reservation is made for such a moment (the clock, read past 2^60 while the
//!   limiter's time stands still, would let it go at once).
//! - `label`: the epoch of the configuration the cell was last decided under, mod 256.
//! - `cooled`: the stored permits as cooling, above.
//!
//! A [`Ticket`](crate::outcome::Ticket)'s mark holds `[next_free after the grant: 64 | cooled before
//! it: 64]`, and the ticket the configuration's 64-bit epoch.
//!
//! ## How a decision works
//!
//! A call loads the word (Acquire), *then* the configuration in force; if the word's label
//! is not that epoch mod 256, it writes the same state with the new label in its own CAS and
//! starts over. Then it runs the transition: resync (`cooled = min(W, cooled + (now -
//! next_free))` when `now > next_free`, no rate in it), admit iff `next_free <= now`, and
//! price the permits on the curve from `stored = cooled / cool_down`: the stored permits
//! spent first, then fresh ones at `T`. The spent cooling goes, the rest's rounded *up* to a
//! whole ns: `cooled' = min(cooled, ceil((stored - spent) × cool_down))`, 0 when all are
//! spent. An admission is one CAS from the labelled word; a refusal, an `ExceedsLimit`,
//! `available` and `stored_permits` are confirmed by re-loading the word unchanged. A failed
//! CAS retries from the word it saw, with the same clock reading (a time inside the call).
//!
//! **The cold shortcut.** A limiter called below its stable rate finds itself free and cold
//! on nearly every call (`cooled = W` after the resync, `max` permits stored). From there
//! one permit's price does not depend on the state: `stored = max` whatever `cooled >= W`
//! is, and the cooling left is `min(cooled, up)` for one `up`. So each configuration
//! computes that price once, with the general code (`Config::full_one`), and the cell's
//! `try_acquire` takes it instead of the curve's `f64` arithmetic (`Config::decide_one`):
//! the same bits, not an approximation. The spec keeps the general path, so
//! `tests/core/warm_up_exact.rs` checks the shortcut against it, as does a unit test over
//! periods, warm-ups, cold factors and ends.
//!
//! **Why rounding up only lengthens waits.** Taking `k` permits with `s` stored costs the
//! integral of the interval `I(x)` over the stored permits it spends, plus `T` per fresh
//! permit, where `I(x) = T` below the threshold and rises linearly above it, so `I` is
//! nondecreasing and `I >= T`. As a function of `s`, `∫_{s-k}^{s} I` (for `s >= k`) has
//! derivative `I(s) - I(s - k) >= 0`, and `∫_0^s I + (k - s) T` (for `s < k`) has derivative
//! `I(s) - T >= 0`: the wait is nondecreasing in `s`. Against Guava's `double` state the
//! rounding keeps up to `1 / cool_down` permits more per admission (Guava also truncates
//! each part of a wait to whole ns, as this does); since the spec rounds the same way, the
//! limiter and the spec never differ. One permit thus spends `floor(cool_down)` ns of
//! cooling rather than `cool_down`, so the warm-up can take up to `cool_down /
//! floor(cool_down)` times as long as Guava's: 0.1% at a `cool_down` of 1 µs (a period of
//! about 1 µs), up to twice as long near 1 ns. A curve with `cool_down` below 1 ns (a period
//! of 1 ns and a cold factor below 3) would never warm up, and is refused
//! ([`ConfigError::CoolDownBelowOneNanosecond`](crate::ConfigError::CoolDownBelowOneNanosecond)).
//!
//! ## Reconfiguration: nothing to convert
//!
//! The configuration keeps `W` and the cold factor (only `set_rate` and `set_limit` exist),
//! and `cool_down = W / max`. Guava's `setRate` does two things to the stored permits, and
//! both are the identity on `cooled`:
//! - *resync* under the old rate at the change's time `r`: `stored += (r - next_free) /
//!   cool_down`, capped at `max`, is `cooled = min(W, cooled + (r - next_free))`, no rate in
//!   it; and two resyncs compose, `min(W, min(W, c + (r - f)) + (t - r)) = min(W, c + (t -
//!   f))`, so resyncing at the change and again at the next access `t` is one resync at `t`;
//! - *rescale*: `stored' = stored × new max / old max`, that is `cooled' / W = cooled / W`.
//!
//! So a cell untouched across any number of changes is already in the state Guava would have
//! brought it to, and the reading of a change does not matter (the spec's `set_rate` ignores
//! it). `next_free` is untouched by `setRate` in Guava too. The configuration is published
//! consistently (it is seven numbers): a ring of four slots, each stamped with its epoch and
//! read between two stamp loads (a seqlock, as `BucketConfig`'s), and an `AtomicU64` epoch
//! stored `SeqCst` after the slot; reconfigurations serialize on a lock, decisions never
//! take it.
//!
//! **Why it is linearizable per cell: the relabel.** Nothing is converted, but a call
//! decided under the old configuration must not land after a call that saw the new one. As
//! in the window cells ([`window`](crate::guide::window#cells-and-a-shared-configuration)): a
//! call that loaded the old epoch loaded its word before the change's `SeqCst` store; every
//! call that loaded the new epoch changed the word (a relabel) before deciding, so if the
//! stale call's CAS (or confirmation) still finds its word, no such call has touched the
//! cell, and the stale call takes effect just before the change.
//!
//! ## Refunds and cancellation
//!
//! A grant (or reservation) is refunded by one CAS from the word it left to the word before
//! it (its `next_free` back to the grant's moment, its cooling back to what it found), made
//! only while the configuration it was decided under is in force: the ticket carries the
//! 64-bit epoch, checked against the configuration loaded before the CAS. No lock: a change
//! that comes between that load and the CAS leaves a cell that every later call relabels
//! first, so the CAS lands only if no call has seen the cell under the new configuration,
//! and the refund takes effect just before the change. What a refund restores: the state
//! as if the grant had never been made, whether or not its time has come (a refund is the
//! holder's word that the permits were not used); nothing once anything else has touched
//! the cell, or once the configuration changed (dropped, which can only under-admit). The
//! loom models `cancel_racing_set_rate`, `cancel_racing_set_limits` and
//! `cancel_racing_set_rate_and_a_relabelling_try` check it against the spec.
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
//! ## Keyed and shared use
//!
//! Many cells can share one [`WarmUpConfig`](crate::cell::WarmUpConfig): each picks up a
//! change on its next access, exactly, however many it missed.
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::cell::{WarmUpCell, WarmUpConfig};
//! use ringlimit::clock::ManualClock;
//! use ringlimit::{Rate, WarmUpQuota};
//! use ringlimit::cell::Compact;
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
//! **Eviction.** A cell is indistinguishable from a fresh one once it is free and its
//! cooling is back to `W`, from `next_free + (W - cooled)` on, for readings no earlier than
//! that: a fresh cell (free from 0) would admit a reading older than the cell's `next_free`,
//! where the cell refuses it. (No keyed family of warm-up cells exists yet; one would drop
//! a key only at readings past that time, as the bucket family does.)
//!
//! ```
//! use std::time::Duration;
//! use ringlimit::cell::{WarmUpCell, WarmUpConfig};
//! use ringlimit::clock::ManualClock;
//! use ringlimit::{Rate, WarmUpQuota};
//! use ringlimit::cell::Compact;
//! let clock = ManualClock::new();
//! let config = WarmUpConfig::new(WarmUpQuota::new(Rate::per_second(2)?, Duration::from_secs(4))?, &clock);
//! let cell = WarmUpCell::<Compact>::new(&config);
//! assert!(cell.try_acquire_n(&config, &clock, 8)?.is_admitted()); // all 8 stored permits
//! // 6 s to pay for them, then 4 s of idle time to store them all again: cold once more.
//! clock.advance(Duration::from_secs(10));
//! assert_eq!(cell.stored_permits(&config, &clock), 8.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Bounds, stated plainly
//!
//! One residual (label wrap): the label is the epoch mod 256, so a call stalled between its
//! load of the configuration and its CAS while 256 (or a multiple) reconfigurations run,
//! whose cell comes back meanwhile bit for bit to the word it loaded, lands a decision made
//! under a configuration no longer in force. (A cell untouched across 256 changes is not at
//! risk: its state needs no conversion.) Refunds check the 64-bit epoch and share the
//! residual only through the same stalled-call window. The bounds on spans and schedules
//! (the schedule ends at 2^61 ns) are on [`WarmUp`](crate::WarmUp).
