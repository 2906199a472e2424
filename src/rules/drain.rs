//! A replaced rule's old limiter, [`Draining`]: it keeps limiting beside the new one until
//! everything it counted before the reload has expired, so that a reload never lets a burst
//! through a rule whose limiter could not be reconfigured in place.
//!
//! While it drains, the rule's dimension is two: the old limiter, then the new one, checked
//! all or nothing by the policy (the old one's grant is given back when the new one
//! refuses). A request is admitted only if the old limiter, with every permit it counted,
//! admits it too, so nothing counted before the reload is forgotten while it could still
//! matter; the new limiter counts from the reload on. Once the drain time has passed (the
//! old window's length for a window or log, the time its bucket takes to refill for a token
//! bucket), the old limiter has nothing left that could refuse what a fresh one would
//! admit: it is skipped, and the first check after that (or the next reload) drops it
//! (see `RuleSet::check_n`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::keyed::KeyedError;
use crate::limiter::Grant;
use crate::policy::dimension::{Dimension, Taken};

use super::live::Live;
use super::request::Keys;
use super::rule::Quota;

/// A replaced rule's old limiter, limiting until its counts have expired.
#[derive(Clone)]
pub(crate) struct Draining {
    live: Arc<dyn Live>,
    /// Whether it is a sliding log, whose grants cannot be given back (checked after the
    /// limiters whose grants can).
    log: bool,
    /// The rule set's clock reading by which everything it counted has expired.
    until: u64,
    clock: Arc<dyn Clock>,
}

impl Draining {
    /// `live`, the limiter of `quota` a reload replaces now (read on `clock`), draining;
    /// `None` for an unlimited quota, which has no limiter.
    pub(crate) fn new(quota: &Quota, live: Arc<dyn Live>, clock: Arc<dyn Clock>) -> Option<Self> {
        let time = drain_time(quota)?;
        let until = clock
            .now_nanos()
            .saturating_add(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX));
        Some(Self {
            live,
            log: matches!(quota, Quota::SlidingLog(_)),
            until,
            clock,
        })
    }

    /// The time left until everything it counted has expired (zero once it has).
    pub(crate) fn left(&self) -> Duration {
        Duration::from_nanos(self.until.saturating_sub(self.clock.now_nanos()))
    }

    /// Whether everything it counted has expired: it no longer limits anything.
    pub(crate) fn is_over(&self) -> bool {
        self.left().is_zero()
    }

    /// The rule set's clock reading by which everything it counted has expired.
    pub(crate) fn until(&self) -> u64 {
        self.until
    }

    pub(crate) fn is_log(&self) -> bool {
        self.log
    }

    /// The policy dimension limiting rule number `rule` with it, refusing what `most` (the
    /// most the new limiter grants at once) would not make an error.
    pub(crate) fn dimension(&self, rule: usize, most: u64) -> Box<dyn Dimension<Keys>> {
        Box::new(DrainingDimension {
            // A keyed one decides only on the keys it holds: any other has nothing counted.
            inner: self.live.clone().dimension(rule, true),
            most,
            until: self.until,
            clock: self.clock.clone(),
            over: AtomicBool::new(false),
        })
    }
}

/// How long after a reload everything a limiter of `quota` counted before it has expired:
/// a window's length (a fixed window's count goes when its window ends, a sliding window's
/// bucket and a log's entry one window after they were counted, at the latest), or the
/// time a token bucket takes to refill from empty; `None` for no limit.
fn drain_time(quota: &Quota) -> Option<Duration> {
    match quota {
        Quota::Unlimited => None,
        Quota::FixedWindow(quota) | Quota::SlidingWindow(quota) | Quota::SlidingLog(quota) => {
            Some(quota.window_length())
        }
        Quota::TokenBucket(quota) => Some(Duration::from_nanos(
            (quota.rate().period_nanos()).saturating_mul(quota.burst_size()),
        )),
    }
}

/// The most a limiter of `quota` grants in one call (`u64::MAX` for no limit).
pub(crate) fn most_at_once(quota: &Quota) -> u64 {
    match quota {
        Quota::Unlimited => u64::MAX,
        Quota::FixedWindow(quota) | Quota::SlidingWindow(quota) | Quota::SlidingLog(quota) => {
            quota.limit()
        }
        Quota::TokenBucket(quota) => quota.burst_size(),
    }
}

/// A draining limiter's dimension: its own decisions until `until`, skipped after.
struct DrainingDimension {
    inner: Box<dyn Dimension<Keys>>,
    /// The most the new limiter grants at once: a request for more is its error, not this
    /// dimension's refusal.
    most: u64,
    until: u64,
    clock: Arc<dyn Clock>,
    /// Set once `until` has passed, sparing later checks the clock's reading.
    over: AtomicBool,
}

impl DrainingDimension {
    /// The time left to drain; `None` once over.
    fn left(&self) -> Option<Duration> {
        // Relaxed: a hint that saves a clock reading; the clock alone decides when it ends.
        if self.over.load(Ordering::Relaxed) {
            return None;
        }
        let now = self.clock.now_nanos();
        if now >= self.until {
            // Relaxed: as above.
            self.over.store(true, Ordering::Relaxed);
            return None;
        }
        Some(Duration::from_nanos(self.until - now))
    }

    /// What the old limiter's decision `taken`, `left` before its drain ends, makes of the
    /// request.
    fn drained(
        &self,
        taken: Result<Taken, KeyedError>,
        n: u64,
        left: Duration,
    ) -> Result<Taken, KeyedError> {
        match taken {
            // Refused until its count falls, or its drain ends, whichever comes first.
            Ok(Taken::Refused {
                available,
                retry_after,
            }) => Ok(Taken::Refused {
                available,
                retry_after: retry_after.min(left),
            }),
            // More at once than the old rule ever granted, but no more than the new one
            // grants: refused until the drain ends (the old rule in force would refuse it).
            Err(KeyedError::ExceedsLimit(_)) if n <= self.most => Ok(Taken::Refused {
                available: 0,
                retry_after: left,
            }),
            // Skipped once the drain ends: counting nothing by then, whatever it counted.
            Ok(Taken::Granted { grant, reset_after }) => Ok(Taken::Granted {
                grant,
                reset_after: reset_after.map(|reset| reset.min(left)),
            }),
            // A key the old limiter has no room for has nothing counted there.
            Err(KeyedError::Full { .. }) => Ok(Taken::Skipped),
            taken => taken,
        }
    }
}

impl Dimension<Keys> for DrainingDimension {
    fn take(&self, keys: &Keys, n: u64) -> Result<Taken, KeyedError> {
        match self.left() {
            None => Ok(Taken::Skipped),
            Some(left) => self.drained(self.inner.take(keys, n), n, left),
        }
    }

    fn give_back(&self, keys: &Keys, grant: Grant) {
        self.inner.give_back(keys, grant);
    }

    #[cfg(feature = "metrics")]
    fn limit(&self, keys: &Keys) -> u64 {
        self.inner.limit(keys)
    }

    /// The rule's new limiter records its allowances; this one only the refusals it makes
    /// (so that each check of the rule is counted once).
    #[cfg(feature = "metrics")]
    fn records_allowed(&self) -> bool {
        false
    }
}
