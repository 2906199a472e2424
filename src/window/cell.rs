//! [`FixedWindowCell`] and the [`WindowConfig`] many cells share: a fixed window's whole state
//! in one word, for keyed limiters ([the guide](crate::guide::window#cells-and-a-shared-configuration)).

use std::fmt;

use crate::clock::Clock;
use crate::config::{self, epoch_of, until_epoch};
use crate::error::{ConfigError, ExceedsLimit};
use crate::layout::{Layout, Padded};
use crate::limiter::Decision;
use crate::sync::{atomic, AtomicU128, AtomicU64, Ordering};

use super::labelled::{self, Packed};

use super::quota::WindowQuota;

/// The configuration of one or many window cells: the window's length, and its limit, which
/// [`set_limit`](Self::set_limit) changes for every cell at once (each cell picks it up on
/// its next access, keeping its count, as [`FixedWindow::set_limit`](crate::RateLimiter::set_limit)
/// does).
///
/// ```
/// use ringlimit::cell::{FixedWindowCell, WindowConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// let config = WindowConfig::new(WindowQuota::per_second(2)?)?;
/// let (alice, bob) = (FixedWindowCell::<Compact>::new(), FixedWindowCell::<Compact>::new());
/// assert!(alice.try_acquire(&config, &clock) && alice.try_acquire(&config, &clock));
/// assert!(!alice.try_acquire(&config, &clock));
/// assert!(bob.try_acquire(&config, &clock));
/// config.set_limit(3)?;
/// assert!(alice.try_acquire(&config, &clock)); // the third of the raised limit
/// # Ok::<(), ringlimit::ConfigError>(())
/// ```
pub struct WindowConfig {
    /// `[epoch: 44 | limit: 20]`: the limit in force and how many changes came before it
    /// (see `Setting`); `set_limit` moves it, cells load it after their word.
    setting: AtomicU64,
    /// The window's length in nanoseconds.
    window: u64,
    /// Built from an unlimited quota: every call is admitted, and the limit cannot change.
    unlimited: bool,
}

impl WindowConfig {
    /// The largest limit a window configuration holds (2^20 − 1): its limit and every
    /// cell's count are 20-bit fields of one word (the fixed window cells', and those of the
    /// [`SlidingWindowCell`](crate::cell::SlidingWindowCell)s and
    /// [`ApproxWindowCell`](crate::cell::ApproxWindowCell)s that share it). Below
    /// [`WindowQuota::MAX_LIMIT`] (2^40 − 1, the bucketed windows' bound): a larger quota
    /// is refused with [`ConfigError::LimitTooLarge`] naming this bound.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::{ConfigError, WindowQuota};
    /// assert_eq!(WindowConfig::MAX_LIMIT, (1 << 20) - 1);
    /// assert!(WindowConfig::new(WindowQuota::per_second(WindowConfig::MAX_LIMIT)?).is_ok());
    /// assert_eq!(
    ///     WindowConfig::new(WindowQuota::per_hour(10_000_000)?).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: WindowConfig::MAX_LIMIT })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// The configuration of `quota` (its window; a fixed window has no buckets). An
    /// unlimited quota admits everything.
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`WindowConfig::MAX_LIMIT`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per_minute(100)?)?;
    /// assert_eq!((config.limit(), config.window()), (100, Duration::from_secs(60)));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Result<Self, ConfigError> {
        // An unlimited configuration counts under the largest limit (and admits past it).
        let limit = if quota.is_unlimited() {
            MAX_LIMIT
        } else {
            config::limit(quota.limit(), MAX_LIMIT)?
        };
        Ok(Self {
            setting: atomic(Setting { epoch: 0, limit }.pack()),
            window: quota.window_nanos(),
            unlimited: quota.is_unlimited(),
        })
    }

    /// The limit in force (`u64::MAX` when unlimited).
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowConfig::new(WindowQuota::unlimited())?.limit(), u64::MAX);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.load().limit
    }

    /// The window's length.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per(5, Duration::from_millis(250))?)?;
    /// assert_eq!(config.window(), Duration::from_millis(250));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.window)
    }

    /// Changes the limit for every cell; counts are kept, so a cell over the new limit
    /// admits nothing more until its window ends. [`ConfigError::ZeroLimit`],
    /// [`ConfigError::LimitTooLarge`], or [`ConfigError::Unlimited`] on an unlimited
    /// configuration.
    ///
    /// ```
    /// use ringlimit::cell::{FixedWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(3)?)?;
    /// let cell: FixedWindowCell = FixedWindowCell::new();
    /// assert!(cell.try_acquire_n(&config, &clock, 2)?.is_admitted());
    /// config.set_limit(1)?;
    /// assert_eq!(cell.available(&config, &clock), 0);
    /// assert!(config.set_limit(0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.unlimited {
            return Err(ConfigError::Unlimited);
        }
        let limit = config::limit(limit, MAX_LIMIT)?;
        // SeqCst (both): the publication. A cell call that loads the old setting loaded its
        // word before (Acquire, then this load), so it took effect before this change (the
        // guide). The same limit again starts no epoch.
        let _ = self
            .setting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| {
                let old = Setting::unpack(word);
                (old.limit != limit).then(|| {
                    Setting {
                        epoch: (old.epoch + 1) & EPOCH_MASK,
                        limit,
                    }
                    .pack()
                })
            });
        Ok(())
    }

    /// The epoch and limit in force, as a cell of another window family loads them (after
    /// its own word, as `load`).
    #[inline]
    pub(crate) fn epoch_and_limit(&self) -> (u64, u64) {
        let setting = self.load();
        (setting.epoch, setting.limit)
    }

    /// When a cell that admitted in window `window` counts nothing any more: that window's
    /// end (what [`FixedWindowCell::idle_at`] says of it, read from the mark of the
    /// admission instead of the cell).
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn reset_at(&self, window: u64) -> u64 {
        (window + 1).saturating_mul(self.window)
    }

    /// The window's length in nanoseconds.
    pub(crate) fn window_nanos(&self) -> u64 {
        self.window
    }

    /// Whether this configuration admits everything.
    pub(crate) fn is_unlimited(&self) -> bool {
        self.unlimited
    }

    /// The setting in force, as cells load it.
    #[inline]
    fn load(&self) -> Setting {
        // SeqCst: as in `set_limit`.
        Setting::unpack(self.setting.load(Ordering::SeqCst))
    }

    /// Bytes this configuration occupies.
    ///
    /// ```
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// assert_eq!(WindowConfig::new(WindowQuota::per_second(1)?)?.footprint(), 24);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl fmt::Debug for WindowConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowConfig")
            .field("limit", &self.limit())
            .field("window", &self.window())
            .finish()
    }
}

/// Bits of a configuration epoch.
const EPOCH_BITS: u32 = 44;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
/// Bits of a count or a limit.
const COUNT_BITS: u32 = 20;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// The largest limit of a configuration (and count of a cell): 2^20 - 1.
const MAX_LIMIT: u64 = COUNT_MASK;

const _: () = assert!(EPOCH_BITS + COUNT_BITS == 64);

/// An unpacked configuration word, high to low `[epoch: 44 | limit: 20]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Setting {
    /// How many limit changes came before this one, modulo 2^44.
    epoch: u64,
    limit: u64,
}

impl Setting {
    fn pack(self) -> u64 {
        debug_assert!(self.epoch <= EPOCH_MASK && self.limit <= COUNT_MASK);
        (self.epoch << COUNT_BITS) | self.limit
    }

    fn unpack(word: u64) -> Self {
        Self {
            epoch: word >> COUNT_BITS,
            limit: word & COUNT_MASK,
        }
    }
}

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

    /// One call ([`labelled::run`]): `decide(state, limit)` on a word labelled with the epoch
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
        labelled::run(
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
            .field("state", &State::unpack(labelled::load(&self.word)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window quota holds more than the configuration's 20-bit limit: the configuration
    /// refuses it, naming its own bound, and holds the largest limit and an unlimited quota.
    #[test]
    fn limits_beyond_the_fields_are_refused() {
        for limit in [MAX_LIMIT + 1, 10_000_000, WindowQuota::MAX_LIMIT] {
            let quota = WindowQuota::per_hour(limit).unwrap();
            assert_eq!(
                WindowConfig::new(quota).err(),
                Some(ConfigError::LimitTooLarge {
                    limit,
                    max: MAX_LIMIT
                })
            );
        }
        let largest = WindowConfig::new(WindowQuota::per_hour(MAX_LIMIT).unwrap()).unwrap();
        assert_eq!(largest.limit(), MAX_LIMIT);
        let unlimited = WindowConfig::new(WindowQuota::unlimited()).unwrap();
        assert_eq!(unlimited.limit(), u64::MAX);
        assert_eq!(unlimited.epoch_and_limit(), (0, MAX_LIMIT));
    }

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
        for setting in [
            Setting { epoch: 0, limit: 1 },
            Setting {
                epoch: EPOCH_MASK,
                limit: MAX_LIMIT,
            },
        ] {
            assert_eq!(Setting::unpack(setting.pack()), setting);
        }
        assert_eq!(Setting { epoch: 1, limit: 2 }.pack(), (1 << 20) | 2);
    }
}
