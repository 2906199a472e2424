//! The sequential specification of the approximate (two-counter) sliding window, its test
//! oracle: the rule of [`estimate`](super::estimate) on plain counters.

use std::time::Duration;

use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::spec::{trivial, Spec};
use crate::limiter::{Admission, Decision, Ticket};
use crate::validate;

use super::estimate::{locate, Snapshot, Verdict};
use super::word::MAX_LIMIT;

/// Approximate sliding window: two counters, `prev` (the previous aligned window) and `cur`
/// (this one). Admit `n` at time `t` iff
///
/// `floor(prev * (W - r) / W) + cur + n <= N`
///
/// where `W` is the window, `e = t / W` the window index and `r = t mod W` the position in
/// it. The first term estimates how many of the previous window's permits still fall inside
/// the sliding window `(t - W, t]`, assuming they arrived uniformly.
///
/// **Time.** The window index never goes backwards: `e = max(t / W, newest index seen)`.
/// A reading from an older window is decided at the *start* of the newest one (`r = 0`),
/// where the estimate is largest: the limiter cannot tell how far into the newest window
/// the true time is, and `r = 0` is the one position every later reading has passed. (It
/// is also the time the lock-free limiter linearizes such a call at; see
/// [`ApproxSlidingWindow`](crate::ApproxSlidingWindow).) Window indices saturate at 2^62 - 1,
/// reachable only with windows shorter than 4 ns; a reading beyond is decided at `r = 0` of
/// that last window.
///
/// **Rollover.** Moving to `e + 1` makes `prev = cur, cur = 0`; moving further makes both 0.
/// Every request for `n >= 1` permits moves to its window first, whatever its outcome (an
/// `ExceedsLimit` too); `n = 0` and `available` move nothing.
///
/// **Outcomes.** Admitted: `remaining = N - estimate - cur` (with `cur` including `n`).
/// Refused: `available = N - estimate - cur` (saturating at 0) and `retry_after`, the exact
/// time from `t` until the same request would pass if nothing else were admitted: the
/// earliest later position in this window where the estimate has decayed enough, else the
/// earliest position in the next window (where `prev` becomes today's `cur`), else the start
/// of the window after that.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::spec::{ApproxSlidingWindowSpec, Spec};
/// let mut spec = ApproxSlidingWindowSpec::new(10, Duration::from_nanos(1000))?;
/// assert!(spec.decide(0, 10)?.is_admitted());
/// // Half-way through the next window, half of the previous 10 still count.
/// assert_eq!(spec.available(1500), 5);
/// assert!(spec.decide(1500, 5)?.is_admitted());
/// assert!(!spec.decide(1500, 1)?.is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ApproxSlidingWindowSpec {
    limit: u64,
    window: u64,
    epoch: u64,
    prev: u64,
    cur: u64,
}

impl ApproxSlidingWindowSpec {
    /// `limit` permits per `window` (at most 1 048 575, and a window of 1 ns up to 2^60 ns).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::spec::{ApproxSlidingWindowSpec, Spec};
    /// let spec = ApproxSlidingWindowSpec::new(100, Duration::from_secs(1))?;
    /// assert_eq!(spec.limit(), 100);
    /// assert!(ApproxSlidingWindowSpec::new(u64::MAX, Duration::from_secs(1)).is_err());
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        Ok(Self {
            window: validate::window_nanos(window)?,
            limit: validate::limit(limit, MAX_LIMIT)?,
            epoch: 0,
            prev: 0,
            cur: 0,
        })
    }

    /// The spec of a [`ApproxSlidingWindow`](crate::ApproxSlidingWindow) built from `quota`;
    /// [`ConfigError::Unlimited`] for an unlimited quota, which has no spec.
    ///
    /// ```
    /// use ringlimit::{spec::{Spec, ApproxSlidingWindowSpec}, ConfigError, WindowQuota};
    /// let spec = ApproxSlidingWindowSpec::from_quota(WindowQuota::per_second(5)?)?;
    /// assert_eq!(spec.available(0), 5);
    /// let unlimited = ApproxSlidingWindowSpec::from_quota(WindowQuota::unlimited());
    /// assert_eq!(unlimited.err(), Some(ConfigError::Unlimited));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn from_quota(quota: crate::WindowQuota) -> Result<Self, ConfigError> {
        if quota.is_unlimited() {
            return Err(ConfigError::Unlimited);
        }
        Self::new(quota.limit(), quota.window_length())
    }

    /// The state a decision at `now` sees, rolled over but not stored.
    fn snapshot(&self, now: u64) -> Snapshot {
        let (epoch, r) = locate(now, self.window);
        Snapshot {
            limit: self.limit,
            window: self.window,
            epoch: self.epoch,
            r: 0,
            prev: self.prev,
            cur: self.cur,
        }
        .at(epoch, r)
    }
}

impl Spec for ApproxSlidingWindowSpec {
    fn decide(&mut self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        let snap = self.snapshot(now);
        if n > 0 {
            (self.epoch, self.prev, self.cur) = (snap.epoch, snap.prev, snap.cur);
        }
        if let Some(done) = trivial(n, self.limit, || snap.available())? {
            return Ok(done);
        }
        Ok(match snap.decide(now, n) {
            Verdict::Admit { cur } => {
                self.cur = cur;
                Decision::Admitted {
                    remaining: snap.remaining(cur),
                }
            }
            Verdict::Refuse(refused) => refused,
        })
    }

    fn available(&self, now: u64) -> u64 {
        self.snapshot(now).available()
    }

    fn set_limit(&mut self, _now: u64, limit: u64) -> Result<(), ConfigError> {
        self.limit = validate::limit(limit, MAX_LIMIT)?;
        Ok(())
    }

    fn limit(&self) -> u64 {
        self.limit
    }

    /// A grant's mark is the window its permits were counted in.
    fn try_grant(&mut self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        let decision = self.decide(now, n)?;
        Ok(decision.granting(|| Ticket::new(n, now, now, u128::from(self.epoch))))
    }

    /// Restores `min(n, cur)` iff the grant's window is still the newest one and `now` is
    /// not past it; else 0 (the window's count is now the frozen `prev`, or gone).
    fn refund(&mut self, now: u64, ticket: &Ticket) -> u64 {
        let epoch = u64::try_from(ticket.mark()).unwrap_or(u64::MAX);
        if epoch != self.epoch || locate(now, self.window).0 > epoch {
            return 0;
        }
        let restored = ticket.permits().min(self.cur);
        self.cur -= restored;
        restored
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::approx::estimate::estimate;
    use crate::approx::word::LAST_WINDOW;

    fn spec_with(
        limit: u64,
        window: u64,
        epoch: u64,
        prev: u64,
        cur: u64,
    ) -> ApproxSlidingWindowSpec {
        ApproxSlidingWindowSpec {
            limit,
            window,
            epoch,
            prev,
            cur,
        }
    }

    /// The first time after `now` at which the spec, left alone, admits `n`.
    fn brute_force_retry(spec: &ApproxSlidingWindowSpec, now: u64, n: u64) -> u64 {
        let horizon = now + 4 * spec.window + 1;
        (now + 1..horizon)
            .find(|&t| spec.clone().decide(t, n).unwrap().is_admitted())
            .expect("every request n <= limit passes within two windows")
            - now
    }

    #[test]
    fn retry_after_matches_brute_force_on_small_windows() {
        let mut checked = 0;
        for window in 1..=7 {
            for limit in 1..=5 {
                // `prev` and `cur` may exceed the limit after it was lowered.
                for prev in 0..=7 {
                    for cur in 0..=6 {
                        for n in 1..=limit {
                            let epoch = 3;
                            // Readings inside the state's window, and one from an older window.
                            let readings = (0..window)
                                .map(|r| epoch * window + r)
                                .chain([epoch * window - 1]);
                            for now in readings {
                                let spec = spec_with(limit, window, epoch, prev, cur);
                                let decision = spec.clone().decide(now, n).unwrap();
                                if let Decision::Refused { retry_after, .. } = decision {
                                    let expected = brute_force_retry(&spec, now, n);
                                    assert_eq!(
                                        retry_after,
                                        Duration::from_nanos(expected),
                                        "W={window} N={limit} prev={prev} cur={cur} n={n} now={now}"
                                    );
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 5_000, "only {checked} refusals checked");
    }

    #[test]
    fn retry_after_on_wide_windows() {
        // prev = 6, cur = 6 at r = 500 of 1000: estimate 3, and 3 + 6 + 2 > 10. The
        // estimate falls to 2 at r = 501 (6 * 499 / 1000 = 2.994).
        let spec = spec_with(10, 1000, 1, 6, 6);
        let refused = Decision::Refused {
            available: 1,
            retry_after: Duration::from_nanos(1),
        };
        assert_eq!(spec.clone().decide(1500, 2).unwrap(), refused);
        assert_eq!(brute_force_retry(&spec, 1500, 2), 1);
        // A whole window's worth of nanoseconds: the closed form agrees with the brute force
        // at the largest window the brute force can afford.
        let spec = spec_with(3, 4096, 2, 3, 1);
        for r in [0, 1, 1000, 4095] {
            let now = 2 * 4096 + r;
            if let Decision::Refused { retry_after, .. } = spec.clone().decide(now, 2).unwrap() {
                assert_eq!(
                    retry_after.as_nanos(),
                    u128::from(brute_force_retry(&spec, now, 2))
                );
            }
        }
    }

    /// A trace worked out by hand (N = 10, W = 1000 ns).
    #[test]
    fn deterministic_trace() {
        let mut spec = ApproxSlidingWindowSpec::new(10, Duration::from_nanos(1000)).unwrap();
        for (now, n, expected) in expected_trace() {
            assert_eq!(spec.decide(now, n).unwrap(), expected, "at {now} for {n}");
        }
        // Window 4 at r = 500: estimate 5, cur 1.
        assert_eq!(spec.available(4500), 4);
        spec.set_limit(0, 4).unwrap();
        assert_eq!(
            spec.decide(4500, 1).unwrap(),
            Decision::Refused {
                available: 0,
                // floor(10 * (1000 - r) / 1000) <= 4 - 1 - 1 first at r = 701.
                retry_after: Duration::from_nanos(201),
            }
        );
    }

    /// `(now, n, decision)`; shared with the lock-free limiter's unit test.
    pub(crate) fn expected_trace() -> Vec<(u64, u64, Decision)> {
        let admitted = |remaining| Decision::Admitted { remaining };
        let refused = |available, nanos| Decision::Refused {
            available,
            retry_after: Duration::from_nanos(nanos),
        };
        vec![
            (0, 6, admitted(4)),
            // 6 + 5 > 10 in this window; in the next, 6 * (1000 - r) / 1000 <= 5 from r = 1.
            (500, 5, refused(4, 501)),
            // Window 1, r = 1: estimate floor(6 * 999 / 1000) = 5.
            (1001, 5, admitted(0)),
            // r = 500: estimate 3, cur 5.
            (1500, 1, admitted(1)),
            // 3 + 6 + 2 > 10; the estimate drops to 2 at r = 501.
            (1500, 2, refused(1, 1)),
            (1501, 2, admitted(0)),
            // Window 3: window 2 was skipped, so both counters start at 0.
            (3500, 10, admitted(0)),
            // A reading from window 2 joins window 3 at r = 0; next window: prev = 10, and
            // 10 * (1000 - r) / 1000 <= 9 from r = 1, at 4001.
            (2000, 1, refused(0, 2001)),
            // Window 4 at r = 100: estimate 9.
            (4100, 1, admitted(0)),
            // 9 + 1 + 1 > 10; the estimate drops to 8 at r = 101.
            (4100, 1, refused(0, 1)),
        ]
    }

    #[test]
    fn big_jumps_and_saturation() {
        let window = 1000;
        let mut spec = spec_with(5, window, 0, 0, 0);
        assert!(spec.decide(0, 5).unwrap().is_admitted());
        // 2^32 and 2^40 windows later: both counters are fresh.
        for jump in [1u64 << 32, 1 << 40] {
            let now = spec.epoch * window + jump * window;
            assert_eq!(spec.available(now), 5);
            assert!(spec.decide(now, 5).unwrap().is_admitted());
            // One window later the 5 still weigh fully at r = 0.
            assert_eq!(spec.available(now + window), 0);
        }
        // 1 ns windows saturate at index 2^62 - 1, where time stands still at r = 0.
        let mut spec = spec_with(2, 1, 0, 0, 0);
        assert_eq!(locate(u64::MAX, 1), (LAST_WINDOW, 0));
        assert!(spec.decide(u64::MAX, 2).unwrap().is_admitted());
        assert!(!spec.decide(u64::MAX, 1).unwrap().is_admitted());
        assert_eq!(spec.available(u64::MAX - 1), 0);
    }

    #[test]
    fn configuration_is_validated() {
        let second = Duration::from_secs(1);
        assert_eq!(
            ApproxSlidingWindowSpec::new(u64::MAX, second).unwrap_err(),
            ConfigError::LimitTooLarge {
                limit: u64::MAX,
                max: MAX_LIMIT
            }
        );
        assert!(ApproxSlidingWindowSpec::new(MAX_LIMIT, second).is_ok());
        assert_eq!(
            ApproxSlidingWindowSpec::new(0, second).unwrap_err(),
            ConfigError::ZeroLimit
        );
        assert_eq!(
            ApproxSlidingWindowSpec::new(1, Duration::ZERO).unwrap_err(),
            ConfigError::ZeroWindow
        );
        let mut spec = ApproxSlidingWindowSpec::new(3, second).unwrap();
        assert!(spec.set_limit(0, MAX_LIMIT + 1).is_err());
        assert_eq!(spec.limit(), 3);
        assert_eq!(
            spec.decide(0, 4),
            Err(ExceedsLimit {
                requested: 4,
                limit: 3
            })
        );
        assert_eq!(spec.decide(0, 0), Ok(Decision::Admitted { remaining: 3 }));
    }

    /// `fits` against the spec's formula with the division,
    /// `floor(prev * (W - r) / W) + cur + n <= limit`, exhaustively on small values and on
    /// pseudo-random extreme ones (windows up to 2^60, counters up to MAX_LIMIT).
    #[test]
    fn fits_is_the_division() {
        let divided = |s: Snapshot, n: u64| estimate(s.prev, s.window, s.r) + s.cur + n <= s.limit;
        for window in 1..=9u64 {
            for limit in 1..=6u64 {
                for prev in 0..=8u64 {
                    for cur in 0..=8u64 {
                        for n in 1..=limit {
                            for r in 0..window {
                                let s = Snapshot {
                                    limit,
                                    window,
                                    epoch: 0,
                                    r,
                                    prev,
                                    cur,
                                };
                                assert_eq!(s.fits(n), divided(s, n), "{s:?} n={n}");
                            }
                        }
                    }
                }
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let max_w = crate::validate::MAX_WINDOW_NANOS;
        for i in 0..2_000_000u64 {
            let window = match i % 4 {
                0 => max_w - next() % 3,
                1 => 1 + next() % max_w,
                2 => 1 + next() % 1_000_000,
                _ => 1 + next() % 64,
            };
            let limit = match i % 3 {
                0 => MAX_LIMIT - next() % 3,
                _ => 1 + next() % MAX_LIMIT,
            };
            let prev = if i % 5 == 0 {
                MAX_LIMIT
            } else {
                next() % (MAX_LIMIT + 1)
            };
            let cur = next() % (limit + 1);
            let n = 1 + next() % limit;
            let r = match i % 6 {
                0 => 0,
                1 => window - 1,
                _ => next() % window,
            };
            let s = Snapshot {
                limit,
                window,
                epoch: 0,
                r,
                prev,
                cur,
            };
            assert_eq!(s.fits(n), divided(s, n), "{s:?} n={n}");
            // Boundaries: room such that the estimate is exactly at the limit, and one over.
            let e = estimate(prev, window, r);
            for cur in [limit.saturating_sub(e + n), limit.saturating_sub(e + n) + 1] {
                if cur <= MAX_LIMIT {
                    let s = Snapshot { cur, ..s };
                    assert_eq!(s.fits(n), divided(s, n), "{s:?} n={n}");
                }
            }
        }
    }

    #[test]
    fn estimate_never_overflows() {
        let window = crate::validate::MAX_WINDOW_NANOS;
        assert_eq!(estimate(MAX_LIMIT, window, 0), MAX_LIMIT);
        assert_eq!(estimate(MAX_LIMIT, window, window - 1), 0);
        assert_eq!(estimate(MAX_LIMIT, window, window / 2), MAX_LIMIT / 2);
    }
}
