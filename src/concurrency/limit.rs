//! [`ConcurrencyLimit`]: the permit API both concurrency limiters share, waits included.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit, WaitError};

use super::permit::{OwnedPermit, Permit, Pool, Token};
use super::wait;

/// A limit on permits in flight, handed out as RAII [`Permit`]s released on drop.
///
/// Implemented by the lock-free [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) and by the
/// mutex baselines [`LockedConcurrencyLimiter`](crate::baseline::LockedConcurrencyLimiter); sealed.
/// Both are linearizable with respect to [`ConcurrencySpec`](crate::spec::ConcurrencySpec):
/// a request is refused only if `in_flight + n > limit` at some instant inside the call.
///
/// A concurrency limiter is not a [`RateLimiter`](crate::RateLimiter): what it admits must be
/// given back, so its admissions are permits, not booleans.
///
/// ```
/// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
/// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?);
/// let a = limiter.try_acquire().expect("first");
/// let _b = limiter.try_acquire().expect("second");
/// assert!(limiter.try_acquire().is_none());
/// drop(a);
/// assert!(limiter.try_acquire().is_some());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub trait ConcurrencyLimit: Pool {
    /// The current limit C.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// assert_eq!(ConcurrencyLimiter::new(ConcurrencyQuota::new(8)?).limit(), 8);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    fn limit(&self) -> u64;

    /// Permits handed out and not yet released (leaked ones included).
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(8)?);
    /// let _permit = limiter.try_acquire_n(3)?;
    /// assert_eq!(limiter.in_flight(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn in_flight(&self) -> u64;

    /// Permits that could be taken now: `limit - in_flight`, or 0 while a lowered limit is
    /// still over-subscribed.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(8)?);
    /// let _permit = limiter.try_acquire_n(3)?;
    /// assert_eq!(limiter.available(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn available(&self) -> u64;

    /// Changes the limit (`1..=u32::MAX`). Every acquisition is decided wholly under the old
    /// limit or wholly under the new one. Permits already out stay valid: below `in_flight`,
    /// nothing is admitted until enough are released. Wakes all waiters, so those whose
    /// request now exceeds the limit fail instead of waiting for ever.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?);
    /// let held = limiter.try_acquire_n(2)?;
    /// limiter.set_limit(1)?;
    /// drop(held);
    /// assert_eq!(limiter.available(), 1);
    /// assert!(limiter.set_limit(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn set_limit(&self, limit: u64) -> Result<(), ConfigError>;

    /// Takes one permit if one is free now. The hot path: never waits.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1)?);
    /// if let Some(_permit) = limiter.try_acquire() {
    ///     // handle the request; the permit is released at the end of the block
    /// }
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    fn try_acquire(&self) -> Option<Permit<'_>> {
        // One permit never exceeds a limit, which is at least 1.
        self.try_acquire_n(1).ok().flatten()
    }

    /// Takes `n` permits, all or none, if they are free now.
    ///
    /// `Ok(None)` means "not now"; the error means "never": `n` above the limit, which no
    /// release could make room for (as [`RateLimiter::try_acquire_n`](crate::RateLimiter::try_acquire_n)
    /// reports it). `n = 0` is a permit of 0 permits.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota, ExceedsLimit};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(4)?);
    /// let three = limiter.try_acquire_n(3)?.expect("3 of 4 free");
    /// assert!(limiter.try_acquire_n(2)?.is_none());
    /// assert_eq!(
    ///     limiter.try_acquire_n(5).unwrap_err(),
    ///     ExceedsLimit { requested: 5, limit: 4 }
    /// );
    /// assert_eq!(limiter.try_acquire_n(0)?.map(|p| p.permits()), Some(0));
    /// drop(three);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_n(&self, n: u64) -> Result<Option<Permit<'_>>, ExceedsLimit> {
        wait::try_take(self.as_pool(Token::new()), n)
    }

    /// [`try_acquire`](Self::try_acquire) as an [`OwnedPermit`], which holds an `Arc` of the
    /// limiter and so can move into a spawned task.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(1)?));
    /// let permit = limiter.try_acquire_owned().expect("a free permit");
    /// assert!(limiter.try_acquire_owned().is_none());
    /// drop(permit);
    /// assert_eq!(limiter.in_flight(), 0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    fn try_acquire_owned(self: &Arc<Self>) -> Option<OwnedPermit>
    where
        Self: Sized + 'static,
    {
        self.try_acquire_n_owned(1).ok().flatten()
    }

    /// [`try_acquire_n`](Self::try_acquire_n) as an [`OwnedPermit`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(3)?));
    /// let permit = limiter.try_acquire_n_owned(3)?.expect("3 free");
    /// assert!(limiter.try_acquire_n_owned(4).is_err());
    /// # drop(permit);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_n_owned(self: &Arc<Self>, n: u64) -> Result<Option<OwnedPermit>, ExceedsLimit>
    where
        Self: Sized + 'static,
    {
        let permit = self.try_acquire_n(n)?;
        Ok(permit.map(|permit| OwnedPermit::adopt(self.clone(), permit)))
    }

    /// Blocks the thread until one permit is free, and takes it.
    ///
    /// Sleeps until a release (or a raised limit) wakes it; never polls.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1)?);
    /// let held = limiter.acquire();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         let _mine = limiter.acquire(); // waits for `held`
    ///     });
    ///     drop(held);
    /// });
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    ///
    /// # Panics
    /// Never: one permit never exceeds a limit, which is at least 1.
    fn acquire(&self) -> Permit<'_> {
        match self.acquire_n(1) {
            Ok(permit) => permit,
            Err(error) => panic!("a concurrency limit refused one permit for ever: {error}"),
        }
    }

    /// Blocks until `n` permits are free at once, and takes them. `n` above the limit is an
    /// error at once (or as soon as a lowered limit makes it one), never a wait for ever.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(3)?);
    /// assert_eq!(limiter.acquire_n(3)?.permits(), 3);
    /// assert!(limiter.acquire_n(4).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_n(&self, n: u64) -> Result<Permit<'_>, ExceedsLimit> {
        wait::block(self.as_pool(Token::new()), n, None).map_err(|error| match error {
            WaitError::ExceedsLimit(error) => error,
            // Unreachable: a wait without a timeout never times out, and in-flight permits
            // have no clock to run out of.
            WaitError::Timeout { .. } | WaitError::TimeExhausted => ExceedsLimit {
                requested: n,
                limit: self.limit(),
            },
        })
    }

    /// Waits up to `timeout` (real time) for `n` permits.
    ///
    /// A release may come at any moment, so this does wait out the timeout before
    /// [`WaitError::Timeout`] (whose `retry_after` is zero): asleep, woken only by releases
    /// and limit changes. A zero timeout is a plain [`try_acquire_n`](Self::try_acquire_n);
    /// `Duration::MAX` waits as long as it takes. `n` above the limit is
    /// [`WaitError::ExceedsLimit`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota, WaitError};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1)?);
    /// let held = limiter.try_acquire_for(1, Duration::ZERO)?;
    /// assert!(matches!(
    ///     limiter.try_acquire_for(1, Duration::from_millis(5)),
    ///     Err(WaitError::Timeout { .. })
    /// ));
    /// drop(held);
    /// assert!(limiter.try_acquire_for(1, Duration::from_millis(5)).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_for(&self, n: u64, timeout: Duration) -> Result<Permit<'_>, WaitError> {
        wait::block(self.as_pool(Token::new()), n, Some(timeout))
    }

    /// Waits asynchronously for one permit.
    ///
    /// Woken by releases through `event-listener`, so it runs on any executor and needs no
    /// timer. Cancel-safe: a dropped future holds no permit and passes on any wake-up it
    /// received, so no other waiter misses one.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ringlimit::ConfigError> {
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1)?);
    /// let permit = limiter.until_ready().await;
    /// assert_eq!(permit.permits(), 1);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    fn until_ready(&self) -> impl std::future::Future<Output = Permit<'_>> + Send {
        let pool = self.as_pool(Token::new());
        async move {
            match wait::until(pool, 1).await {
                Ok(permit) => permit,
                Err(error) => panic!("a concurrency limit refused one permit for ever: {error}"),
            }
        }
    }

    /// Waits asynchronously for `n` permits at once; `n` above the limit is an error at once
    /// (or as soon as a lowered limit makes it one). Cancel-safe, as
    /// [`until_ready`](Self::until_ready).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(4)?);
    /// assert_eq!(limiter.until_n_ready(4).await?.permits(), 4);
    /// assert!(limiter.until_n_ready(5).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    fn until_n_ready(
        &self,
        n: u64,
    ) -> impl std::future::Future<Output = Result<Permit<'_>, ExceedsLimit>> + Send {
        wait::until(self.as_pool(Token::new()), n)
    }

    /// [`until_n_ready`](Self::until_n_ready) as an [`OwnedPermit`], for middleware that hands
    /// the permit to the task serving the request.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// let limiter = Arc::new(ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?));
    /// let permit = limiter.until_n_ready_owned(2).await?;
    /// let task = tokio::spawn(async move { permit.permits() });
    /// assert_eq!(task.await?, 2);
    /// assert_eq!(limiter.in_flight(), 0);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    fn until_n_ready_owned(
        self: &Arc<Self>,
        n: u64,
    ) -> impl std::future::Future<Output = Result<OwnedPermit, ExceedsLimit>> + Send
    where
        Self: Sized + 'static,
    {
        let limiter = self.clone();
        async move {
            let permit = wait::until(limiter.as_pool(Token::new()), n).await?;
            Ok(OwnedPermit::adopt(limiter.clone(), permit))
        }
    }
}
