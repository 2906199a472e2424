//! The one place that knows about loom.
//!
//! Every atomic, the manual clock's storage, the admin lock and the spin hint come from here. Under
//! `cfg(loom)` they are loom's model-checked versions, so a loom model explores every
//! interleaving of the limiters' atomic steps; otherwise they are `std`'s.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

/// A lock for the rare administrative paths (reconfiguration, bucket refunds), never for
/// admission.
#[cfg(loom)]
pub(crate) struct AdminLock(loom::sync::Mutex<()>);
/// A lock for the rare administrative paths (reconfiguration, bucket refunds), never for
/// admission.
#[cfg(not(loom))]
pub(crate) struct AdminLock(parking_lot::Mutex<()>);

impl AdminLock {
    pub(crate) fn new() -> Self {
        #[cfg(loom)]
        return Self(loom::sync::Mutex::new(()));
        #[cfg(not(loom))]
        Self(parking_lot::Mutex::new(()))
    }

    /// Runs `f` while holding the lock.
    pub(crate) fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(loom)]
        let _guard = self.0.lock().unwrap();
        #[cfg(not(loom))]
        let _guard = self.0.lock();
        f()
    }
}

impl std::fmt::Debug for AdminLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminLock")
    }
}

/// Tells the processor (or loom's scheduler) that this thread lost a race and will retry.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Exponential backoff after a lost CAS (or a re-load that found the word moved): crossbeam's [`Backoff`](crossbeam_utils::Backoff)
/// (`2^step` PAUSEs, `step` capped at 6, so at most 64 a round), built only once a CAS has
/// failed, so the uncontended first try pays nothing for it.
///
/// Under loom it does nothing: a CAS-retry loop is lock-free (a failure means another
/// thread succeeded), so the models need no yield to terminate, and a no-op keeps the
/// explored interleavings exactly those of the algorithm.
#[cfg(not(loom))]
pub(crate) struct Backoff(crossbeam_utils::Backoff);
/// Exponential backoff after a lost CAS (a no-op under loom, see the non-loom version).
#[cfg(loom)]
pub(crate) struct Backoff;

impl Backoff {
    /// A backoff at its first step.
    #[inline]
    pub(crate) fn new() -> Self {
        #[cfg(not(loom))]
        return Self(crossbeam_utils::Backoff::new());
        #[cfg(loom)]
        Self
    }

    /// A backoff whose next [`spin`](Self::spin) waits `2^step` PAUSEs, for a retry whose
    /// decision is long enough that a short first wait loses again. crossbeam's `Backoff`
    /// only starts at step 0, so this waits through the steps before `step` now
    /// (`2^step - 1` PAUSEs).
    #[inline]
    pub(crate) fn starting_at(step: u32) -> Self {
        let backoff = Self::new();
        for _ in 0..step {
            backoff.spin();
        }
        backoff
    }

    /// Waits a little longer than the last time (after a lost CAS, before the retry).
    #[inline]
    pub(crate) fn spin(&self) {
        #[cfg(not(loom))]
        self.0.spin();
    }
}

/// The backoff step of the first retry after a lost CAS on a word every thread writes (the
/// window engine's head, a labelled cell's word): 15 PAUSEs at once, 16 more before the
/// retry ([`Backoff::starting_at`]). Long enough that the thread that won makes a run of
/// calls with the line to itself, as a mutex's holder does while its waiters spin; a retry
/// after one PAUSE mostly loses again and moves the line on every call. Measured in the
/// window engine and the warm-up limiter with `cargo run --release --example compare`
/// (figures: docs/BENCHMARKS.md, Backoff and retry tuning).
pub(crate) const RETRY_STEP: u32 = 4;

/// The first backoff step where a retry after one loss tends to lose again (the sliding
/// log's claims, helps and views; the bucket engine's and the approximate window's retries
/// after a lost CAS): 63 PAUSEs at once, 64 before each retry (crossbeam's spin limit).
/// A sliding-log admission moves two contended lines (the head seq's slot and the head),
/// and from step 0 the log collapses when cross-core transfers slow; the leaky shaper from
/// step 0 falls below a mutex at 2 threads. Measured in rounds alternating the two builds
/// with the comparison tool at 2 threads (`cargo run --release --example compare -- --only
/// sliding_log,allow --threads 2`, and the same for `leaky_shaper` and `token_bucket`;
/// figures: docs/BENCHMARKS.md, Backoff and retry tuning).
pub(crate) const LONG_RETRY_STEP: u32 = 6;

/// Creates a facade `AtomicU64`; loom's `new` is not `const`, so this is not either.
pub(crate) fn atomic(v: u64) -> AtomicU64 {
    AtomicU64::new(v)
}

/// A 128-bit atomic word for limiters whose state is two 64-bit values (the warm-up limiter:
/// a time and an `f64`). Lock-free on x86_64 (`cmpxchg16b`) and aarch64; `portable-atomic`
/// falls back to a global lock table elsewhere.
#[cfg(not(loom))]
pub(crate) use portable_atomic::AtomicU128;

/// Loom stand-in for [`portable_atomic::AtomicU128`] that keeps the callers' orderings: every
/// value the word takes is interned in a table that loom does not see (a `std` mutex, no
/// loom operation inside it), and the word is a loom `AtomicUsize` holding the value's
/// index, so loom models the real Acquire/Release/Relaxed semantics of each load and CAS
/// (a `Mutex<u128>` stand-in would make every access synchronize and hide a weak ordering).
///
/// Memory: the table belongs to the atomic, so it is freed with it, at the end of each loom
/// execution (models build their limiter inside `loom::model`); within one it holds each
/// distinct value only once and grows by at most one entry per CAS whose expected value is
/// in it (a CAS expecting a value the word never held fails without interning anything).
///
/// `pub` (in this private module) because it names the wide bucket word's atomic in a
/// sealed trait (`bucket::width`); nothing outside the crate can reach it.
#[cfg(loom)]
pub struct AtomicU128 {
    index: loom::sync::atomic::AtomicUsize,
    table: std::sync::Mutex<Vec<u128>>,
}

#[cfg(loom)]
impl AtomicU128 {
    /// An index no value has: a CAS expecting it always fails.
    const NEVER: usize = usize::MAX;

    pub(crate) fn new(v: u128) -> Self {
        Self {
            index: loom::sync::atomic::AtomicUsize::new(0),
            table: std::sync::Mutex::new(vec![v]),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Vec<u128>> {
        // No code panics while holding it; recover the table if a model's panic poisoned it.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn find(&self, v: u128) -> Option<usize> {
        self.table().iter().position(|&x| x == v)
    }

    fn intern(&self, v: u128) -> usize {
        let mut table = self.table();
        match table.iter().position(|&x| x == v) {
            Some(i) => i,
            None => {
                table.push(v);
                table.len() - 1
            }
        }
    }

    fn value(&self, i: usize) -> u128 {
        self.table()[i]
    }

    pub(crate) fn load(&self, order: Ordering) -> u128 {
        self.value(self.index.load(order))
    }

    pub(crate) fn store(&self, v: u128, order: Ordering) {
        let i = self.intern(v);
        self.index.store(i, order);
    }

    pub(crate) fn compare_exchange(
        &self,
        current: u128,
        new: u128,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u128, u128> {
        let (current, new) = match self.find(current) {
            Some(current) => (current, self.intern(new)),
            None => (Self::NEVER, Self::NEVER),
        };
        match self.index.compare_exchange(current, new, success, failure) {
            Ok(i) => Ok(self.value(i)),
            Err(i) => Err(self.value(i)),
        }
    }
}

/// A 64- or 128-bit atomic word, for code generic over the width of its state (the window
/// engine's [`Words`](crate::window::word::Words), the bucket cell's
/// [`Width`](crate::bucket::width::Width)): the operations both atomics have, by one name.
/// Each forwards to the atomic's own method of that name (inherent methods win over trait
/// methods, so the forwarding cannot recurse).
///
/// `pub` (in this private module) because the bucket cell's sealed width trait names it;
/// nothing outside the crate can reach it.
pub trait AtomicWord: Send + Sync {
    /// The word's value.
    type Raw: Copy + Eq + std::fmt::Debug + Send + Sync;
    fn new(raw: Self::Raw) -> Self;
    fn load(&self, order: Ordering) -> Self::Raw;
    fn store(&self, raw: Self::Raw, order: Ordering);
    fn compare_exchange(
        &self,
        current: Self::Raw,
        new: Self::Raw,
        success: Ordering,
        failure: Ordering,
    ) -> Result<Self::Raw, Self::Raw>;
}

/// Implements [`AtomicWord`] for an atomic by its own methods.
macro_rules! atomic_word {
    ($atomic:ty, $raw:ty) => {
        impl AtomicWord for $atomic {
            type Raw = $raw;

            fn new(raw: $raw) -> Self {
                <$atomic>::new(raw)
            }

            #[inline]
            fn load(&self, order: Ordering) -> $raw {
                self.load(order)
            }

            #[inline]
            fn store(&self, raw: $raw, order: Ordering) {
                self.store(raw, order)
            }

            #[inline]
            fn compare_exchange(
                &self,
                current: $raw,
                new: $raw,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$raw, $raw> {
                self.compare_exchange(current, new, success, failure)
            }
        }
    };
}

atomic_word!(AtomicU64, u64);
atomic_word!(AtomicU128, u128);

/// Between a `SeqCst` write and a `SeqCst` read of another atomic that must not be reordered
/// (Dekker's pattern: the concurrency limiter's release and its waiter count). The `SeqCst`
/// accesses are in the single total order already, so outside loom this is nothing; loom
/// models `SeqCst` accesses as `AcqRel` (its README, "Unsupported features") but models
/// `fence(SeqCst)` fully, so under loom this is that fence, restoring the order it would
/// otherwise not see.
#[inline]
pub(crate) fn seq_cst_gap() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}

/// A number fixed for the calling OS thread, handed out round-robin on its first call
/// (0, 1, 2, …): the sharded window's choice of shard. Under loom, model threads share one
/// OS thread, so its models choose shards explicitly instead.
#[inline]
pub(crate) fn thread_slot() -> usize {
    use std::cell::Cell;
    /// The next slot to hand out.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    std::thread_local! {
        static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SLOT.with(|slot| {
        if slot.get() == usize::MAX {
            // Relaxed: a ticket counter; nothing else is ordered with it.
            slot.set(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % (usize::MAX / 2));
        }
        slot.get()
    })
}

/// A fresh, process-unique number (1, 2, 3, …), never 0: the owner id every limiter stamps
/// on its grants so that a refund can refuse a grant some other limiter made.
///
/// A plain `std` atomic even under loom: it is an id source, not part of any algorithm
/// (no decision reads it, and two ids only need to differ), so loom need not model it.
pub(crate) fn next_id() -> u64 {
    /// The next id to hand out.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    // Relaxed: a ticket counter; uniqueness comes from the RMW itself, nothing else is
    // ordered with it.
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The concurrent map a keyed limiter holds its cells in: dashmap's `DashMap` (a request on a
/// key runs under its shard's read lock, insertion and removal under its write lock), or
/// under loom a stand-in with one lock loom models, which gives the same guarantees, so the
/// models check the keyed protocol around the map (dashmap's own synchronization is not
/// loom's and cannot be modelled).
///
/// Chosen by measurement (`tools/mapbench`, 8-byte cells, `--features narrow`): dashmap holds
/// a key and its cell in one 16-byte hashbrown slot beside its control byte (28.6 bytes per
/// key at 10 M keys, scc's `HashMap` and `HashIndex` 33.6, papaya 62.2) and looked keys up
/// 1.4–1.7× faster than scc on the 2-core machine. Its one cost: a sweep write-locks one
/// shard (1/8 of the keys on 2 cores, `4 × cores` shards) at a time, where scc locked one
/// bucket, so requests on that shard wait for the shard's part of the sweep.
#[cfg(feature = "keyed")]
pub(crate) struct KeyMap<K, V, S: std::hash::BuildHasher> {
    #[cfg(not(loom))]
    map: dashmap::DashMap<K, V, SharedHasher<S>>,
    #[cfg(loom)]
    map: loom::sync::RwLock<std::collections::HashMap<K, V, S>>,
}

/// The limiter's hasher, shared by dashmap's shards (which need a `Clone` hasher; the
/// limiter's may not be).
#[cfg(all(feature = "keyed", not(loom)))]
struct SharedHasher<S>(std::sync::Arc<S>);

#[cfg(all(feature = "keyed", not(loom)))]
impl<S> Clone for SharedHasher<S> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

#[cfg(all(feature = "keyed", not(loom)))]
impl<S: std::hash::BuildHasher> std::hash::BuildHasher for SharedHasher<S> {
    type Hasher = S::Hasher;
    #[inline]
    fn build_hasher(&self) -> S::Hasher {
        self.0.build_hasher()
    }
}

#[cfg(feature = "keyed")]
impl<K: Eq + std::hash::Hash, V, S: std::hash::BuildHasher> KeyMap<K, V, S> {
    pub(crate) fn with_hasher(hasher: S) -> Self {
        Self {
            #[cfg(not(loom))]
            map: dashmap::DashMap::with_hasher(SharedHasher(std::sync::Arc::new(hasher))),
            #[cfg(loom)]
            map: loom::sync::RwLock::new(std::collections::HashMap::with_hasher(hasher)),
        }
    }

    /// `f` of `key`'s value, under a shared lock of it (no removal meanwhile); `None` if
    /// absent.
    #[inline]
    pub(crate) fn read<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        #[cfg(not(loom))]
        return self.map.get(key).map(|entry| f(entry.value()));
        #[cfg(loom)]
        self.map.read().unwrap().get(key).map(f)
    }

    /// `f(value, inserted)` of `key`'s value under an exclusive lock of it, inserting
    /// `make()` first if absent (`None` if `make` refuses, inserting nothing).
    pub(crate) fn upsert<R>(
        &self,
        key: K,
        make: impl FnOnce() -> Option<V>,
        f: impl FnOnce(&V, bool) -> R,
    ) -> Option<R> {
        #[cfg(not(loom))]
        return match self.map.entry(key) {
            dashmap::Entry::Occupied(entry) => Some(f(entry.get(), false)),
            dashmap::Entry::Vacant(entry) => {
                make().map(|value| f(entry.insert(value).value(), true))
            }
        };
        #[cfg(loom)]
        {
            let mut map = self.map.write().unwrap();
            if let Some(value) = map.get(&key) {
                return Some(f(value, false));
            }
            let value = make()?;
            Some(f(map.entry(key).or_insert(value), true))
        }
    }

    /// Puts `value` under `key`, replacing (and dropping) any value it had.
    pub(crate) fn replace(&self, key: K, value: V) {
        #[cfg(not(loom))]
        drop(self.map.insert(key, value));
        #[cfg(loom)]
        drop(self.map.write().unwrap().insert(key, value));
    }

    /// Removes `key`; whether it was there.
    pub(crate) fn remove<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        #[cfg(not(loom))]
        return self.map.remove(key).is_some();
        #[cfg(loom)]
        self.map.write().unwrap().remove(key).is_some()
    }

    /// Removes every entry whose value `keep` refuses, each judged under an exclusive lock
    /// (its shard's).
    pub(crate) fn retain(&self, mut keep: impl FnMut(&V) -> bool) {
        #[cfg(not(loom))]
        self.map.retain(|_, value| keep(value));
        #[cfg(loom)]
        self.map.write().unwrap().retain(|_, value| keep(value));
    }

    /// Entries held (dashmap sums its shards' lengths, each under its read lock).
    pub(crate) fn len(&self) -> usize {
        #[cfg(not(loom))]
        return self.map.len();
        #[cfg(loom)]
        self.map.read().unwrap().len()
    }
}

/// How many reader counters a keyed table's grace periods spread its readers over
/// ([`crate::keyed`]'s `Grace`): one per thread slot ([`thread_slot`]) up to 64, so that
/// readers on different cores increment different cache lines. Under loom, model threads
/// share one OS thread (and so one slot), and one counter keeps the explored interleavings
/// those of the protocol.
#[cfg(all(feature = "keyed", not(loom)))]
pub(crate) const READER_SLOTS: usize = 64;
/// How many reader counters a keyed table's grace periods use (one under loom).
#[cfg(all(feature = "keyed", loom))]
pub(crate) const READER_SLOTS: usize = 1;

/// Whether a keyed table allocates all its segments when it is built: under loom, so that
/// the models' threads never race on `std`'s `OnceLock`, whose synchronization loom does not
/// see; otherwise each segment is allocated when an insertion first needs it.
#[cfg(feature = "keyed")]
pub(crate) const EAGER_SEGMENTS: bool = cfg!(loom);

/// The hash a keyed table files `key` under: the limiter's hasher's, or under loom one fixed
/// function (std's `DefaultHasher` with its fixed keys), so that a model's keys land in the
/// same slots in every execution (a randomly keyed hasher makes loom's executions differ,
/// which it cannot replay).
#[cfg(feature = "keyed")]
#[inline]
pub(crate) fn key_hash<S, Q>(hasher: &S, key: &Q) -> u64
where
    S: std::hash::BuildHasher,
    Q: std::hash::Hash + ?Sized,
{
    #[cfg(loom)]
    {
        let _ = hasher;
        std::hash::BuildHasher::hash_one(
            &std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default(),
            key,
        )
    }
    #[cfg(not(loom))]
    hasher.hash_one(key)
}
