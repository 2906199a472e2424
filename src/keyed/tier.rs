//! Per-key quota overrides: a [`Tier`] is a configuration some keys decide under instead of
//! the keyed limiter's own (a paying plan, a partner's API key), shared by the keys assigned
//! to it and reconfigurable like the limiter's.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use crate::clock::Clock;
use crate::sync::Ordering;

use super::family::{Family, FromQuota, RateFamily};
use super::limiter::Keyed;

/// A quota for some keys of a [`Keyed`] limiter instead of its own: one configuration shared
/// by every key assigned to it ([`Keyed::assign`]), which
/// [`config`](Self::config) reconfigures for all of them at once (each key's cell picks the
/// change up on its next access, as the limiter's own keys do). Cloning shares it.
///
/// ```
/// use ringlimit::keyed::{Buckets, Keyed};
/// use ringlimit::BucketQuota;
/// let per_user: Keyed<u64, Buckets> = Keyed::new(BucketQuota::per_second(1)?.burst(1)?);
/// let paid = per_user.tier(BucketQuota::per_second(100)?.burst(3)?);
/// per_user.assign(7, &paid);
/// assert_eq!((per_user.available(&7), per_user.available(&8)), (3, 1));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct Tier<F: Family> {
    config: Arc<F::Config>,
}

impl<F: Family> Tier<F> {
    /// The tier's configuration, shared by its keys: reconfigure it here.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::clock::TscClock;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per_second(1)?)?;
    /// let limits: Keyed<u64, FixedWindows> = Keyed::with_config(config, TscClock::new());
    /// let gold = limits.tier_of(WindowConfig::new(WindowQuota::per_second(5)?)?);
    /// limits.assign(1, &gold);
    /// gold.config().set_limit(10)?;
    /// assert_eq!(limits.available(&1), 10);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn config(&self) -> &F::Config {
        &self.config
    }
}

impl<F: Family> Clone for Tier<F> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
        }
    }
}

impl<F: Family> fmt::Debug for Tier<F>
where
    F::Config: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tier")
            .field("config", &self.config)
            .finish()
    }
}

/// A key assigned a tier: its cell, under the tier's configuration, and the cell's own id
/// (never 0, never reused), which a grant taken from it carries: a grant refunds only into
/// the cell it was taken from, not into the fresh one a re-assignment makes (the tier's
/// address would not do: reused after a re-assignment or by a new tier, it would let old
/// grants refund into fresh cells).
pub(super) struct Assigned<F: Family> {
    pub(super) tier: Tier<F>,
    pub(super) cell: F::Cell,
    pub(super) id: u64,
}

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
        Tier {
            config: Arc::new(F::adopt(config)),
        }
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
