//! The sequential specification of the concurrency limiter, its test oracle: the rule of
//! [`in_flight`](super::in_flight) on a plain state.

use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::spec::Spec;
use crate::limiter::Decision;
use crate::validate;

use super::in_flight::{available, decide, Verdict};
use super::word::{State, MAX_LIMIT};

/// An in-flight limit C (Sentinel's thread-count grade): acquire `n` iff
/// `in_flight + n <= C`; a release gives `n` back.
///
/// - `n > C` is [`ExceedsLimit`]: no release could ever make room for it.
/// - `n = 0` is admitted without effect.
/// - A refusal's `retry_after` is [`Duration::ZERO`]: a release may come at any moment, and
///   only a release (or a raised limit) can make room, never the passing of time.
/// - [`set_limit`](Spec::set_limit) below `in_flight` admits nothing until enough permits are
///   released; the permits already out stay valid and are released as usual.
/// - The time arguments of the [`Spec`] methods are ignored: nothing here depends on time.
///
/// Under a mutex with an RAII permit API this is
/// [`LockedConcurrencyLimiter`](crate::baseline::LockedConcurrencyLimiter). (The generic
/// [`Locked`](crate::baseline::Locked) wrapper also accepts it, but as a [`RateLimiter`](crate::RateLimiter)
/// it has no way to release, so every admission would count for ever.)
///
/// ```
/// use ringlimit::spec::{ConcurrencySpec, Spec};
/// let mut spec = ConcurrencySpec::new(2)?;
/// assert!(spec.decide(0, 2)?.is_admitted());
/// assert!(!spec.decide(0, 1)?.is_admitted());
/// spec.release(1);
/// assert_eq!(spec.in_flight(), 1);
/// assert!(spec.decide(0, 1)?.is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcurrencySpec {
    state: State,
}

impl ConcurrencySpec {
    /// At most `limit` permits in flight: `1 <= limit <= u32::MAX`, else a [`ConfigError`].
    ///
    /// ```
    /// use ringlimit::{spec::{ConcurrencySpec, Spec}, ConfigError};
    /// assert_eq!(ConcurrencySpec::new(8)?.limit(), 8);
    /// assert_eq!(ConcurrencySpec::new(0), Err(ConfigError::ZeroLimit));
    /// assert!(ConcurrencySpec::new(1 << 32).is_err());
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(limit: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            state: State::new(validate::limit(limit, MAX_LIMIT)?),
        })
    }

    /// Gives back `n` permits. Releasing more than are in flight (which the permit types never
    /// do) empties the count rather than wrapping.
    ///
    /// ```
    /// use ringlimit::spec::{ConcurrencySpec, Spec};
    /// let mut spec = ConcurrencySpec::new(3)?;
    /// spec.decide(0, 3)?;
    /// spec.release(2);
    /// assert_eq!(spec.available(0), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&mut self, n: u64) {
        self.state.in_flight = self.state.in_flight.saturating_sub(n);
    }

    /// Permits handed out and not yet released.
    ///
    /// ```
    /// use ringlimit::spec::{ConcurrencySpec, Spec};
    /// let mut spec = ConcurrencySpec::new(3)?;
    /// spec.decide(0, 2)?;
    /// assert_eq!(spec.in_flight(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight(&self) -> u64 {
        self.state.in_flight
    }
}

impl Spec for ConcurrencySpec {
    fn decide(&mut self, _now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        Ok(match decide(self.state, n)? {
            Verdict::Admit { next, remaining } => {
                self.state = next;
                Decision::Admitted { remaining }
            }
            Verdict::Refuse { available } => Decision::Refused {
                available,
                retry_after: Duration::ZERO,
            },
        })
    }

    fn available(&self, _now: u64) -> u64 {
        available(self.state)
    }

    fn set_limit(&mut self, _now: u64, limit: u64) -> Result<(), ConfigError> {
        self.state.limit = validate::limit(limit, MAX_LIMIT)?;
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.state.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_follow_the_table() {
        let mut spec = ConcurrencySpec::new(3).unwrap();
        assert_eq!(spec.decide(0, 0), Ok(Decision::Admitted { remaining: 3 }));
        assert_eq!(spec.decide(0, 2), Ok(Decision::Admitted { remaining: 1 }));
        assert_eq!(
            spec.decide(0, 2),
            Ok(Decision::Refused {
                available: 1,
                retry_after: Duration::ZERO
            })
        );
        assert_eq!(
            spec.decide(0, 4),
            Err(ExceedsLimit {
                requested: 4,
                limit: 3
            })
        );
        assert_eq!(spec.decide(0, 1), Ok(Decision::Admitted { remaining: 0 }));
        assert_eq!(spec.in_flight(), 3);
    }

    #[test]
    fn lowering_the_limit_keeps_permits_out_and_admits_nothing_until_released() {
        let mut spec = ConcurrencySpec::new(4).unwrap();
        spec.decide(0, 4).unwrap();
        spec.set_limit(0, 2).unwrap();
        assert_eq!(spec.available(0), 0);
        assert_eq!(spec.in_flight(), 4);
        spec.release(2);
        assert!(!spec.decide(0, 1).unwrap().is_admitted());
        spec.release(1);
        assert_eq!(spec.decide(0, 1), Ok(Decision::Admitted { remaining: 0 }));
        spec.set_limit(0, 5).unwrap();
        assert_eq!(spec.available(0), 3);
    }

    #[test]
    fn configuration_and_absurd_values_are_errors_not_panics() {
        assert_eq!(ConcurrencySpec::new(0), Err(ConfigError::ZeroLimit));
        assert_eq!(
            ConcurrencySpec::new(u64::MAX),
            Err(ConfigError::LimitTooLarge {
                limit: u64::MAX,
                max: MAX_LIMIT
            })
        );
        let mut spec = ConcurrencySpec::new(MAX_LIMIT).unwrap();
        assert!(spec.decide(0, MAX_LIMIT).unwrap().is_admitted());
        assert!(spec.decide(0, u64::MAX).is_err());
        assert!(spec.set_limit(0, MAX_LIMIT + 1).is_err());
        assert_eq!(spec.limit(), MAX_LIMIT);
        spec.release(u64::MAX);
        assert_eq!(spec.in_flight(), 0);
    }
}
