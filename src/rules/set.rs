//! [`RuleSet`]: the rules in force, checked without locks and reloaded atomically.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use crate::clock::{Clock, TscClock};
use crate::policy::{PolicyDecision, PolicyError};

use super::error::RulesError;
use super::file::{self, Format};
use super::reload::{self, Compiled, ReloadReport};
use super::request::RequestInfo;
use super::rule::{self, RuleQuota};

/// Rate limits from a rules file (TOML or YAML), checked all or nothing across its rules
/// and reloaded atomically.
///
/// Each rule is one dimension of a [`Policy`](crate::policy::Policy), checked in the file's
/// order (put the rules most likely to refuse first), except `sliding_log` rules, checked
/// after all the others: a request is admitted iff every rule that applies to it admits it,
/// and a refusal gives back what the earlier rules granted. (A log's grant cannot be given
/// back, so only a log is charged for a request another log after it refuses: keep to one
/// `sliding_log` rule per request where that matters.)
///
/// **Checks never wait for a reload.** The rules in force sit behind an
/// [`ArcSwap`](arc_swap::ArcSwap): a check loads them (no lock, no reference count on the
/// shared path) and a reload swaps in the new ones whole, so a check sees the old rules or
/// the new, never a mix. Reloads take a mutex among themselves only.
///
/// **A reload never lets a burst through a changed rule.** Rules are matched by name. A
/// rule whose algorithm, key and window stay keeps its live limiters and has them
/// reconfigured in place (its limit, its resource, its `max_keys`): every permit already
/// counted stays counted under the new limit (swapping in fresh limiters would forget them
/// and admit a whole new limit at once, as governor's users found, its issue 39). A
/// `sliding_log` rule is reconfigured in place up to the room its ring has anyway (one less
/// than the power of two above its first limit: 7 for 5, 127 for 100). Any other change
/// under the same key (another algorithm or window, a log raised past that room, limited to
/// unlimited) gets fresh limiters, and the old ones *keep limiting beside them* until what
/// they counted has expired (the old window's length from the reload, or the time the old
/// token bucket takes to refill): a request is admitted only if both admit it, all or
/// nothing, so the rule never admits more than the old rule would have while the old
/// counts last, nor more than the new rule from the reload on (up to the checks in flight
/// across the swap: a check that loaded the old rules just before it is counted by the old
/// limiter only, which the new one never learns of, so that once the drain ends it may
/// admit that many more; pre-charging the new limiter is not worth it). After that the old
/// limiters are skipped, and the first check from then on rebuilds the rules without them
/// (taking the reload lock only if no reload holds it), releasing their memory without
/// waiting for a reload. A rule has at most 16 limiters draining: a reload that would
/// replace a rule with 16 still draining (a config loop flipping its algorithm faster than
/// its window) is refused with a [`RulesError`] and changes nothing, rather than drop a
/// drain, which could admit more than the rules in force would. The new limiters count from the reload: over
/// a longer new window, what the old ones counted before it is not held against the new
/// limit once the old window has passed. The [`ReloadReport`] lists such a rule as
/// replaced, saying why, and in [`draining`](ReloadReport::draining) for how long. A rule
/// whose key changes also gets fresh limiters, counting from zero under the new key: its
/// old counts belong to other keys (the report says so). **A reload never resets a limit**:
/// a rule gone from the file stops limiting, but its limiters are kept,
/// unchecked, until what they counted has expired, and a rule coming back under the same
/// name and key within that time (re-added after a push that omitted it, or its key changed
/// back) gets them back with every count ([`revived`](ReloadReport::revived)); the limiters
/// of a rule whose key changed are kept the same way. A rule gone from the file whose key,
/// scope and quota a new rule has exactly is the same rule
/// [`renamed`](ReloadReport::renamed): the new name keeps its limiters. A file that does not load (its syntax, an
/// unknown field, a bad value) changes nothing: the [`RulesError`] names the rule, the
/// field and where the format's parser saw it.
///
/// The file format, rule by rule (TOML `[[rules]]` tables or a YAML `rules:` list):
///
/// | field | what |
/// |---|---|
/// | `name` | required, unique: reloads match rules by it; decisions and errors name it |
/// | `resource` | optional: only requests whose [`route`](RequestInfo::route) is this (or, ending in `*`, begins with what precedes it); every request if absent |
/// | `key` | required: `global` (one limit for all), `client_ip` (IPv6 by /64; `client_ip/48` for another prefix), `route`, `api_key`, `user`, or `header:<name>` |
/// | `algorithm` | required: `fixed_window`, `sliding_window` (10 buckets), `sliding_log` (exact), `token_bucket` |
/// | `rate` | `100/s`, `1000/min`, `10/h`, `5/100ms`: a window's limit and length, or a bucket's refill |
/// | `limit`, `window` | a window's limit and length (`window = "1m"`), instead of `rate` |
/// | `burst` | a token bucket's size (default: the rate's permits, `100` for `100/s`) |
/// | `max_keys` | keys a keyed rule holds at most (default 1 000 000; a new key is refused when all are live; the rule's table grows to `1.2 × max_keys` slots once its keys spread: about 19 MB for a token bucket at the default, 134 MB for a sliding window of 10 buckets, so bound a rule near the keys it serves); a reload changes it in place, every count kept (lowered below the keys held, no new key gets in until enough go idle; raised above the bound the rule's table was built for, the limiter is replaced, the old one draining so that every key keeps its count until its window passes) |
///
/// `rate` or `limit` of `-1` or `"unlimited"` makes a rule admit everything, as the
/// payment-channel rules write it. A rule whose key the request lacks (no such header)
/// does not limit it.
///
/// ```
/// use std::net::IpAddr;
/// use ringlimit::rules::{Format, RequestInfo, RuleDecision, RuleSet};
/// struct Request { ip: IpAddr, route: &'static str }
/// impl RequestInfo for Request {
///     fn client_ip(&self) -> Option<IpAddr> { Some(self.ip) }
///     fn route(&self) -> Option<&str> { Some(self.route) }
/// }
/// let rules = RuleSet::new();
/// rules.reload_str(Format::Toml, r#"
/// [[rules]]
/// name = "orders"
/// resource = "/api/order/*"
/// key = "global"
/// algorithm = "token_bucket"
/// rate = "1/s"
///
/// [[rules]]
/// name = "per-ip"
/// key = "client_ip"
/// algorithm = "sliding_window"
/// limit = 1000
/// window = "1m"
/// "#)?;
/// let order = Request { ip: [192, 0, 2, 1].into(), route: "/api/order/{id}" };
/// assert!(rules.check(&order)?.is_admitted());
/// match rules.check(&order)? {
///     RuleDecision::Refused { rule, .. } => assert_eq!(&*rule, "orders"),
///     admitted => panic!("{admitted:?}"),
/// }
/// let product = Request { route: "/api/product/{id}", ..order };
/// assert!(rules.check(&product)?.is_admitted()); // "orders" does not apply
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **Metrics** (feature `metrics`, [`policy::metrics`](crate::policy::metrics)): the
/// handles of each rule's counters and gauges are taken from the recorder installed when
/// the rules are built, at [`from_path`](RuleSet::from_path) and at every
/// [`reload_str`](Self::reload_str) / [`reload_path`](Self::reload_path) (a
/// [`Watcher`](crate::rules::Watcher) reloads on its own thread, so a thread-local recorder
/// never applies to it). Install the global recorder *before* loading the rules; rules
/// loaded before it record nothing until a reload, even of the same text (an unchanged
/// reload re-registers the handles and keeps every count):
///
/// ```
/// # #[cfg(feature = "metrics")] {
/// use metrics_util::debugging::DebuggingRecorder;
/// use ringlimit::rules::{Format, RequestInfo, RuleSet};
/// struct Request;
/// impl RequestInfo for Request {}
/// let text = "rules:\n  - {name: g, key: global, algorithm: fixed_window, rate: 10/s}\n";
/// let rules = RuleSet::new();
/// rules.reload_str(Format::Yaml, text)?; // no recorder yet: these handles record nothing
/// let recorder = DebuggingRecorder::new();
/// let snapshotter = recorder.snapshotter();
/// metrics::with_local_recorder(&recorder, || -> Result<(), Box<dyn std::error::Error>> {
///     rules.check(&Request)?; // not recorded
///     assert!(rules.reload_str(Format::Yaml, text)?.is_unchanged()); // re-registers
///     rules.check(&Request)?; // recorded
///     Ok(())
/// })?;
/// assert!(!snapshotter.snapshot().into_vec().is_empty());
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A reload zeroes the gauges of the rules it removes (gauges are set only by checks; a
/// check still in flight on the old rules may set them once more).
pub struct RuleSet<C: Clock + Clone + Send + Sync + 'static = TscClock> {
    pub(crate) current: ArcSwap<Compiled>,
    /// One reload at a time (checks never take it).
    reloading: Mutex<()>,
    clock: C,
}

/// The outcome of a [`RuleSet`] check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleDecision {
    /// Every rule that applies admitted the request.
    Admitted {
        /// The permits left under the tightest rule (`u64::MAX` if no rule applied).
        remaining: u64,
        /// That rule (`None` if no rule applied).
        rule: Option<Arc<str>>,
        /// How long until that rule counts nothing any more for this request's key (a
        /// fixed window's end, the time a sliding window or log takes to let this request
        /// out, a token bucket's refill to full), if no other request is admitted
        /// meanwhile; `None` if no rule applied. A token bucket's is an upper bound, by less
        /// than one token's period. See [`RuleDecision::reset_after`].
        reset_after: Option<Duration>,
        /// That rule's quota in the rules the request was checked against
        /// ([`RuleQuota::Unlimited`] if no rule applied): what HTTP headers advertise for this
        /// decision, even if a reload has changed the rule since (see [`RuleSet::quota`]).
        quota: RuleQuota,
    },
    /// A rule refused; what the rules before it granted was given back.
    Refused {
        /// The first rule, in the file's order, that refused.
        rule: Arc<str>,
        /// What it had available (fewer than asked).
        available: u64,
        /// When that rule could admit the same request, if no one else takes its permits
        /// meanwhile.
        retry_after: Duration,
        /// That rule's quota in the rules the request was checked against.
        quota: RuleQuota,
    },
}

impl RuleDecision {
    /// Whether the request was admitted.
    ///
    /// ```
    /// use ringlimit::rules::{RuleDecision, RuleQuota};
    /// let admitted = RuleDecision::Admitted { remaining: 3, rule: None, reset_after: None, quota: RuleQuota::Unlimited };
    /// assert!(admitted.is_admitted());
    /// ```
    pub fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted { .. })
    }

    /// The rule that refused, or the tightest that admitted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::rules::{RuleDecision, RuleQuota};
    /// use ringlimit::WindowQuota;
    /// let refused = RuleDecision::Refused {
    ///     rule: "per-user".into(),
    ///     available: 0,
    ///     retry_after: Duration::from_secs(1),
    ///     quota: RuleQuota::Window(WindowQuota::per_second(5)?),
    /// };
    /// assert_eq!(refused.rule(), Some("per-user"));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn rule(&self) -> Option<&str> {
        match self {
            Self::Admitted { rule, .. } => rule.as_deref(),
            Self::Refused { rule, .. } => Some(rule),
        }
    }

    /// When the rule that admitted is whole again (see [`RuleDecision::Admitted`]); `None`
    /// for a refusal (its `retry_after` says when the same request could be admitted) or
    /// when no rule applied.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::rules::{Format, RequestInfo, RuleSet};
    /// struct Request;
    /// impl RequestInfo for Request {
    ///     fn user(&self) -> Option<&str> { Some("alice") }
    /// }
    /// let clock = ManualClock::new();
    /// let rules = RuleSet::with_clock(clock.clone());
    /// rules.reload_str(Format::Yaml, "rules:\n  - {name: u, key: user, algorithm: fixed_window, rate: 10/min}\n")?;
    /// clock.advance(Duration::from_secs(20));
    /// // Counted until the minute's window ends, 40 s from now.
    /// assert_eq!(rules.check(&Request)?.reset_after(), Some(Duration::from_secs(40)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset_after(&self) -> Option<Duration> {
        match self {
            Self::Admitted { reset_after, .. } => *reset_after,
            Self::Refused { .. } => None,
        }
    }
}

impl RuleSet {
    /// A rule set of no rules yet, on the TSC clock: load rules with
    /// [`reload_path`](Self::reload_path) or [`reload_str`](Self::reload_str).
    ///
    /// ```
    /// use ringlimit::rules::RuleSet;
    /// struct Request;
    /// impl ringlimit::rules::RequestInfo for Request {}
    /// assert!(RuleSet::new().check(&Request)?.is_admitted());
    /// # Ok::<(), ringlimit::policy::PolicyError>(())
    /// ```
    pub fn new() -> Self {
        Self::with_clock(TscClock::new())
    }

    /// A rule set loaded from the file at `path` (its format from its extension).
    ///
    /// ```
    /// use ringlimit::rules::RuleSet;
    /// let path = std::env::temp_dir().join("ringlimit-doc-from-path.yaml");
    /// std::fs::write(&path, "rules:\n  - name: global\n    key: global\n    algorithm: fixed_window\n    rate: 10/s\n")?;
    /// let rules = RuleSet::from_path(&path)?;
    /// assert_eq!(rules.names(), ["global".into()]);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, RulesError> {
        let rules = Self::new();
        rules.reload_path(path)?;
        Ok(rules)
    }
}

impl Default for RuleSet {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> RuleSet<C> {
    /// A rule set of no rules yet whose limiters read `clock`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::rules::{Format, RequestInfo, RuleSet};
    /// struct Request;
    /// impl RequestInfo for Request {}
    /// let clock = ManualClock::new();
    /// let rules = RuleSet::with_clock(clock.clone());
    /// rules.reload_str(Format::Yaml, "rules:\n  - {name: g, key: global, algorithm: fixed_window, rate: 1/s}\n")?;
    /// assert!(rules.check(&Request)?.is_admitted());
    /// assert!(!rules.check(&Request)?.is_admitted());
    /// clock.advance(Duration::from_secs(1));
    /// assert!(rules.check(&Request)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_clock(clock: C) -> Self {
        Self {
            current: ArcSwap::from_pointee(Compiled::new(Vec::new(), Vec::new())),
            reloading: Mutex::new(()),
            clock,
        }
    }

    /// Checks one permit for `request`: see [`check_n`](Self::check_n).
    ///
    /// ```
    /// use ringlimit::rules::{Format, RequestInfo, RuleSet};
    /// struct Request;
    /// impl RequestInfo for Request {}
    /// let rules = RuleSet::new();
    /// rules.reload_str(Format::Toml, "[[rules]]\nname = 'g'\nkey = 'global'\nalgorithm = 'sliding_log'\nrate = '2/s'\n")?;
    /// assert!(rules.check(&Request)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check<R: RequestInfo + ?Sized>(&self, request: &R) -> Result<RuleDecision, PolicyError> {
        self.check_n(request, 1)
    }

    /// Checks `n` permits for `request` against the rules in force: admitted iff every rule
    /// that applies admits them, all or nothing. [`PolicyError`] when `n` exceeds a rule's
    /// limit, or a keyed rule is full of live keys (see [`Keyed`](crate::keyed::Keyed)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::rules::{Format, RequestInfo, RuleDecision, RuleQuota, RuleSet};
    /// use ringlimit::BucketQuota;
    /// struct Request;
    /// impl RequestInfo for Request {
    ///     fn api_key(&self) -> Option<&str> { Some("k1") }
    /// }
    /// let rules = RuleSet::with_clock(ManualClock::new());
    /// rules.reload_str(Format::Yaml, "rules:\n  - {name: api, key: api_key, algorithm: token_bucket, rate: 10/s, burst: 5}\n")?;
    /// // 2 tokens left; full again once the 3 taken are back, 100 ms each.
    /// assert_eq!(
    ///     rules.check_n(&Request, 3)?,
    ///     RuleDecision::Admitted {
    ///         remaining: 2,
    ///         rule: Some("api".into()),
    ///         reset_after: Some(Duration::from_millis(300)),
    ///         quota: RuleQuota::Bucket(BucketQuota::per_second(10)?.burst(5)?),
    ///     }
    /// );
    /// assert!(rules.check_n(&Request, 6).is_err()); // more than the burst, ever
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_n<R: RequestInfo + ?Sized>(
        &self,
        request: &R,
        n: u64,
    ) -> Result<RuleDecision, PolicyError> {
        let mut compiled = self.current.load();
        if compiled.next_expiry != u64::MAX && self.clock.now_nanos() >= compiled.next_expiry {
            self.compact();
            compiled = self.current.load();
        }
        let keys = compiled.keys_of(request);
        // The rule's name and quota from the rules checked (`compiled`), not from those in
        // force by the time the caller reads them: a reload may come in between.
        Ok(match compiled.policy.check_n(&keys, n)? {
            PolicyDecision::Admitted {
                remaining,
                tightest,
                reset_after,
            } => {
                let (rule, quota) = compiled.rule(tightest);
                RuleDecision::Admitted {
                    remaining,
                    rule,
                    reset_after,
                    quota,
                }
            }
            PolicyDecision::Refused {
                dimension,
                available,
                retry_after,
            } => {
                let (rule, quota) = compiled.rule(dimension);
                RuleDecision::Refused {
                    rule: rule.unwrap_or_else(|| dimension.into()),
                    available,
                    retry_after,
                    quota,
                }
            }
        })
    }

    /// Rebuilds the rules in force without the drains and retired rules that are over, so
    /// that their limiters go now rather than at the next reload (which may never come):
    /// by the first check that finds one over, unless a reload (or another check doing
    /// this) holds the reload lock, in which case a later check does it.
    #[cold]
    #[inline(never)]
    fn compact(&self) {
        if let Some(_reloading) = self.reloading.try_lock() {
            let current = self.current.load_full();
            if self.clock.now_nanos() >= current.next_expiry {
                self.current.store(Arc::new(current.compacted()));
            }
        }
    }

    /// Replaces the rules in force with those of `text`, in `format`, and says what changed;
    /// or, if `text` does not load, keeps them and says why. Changed rules keep their
    /// limiters' counts where the change can be made in place (see [`RuleSet`]).
    ///
    /// ```
    /// use ringlimit::rules::{Format, RequestInfo, RuleSet};
    /// struct Request;
    /// impl RequestInfo for Request {}
    /// let rules = RuleSet::new();
    /// rules.reload_str(Format::Yaml, "rules:\n  - {name: g, key: global, algorithm: fixed_window, rate: 1/min}\n")?;
    /// assert!(rules.check(&Request)?.is_admitted());
    /// let broken = rules.reload_str(Format::Yaml, "rules:\n  - {name: g, key: global, algorithm: fixed_window, rate: 2/mni}\n");
    /// assert!(broken.is_err());
    /// assert!(!rules.check(&Request)?.is_admitted()); // the old rule, its count kept
    /// let raised = rules.reload_str(Format::Yaml, "rules:\n  - {name: g, key: global, algorithm: fixed_window, rate: 2/min}\n")?;
    /// assert_eq!(raised.reconfigured, ["g".into()]);
    /// assert!(rules.check(&Request)?.is_admitted()); // the second of 2
    /// assert!(!rules.check(&Request)?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reload_str(&self, format: Format, text: &str) -> Result<ReloadReport, RulesError> {
        let rules = rule::check_all(file::parse(format, text)?.rules)?;
        let _reloading = self.reloading.lock();
        let current = self.current.load_full();
        let (compiled, report) = reload::reload(&current, rules, &self.clock)?;
        self.current.store(Arc::new(compiled));
        #[cfg(feature = "metrics")]
        {
            // Gauges are set only by checks: a rule gone would show its last values forever.
            use crate::policy::metrics::{UTILIZATION, WINDOW_COUNT};
            let renamed = report.renamed.iter().map(|(old, _)| old);
            for name in report.removed.iter().chain(renamed) {
                ::metrics::gauge!(WINDOW_COUNT, "rule" => name.clone()).set(0.0);
                ::metrics::gauge!(UTILIZATION, "rule" => name.clone()).set(0.0);
            }
        }
        Ok(report)
    }

    /// [`reload_str`](Self::reload_str) of the file at `path`, its format from its
    /// extension (`.toml`, `.yaml`, `.yml`).
    ///
    /// ```
    /// use ringlimit::rules::RuleSet;
    /// let path = std::env::temp_dir().join("ringlimit-doc-reload-path.toml");
    /// std::fs::write(&path, "rules = []\n")?;
    /// let rules = RuleSet::new();
    /// assert!(rules.reload_path(&path)?.is_unchanged());
    /// std::fs::write(&path, "rules = [\n")?;
    /// let error = rules.reload_path(&path).unwrap_err();
    /// assert_eq!(error.file(), Some(path.as_path()));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reload_path(&self, path: impl AsRef<Path>) -> Result<ReloadReport, RulesError> {
        let path = path.as_ref();
        let format = Format::of_path(path).ok_or_else(|| {
            RulesError::new("the file's extension names no format: use .toml, .yaml or .yml")
                .in_file(path)
        })?;
        let text = std::fs::read_to_string(path).map_err(|error| RulesError::io(path, error))?;
        self.reload_str(format, &text)
            .map_err(|error| error.in_file(path))
    }

    /// The quota of the rule in force named `name` (`None`: no such rule), read-only. What an
    /// HTTP response advertises (`RateLimit-Policy: "per-ip";q=100;w=60`) comes with the
    /// decision instead ([`RuleDecision`]'s `quota`: the rules the
    /// request was checked against, whatever a reload has made of them since).
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleQuota, RuleSet};
    /// use ringlimit::BucketQuota;
    /// let rules = RuleSet::new();
    /// rules.reload_str(Format::Yaml, "rules:\n  - {name: api, key: api_key, algorithm: token_bucket, rate: 10/s, burst: 20}\n")?;
    /// assert_eq!(rules.quota("api"), Some(RuleQuota::Bucket(BucketQuota::per_second(10)?.burst(20)?)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quota(&self, name: &str) -> Option<RuleQuota> {
        self.current
            .load()
            .rules
            .iter()
            .find(|in_force| &*in_force.rule.name == name)
            .map(|in_force| in_force.rule.quota.into())
    }

    /// The rules in force, by name, in the order they are checked.
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleSet};
    /// let rules = RuleSet::new();
    /// rules.reload_str(Format::Yaml, "rules:\n  - {name: a, key: user, algorithm: fixed_window, limit: -1}\n  - {name: b, key: global, algorithm: fixed_window, rate: 5/s}\n")?;
    /// assert_eq!(rules.names(), ["a".into(), "b".into()]);
    /// # Ok::<(), ringlimit::rules::RulesError>(())
    /// ```
    pub fn names(&self) -> Vec<Arc<str>> {
        self.current
            .load()
            .rules
            .iter()
            .map(|in_force| in_force.rule.name.clone())
            .collect()
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> fmt::Debug for RuleSet<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleSet")
            .field("rules", &self.names())
            .finish()
    }
}
