//! The approximate window's rule: where a reading falls ([`locate`]), the weighted estimate
//! `prev · (W - r) / W + cur` of the permits in the sliding window, and the decision on a
//! [`Snapshot`] of the counters, shared by the spec, the lock-free
//! [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) and the
//! [`ApproxWindowCell`](crate::cell::ApproxWindowCell).

use std::time::Duration;

use crate::limiter::Decision;

use super::word::LAST_WINDOW;

/// The window index of `now` and the position in it, `(now / window, now % window)`; past
/// [`LAST_WINDOW`] the index saturates and the position is 0.
pub(crate) fn locate(now: u64, window: u64) -> (u64, u64) {
    match now / window {
        epoch if epoch > LAST_WINDOW => (LAST_WINDOW, 0),
        epoch => (epoch, now % window),
    }
}

/// What a decision needs: the limit, the window `epoch` with its counters, and the caller's
/// position `r` in it (0 for a reading from an older window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) limit: u64,
    pub(crate) window: u64,
    pub(crate) epoch: u64,
    pub(crate) r: u64,
    pub(crate) prev: u64,
    pub(crate) cur: u64,
}

/// The outcome of [`Snapshot::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Admit: `cur` becomes this. The permits left are then [`Snapshot::remaining`], which
    /// costs a division, so only callers that report it compute it.
    Admit { cur: u64 },
    /// Refuse with this decision; nothing changes.
    Refuse(Decision),
}

impl Snapshot {
    /// This state as seen by a reading in window `epoch` at position `r`: rolled over if
    /// `epoch` is later, at `r = 0` if it is earlier.
    pub(crate) fn at(self, epoch: u64, r: u64) -> Self {
        match epoch {
            e if e < self.epoch => Self { r: 0, ..self },
            e if e == self.epoch => Self { r, ..self },
            e if e == self.epoch + 1 => Self {
                epoch,
                r,
                prev: self.cur,
                cur: 0,
                ..self
            },
            _ => Self {
                epoch,
                r,
                prev: 0,
                cur: 0,
                ..self
            },
        }
    }

    /// `floor(prev * (W - r) / W)`: the previous window's permits still inside `(t - W, t]`.
    #[inline]
    pub(crate) fn estimate(self) -> u64 {
        estimate(self.prev, self.window, self.r)
    }

    /// Permits that could be admitted now.
    #[inline]
    pub(crate) fn available(self) -> u64 {
        self.limit.saturating_sub(self.estimate() + self.cur)
    }

    /// Whether `n` more permits fit: `floor(prev * (W - r) / W) + cur + n <= limit`, without
    /// the division. With `room = limit - cur - n`, `floor(x / W) <= room` iff
    /// `x < (room + 1) * W`; in `u128` neither product overflows (`prev`, `room + 1 <= 2^20`,
    /// `W < 2^64`).
    #[inline]
    pub(crate) fn fits(self, n: u64) -> bool {
        // `cur <= MAX_LIMIT < 2^20` (the count's field; it may exceed a lowered limit) and
        // `n <= limit`: no overflow.
        match self.limit.checked_sub(self.cur + n) {
            None => false,
            Some(room) => {
                u128::from(self.prev) * u128::from(self.window - self.r)
                    < u128::from(room + 1) * u128::from(self.window)
            }
        }
    }

    /// The permits left once `cur` (an admission's [`Verdict::Admit`]) is counted.
    #[inline]
    pub(crate) fn remaining(self, cur: u64) -> u64 {
        Self { cur, ..self }.available()
    }

    /// Decides `n` permits (`1 <= n <= limit`) requested at `now`, which read this state. An
    /// admission divides nothing ([`fits`](Self::fits)).
    #[inline]
    pub(crate) fn decide(self, now: u64, n: u64) -> Verdict {
        if self.fits(n) {
            return Verdict::Admit { cur: self.cur + n };
        }
        self.refuse(now, n)
    }

    /// [`decide`](Self::decide)'s refusal: out of the admission path.
    #[inline(never)]
    fn refuse(self, now: u64, n: u64) -> Verdict {
        let used = self.estimate() + self.cur;
        Verdict::Refuse(Decision::Refused {
            available: self.limit.saturating_sub(used),
            retry_after: self.retry_after(now, n),
        })
    }

    /// The time from `now` until `n` permits would pass if nothing else were admitted.
    fn retry_after(self, now: u64, n: u64) -> Duration {
        debug_assert!(n <= self.limit);
        let window = u128::from(self.window);
        let start = u128::from(self.epoch) * window;
        let in_this_window = (self.cur + n <= self.limit)
            .then(|| {
                first_position(
                    self.prev,
                    self.limit - self.cur - n,
                    self.window,
                    self.r + 1,
                )
            })
            .flatten();
        let target = match in_this_window {
            Some(r) => start + u128::from(r),
            // Next window: `prev` becomes this window's `cur` and `cur` starts at 0.
            None => match first_position(self.cur, self.limit - n, self.window, 0) {
                Some(r) => start + window + u128::from(r),
                None => start + 2 * window,
            },
        };
        // Window indices saturate at LAST_WINDOW (a later reading is position 0 of it): a
        // target in a later window, or one a saturated reading has already passed, is never
        // reached, and the refusal would come again at every reading.
        if target >= (u128::from(LAST_WINDOW) + 1) * window || target <= u128::from(now) {
            return crate::epoch::NEVER;
        }
        let wait = target - u128::from(now);
        Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX))
    }
}

/// `floor(prev * (window - r) / window)`: in `u64` when the product fits (the common case,
/// and a far cheaper division), else in `u128`.
#[inline]
pub(crate) fn estimate(prev: u64, window: u64, r: u64) -> u64 {
    if prev == 0 {
        return 0;
    }
    match prev.checked_mul(window - r) {
        Some(product) => product / window,
        // At most `prev`, so it fits.
        None => (u128::from(prev) * u128::from(window - r) / u128::from(window)) as u64,
    }
}

/// The smallest position `r` in `from..window` with `floor(prev * (window - r) / window) <=
/// room`, if any.
///
/// `floor(x / W) <= room` iff `x <= (room + 1) * W - 1`, so with `prev > 0` the condition is
/// `window - r <= ((room + 1) * W - 1) / prev` (integer division), a lower bound on `r`.
fn first_position(prev: u64, room: u64, window: u64, from: u64) -> Option<u64> {
    let w = u128::from(window);
    let earliest = match prev {
        0 => 0,
        prev => {
            let longest_tail = ((u128::from(room) + 1) * w - 1) / u128::from(prev);
            w.saturating_sub(longest_tail)
        }
    };
    let r = earliest.max(u128::from(from));
    // Below `window`, so it fits.
    (r < w).then_some(r as u64)
}
