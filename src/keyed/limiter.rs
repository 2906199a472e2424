//! [`Keyed`]: one cell per key in a concurrent map, with a bound on the keys held.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::error::ConfigError;
use crate::limiter::{Admission, Decision, Grant, Owner, Ticket};
use crate::sync::KeyMap;

use super::error::KeyedError;
use super::family::{Family, FromQuota, RateFamily, TryFromQuota};
use super::key::ToKey;
use super::store::Store;
use super::table::Missing;
use super::tier::Assigned;

/// A limit per key (user, IP, API key): one clockless cell per key, every key sharing one
/// configuration and one clock, so reconfiguring (through [`config`](Self::config)) changes
/// every key at once, each key converting on its next access with its counts kept.
///
/// **Where the cells live.** Bounded with [`max_keys`](Self::max_keys) (up to 2^27 keys), in
/// a table of slots sized from the bound: a keyed fingerprint of the key beside its cell,
/// inline, so a call reads one cache line in the common case, takes no lock and writes
/// nothing other threads share but its cell's CAS ([the guide](crate::guide::keyed_table)).
/// Unbounded (the default), or for [`SlidingLogs`](super::SlidingLogs), whose cells hold a
/// ring on the heap, in a concurrent map that grows with the keys (`dashmap::DashMap`: a
/// call takes its shard's read lock). A service facing keys it does not choose bounds them.
///
/// **Bounded memory.** At most [`max_keys`](Self::max_keys) keys are held, at all times
/// (once [`set_max_keys`](Self::set_max_keys) lowers the bound, no new key is created
/// above it, and the keys held beyond it go as they turn idle). A key is dropped only while its cell is *idle*, indistinguishable from a fresh one now and
/// under every later reconfiguration (nothing counted in its window or log, a full bucket,
/// an empty shaper schedule, nothing in flight), so dropping it changes no decision.
/// Dropping runs as part of normal operation: when a new key finds the limiter full, one
/// sweep drops every idle key (in the table: marks them, waits until no call can hold
/// them, and frees those still idle; in the map: each shard write-locked while its keys are
/// looked at).
/// A sweep runs once `max_keys / 8` keys were created or refused since the last one (so at
/// most 8 entries visited per such key, amortized), or once a batch of `max_keys / 64` keys
/// (at most 2^17) is idle: of those the last sweep kept (it gathers their idle times), or of
/// those created since (so at most 64 entries visited per key dropped, whatever the clock
/// does). When the limiter is full of keys that are not idle, a new key is refused
/// ([`KeyedError::Full`]), never admitted without a limit; the keys already held keep
/// their exact limits. A new key is also refused while fewer than a batch of the held keys
/// are idle, and while a sweep is running (it gives its room back when it ends): a sweep
/// over a million keys takes tens of milliseconds.
///
/// **Families** (bytes per key of the cell; the table adds an 8-byte tag and a fifth
/// more slots than `max_keys`, the map its key and overhead): [`Buckets`](super::Buckets) (token bucket or leaky meter, 8),
/// [`Shapers`](super::Shapers) (16), [`FixedWindows`](super::FixedWindows) (16),
/// [`SlidingWindows<B>`](super::SlidingWindows) (16 + 8·B),
/// [`SlidingLogs`](super::SlidingLogs) (24 + 8·C), [`InFlight`](super::InFlight) (8,
/// concurrency: [`try_acquire_permit`](Self::try_acquire_permit)). Some keys can have a quota
/// of their own: [`Tier`](super::Tier) (once any has, each request also looks the key up
/// among the assigned ones).
///
/// **Exactness per key.** Each key's decisions are those of its cell, linearizable like the
/// single limiter. A key is never dropped in the middle of a request (in the table, a sweep
/// frees a cell only after every call that found it is done; in the map, a request holds its
/// shard's shared lock and a drop its exclusive one), two threads creating one key get one
/// cell, and a call stalled across a drop and the slot's reuse by another key never charges
/// that key. The table stores fingerprints, not keys: two keys whose 62-bit fingerprints
/// agree share a cell, which only under-admits both (chance about `n² / 2^63` for `n` keys
/// held at once: 1.1 × 10⁻⁷ at a million keys, 1.1 × 10⁻³ at a hundred million). The clock
/// is read during the lookup: a clock must not call back into the limiter.
///
/// ```
/// use ringlimit::keyed::{FixedWindows, Keyed};
/// use ringlimit::WindowQuota;
/// let per_user: Keyed<String, FixedWindows> = Keyed::try_new(WindowQuota::per_minute(2)?)?;
/// assert!(per_user.try_acquire("alice") && per_user.try_acquire("alice"));
/// assert!(!per_user.try_acquire("alice"));
/// assert!(per_user.try_acquire("bob"));
/// assert_eq!(per_user.available("carol"), 2); // creates nothing
/// assert_eq!(per_user.len(), 2);
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct Keyed<K, F: Family, C: Clock = TscClock, S: BuildHasher = RandomState> {
    cells: Store<K, F::Cell, S>,
    /// Hashes keys for the table (the map holds a clone of its own).
    hasher: S,
    /// Keys assigned a [`Tier`] of their own: each with its cell under the tier's
    /// configuration. Never swept; not counted in `max_keys`.
    pub(super) assigned: KeyMap<K, Assigned<F>, S>,
    /// Whether any key was ever assigned a tier: until then requests skip `assigned`.
    pub(super) any_assigned: AtomicBool,
    config: F::Config,
    clock: C,
    /// The bound on keys held (at least 1); [`set_max_keys`](Self::set_max_keys) changes it.
    max_keys: AtomicUsize,
    /// Keys held or being inserted: never more than `max_keys` (or, after the bound was
    /// lowered, than the bound before: no key is reserved above the bound in force), never
    /// fewer than the map's.
    reserved: AtomicUsize,
    /// New keys created, and new keys that found the limiter full, since the last sweep.
    churn: AtomicUsize,
    /// The reading by which a batch of the keys the last sweep kept are idle (see `sweep`).
    next_idle: AtomicU64,
    /// Keys created since the last sweep, and the latest reading by which one of them is
    /// idle (see `sweep`).
    created: AtomicUsize,
    created_idle: AtomicU64,
    /// The latest reading a sweep judged keys at: decisions read the clock no earlier, so a
    /// key dropped as idle at that reading is never asked about an earlier one (where its
    /// cell would have remembered more).
    floor: AtomicU64,
    /// One sweep at a time.
    sweeping: AtomicBool,
    /// Keys the fingerprints of this limiter's grants (with its own random state). foldhash,
    /// not SipHash: the fingerprint guards against a grant refunded to another key, not
    /// against an attacker choosing keys, and SipHash cost 140 instructions of a keyed
    /// grant's 800 (callgrind).
    fingerprints: foldhash::fast::RandomState,
}

impl<K: Eq + Hash, F: FromQuota> Keyed<K, F> {
    /// A keyed limiter of `quota` per key on the TSC clock, holding at most `usize::MAX`
    /// keys until [`max_keys`](Self::max_keys) bounds it.
    ///
    /// ```
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::BucketQuota;
    /// let limits: Keyed<u64, Buckets> = Keyed::new(BucketQuota::per_minute(2)?);
    /// assert!(limits.try_acquire(&9) && limits.try_acquire(&9));
    /// assert!(!limits.try_acquire(&9));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    ///
    /// The window families ([`FixedWindows`](super::FixedWindows),
    /// [`SlidingWindows`](super::SlidingWindows), [`SlidingLogs`](super::SlidingLogs)) are
    /// built with [`try_new`](Self::try_new): their configurations refuse a quota their
    /// cells cannot hold.
    pub fn new(quota: F::Quota) -> Self {
        Self::with_clock(quota, TscClock::new())
    }
}

impl<K: Eq + Hash, F: FromQuota, C: Clock> Keyed<K, F, C> {
    /// A keyed limiter of `quota` per key reading `clock`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::BucketQuota;
    /// let clock = ManualClock::new();
    /// let limits: Keyed<u8, Buckets, _> = Keyed::with_clock(BucketQuota::per_second(1)?, clock.clone());
    /// assert!(limits.try_acquire(&1) && !limits.try_acquire(&1));
    /// clock.advance(Duration::from_secs(1));
    /// assert!(limits.try_acquire(&1));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_clock(quota: F::Quota, clock: C) -> Self {
        let config = F::config(quota, &clock);
        Self::with_config(config, clock)
    }
}

impl<K: Eq + Hash, F: FromQuota, C: Clock, S: BuildHasher + Clone> Keyed<K, F, C, S> {
    /// A keyed limiter of `quota` per key reading `clock`, hashing keys with `hasher` (see
    /// [`with_hasher`](Self::with_hasher) for when a faster hasher is worth it).
    ///
    /// ```
    /// use ringlimit::clock::TscClock;
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::BucketQuota;
    /// let per_shard: Keyed<u32, Buckets, _, foldhash::fast::RandomState> = Keyed::with_clock_and_hasher(
    ///     BucketQuota::per_second(2)?,
    ///     TscClock::new(),
    ///     foldhash::fast::RandomState::default(),
    /// );
    /// assert!(per_shard.try_acquire(&7) && per_shard.try_acquire(&7));
    /// assert!(!per_shard.try_acquire(&7));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_clock_and_hasher(quota: F::Quota, clock: C, hasher: S) -> Self {
        let config = F::config(quota, &clock);
        Self::with_hasher(config, clock, hasher)
    }
}

impl<K: Eq + Hash, F: TryFromQuota> Keyed<K, F> {
    /// A keyed limiter of `quota` per key on the TSC clock, for every family (the window
    /// families included); [`ConfigError`] when the quota does not fit the family's cells
    /// (a window family's limit above its configuration's `MAX_LIMIT`).
    ///
    /// ```
    /// use ringlimit::keyed::{Keyed, SlidingWindows};
    /// use ringlimit::WindowQuota;
    /// let per_user: Keyed<String, SlidingWindows> = Keyed::try_new(WindowQuota::per_minute(2)?)?;
    /// assert!(per_user.try_acquire("alice") && per_user.try_acquire("alice"));
    /// assert!(!per_user.try_acquire("alice"));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_new(quota: F::Quota) -> Result<Self, ConfigError> {
        Self::try_with_clock(quota, TscClock::new())
    }
}

impl<K: Eq + Hash, F: TryFromQuota, C: Clock> Keyed<K, F, C> {
    /// A keyed limiter of `quota` per key reading `clock`, for every family; as
    /// [`try_new`](Self::try_new).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let limits: Keyed<u8, FixedWindows, _> =
    ///     Keyed::try_with_clock(WindowQuota::per_second(1)?, clock.clone())?;
    /// assert!(limits.try_acquire(&1) && !limits.try_acquire(&1));
    /// clock.advance(Duration::from_secs(1));
    /// assert!(limits.try_acquire(&1));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_with_clock(quota: F::Quota, clock: C) -> Result<Self, ConfigError> {
        let config = F::try_config(quota, &clock)?;
        Ok(Self::with_config(config, clock))
    }
}

impl<K: Eq + Hash, F: Family, C: Clock> Keyed<K, F, C> {
    /// A keyed limiter sharing `config` (made ahead, say to be shared with cells of one's
    /// own), reading `clock`.
    ///
    /// ```
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::clock::TscClock;
    /// use ringlimit::keyed::{Keyed, SlidingWindows};
    /// use ringlimit::WindowQuota;
    /// let config = SlidingConfig::new(WindowQuota::per_second(3)?)?;
    /// let limits: Keyed<u64, SlidingWindows> = Keyed::with_config(config, TscClock::new());
    /// assert!(limits.try_acquire(&1));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_config(config: F::Config, clock: C) -> Self {
        Self::with_hasher(config, clock, RandomState::new())
    }
}

impl<K: Eq + Hash, F: Family, C: Clock, S: BuildHasher + Clone> Keyed<K, F, C, S> {
    /// A keyed limiter sharing `config`, reading `clock`, hashing keys with `hasher`.
    ///
    /// The other constructors hash with std's `RandomState` (SipHash-1-3, randomly keyed):
    /// keys a client chooses (IP addresses, user ids, API keys) cannot be picked to collide,
    /// so nobody can slow the map down by flooding it with colliding keys. A faster hasher
    /// (foldhash, ahash) saves most of a lookup's hashing (a keyed token bucket's call on
    /// `u64` keys: 374 instructions on SipHash, 246 on foldhash, callgrind, `perf_probe
    /// keyed` and `keyedfh`), and more time than that, since the map's cache misses start
    /// sooner: worth it for keys the service itself chooses, at the price of that guarantee
    /// for keys an attacker chooses. In a bounded limiter's table the guarantee matters more:
    /// the table stores the keys' fingerprints, not the keys, so two keys the hasher maps to
    /// one hash share one cell, one limit: an attacker who can make a victim's key collide
    /// spends the victim's limit (never more than the limit is admitted, but the victim is
    /// refused). Keep a randomly keyed hasher for keys clients choose.
    ///
    /// ```
    /// use ringlimit::cell::BucketConfig;
    /// use ringlimit::clock::TscClock;
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::BucketQuota;
    /// let clock = TscClock::new();
    /// let config = BucketConfig::token(BucketQuota::per_second(2)?, &clock);
    /// let per_shard: Keyed<u32, Buckets, _, foldhash::fast::RandomState> =
    ///     Keyed::with_hasher(config, clock, foldhash::fast::RandomState::default());
    /// assert!(per_shard.try_acquire(&7) && per_shard.try_acquire(&7));
    /// assert!(!per_shard.try_acquire(&7));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_hasher(config: F::Config, clock: C, hasher: S) -> Self {
        Self {
            cells: Store::map(hasher.clone()),
            assigned: KeyMap::with_hasher(hasher.clone()),
            hasher,
            any_assigned: AtomicBool::new(false),
            config: F::adopt(config),
            clock,
            max_keys: AtomicUsize::new(usize::MAX),
            reserved: AtomicUsize::new(0),
            churn: AtomicUsize::new(0),
            next_idle: AtomicU64::new(0),
            created: AtomicUsize::new(0),
            created_idle: AtomicU64::new(0),
            floor: AtomicU64::new(0),
            sweeping: AtomicBool::new(false),
            fingerprints: foldhash::fast::RandomState::default(),
        }
    }
}

impl<K: Eq + Hash, F: Family, C: Clock, S: BuildHasher> Keyed<K, F, C, S> {
    /// The same limiter holding at most `max_keys` keys (at least 1). Called before any key
    /// is held and with a bound up to 2^27, it moves the cells to a table of
    /// `max_keys + max_keys / 5` slots (rounded up to a multiple of 4), allocated in up to
    /// 256 segments as keys first need them ([the guide](crate::guide::keyed_table)); for
    /// [`SlidingLogs`](super::SlidingLogs), a larger bound, or keys already held, the cells
    /// stay in the growing map, bounded all the same. The table's memory is bounded by the
    /// bound, not by the keys held: once keys have spread over every segment it holds
    /// `1.2 × max_keys` slots of 8 bytes plus the cell (19.2 bytes a key for
    /// [`Buckets`](super::Buckets), 38.4 for fixed windows, 134.4 for sliding windows of 10
    /// buckets), where the map holds what the keys in it need: bound a limiter near the keys
    /// it serves.
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(5)?)?.max_keys(1000);
    /// assert_eq!(limits.max_key_count(), 1000);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_keys(mut self, max_keys: usize) -> Self {
        let max_keys = max_keys.max(1);
        *self.max_keys.get_mut() = max_keys;
        let config = &self.config;
        self.cells.bound(max_keys, F::INLINE, || F::cell(config));
        self
    }

    /// Changes the bound on keys held to `max_keys` (at least 1), in place: every key held
    /// keeps its cell and its counts (rebuilding the limiter with another bound would forget
    /// them all, admitting every key's whole limit again).
    ///
    /// Raising it admits new keys at once (in a table, as far as its slots go: a table built
    /// for a smaller bound refuses new keys with [`KeyedError::Full`] once its probe runs
    /// have no free slot). Lowering it below the keys held drops none of
    /// them (a key is only ever dropped idle, so that dropping changes no decision): they
    /// keep deciding as before, and go as they turn idle and sweeps find them. Meanwhile
    /// every new key is refused ([`KeyedError::Full`]) until fewer than `max_keys` are held:
    /// no new key is ever created above the bound in force, so [`len`](Self::len) exceeds
    /// it only by keys held before it was lowered, and only until they turn idle.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{FixedWindows, Keyed, KeyedError};
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let limits: Keyed<u64, FixedWindows, _> =
    ///     Keyed::with_config(WindowConfig::new(WindowQuota::per_second(1)?)?, clock.clone()).max_keys(2);
    /// assert!(limits.try_acquire(&1) && limits.try_acquire(&2));
    /// limits.set_max_keys(1);
    /// assert_eq!(limits.len(), 2); // both kept, their counts too
    /// assert!(!limits.try_acquire(&1));
    /// assert_eq!(limits.try_acquire_n(&3, 1), Err(KeyedError::Full { max_keys: 1 }));
    /// clock.advance(Duration::from_secs(1)); // keys 1 and 2 are idle
    /// limits.evict_idle();
    /// assert!(limits.try_acquire(&3));
    /// limits.set_max_keys(3);
    /// assert!(limits.try_acquire(&4)); // raised: room at once
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn set_max_keys(&self, max_keys: usize) {
        // Relaxed: the bound is one word read on its own; a reservation racing the change
        // decides under the old bound or the new (linearized before or after it), and the
        // reservation counter itself orders the keys it admits.
        self.max_keys.store(max_keys.max(1), Ordering::Relaxed);
    }

    /// Whether [`set_max_keys`](Self::set_max_keys) can raise the bound to `max_keys` with
    /// room for every key: a limiter whose cells live in a table holds no more keys than the
    /// bound the table was built for ([`max_keys`](Self::max_keys)); one on the growing map,
    /// any number.
    #[cfg(feature = "rules")]
    pub(crate) fn holds_keys(&self, max_keys: usize) -> bool {
        self.cells.holds_keys(max_keys)
    }

    /// The bound on keys held.
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(5)?)?;
    /// assert_eq!(limits.max_key_count(), usize::MAX);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn max_key_count(&self) -> usize {
        self.bound()
    }

    /// The bound on keys held, now.
    fn bound(&self) -> usize {
        // Relaxed: see `set_max_keys`.
        self.max_keys.load(Ordering::Relaxed)
    }

    /// The configuration every key shares: reconfigure through it (for example
    /// [`WindowConfig::set_limit`](crate::cell::WindowConfig::set_limit)).
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::clock::TscClock;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per_second(1)?)?;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::with_config(config, TscClock::new());
    /// assert!(limits.try_acquire(&1) && !limits.try_acquire(&1));
    /// limits.config().set_limit(2)?;
    /// assert!(limits.try_acquire(&1)); // the count of 1 is kept
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn config(&self) -> &F::Config {
        &self.config
    }

    /// Keys held (idle ones included until a sweep drops them). Exact when no key is being
    /// inserted; while inserts run it may overcount for a moment (the map counts an old
    /// bucket array not yet dropped after a resize): the bound itself is kept by
    /// reservations, never by this count.
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(1)?)?;
    /// limits.try_acquire(&1);
    /// limits.try_acquire(&2);
    /// assert_eq!(limits.len(), 2);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether no key is held.
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(1)?)?;
    /// assert!(limits.is_empty());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.cells.len() == 0
    }
}

impl<K: Eq + Hash, F: RateFamily, C: Clock, S: BuildHasher> Keyed<K, F, C, S> {
    /// The capacity `key` is decided under: its tier's if it is assigned one, else the
    /// limiter's (the policy metrics' denominator).
    #[cfg(feature = "metrics")]
    pub(crate) fn limit_for<Q>(&self, key: &Q) -> u64
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.assigned_cell(key, &|_, config, _| F::capacity(config))
            .unwrap_or_else(|| F::capacity(&self.config))
    }

    /// How long until `key` counts nothing any more if it takes no other permit: its
    /// window's end for a fixed window, until its buckets or log entries have slid out for
    /// a sliding window or log, until its bucket is full again for a token bucket, until
    /// its schedule has drained for a shaper (the `RateLimit-Reset` of an HTTP answer).
    /// `None` for a key that counts nothing now (one not held included); creates nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::BucketQuota;
    /// let clock = ManualClock::new();
    /// let limits: Keyed<u64, Buckets, _> =
    ///     Keyed::with_clock(BucketQuota::per_second(10)?.burst(5)?, clock.clone());
    /// assert_eq!(limits.reset_after(&1), None);
    /// limits.try_acquire_n(&1, 2)?;
    /// assert_eq!(limits.reset_after(&1), Some(Duration::from_millis(200)));
    /// clock.advance(Duration::from_millis(200));
    /// assert_eq!(limits.reset_after(&1), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset_after<Q>(&self, key: &Q) -> Option<Duration>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let reading = self.reading();
        let now = reading.now_nanos();
        let idle_at = self
            .cell(key, |cell, config, _| {
                F::idle_at(cell, config, &reading, now)
            })
            .flatten()?;
        Some(Duration::from_nanos(idle_at.saturating_sub(now)))
    }

    /// Takes one permit for `key`; `false` if refused, or if the key is new and the limiter
    /// is full of keys that are not idle.
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<String, FixedWindows> = Keyed::try_new(WindowQuota::per_second(1)?)?;
    /// assert!(limits.try_acquire("api-key-1"));
    /// assert!(!limits.try_acquire("api-key-1"));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_acquire<'k, Q>(&self, key: &'k Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        self.with_cell(key, |cell, config, _| {
            F::try_acquire(cell, config, &self.reading())
        })
        .unwrap_or(false)
    }

    /// Decides `n` permits for `key`: admitted or refused as the key's cell decides,
    /// [`KeyedError::ExceedsLimit`] for more than the limit, [`KeyedError::Full`] for a new
    /// key when the limiter is full of keys that are not idle.
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// use ringlimit::outcome::Decision;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(3)?)?;
    /// assert_eq!(limits.try_acquire_n(&1, 2), Ok(Decision::Admitted { remaining: 1 }));
    /// assert!(!limits.try_acquire_n(&1, 2)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_n<'k, Q>(&self, key: &'k Q, n: u64) -> Result<Decision, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        if n == 0 {
            return Ok(Decision::Admitted {
                remaining: self.available(key),
            });
        }
        self.with_cell(key, |cell, config, _| {
            F::try_acquire_n(cell, config, &self.reading(), n)
        })?
        .map_err(KeyedError::from)
    }

    /// Permits available to `key` now; creates nothing for an absent key (which has a fresh
    /// cell's: the limit).
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(4)?)?;
    /// assert_eq!(limits.available(&1), 4);
    /// assert!(limits.is_empty());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn available<Q>(&self, key: &Q) -> u64
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cell(key, |cell, config, _| {
            F::available(cell, config, &self.reading())
        })
        .unwrap_or_else(|| F::capacity(&self.config))
    }

    /// Takes `n` permits for `key` as a [`Grant`] that [`refund`](Self::refund) can give
    /// back (all-or-nothing limits over several keyed limiters take a grant from each, and
    /// refund those taken when a later one refuses). What a refund restores is the cell's:
    /// a window's or bucket's permits while the grant's window or bucket is still the cell's
    /// current one, a token bucket's or shaper's while the grant's schedule is still ahead
    /// of the clock and no reconfiguration has converted the cell; afterwards nothing,
    /// which only under-admits. Sliding logs and unlimited quotas grant, but refund nothing.
    ///
    /// ```
    /// use ringlimit::keyed::{Keyed, SlidingWindows};
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, SlidingWindows, _> =
    ///     Keyed::with_config(SlidingConfig::new(WindowQuota::per_second(3)?)?, ManualClock::new());
    /// let grant = limits.try_grant(&7, 2)?.into_grant().expect("room for 2");
    /// assert_eq!(limits.available(&7), 1);
    /// assert_eq!(limits.refund(&7, grant), 2);
    /// assert_eq!(limits.available(&7), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_grant<'k, Q>(&self, key: &'k Q, n: u64) -> Result<Admission, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        self.grant_with(key, n, |_, _, _, _| ())
            .map(|(admission, _)| admission)
    }

    /// [`try_grant`](Self::try_grant), with how long after the decision the key's cell
    /// counts nothing any more if no other permit is taken (the family's `idle_at`, read in
    /// the same lookup); `None` when it counts nothing already (an empty grant of a fresh
    /// key), or for an unlimited quota.
    pub(crate) fn try_grant_reset<'k, Q>(
        &self,
        key: &'k Q,
        n: u64,
    ) -> Result<(Admission, Option<Duration>), KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        let (admission, reset_after) = self.grant_with(key, n, |cell, config, now, mark| {
            // From the admission's mark where it says (the windows), else the cell as the
            // decision left it, at the reading the decision was made at (a settling this
            // needs reads the clock afresh, as `idle_at` says).
            let idle_at = match mark.and_then(|mark| F::reset_at(config, mark)) {
                Some(idle_at) => idle_at,
                None => F::idle_at(cell?, config, &self.reading(), now)?,
            };
            Some(Duration::from_nanos(idle_at.saturating_sub(now)))
        })?;
        Ok((admission, reset_after.flatten()))
    }

    /// [`try_grant`](Self::try_grant), with, if granted, `with` of the key's cell (`None`: a
    /// fresh key's empty grant, no cell), the configuration it decided under (its tier's,
    /// for a key assigned one), the decision's clock reading and the admission's mark
    /// (`None`: an empty grant, or a family that marks nothing), in the same lookup.
    pub(crate) fn grant_with<'k, Q, X>(
        &self,
        key: &'k Q,
        n: u64,
        with: impl Fn(Option<&F::Cell>, &F::Config, u64, Option<(u64, u64)>) -> X,
    ) -> Result<(Admission, Option<X>), KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        if n == 0 {
            // Creates nothing, as `try_acquire_n(0)`: an empty grant, refunding nothing.
            let now = self.reading().now_nanos();
            // `available`, with `with` in the same lookup.
            let (remaining, x) = self
                .cell(key, |cell, config, _| {
                    (
                        F::available(cell, config, &self.reading()),
                        with(Some(cell), config, now, None),
                    )
                })
                .unwrap_or_else(|| {
                    (
                        F::capacity(&self.config),
                        with(None, &self.config, now, None),
                    )
                });
            return Ok((
                Admission::Granted(Grant::new(Ticket::new(0, now, now, u128::MAX), remaining)),
                Some(x),
            ));
        }
        // The reading is taken under the map's lock of the key, as every decision's is: a
        // sweep that dropped the key before then has raised the floor. Taken before the lookup, it
        // would let a re-created cell decide below a sweep's reading (the test
        // `try_grant_decides_at_the_sweep_floor_after_a_racing_eviction`).
        let (decision, mark, owner, now, x) = self.with_cell(key, |cell, config, id| {
            // One reading serves the decision and the ticket.
            let now = self.reading().now_nanos();
            F::grant(cell, config, &Fixed(now), n).map(|(decision, mark)| {
                let x = decision
                    .is_admitted()
                    .then(|| with(Some(cell), config, now, mark));
                (decision, mark, self.owner(key, id), now, x)
            })
        })??;
        let admission = match decision {
            Decision::Admitted { remaining } => {
                // `[epoch | at]`, or no mark at all: a refund then restores nothing.
                let mark = mark.map_or(u128::MAX, |(at, epoch)| {
                    u128::from(epoch) << 64 | u128::from(at)
                });
                Admission::Granted(
                    Grant::new(Ticket::new(n, now, now, mark), remaining).owned_by(owner),
                )
            }
            Decision::Refused {
                available,
                retry_after,
            } => Admission::Refused {
                available,
                retry_after,
            },
        };
        Ok((admission, x))
    }

    /// Gives back what is left of `grant`, taken for `key` from this limiter (a grant of
    /// another limiter, another key, or taken under another tier restores nothing); the
    /// permits restored. See [`try_grant`](Self::try_grant) for what that is.
    ///
    /// ```
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::BucketQuota;
    /// let limits: Keyed<u64, Buckets, _> =
    ///     Keyed::with_clock(BucketQuota::per_second(1)?.burst(2)?, ManualClock::new());
    /// let grant = limits.try_grant(&1, 2)?.into_grant().expect("a full bucket");
    /// let other = limits.try_grant(&2, 1)?.into_grant().expect("a full bucket");
    /// assert_eq!(limits.refund(&2, grant), 0); // not key 2's
    /// assert_eq!(limits.refund(&1, other), 0); // not key 1's
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refund<Q>(&self, key: &Q, grant: Grant) -> u64
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mark = grant.ticket().mark();
        if mark == u128::MAX {
            return 0;
        }
        // The halves of a 128-bit mark: the casts keep exactly 64 bits each.
        let mark = (mark as u64, (mark >> 64) as u64);
        self.cell(key, |cell, config, id| {
            if !grant.is_from(self.owner(key, id)) {
                return 0;
            }
            F::refund(cell, config, &self.reading(), mark, grant.permits())
        })
        .unwrap_or(0)
    }

    /// The owner stamped on grants of `key` taken from the cell with id `cell`: a
    /// fingerprint of this limiter (its own random hasher), the key and the cell (0 for the
    /// limiter's own cells, which a key gets again only fresh and idle, so that no refund
    /// restores anything to it; a unique id for each cell of an assigned key).
    fn owner<Q: Hash + ?Sized>(&self, key: &Q, cell: u64) -> Owner {
        Owner::keyed(self.fingerprints.hash_one((key, cell)))
    }
}

impl<K: Eq + Hash, F: Family, C: Clock, S: BuildHasher> Keyed<K, F, C, S> {
    /// Drops every idle key now (what the automatic sweep does) and returns how many.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let limits: Keyed<u64, FixedWindows, _> =
    ///     Keyed::with_config(WindowConfig::new(WindowQuota::per_second(1)?)?, clock.clone());
    /// limits.try_acquire(&1);
    /// assert_eq!(limits.evict_idle(), 0); // key 1 counts a permit this second
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(limits.evict_idle(), 1);
    /// assert!(limits.is_empty());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn evict_idle(&self) -> usize {
        let now = self.clock.now_nanos();
        // AcqRel: every decision made after a cell this sweep drops is recreated reads at
        // least `now` (the map's lock orders the recreation after the drop, and the drop
        // after this).
        let now = self.floor.fetch_max(now, Ordering::AcqRel).max(now);
        // Every key is judged at the one reading `now`, the floor of every later decision;
        // anything else its cell reads (a reconfiguration's reading) is read fresh.
        let fresh = self.reading();
        // The `batch` earliest idle times of the keys kept (a max-heap of them).
        let batch = self.batch();
        let mut earliest = std::collections::BinaryHeap::with_capacity(batch);
        // Each cell is judged from one settled state, and dropped only if no request can
        // take a permit from it between the judgment and the drop: in the map, under its
        // shard's exclusive lock, which no request on that key holds at the same time; in
        // the table, by a final judgment after a grace period, while no request can touch
        // the cell without first taking its slot back (see `table`).
        let dropped = self.cells.evict(
            |cell| F::idle_at(cell, &self.config, &fresh, now),
            |idle_at| {
                if earliest.len() < batch {
                    earliest.push(idle_at);
                } else if earliest.peek().is_some_and(|&top| idle_at < top) {
                    earliest.pop();
                    earliest.push(idle_at);
                }
            },
            |cell| F::renew(cell, &self.config),
        );
        // The reading by which `batch` of the keys kept are idle (never, with fewer kept).
        let next_idle = if earliest.len() < batch {
            u64::MAX
        } else {
            earliest.peek().copied().unwrap_or(u64::MAX)
        };
        // Relaxed (all three): heuristic counts and times (see `sweep`).
        self.next_idle.store(next_idle, Ordering::Relaxed);
        self.created.store(0, Ordering::Relaxed);
        self.created_idle.store(0, Ordering::Relaxed);
        self.released(dropped);
        dropped
    }

    /// The clock as this limiter's decisions read it: the limiter's clock, never below the
    /// reading its latest sweep judged keys at. Reconfigure the shared configuration with it
    /// (`limits.config().set_rate(&limits.clock(), rate)` for buckets): a reconfiguration
    /// read from a clock set back past a sweep's reading could make a key the sweep dropped
    /// decide differently from how it would have, kept.
    ///
    /// ```
    /// use ringlimit::clock::Clock;
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::{BucketQuota, Rate};
    /// let limits: Keyed<u64, Buckets> = Keyed::new(BucketQuota::per_second(5)?);
    /// limits.config().set_rate(&limits.clock(), Rate::per_second(10)?)?;
    /// assert!(limits.clock().now_nanos() > 0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> impl Clock + '_ {
        self.reading()
    }

    /// Gives back the room of `n` keys removed from the map.
    fn released(&self, n: usize) {
        // Release: a reservation made after this sees the room (pairs with `reserve`).
        self.reserved.fetch_sub(n, Ordering::Release);
    }

    /// Whether `key` has a cell (the limiter's own or an assigned tier's): a key without one
    /// has nothing counted (a cell is only ever dropped idle). Creates nothing.
    #[cfg(feature = "rules")]
    pub(crate) fn holds<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cell(key, |_, _, _| ()).is_some()
    }

    /// `f` of `key`'s cell, the configuration it decides under (a tier's, for a key
    /// assigned one) and the cell's id (0 for the limiter's own cells, a unique one for an
    /// assigned key's), under the map's shared lock of it; `None` for a key not held.
    pub(super) fn cell<Q, R>(
        &self,
        key: &Q,
        f: impl Fn(&F::Cell, &F::Config, u64) -> R,
    ) -> Option<R>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.assigned_cell(key, &f).or_else(|| {
            self.cells
                .read(key, &self.hasher, |cell| f(cell, &self.config, 0))
        })
    }

    /// `f` of the cell of `key` if it is assigned a tier.
    #[inline]
    fn assigned_cell<Q, R>(&self, key: &Q, f: &impl Fn(&F::Cell, &F::Config, u64) -> R) -> Option<R>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        // SeqCst: pairs with `assign`'s store, so a request that starts after an assignment
        // returned looks the key up among the assigned.
        if !self.any_assigned.load(Ordering::SeqCst) {
            return None;
        }
        self.assigned.read(key, |assigned| {
            f(&assigned.cell, assigned.tier.config(), assigned.id)
        })
    }

    /// Runs `decide` on `key`'s cell and the configuration it decides under, creating the
    /// cell if absent (within the bound).
    pub(super) fn with_cell<'k, Q, R>(
        &self,
        key: &'k Q,
        decide: impl Fn(&F::Cell, &F::Config, u64) -> R,
    ) -> Result<R, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        if let Some(result) = self.assigned_cell(key, &decide) {
            return Ok(result);
        }
        // Under the map shard's shared lock, or pinned in the table: the cell cannot be
        // dropped meanwhile.
        if let Some(result) = self
            .cells
            .read(key, &self.hasher, |cell| decide(cell, &self.config, 0))
        {
            return Ok(result);
        }
        // Relaxed: a hint; the reservation below decides.
        if self.reserved.load(Ordering::Relaxed) >= self.bound() {
            self.sweep();
        }
        // Under the map entry's exclusive lock, or the table's insertion lock of the key's
        // stripe, so two requests for one new key serialize: the second finds the first's
        // cell instead of a full limiter.
        let decided = |cell: &F::Cell, inserted: bool| {
            let result = decide(cell, &self.config, 0);
            if inserted {
                // Relaxed (all): heuristic counts and times (see `sweep`). A new key is one
                // the last sweep did not see: counted, with the reading it is idle by, so
                // that a map filled since with keys that go idle is swept when they do.
                self.churn.fetch_add(1, Ordering::Relaxed);
                self.created.fetch_add(1, Ordering::Relaxed);
                let reading = self.reading();
                let idle_at = F::idle_at(cell, &self.config, &reading, reading.now_nanos());
                self.created_idle
                    .fetch_max(idle_at.unwrap_or(0), Ordering::Relaxed);
            }
            result
        };
        let full = || KeyedError::Full {
            max_keys: self.bound(),
        };
        let upsert = || {
            self.cells.upsert(
                key,
                &self.hasher,
                || self.reserve(),
                || F::cell(&self.config),
                decided,
            )
        };
        match upsert() {
            Ok(result) => Ok(result),
            Err(Missing::Refused) => Err(full()),
            Err(Missing::NoSlot) => {
                // The table has no free slot in the key's probe run: its reservation goes
                // back, a sweep (when one is due) may free slots of idle keys there, and the
                // key is tried once more, then refused as when the limiter is full.
                self.released(1);
                self.sweep();
                match upsert() {
                    Ok(result) => Ok(result),
                    Err(Missing::Refused) => Err(full()),
                    Err(Missing::NoSlot) => {
                        self.released(1);
                        Err(full())
                    }
                }
            }
        }
    }

    /// The clock as decisions read it (see `floor`).
    fn reading(&self) -> Floored<'_, C> {
        Floored {
            clock: &self.clock,
            floor: &self.floor,
        }
    }

    /// Reserves room for one more key; `false` at the bound.
    fn reserve(&self) -> bool {
        // Acquire: sees the room freed by a sweep (its Release). A reservation is a
        // counter, not a handle: the map never holds more keys than were reserved.
        let max_keys = self.bound();
        self.reserved
            .fetch_update(Ordering::Acquire, Ordering::Acquire, |held| {
                (held < max_keys).then_some(held + 1)
            })
            .is_ok()
    }

    /// How many keys a sweep prepared for by idle times must find idle: `max_keys / 64`
    /// (at least 1, at most 2^17), so that its full pass costs at most 64 entry visits per
    /// key dropped (`max_keys / 2^17` past 8 M keys).
    fn batch(&self) -> usize {
        (self.bound() / 64).clamp(1, 1 << 17)
    }

    /// The automatic sweep, when a new key finds the limiter full; one thread at a time.
    /// Due when `max_keys / 8` keys were created or refused since the last sweep (so its
    /// full pass costs at most 8 entry visits per such key), or when enough keys are idle
    /// to pay for it: [`batch`](Self::batch) of the keys the last sweep kept (by their idle
    /// times, which it gathered), or `batch` keys created since, the last of which is idle
    /// by now (unless used again since). Either way the cost per key dropped is bounded
    /// whatever the clock does, and a limiter full of idle keys refuses a new one only while
    /// fewer than `batch` are idle, or while a sweep is running.
    fn sweep(&self) {
        // Relaxed (all): heuristic counts and times; a sweep is correct whenever it runs.
        let churn = self.churn.fetch_add(1, Ordering::Relaxed) + 1;
        let now = self.clock.now_nanos();
        let due = now >= self.next_idle.load(Ordering::Relaxed)
            || (self.created.load(Ordering::Relaxed) >= self.batch()
                && now >= self.created_idle.load(Ordering::Relaxed));
        if churn < (self.bound() / 8).max(1) && !due {
            return;
        }
        // Acquire: the previous sweep's drops are seen. Failure: another thread sweeps.
        if self
            .sweeping
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        // Clears the flag however the sweep ends (a panicking hasher or clock included), so
        // that one failed sweep does not stop every later one.
        let _sweeping = Sweeping(&self.sweeping);
        // Relaxed: as above.
        self.churn.store(0, Ordering::Relaxed);
        self.evict_idle();
    }
}

/// The sweep in progress: clears the limiter's `sweeping` flag when dropped.
struct Sweeping<'a>(&'a AtomicBool);

impl Drop for Sweeping<'_> {
    fn drop(&mut self) {
        // Release: the next sweeper sees this one's drops.
        self.0.store(false, Ordering::Release);
    }
}

/// The limiter's clock as decisions read it: never below the latest reading a sweep judged
/// keys at.
struct Floored<'a, C> {
    clock: &'a C,
    floor: &'a AtomicU64,
}

impl<C: Clock> Clock for Floored<'_, C> {
    fn now_nanos(&self) -> u64 {
        // Acquire: pairs with the sweep's `fetch_max`. Loaded at each reading, so a reading
        // taken under a key's lookup sees the floor of every sweep that dropped the key
        // before that lookup, however long before it the `Floored` was made.
        self.clock
            .now_nanos()
            .max(self.floor.load(Ordering::Acquire))
    }
    /// Sleeps on the limiter's clock (a manual clock moves).
    fn sleep(&self, duration: Duration) {
        self.clock.sleep(duration);
    }
}

/// A clock standing at one reading (taken under the key's lock): a grant decides at the
/// reading its ticket records.
struct Fixed(u64);

impl Clock for Fixed {
    fn now_nanos(&self) -> u64 {
        self.0
    }
}

impl<K, F: Family, C: Clock, S: BuildHasher> fmt::Debug for Keyed<K, F, C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            // Relaxed: a value for display; nothing is read after it.
            .field("reserved", &self.reserved.load(Ordering::Relaxed))
            // Relaxed: as above.
            .field("max_keys", &self.max_keys.load(Ordering::Relaxed))
            .finish()
    }
}
