//! A [`Policy`](super::Policy)'s metrics (feature `metrics`), through the [`metrics`] facade:
//! the crate links the facade only, and the application installs the recorder (exporter) it
//! wants, such as `metrics-exporter-prometheus` (`examples/metrics.rs` serves them in
//! Prometheus' text format; `docs/alerts.yml` holds the alert rule below).
//!
//! | family | type | labels | value |
//! |---|---|---|---|
//! | [`REQUESTS_TOTAL`] `ringlimit_requests_total` | counter | `rule`, `result` = `allowed` or `rejected` | checks, per dimension and outcome |
//! | [`WINDOW_COUNT`] `ringlimit_window_count` | gauge | `rule` | the count of the key the dimension last decided on |
//! | [`UTILIZATION`] `ringlimit_utilization` | gauge | `rule` | that count / the limit it decided under |
//!
//! **Labels.** `rule` is the dimension's name, as given to
//! [`PolicyBuilder::per_key`](super::PolicyBuilder::per_key) or
//! [`shared`](super::PolicyBuilder::shared). Keys (users, IPs) are never labels: their
//! number is unbounded, and every label value is a time series kept by the recorder for the
//! life of the process. Policies whose dimensions share a name share its series (the
//! counters add up; the gauges show whichever decided last), so name dimensions uniquely
//! across a process when their series should be told apart.
//!
//! **What is recorded, per dimension, per check** (a check is one call of
//! [`check_n`](super::Policy::check_n); `requests` counts checks, not permits):
//! - *allowed*: the check was admitted and this dimension's grant is kept. The gauges are set
//!   from the grant: count = limit − permits left right after it.
//! - *rejected*: this dimension refused the request (the gauges are set: count = limit −
//!   permits available at the refusal), or failed it with a
//!   [`PolicyError`](super::PolicyError) (more permits than its limit, a keyed limiter full
//!   of live keys; the gauges are left as they are).
//! - nothing: a later dimension refused or failed, so this one's grant was refunded (the
//!   check is counted once, as rejected, under the dimension that refused: summing
//!   `rejected` over rules gives the policy's refusals), a key function found no key (the
//!   dimension does not apply), or an earlier dimension refused (this one was not asked).
//!
//! **Count and limit.** The limit is the limiter's [`limit`](crate::RateLimiter::limit): a
//! window's quota, a token bucket's burst, a leaky bucket's capacity; for a keyed dimension
//! the key's (its [`Tier`](crate::keyed::Tier)'s, if it is assigned one). The count is
//! what the limiter holds against that limit: the permits counted in the (weighted) window,
//! the tokens missing from the bucket. Unlimited quotas count 0 of `u64::MAX`. A keyed
//! dimension's gauges show the key the dimension last decided on (the last writer wins
//! among concurrent checks), not a maximum or a sum over keys: finding either would visit
//! every key, and a per-key series is what the labels must never be. As a sample taken at
//! every check, it weighs keys by their traffic: `ringlimit_utilization{rule="user"} > 0.9`
//! for a minute means the checks of that minute were mostly of users near their limit.
//!
//! **Cost.** The handles are registered once per dimension, when
//! [`build`](super::PolicyBuilder::build) runs, with the recorder installed then (the
//! global one, or a local one on that thread). Install the recorder before building
//! policies: a policy built before keeps handles that record nothing. Recording a check
//! then costs one counter increment and two gauge stores per deciding dimension (about 20 ns
//! with `metrics-exporter-prometheus`, against about 500 ns for the `counter!`/`gauge!`
//! macros per call, which build and hash a key each time). With no recorder, the counter
//! increment is a branch on an empty handle, and the gauges cost nothing after a dimension's
//! first check: their values are computed lazily, only by a gauge that takes them, so a
//! no-op gauge reads no limit and divides nothing, and once a dimension's gauges have shown
//! they are no-ops (they never read the value) they are not set again. Under callgrind a
//! four-dimension check costs 3102 instructions with the feature and no recorder, 2997
//! without the feature (26 per dimension).
//!
//! **Alert.** `docs/alerts.yml`, checked by `promtool check rules` and unit-tested by
//! `promtool test rules docs/alerts_test.yml`:
//!
//! ```yaml
//! - alert: HighWindowUtilization
//!   # The gauge keeps its last value while a rule is idle: the alert also needs traffic.
//!   expr: ringlimit_utilization > 0.9 and on(rule, instance) rate(ringlimit_requests_total[1m]) > 0
//!   for: 1m
//!   labels:
//!     severity: warning
//! ```
//!
//! ```
//! use std::sync::Arc;
//! use metrics_util::debugging::{DebugValue, DebuggingRecorder};
//! use ringlimit::policy::{metrics::UTILIZATION, Policy};
//! use ringlimit::{FixedWindow, WindowQuota};
//! let recorder = DebuggingRecorder::new();
//! let snapshotter = recorder.snapshotter();
//! metrics::with_local_recorder(&recorder, || {
//!     let global = Arc::new(FixedWindow::new(WindowQuota::per_minute(4)?));
//!     let policy = Policy::<()>::builder().shared("global", global).build();
//!     for _ in 0..3 {
//!         assert!(policy.check(&())?.is_admitted());
//!     }
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! let utilization = snapshotter.snapshot().into_vec().into_iter().find_map(|(key, _, _, value)| {
//!     (key.key().name() == UTILIZATION).then_some(value)
//! });
//! assert_eq!(utilization, Some(DebugValue::Gauge(0.75.into()))); // 3 of 4
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use std::cell::OnceCell;

use ::metrics::{counter, gauge, Counter, Gauge, IntoF64, Unit};

use crate::sync::{atomic, AtomicU64, Ordering};

/// The counter of checks per dimension and outcome: labels `rule` (the dimension's name) and
/// `result` (`allowed` or `rejected`).
///
/// ```
/// assert_eq!(ringlimit::policy::metrics::REQUESTS_TOTAL, "ringlimit_requests_total");
/// ```
pub const REQUESTS_TOTAL: &str = "ringlimit_requests_total";

/// The gauge of the count against the limit (limit − available), of the key a dimension last
/// decided on: label `rule`.
///
/// ```
/// assert_eq!(ringlimit::policy::metrics::WINDOW_COUNT, "ringlimit_window_count");
/// ```
pub const WINDOW_COUNT: &str = "ringlimit_window_count";

/// The gauge of [`WINDOW_COUNT`] / the limit, 0 to 1: label `rule`.
///
/// ```
/// assert_eq!(ringlimit::policy::metrics::UTILIZATION, "ringlimit_utilization");
/// ```
pub const UTILIZATION: &str = "ringlimit_utilization";

/// Gives the three families their descriptions (the `# HELP` lines of Prometheus' format)
/// in the recorder installed now. [`build`](super::PolicyBuilder::build) calls it; call it
/// yourself only if the recorder was installed after the last policy was built.
///
/// ```
/// use metrics_util::debugging::DebuggingRecorder;
/// use ringlimit::policy::metrics::{describe, UTILIZATION};
/// let recorder = DebuggingRecorder::new();
/// let snapshotter = recorder.snapshotter();
/// metrics::with_local_recorder(&recorder, || {
///     describe();
///     metrics::gauge!(UTILIZATION, "rule" => "global").set(0.5);
/// });
/// let (_, _, help, _) = snapshotter.snapshot().into_vec().pop().expect("one series");
/// assert!(help.expect("described").starts_with("Window count / limit"));
/// ```
pub fn describe() {
    ::metrics::describe_counter!(
        REQUESTS_TOTAL,
        Unit::Count,
        "Policy checks per dimension (rule) and result: allowed (admitted, this rule's grant kept) or rejected (refused or failed by this rule)."
    );
    ::metrics::describe_gauge!(
        WINDOW_COUNT,
        Unit::Count,
        "Permits counted against the limit (limit - available) of the key the rule last decided on."
    );
    ::metrics::describe_gauge!(
        UTILIZATION,
        "Window count / limit of the key the rule last decided on (0 to 1)."
    );
}

/// One dimension's handles, registered when the policy is built.
pub(crate) struct DimensionMetrics {
    /// `None` for a dimension whose allowances another dimension records.
    allowed: Option<Counter>,
    rejected: Counter,
    window_count: Gauge,
    utilization: Gauge,
    /// Whether the gauges reach a recorder: [`UNKNOWN`] until the first values are set,
    /// then [`LIVE`] or [`NOOP`] for good (a handle is registered once, at build; one
    /// registered with no recorder installed drops every value unread).
    gauges: AtomicU64,
}

const UNKNOWN: u64 = 0;
const LIVE: u64 = 1;
const NOOP: u64 = 2;

impl DimensionMetrics {
    /// The handles of dimension `rule` in the recorder installed now (without the
    /// allowances' unless `records_allowed`).
    pub(crate) fn register(rule: &Arc<str>, records_allowed: bool) -> Self {
        Self {
            allowed: records_allowed
                .then(|| counter!(REQUESTS_TOTAL, "rule" => rule.clone(), "result" => "allowed")),
            rejected: counter!(REQUESTS_TOTAL, "rule" => rule.clone(), "result" => "rejected"),
            window_count: gauge!(WINDOW_COUNT, "rule" => rule.clone()),
            utilization: gauge!(UTILIZATION, "rule" => rule.clone()),
            gauges: atomic(UNKNOWN),
        }
    }

    /// The check was admitted and this dimension's grant kept, `left` permits left of the
    /// `limit()` it decided under.
    #[inline]
    pub(crate) fn allowed(&self, limit: impl Fn() -> u64, left: u64) {
        if let Some(allowed) = &self.allowed {
            allowed.increment(1);
            self.set_count(&limit, left);
        }
    }

    /// This dimension refused the check, `available` of the `limit()` it decided under. A
    /// dimension that records no allowances (a rule's draining old limiter) counts the
    /// refusal only: its gauges would report the old limit in the rule's series, which the
    /// rule's new limiter sets on its own scale (and an `ExceedsLimit` refusal by the old
    /// limiter, which has nothing counted, would read 100%).
    #[inline]
    pub(crate) fn refused(&self, limit: impl Fn() -> u64, available: u64) {
        self.rejected.increment(1);
        if self.allowed.is_some() {
            self.set_count(&limit, available);
        }
    }

    /// This dimension failed the check (a [`PolicyError`](super::PolicyError)).
    #[inline]
    pub(crate) fn failed(&self) {
        self.rejected.increment(1);
    }

    /// Sets the gauges from `available` and `limit()`. The values are computed only by a
    /// recorder's gauge (a handle registered with none installed drops them unread), so with
    /// no recorder the limit is never read and nothing is divided.
    #[inline]
    fn set_count(&self, limit: &dyn Fn() -> u64, available: u64) {
        // Relaxed: a hint about handles that never change; a stale UNKNOWN only sets the
        // gauges once more.
        let gauges = self.gauges.load(Ordering::Relaxed);
        if gauges == NOOP {
            return;
        }
        let usage = Usage {
            limit: OnceCell::new(),
            read: limit,
            available,
        };
        self.window_count.set(Count(&usage));
        self.utilization.set(Ratio(&usage));
        if gauges == UNKNOWN {
            // A live gauge computed its value, which read the limit; a no-op one did not.
            let seen = if usage.limit.get().is_some() {
                LIVE
            } else {
                NOOP
            };
            // Relaxed: as the load.
            self.gauges.store(seen, Ordering::Relaxed);
        }
    }
}

/// A dimension's usage, computed at most once and only when a gauge takes it.
struct Usage<'a> {
    limit: OnceCell<u64>,
    read: &'a dyn Fn() -> u64,
    available: u64,
}

impl Usage<'_> {
    fn limit(&self) -> u64 {
        *self.limit.get_or_init(self.read)
    }

    fn count(&self) -> u64 {
        self.limit().saturating_sub(self.available)
    }
}

/// `limit - available`, as the window-count gauge takes it.
struct Count<'a>(&'a Usage<'a>);

impl IntoF64 for Count<'_> {
    fn into_f64(self) -> f64 {
        self.0.count() as f64
    }
}

/// `count / limit`, as the utilization gauge takes it.
struct Ratio<'a>(&'a Usage<'a>);

impl IntoF64 for Ratio<'_> {
    fn into_f64(self) -> f64 {
        // `limit` is at least 1 for every limiter (a quota of 0 is a configuration error).
        self.0.count() as f64 / self.0.limit().max(1) as f64
    }
}
