//! The sharded bucket: per-core shards that lease small batches of permits
//! from the GCRA schedule. How it works, why it never over-admits, and what it under-admits:
//! [the guide](crate::guide::sharded_bucket).

use std::fmt;

use crossbeam_utils::CachePadded;

use super::{batch_size, ShardSettings, State, Word, TAKE_ONE};
use super::{MAX_BATCH, MAX_SHARDS};
use crate::bucket::builder::BucketBuilder;
use crate::bucket::engine::Direct;
use crate::bucket::gcra::{Mode, Params};
use crate::bucket::limiter::{limit_change, Scheduled};
use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::limiter::{Admission, Decision, Grant, RateLimiter};
use crate::rate::Rate;
use crate::sync::{atomic, spin_hint, thread_slot, AdminLock, AtomicU64, Ordering};

use super::slots::Slots;

/// The largest batch a shard leases unless told otherwise ([`ShardedBucketBuilder::batch`]).
pub(crate) const DEFAULT_BATCH: u64 = 256;

/// One shard: a lease and where its permits sit on the schedule, on its own cache line.
struct Shard {
    /// `[state: 2 | granted: 20 | taken: 42]`, see [the guide](crate::guide::sharded_bucket#the-shard-word).
    word: AtomicU64,
    /// [`Slots::first`] of the latest lease with fast permits; written only while the shard
    /// is `Refilling`, after `period`.
    first: AtomicU64,
    /// [`Slots::period`], as `first`.
    period: AtomicU64,
    /// A line on or above every slots ever stored in `first` and `period`, at every
    /// `j < max_batch` ([`Slots::widened`]): a new lease keeps only the fast permits whose
    /// slots begin on or above it ([`Slots::fast_within`]). Read and written by the shard's
    /// refiller (and read as a hint by the slow path).
    bound_first: AtomicU64,
    /// The bound's period, as `bound_first`.
    bound_period: AtomicU64,
}

/// A token bucket or leaky meter whose permits are handed out by per-core shards, for
/// limiters that take millions of calls per second from many threads.
///
/// Built with [`BucketBuilder::sharded`] from [`TokenBucket::builder`](crate::TokenBucket::builder)
/// or [`LeakyBucket::meter_builder`](crate::LeakyBucket::meter_builder). Each shard leases a
/// small batch of permits from the shared GCRA schedule (one CAS moving its time by
/// `batch × T`) and hands them out with one `fetch_add` on its own cache line.
///
/// **Guarantee.** Never over-admits: at most `burst + ⌊Δt/T⌋` admissions in any interval of
/// length `Δt`, by any interleaving, across reconfiguration and refunds, because every
/// permit a shard hands out owns a slot of the schedule that has not begun when it is used
/// (the *slot rule*; a lease's permits are handed out latest slot first).
/// It is *not* linearizable in the other direction: leased permits not yet used count as
/// taken, at most `S × (b − 1)` at any instant (S shards, maximum batch b), and a permit
/// whose slot has begun unused is lost (while the bucket is full that is the refill the
/// spec also loses; otherwise it is at most `b − 1` per lease). The batch is
/// `clamp(available / 2S, 1, b)`, so it shrinks as the bucket empties and the last `4S`
/// permits are handed out one by one. With one shard and `b = 1` it decides exactly as its
/// spec. A [`refund`](RateLimiter::refund), [`set_limit`](RateLimiter::set_limit) or
/// [`set_rate`](Self::set_rate) drains the shards (their leases are dropped, at most
/// `S × (b − 1)` permits); a refund that restores nothing and a change refused as invalid
/// against the configuration in force do not (a change that a racing reconfiguration makes
/// invalid after that check may still drain before it is refused: an under-admission only,
/// nothing of it applied). A shaper ([`LeakyBucket::shaper_builder`](crate::LeakyBucket::shaper_builder))
/// leases one permit at a time: exact, and no faster than unsharded.
/// The argument: [`guide::sharded_bucket`](crate::guide::sharded_bucket).
///
/// **Residual: a clock that runs backwards.** A permit from a lease counts at the later of
/// the caller's reading and the lease's (a time the clock showed before the admission, so
/// inside the call for a monotonic clock). A reading δ behind its lease's (a clock set
/// back, or a TSC behind on another core) may use a permit whose slot ends more than a
/// burst after that reading: measured at the readings themselves, at most `⌈δ_max/T⌉` too
/// many in any interval, δ_max the largest such lag (every slot lies within `τ + δ_max` of
/// its use and slots are disjoint across leases). Monotonic clocks ([`StdClock`](crate::clock::StdClock), an invariant
/// TSC, a [`ManualClock`](crate::clock::ManualClock) moved forward) have none; the unsharded
/// bucket, where an older reading only decides more strictly, has none either.
///
/// **Other calls.** `try_acquire_n` and the waits built on it, grants and
/// [`available`](RateLimiter::available) go to the shared schedule directly: exact against
/// the shared schedule only. Permits leased to shards and not yet used count as taken
/// there, so an `n`-permit call may be refused (and a wait last longer) while up to
/// `S × (b − 1)` permits sit in shards: it under-admits by at most that, and never
/// over-admits. `available` leaves them out, so it is a lower bound.
///
/// **Memory.** The engine plus 128 bytes per shard; shards default to
/// `available_parallelism()` rounded up to a power of two.
///
/// ```
/// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
/// let clock = ManualClock::new();
/// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 100)?)
///     .clock(clock.clone())
///     .sharded()
///     .shards(2)
///     .batch(8)
///     .build();
/// assert!(bucket.try_acquire()); // leases 8 (100 / (2 × 2), capped at 8), uses one
/// assert_eq!(bucket.available(), 92); // the 7 left in the shard count as taken
/// assert_eq!(bucket.shards(), 2);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct ShardedBucket<C = TscClock, L: Layout = Padded> {
    core: Scheduled<C, L>,
    shards: Box<[CachePadded<Shard>]>,
    /// `shards.len() - 1`; the count is a power of two.
    mask: usize,
    max_batch: u64,
    /// The fewest available permits worth a lease: `4 × shards`, from which the batch
    /// (`available / 2S`) is at least 2; `u64::MAX` when the batch is 1.
    plenty: u64,
    /// Serializes drains (reconfiguration, refunds); admissions never take it.
    admin: AdminLock,
}

/// Builds a [`ShardedBucket`]: a [`BucketBuilder`] plus the shard count and batch size.
/// Both are clamped to their ranges rather than refused, so [`build`](Self::build) cannot
/// fail.
///
/// ```
/// use ringlimit::builder::{ShardedBucketBuilder, Token};
/// use ringlimit::{clock::ManualClock, BucketQuota, RateLimiter, TokenBucket};
/// let builder: ShardedBucketBuilder<Token, ManualClock> = TokenBucket::builder(BucketQuota::per_second(100)?)
///     .clock(ManualClock::new())
///     .sharded()
///     .shards(2)
///     .batch(4);
/// let bucket = builder.build();
/// assert_eq!((bucket.shards(), bucket.max_batch()), (2, 4));
/// assert!(bucket.try_acquire());
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ShardedBucketBuilder<K, C = TscClock, L = Padded> {
    bucket: BucketBuilder<K, C, L>,
    settings: ShardSettings,
}

impl<K, C: Clock, L: Layout> BucketBuilder<K, C, L> {
    /// Hands out this bucket's permits through per-core shards ([`ShardedBucket`]).
    ///
    /// ```
    /// use ringlimit::{BucketQuota, LeakyBucket, RateLimiter, TokenBucket};
    /// let quota = BucketQuota::per_second(1_000)?;
    /// assert!(TokenBucket::builder(quota).sharded().build().try_acquire());
    /// assert!(LeakyBucket::meter_builder(quota).sharded().build().try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn sharded(self) -> ShardedBucketBuilder<K, C, L> {
        ShardedBucketBuilder {
            bucket: self,
            settings: ShardSettings::new(DEFAULT_BATCH),
        }
    }
}

impl<K, C, L> ShardedBucketBuilder<K, C, L> {
    /// The number of shards, clamped to 1 ..= [`MAX_SHARDS`](ShardedBucket::MAX_SHARDS) and
    /// rounded up to a power of two. Default: `std::thread::available_parallelism()`,
    /// rounded up the same way.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, TokenBucket};
    /// let quota = BucketQuota::per_second(100)?;
    /// assert_eq!(TokenBucket::builder(quota).sharded().shards(3).build().shards(), 4);
    /// assert_eq!(TokenBucket::builder(quota).sharded().shards(0).build().shards(), 1);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn shards(mut self, shards: u64) -> Self {
        self.settings.set_shards(shards);
        self
    }

    /// The largest batch a shard leases at once, clamped to 1 ..=
    /// [`MAX_BATCH`](ShardedBucket::MAX_BATCH) (default
    /// [`DEFAULT_BATCH`](ShardedBucket::DEFAULT_BATCH)). Larger batches touch the shared
    /// line less often and may hold more permits unused: at most `shards × (batch − 1)`.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, ShardedBucket, TokenBucket};
    /// let quota = BucketQuota::per_second(100)?;
    /// assert_eq!(TokenBucket::builder(quota).sharded().batch(4).build().max_batch(), 4);
    /// let huge = TokenBucket::builder(quota).sharded().batch(u64::MAX).build();
    /// assert_eq!(huge.max_batch(), ShardedBucket::MAX_BATCH);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn batch(mut self, batch: u64) -> Self {
        self.settings.set_batch(batch);
        self
    }
}

impl<K, C: Clock, L: Layout> ShardedBucketBuilder<K, C, L> {
    /// Builds the sharded bucket; it cannot fail. A shaper's batch is 1.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(1)?, 4)?)
    ///     .clock(clock.clone())
    ///     .sharded()
    ///     .shards(1)
    ///     .build();
    /// // Never more than the burst, whatever the shards lease.
    /// assert_eq!((0..10).filter(|_| bucket.try_acquire()).count(), 4);
    /// clock.advance(Duration::from_secs(1));
    /// assert!(bucket.try_acquire());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> ShardedBucket<C, L> {
        let shards = self.settings.shards();
        let (engine, clock, unlimited) = self.bucket.engine();
        let max_batch = match engine.config().mode {
            Mode::Meter => self.settings.batch(),
            // A shaper admits a call only when its slot is now: no permit may wait in a
            // shard.
            Mode::Shaper => 1,
        };
        let shards: Box<[_]> = (0..shards)
            .map(|_| {
                CachePadded::new(Shard {
                    word: atomic(Word::open(0).pack()),
                    first: atomic(Slots::NONE.first),
                    period: atomic(Slots::NONE.period),
                    bound_first: atomic(Slots::NONE.first),
                    bound_period: atomic(Slots::NONE.period),
                })
            })
            .collect();
        ShardedBucket {
            core: Scheduled {
                engine,
                clock,
                unlimited,
            },
            mask: shards.len() - 1,
            plenty: if max_batch > 1 {
                4 * shards.len() as u64
            } else {
                u64::MAX
            },
            shards,
            max_batch,
            admin: AdminLock::new(),
        }
    }
}

impl ShardedBucket {
    /// The largest batch a shard leases unless told otherwise
    /// ([`ShardedBucketBuilder::batch`]).
    ///
    /// ```
    /// use ringlimit::ShardedBucket;
    /// assert!((1..=ShardedBucket::MAX_BATCH).contains(&ShardedBucket::DEFAULT_BATCH));
    /// ```
    pub const DEFAULT_BATCH: u64 = DEFAULT_BATCH;
    /// The largest batch a shard may lease (4096).
    ///
    /// ```
    /// use ringlimit::ShardedBucket;
    /// assert_eq!(ShardedBucket::MAX_BATCH, 4096);
    /// ```
    pub const MAX_BATCH: u64 = MAX_BATCH;
    /// The most shards (1024).
    ///
    /// ```
    /// use ringlimit::ShardedBucket;
    /// assert_eq!(ShardedBucket::MAX_SHARDS, 1024);
    /// ```
    pub const MAX_SHARDS: u64 = MAX_SHARDS;
}

impl<C: Clock, L: Layout> ShardedBucket<C, L> {
    /// The number of shards.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(100)?).sharded().shards(3).build();
    /// assert_eq!(bucket.shards(), 4); // rounded up to a power of two
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The largest batch a shard leases at once (1 for a shaper).
    ///
    /// ```
    /// use ringlimit::{BucketQuota, ShardedBucket, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(100)?).sharded().build();
    /// assert_eq!(bucket.max_batch(), ShardedBucket::DEFAULT_BATCH);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_batch(&self) -> u64 {
        self.max_batch
    }

    /// The rate in force (a meter's leak rate).
    ///
    /// ```
    /// use ringlimit::{BucketQuota, Rate, TokenBucket};
    /// let rate = Rate::per_second(5)?;
    /// let bucket = TokenBucket::builder(BucketQuota::new(rate, 1)?).sharded().build();
    /// assert_eq!(bucket.rate(), rate);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        Rate::from_period_nanos(self.core.engine.config().period)
    }

    /// Changes the rate now, keeping the permits the shared schedule has now (rounded
    /// down); the shards' leases are dropped first, so no permit leased under the old rate
    /// is used after the change.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?)
    ///     .clock(clock.clone())
    ///     .sharded()
    ///     .build();
    /// assert!(bucket.try_acquire());
    /// bucket.set_rate(Rate::per_second(1)?)?;
    /// assert_eq!(bucket.try_acquire_n(1)?.retry_after(), Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        if self.core.unlimited {
            return Err(ConfigError::Unlimited);
        }
        let change = move |config: Params, cap| Ok((config.with_rate(rate, cap)?, cap));
        // A change refused against the configuration in force drains nothing.
        self.core.engine.check_change(change)?;
        self.drained(|| self.core.engine.reconfigure(&self.core.clock, change))
    }

    /// Bytes this limiter occupies, its shards included.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(100)?).sharded().shards(4).build();
    /// assert!(bucket.footprint() >= 4 * 128); // 128 bytes per shard, plus the engine
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.shards.len() * std::mem::size_of::<CachePadded<Shard>>()
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use ringlimit::{clock::{Clock, ManualClock}, BucketQuota, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(1)?).clock(ManualClock::new()).sharded().build();
    /// bucket.clock().advance_nanos(3);
    /// assert_eq!(bucket.clock().now_nanos(), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.core.clock
    }

    /// Takes one permit through shard `shard` (modulo the shard count) instead of the calling
    /// thread's own: for loom models and tests that must place callers on shards.
    ///
    /// ```
    /// use ringlimit::{BucketQuota, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(100)?).sharded().shards(2).build();
    /// assert!(bucket.try_acquire_on(0));
    /// assert!(bucket.try_acquire_on(3));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    #[doc(hidden)]
    pub fn try_acquire_on(&self, shard: usize) -> bool {
        self.take(shard, self.core.clock.now_nanos()) || self.core.unlimited
    }

    /// Takes one permit at `now_raw` (clock ns) through shard `index`: the hot path.
    #[inline]
    fn take(&self, index: usize, now_raw: u64) -> bool {
        let shard = &self.shards[index & self.mask];
        let now = self.core.engine.since(now_raw);
        // Relaxed: only a filter; the slot loads and the `fetch_add` below decide.
        let word = Word::unpack(shard.word.load(Ordering::Relaxed));
        if word.has_permit() {
            let slots = Self::slots(shard);
            // The add takes this word's next permit or, if others took it first, one whose
            // slot begins earlier: a lapsed one sends the caller to the slow path.
            if slots.usable(word, now) {
                // Release: a drain's freeze (an Acquire CAS reading this add or a later
                // read-modify-write of the word, so in its release sequence) synchronizes
                // with it, so this caller's clock reading happens before the drain's and
                // the refund or conversion folds this use in at a reading no older than
                // its own (see `drained`). The add is ordered after the close of every
                // lease older than the slots read above by their Acquire loads; the
                // returned word alone says which permit was taken.
                let old = Word::unpack(shard.word.fetch_add(TAKE_ONE, Ordering::Release));
                if slots.usable(old, now) {
                    return true;
                }
            }
        }
        self.take_slow(shard, now_raw, now)
    }

    /// The slots of `shard`'s lease, as a caller that loads them before its `fetch_add` or
    /// CAS on the word needs them: `first`, then `period`.
    #[inline]
    fn slots(shard: &Shard) -> Slots {
        // Acquire (both): pairs with the refill's Release stores (`period`, then `first`),
        // so that refill's close of the previous lease happens before anything this caller
        // does next: its add or CAS lands on that refill's lease or a later one, whose
        // fast slots lie on or above these (the shard's bound, the guide). `first` is loaded first: the `period` it is
        // paired with then belongs to the same lease or a later one.
        let first = shard.first.load(Ordering::Acquire);
        let period = shard.period.load(Ordering::Acquire);
        Slots { first, period }
    }

    /// The shard had no usable permit for `now` on the fast path: take one after all (the
    /// word moved), refuse, refill the shard, or go to the engine.
    #[cold]
    fn take_slow(&self, shard: &Shard, now_raw: u64, now: u64) -> bool {
        loop {
            // Acquire: the slots loaded below are at least as new as this word's lease (its
            // refill stored them before the Release swap that opened it).
            let seen = shard.word.load(Ordering::Acquire);
            let word = Word::unpack(seen);
            if word.state != State::Open {
                // Refilling or frozen: the engine decides, exactly.
                return self.core.engine.try_acquire(now_raw);
            }
            if word.has_permit() && Self::slots(shard).usable(word, now) {
                // AcqRel: Acquire as the load above; Release as the fast path's add (this
                // takes a permit: a drain's freeze must see the clock reading before it).
                // Failure: the word moved; look again.
                let taken = word.taking(word.taken + 1).pack();
                if shard
                    .word
                    .compare_exchange(seen, taken, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            // Nothing usable is left in the lease: the engine decides. Unless a lease would
            // be more than the caller's single permit (`plenty` available, and its slots
            // starting late enough above the shard's bound to keep a fast permit), it takes
            // that permit from the engine directly, leaving the shard as it is, or refuses
            // with loads only (the engine's confirmed load is the refusal's linearization
            // point; the lease had nothing usable at `now` when `seen` was loaded).
            // Relaxed (both): only a hint; the refill re-reads the bound as the shard's
            // owner and decides the batch from it.
            let bound = Slots {
                first: shard.bound_first.load(Ordering::Relaxed),
                period: shard.bound_period.load(Ordering::Relaxed),
            };
            let max_batch = self.max_batch;
            let worth = |start: u64, period: u64| {
                let slots = Slots {
                    first: start.saturating_add(period),
                    period,
                };
                slots.fast_within(bound, max_batch) > 0
            };
            match self.core.engine.take_unless_plenty(now, self.plenty, worth) {
                Direct::Admitted => return true,
                Direct::Refused => return false,
                Direct::Plenty => {}
            }
            // Otherwise by a refill.
            // Acquire: this refill follows the previous one (its stores of the slots and the
            // bound), so each lease is judged against a bound on every slots stored before
            // it. Failure: look again.
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
                // The closed lease may be a later one than the slots judged above: another
                // refill can have opened a word identical to `seen` (ABA). Its slots are
                // the stored ones now (its refill stored them before the Release swap that
                // opened it, which the Acquire CAS above follows); if it still has a usable
                // permit, take it and reopen the lease instead of dropping it.
                if word.has_permit() && Self::slots(shard).usable(word, now) {
                    // Release: as the refill's open.
                    shard
                        .word
                        .swap(word.taking(word.taken + 1).pack(), Ordering::Release);
                    return true;
                }
                return self.refill(shard, now);
            }
        }
    }

    /// Leases a batch into `shard`, which this caller owns (`Refilling`); takes the first
    /// permit of it for the caller. The closed lease's unused permits are dropped: their
    /// slots have all begun (or the lease was spent).
    fn refill(&self, shard: &Shard, now: u64) -> bool {
        let shards = self.shards.len() as u64;
        // Relaxed (both): the Acquire CAS that made this caller the owner follows every
        // earlier refill's stores.
        let bound = Slots {
            first: shard.bound_first.load(Ordering::Relaxed),
            period: shard.bound_period.load(Ordering::Relaxed),
        };
        let lease = self.core.engine.lease(now, |left, start, period| {
            let slots = Slots {
                first: start.saturating_add(period),
                period,
            };
            // Only the fast permits whose slots begin on or above the bound on every slots
            // stored before (after a refund moved the schedule back, or a faster rate, that
            // may be none: the lease is then the refiller's permit alone).
            let fast = slots.fast_within(bound, self.max_batch);
            batch_size(left, shards, self.max_batch).min(fast.saturating_add(1))
        });
        let fast = match lease {
            Some(lease) if lease.granted > 1 => {
                let slots = Slots {
                    first: lease.start.saturating_add(lease.period),
                    period: lease.period,
                };
                let bound = bound.widened(slots, self.max_batch);
                // Relaxed (both): written by the owner only (a slow caller's read is a hint
                // the refill reads again as owner); the next owner's Acquire close follows
                // this caller's Release open.
                shard.bound_first.store(bound.first, Ordering::Relaxed);
                shard.bound_period.store(bound.period, Ordering::Relaxed);
                // Release (both): `period` first, then `first`, so that a caller that
                // loads this `first` (Acquire) sees this period or a later one; and this
                // caller's close of the previous lease happens before what they do next.
                shard.period.store(lease.period, Ordering::Release);
                shard
                    .first
                    .store(lease.start.saturating_add(lease.period), Ordering::Release);
                lease.granted - 1
            }
            _ => 0,
        };
        // Release: the next refill's close (Acquire) and the slow path's loads see the slots
        // stored above. A swap, not a CAS: while `Refilling` only this caller changes the
        // state; callers' racing adds on the closed word were refused, so overwriting them
        // loses nothing.
        shard.word.swap(Word::open(fast).pack(), Ordering::Release);
        lease.is_some()
    }

    /// Runs `change` with every shard frozen and its lease dropped; reopens them empty.
    /// Refills in progress are waited out (a few atomic steps each).
    ///
    /// `change` (a refund or a conversion) reads the clock after every freeze, and must:
    /// [`Engine::refund`] and [`Engine::reconfigure`] are right only if their reading is no
    /// older than that of any admission they fold in. The engine's own admissions are
    /// ordered by its word; a fast-path use of a dropped lease is not in the engine's word,
    /// so it is ordered here: the use's `fetch_add` (or slow-path CAS) is Release and comes
    /// after its clock reading; the freeze's CAS is Acquire and reads that add or a later
    /// read-modify-write of the word (every write to a shard word is one, so they continue
    /// the add's release sequence); so the use's reading happens before the freeze, which
    /// is sequenced before `change`'s reading. A clock whose readings follow
    /// happens-before (any clock of one machine, and loom's) then gives `change` a reading
    /// no older than the use's. A use whose add lands after the freeze sees a frozen word
    /// and goes to the engine.
    fn drained<R>(&self, change: impl FnOnce() -> R) -> R {
        self.admin.with(|| {
            for shard in self.shards.iter() {
                Self::freeze(shard);
            }
            let result = change();
            for shard in self.shards.iter() {
                // Release: the next refill's close (Acquire) comes after the change.
                shard.word.swap(Word::open(0).pack(), Ordering::Release);
            }
            result
        })
    }

    /// Takes back `shard`'s lease, waiting for a refill in progress to finish first.
    fn freeze(shard: &Shard) {
        loop {
            // Relaxed: the CAS below re-checks the value.
            let seen = shard.word.load(Ordering::Relaxed);
            if Word::unpack(seen).state == State::Refilling {
                spin_hint();
                continue;
            }
            // Acquire: synchronizes with every Release add or CAS that took a permit of the
            // closed lease (this CAS reads the last of them or a later read-modify-write, in
            // their release sequences), so their clock readings happen before the change's
            // (see `drained`). A refill in progress was waited out above.
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
                return;
            }
        }
    }

    /// The configuration in force.
    fn config(&self) -> Params {
        self.core.engine.config()
    }
}

impl<C: Clock, L: Layout> RateLimiter for ShardedBucket<C, L> {
    #[inline]
    fn try_acquire(&self) -> bool {
        // An unlimited bucket's flag is read only once the shard and the engine refused.
        self.take(thread_slot(), self.core.clock.now_nanos()) || self.core.unlimited
    }

    /// Bypasses the shards: exact against the shared schedule, which counts permits held
    /// in shards as taken (under-admits by at most `S × (b − 1)`, see the type docs).
    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        self.core.try_acquire_n(n)
    }

    fn available(&self) -> u64 {
        self.core.available()
    }

    /// Grants come from the shared schedule (not a shard).
    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        self.core.try_grant(n)
    }

    /// Drains the shards first: a refund moves the schedule back, which would move the
    /// slots of leases taken after the grant out from under their deadlines. A refund that
    /// restores nothing (no permits, another epoch, a mark the schedule or the clock has
    /// passed) returns without draining.
    fn refund(&self, grant: Grant) -> u64 {
        if self.core.unlimited || !grant.is_from(self.core.engine.owner()) {
            return 0;
        }
        if self
            .core
            .engine
            .refunds_nothing(&self.core.clock, grant.ticket())
        {
            return 0;
        }
        self.drained(|| self.core.engine.refund(&self.core.clock, grant.ticket()))
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.core.unlimited {
            return Err(ConfigError::Unlimited);
        }
        let change = limit_change(limit);
        // A change refused against the configuration in force drains nothing.
        self.core.engine.check_change(change)?;
        self.drained(|| self.core.engine.reconfigure(&self.core.clock, change))
    }

    fn limit(&self) -> u64 {
        if self.core.unlimited {
            return u64::MAX;
        }
        self.config().limit
    }

    fn clock(&self) -> &dyn Clock {
        &self.core.clock
    }
}

impl<C, L: Layout> fmt::Debug for ShardedBucket<C, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedBucket")
            .field("engine", &self.core.engine)
            .field("shards", &self.shards.len())
            .field("max_batch", &self.max_batch)
            .finish_non_exhaustive()
    }
}
