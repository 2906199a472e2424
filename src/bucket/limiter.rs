//! The bucket family's shared limiter code: GCRA (token bucket, leaky meter) and the shaper on
//! one scheduling word. The state, decisions, reconfiguration order, time and overflow and the
//! ABA residual: [the guide](crate::guide::bucket).

/// Implements [`RateLimiter`](crate::RateLimiter), [`Reserve`](crate::Reserve), the
/// crate-private `Schedule` and `Debug` for a bucket type with fields `engine: Engine<L>` and
/// `clock: C`.
macro_rules! bucket_limiter {
    ($name:ident) => {
        impl<C: $crate::clock::Clock, L: $crate::cell::Layout> $crate::RateLimiter for $name<C, L> {
            // Always inlined, with the engine's hot path: with `#[inline]` alone LLVM kept
            // it out of a caller's loop (a call and a return per attempt) once the speculative
            // slot read made it longer.
            #[inline(always)]
            fn try_acquire(&self) -> bool {
                // An unlimited bucket's flag is read only once the engine refused.
                self.engine.try_acquire(self.clock.now_nanos()) || self.unlimited
            }

            fn try_acquire_n(
                &self,
                n: u64,
            ) -> Result<$crate::outcome::Decision, $crate::ExceedsLimit> {
                if self.unlimited {
                    return Ok($crate::outcome::Decision::Admitted {
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

            fn try_grant(
                &self,
                n: u64,
            ) -> Result<$crate::outcome::Admission, $crate::ExceedsLimit> {
                if self.unlimited {
                    // Nothing was counted, so there is nothing a refund could give back.
                    let now = self.clock.now_nanos();
                    return Ok($crate::outcome::Admission::Granted(
                        $crate::outcome::Grant::new(
                            $crate::outcome::Ticket::immediate(n, now),
                            u64::MAX,
                        ),
                    ));
                }
                self.engine.grant(self.clock.now_nanos(), n)
            }

            fn refund(&self, grant: $crate::outcome::Grant) -> u64 {
                if !grant.is_from(self.engine.owner()) {
                    return 0;
                }
                self.engine.refund(&self.clock, grant.ticket())
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
            ) -> Result<$crate::limiter::Attempt<'_>, $crate::WaitError> {
                $crate::Reserve::reserve_within(self, n, max_wait)
                    .map($crate::limiter::Attempt::Granted)
            }
        }

        impl<C: $crate::clock::Clock, L: $crate::cell::Layout> $crate::Reserve for $name<C, L> {
            fn reserve_within(
                &self,
                n: u64,
                max_wait: std::time::Duration,
            ) -> Result<$crate::outcome::Reservation<'_>, $crate::WaitError> {
                let now = self.clock.now_nanos();
                if self.unlimited {
                    return Ok($crate::outcome::Reservation::immediate(
                        &self.clock,
                        $crate::outcome::Ticket::immediate(n, now),
                    ));
                }
                let ticket = self.engine.attempt(now, n, max_wait)?;
                Ok($crate::outcome::Reservation::scheduled(self, ticket))
            }
        }

        impl<C: $crate::clock::Clock, L: $crate::cell::Layout> $crate::limiter::Schedule
            for $name<C, L>
        {
            fn schedule_clock(&self) -> &dyn $crate::clock::Clock {
                &self.clock
            }

            fn owner(&self) -> $crate::limiter::Owner {
                self.engine.owner()
            }

            fn refund(&self, ticket: &$crate::outcome::Ticket) -> u64 {
                self.engine.refund(&self.clock, ticket)
            }
        }

        impl<C, L: $crate::cell::Layout> std::fmt::Debug for $name<C, L> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("engine", &self.engine)
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use bucket_limiter;
