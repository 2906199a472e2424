//! [`ApproxWindowCell`]: the approximate sliding window's whole state in one word, deciding
//! with a [`WindowConfig`] many cells share ([the guide](crate::guide::approx#cells-and-a-shared-configuration)).

use std::fmt;

use crate::clock::Clock;
use crate::error::ExceedsLimit;
use crate::layout::{Layout, Padded};
use crate::limiter::spec::trivial;
use crate::limiter::Decision;
use crate::relabel::{self, Packed};
use crate::sync::AtomicU128;
use crate::window::WindowConfig;

use super::estimate::{locate, Snapshot, Verdict};
use super::word::{COUNT_BITS, LAST_WINDOW};

/// Bits of the configuration-epoch label: what the window index and the two counts leave.
const LABEL_BITS: u32 = 128 - 62 - 2 * COUNT_BITS;
const LABEL_MASK: u64 = (1 << LABEL_BITS) - 1;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

const _: () = assert!(LAST_WINDOW < 1 << 62 && LABEL_BITS == 26);

/// An unpacked cell word, high to low `[window: 62 | label: 26 | prev: 20 | cur: 20]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    /// The window counted, `floor(t / W)` of the newest reading that moved the cell (at most
    /// `LAST_WINDOW`, 2^62 - 1).
    window: u64,
    /// The configuration epoch the counts were last decided under, modulo 2^26: a cell whose
    /// label differs relabels itself before deciding.
    label: u64,
    /// Permits admitted in the window before `window`.
    prev: u64,
    /// Permits admitted in `window`.
    cur: u64,
}

impl Packed for State {
    fn pack(self) -> u128 {
        debug_assert!(self.window <= LAST_WINDOW && self.label <= LABEL_MASK);
        debug_assert!(self.prev <= COUNT_MASK && self.cur <= COUNT_MASK);
        (u128::from(self.window) << (LABEL_BITS + 2 * COUNT_BITS))
            | (u128::from(self.label) << (2 * COUNT_BITS))
            | (u128::from(self.prev) << COUNT_BITS)
            | u128::from(self.cur)
    }

    fn unpack(word: u128) -> Self {
        let field = |shift: u32, mask: u64| ((word >> shift) as u64) & mask;
        Self {
            // The top 62 bits: the cast is exact.
            window: (word >> (LABEL_BITS + 2 * COUNT_BITS)) as u64,
            label: field(2 * COUNT_BITS, LABEL_MASK),
            prev: field(COUNT_BITS, COUNT_MASK),
            cur: field(0, COUNT_MASK),
        }
    }
}

/// One approximate sliding window's state, the window it counts, the configuration epoch it
/// was last decided under and the two counts, in one 128-bit word (16 bytes compact, a cache
/// line padded), deciding with a [`WindowConfig`] many cells share and a clock the caller
/// names. Admits `n` at `t` iff `prev·(W - t mod W)/W + cur + n <= N`, exactly as
/// [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) and its spec, and linearizable when the
/// shared limit changes under it.
///
/// **Residual: the label is the configuration's epoch modulo 2^26.** A call that stalls
/// between loading the word and its CAS could be misled only if, meanwhile, exactly a
/// multiple of 2^26 (67 million) limit changes landed, one of them relabelled this cell, and
/// the word came back bit for bit (same window, nothing admitted). With `set_limit` at human
/// or reload rates that never happens; an adaptive controller changing the limit millions of
/// times a second narrows the margin to seconds of stall, so give such a controller
/// [`FixedWindowCell`](crate::cell::FixedWindowCell)s (44-bit labels) instead.
///
/// A cell belongs to the configuration it was made under: window numbers of two window
/// lengths do not compare, nor do two configurations' epochs. To move a key to another
/// configuration, start a new cell.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::cell::{ApproxWindowCell, WindowConfig};
/// use ringlimit::clock::ManualClock;
/// use ringlimit::WindowQuota;
/// use ringlimit::cell::Compact;
/// let clock = ManualClock::new();
/// let config = WindowConfig::new(WindowQuota::per_second(4)?)?;
/// let cell = ApproxWindowCell::<Compact>::new();
/// assert_eq!(cell.footprint(), 16);
/// assert!(cell.try_acquire_n(&config, &clock, 4)?.is_admitted());
/// clock.advance(Duration::from_millis(1500)); // half of the previous window still counts
/// assert_eq!(cell.available(&config, &clock), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ApproxWindowCell<L: Layout = Padded> {
    /// `[window: 62 | label: 26 | prev: 20 | cur: 20]`, see `State`.
    word: L::Cell<AtomicU128>,
}

impl<L: Layout> Default for ApproxWindowCell<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: Layout> ApproxWindowCell<L> {
    /// An empty cell, under any configuration.
    ///
    /// ```
    /// use ringlimit::cell::{ApproxWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let config = WindowConfig::new(WindowQuota::per_second(7)?)?;
    /// let cell: ApproxWindowCell = ApproxWindowCell::new();
    /// assert_eq!(cell.available(&config, &ManualClock::new()), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new() -> Self {
        Self {
            // Window 0, label 0, nothing counted: the first access relabels it if the
            // configuration has moved on.
            word: L::cell(AtomicU128::new(0)),
        }
    }

    /// One call ([`relabel::run`], as [`FixedWindowCell`](crate::cell::FixedWindowCell)'s):
    /// `decide` sees the spec's snapshot at the reading, on a word labelled with the epoch in
    /// force and (when `moves`) counting the reading's window; it returns the count `cur` to
    /// write or the result to return once the word is confirmed unchanged.
    #[inline]
    fn decide<R>(
        &self,
        config: &WindowConfig,
        now: u64,
        moves: bool,
        mut decide: impl FnMut(Snapshot) -> Result<u64, R>,
        done: impl Fn(Snapshot, u64) -> R,
    ) -> R {
        let window = config.window_nanos();
        let (epoch, r) = locate(now, window);
        relabel::run(
            &self.word,
            config,
            |state: State, config_epoch, limit| {
                // The spec's snapshot of this word at the reading: an older window's counts
                // shift or vanish, an older reading joins the newest window.
                let snapshot = Snapshot {
                    limit,
                    window,
                    epoch: state.window,
                    r: 0,
                    prev: state.prev,
                    cur: state.cur,
                }
                .at(epoch, r);
                let moved = State {
                    window: if moves { snapshot.epoch } else { state.window },
                    label: config_epoch & LABEL_MASK,
                    prev: if moves { snapshot.prev } else { state.prev },
                    cur: if moves { snapshot.cur } else { state.cur },
                };
                (moved, snapshot)
            },
            |state, snapshot| decide(*snapshot).map(|cur| State { cur, ..state }),
            |next, snapshot| done(*snapshot, next.cur),
        )
    }

    /// Takes one permit.
    ///
    /// ```
    /// use ringlimit::cell::{ApproxWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(1)?)?;
    /// let cell: ApproxWindowCell = ApproxWindowCell::new();
    /// assert!(cell.try_acquire(&config, &clock));
    /// assert!(!cell.try_acquire(&config, &clock));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn try_acquire<C: Clock + ?Sized>(&self, config: &WindowConfig, clock: &C) -> bool {
        self.try_acquire_n(config, clock, 1)
            .is_ok_and(|decision| decision.is_admitted())
    }

    /// Decides `n` permits: admitted with what remains, or refused with when `n` would fit;
    /// [`ExceedsLimit`] for more than the limit. A request for `n >= 1` moves the cell to
    /// the window of its reading whatever its outcome, as the spec does.
    ///
    /// ```
    /// use ringlimit::cell::{ApproxWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// use ringlimit::outcome::Decision;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(3)?)?;
    /// let cell: ApproxWindowCell = ApproxWindowCell::new();
    /// assert_eq!(cell.try_acquire_n(&config, &clock, 2)?, Decision::Admitted { remaining: 1 });
    /// assert!(!cell.try_acquire_n(&config, &clock, 2)?.is_admitted());
    /// assert!(cell.try_acquire_n(&config, &clock, 4).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_n<C: Clock + ?Sized>(
        &self,
        config: &WindowConfig,
        clock: &C,
        n: u64,
    ) -> Result<Decision, ExceedsLimit> {
        if config.is_unlimited() {
            return Ok(Decision::UNLIMITED);
        }
        let now = clock.now_nanos();
        self.decide(
            config,
            now,
            n > 0,
            |snapshot| {
                if let Some(done) = trivial(n, snapshot.limit, || snapshot.available()).transpose()
                {
                    return Err(done);
                }
                match snapshot.decide(now, n) {
                    Verdict::Admit { cur } => Ok(cur),
                    Verdict::Refuse(refused) => Err(Ok(refused)),
                }
            },
            |snapshot, cur| {
                Ok(Decision::Admitted {
                    remaining: snapshot.limit - snapshot.estimate() - cur,
                })
            },
        )
    }

    /// Permits available now. Moves nothing (a snapshot), but relabels a cell decided under
    /// an older limit.
    ///
    /// ```
    /// use ringlimit::cell::{ApproxWindowCell, WindowConfig};
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(5)?)?;
    /// let cell: ApproxWindowCell = ApproxWindowCell::new();
    /// cell.try_acquire_n(&config, &clock, 2)?;
    /// assert_eq!(cell.available(&config, &clock), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn available<C: Clock + ?Sized>(&self, config: &WindowConfig, clock: &C) -> u64 {
        if config.is_unlimited() {
            return u64::MAX;
        }
        self.decide(
            config,
            clock.now_nanos(),
            false,
            |snapshot| Err(snapshot.available()),
            |_, _| 0,
        )
    }

    /// Bytes this cell occupies: 16 compact, a whole cache line (or two) padded.
    ///
    /// ```
    /// use ringlimit::cell::ApproxWindowCell;
    /// use ringlimit::cell::Compact;
    /// assert_eq!(ApproxWindowCell::<Compact>::new().footprint(), 16);
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

impl<L: Layout> fmt::Debug for ApproxWindowCell<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApproxWindowCell")
            .field("state", &State::unpack(relabel::load(&self.word)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_at_field_limits() {
        for state in [
            State {
                window: 0,
                label: 0,
                prev: 0,
                cur: 0,
            },
            State {
                window: LAST_WINDOW,
                label: LABEL_MASK,
                prev: COUNT_MASK,
                cur: COUNT_MASK,
            },
            State {
                window: 12_345,
                label: 7,
                prev: 3,
                cur: 2,
            },
        ] {
            assert_eq!(State::unpack(state.pack()), state);
        }
        // Each field lands where the layout says.
        let word = State {
            window: 1,
            label: 2,
            prev: 3,
            cur: 4,
        }
        .pack();
        assert_eq!(word, (1 << 66) | (2 << 40) | (3 << 20) | 4);
    }
}
