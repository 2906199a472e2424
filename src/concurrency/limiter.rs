//! The concurrency limiter: at most C permits in flight, released when their permit drops.
//! How it works: [the guide](crate::guide::concurrency).

use std::fmt;

use crate::validate;

use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::sync::{atomic, seq_cst_gap, AtomicU64, Ordering};

use super::in_flight::{available, decide, Verdict};
use super::limit::ConcurrencyLimit;
use super::permit::{Pool, Token};
use super::quota::ConcurrencyQuota;
use super::waiters::Waiters;
use super::word::{State, MAX_LIMIT};

/// A lock-free concurrency limiter: at most `limit` permits in flight at once, each handed out
/// as a [`Permit`](crate::outcome::Permit) that gives it back when dropped. The API is the [`ConcurrencyLimit`]
/// trait: `try_acquire`, blocking `acquire` and `try_acquire_for`, async `until_ready`.
///
/// **Guarantee.** Linearizable with respect to
/// [`ConcurrencySpec`](crate::spec::ConcurrencySpec), with no deviation: no interleaving ever
/// has more than `limit` permits out (or more than a lowered limit admits), and a request is
/// refused only if `in_flight + n > limit` held at its linearization point (the load a
/// refusal decides on; an admission's is its CAS). A permit leaked with `std::mem::forget`
/// stays counted, and a panicking holder's permit is released during unwinding: the count is
/// never too small, so leaks can only under-admit.
///
/// **Hot path.** `try_acquire` is a load and one CAS of one word (a refusal: the load alone).
/// Dropping the permit is one `fetch_sub` of that word and one load of the waiters count
/// beside it, on the same cache line; only when someone waits does it notify.
///
/// **Waits** sleep until a release or a limit change wakes them (`event-listener`), never
/// polling. They are not FIFO: a caller that does not wait may take a released permit
/// before a woken waiter re-checks; the waiter then sleeps until the next release.
///
/// **Limits.** `1 <= limit <= u32::MAX` ([`ConcurrencyLimiter::MAX_LIMIT`]),
/// checked when the [`ConcurrencyQuota`] is made. Memory: one 128-byte cache line with the default [`Padded`] layout on
/// x86_64 (the words alone on it), 24 bytes with [`Compact`](crate::cell::Compact); the first wait
/// allocates the event's listener list.
///
/// ```
/// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
/// let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(2)?);
/// let first = limiter.try_acquire().expect("1 of 2");
/// let second = limiter.acquire(); // free, so no wait
/// assert!(limiter.try_acquire().is_none());
/// drop(first);
/// assert_eq!(limiter.available(), 1);
/// # drop(second);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
///
/// **How it works:** [`guide::concurrency`](crate::guide::concurrency); waits: [`guide::waiting`](crate::guide::waiting).
pub struct ConcurrencyLimiter<L: Layout = Padded> {
    words: L::Cell<Words>,
}

/// The state word and the waiters beside it, on one cache line.
struct Words {
    /// `[limit: 32 | in_flight: 32]`, see [the guide](crate::guide::concurrency).
    state: AtomicU64,
    /// `[multi: 32 | all: 32]` and the event waits sleep on, see [the guide](crate::guide::waiting).
    waiters: Waiters,
}

impl ConcurrencyLimiter {
    /// The largest limit: a 32-bit field of the state word.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimiter, ConcurrencyQuota, ConfigError};
    /// assert_eq!(ConcurrencyLimiter::MAX_LIMIT, u64::from(u32::MAX));
    /// assert!(matches!(
    ///     ConcurrencyQuota::new(ConcurrencyLimiter::MAX_LIMIT + 1),
    ///     Err(ConfigError::LimitTooLarge { .. })
    /// ));
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// At most `quota.max()` permits in flight, in the default [`Padded`] layout.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// assert_eq!(ConcurrencyLimiter::new(ConcurrencyQuota::new(16)?).limit(), 16);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: ConcurrencyQuota) -> Self {
        Self::with_layout(quota)
    }
}

impl<L: Layout> ConcurrencyLimiter<L> {
    /// At most `quota.max()` permits in flight, in layout `L`: [`Compact`](crate::cell::Compact)
    /// for many instances (one per key), at the price of false sharing between neighbours.
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota};
    /// use ringlimit::cell::Compact;
    /// let limiter = ConcurrencyLimiter::<Compact>::with_layout(ConcurrencyQuota::new(4)?);
    /// assert!(limiter.footprint() <= 32);
    /// assert!(limiter.try_acquire().is_some());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_layout(quota: ConcurrencyQuota) -> Self {
        Self {
            words: L::cell(Words {
                state: atomic(State::new(quota.max()).pack()),
                waiters: Waiters::new(),
            }),
        }
    }

    /// Bytes this limiter occupies (not counting the event's allocation, made by the first
    /// wait).
    ///
    /// ```
    /// use ringlimit::{ConcurrencyLimiter, ConcurrencyQuota};
    /// assert!(ConcurrencyLimiter::new(ConcurrencyQuota::new(4)?).footprint() <= 256); // 128 on x86_64
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// The state word, read in `order`.
    fn state(&self, order: Ordering) -> State {
        State::unpack(self.words.state.load(order))
    }
}

impl<L: Layout> Pool for ConcurrencyLimiter<L> {
    #[inline]
    fn take(&self, n: u64, waiter: bool, _: Token) -> Result<bool, ExceedsLimit> {
        let order = if waiter {
            seq_cst_gap();
            // SeqCst: a registered waiter's re-check, the second half of the waiter side of
            // the Dekker pattern (see `wait`): it sees any release that missed its
            // registration.
            Ordering::SeqCst
        } else {
            // Acquire: pairs with the Release half of a release's `fetch_sub`, so what the
            // previous holder did with its permit happens before this caller's admission.
            Ordering::Acquire
        };
        let mut word = self.words.state.load(order);
        loop {
            let next = match decide(State::unpack(word), n)? {
                Verdict::Refuse { .. } => return Ok(false),
                Verdict::Admit { next, .. } => next.pack(),
            };
            if next == word {
                // n = 0: admitted at the load, nothing to write.
                return Ok(true);
            }
            // Set to `{ limit, in_flight: in_flight + n }`, only from the exact word decided
            // on, so the check and the count are one atomic step under one limit.
            // Acquire on success: as the load above. On failure, `order`: the value read is
            // decided on next, as the load's would have been.
            match self
                .words
                .state
                .compare_exchange_weak(word, next, Ordering::Acquire, order)
            {
                Ok(_) => return Ok(true),
                // Retry at once from the observed word (no backoff: it measured no faster here,
                // unlike the buckets'; see `sync::Backoff`).
                Err(actual) => word = actual,
            }
        }
    }

    #[inline]
    fn give_back(&self, n: u64, _: Token) {
        // SeqCst: Release publishes the holder's work to the next acquirer; in the single
        // total order, it is the first half of the release side of the Dekker pattern, before
        // the waiters count is read. `n` is what one acquisition added, so in_flight >= n:
        // no borrow from the limit half.
        self.words.state.fetch_sub(n, Ordering::SeqCst);
        seq_cst_gap();
        let waiters = &self.words.waiters;
        waiters.wake(waiters.registered(), Some(n));
    }

    fn waiters(&self, _: Token) -> &Waiters {
        &self.words.waiters
    }

    fn as_pool(&self, _: Token) -> &dyn Pool {
        self
    }
}

impl<L: Layout> ConcurrencyLimit for ConcurrencyLimiter<L> {
    fn limit(&self) -> u64 {
        // Acquire: as `take`'s load, though nothing is admitted on it.
        self.state(Ordering::Acquire).limit
    }

    fn in_flight(&self) -> u64 {
        // Acquire: as `limit`.
        self.state(Ordering::Acquire).in_flight
    }

    fn available(&self) -> u64 {
        // Acquire: as `limit`; one load, so limit and in_flight are from one instant.
        available(self.state(Ordering::Acquire))
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        let limit = validate::limit(limit, MAX_LIMIT)?;
        // Relaxed: only a starting guess for the CAS, which compares the whole word.
        let mut word = self.words.state.load(Ordering::Relaxed);
        loop {
            let next = State {
                limit,
                ..State::unpack(word)
            }
            .pack();
            // Set to `{ limit: new, in_flight }`. SeqCst: a raised limit is a release for the
            // waiters (the Dekker pattern, as in `give_back`); Relaxed on failure: the value is
            // only the next guess.
            match self.words.state.compare_exchange_weak(
                word,
                next,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(actual) => word = actual,
            }
        }
        seq_cst_gap();
        let waiters = &self.words.waiters;
        waiters.wake(waiters.registered(), None);
        Ok(())
    }
}

impl<L: Layout> fmt::Debug for ConcurrencyLimiter<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a diagnostic snapshot.
        let state = self.state(Ordering::Relaxed);
        f.debug_struct("ConcurrencyLimiter")
            .field("limit", &state.limit)
            .field("in_flight", &state.in_flight)
            .field("waiters", &self.words.waiters)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::layout::Compact;

    #[test]
    fn a_wait_that_ends_leaves_no_registration_behind() {
        let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap());
        let held = limiter.try_acquire().unwrap();
        for n in [1, 2] {
            let waited = limiter.try_acquire_for(n, Duration::from_millis(1));
            assert!(waited.is_err());
            assert_eq!(limiter.words.waiters.registered(), 0, "n = {n}");
        }
        drop(held);
        assert_eq!(limiter.state(Ordering::Relaxed), State::new(1));
    }

    #[test]
    fn refusals_and_empty_requests_write_nothing() {
        let limiter = ConcurrencyLimiter::<Compact>::with_layout(ConcurrencyQuota::new(2).unwrap());
        let held = limiter.try_acquire_n(2).unwrap().unwrap();
        let before = limiter.words.state.load(Ordering::Relaxed);
        assert!(limiter.try_acquire().is_none());
        assert_eq!(limiter.try_acquire_n(0).unwrap().unwrap().permits(), 0);
        assert_eq!(limiter.words.state.load(Ordering::Relaxed), before);
        drop(held);
    }

    #[test]
    fn footprints_are_as_documented() {
        let padded = ConcurrencyLimiter::new(ConcurrencyQuota::new(1).unwrap());
        let compact = ConcurrencyLimiter::<Compact>::with_layout(ConcurrencyQuota::new(1).unwrap());
        assert_eq!(compact.footprint(), 24);
        if std::mem::size_of::<crossbeam_utils::CachePadded<u8>>() == 128 {
            assert_eq!(padded.footprint(), 128);
        }
        assert!(padded.footprint() <= 256);
    }
}
