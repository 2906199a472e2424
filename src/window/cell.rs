//! [`FixedWindowCell`]: a fixed window's whole state in one word, deciding with a
//! [`WindowConfig`] many cells share, for keyed limiters
//! ([the guide](crate::guide::window#cells-and-a-shared-configuration)).

use std::fmt;

use crate::clock::Clock;
use crate::epoch::{epoch_of, until_epoch};
use crate::error::ExceedsLimit;
use crate::layout::{Layout, Padded};
use crate::limiter::Decision;
use crate::relabel::{self, Packed};
use crate::sync::AtomicU128;

use super::config::{WindowConfig, COUNT_BITS, COUNT_MASK, EPOCH_MASK};

/// An unpacked cell word, high to low `[window: 64 | epoch: 44 | count: 20]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    /// The window counted: `floor(t / W)` of the newest reading that moved the cell.
    window: u64,
    /// The configuration epoch the count was last decided under: a cell whose epoch differs
    /// from the configuration's relabels itself before deciding.
    epoch: u64,
    /// Permits admitted in `window` (< 2^20).
    count: u64,
}

impl Packed for State {
    fn pack(self) -> u128 {
        debug_assert!(self.epoch <= EPOCH_MASK && self.count <= COUNT_MASK);
        (u128::from(self.window) << 64) | u128::from((self.epoch << COUNT_BITS) | self.count)
    }

    fn unpack(word: u128) -> Self {
        // The halves are 64 bits: the casts are exact.
        let low = word as u64;
        Self {
            window: (word >> 64) as u64,
            epoch: low >> COUNT_BITS,
            count: low & COUNT_MASK,
        }
    }
}

/// One fixed window's state, the window it counts, the configuration epoch it was last
/// decided under and its count, in one 128-bit word (16 bytes compact, a cache line padded), deciding with a
/// [`WindowConfig`] many cells share and a clock the caller names. Admits `n` at `t` iff
/// `count[t / W] + n <= N`, exactly as [`FixedWindow`](crate::FixedWindow) and its spec, and
/// linearizable when the shared limit changes under it. A cell belongs to the configuration
/// it was made under (window numbers of two window lengths do not compare, nor do two
/// configurations' epochs): to move a key to another configuration, start a new cell.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::cell::{FixedWindowCell, WindowConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// let config = WindowConfig::new(WindowQuota::per_second(1)?)?;
/// let cell = FixedWindowCell::<Compact>::new();
/// assert_eq!(cell.footprint(), 16);
/// assert!(cell.try_acquire(&config, &clock));
/// assert!(!cell.try_acquire(&config, &clock));
/// clock.advance(Duration::from_secs(1));
/// assert!(cell.try_acquire(&config, &clock));
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct FixedWindowCell<L: Layout = Padded> {
    /// `[window: 64 | epoch: 44 | count: 20]`, see `State`.
    word: L::Cell<AtomicU128>,
}

impl<L: Layout> Default for FixedWindowCell<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: Layout> FixedWindowCell<L> {
    /// An empty cell (nothing admitted in any window yet), under any configuration.
    ///
    /// ```
    /// use ringlimit::cell::{FixedWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per_second(7)?)?;
    /// let cell: FixedWindowCell = FixedWindowCell::new();
    /// assert_eq!(cell.available(&config, &ManualClock::new()), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new() -> Self {
        Self {
            // Epoch 0, window 0, nothing counted: the first access relabels it if the
            // configuration has moved on.
            word: L::cell(AtomicU128::new(0)),
        }
    }

    /// One call ([`relabel::run`]): `decide(state, limit)` on a word labelled with the epoch
    /// in force and (when `moves`) counting the window of `now` or a later one; it returns
    /// `Ok(new state)` to write or `Err(result)` to return once the word is confirmed
    /// unchanged.
    #[inline]
    fn decide<R>(
        &self,
        config: &WindowConfig,
        now: u64,
        moves: bool,
        mut decide: impl FnMut(State, u64) -> Result<State, R>,
        done: impl Fn(State, u64) -> R,
    ) -> R {
        let epoch = epoch_of(now, config.window);
        relabel::run(
            &self.word,
            config,
            |state: State, label, limit| {
                let moved = State {
                    window: if moves {
                        state.window.max(epoch)
                    } else {
                        state.window
                    },
                    epoch: label,
                    count: if moves && epoch > state.window {
                        0
                    } else {
                        state.count
                    },
                };
                (moved, limit)
            },
            |state, &limit| decide(state, limit),
            |next, &limit| done(next, limit),
        )
    }

    /// Takes one permit.
    ///
    /// ```
    /// use ringlimit::cell::{FixedWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(1)?)?;
    /// let cell: FixedWindowCell = FixedWindowCell::new();
    /// assert!(cell.try_acquire(&config, &clock));
    /// assert!(!cell.try_acquire(&config, &clock));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_acquire<C: Clock + ?Sized>(&self, config: &WindowConfig, clock: &C) -> bool {
        if config.unlimited {
            return true;
        }
        // `try_acquire_n(1)` without building a decision: every limit is at least 1.
        self.decide(
            config,
            clock.now_nanos(),
            true,
            |state, limit| {
                if state.count < limit {
                    Ok(State {
                        count: state.count + 1,
                        ..state
                    })
                } else {
                    Err(false)
                }
            },
            |_, _| true,
        )
    }

    /// Decides `n` permits: admitted with what remains in the window, or refused with the
    /// time until the next window; [`ExceedsLimit`] for more than the limit. A request for
    /// `n >= 1` moves the cell to the window of its reading whatever its outcome, as the
    /// spec does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::{FixedWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// use ringlimit::outcome::Decision;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(3)?)?;
    /// let cell: FixedWindowCell = FixedWindowCell::new();
    /// assert_eq!(cell.try_acquire_n(&config, &clock, 2)?, Decision::Admitted { remaining: 1 });
    /// clock.advance(Duration::from_millis(400));
    /// assert_eq!(
    ///     cell.try_acquire_n(&config, &clock, 2)?,
    ///     Decision::Refused { available: 1, retry_after: Duration::from_millis(600) }
    /// );
    /// assert!(cell.try_acquire_n(&config, &clock, 4).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_n<C: Clock + ?Sized>(
        &self,
        config: &WindowConfig,
        clock: &C,
        n: u64,
    ) -> Result<Decision, ExceedsLimit> {
        self.grant(config, clock, n).map(|(decision, _)| decision)
    }

    /// Permits available now. Moves nothing (a snapshot), but relabels a cell decided under
    /// an older limit.
    ///
    /// ```
    /// use ringlimit::cell::{FixedWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(5)?)?;
    /// let cell: FixedWindowCell = FixedWindowCell::new();
    /// cell.try_acquire_n(&config, &clock, 2)?;
    /// assert_eq!(cell.available(&config, &clock), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn available<C: Clock + ?Sized>(&self, config: &WindowConfig, clock: &C) -> u64 {
        if config.unlimited {
            return u64::MAX;
        }
        let now = clock.now_nanos();
        let epoch = epoch_of(now, config.window);
        self.decide(
            config,
            now,
            false,
            |state, limit| {
                let count = if epoch > state.window { 0 } else { state.count };
                Err(limit.saturating_sub(count))
            },
            |_, _| 0,
        )
    }

    /// [`try_acquire_n`](Self::try_acquire_n), with the window an admission was counted in
    /// (for [`refund`](Self::refund)).
    pub(crate) fn grant<C: Clock + ?Sized>(
        &self,
        config: &WindowConfig,
        clock: &C,
        n: u64,
    ) -> Result<(Decision, Option<u64>), ExceedsLimit> {
        if config.unlimited {
            return Ok((
                Decision::Admitted {
                    remaining: u64::MAX,
                },
                None,
            ));
        }
        let now = clock.now_nanos();
        let epoch = epoch_of(now, config.window);
        self.decide(
            config,
            now,
            n > 0,
            |state, limit| {
                if n > limit {
                    return Err(Err(ExceedsLimit {
                        requested: n,
                        limit,
                    }));
                }
                if n == 0 {
                    // Moves nothing: the count of an older window is no longer in force.
                    let count = if epoch > state.window { 0 } else { state.count };
                    return Err(Ok((
                        Decision::Admitted {
                            remaining: limit.saturating_sub(count),
                        },
                        None,
                    )));
                }
                if state.count + n <= limit {
                    return Ok(State {
                        count: state.count + n,
                        ..state
                    });
                }
                Err(Ok((
                    Decision::Refused {
                        available: limit.saturating_sub(state.count),
                        retry_after: until_epoch(state.window + 1, config.window, now),
                    },
                    None,
                )))
            },
            |next, limit| {
                Ok((
                    Decision::Admitted {
                        remaining: limit - next.count,
                    },
                    Some(next.window),
                ))
            },
        )
    }

    /// Gives back up to `n` permits counted in window `window`: one CAS while that is still
    /// the cell's window (they are taken off its count); once it has passed they are
    /// dropped (they expire with it: that only under-admits). Returns the permits restored.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn refund(&self, config: &WindowConfig, window: u64, n: u64) -> u64 {
        if config.unlimited || n == 0 {
            return 0;
        }
        // Moves nothing: the count it takes from is `window`'s while the cell is still in
        // it (a later reading moves the cell only on its next request).
        let restored = std::cell::Cell::new(0);
        self.decide(
            config,
            0,
            false,
            |state, _| {
                restored.set(n.min(state.count));
                if state.window != window || restored.get() == 0 {
                    return Err(0);
                }
                Ok(State {
                    count: state.count - restored.get(),
                    ..state
                })
            },
            |_, _| restored.get(),
        )
    }

    /// `None` if the cell is indistinguishable from a fresh one at clock reading `now`
    /// (nothing counted in that reading's window, and not moved past it), else the reading
    /// from which it will be. One loaded word decides both.
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn idle_at<C: Clock + ?Sized>(
        &self,
        config: &WindowConfig,
        _clock: &C,
        now: u64,
    ) -> Option<u64> {
        if config.unlimited {
            return None;
        }
        let epoch = epoch_of(now, config.window);
        self.decide(
            config,
            now,
            false,
            |state, _| {
                Err(
                    if state.window < epoch || (state.window == epoch && state.count == 0) {
                        None
                    } else if state.count == 0 {
                        // Ahead of the reading (moved there by a later one): fresh only once the
                        // readings reach its window.
                        Some(state.window.saturating_mul(config.window))
                    } else {
                        Some((state.window + 1).saturating_mul(config.window))
                    },
                )
            },
            |_, _| None,
        )
    }

    /// Bytes this cell occupies: 16 compact, a whole cache line (or two) padded.
    ///
    /// ```
    /// use ringlimit::cell::FixedWindowCell;
    /// use ringlimit::cell::{Compact, Padded};
    /// assert_eq!(FixedWindowCell::<Compact>::new().footprint(), 16);
    /// assert!(FixedWindowCell::<Padded>::new().footprint() >= 64);
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl<L: Layout> fmt::Debug for FixedWindowCell<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedWindowCell")
            .field("state", &State::unpack(relabel::load(&self.word)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_at_field_limits() {
        for state in [
            State {
                window: 0,
                epoch: 0,
                count: 0,
            },
            State {
                window: u64::MAX,
                epoch: EPOCH_MASK,
                count: COUNT_MASK,
            },
            State {
                window: 12_345,
                epoch: 7,
                count: 3,
            },
        ] {
            assert_eq!(State::unpack(state.pack()), state);
        }
        // Each field lands where the layout says.
        let word = State {
            window: 1,
            epoch: 2,
            count: 3,
        }
        .pack();
        assert_eq!(word, (1 << 64) | (2 << 20) | 3);
    }
}
