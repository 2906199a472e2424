//! What a limiter does when Redis does not answer within the timeout: [`OnFailure`].

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use ringlimit::cell::{LogConfig, WindowConfig};
use ringlimit::clock::TscClock;
use ringlimit::keyed::{Buckets, FixedWindows, Keyed, SlidingLogs};
use ringlimit::outcome::Decision;
use ringlimit::{Rate, WindowQuota};

use crate::algorithm::{Algorithm, QuotaError};
use crate::fleet::Fleet;
use crate::verdict::{Source, Verdict};

/// The failure policy of a limiter: what decides while Redis is unreachable, slow beyond
/// the timeout, loading, or its cluster is down.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use ringlimit::BucketQuota;
/// use ringlimit_redis::{Algorithm, Connection, Fleet, OnFailure, RedisLimiter};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let fleet = Fleet::join(&connection, "api", Duration::from_secs(1), 4).await;
/// let per_user = RedisLimiter::builder(&connection, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(100)?))
///     .on_failure(OnFailure::LocalShare(fleet))
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub enum OnFailure {
    /// Admit: availability before the limit (`Source::FailOpen`).
    Open,
    /// Refuse: the limit before availability (`Source::FailClosed`). The default.
    #[default]
    Closed,
    /// Decide in process with this node's share of the quota: the quota divided by the
    /// fleet's live nodes (`Source::LocalShare`). While the nodes agree on their count, the
    /// fleet together admits at most the quota plus, at the switch, what Redis had admitted
    /// in the current window or bucket (the local counts start empty). When Redis is back,
    /// its state did not see the outage's admissions: the first decision on Redis for a key
    /// whose share still remembers some also takes them (the request is admitted only if
    /// Redis has room for both), so the switch back lets no second burst through. The in-process
    /// windows hold at most 2^20 − 1 per window
    /// ([`WindowConfig::MAX_LIMIT`](ringlimit::cell::WindowConfig::MAX_LIMIT),
    /// [`LogConfig::MAX_LIMIT`](ringlimit::cell::LogConfig::MAX_LIMIT)): a window quota
    /// above that is refused when the limiter is built ([`QuotaError::LocalShareTooLarge`]).
    LocalShare(Fleet),
}

/// The in-process limiter holding this node's share, per key.
pub(crate) struct LocalShare {
    fleet: Fleet,
    algorithm: Algorithm,
    /// The live-node count the limiter's quota was divided by; held while reconfiguring,
    /// so that two callers seeing different counts cannot leave the quota divided by the
    /// older one.
    divided_by: Mutex<u64>,
    keyed: LocalKeyed,
    /// Keys whose admissions made in process Redis has since taken (`unseen`): cleared for a
    /// key when the share decides on it again, dropped when its share is full again.
    synced: Mutex<HashSet<Vec<u8>>>,
}

enum LocalKeyed {
    Windows(Box<Keyed<Vec<u8>, FixedWindows>>),
    Logs(Box<Keyed<Vec<u8>, SlidingLogs>>),
    Buckets(Box<Keyed<Vec<u8>, Buckets>>),
}

/// The most keys a local share holds (idle ones are dropped; when all are live, new keys
/// are refused, never over-admitted).
const LOCAL_MAX_KEYS: usize = 1 << 20;

/// Why a window quota cannot fall back on a local share whose cells hold at most `max`.
fn too_large(quota: WindowQuota, max: u64) -> QuotaError {
    QuotaError::LocalShareTooLarge {
        limit: quota.limit(),
        max,
    }
}

impl LocalShare {
    /// This node's share of `algorithm`'s quota; [`QuotaError::LocalShareTooLarge`] for a
    /// window quota beyond what the in-process cells hold (the share of a single node is the
    /// whole quota).
    pub(crate) fn new(fleet: Fleet, algorithm: Algorithm) -> Result<Self, QuotaError> {
        let keyed = match algorithm {
            Algorithm::FixedWindow(quota) => {
                let config = WindowConfig::new(quota)
                    .map_err(|_| too_large(quota, WindowConfig::MAX_LIMIT))?;
                LocalKeyed::Windows(Box::new(
                    Keyed::with_config(config, TscClock::new()).max_keys(LOCAL_MAX_KEYS),
                ))
            }
            // The exact log is at least as strict as a bucketed window of the same quota.
            Algorithm::SlidingWindow(quota) | Algorithm::SlidingLog(quota) => {
                let config =
                    LogConfig::new(quota).map_err(|_| too_large(quota, LogConfig::MAX_LIMIT))?;
                LocalKeyed::Logs(Box::new(
                    Keyed::with_config(config, TscClock::new()).max_keys(LOCAL_MAX_KEYS),
                ))
            }
            Algorithm::TokenBucket(quota) => {
                LocalKeyed::Buckets(Box::new(Keyed::new(quota).max_keys(LOCAL_MAX_KEYS)))
            }
        };
        let share = Self {
            fleet,
            algorithm,
            divided_by: Mutex::new(0),
            keyed,
            synced: Mutex::default(),
        };
        share.follow_fleet();
        Ok(share)
    }

    /// Takes `n` for `key` from this node's share. `None` when the share is zero (more
    /// nodes than the quota has permits): refuse.
    pub(crate) fn decide(&self, key: &[u8], n: u64) -> Option<Decision> {
        self.synced_keys().remove(key);
        if !self.follow_fleet() {
            return None;
        }
        let decided = match &self.keyed {
            LocalKeyed::Windows(keyed) => keyed.try_acquire_n(key, n),
            LocalKeyed::Logs(keyed) => keyed.try_acquire_n(key, n),
            LocalKeyed::Buckets(keyed) => keyed.try_acquire_n(key, n),
        };
        // More than the share at once, or a map full of live keys: refused.
        decided.ok()
    }

    /// Divides the quota by the fleet's live nodes if that count changed (counts kept).
    /// `false` when the share is zero.
    fn follow_fleet(&self) -> bool {
        let nodes = self.fleet.live_nodes().max(1);
        let mut divided_by = self
            .divided_by
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *divided_by == nodes {
            return self.share_nonzero(nodes);
        }
        *divided_by = nodes;
        match (&self.keyed, self.algorithm) {
            (LocalKeyed::Windows(keyed), Algorithm::FixedWindow(quota)) => keyed
                .config()
                .set_limit((quota.limit() / nodes).max(1))
                .is_ok(),
            (
                LocalKeyed::Logs(keyed),
                Algorithm::SlidingWindow(quota) | Algorithm::SlidingLog(quota),
            ) => keyed
                .config()
                .set_limit((quota.limit() / nodes).max(1))
                .is_ok(),
            (LocalKeyed::Buckets(keyed), Algorithm::TokenBucket(quota)) => {
                let clock = keyed.clock();
                let period = quota.rate().period_nanos().saturating_mul(nodes);
                let slower = Rate::new(1, Duration::from_nanos(period));
                let rate_ok =
                    slower.is_ok_and(|rate| keyed.config().set_rate(&clock, rate).is_ok());
                let burst_ok = keyed
                    .config()
                    .set_limit(&clock, (quota.burst_size() / nodes).max(1))
                    .is_ok();
                rate_ok && burst_ok
            }
            _ => false,
        };
        self.share_nonzero(nodes)
    }

    fn synced_keys(&self) -> std::sync::MutexGuard<'_, HashSet<Vec<u8>>> {
        self.synced
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The permits the share admitted for `key` and still remembers (a full share less what
    /// it has available), unless Redis took them already.
    fn unseen(&self, key: &[u8]) -> u64 {
        let used = self.used(key);
        if used == 0 {
            // Full again: nothing to remember, for now or later.
            self.synced_keys().remove(key);
            return 0;
        }
        if self.synced_keys().contains(key) {
            return 0;
        }
        used
    }

    fn synced(&self, key: &[u8]) {
        self.synced_keys().insert(key.to_vec());
    }

    /// The permits of a full share that `key`'s share lacks.
    fn used(&self, key: &[u8]) -> u64 {
        let nodes = self.fleet.live_nodes().max(1);
        let (available, full) = match (&self.keyed, self.algorithm) {
            (LocalKeyed::Windows(keyed), Algorithm::FixedWindow(q)) => {
                (keyed.available(key), (q.limit() / nodes).max(1))
            }
            (LocalKeyed::Logs(keyed), Algorithm::SlidingWindow(q) | Algorithm::SlidingLog(q)) => {
                (keyed.available(key), (q.limit() / nodes).max(1))
            }
            (LocalKeyed::Buckets(keyed), Algorithm::TokenBucket(q)) => {
                (keyed.available(key), (q.burst_size() / nodes).max(1))
            }
            _ => return 0,
        };
        full.saturating_sub(available)
    }

    fn share_nonzero(&self, nodes: u64) -> bool {
        match self.algorithm {
            Algorithm::FixedWindow(q) | Algorithm::SlidingWindow(q) | Algorithm::SlidingLog(q) => {
                q.limit() / nodes > 0
            }
            Algorithm::TokenBucket(q) => q.burst_size() / nodes > 0,
        }
    }
}

impl fmt::Debug for LocalShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalShare")
            .field("algorithm", &self.algorithm)
            .field("fleet", &self.fleet)
            .finish()
    }
}

/// A limit's failure policy in force: decides while Redis is unavailable, and counts.
#[derive(Debug)]
pub(crate) struct Fallback {
    name: String,
    on_failure: OnFailure,
    local: Option<LocalShare>,
    decisions: AtomicU64,
}

impl Fallback {
    /// The failure policy `on_failure` of `algorithm`; errors as [`LocalShare::new`].
    pub(crate) fn new(
        name: &str,
        on_failure: OnFailure,
        algorithm: Algorithm,
    ) -> Result<Self, QuotaError> {
        let local = match &on_failure {
            OnFailure::LocalShare(fleet) => Some(LocalShare::new(fleet.clone(), algorithm)?),
            _ => None,
        };
        Ok(Self {
            name: name.to_owned(),
            on_failure,
            local,
            decisions: AtomicU64::new(0),
        })
    }

    /// The policy's decision on `n` permits for `key` (taking them from the local share
    /// when `commit`), counted and recorded as the metric
    /// `ringlimit_redis_fallback_decisions_total{limiter, source, admitted}`.
    pub(crate) fn decide(&self, key: &[u8], n: u64, commit: bool) -> Verdict {
        let refused = Decision::Refused {
            available: 0,
            retry_after: crate::health::RETRY_AFTER_FAILURE,
        };
        let (decision, source) = match (&self.on_failure, &self.local) {
            (OnFailure::Open, _) => (Decision::Admitted { remaining: 0 }, Source::FailOpen),
            (OnFailure::Closed, _) => (refused, Source::FailClosed),
            (OnFailure::LocalShare(_), Some(local)) if commit => {
                (local.decide(key, n).unwrap_or(refused), Source::LocalShare)
            }
            // A look (`available`) takes nothing from the share: say nothing is sure.
            (OnFailure::LocalShare(_), _) => (refused, Source::LocalShare),
        };
        self.counted(decision, source)
    }

    /// A decision of the failure policy's (or of the share's), counted and recorded.
    fn counted(&self, decision: Decision, source: Source) -> Verdict {
        // Relaxed: a statistic.
        self.decisions.fetch_add(1, Ordering::Relaxed);
        metrics::counter!(
            "ringlimit_redis_fallback_decisions_total",
            "limiter" => self.name.clone(),
            "source" => source.as_str(),
            "admitted" => if decision.is_admitted() { "true" } else { "false" },
        )
        .increment(1);
        Verdict {
            decision,
            reset_after: Duration::ZERO,
            source,
            server_time: None,
        }
    }

    /// What Redis must take beyond the `n` a request asks for `key`: the permits this
    /// node's share admitted while Redis was unavailable and still remembers (Redis did not
    /// count them), until a decision on Redis has taken them once (`synced`). So when Redis
    /// is back, its state cannot let a second burst through: it has room for a request only
    /// if it also has room for the outage's admissions. At most the limit less `n`.
    pub(crate) fn unseen(&self, key: &[u8], n: u64, limit: u64) -> u64 {
        self.local
            .as_ref()
            .map_or(0, |local| local.unseen(key).min(limit.saturating_sub(n)))
    }

    /// Redis took `key`'s unseen permits: they are not taken again.
    pub(crate) fn synced(&self, key: &[u8]) {
        if let Some(local) = &self.local {
            local.synced(key);
        }
    }

    /// The decisions made so far.
    pub(crate) fn count(&self) -> u64 {
        // Relaxed: a statistic.
        self.decisions.load(Ordering::Relaxed)
    }
}
