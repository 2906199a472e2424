//! The waiters of a concurrency limit: a count of registered waiters in one word and the
//! event releases wake them through. Why no wake-up is lost: [the guide](crate::guide::waiting).

use event_listener::{Event, EventListener, IntoNotification};

use crate::sync::{AtomicU64, Ordering};

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
    pub(super) fn register(&self, n: u64) -> Registration<'_> {
        let step = waiter(n);
        // SeqCst: the first half of the waiter side of the Dekker pattern (module docs):
        // ordered before every re-check of the count this waiter makes.
        self.count.fetch_add(step, Ordering::SeqCst);
        Registration {
            count: &self.count,
            step,
        }
    }

    pub(super) fn listen(&self) -> EventListener {
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
pub(super) struct Registration<'a> {
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
