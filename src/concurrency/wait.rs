//! Waiting for permits: blocking and async, woken by releases through `event-listener`.
//! Why no wake-up is lost: [the guide](crate::guide::waiting).

use std::time::{Duration, Instant};

use event_listener::{EventListener, Listener};

use crate::error::{ExceedsLimit, WaitError};

use super::permit::{Permit, Pool, Token};
use super::waiters::Waiters;

/// Takes `n` permits from `pool` as a permit, if they are free now.
pub(crate) fn try_take(pool: &dyn Pool, n: u64) -> Result<Option<Permit<'_>>, ExceedsLimit> {
    Ok(pool
        .take(n, false, Token::new())?
        .then(|| Permit::new(pool, n)))
}

/// A registered waiter's re-check.
fn recheck(pool: &dyn Pool, n: u64) -> Result<Option<Permit<'_>>, ExceedsLimit> {
    Ok(pool
        .take(n, true, Token::new())?
        .then(|| Permit::new(pool, n)))
}

/// What one round of a registered wait found.
enum Round<'a> {
    /// The permits, taken.
    Taken(Permit<'a>),
    /// Not free: sleep on this listener, made before the re-check, so no release is missed.
    Sleep(EventListener),
}

/// One round of a registered wait: listen, then re-check.
fn round<'a>(pool: &'a dyn Pool, waiters: &Waiters, n: u64) -> Result<Round<'a>, ExceedsLimit> {
    let listener = waiters.listen();
    Ok(match recheck(pool, n)? {
        Some(permit) => Round::Taken(permit),
        None => Round::Sleep(listener),
    })
}

/// Blocks until `n` permits are taken, or until `timeout` has passed (`None`: no limit).
pub(crate) fn block(
    pool: &dyn Pool,
    n: u64,
    timeout: Option<Duration>,
) -> Result<Permit<'_>, WaitError> {
    if let Some(permit) = try_take(pool, n)? {
        return Ok(permit);
    }
    let timed_out = |timeout| WaitError::Timeout {
        retry_after: Duration::ZERO,
        timeout,
    };
    let deadline = match timeout {
        Some(timeout) if timeout.is_zero() => return Err(timed_out(timeout)),
        // A deadline past what `Instant` can hold is no deadline.
        Some(timeout) => Instant::now().checked_add(timeout),
        None => None,
    };
    let waiters = pool.waiters(Token::new());
    let _registered = waiters.register(n);
    loop {
        let listener = match round(pool, waiters, n)? {
            Round::Taken(permit) => return Ok(permit),
            Round::Sleep(listener) => listener,
        };
        match (deadline, timeout) {
            (Some(deadline), Some(timeout)) => {
                if listener.wait_deadline(deadline).is_none() {
                    // Time is up: one last look, in case a release raced the deadline.
                    return recheck(pool, n)?.ok_or_else(|| timed_out(timeout));
                }
            }
            _ => listener.wait(),
        }
    }
}

/// Waits asynchronously until `n` permits are taken. Cancel-safe: dropping the future
/// deregisters it and passes on a notification it received but did not act on.
#[cfg(feature = "tokio")]
pub(crate) async fn until(pool: &dyn Pool, n: u64) -> Result<Permit<'_>, ExceedsLimit> {
    if let Some(permit) = try_take(pool, n)? {
        return Ok(permit);
    }
    let waiters = pool.waiters(Token::new());
    let _registered = waiters.register(n);
    loop {
        match round(pool, waiters, n)? {
            Round::Taken(permit) => return Ok(permit),
            Round::Sleep(listener) => listener.await,
        }
    }
}
