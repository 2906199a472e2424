//! [`Wait`]: the waits every limiter gets from [`RateLimiter::attempt`], blocking and async.
//!
//! A wait repeats one step: [`RateLimiter::attempt`] either grants the permits (for the
//! bucket family, as a reservation whose time may lie ahead, which is what makes their waits
//! fair) or says when to ask again (the window family). Both loops check the deadline
//! *before* sleeping, so a wait that cannot succeed in time returns at once.
//!
//! Every turn of a loop makes progress or ends it. With a deadline, a refusal whose retry
//! time lies past the deadline is a [`WaitError::Timeout`] at once; one that ends at the
//! deadline exactly is slept for, and the permits are taken at the deadline (every family
//! waits by that one rule: a permit reachable in time is waited for). With no time left, a
//! refusal is a timeout: a zero timeout is one attempt and never a sleep, and a wait that
//! reached its deadline asks once more and no more. Without a deadline, a refusal that no
//! later reading of the clock can end (its retry time lies past `u64::MAX` on the clock, as
//! the "never" (`Duration::MAX`) of a limiter whose time stands still does) ends the wait
//! with [`WaitError::TimeExhausted`]; any other is slept for (at least 1 ns) and asked
//! again.

use std::time::Duration;

use crate::error::WaitError;

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
    /// limiter in this crate does (every limit, burst and capacity is at least 1), or its
    /// time is exhausted ([`WaitError::TimeExhausted`]: its clock ran decades past its
    /// origin, or to the end of `u64` nanoseconds, and it refuses for ever); a wait never
    /// spins on a refusal that cannot end.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, TokenBucket, Wait};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(5)?, 1)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.acquire(), Duration::ZERO);
    /// assert_eq!(bucket.acquire(), Duration::from_millis(200)); // slept on the manual clock
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    fn acquire(&self) -> Duration {
        match self.acquire_n(1) {
            Ok(waited) => waited,
            Err(error) => panic!("a limiter refused one permit for ever: {error}"),
        }
    }

    /// Blocks until `n` permits are granted; returns the time waited. `n` above what the
    /// limiter can ever grant is [`WaitError::ExceedsLimit`] at once, never a wait for ever;
    /// a refusal no later clock reading can end is [`WaitError::TimeExhausted`]. (An
    /// unbounded wait never returns `Timeout`.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, TokenBucket, Wait, WaitError};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 4)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.acquire_n(4)?, Duration::ZERO);
    /// assert_eq!(bucket.acquire_n(2)?, Duration::from_millis(200));
    /// assert!(matches!(bucket.acquire_n(5), Err(WaitError::ExceedsLimit(_)))); // above the burst
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_n(&self, n: u64) -> Result<Duration, WaitError> {
        block(self, n, None)
    }

    /// Waits up to `timeout` for `n` permits; returns the time waited.
    ///
    /// Returns [`WaitError::Timeout`] as soon as it is known that the permits cannot be had
    /// in time, without sleeping first: a refusal whose retry time is longer than the time
    /// left. Permits that become available exactly at the deadline are waited for and taken
    /// then, in every family. A zero timeout is a plain `try_acquire_n` (one attempt, never
    /// a sleep); `Duration::MAX` waits as long as it takes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, Wait, WaitError, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = SlidingWindow::builder(WindowQuota::per(2, Duration::from_secs(1))?.buckets(1)?).clock(clock.clone()).build();
    /// assert!(limiter.try_acquire_n(2)?.is_admitted());
    /// // The next permit is a second away: a shorter timeout fails at once, without sleeping.
    /// assert!(matches!(limiter.try_acquire_for(1, Duration::from_millis(500)), Err(WaitError::Timeout { .. })));
    /// assert_eq!(limiter.available(), 0);
    /// // A timeout of exactly the time to the next permit is enough: taken at the deadline.
    /// assert_eq!(limiter.try_acquire_for(1, Duration::from_secs(1))?, Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_acquire_for(&self, n: u64, timeout: Duration) -> Result<Duration, WaitError> {
        block(self, n, Some(timeout))
    }

    /// Waits asynchronously, on tokio's timer, for one permit; returns the time waited.
    ///
    /// Cancel-safe: dropping the future gives back any reservation it holds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::TokioClock, SlidingWindow, Wait, WindowQuota};
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() -> Result<(), ringlimit::ConfigError> {
    ///     // tokio's paused clock jumps ahead to each timer, so the wait takes no real time.
    ///     let quota = WindowQuota::per(1, Duration::from_secs(1))?.buckets(1)?;
    ///     let limiter = SlidingWindow::builder(quota).clock(TokioClock::new()).build();
    ///     assert_eq!(limiter.until_ready().await, Duration::ZERO);
    ///     assert_eq!(limiter.until_ready().await, Duration::from_secs(1));
    ///     Ok(())
    /// }
    /// ```
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
    /// `n` above what the limiter can ever grant is an error at once; so is a refusal no
    /// later clock reading can end ([`WaitError::TimeExhausted`]).
    ///
    /// Cancel-safe: dropping the future gives back any reservation it holds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::TokioClock, BucketQuota, Rate, TokenBucket, Wait, WaitError};
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let quota = BucketQuota::new(Rate::per_second(10)?, 3)?;
    ///     let bucket = TokenBucket::builder(quota).clock(TokioClock::new()).build();
    ///     assert_eq!(bucket.until_n_ready(3).await?, Duration::ZERO);
    ///     assert_eq!(bucket.until_n_ready(2).await?, Duration::from_millis(200));
    ///     assert!(matches!(bucket.until_n_ready(4).await, Err(WaitError::ExceedsLimit(_))));
    ///     Ok(())
    /// }
    /// ```
    #[cfg(feature = "tokio")]
    fn until_n_ready(
        &self,
        n: u64,
    ) -> impl std::future::Future<Output = Result<Duration, WaitError>> + Send
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

/// Whether a refusal whose retry time is `after` outlasts a deadline `left` away: it ends
/// after the deadline, or no time is left to sleep (a permit free exactly at the deadline
/// is reachable; once there, one more refusal is the last).
fn past(after: Duration, left: Duration) -> bool {
    left.is_zero() || after > left
}

/// Whether a retry time `after`, measured from the reading `now`, lies past the last reading
/// the clock can show: then no wait ends the refusal.
fn never(after: Duration, now: u64) -> bool {
    now.checked_add(nanos(after)).is_none() || nanos(after) == u64::MAX
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
            Ok(Attempt::RetryAfter(retry_after)) => match timeout {
                // Sleeping would not end the refusal by the deadline, or no time is left (a
                // zero timeout always lands here): time out now, having slept nothing more.
                Some(timeout) if past(retry_after, left(deadline, now)) => {
                    return Err(WaitError::Timeout {
                        retry_after,
                        timeout,
                    })
                }
                None if never(retry_after, now) => return Err(WaitError::TimeExhausted),
                // At least 1 ns, so a zero retry time cannot spin without time passing; with
                // a deadline, the retry time is at most the time left, which is at least 1 ns.
                _ => clock.sleep(retry_after.max(Duration::from_nanos(1))),
            },
            Err(WaitError::Timeout { retry_after, .. }) => match timeout {
                Some(timeout) => {
                    return Err(WaitError::Timeout {
                        retry_after,
                        timeout,
                    })
                }
                // An unbounded wait times out only when the schedule is beyond the limiter's
                // arithmetic (decades ahead): wait as long as it says and ask again, unless
                // no reading of the clock can end it.
                None if never(retry_after, now) => return Err(WaitError::TimeExhausted),
                None => clock.sleep(retry_after.max(Duration::from_nanos(1))),
            },
            Err(error) => return Err(error),
        }
    }
}

/// The async form of [`block`], sleeping on tokio's timer. Cancel-safe: dropping the future
/// while it sleeps on a reservation cancels the reservation.
#[cfg(feature = "tokio")]
async fn until<L: RateLimiter + Sync + ?Sized>(limiter: &L, n: u64) -> Result<Duration, WaitError> {
    let clock = limiter.clock();
    let start = clock.now_nanos();
    loop {
        let now = clock.now_nanos();
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
            // Unbounded: a refusal no reading of the clock can end is an error, any other is
            // slept for (at least 1 ns, so a zero retry time cannot spin) and asked again. A
            // limiter's own `Timeout` here means a schedule beyond its arithmetic (decades).
            Ok(Attempt::RetryAfter(retry_after)) | Err(WaitError::Timeout { retry_after, .. }) => {
                if never(retry_after, now) {
                    return Err(WaitError::TimeExhausted);
                }
                tokio::time::sleep(retry_after.max(Duration::from_nanos(1))).await;
            }
            Err(error) => return Err(error),
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
            // What the refund restores is the limiter's business; nothing to report here.
            let _ = reservation.cancel();
        }
    }
}
