//! [`Curve`]: a warm-up configuration as a [`WarmUpCell`](crate::cell::WarmUpCell) decides
//! with it, stored permits held as nanoseconds of cooling
//! ([the guide](crate::guide::warm_up#the-warm-up-cell)).

use std::time::Duration;

use crate::error::ExceedsLimit;
use crate::limiter::Decision;

use super::cell_word::CellState;
use super::curve::{Config, Timeline};
use super::word::State;

/// The configuration in force as a cell uses it: Guava's curve (with its epoch) and the
/// warm-up period `W`, which no reconfiguration changes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Curve {
    pub(crate) config: Config,
    /// `W` in ns, `1 ..= 2^58`.
    pub(crate) warm_up: u64,
}

impl Curve {
    /// The permits `cooled` ns of cooling store under this curve: `cooled / cool_down`
    /// (`= cooled × max / W`), exactly `max` when cold.
    fn stored(&self, cooled: u64) -> f64 {
        if cooled >= self.warm_up {
            return self.config.max;
        }
        (cooled as f64 / self.config.cool_down).min(self.config.max)
    }

    /// The cooling that stores `stored` permits, rounded *up* to a whole ns (more stored
    /// permits only lengthen waits: the guide) and kept in `0 ..= W`.
    fn cooled(&self, stored: f64) -> u64 {
        if stored >= self.config.max {
            return self.warm_up;
        }
        // `as` saturates: a product below 0 (none: stored permits are never negative) would
        // give 0, one past 2^64 `u64::MAX`, capped at W.
        ((stored * self.config.cool_down).ceil() as u64).min(self.warm_up)
    }

    /// Guava's resync on the cell's state at `now`, in integers: idle time since `next_free`
    /// adds as much cooling, up to `W`, whatever the rate. The curve's state, with the
    /// stored permits that cooling is worth under this curve.
    #[inline]
    pub(crate) fn resync(&self, state: CellState, now: u64) -> State {
        let (next_free, cooled) = if now > state.next_free {
            // `cooled <= 2^58` and `now <= 2^60`: no overflow.
            let cooled = (state.cooled + (now - state.next_free)).min(self.warm_up);
            (now, cooled)
        } else {
            (state.next_free, state.cooled)
        };
        State {
            next_free,
            gen: 0,
            stored: self.stored(cooled),
        }
    }

    /// `try_acquire_n(n)` at `now` (ns since `line`'s origin) on a cell labelled for this
    /// curve: [`Config::decide`] on the resynced state, and the cell's new state if it
    /// changes (its stored permits back as cooling, rounded up).
    #[inline]
    pub(crate) fn decide(
        &self,
        state: CellState,
        line: &Timeline,
        now: u64,
        n: u64,
    ) -> Result<(Decision, Option<CellState>), ExceedsLimit> {
        if now < state.next_free && n != 0 && n <= self.config.limit {
            // Busy: refused until `next_free`, exactly as `Config::decide` refuses (Guava's
            // `tryAcquire(n, 0)`), without its out-of-line call or the division that prices
            // the cooling: the hot refusal path (measured 32 ns → 15 ns per refusal).
            let retry_after = Duration::from_nanos(state.next_free - now);
            return Ok((
                Decision::Refused {
                    available: 0,
                    retry_after,
                },
                None,
            ));
        }
        let (decision, next) = self.config.decide(self.resync(state, now), line, now, n)?;
        let next = next.map(|next| CellState {
            next_free: next.next_free,
            label: state.label,
            cooled: self.cooled(next.stored),
        });
        Ok((decision, next))
    }

    /// The time (ns since the origin) from which the cell is indistinguishable from a fresh
    /// cold one (free, with `W` of cooling), or `None` if it already is at `now`.
    pub(crate) fn idle_from(&self, state: CellState, now: u64) -> Option<u64> {
        // `cooled <= W`: the cooling still missing; `next_free <= 2^61`, no overflow.
        let cold_at = state.next_free + (self.warm_up - state.cooled.min(self.warm_up));
        (cold_at > now).then_some(cold_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::Rate;

    fn guava() -> Curve {
        // Guava's testWarmUp: 2 permits/s, 4 s warm-up, cold factor 3; cool_down 0.5 s.
        let rate = Rate::per_second(2).unwrap();
        Curve {
            config: Config::new(rate, 4_000_000_000, 3.0, u64::MAX).unwrap(),
            warm_up: 4_000_000_000,
        }
    }

    #[test]
    fn cooling_and_stored_permits_convert_both_ways() {
        let curve = guava();
        assert_eq!(curve.stored(4_000_000_000), 8.0);
        assert_eq!(curve.stored(1_000_000_000), 2.0);
        assert_eq!(curve.cooled(8.0), 4_000_000_000);
        assert_eq!(curve.cooled(2.0), 1_000_000_000);
        // Rounded up to the next whole ns.
        assert_eq!(curve.cooled(1e-9), 1);
        assert_eq!(curve.cooled(0.0), 0);
    }

    #[test]
    fn resync_adds_idle_time_up_to_the_warm_up() {
        let curve = guava();
        let state = CellState {
            next_free: 1_000,
            label: 3,
            cooled: 0,
        };
        let resynced = curve.resync(state, 1_000 + 500_000_000);
        assert_eq!((resynced.next_free, resynced.stored), (500_001_000, 1.0));
        assert_eq!(curve.resync(state, u64::MAX >> 4).stored, 8.0);
        // A reading before `next_free` stores nothing.
        assert_eq!(curve.resync(state, 10).next_free, 1_000);
    }

    #[test]
    fn idle_from_is_when_the_cooling_reaches_the_warm_up() {
        let curve = guava();
        let state = CellState {
            next_free: 100,
            label: 0,
            cooled: 3_000_000_000,
        };
        assert_eq!(curve.idle_from(state, 0), Some(1_000_000_100));
        assert_eq!(curve.idle_from(state, 1_000_000_099), Some(1_000_000_100));
        assert_eq!(curve.idle_from(state, 1_000_000_100), None);
    }
}
