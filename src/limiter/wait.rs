//! [`Wait`]: the waits every limiter gets from [`RateLimiter::attempt`], blocking and async.
//!
//! A wait repeats one step: [`RateLimiter::attempt`] either grants the permits (for the
//! bucket family, as a reservation whose time may lie ahead, which is what makes their waits
//! fair) or says when to ask again (the window family). Both loops check the deadline
//! *before* sleeping, so a wait that cannot succeed in time returns at once.

use std::time::Duration;

use crate::error::{ExceedsLimit, WaitError};

use super::grant::Attempt;
use super::rate_limiter::RateLimiter;

/// Waiting for permits: blocking (`acquire`, `acquire_n`, `try_acquire_for`) and, with the
/// `tokio` feature, async (`until_ready`, `until_n_ready`).
///
/// Implemented for every [`RateLimiter`] (a blanket impl over its one waiting step,
/// [`RateLimiter::attempt`]): bring the trait into scope and every limiter can be waited on.
/// Waits sleep on the limiter's clock, so on a [`ManualClock`](crate::clock::ManualClock)
/// they are instant and exact.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, Wait, WindowQuota};
/// let clock = ManualClock::new();
/// let limiter = SlidingWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?.buckets(1)?)
///     .clock(clock.clone())
///     .build();
/// assert_eq!(limiter.acquire(), Duration::ZERO);
/// assert_eq!(limiter.acquire(), Duration::from_secs(1)); // slept on the manual clock
/// assert!(limiter.try_acquire_for(1, Duration::from_millis(10)).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Wait: RateLimiter {
    /// Blocks until one permit is granted (Guava's `acquire`); returns the time waited on
    /// the limiter's clock.
    ///
    /// # Panics
    /// Only if the limiter reports one permit as more than it can ever grant, which no
    /// limiter in this crate does (every limit, burst and capacity is at least 1).
    fn acquire(&self) -> Duration {
        match self.acquire_n(1) {
            Ok(waited) => waited,
            Err(error) => panic!("a limiter refused one permit for ever: {error}"),
        }
    }

    /// Blocks until `n` permits are granted; returns the time waited. `n` above what the
    /// limiter can ever grant is an error at once, never a wait for ever.
    fn acquire_n(&self, n: u64) -> Result<Duration, ExceedsLimit> {
        block(self, n, None).map_err(|error| match error {
            WaitError::ExceedsLimit(error) => error,
            // An unbounded wait never times out: `block` only returns `Timeout` for a
            // deadline, and it was given none.
            WaitError::Timeout { .. } => unreachable!("an unbounded wait timed out"),
        })
    }

    /// Waits up to `timeout` for `n` permits; returns the time waited.
    ///
    /// Returns [`WaitError::Timeout`] as soon as it is known that the permits cannot be had
    /// in time, without sleeping first. A zero timeout is a plain `try_acquire_n`;
    /// `Duration::MAX` waits as long as it takes.
    fn try_acquire_for(&self, n: u64, timeout: Duration) -> Result<Duration, WaitError> {
        block(self, n, Some(timeout))
    }

    /// Waits asynchronously, on tokio's timer, for one permit; returns the time waited.
    ///
    /// Cancel-safe: dropping the future gives back any reservation it holds.
    #[cfg(feature = "tokio")]
    fn until_ready(&self) -> impl std::future::Future<Output = Duration> + Send
    where
        Self: Sized + Sync,
    {
        async move {
            match until(self, 1).await {
                Ok(waited) => waited,
                Err(error) => panic!("a limiter refused one permit for ever: {error}"),
            }
        }
    }

    /// Waits asynchronously, on tokio's timer, for `n` permits; returns the time waited.
    /// `n` above what the limiter can ever grant is an error at once.
    ///
    /// Cancel-safe: dropping the future gives back any reservation it holds.
    #[cfg(feature = "tokio")]
    fn until_n_ready(
        &self,
        n: u64,
    ) -> impl std::future::Future<Output = Result<Duration, ExceedsLimit>> + Send
    where
        Self: Sized + Sync,
    {
        until(self, n)
    }
}

impl<L: RateLimiter + ?Sized> Wait for L {}

/// Nanoseconds in `d`, saturating at `u64::MAX` (584 years: "never" for a deadline).
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The time left before `deadline` (ns on the limiter's clock), or unbounded.
fn left(deadline: Option<u64>, now: u64) -> Duration {
    match deadline {
        None => Duration::MAX,
        Some(deadline) => Duration::from_nanos(deadline.saturating_sub(now)),
    }
}

/// Blocks until `n` permits are granted and usable, or until `timeout` would be exceeded.
/// Returns the time waited on the limiter's clock.
fn block<L: RateLimiter + ?Sized>(
    limiter: &L,
    n: u64,
    timeout: Option<Duration>,
) -> Result<Duration, WaitError> {
    let clock = limiter.clock();
    let start = clock.now_nanos();
    let deadline = timeout.map(|t| start.saturating_add(nanos(t)));
    loop {
        let now = clock.now_nanos();
        match limiter.attempt(n, left(deadline, now)) {
            Ok(Attempt::Granted(reservation)) => {
                reservation.wait();
                return Ok(Duration::from_nanos(
                    clock.now_nanos().saturating_sub(start),
                ));
            }
            // At least 1 ns, so a refusal with a zero retry time cannot spin without time passing.
            Ok(Attempt::RetryAfter(after)) => clock.sleep(after.max(Duration::from_nanos(1))),
            Err(WaitError::Timeout { retry_after, .. }) => match timeout {
                Some(timeout) => {
                    return Err(WaitError::Timeout {
                        retry_after,
                        timeout,
                    })
                }
                // An unbounded wait times out only when the schedule is beyond the limiter's
                // arithmetic (decades ahead): wait as long as it says and ask again.
                None => clock.sleep(retry_after.max(Duration::from_nanos(1))),
            },
            Err(error) => return Err(error),
        }
    }
}

/// The async form of [`block`], sleeping on tokio's timer. Cancel-safe: dropping the future
/// while it sleeps on a reservation cancels the reservation.
#[cfg(feature = "tokio")]
async fn until<L: RateLimiter + Sync + ?Sized>(
    limiter: &L,
    n: u64,
) -> Result<Duration, ExceedsLimit> {
    let clock = limiter.clock();
    let start = clock.now_nanos();
    loop {
        match limiter.attempt(n, Duration::MAX) {
            Ok(Attempt::Granted(reservation)) => {
                let mut pending = CancelOnDrop(Some(reservation));
                loop {
                    let ready_in = pending.0.as_ref().map_or(Duration::ZERO, |r| r.ready_in());
                    if ready_in.is_zero() {
                        break;
                    }
                    tokio::time::sleep(ready_in).await;
                }
                // Usable now: from here on the permits are the caller's.
                pending.0 = None;
                return Ok(Duration::from_nanos(
                    clock.now_nanos().saturating_sub(start),
                ));
            }
            Ok(Attempt::RetryAfter(after)) => {
                tokio::time::sleep(after.max(Duration::from_nanos(1))).await;
            }
            Err(WaitError::ExceedsLimit(error)) => return Err(error),
            // An unbounded wait times out only when the schedule is beyond the limiter's
            // arithmetic (decades ahead): wait as long as it says and ask again.
            Err(WaitError::Timeout { retry_after, .. }) => {
                tokio::time::sleep(retry_after.max(Duration::from_nanos(1))).await;
            }
        }
    }
}

/// Cancels a reservation the future is dropped while waiting on.
#[cfg(feature = "tokio")]
struct CancelOnDrop<'a>(Option<super::grant::Reservation<'a>>);

#[cfg(feature = "tokio")]
impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(reservation) = self.0.take() {
            reservation.cancel();
        }
    }
}
