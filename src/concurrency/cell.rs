//! [`ConcurrencyCell`]: one in-flight count, decided under a shared [`ConcurrencyConfig`].

use std::fmt;

use crate::error::ExceedsLimit;
use crate::layout::{Layout, Padded};
use crate::sync::{atomic, AtomicU64, Ordering};

use super::config::ConcurrencyConfig;
use super::in_flight::{available, decide, Verdict};
use super::word::{CellWord, ConfigWord, State};

/// The lock-free state of one concurrency limit and nothing else: no limit, no lock, no
/// waiters. It decides with `(&config, n)`, so millions of cells (one per key) can share one
/// [`ConcurrencyConfig`]. [`ConcurrencyLimiter`](crate::ConcurrencyLimiter), which owns its
/// limit, keeps one word `[limit | in_flight]` instead, whose release is a single
/// `fetch_sub` ([the guide](crate::guide::concurrency#cells-and-a-shared-configuration)).
///
/// **Word.** One `AtomicU64`, high to low `[epoch: 32 | in_flight: 32]`, in the layout's
/// cell: 8 bytes with [`Compact`](crate::cell::Compact), a cache line with [`Padded`]. `epoch`
/// labels the configuration the cell was last decided under.
///
/// **Protocol.** Every operation (acquire, release, the snapshots) loads the cell word, then
/// the configuration. If the cell's label is not the configuration's epoch, the operation
/// first converts the cell (a CAS to `{ epoch: config's, in_flight }`) and goes on from the
/// converted word. Decisions and writes are made only from a word labelled with the epoch of
/// the configuration they use, so a reconfiguration touches no cell, yet every cell stays
/// linearizable with respect to [`ConcurrencySpec`](crate::spec::ConcurrencySpec) (limit:
/// the configuration's): proof in [the
/// guide](crate::guide::concurrency#cells-and-a-shared-configuration).
///
/// **Contract.** A cell is always used with the configuration it was made with. It counts
/// permits, it does not hand out guards: [`release`](Self::release) trusts its caller to
/// give back only what it acquired (more would over-admit; the count saturates at 0 rather
/// than wrap). A limiter built on cells wraps them in RAII permits, as
/// [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) wraps its word.
///
/// ```
/// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
/// use ringlimit::ConcurrencyQuota;
/// use ringlimit::cell::Compact;
/// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(2)?);
/// let cell = ConcurrencyCell::<Compact>::with_layout(&config);
/// assert_eq!(cell.footprint(), 8);
/// assert!(cell.try_acquire(&config, 2)?);
/// assert!(!cell.try_acquire(&config, 1)?); // full: refused, nothing written
/// cell.release(&config, 1);
/// assert_eq!(cell.available(&config), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ConcurrencyCell<L: Layout = Padded> {
    /// `[epoch: 32 | in_flight: 32]`, see `word::CellWord`.
    word: L::Cell<AtomicU64>,
}

impl ConcurrencyCell {
    /// A cell with nothing in flight, decided under `config`, in the default [`Padded`]
    /// layout (one cache line: for a few hot cells).
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::{ConcurrencyQuota};
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(4)?);
    /// let cell = ConcurrencyCell::new(&config);
    /// assert_eq!(cell.in_flight(&config), 0);
    /// assert!(cell.footprint() >= 64); // 128 on x86_64
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(config: &ConcurrencyConfig) -> Self {
        Self::with_layout(config)
    }
}

impl<L: Layout> ConcurrencyCell<L> {
    /// A cell with nothing in flight, decided under `config`, in layout `L`:
    /// [`Compact`](crate::cell::Compact) (8 bytes) for many cells, one per key.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::ConcurrencyQuota;
    /// use ringlimit::cell::Compact;
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(4)?);
    /// let cells: Vec<ConcurrencyCell<Compact>> =
    ///     (0..1000).map(|_| ConcurrencyCell::with_layout(&config)).collect();
    /// assert_eq!(std::mem::size_of_val(&cells[..]), 8000);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn with_layout(config: &ConcurrencyConfig) -> Self {
        // Relaxed: the label only needs to be an epoch the configuration has had by now;
        // whatever shares the new cell with other threads orders this load before theirs.
        let epoch = config.load(Ordering::Relaxed).epoch;
        Self {
            word: L::cell(atomic(CellWord::new(epoch).pack())),
        }
    }

    /// Takes `n` permits if `in_flight + n <= config.limit()`, all or none: `Ok(true)` if
    /// taken, `Ok(false)` if not now (nothing is written then, unless the cell had to
    /// convert to a new configuration first). `n` above the limit is [`ExceedsLimit`]: no
    /// release could make room for it. `n = 0` is taken at once.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::{ConcurrencyQuota, ExceedsLimit};
    /// use ringlimit::cell::Compact;
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(3)?);
    /// let cell = ConcurrencyCell::<Compact>::with_layout(&config);
    /// assert!(cell.try_acquire(&config, 3)?);
    /// assert!(!cell.try_acquire(&config, 1)?);
    /// assert_eq!(cell.try_acquire(&config, 4), Err(ExceedsLimit { requested: 4, limit: 3 }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire(&self, config: &ConcurrencyConfig, n: u64) -> Result<bool, ExceedsLimit> {
        // Acquire: pairs with the Release half of a release's CAS, so what the previous
        // holder did with its permits happens before this caller's admission.
        self.take(config, n, Ordering::Acquire)
    }

    /// Gives back `n` permits taken from this cell. A CAS loop, not a `fetch_sub`: it
    /// converts the cell first if the configuration changed, so that no acquisition decided
    /// under an older configuration can land after it (the guide's ABA case).
    ///
    /// Releasing more than is in flight empties the count rather than wrapping (as
    /// [`ConcurrencySpec::release`](crate::spec::ConcurrencySpec::release)); releasing
    /// permits not held can over-admit: the cell trusts its caller.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::ConcurrencyQuota;
    /// use ringlimit::cell::Compact;
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(2)?);
    /// let cell = ConcurrencyCell::<Compact>::with_layout(&config);
    /// assert!(cell.try_acquire(&config, 2)?);
    /// cell.release(&config, 2);
    /// assert_eq!(cell.in_flight(&config), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(&self, config: &ConcurrencyConfig, n: u64) {
        if n == 0 {
            return;
        }
        // Acquire: this word may be converted next, and a conversion must load the
        // configuration after the conversion that wrote this word's label (guide, lemma 1).
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let (cell, _) = self.settle(config, word, Ordering::Acquire);
            let next = CellWord {
                in_flight: cell.in_flight.saturating_sub(n),
                ..cell
            };
            // Set to `{ epoch, in_flight: in_flight - n }`, only from a word labelled with
            // the configuration just loaded. SeqCst: Release publishes the holder's work to
            // the next acquirer; in the single total order it is also the first half of the
            // release side of a limiter's Dekker pattern (`guide::waiting`), before the
            // waiters count is read. Acquire on failure: as the load above.
            match self.word.compare_exchange_weak(
                cell.pack(),
                next.pack(),
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }

    /// Permits taken and not yet released.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::ConcurrencyQuota;
    /// use ringlimit::cell::Compact;
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(8)?);
    /// let cell = ConcurrencyCell::<Compact>::with_layout(&config);
    /// assert!(cell.try_acquire(&config, 3)?);
    /// assert_eq!(cell.in_flight(&config), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight(&self, config: &ConcurrencyConfig) -> u64 {
        self.snapshot(config).0.in_flight
    }

    /// Permits that could be taken now: `limit - in_flight`, or 0 while a lowered limit is
    /// still over-subscribed.
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::ConcurrencyQuota;
    /// use ringlimit::cell::Compact;
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(8)?);
    /// let cell = ConcurrencyCell::<Compact>::with_layout(&config);
    /// assert!(cell.try_acquire(&config, 3)?);
    /// assert_eq!(cell.available(&config), 5);
    /// config.set_limit(2)?;
    /// assert_eq!(cell.available(&config), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn available(&self, config: &ConcurrencyConfig) -> u64 {
        let (cell, loaded) = self.snapshot(config);
        available(State {
            limit: loaded.limit,
            in_flight: cell.in_flight,
        })
    }

    /// Bytes this cell occupies: 8 with [`Compact`](crate::cell::Compact), a whole cache line
    /// (128 bytes on x86_64) with [`Padded`].
    ///
    /// ```
    /// use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
    /// use ringlimit::ConcurrencyQuota;
    /// use ringlimit::cell::Compact;
    /// let config = ConcurrencyConfig::new(ConcurrencyQuota::new(1)?);
    /// assert_eq!(ConcurrencyCell::<Compact>::with_layout(&config).footprint(), 8);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// Takes `n` permits if they are free, reading the cell in `order`: `Acquire`, or
    /// `SeqCst` for a limiter's registered waiter (whose re-check must read the cell and the
    /// configuration in the order a release or a limit change writes them, `guide::waiting`).
    #[inline]
    pub(crate) fn take(
        &self,
        config: &ConcurrencyConfig,
        n: u64,
        order: Ordering,
    ) -> Result<bool, ExceedsLimit> {
        // `order`: see above; Acquire at least, as a conversion may follow (lemma 1).
        let mut word = self.word.load(order);
        loop {
            let (cell, loaded) = self.settle(config, word, order);
            let state = State {
                limit: loaded.limit,
                in_flight: cell.in_flight,
            };
            let next = match decide(state, n)? {
                // Decided on a word labelled with the configuration it used: no write.
                Verdict::Refuse { .. } => return Ok(false),
                Verdict::Admit { next, .. } => CellWord {
                    in_flight: next.in_flight,
                    ..cell
                },
            };
            if next == cell {
                // n = 0: admitted at the load, nothing to write.
                return Ok(true);
            }
            // Set to `{ epoch, in_flight: in_flight + n }`, only from the exact word decided
            // on, labelled with the configuration decided under: the check and the count are
            // one atomic step under one limit, and it fails if any conversion came between.
            // AcqRel on success: Acquire as the load above; Release so that a thread which
            // sees this admission also sees what the admitting thread did before it, on other
            // cells too (without it two cells can be read out of order on weakly ordered
            // hardware: the loom model `two_cells_race_one_reconfiguration`; free on x86). On
            // failure, `order`: the value read is decided on (or converted) next, as the
            // load's would have been.
            match self
                .word
                .compare_exchange_weak(cell.pack(), next.pack(), Ordering::AcqRel, order)
            {
                Ok(_) => return Ok(true),
                // Retry at once from the observed word (no backoff: it measured no faster here,
                // unlike the buckets'; see `sync::Backoff`).
                Err(actual) => word = actual,
            }
        }
    }

    /// Loads the cell, then the configuration, converting the cell if needed: the word and
    /// configuration a snapshot is read from.
    fn snapshot(&self, config: &ConcurrencyConfig) -> (CellWord, ConfigWord) {
        // Acquire: as `try_acquire`'s load (and a conversion may follow, lemma 1).
        let word = self.word.load(Ordering::Acquire);
        self.settle(config, word, Ordering::Acquire)
    }

    /// Brings `word`, just read from this cell in `order`, to the configuration: loads the
    /// configuration, and while the word's label is not its epoch, converts the cell to
    /// `{ epoch: config's, in_flight }` (re-reading the configuration after a failed CAS).
    /// Returns a word labelled with the epoch of the returned configuration word, which was
    /// loaded after that word was read, or written by this call's conversion.
    #[inline]
    fn settle(
        &self,
        config: &ConcurrencyConfig,
        mut word: u64,
        order: Ordering,
    ) -> (CellWord, ConfigWord) {
        let config_order = match order {
            // SeqCst for a registered waiter's re-check: the second read of the waiter side
            // of the Dekker pattern, so it sees a limit change that missed the registration.
            Ordering::SeqCst => Ordering::SeqCst,
            // Relaxed: loaded after the cell word (whose Acquire load keeps it there), so
            // coherence already forbids an epoch older than the one that labelled the word
            // (lemma 1); nothing else is published through the configuration.
            _ => Ordering::Relaxed,
        };
        loop {
            let loaded = config.load(config_order);
            let cell = CellWord::unpack(word);
            if cell.epoch == loaded.epoch {
                return (cell, loaded);
            }
            let converted = cell.converted(loaded.epoch);
            // Set to `{ epoch: config's, in_flight }` (the conversion), only from the exact
            // word read, so no release or acquisition in between is lost. Release on
            // success: an operation that reads this label (Acquire) then loads the
            // configuration no older than the one loaded here (lemma 1); Acquire: the word
            // is decided on next, as a load's would be. On failure, `order`: as the load that
            // read `word`.
            match self
                .word
                .compare_exchange_weak(word, converted.pack(), Ordering::AcqRel, order)
            {
                Ok(_) => return (converted, loaded),
                Err(actual) => word = actual,
            }
        }
    }

    /// The cell word as it is, without converting, read in `order`: for diagnostics.
    pub(crate) fn word(&self, order: Ordering) -> CellWord {
        CellWord::unpack(self.word.load(order))
    }
}

impl<L: Layout> fmt::Debug for ConcurrencyCell<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a diagnostic snapshot.
        let cell = self.word(Ordering::Relaxed);
        f.debug_struct("ConcurrencyCell")
            .field("epoch", &cell.epoch)
            .field("in_flight", &cell.in_flight)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concurrency::ConcurrencyQuota;
    use crate::layout::Compact;

    fn config(limit: u64) -> ConcurrencyConfig {
        ConcurrencyConfig::new(ConcurrencyQuota::new(limit).unwrap())
    }

    #[test]
    fn a_cell_converts_on_its_next_access_only() {
        let config = config(3);
        let cell = ConcurrencyCell::<Compact>::with_layout(&config);
        assert!(cell.try_acquire(&config, 2).unwrap());
        config.set_limit(1).unwrap();
        config.set_limit(5).unwrap();
        // Untouched by the changes.
        assert_eq!(
            cell.word(Ordering::Relaxed),
            CellWord {
                epoch: 0,
                in_flight: 2
            }
        );
        assert_eq!(cell.available(&config), 3);
        // Converted straight to the current epoch, in_flight kept.
        assert_eq!(
            cell.word(Ordering::Relaxed),
            CellWord {
                epoch: 2,
                in_flight: 2
            }
        );
    }

    #[test]
    fn refusals_and_empty_requests_write_nothing_under_a_current_label() {
        let config = config(2);
        let cell = ConcurrencyCell::<Compact>::with_layout(&config);
        assert!(cell.try_acquire(&config, 2).unwrap());
        let before = cell.word(Ordering::Relaxed);
        assert!(!cell.try_acquire(&config, 1).unwrap());
        assert!(cell.try_acquire(&config, 0).unwrap());
        assert_eq!(cell.word(Ordering::Relaxed), before);
    }

    #[test]
    fn a_release_converts_and_never_borrows_from_the_label() {
        let config = config(2);
        let cell = ConcurrencyCell::<Compact>::with_layout(&config);
        assert!(cell.try_acquire(&config, 1).unwrap());
        config.set_limit(1).unwrap();
        cell.release(&config, 5);
        assert_eq!(
            cell.word(Ordering::Relaxed),
            CellWord {
                epoch: 1,
                in_flight: 0
            }
        );
    }

    #[test]
    fn cells_are_eight_bytes_compact() {
        assert_eq!(std::mem::size_of::<ConcurrencyCell<Compact>>(), 8);
        assert_eq!(
            std::mem::size_of::<ConcurrencyCell<Padded>>(),
            std::mem::size_of::<crossbeam_utils::CachePadded<AtomicU64>>()
        );
    }
}
