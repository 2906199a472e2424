//! The in-process backend: one keyed limiter per rule, keys the rule's counters, decided
//! with grants refunded when another descriptor of the request refuses.

use std::time::Duration;

use ringlimit::cell::{LogConfig, SlidingConfig, WindowConfig};
use ringlimit::clock::{Clock, TscClock};
use ringlimit::keyed::{Buckets, FixedWindows, Keyed, SlidingLogs, SlidingWindows};
use ringlimit::outcome::{Admission, Grant};
use ringlimit::{BucketQuota, Rate, WindowQuota};

use crate::config::Algorithm;
use crate::matcher::Limit;

/// Buckets of an in-process sliding window (the cell's size is fixed at build).
pub const SLIDING_BUCKETS: u64 = 10;

/// Most keys one rule holds before refusing new ones (idle keys are swept first).
pub const MAX_KEYS_PER_RULE: usize = 1 << 20;

/// One rule's keyed limiter.
// One per rule, behind an `Arc`: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum LocalLimiter {
    /// Fixed windows.
    Fixed(Keyed<String, FixedWindows>),
    /// Sliding windows of [`SLIDING_BUCKETS`] buckets.
    Sliding(Keyed<String, SlidingWindows<10>>),
    /// Sliding logs.
    Log(Keyed<String, SlidingLogs>),
    /// Token buckets.
    Bucket(Keyed<String, Buckets>),
    /// A limit of zero: refuses everything, counts nothing.
    Closed,
}

/// A limiter's decision of one descriptor.
#[derive(Debug)]
pub enum Outcome {
    /// Admitted, leaving `remaining`; the grant to refund if the request is refused.
    Granted {
        /// What refunds it.
        grant: Grant,
        /// Left after it.
        remaining: u64,
        /// When the counter is whole again.
        reset_after: Duration,
    },
    /// Refused: `available` left, admitted again after `retry_after`.
    Refused {
        /// Left now.
        available: u64,
        /// When the same request could pass.
        retry_after: Duration,
    },
}

impl std::fmt::Debug for LocalLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Fixed(_) => "LocalLimiter::Fixed",
            Self::Sliding(_) => "LocalLimiter::Sliding",
            Self::Log(_) => "LocalLimiter::Log",
            Self::Bucket(_) => "LocalLimiter::Bucket",
            Self::Closed => "LocalLimiter::Closed",
        })
    }
}

impl LocalLimiter {
    /// The limiter for `limit` (`None` for an unlimited one), on `clock`.
    ///
    /// ```
    /// use ringlimit::clock::TscClock;
    /// use ringlimit_server::backend::local::{LocalLimiter, Outcome};
    /// use ringlimit_server::config::{Algorithm, Unit};
    /// use ringlimit_server::matcher::Limit;
    /// let limit = Limit::Counted { requests: 1, unit: Unit::Minute, algorithm: Algorithm::SlidingWindow, burst: None, buckets: None };
    /// let limiter = LocalLimiter::new(&limit, TscClock::new())?.expect("counted");
    /// assert!(matches!(limiter.grant("k", 1), Outcome::Granted { remaining: 0, .. }));
    /// assert!(matches!(limiter.grant("k", 1), Outcome::Refused { .. }));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(limit: &Limit, clock: TscClock) -> Result<Option<Self>, ringlimit::ConfigError> {
        let Limit::Counted {
            requests,
            unit,
            algorithm,
            burst,
            ..
        } = *limit
        else {
            return Ok(None);
        };
        if requests == 0 {
            return Ok(Some(Self::Closed));
        }
        let window = WindowQuota::per(requests, unit.duration())?;
        let limiter = match algorithm {
            Algorithm::FixedWindow => Self::Fixed(
                Keyed::with_config(WindowConfig::new(window)?, clock).max_keys(MAX_KEYS_PER_RULE),
            ),
            Algorithm::SlidingWindow => Self::Sliding(
                Keyed::with_config(SlidingConfig::new(window.buckets(SLIDING_BUCKETS)?)?, clock)
                    .max_keys(MAX_KEYS_PER_RULE),
            ),
            Algorithm::SlidingLog => Self::Log(
                Keyed::with_config(LogConfig::new(window)?, clock).max_keys(MAX_KEYS_PER_RULE),
            ),
            Algorithm::TokenBucket => {
                let quota = BucketQuota::new(
                    Rate::new(requests, unit.duration())?,
                    burst.unwrap_or(requests),
                )?;
                Self::Bucket(Keyed::with_clock(quota, clock).max_keys(MAX_KEYS_PER_RULE))
            }
        };
        Ok(Some(limiter))
    }

    /// Takes `n` for `key`.
    pub fn grant(&self, key: &str, n: u64) -> Outcome {
        let admission = match self {
            Self::Fixed(k) => k.try_grant(key, n),
            Self::Sliding(k) => k.try_grant(key, n),
            Self::Log(k) => k.try_grant(key, n),
            Self::Bucket(k) => k.try_grant(key, n),
            Self::Closed => {
                return Outcome::Refused {
                    available: 0,
                    retry_after: Duration::MAX,
                }
            }
        };
        match admission {
            Ok(Admission::Granted(grant)) => {
                let remaining = grant.remaining();
                Outcome::Granted {
                    reset_after: self.reset_after(remaining),
                    grant,
                    remaining,
                }
            }
            Ok(Admission::Refused {
                available,
                retry_after,
            }) => Outcome::Refused {
                available,
                retry_after,
            },
            // More than the limit, or a table full of busy keys: refused, nothing taken.
            Err(_) => Outcome::Refused {
                available: 0,
                retry_after: Duration::MAX,
            },
        }
    }

    /// Gives back `grant`, taken for `key`; the permits restored (none for a sliding log).
    pub fn refund(&self, key: &str, grant: Grant) -> u64 {
        match self {
            Self::Fixed(k) => k.refund(key, grant),
            Self::Sliding(k) => k.refund(key, grant),
            Self::Log(k) => k.refund(key, grant),
            Self::Bucket(k) => k.refund(key, grant),
            Self::Closed => 0,
        }
    }

    /// What `key` could take now, without taking it.
    pub fn available(&self, key: &str) -> u64 {
        match self {
            Self::Fixed(k) => k.available(key),
            Self::Sliding(k) => k.available(key),
            Self::Log(k) => k.available(key),
            Self::Bucket(k) => k.available(key),
            Self::Closed => 0,
        }
    }

    /// How long until a counter that has `remaining` left is whole again, at most: a fixed
    /// window's end (windows are aligned to the clock), a sliding window's or log's length,
    /// a bucket's refill of what is missing.
    fn reset_after(&self, remaining: u64) -> Duration {
        match self {
            Self::Fixed(k) => {
                let window = k.config().window().as_nanos() as u64;
                Duration::from_nanos(window - k.clock().now_nanos() % window.max(1))
            }
            Self::Sliding(k) => k.config().window(),
            Self::Log(k) => k.config().window(),
            Self::Bucket(k) => {
                let config = k.config();
                let missing = config.limit().saturating_sub(remaining);
                config
                    .rate()
                    .period()
                    .saturating_mul(missing.min(u64::from(u32::MAX)) as u32)
            }
            Self::Closed => Duration::ZERO,
        }
    }
}

/// Decides `items` on their in-process limiters, all or nothing: every grant is refunded
/// when one refuses, and the limiters after a refusal are only looked at (taking and giving
/// back would hold their permits for nothing, refusing concurrent requests). A sliding log
/// cannot give a grant back (ringlimit's logs keep each admission's time; their refund
/// restores nothing), so, as ringlimit's policies order them, the logs are asked last and
/// only when every other limiter admitted and every log has room: a log is charged by a
/// refused request only when another log refuses in the instant between that look and its
/// grant.
pub(crate) fn decide(items: &[super::Item<'_>]) -> Vec<super::Verdict> {
    let mut verdicts = vec![super::UNLIMITED; items.len()];
    let mut grants = Vec::new();
    let mut refused = false;
    let mut logs = Vec::new();
    for (at, item) in items.iter().enumerate() {
        match local(item) {
            None => {}
            Some(log @ LocalLimiter::Log(_)) => logs.push((at, log)),
            // A closed limit takes nothing: asked for its answer (never before Duration::MAX).
            Some(limiter) if refused && !matches!(limiter, LocalLimiter::Closed) => {
                verdicts[at] = look(item, limiter, &mut refused);
            }
            Some(limiter) => verdicts[at] = ask(item, limiter, &mut grants, &mut refused, at),
        }
    }
    let logs_have_room = logs.iter().all(|&(at, log)| {
        items[at].rule.shadow || log.available(items[at].counter) >= items[at].hits
    });
    for (at, log) in logs {
        let item = &items[at];
        verdicts[at] = if refused || !logs_have_room {
            look(item, log, &mut refused)
        } else {
            ask(item, log, &mut grants, &mut refused, at)
        };
    }
    if refused {
        for (at, grant) in grants {
            if let Some(limiter) = local(&items[at]) {
                // Reported as it is after the refund (a log's grant restores nothing).
                let restored = limiter.refund(items[at].counter, grant);
                verdicts[at].remaining = verdicts[at].remaining.saturating_add(restored);
            }
        }
    }
    verdicts
}

/// `item`'s limiter as it stands, neither asked nor counted; a look that finds too little
/// outside shadow mode sets `refused`.
fn look(item: &super::Item<'_>, limiter: &LocalLimiter, refused: &mut bool) -> super::Verdict {
    let available = limiter.available(item.counter);
    let over = available < item.hits;
    *refused |= over && !item.rule.shadow;
    super::Verdict {
        over,
        remaining: available,
        reset: limiter.reset_after(available),
    }
}

/// The in-process limiter of `item`, if it has one.
fn local<'a>(item: &super::Item<'a>) -> Option<&'a LocalLimiter> {
    match item.handle {
        super::Handle::Local(limiter) => Some(limiter),
        _ => None,
    }
}

/// Asks `limiter` for `item`'s hits; a grant is kept in `grants` (for a refund), a refusal
/// outside shadow mode sets `refused`.
fn ask(
    item: &super::Item<'_>,
    limiter: &LocalLimiter,
    grants: &mut Vec<(usize, Grant)>,
    refused: &mut bool,
    at: usize,
) -> super::Verdict {
    match limiter.grant(item.counter, item.hits) {
        Outcome::Granted {
            grant,
            remaining,
            reset_after,
        } => {
            grants.push((at, grant));
            super::Verdict {
                over: false,
                remaining,
                reset: reset_after,
            }
        }
        Outcome::Refused {
            available,
            retry_after,
        } => {
            *refused |= !item.rule.shadow;
            super::Verdict {
                over: true,
                remaining: available,
                reset: retry_after,
            }
        }
    }
}
