//! [`Locked`]: a spec behind a mutex, the baseline every lock-free limiter is compared with.

use std::fmt;

use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit, WaitError};
use crate::limiter::spec::{Spec, Step};
use crate::limiter::{Admission, Attempt, Grant, Owner, Reservation, Schedule, Ticket};
use crate::limiter::{Decision, RateLimiter};

/// A mutex that can guard a spec: implemented for `std::sync::Mutex` and `parking_lot::Mutex`.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::baseline::SpecMutex;
/// use ringlimit::spec::{FixedWindowSpec, Spec};
/// let guarded = <parking_lot::Mutex<FixedWindowSpec> as SpecMutex<_>>::new(
///     FixedWindowSpec::new(2, Duration::from_secs(1))?,
/// );
/// assert!(guarded.with(|spec| spec.decide(0, 1))?.is_admitted());
/// assert_eq!(guarded.with(|spec| spec.available(0)), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait SpecMutex<S>: Send + Sync {
    /// Wraps the spec.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use std::time::Duration;
    /// use ringlimit::baseline::SpecMutex;
    /// use ringlimit::spec::{FixedWindowSpec, Spec};
    /// let guarded: Mutex<FixedWindowSpec> = SpecMutex::new(FixedWindowSpec::new(3, Duration::from_secs(1))?);
    /// assert_eq!(guarded.with(|spec| spec.limit()), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn new(spec: S) -> Self;
    /// Runs `f` with the spec locked.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use std::time::Duration;
    /// use ringlimit::baseline::SpecMutex;
    /// use ringlimit::spec::{FixedWindowSpec, Spec};
    /// let guarded: Mutex<FixedWindowSpec> = SpecMutex::new(FixedWindowSpec::new(3, Duration::from_secs(1))?);
    /// guarded.with(|spec| spec.set_limit(0, 5))?;
    /// assert_eq!(guarded.with(|spec| spec.available(0)), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn with<R>(&self, f: impl FnOnce(&mut S) -> R) -> R;
}

impl<S: Send> SpecMutex<S> for std::sync::Mutex<S> {
    fn new(spec: S) -> Self {
        std::sync::Mutex::new(spec)
    }
    fn with<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        // A panic elsewhere while holding the lock cannot leave a spec half-updated in a
        // way that over-admits (each step is a few plain writes), so poisoning is ignored.
        let mut guard = self.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }
}

impl<S: Send> SpecMutex<S> for parking_lot::Mutex<S> {
    fn new(spec: S) -> Self {
        parking_lot::Mutex::new(spec)
    }
    fn with<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        f(&mut self.lock())
    }
}

/// A sequential spec made thread-safe by a mutex `M`, reading time from clock `C`.
///
/// The clock is read inside the lock, so the mutex versions are linearizable trivially.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{baseline::ParkingLotLocked, clock::ManualClock, spec::FixedWindowSpec, RateLimiter};
/// let spec = FixedWindowSpec::new(1, Duration::from_secs(1))?;
/// let limiter = ParkingLotLocked::with_clock(spec, ManualClock::new());
/// assert!(limiter.try_acquire());
/// assert!(!limiter.try_acquire());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Locked<S, M, C = TscClock> {
    spec: M,
    clock: C,
    /// The id stamped on this baseline's grants; a refund of any other grant restores 0.
    owner: Owner,
    _spec: std::marker::PhantomData<fn() -> S>,
}

/// A spec under `parking_lot::Mutex`.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{baseline::ParkingLotLocked, clock::ManualClock, spec::SlidingWindowSpec, RateLimiter};
/// let spec = SlidingWindowSpec::new(2, Duration::from_secs(1), 10)?;
/// let limiter: ParkingLotLocked<_, _> = ParkingLotLocked::with_clock(spec, ManualClock::new());
/// assert!(limiter.try_acquire_n(2)?.is_admitted());
/// assert!(!limiter.try_acquire());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type ParkingLotLocked<S, C = TscClock> = Locked<S, parking_lot::Mutex<S>, C>;
/// A spec under `std::sync::Mutex`.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{baseline::StdLocked, clock::ManualClock, spec::TokenBucketSpec, Rate, RateLimiter};
/// let clock = ManualClock::new();
/// let limiter = StdLocked::with_clock(TokenBucketSpec::new(Rate::per_second(10)?, 1)?, clock.clone());
/// assert!(limiter.try_acquire());
/// assert!(!limiter.try_acquire());
/// clock.advance(Duration::from_millis(100));
/// assert!(limiter.try_acquire());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type StdLocked<S, C = TscClock> = Locked<S, std::sync::Mutex<S>, C>;

impl<S: Spec, M: SpecMutex<S>> Locked<S, M, TscClock> {
    /// Wraps `spec`, reading time from a new [`TscClock`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{baseline::StdLocked, spec::FixedWindowSpec, RateLimiter};
    /// let limiter = StdLocked::new(FixedWindowSpec::new(100, Duration::from_secs(60))?);
    /// assert!(limiter.try_acquire());
    /// assert_eq!(limiter.limit(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(spec: S) -> Self {
        Self::with_clock(spec, TscClock::new())
    }
}

impl<S: Spec, M: SpecMutex<S>, C: Clock> Locked<S, M, C> {
    /// Wraps `spec`, reading time from `clock`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{baseline::ParkingLotLocked, clock::ManualClock, spec::FixedWindowSpec, RateLimiter};
    /// let clock = ManualClock::new();
    /// let limiter = ParkingLotLocked::with_clock(FixedWindowSpec::new(1, Duration::from_secs(1))?, clock.clone());
    /// assert!(limiter.try_acquire());
    /// assert!(!limiter.try_acquire());
    /// clock.advance(Duration::from_secs(1));
    /// assert!(limiter.try_acquire());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_clock(spec: S, clock: C) -> Self {
        Self {
            spec: M::new(spec),
            clock,
            owner: Owner::new(),
            _spec: std::marker::PhantomData,
        }
    }

    /// Runs `f` on the spec under the lock (for tests and inspection).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{baseline::ParkingLotLocked, clock::ManualClock, spec::{FixedWindowSpec, Spec}, RateLimiter};
    /// let limiter = ParkingLotLocked::with_clock(FixedWindowSpec::new(3, Duration::from_secs(1))?, ManualClock::new());
    /// assert!(limiter.try_acquire());
    /// assert_eq!(limiter.with_spec(|spec| spec.available(0)), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_spec<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        self.spec.with(f)
    }
}

impl<S: Spec, M: SpecMutex<S>, C: Clock> RateLimiter for Locked<S, M, C> {
    fn try_acquire(&self) -> bool {
        self.spec
            .with(|spec| spec.decide(self.clock.now_nanos(), 1))
            .is_ok_and(|decision| decision.is_admitted())
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        self.spec
            .with(|spec| spec.decide(self.clock.now_nanos(), n))
    }

    fn available(&self) -> u64 {
        self.spec
            .with(|spec| spec.available(self.clock.now_nanos()))
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        self.spec
            .with(|spec| spec.set_limit(self.clock.now_nanos(), limit))
    }

    fn limit(&self) -> u64 {
        self.spec.with(|spec| spec.limit())
    }

    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        self.spec
            .with(|spec| spec.try_grant(self.clock.now_nanos(), n))
            .map(|admission| admission.owned_by(self.owner))
    }

    /// Exactly as the spec's [`refund`](Spec::refund) says, at a reading taken under the
    /// lock; a grant this baseline did not make restores 0.
    fn refund(&self, grant: Grant) -> u64 {
        if !grant.is_from(self.owner) {
            return 0;
        }
        Schedule::refund(self, grant.ticket())
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn attempt(&self, n: u64, max_wait: Duration) -> Result<Attempt<'_>, WaitError> {
        let step = self
            .spec
            .with(|spec| spec.attempt(self.clock.now_nanos(), n, max_wait))?;
        Ok(match step {
            Step::Granted(ticket) => Attempt::Granted(Reservation::scheduled(self, ticket)),
            Step::RetryAfter(after) => Attempt::RetryAfter(after),
        })
    }
}

impl<S: Spec, M: SpecMutex<S>, C: Clock> Schedule for Locked<S, M, C> {
    fn schedule_clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn owner(&self) -> Owner {
        self.owner
    }

    fn refund(&self, ticket: &Ticket) -> u64 {
        self.spec
            .with(|spec| spec.refund(self.clock.now_nanos(), ticket))
    }
}

impl<S, M, C> fmt::Debug for Locked<S, M, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locked")
            .field("spec", &std::any::type_name::<S>())
            .field("mutex", &std::any::type_name::<M>())
            .finish_non_exhaustive()
    }
}
