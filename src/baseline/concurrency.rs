//! The mutex baselines: [`ConcurrencySpec`] under a lock, with the same permit API.

use std::fmt;

use crate::baseline::locked::SpecMutex;
use crate::concurrency::{ConcurrencyLimit, ConcurrencySpec, Pool, Token, Waiters};
use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::spec::Spec;

/// [`ConcurrencySpec`] behind a mutex `M`, with the [`ConcurrencyLimit`] permit API: the
/// baseline the lock-free [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) is compared with.
/// Use the aliases [`StdLockedConcurrencyLimiter`] and [`ParkingLotConcurrencyLimiter`].
///
/// Linearizable trivially (every step runs under the lock). A release reads the waiters
/// count under the lock too, which orders it against a waiter's registration without fences.
///
/// ```
/// use ringlimit::{baseline::ParkingLotConcurrencyLimiter, ConcurrencyLimit};
/// let limiter = ParkingLotConcurrencyLimiter::new(1)?;
/// let permit = limiter.try_acquire().expect("a free permit");
/// assert!(limiter.try_acquire().is_none());
/// drop(permit);
/// assert_eq!(limiter.in_flight(), 0);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct LockedConcurrencyLimiter<M> {
    spec: M,
    waiters: Waiters,
}

/// [`ConcurrencySpec`] under `std::sync::Mutex`.
///
/// ```
/// use ringlimit::{baseline::StdLockedConcurrencyLimiter, ConcurrencyLimit};
/// let limiter = StdLockedConcurrencyLimiter::new(2)?;
/// let permits = limiter.try_acquire_n(2)?.expect("two free permits");
/// assert_eq!(limiter.available(), 0);
/// drop(permits);
/// assert_eq!(limiter.available(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type StdLockedConcurrencyLimiter = LockedConcurrencyLimiter<std::sync::Mutex<ConcurrencySpec>>;
/// [`ConcurrencySpec`] under `parking_lot::Mutex`.
///
/// ```
/// use ringlimit::{baseline::ParkingLotConcurrencyLimiter, ConcurrencyLimit};
/// let limiter = ParkingLotConcurrencyLimiter::new(1)?;
/// let permit = limiter.try_acquire().expect("a free permit");
/// assert_eq!(limiter.in_flight(), 1);
/// drop(permit);
/// assert!(limiter.try_acquire().is_some());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub type ParkingLotConcurrencyLimiter =
    LockedConcurrencyLimiter<parking_lot::Mutex<ConcurrencySpec>>;

impl<M: SpecMutex<ConcurrencySpec>> LockedConcurrencyLimiter<M> {
    /// At most `limit` permits in flight (`1..=u32::MAX`, as the lock-free limiter).
    ///
    /// ```
    /// use ringlimit::{baseline::StdLockedConcurrencyLimiter, ConcurrencyLimit};
    /// assert_eq!(StdLockedConcurrencyLimiter::new(3)?.limit(), 3);
    /// assert!(StdLockedConcurrencyLimiter::new(0).is_err());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(limit: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            spec: M::new(ConcurrencySpec::new(limit)?),
            waiters: Waiters::new(),
        })
    }
}

impl<M: SpecMutex<ConcurrencySpec>> Pool for LockedConcurrencyLimiter<M> {
    fn take(&self, n: u64, _waiter: bool, _: Token) -> Result<bool, ExceedsLimit> {
        self.spec
            .with(|spec| spec.decide(0, n))
            .map(|decision| decision.is_admitted())
    }

    fn give_back(&self, n: u64, _: Token) {
        let registered = self.spec.with(|spec| {
            spec.release(n);
            self.waiters.registered()
        });
        self.waiters.wake(registered, Some(n));
    }

    fn waiters(&self, _: Token) -> &Waiters {
        &self.waiters
    }

    fn as_pool(&self, _: Token) -> &dyn Pool {
        self
    }
}

impl<M: SpecMutex<ConcurrencySpec>> ConcurrencyLimit for LockedConcurrencyLimiter<M> {
    fn limit(&self) -> u64 {
        self.spec.with(|spec| spec.limit())
    }

    fn in_flight(&self) -> u64 {
        self.spec.with(|spec| spec.in_flight())
    }

    fn available(&self) -> u64 {
        self.spec.with(|spec| spec.available(0))
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        let registered = self
            .spec
            .with(|spec| spec.set_limit(0, limit).map(|()| self.waiters.registered()))?;
        self.waiters.wake(registered, None);
        Ok(())
    }
}

impl<M> fmt::Debug for LockedConcurrencyLimiter<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockedConcurrencyLimiter")
            .field("mutex", &std::any::type_name::<M>())
            .field("waiters", &self.waiters)
            .finish_non_exhaustive()
    }
}
