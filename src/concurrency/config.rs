//! [`ConcurrencyConfig`]: the in-flight limit that many [`ConcurrencyCell`](crate::cell::ConcurrencyCell)s share.

use std::fmt;

use crate::error::ConfigError;
use crate::sync::{atomic, AtomicU64, Ordering};

use super::quota::ConcurrencyQuota;
use super::word::{ConfigWord, MAX_LIMIT};

/// A shared, reconfigurable in-flight limit: the configuration half of a concurrency limiter.
///
/// One configuration serves any number of [`ConcurrencyCell`](crate::cell::ConcurrencyCell)s (a keyed limiter's cells, one
/// per key). It is one atomic word `[epoch: 32 | limit: 32]`: [`set_limit`](Self::set_limit)
/// writes the new limit and the next epoch, and touches no cell; each cell converts itself
/// to the new epoch on its next access. Every cell, with this configuration, stays
/// linearizable with respect to [`ConcurrencySpec`](crate::spec::ConcurrencySpec) across
/// reconfigurations (proof: [guide](crate::guide::concurrency#cells-and-a-shared-configuration)).
///
/// ```
/// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
/// use ringlimit::ConcurrencyQuota;
/// use ringlimit::cell::Compact;
/// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(2)?);
/// let alice = ConcurrencyCell::<Compact>::with_layout(&config);
/// let bob = ConcurrencyCell::<Compact>::with_layout(&config);
/// assert!(alice.try_acquire(&config, 2)?);
/// assert!(bob.try_acquire(&config, 1)?);
/// config.set_limit(1)?; // both cells, one store
/// assert_eq!(alice.available(&config), 0); // 2 still out: they stay valid
/// assert!(!bob.try_acquire(&config, 1)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ConcurrencyConfig {
    /// `[epoch: 32 | limit: 32]`, see `word::ConfigWord`.
    word: AtomicU64,
}

impl ConcurrencyConfig {
    /// The largest limit: a 32-bit field of the configuration word.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyConfig};
    /// use ringlimit::{ConcurrencyQuota};
    /// assert_eq!(ConcurrencyConfig::MAX_LIMIT, ConcurrencyQuota::MAX_LIMIT);
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// At most `quota.max()` permits in flight in each cell decided under this
    /// configuration. An [unlimited](ConcurrencyQuota::unlimited) quota is the largest limit,
    /// [`MAX_LIMIT`](Self::MAX_LIMIT), as for the limiter.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyConfig};
    /// use ringlimit::{ConcurrencyQuota};
    /// assert_eq!(ConcurrencyConfig::new(ConcurrencyQuota::new(16)?).limit(), 16);
    /// let unlimited = ConcurrencyConfig::new(ConcurrencyQuota::unlimited());
    /// assert_eq!(unlimited.limit(), ConcurrencyConfig::MAX_LIMIT);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: ConcurrencyQuota) -> Self {
        Self {
            word: atomic(ConfigWord::new(quota.max()).pack()),
        }
    }

    /// The current limit.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyConfig};
    /// use ringlimit::{ConcurrencyQuota};
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(8)?);
    /// config.set_limit(3)?;
    /// assert_eq!(config.limit(), 3);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        // Relaxed: coherence alone orders it with `set_limit` (a read that happens after a
        // change sees it or a later one), and nothing else is published through this word.
        self.load(Ordering::Relaxed).limit
    }

    /// Changes the limit (`1..=u32::MAX`, checked as [`ConcurrencyQuota::new`] checks it) for
    /// every cell sharing this configuration, without touching any of them.
    ///
    /// Every acquisition is decided wholly under the old limit or wholly under the new one.
    /// Permits already in flight stay valid: below their count, a cell admits nothing until
    /// enough are released. Setting the limit it already has changes nothing (no new epoch).
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::{ConcurrencyQuota, ConfigError};
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(4)?);
    /// let cell: ConcurrencyCell = ConcurrencyCell::new(&config);
    /// assert!(cell.try_acquire(&config, 3)?);
    /// config.set_limit(2)?;
    /// assert_eq!(cell.in_flight(&config), 3); // still out
    /// cell.release(&config, 2);
    /// assert_eq!(cell.available(&config), 1);
    /// assert_eq!(config.set_limit(0), Err(ConfigError::ZeroLimit));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        let limit = crate::validate::limit(limit, MAX_LIMIT)?;
        // Relaxed: only a starting guess for the CAS, which compares the whole word (and, when
        // the limit is already `limit`, the point this call takes effect: coherence orders it).
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            let current = ConfigWord::unpack(word);
            if current.limit == limit {
                return Ok(());
            }
            // Set to `{ epoch: epoch + 1, limit }`. SeqCst: a limiter's raised limit is a
            // release for its waiters (the Dekker pattern in `guide::waiting`: this write is
            // ordered before the waiters count is read); the cells need only coherence.
            // Relaxed on failure: the value is only the next guess.
            match self.word.compare_exchange_weak(
                word,
                current.changed(limit).pack(),
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => word = actual,
            }
        }
    }

    /// The configuration word, read in `order`.
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> ConfigWord {
        ConfigWord::unpack(self.word.load(order))
    }
}

impl fmt::Debug for ConcurrencyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a diagnostic snapshot.
        let config = self.load(Ordering::Relaxed);
        f.debug_struct("ConcurrencyConfig")
            .field("limit", &config.limit)
            .field("epoch", &config.epoch)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_change_moves_the_epoch() {
        let config = ConcurrencyConfig::new(ConcurrencyQuota::new(3).unwrap());
        assert_eq!(config.load(Ordering::Relaxed), ConfigWord::new(3));
        config.set_limit(3).unwrap();
        assert_eq!(config.load(Ordering::Relaxed).epoch, 0);
        config.set_limit(4).unwrap();
        config.set_limit(3).unwrap();
        // Back to the same limit, but two epochs on: a label is never the limit itself.
        assert_eq!(
            config.load(Ordering::Relaxed),
            ConfigWord { epoch: 2, limit: 3 }
        );
        assert_eq!(
            config.set_limit(MAX_LIMIT + 1),
            Err(ConfigError::LimitTooLarge {
                limit: MAX_LIMIT + 1,
                max: MAX_LIMIT
            })
        );
        assert_eq!(config.limit(), 3);
    }
}
