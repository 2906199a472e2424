//! The sharded window: per-core shards that lease small batches of permits
//! from a window engine. How it works, why it never over-admits, and the lease bound:
//! [the guide](crate::guide::sharded).

use std::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::{batch_size, ShardSettings, State, Word, TAKE_ONE};
use super::{MAX_BATCH, MAX_SHARDS};
use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::limiter::{Admission, Decision, Grant, RateLimiter};
use crate::sync::{atomic, spin_hint, thread_slot, AdminLock, AtomicU64, Ordering};
use crate::validate;
use crate::window::builder::WindowBuilder;
use crate::window::kind::{Kind, Sliding};
use crate::window::Window;

/// The largest batch a shard leases unless told otherwise ([`ShardedBuilder::batch`]).
pub(crate) const DEFAULT_BATCH: u64 = 32;

/// One shard: a lease and the epoch it was counted in, on its own cache line.
struct Shard {
    /// `[state | granted | taken]`, see [the guide](crate::guide::sharded).
    word: AtomicU64,
    /// The epoch of the lease, written only while the shard is `Refilling`.
    epoch: AtomicU64,
}

/// A sliding or fixed window whose permits are handed out by per-core shards, for limiters
/// that take millions of calls per second from many threads.
///
/// Built with [`WindowBuilder::sharded`] from [`SlidingWindow::builder`](crate::SlidingWindow::builder)
/// or [`FixedWindow::builder`](crate::FixedWindow::builder). Each shard leases a small batch of
/// permits from the shared window and hands them out with one `fetch_add` on its own cache
/// line; the shared line is touched once per batch.
///
/// **Guarantee.** Never over-admits: at most `limit` admissions in any B consecutive buckets
/// (one bucket for the fixed window), by any interleaving, across rollover, skewed clock
/// readings and `set_limit`, because every permit a shard hands out was counted in the shared
/// window for the bucket it is used in. It is *not* linearizable in the other direction: it
/// under-admits by at most `min(S × (b − 1), cap / 2)` permits per bucket (S shards, maximum
/// batch b, `cap` what the bucket could admit when it began), which a sliding window carries
/// for the B buckets each bucket stays in the window. The batch is `clamp(left / 2S, 1, b)`
/// (`left`: what the current bucket still has), so it shrinks as the window fills and the
/// last `4S` permits are handed out one by one. With one shard and `b = 1` it decides exactly
/// as its spec, except after a refund: a [`refund`](RateLimiter::refund) of `k` permits (a
/// caller's, or a shard's unused lease given back) whose CAS lands between a rollover's claim
/// and its install can be missed by a helper that publishes the old bucket's count into the
/// ring, so the next B−1 buckets of a sliding window count up to `k` permits too many
/// (refusals only, at most `k` permits in each, per such refund; the fixed window is exact,
/// [guide](crate::guide::refunds)). The argument: [`guide::sharded`](crate::guide::sharded).
///
/// **Other calls.** `try_acquire_n` (n ≥ 1) and the waits built on it go to the shared window
/// directly (exact); like every request for `n >= 1` permits, one that ends in
/// [`ExceedsLimit`] moves the window to its reading, as in the spec
/// ([guide](crate::guide::window#which-calls-move-time)). [`available`](RateLimiter::available) is the shared window's count: it
/// leaves out permits leased to shards and not yet used, so it is a lower bound of what
/// `try_acquire` could still get. [`set_limit`](RateLimiter::set_limit) drains the shards
/// (their unused permits of the current bucket are given back), waiting for refills in
/// progress, then changes the limit: every admission is decided under one limit.
///
/// **Memory.** The window's engine plus 128 bytes per shard; shards default to
/// `available_parallelism()` rounded up to a power of two.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
/// let clock = ManualClock::new();
/// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?.buckets(10)?)
///     .clock(clock.clone())
///     .sharded()
///     .shards(2)
///     .batch(8)
///     .build();
/// assert!(limiter.try_acquire()); // leases 8 (100 / (2 × 2), capped at 8), uses one
/// assert_eq!(limiter.available(), 92); // the 7 left in the shard are not counted
/// assert_eq!(limiter.shards(), 2);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
///
/// **How it works:** [`guide::sharded`](crate::guide::sharded) (leases, why it never over-admits, the lease bound).
pub struct ShardedWindow<C = TscClock, L: Layout = Padded> {
    /// The shared window the shards lease from: its engine, clock and unlimited flag, and
    /// every operation that bypasses the shards (`try_acquire_n`, grants, `available`).
    window: Window<Sliding, C, L>,
    shards: Box<[CachePadded<Shard>]>,
    /// `shards.len() - 1`; the count is a power of two.
    mask: usize,
    max_batch: u64,
    admin: AdminLock,
}

/// Builds a [`ShardedWindow`]: a [`WindowBuilder`] plus the shard count and batch size.
/// Both are clamped to their ranges rather than refused, so [`build`](Self::build) cannot
/// fail.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::builder::{ShardedBuilder, Sliding};
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
/// let clock = ManualClock::new();
/// let builder: ShardedBuilder<Sliding, ManualClock> = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?)
///     .clock(clock.clone())
///     .sharded()
///     .shards(2)
///     .batch(4);
/// let limiter = builder.build();
/// assert_eq!((limiter.shards(), limiter.max_batch()), (2, 4));
/// assert!(limiter.try_acquire());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ShardedBuilder<K, C = TscClock, L = Padded> {
    window: WindowBuilder<K, C, L>,
    settings: ShardSettings,
}

impl<K, C: Clock, L: Layout> WindowBuilder<K, C, L> {
    /// Hands out this window's permits through per-core shards ([`ShardedWindow`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{FixedWindow, RateLimiter, WindowQuota};
    /// let quota = WindowQuota::per(1_000, Duration::from_millis(10))?;
    /// let limiter = FixedWindow::builder(quota).sharded().build();
    /// assert!(limiter.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn sharded(self) -> ShardedBuilder<K, C, L> {
        ShardedBuilder {
            window: self,
            settings: ShardSettings::new(DEFAULT_BATCH),
        }
    }
}

impl<K, C, L> ShardedBuilder<K, C, L> {
    /// The number of shards, clamped to 1 ..= [`MAX_SHARDS`](ShardedWindow::MAX_SHARDS) and rounded up to a power of
    /// two. Default: `std::thread::available_parallelism()`, rounded up the same way.
    ///
    /// ```
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let quota = WindowQuota::per_second(100)?;
    /// assert_eq!(SlidingWindow::builder(quota).sharded().shards(3).build().shards(), 4);
    /// assert_eq!(SlidingWindow::builder(quota).sharded().shards(0).build().shards(), 1);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn shards(mut self, shards: u64) -> Self {
        self.settings.set_shards(shards);
        self
    }

    /// The largest batch a shard leases at once, clamped to 1 ..= [`MAX_BATCH`](ShardedWindow::MAX_BATCH) (default
    /// [`DEFAULT_BATCH`](ShardedWindow::DEFAULT_BATCH)). Larger batches touch the shared line less often and may leave more
    /// permits unused per bucket: at most `shards × (batch − 1)`.
    ///
    /// ```
    /// use ringlimit::{FixedWindow, ShardedWindow, WindowQuota};
    /// let quota = WindowQuota::per_second(100)?;
    /// assert_eq!(FixedWindow::builder(quota).sharded().batch(4).build().max_batch(), 4);
    /// let huge = FixedWindow::builder(quota).sharded().batch(u64::MAX).build();
    /// assert_eq!(huge.max_batch(), ShardedWindow::MAX_BATCH);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn batch(mut self, batch: u64) -> Self {
        self.settings.set_batch(batch);
        self
    }
}

impl<K: Kind, C: Clock, L: Layout> ShardedBuilder<K, C, L> {
    /// Builds the sharded window; it cannot fail.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let clock = ManualClock::new();
    /// let limiter = FixedWindow::builder(WindowQuota::per(4, Duration::from_secs(1))?)
    ///     .clock(clock.clone())
    ///     .sharded()
    ///     .shards(1)
    ///     .build();
    /// // Never more than the quota, whatever the shards lease.
    /// assert_eq!((0..10).filter(|_| limiter.try_acquire()).count(), 4);
    /// clock.advance(Duration::from_secs(1));
    /// assert!(limiter.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> ShardedWindow<C, L> {
        let window = self.window.build();
        ShardedWindow::new(
            Window::from_parts(window.engine, window.clock, window.unlimited),
            (self.settings.shards(), self.settings.batch()),
        )
    }
}

impl ShardedWindow {
    /// The largest batch a shard leases unless told otherwise ([`ShardedBuilder::batch`]).
    ///
    /// ```
    /// use ringlimit::ShardedWindow;
    /// assert!((1..=ShardedWindow::MAX_BATCH).contains(&ShardedWindow::DEFAULT_BATCH));
    /// ```
    pub const DEFAULT_BATCH: u64 = DEFAULT_BATCH;
    /// The largest batch a shard may lease (4096).
    ///
    /// ```
    /// use ringlimit::ShardedWindow;
    /// assert_eq!(ShardedWindow::MAX_BATCH, 4096);
    /// ```
    pub const MAX_BATCH: u64 = MAX_BATCH;
    /// The most shards (1024).
    ///
    /// ```
    /// use ringlimit::ShardedWindow;
    /// assert_eq!(ShardedWindow::MAX_SHARDS, 1024);
    /// ```
    pub const MAX_SHARDS: u64 = MAX_SHARDS;
}

impl<C: Clock, L: Layout> ShardedWindow<C, L> {
    fn new(window: Window<Sliding, C, L>, (shards, max_batch): (u64, u64)) -> Self {
        let shards: Box<[_]> = (0..shards)
            .map(|_| {
                CachePadded::new(Shard {
                    word: atomic(Word::open(0).pack()),
                    epoch: atomic(0),
                })
            })
            .collect();
        Self {
            mask: shards.len() - 1,
            window,
            shards,
            max_batch,
            admin: AdminLock::new(),
        }
    }

    /// The number of shards.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?).sharded().shards(3).build();
    /// assert_eq!(limiter.shards(), 4); // rounded up to a power of two
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The largest batch a shard leases at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?).sharded().shards(3).build();
    /// assert_eq!(limiter.max_batch(), ringlimit::ShardedWindow::DEFAULT_BATCH);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_batch(&self) -> u64 {
        self.max_batch
    }

    /// The width of one bucket (the whole window for a fixed window).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?).sharded().shards(3).build();
    /// assert_eq!(limiter.bucket_width(), Duration::from_millis(100)); // ten buckets by default
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn bucket_width(&self) -> Duration {
        Duration::from_nanos(self.window.engine.width())
    }

    /// The number of buckets B (1 for a fixed window).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?).sharded().shards(3).build();
    /// assert_eq!(limiter.buckets(), 10);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn buckets(&self) -> u64 {
        self.window.engine.buckets()
    }

    /// Bytes this limiter occupies, its ring and shards included.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?).sharded().shards(3).build();
    /// assert!(limiter.footprint() >= 4 * 128); // 128 bytes per shard, plus the engine
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        self.window.engine.footprint()
            + std::mem::size_of::<Self>()
            + self.shards.len() * std::mem::size_of::<CachePadded<Shard>>()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?).sharded().shards(3).build();
    /// let _now = ringlimit::clock::Clock::now_nanos(limiter.clock());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.window.clock
    }

    /// Takes one permit through shard `shard` (modulo the shard count) instead of the calling
    /// thread's own: for loom models and tests that must place callers on shards.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(100, Duration::from_secs(1))?).sharded().shards(3).build();
    /// assert!(limiter.try_acquire_on(0));
    /// assert!(limiter.try_acquire_on(3));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    #[doc(hidden)]
    pub fn try_acquire_on(&self, shard: usize) -> bool {
        self.take(shard, self.window.clock.now_nanos()) || self.window.unlimited
    }

    /// Whether a lease of `epoch` may serve a caller reading `now`: the epoch is not older
    /// than the reading, and the shared window has not left it.
    #[inline]
    fn current(&self, epoch: u64, now: u64) -> bool {
        self.window.engine.covers(epoch, now) && self.window.engine.is_current(epoch)
    }

    /// Takes one permit at `now` through shard `index`: the hot path.
    #[inline]
    fn take(&self, index: usize, now: u64) -> bool {
        let shard = &self.shards[index & self.mask];
        // Relaxed: only a filter; the lease epoch and the `fetch_add` below decide.
        let word = Word::unpack(shard.word.load(Ordering::Relaxed));
        if word.has_permit() {
            // Acquire: pairs with the refill's Release store of this epoch, so that refill's
            // close of the previous lease happens before the add below, which then lands on
            // that refill's lease or a later one, never on an older lease.
            let lease = shard.epoch.load(Ordering::Acquire);
            if self.current(lease, now) {
                // Relaxed: ordered after the close by the Acquire above; the returned word
                // alone says whether a permit was taken.
                let old = Word::unpack(shard.word.fetch_add(TAKE_ONE, Ordering::Relaxed));
                if old.has_permit() {
                    return true;
                }
            }
        }
        self.take_slow(shard, now)
    }

    /// The shard had no permit for `now` on the fast path: take one anyway, refill the
    /// shard, refuse, or go to the shared window.
    #[cold]
    fn take_slow(&self, shard: &Shard, now: u64) -> bool {
        loop {
            // Acquire: the epoch loaded below must be at least as new as the lease this word
            // belongs to (the refill that opened it stored the epoch first, then swapped the
            // word with Release); a Relaxed load here could pair a fresh lease with the
            // previous lease's epoch, judge it expired, and drop it.
            let seen = shard.word.load(Ordering::Acquire);
            let word = Word::unpack(seen);
            if word.state != State::Open {
                // Refilling or frozen: the shared window decides, exactly.
                return self.window.engine.try_acquire(now);
            }
            // Acquire: as in `take`.
            let lease = shard.epoch.load(Ordering::Acquire);
            let current = self.current(lease, now);
            if current && word.has_permit() {
                // Relaxed: as in `take`.
                let old = Word::unpack(shard.word.fetch_add(TAKE_ONE, Ordering::Relaxed));
                if old.has_permit() {
                    return true;
                }
                continue;
            }
            if current && !self.window.engine.has_room(now) {
                return false;
            }
            // Acquire: this refill follows the previous one (its lease and epoch store), so
            // the shard's lease epochs never decrease. Failure: the word moved; look again.
            if shard
                .word
                .compare_exchange(
                    seen,
                    Word::REFILLING.pack(),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                // The closed lease may still be current: another refill can have replaced
                // the lease this caller judged expired with an identical-looking word (ABA on
                // `seen`). Give its unused permits back (dropped if its epoch has passed), so
                // a shard never strands more than its last lease of an epoch.
                // Relaxed: the Acquire CAS above follows the Release swap that opened the
                // closed lease, and that refill stored its epoch before the swap.
                let closed = shard.epoch.load(Ordering::Relaxed);
                let _ = self.window.engine.refund(closed, word.unused(), None);
                return self.refill(shard, now);
            }
        }
    }

    /// Leases a batch into `shard`, which this caller owns (`Refilling`); takes one permit
    /// of it for the caller.
    fn refill(&self, shard: &Shard, now: u64) -> bool {
        let shards = self.shards.len() as u64;
        let lease = self
            .window
            .engine
            .lease(now, |left| batch_size(left, shards, self.max_batch));
        // Release: a caller that reads this epoch (Acquire) has the close above in its past,
        // so its `fetch_add` cannot land on the lease this refill replaced.
        shard.epoch.store(lease.epoch, Ordering::Release);
        // Release: the next refill's close (Acquire) sees this lease and epoch. A swap, not
        // a CAS: while `Refilling` only this caller changes the state; callers' racing adds
        // on the closed word were refused, so overwriting them loses nothing.
        shard.word.swap(
            Word::open(lease.granted.saturating_sub(1)).pack(),
            Ordering::Release,
        );
        lease.granted > 0
    }

    /// Takes back `shard`'s lease for `set_limit`, giving its unused permits back to the
    /// engine; waits for a refill in progress to finish first.
    fn freeze(&self, shard: &Shard) {
        loop {
            // Relaxed: the CAS below re-checks the value.
            let seen = shard.word.load(Ordering::Relaxed);
            let word = Word::unpack(seen);
            if word.state == State::Refilling {
                spin_hint();
                continue;
            }
            // Acquire: the refill that opened this lease stored its epoch before; the load
            // below reads it (no later refill can come while the shard is frozen).
            if shard
                .word
                .compare_exchange(
                    seen,
                    Word::FROZEN.pack(),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                // Relaxed: ordered by the Acquire CAS above.
                let epoch = shard.epoch.load(Ordering::Relaxed);
                let _ = self.window.engine.refund(epoch, word.unused(), None);
                return;
            }
        }
    }
}

impl<C: Clock, L: Layout> RateLimiter for ShardedWindow<C, L> {
    #[inline]
    fn try_acquire(&self) -> bool {
        // An unlimited limiter's flag is read only once the shard and the engine refused.
        self.take(thread_slot(), self.window.clock.now_nanos()) || self.window.unlimited
    }

    /// Bypasses the shards: exact, on the shared window.
    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        self.window.try_acquire_n(n)
    }

    fn available(&self) -> u64 {
        self.window.available()
    }

    /// Grants come from the shared window (not a shard), so a refund goes back there.
    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        self.window.try_grant(n)
    }

    fn refund(&self, grant: Grant) -> u64 {
        self.window.refund(grant)
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.window.unlimited {
            return Err(ConfigError::Unlimited);
        }
        let limit = validate::limit(limit, self.window.engine.max_limit())?;
        self.admin.with(|| {
            for shard in self.shards.iter() {
                self.freeze(shard);
            }
            self.window.engine.set_limit(limit);
            for shard in self.shards.iter() {
                // Release: the next refill's close (Acquire) comes after the limit change.
                shard.word.swap(Word::open(0).pack(), Ordering::Release);
            }
        });
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.window.limit()
    }

    fn clock(&self) -> &dyn Clock {
        RateLimiter::clock(&self.window)
    }
}

impl<C, L: Layout> fmt::Debug for ShardedWindow<C, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedWindow")
            .field("engine", &self.window.engine)
            .field("shards", &self.shards.len())
            .field("max_batch", &self.max_batch)
            .finish_non_exhaustive()
    }
}
