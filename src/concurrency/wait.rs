//! Waiting for permits: blocking and async, woken by releases through `event-listener`.
//! Why no wake-up is lost: [the guide](crate::guide::waiting).

use std::time::{Duration, Instant};

use event_listener::{Event, EventListener, IntoNotification, Listener};

use crate::error::{ExceedsLimit, WaitError};
use crate::sync::{AtomicU64, Ordering};

use super::permit::{Permit, Pool, Token};
use super::word::{has_multi, waiter};

/// The registered waiters (`[multi: 32 | all: 32]`, see [`super::word`]) and the event they
/// listen to.
pub struct Waiters {
    count: AtomicU64,
    event: Event,
}

impl Waiters {
    pub(crate) fn new() -> Self {
        Self {
            count: AtomicU64::new(0),
            event: Event::new(),
        }
    }

    /// The waiters word, read after the caller's release or limit change.
    #[inline]
    pub(crate) fn registered(&self) -> u64 {
        // SeqCst: the second half of the release side of the Dekker pattern (module docs):
        // ordered after the release's SeqCst write of the count.
        self.count.load(Ordering::SeqCst)
    }

    /// Wakes waiters after `released` permits were released (`None`: after a limit change),
    /// given the waiters word `registered` read after that write.
    #[inline]
    pub(crate) fn wake(&self, registered: u64, released: Option<u64>) {
        if registered == 0 {
            return;
        }
        match released {
            Some(k) if !has_multi(registered) => {
                let k = usize::try_from(k).unwrap_or(usize::MAX);
                self.event.notify(k.additional());
            }
            _ => {
                self.event.notify(usize::MAX);
            }
        }
    }

    /// Registers a waiter for `n` permits until the returned guard is dropped.
    fn register(&self, n: u64) -> Registration<'_> {
        let step = waiter(n);
        // SeqCst: the first half of the waiter side of the Dekker pattern (module docs):
        // ordered before every re-check of the count this waiter makes.
        self.count.fetch_add(step, Ordering::SeqCst);
        Registration {
            count: &self.count,
            step,
        }
    }

    fn listen(&self) -> EventListener {
        self.event.listen()
    }
}

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Relaxed: a diagnostic snapshot.
        let count = self.count.load(Ordering::Relaxed);
        f.debug_struct("Waiters")
            .field("waiting", &(count & u64::from(u32::MAX)))
            .finish_non_exhaustive()
    }
}

/// A waiter's entry in the waiters word, removed when the wait ends however it ends
/// (permits taken, timeout, error, panic, or an async wait's future dropped).
struct Registration<'a> {
    count: &'a AtomicU64,
    step: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        // Relaxed: leaving late only costs a release a needless notification; nothing is
        // published through this write.
        self.count.fetch_sub(self.step, Ordering::Relaxed);
    }
}

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
