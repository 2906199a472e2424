//! Naive check-then-add limiters, as rate-limiting tutorials commonly write them: atomics
//! everywhere, but the check and the add are separate steps (the first hazard of
//! `ringlimit::guide::contract`), and stale buckets are reset in place in two steps. Under
//! contention they admit more than their algorithm allows; the comparison shows by how
//! much. Never use these.

use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::time::Duration;

use ringlimit::clock::{Clock, TscClock};

use crate::harness::Contender;
use crate::in_flight::Permits;

/// One bucket of [`NaiveWindow`]: the epoch it counts, and its count, in two words.
#[derive(Default)]
struct Bucket {
    epoch: AtomicU64,
    count: AtomicU64,
}

/// The Java `SlidingWindowRateLimiter` of the tutorials: B buckets of `W / B`; sum the
/// buckets of the window, then increment the current one. One bucket is the naive fixed
/// window.
pub struct NaiveWindow {
    limit: u64,
    width: u64,
    buckets: Box<[Bucket]>,
    clock: TscClock,
}

impl NaiveWindow {
    /// `limit` per `window` counted in `buckets` buckets (at least 1 bucket of 1 ns).
    pub fn new(limit: u64, window: Duration, buckets: u64) -> Self {
        let buckets = buckets.max(1);
        let window = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        Self {
            limit,
            width: (window / buckets).max(1),
            buckets: (0..buckets).map(|_| Bucket::default()).collect(),
            clock: TscClock::new(),
        }
    }
}

impl Contender for NaiveWindow {
    fn try_acquire(&self) -> bool {
        let epoch = self.clock.now_nanos() / self.width;
        let len = self.buckets.len() as u64;
        let Some(current) = self.buckets.get((epoch % len) as usize) else {
            return false;
        };
        // Relaxed (everywhere here): the tutorial's code has no ordering argument at all.
        if current.epoch.load(Relaxed) != epoch {
            // Reset in place, in two steps: an increment in between is lost.
            // Relaxed: as above.
            current.epoch.store(epoch, Relaxed);
            // Relaxed: as above.
            current.count.store(0, Relaxed);
        }
        // Check: sum the buckets still in the window...
        let used: u64 = self
            .buckets
            .iter()
            // Relaxed: as above.
            .filter(|bucket| epoch.wrapping_sub(bucket.epoch.load(Relaxed)) < len)
            // Relaxed: as above.
            .map(|bucket| bucket.count.load(Relaxed))
            .sum();
        if used >= self.limit {
            return false;
        }
        // ...then add, as a separate step: every thread that passed the check adds.
        // Relaxed: as above.
        current.count.fetch_add(1, Relaxed);
        true
    }

    fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }
}

/// A sliding log as a ring of the last `limit` admission times: admit iff the slot the next
/// admission overwrites (the limit-th most recent admission) has left the window; then
/// claim the slot and write the time, as separate steps.
pub struct NaiveLog {
    window: u64,
    /// Admission time + 1 (0: never used), indexed by admission number mod `limit`.
    slots: Box<[AtomicU64]>,
    next: AtomicU64,
    clock: TscClock,
}

impl NaiveLog {
    /// `limit` per any `window`.
    pub fn new(limit: u64, window: Duration) -> Self {
        Self {
            window: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            slots: (0..limit.max(1)).map(|_| AtomicU64::new(0)).collect(),
            next: AtomicU64::new(0),
            clock: TscClock::new(),
        }
    }

    fn slot(&self, index: u64) -> Option<&AtomicU64> {
        self.slots.get((index % self.slots.len() as u64) as usize)
    }
}

impl Contender for NaiveLog {
    fn try_acquire(&self) -> bool {
        let now = self.clock.now_nanos();
        // Relaxed (everywhere here): the tutorial's code has no ordering argument at all.
        let next = self.next.load(Relaxed);
        let Some(oldest) = self.slot(next) else {
            return false;
        };
        // Check: the oldest of the last `limit` admissions must be out of `(now - W, now]`...
        // Relaxed: as above.
        match oldest.load(Relaxed) {
            0 => {}
            stamp if (stamp - 1).saturating_add(self.window) > now => return false,
            _ => {}
        }
        // ...then add: claim a slot and log the time, as separate steps.
        // Relaxed: as above.
        let index = self.next.fetch_add(1, Relaxed);
        if let Some(slot) = self.slot(index) {
            // Relaxed: as above.
            slot.store(now + 1, Relaxed);
        }
        true
    }

    fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }
}

/// The two-counter approximate sliding window: roll over in place (swap the counters in
/// separate steps), read both counters, check the estimate, then add.
pub struct NaiveApprox {
    limit: u64,
    window: u64,
    epoch: AtomicU64,
    prev: AtomicU64,
    cur: AtomicU64,
    clock: TscClock,
}

impl NaiveApprox {
    /// `limit` per `window`.
    pub fn new(limit: u64, window: Duration) -> Self {
        Self {
            limit,
            window: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX).max(1),
            epoch: AtomicU64::new(0),
            prev: AtomicU64::new(0),
            cur: AtomicU64::new(0),
            clock: TscClock::new(),
        }
    }
}

impl Contender for NaiveApprox {
    fn try_acquire(&self) -> bool {
        let now = self.clock.now_nanos();
        let (epoch, r) = (now / self.window, now % self.window);
        // Relaxed (everywhere here): the tutorial's code has no ordering argument at all.
        let seen = self.epoch.load(Relaxed);
        // Relaxed: as above.
        if epoch > seen
            && self
                .epoch
                .compare_exchange(seen, epoch, Relaxed, Relaxed)
                .is_ok()
        {
            // Roll over in place: admissions between these steps are counted in the old
            // window or lost.
            // Relaxed: as above.
            let cur = self.cur.swap(0, Relaxed);
            // Relaxed: as above.
            self.prev
                .store(if epoch == seen + 1 { cur } else { 0 }, Relaxed);
        }
        // Check: the previous window's share plus this window's count...
        // Relaxed: as above.
        let prev = u128::from(self.prev.load(Relaxed));
        let estimate = prev * u128::from(self.window - r) / u128::from(self.window);
        // Relaxed: as above.
        if estimate + u128::from(self.cur.load(Relaxed)) >= u128::from(self.limit) {
            return false;
        }
        // ...then add, as a separate step.
        // Relaxed: as above.
        self.cur.fetch_add(1, Relaxed);
        true
    }

    fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }
}

/// A GCRA (token bucket, leaky meter; the shaper with burst 1) as check-then-store: load
/// the theoretical arrival time, decide, then store the new one with a plain store. Two
/// callers that load the same `tat` both admit and both store the same successor: one
/// admission is lost from the state, so under contention it over-admits.
pub struct NaiveGcra {
    period: u64,
    /// `burst × period`: admit iff `max(tat, now) + T - now <= tolerance`.
    tolerance: u64,
    tat: AtomicU64,
    clock: TscClock,
}

impl NaiveGcra {
    /// One permit every `period` ns, burst `burst`, starting full.
    pub fn new(period: u64, burst: u64) -> Self {
        Self {
            period,
            tolerance: period.saturating_mul(burst),
            tat: AtomicU64::new(0),
            clock: TscClock::new(),
        }
    }
}

impl Contender for NaiveGcra {
    fn try_acquire(&self) -> bool {
        let now = self.clock.now_nanos();
        // Check: the bucket has room at `now`...
        // Relaxed (everywhere here): the tutorial's code has no ordering argument at all.
        let next = self.tat.load(Relaxed).max(now).saturating_add(self.period);
        if next - now > self.tolerance {
            return false;
        }
        // ...then store, as a separate step: a concurrent admission's store is overwritten.
        // Relaxed: as above.
        self.tat.store(next, Relaxed);
        true
    }

    fn now_nanos(&self) -> u64 {
        self.clock.now_nanos()
    }
}

/// An in-flight counter as check-then-add: load the count, check it is below C, then
/// `fetch_add`. Callers that load the same count all pass: more than C run at once.
pub struct NaiveConcurrency {
    limit: u64,
    in_flight: AtomicU64,
}

impl NaiveConcurrency {
    /// At most `limit` at once (so it says).
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            in_flight: AtomicU64::new(0),
        }
    }

    fn try_take(&self, n: u64) -> bool {
        // Check: room for `n`...
        // Relaxed: the check is the flaw, not the ordering.
        if self.in_flight.load(Relaxed).saturating_add(n) > self.limit {
            return false;
        }
        // ...then add, as a separate step. Acquire: pairs with the release's Release, as a
        // permit must, so the audit's side counter is ordered (see `crate::in_flight`).
        self.in_flight.fetch_add(n, Acquire);
        true
    }
}

impl Permits for NaiveConcurrency {
    fn with_permit(&self, held: impl FnOnce()) -> bool {
        if !self.try_take(1) {
            return false;
        }
        held();
        // Release: what the holder did happens before a later acquisition that reads this.
        self.in_flight.fetch_sub(1, Release);
        true
    }

    fn hold(&self, n: u64) -> bool {
        self.try_take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On one thread the naive versions are the algorithm: the flaw needs contention.
    #[test]
    fn naive_versions_are_right_alone() {
        let hour = 3_600_000_000_000;
        let gcra = NaiveGcra::new(hour, 3);
        assert_eq!((0..10).filter(|_| gcra.try_acquire()).count(), 3);
        let concurrency = NaiveConcurrency::new(2);
        assert!(concurrency.hold(1));
        let mut inner = false;
        assert!(concurrency.with_permit(|| inner = !concurrency.with_permit(|| ())));
        assert!(
            inner,
            "the second permit was refused while the first was held"
        );
        assert!(concurrency.with_permit(|| ()), "released after the call");
    }
}
