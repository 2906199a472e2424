//! The keyed limiter's tier methods: making a [`Tier`] from a quota or a configuration, and
//! putting keys on it and taking them off.

use std::hash::{BuildHasher, Hash};

use crate::clock::Clock;
use crate::sync::Ordering;

use super::family::{FromQuota, RateFamily};
use super::limiter::Keyed;
use super::tier::{Assigned, Tier};

impl<K: Eq + Hash, F: RateFamily + FromQuota, C: Clock, S: BuildHasher> Keyed<K, F, C, S> {
    /// A tier of `quota`, on this limiter's clock, for [`assign`](Self::assign).
    ///
    /// ```
    /// use ringlimit::cell::SlidingConfig;
    /// use ringlimit::clock::TscClock;
    /// use ringlimit::keyed::{Keyed, SlidingWindows};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, SlidingWindows> =
    ///     Keyed::with_config(SlidingConfig::new(WindowQuota::per_minute(10)?)?, TscClock::new());
    /// let partner = limits.tier_of(SlidingConfig::new(WindowQuota::per_minute(1000)?)?);
    /// limits.assign(42, &partner);
    /// assert_eq!(limits.available(&42), 1000);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn tier(&self, quota: F::Quota) -> Tier<F> {
        self.tier_of(F::config(quota, &self.clock()))
    }
}

impl<K: Eq + Hash, F: RateFamily, C: Clock, S: BuildHasher> Keyed<K, F, C, S> {
    /// A tier of `config` (for families built from a configuration), for
    /// [`assign`](Self::assign). The configuration must count time from this limiter's
    /// clock, as [`tier`](Self::tier) makes it.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::try_new(WindowQuota::per_second(1)?)?;
    /// let tier = limits.tier_of(WindowConfig::new(WindowQuota::per_second(9)?)?);
    /// limits.assign(3, &tier);
    /// assert_eq!(limits.available(&3), 9);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn tier_of(&self, config: F::Config) -> Tier<F> {
        Tier::new(F::adopt(config))
    }

    /// Puts `key` on `tier`: from now on it decides under the tier's configuration, starting
    /// afresh (a new cell, as for a key never seen; whatever it had taken under its previous
    /// quota is forgotten, which is what moving to another plan means). Assigned keys are
    /// never dropped as idle and do not count towards [`max_keys`](Self::max_keys); a request
    /// racing the assignment is decided under the old quota or the new one.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<String, FixedWindows> = Keyed::try_new(WindowQuota::per_second(1)?)?;
    /// let pro = limits.tier_of(WindowConfig::new(WindowQuota::per_second(3)?)?);
    /// assert!(limits.try_acquire("acme") && !limits.try_acquire("acme"));
    /// limits.assign("acme".to_owned(), &pro);
    /// assert_eq!((limits.available("acme"), limits.assigned_len()), (3, 1));
    /// assert!(limits.unassign("acme"));
    /// assert_eq!(limits.available("acme"), 0); // its own window still counts the first
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn assign(&self, key: K, tier: &Tier<F>) {
        let assigned = Assigned {
            tier: tier.clone(),
            cell: F::cell(tier.config()),
            id: crate::sync::next_id(),
        };
        // SeqCst: a request that starts after this returns loads `true`, and so looks among
        // the assigned keys (see `assigned_cell`).
        self.any_assigned.store(true, Ordering::SeqCst);
        self.assigned.replace(key, assigned);
        // The key's cell under the limiter's own quota stays where it is: a request that
        // looked among the assigned keys just before the insertion decides on it, which is
        // then linearized before the assignment. Removing it here would let such a request
        // re-create it fresh and admit again under the old quota (found by this module's
        // race test). No longer consulted, it goes as soon as it is idle.
    }

    /// Takes `key` off its tier, back to the limiter's own quota (with whatever its cell
    /// there still holds, if it was not dropped as idle meanwhile); whether it had a tier.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u32, FixedWindows> = Keyed::try_new(WindowQuota::per_second(1)?)?;
    /// let pro = limits.tier_of(WindowConfig::new(WindowQuota::per_second(3)?)?);
    /// limits.assign(5, &pro);
    /// assert!(limits.unassign(&5));
    /// assert_eq!(limits.available(&5), 1);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn unassign<Q>(&self, key: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.assigned.remove(key)
    }

    /// Keys assigned a tier.
    ///
    /// ```
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<u32, FixedWindows> = Keyed::try_new(WindowQuota::per_second(1)?)?;
    /// assert_eq!(limits.assigned_len(), 0);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn assigned_len(&self) -> usize {
        self.assigned.len()
    }
}
