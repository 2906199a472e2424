//! The bucket family's engine: GCRA (the token bucket, the leaky bucket as a meter) and
//! the leaky bucket as a shaper share one scheduling word.
//!
//! # The state
//!
//! One `AtomicU64` `[time: 61 | gen: 3]` (layout in [`word`]) and eight configuration
//! slots `(period T, span, limit)` indexed by `gen`. A meter's `time` is the theoretical
//! arrival time `tat`, a shaper's is `next`; both in nanoseconds since the limiter's origin,
//! its clock's first reading (a reading below the origin counts as the origin).
//!
//! # A decision: one load, one CAS
//!
//! A caller reads the clock once, loads the word (Acquire), reads the slot its `gen` names,
//! and computes the spec's transition ([`spec`], the same functions the sequential specs
//! call, so the two agree bit for bit). To admit it CASes the word from the exact value it
//! read to the new time, same `gen`; on failure it re-derives everything from the value the
//! CAS observed, keeping its clock reading. A refusal writes nothing: it re-loads the word
//! and returns only if it is unchanged, so the refusal held at the first load under the
//! configuration it read.
//!
//! # Reconfiguration
//!
//! `set_rate`, `set_burst`, `set_limit` and `set_max_wait` serialize on an admin lock, load
//! the word, *then* read the clock, write the new configuration into slot `gen + 1` (mod 8),
//! and CAS the word to (converted time, `gen + 1`); if an admission came between, they
//! re-read the clock (keeping the latest reading) and recompute the converted time from the
//! observed word. The change takes effect at that one CAS: every admission before it CASed
//! a word with the old `gen` (decided under the old slot), every one after it reads the new
//! word and slot. The meter's conversion keeps the permits available at the reading
//! (golang's `SetLimitAt`/`SetBurstAt`), rounded so a change never mints a permit; a
//! shaper's schedule stands.
//!
//! The order matters: a conversion at a reading older than an admission it converts would
//! re-rate the time between the two readings at the new rate, minting permits when the rate
//! rises. An admission reads the clock before its CAS, which is Release; the
//! reconfiguration's load (or failed CAS) of that word is Acquire and its reading comes
//! after, so its reading is no older (for the [`ManualClock`](crate::clock::ManualClock), an
//! atomic, by coherence; for a hardware clock, as far as the clock is monotonic across
//! cores). Defence in depth for clocks that are not: the conversion takes place at `max(now,
//! tat - τ)`, which every plain admission's reading reaches (so with a monotonic clock it
//! changes nothing, except that a queue of reservations more than a burst ahead stands and
//! the new rate starts where it ends). A reading δ behind the last admission's can then
//! mint at most `⌈min(δ, τ)·(1/T' - 1/T)⌉` permits (none unless the rate rises; never more
//! than the new burst).
//!
//! # Time, overflow and the end of the word
//!
//! `time` never decreases except by `cancel` and reconfiguration: an admission moves it to
//! `max(time, now) + n·T`, so a stale reading only makes a decision stricter. A schedule that
//! would pass [`MAX_TIME`](word::MAX_TIME) (73 years after the origin), or `u64::MAX` on the
//! clock, is refused (`retry_after = Duration::MAX`, nothing available) or times out: it
//! never wraps. The transition's arithmetic is checked (`n·T` and the sum refuse as past the
//! end on overflow), so even a configuration read torn (the ABA residual: one slot's limit
//! with another's period) can neither panic nor wrap.
//!
//! # The ABA residual
//!
//! The three fields of a slot are loaded one by one and confirmed only through the word. A
//! caller stalled between its load of the word and its CAS (or confirming re-load) across a
//! multiple of eight reconfigurations that left `time` exactly where it was can decide one
//! call under a mix of the fields of the two configurations that slot held (a
//! configuration never in force). A per-slot stamp (seqlock) would close it at two more
//! loads and a fence on every decision; the window is a few instructions against eight
//! lock-serialized reconfigurations, so the residual is stated instead.

/// Implements [`RateLimiter`](crate::RateLimiter), [`Reserve`](crate::Reserve), the
/// crate-private `Schedule` and `Debug` for a bucket type with fields `engine: Engine<L>` and
/// `clock: C`.
macro_rules! bucket_limiter {
    ($name:ident) => {
        impl<C: $crate::clock::Clock, L: $crate::Layout> $crate::RateLimiter for $name<C, L> {
            #[inline]
            fn try_acquire(&self) -> bool {
                // An unlimited bucket's flag is read only once the engine refused.
                self.engine.try_acquire(self.clock.now_nanos()) || self.unlimited
            }

            fn try_acquire_n(&self, n: u64) -> Result<$crate::Decision, $crate::ExceedsLimit> {
                if self.unlimited {
                    return Ok($crate::Decision::Admitted {
                        remaining: u64::MAX,
                    });
                }
                self.engine.decide(self.clock.now_nanos(), n)
            }

            fn available(&self) -> u64 {
                if self.unlimited {
                    return u64::MAX;
                }
                self.engine.available(self.clock.now_nanos())
            }

            fn set_limit(&self, limit: u64) -> Result<(), $crate::ConfigError> {
                if self.unlimited {
                    return Err($crate::ConfigError::Unlimited);
                }
                self.engine.reconfigure(&self.clock, |config, cap| {
                    let cap = match config.mode {
                        $crate::bucket::spec::Mode::Meter => cap,
                        $crate::bucket::spec::Mode::Shaper => limit,
                    };
                    Ok((config.limited(limit)?, cap))
                })
            }

            fn limit(&self) -> u64 {
                if self.unlimited {
                    return u64::MAX;
                }
                self.engine.config().limit
            }

            fn clock(&self) -> &dyn $crate::clock::Clock {
                &self.clock
            }

            fn attempt(
                &self,
                n: u64,
                max_wait: std::time::Duration,
            ) -> Result<$crate::Attempt<'_>, $crate::WaitError> {
                $crate::Reserve::reserve_within(self, n, max_wait).map($crate::Attempt::Granted)
            }
        }

        impl<C: $crate::clock::Clock, L: $crate::Layout> $crate::Reserve for $name<C, L> {
            fn reserve_within(
                &self,
                n: u64,
                max_wait: std::time::Duration,
            ) -> Result<$crate::Reservation<'_>, $crate::WaitError> {
                let now = self.clock.now_nanos();
                if self.unlimited {
                    return Ok($crate::Reservation::immediate(
                        &self.clock,
                        $crate::Ticket::immediate(n, now),
                    ));
                }
                let ticket = self.engine.attempt(now, n, max_wait)?;
                Ok($crate::Reservation::scheduled(self, ticket))
            }
        }

        impl<C: $crate::clock::Clock, L: $crate::Layout> $crate::limiter::Schedule for $name<C, L> {
            fn schedule_clock(&self) -> &dyn $crate::clock::Clock {
                &self.clock
            }

            fn cancel(&self, ticket: &$crate::Ticket) {
                self.engine.cancel(self.clock.now_nanos(), ticket);
            }
        }

        impl<C, L: $crate::Layout> std::fmt::Debug for $name<C, L> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("engine", &self.engine)
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use bucket_limiter;
