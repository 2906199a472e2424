//! The waits every limiter gets from [`RateLimiter::attempt`]: blocking and async.
//!
//! A wait repeats one step: [`RateLimiter::attempt`] either grants the permits (for the
//! bucket family, as a reservation whose time may lie ahead, which is what makes their waits
//! fair) or says when to ask again (the window family). Both loops check the deadline
//! *before* sleeping, so a wait that cannot succeed in time returns at once.

use std::time::Duration;

use crate::error::WaitError;
use crate::limiter::RateLimiter;
use crate::reservation::Attempt;

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
pub(crate) fn block<L: RateLimiter + ?Sized>(
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
pub(crate) async fn until<L: RateLimiter + Sync + ?Sized>(
    limiter: &L,
    n: u64,
) -> Result<Duration, crate::error::AcquireError> {
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
            Err(WaitError::ExceedsLimit { requested, limit }) => {
                return Err(crate::error::AcquireError::ExceedsLimit { requested, limit })
            }
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
struct CancelOnDrop<'a>(Option<crate::reservation::Reservation<'a>>);

#[cfg(feature = "tokio")]
impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(reservation) = self.0.take() {
            reservation.cancel();
        }
    }
}
