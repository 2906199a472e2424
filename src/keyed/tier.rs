//! Per-key quota overrides: a [`Tier`] is a configuration some keys decide under instead of
//! the keyed limiter's own (a paying plan, a partner's API key), shared by the keys assigned
//! to it and reconfigurable like the limiter's.

use std::fmt;
use std::sync::Arc;

use super::family::Family;

/// A quota for some keys of a [`Keyed`](super::Keyed) limiter instead of its own: one configuration shared
/// by every key assigned to it ([`Keyed::assign`](super::Keyed::assign)), which
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
    /// A tier deciding under `config`, already adopted by the family.
    pub(super) fn new(config: F::Config) -> Self {
        Self {
            config: Arc::new(config),
        }
    }

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
