//! Permits: the RAII handles that give their permits back when dropped, and the sealed
//! [`Pool`] interface they give them back through.

use std::fmt;
use std::sync::Arc;

use crate::error::ExceedsLimit;

use super::waiters::Waiters;

/// What a permit needs from the limiter that issued it. Sealed: the trait is unnameable
/// outside the crate, and its methods take a [`Token`] only the crate can make, so no caller
/// can release permits it does not hold (which could over-admit).
pub trait Pool: Send + Sync {
    /// Takes `n` permits if `in_flight + n <= limit`, all or none. `waiter` marks the re-check
    /// of a registered waiter, which must read the count in the order a release writes it.
    fn take(&self, n: u64, waiter: bool, token: Token) -> Result<bool, ExceedsLimit>;
    /// Gives back `n` permits that a permit held, and wakes waiters if any are registered.
    fn give_back(&self, n: u64, token: Token);
    /// The registered waiters and their wake-up event.
    fn waiters(&self, token: Token) -> &Waiters;
    /// This limiter as a pool, for a permit to hold.
    fn as_pool(&self, token: Token) -> &dyn Pool;
}

/// Proof that a call to [`Pool`] comes from inside the crate.
#[derive(Debug, Clone, Copy)]
pub struct Token(());

impl Token {
    pub(crate) fn new() -> Self {
        Self(())
    }
}

/// `n` permits taken from a concurrency limiter, given back when dropped.
///
/// Dropping runs during unwinding too, so a panicking holder releases its permits. A permit
/// that is leaked (`std::mem::forget`, a reference cycle) is never released: its permits stay
/// counted for ever. That only ever lowers the usable limit; it can never make the count too
/// small, so it can never over-admit. [`forget`](Self::forget) does the same on purpose.
///
/// ```
/// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
/// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1)?);
/// {
///     let permit = limiter.try_acquire().expect("a free permit");
///     assert_eq!(permit.permits(), 1);
///     assert!(limiter.try_acquire().is_none());
/// } // released here
/// assert_eq!(limiter.in_flight(), 0);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[must_use = "dropping a permit releases it at once"]
pub struct Permit<'a> {
    pool: &'a dyn Pool,
    permits: u64,
}

impl<'a> Permit<'a> {
    pub(crate) fn new(pool: &'a dyn Pool, permits: u64) -> Self {
        Self { pool, permits }
    }

    /// How many permits this holds.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(4)?);
    /// let permit = limiter.try_acquire_n(3)?.expect("3 free permits");
    /// assert_eq!(permit.permits(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// Keeps the permits taken for ever, without releasing them: the limiter's usable limit
    /// shrinks by [`permits`](Self::permits) until [`set_limit`](crate::ConcurrencyLimit::set_limit)
    /// raises it. Like a leak, this can only under-admit.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?);
    /// limiter.try_acquire().expect("a free permit").forget();
    /// assert_eq!(limiter.in_flight(), 1);
    /// assert_eq!(limiter.available(), 1);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.permits != 0 {
            self.pool.give_back(self.permits, Token::new());
        }
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("permits", &self.permits)
            .finish_non_exhaustive()
    }
}

/// A [`Permit`] that owns a handle on its limiter (an `Arc`), so it can move into a spawned
/// task or a response body and outlive the borrow it was taken under (as tokio's
/// `OwnedSemaphorePermit`). Released when dropped, with the same leak and panic behaviour.
///
/// ```
/// use std::sync::Arc;
/// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
/// let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(1)?));
/// let permit = limiter.try_acquire_owned().expect("a free permit");
/// let worker = std::thread::spawn(move || {
///     let _held = permit; // released when the thread's work is done
/// });
/// worker.join().unwrap();
/// assert_eq!(limiter.in_flight(), 0);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[must_use = "dropping a permit releases it at once"]
pub struct OwnedPermit {
    pool: Arc<dyn Pool>,
    permits: u64,
}

impl OwnedPermit {
    /// Takes over `permit`'s permits, owned through `pool` (the limiter it came from).
    pub(crate) fn adopt(pool: Arc<dyn Pool>, mut permit: Permit<'_>) -> Self {
        let permits = std::mem::take(&mut permit.permits);
        Self { pool, permits }
    }

    /// How many permits this holds.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(4)?));
    /// let permit = limiter.try_acquire_n_owned(2)?.expect("2 free permits");
    /// assert_eq!(permit.permits(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// Keeps the permits taken for ever (see [`Permit::forget`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?));
    /// limiter.try_acquire_owned().expect("a free permit").forget();
    /// assert_eq!(limiter.in_flight(), 1);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        if self.permits != 0 {
            self.pool.give_back(self.permits, Token::new());
        }
    }
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("permits", &self.permits)
            .finish_non_exhaustive()
    }
}
