//! Concurrency limits per key: [`Keyed`] over the [`InFlight`] family, and the
//! [`KeyedPermit`] that gives a key's permits back when it drops.

use std::fmt;
use std::hash::{BuildHasher, Hash};

use crate::clock::Clock;

use super::error::KeyedError;
use super::family::InFlight;
use super::key::ToKey;
use super::limiter::Keyed;

impl<K: Eq + Hash, C: Clock, S: BuildHasher> Keyed<K, InFlight, C, S> {
    /// Takes one permit for `key`: `Ok(None)` if the key has its limit in flight,
    /// [`KeyedError::Full`] if the key is new and the limiter is full of keys with permits in
    /// flight. The permit gives itself back when dropped.
    ///
    /// ```
    /// use ringlimit::keyed::{InFlight, Keyed};
    /// use ringlimit::ConcurrencyQuota;
    /// let uploads: Keyed<String, InFlight> = Keyed::new(ConcurrencyQuota::new(1)?);
    /// let permit = uploads.try_acquire_permit("alice")?.expect("alice's one upload");
    /// assert!(uploads.try_acquire_permit("alice")?.is_none());
    /// assert!(uploads.try_acquire_permit("bob")?.is_some());
    /// drop(permit);
    /// assert!(uploads.try_acquire_permit("alice")?.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_permit<'k, Q>(
        &self,
        key: &'k Q,
    ) -> Result<Option<KeyedPermit<'_, K, C, S>>, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        self.try_acquire_many(key, 1)
    }

    /// Takes `n` permits for `key` at once, or none: as
    /// [`try_acquire_permit`](Self::try_acquire_permit), and
    /// [`KeyedError::ExceedsLimit`] for more than the limit. `n = 0` takes nothing and
    /// returns an empty permit.
    ///
    /// ```
    /// use ringlimit::keyed::{InFlight, Keyed, KeyedError};
    /// use ringlimit::ConcurrencyQuota;
    /// let jobs: Keyed<u32, InFlight> = Keyed::new(ConcurrencyQuota::new(4)?);
    /// let batch = jobs.try_acquire_many(&1, 3)?.expect("3 of 4");
    /// assert_eq!((batch.permits(), jobs.available(&1)), (3, 1));
    /// assert!(matches!(jobs.try_acquire_many(&1, 5), Err(KeyedError::ExceedsLimit(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_many<'k, Q>(
        &self,
        key: &'k Q,
        n: u64,
    ) -> Result<Option<KeyedPermit<'_, K, C, S>>, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        if n == 0 {
            return Ok(Some(KeyedPermit {
                limiter: self,
                key: key.to_key(),
                n: 0,
            }));
        }
        let taken = self.with_cell(key, |cell, config, _| cell.try_acquire(config, n))??;
        Ok(taken.then(|| KeyedPermit {
            limiter: self,
            key: key.to_key(),
            n,
        }))
    }

    /// Permits in flight for `key` (0 for a key not held; creates nothing).
    ///
    /// ```
    /// use ringlimit::keyed::{InFlight, Keyed};
    /// use ringlimit::ConcurrencyQuota;
    /// let jobs: Keyed<u32, InFlight> = Keyed::new(ConcurrencyQuota::new(4)?);
    /// let _permit = jobs.try_acquire_permit(&1)?;
    /// assert_eq!((jobs.in_flight(&1), jobs.in_flight(&2)), (1, 0));
    /// assert!(!jobs.is_empty() && jobs.len() == 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight<Q>(&self, key: &Q) -> u64
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cell(key, |cell, config, _| cell.in_flight(config))
            .unwrap_or(0)
    }

    /// Permits `key` could take now (the limit for a key not held; creates nothing).
    ///
    /// ```
    /// use ringlimit::keyed::{InFlight, Keyed};
    /// use ringlimit::ConcurrencyQuota;
    /// let jobs: Keyed<u32, InFlight> = Keyed::new(ConcurrencyQuota::new(4)?);
    /// let _permit = jobs.try_acquire_many(&1, 3)?;
    /// assert_eq!((jobs.available(&1), jobs.available(&2)), (1, 4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn available<Q>(&self, key: &Q) -> u64
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.cell(key, |cell, config, _| cell.available(config))
            .unwrap_or_else(|| self.config().limit())
    }
}

/// Permits taken for one key of a keyed concurrency limit, given back when dropped (the key
/// is looked up again: it cannot have been dropped meanwhile, since a key with permits in
/// flight is never idle).
///
/// ```
/// use ringlimit::keyed::{InFlight, Keyed};
/// use ringlimit::ConcurrencyQuota;
/// let uploads: Keyed<u64, InFlight> = Keyed::new(ConcurrencyQuota::new(2)?);
/// {
///     let permit = uploads.try_acquire_many(&1, 2)?.expect("2 of 2");
///     assert_eq!((permit.permits(), uploads.available(&1)), (2, 0));
/// } // dropped: both given back
/// assert_eq!(uploads.available(&1), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedPermit<'a, K: Eq + Hash, C: Clock, S: BuildHasher> {
    limiter: &'a Keyed<K, InFlight, C, S>,
    key: K,
    n: u64,
}

impl<K: Eq + Hash, C: Clock, S: BuildHasher> KeyedPermit<'_, K, C, S> {
    /// How many permits this holds.
    ///
    /// ```
    /// use ringlimit::keyed::{InFlight, Keyed};
    /// use ringlimit::ConcurrencyQuota;
    /// let jobs: Keyed<u32, InFlight> = Keyed::new(ConcurrencyQuota::new(4)?);
    /// assert_eq!(jobs.try_acquire_many(&1, 2)?.map(|p| p.permits()), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits(&self) -> u64 {
        self.n
    }
}

impl<K: Eq + Hash, C: Clock, S: BuildHasher> Drop for KeyedPermit<'_, K, C, S> {
    fn drop(&mut self) {
        if self.n > 0 {
            self.limiter
                .cell(&self.key, |cell, config, _| cell.release(config, self.n));
        }
    }
}

impl<K: Eq + Hash + fmt::Debug, C: Clock, S: BuildHasher> fmt::Debug for KeyedPermit<'_, K, C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPermit")
            .field("key", &self.key)
            .field("permits", &self.n)
            .finish()
    }
}
