//! [`Rule`]: a rule checked whole (its fields' combination, its quota), from its text.

use std::collections::HashSet;
use std::sync::Arc;

use crate::cell::{LogConfig, SlidingConfig, WindowConfig};
use crate::{BucketQuota, ConfigError, Rate, WindowQuota};

use super::error::RulesError;
use super::file::{Algorithm, RuleText};
use super::request::{KeySource, Scope};
use super::units::{Limit, RuleRate};

/// The keys a keyed rule holds at most unless its `max_keys` says otherwise: bounded, so
/// that a flood of new keys (spoofed users, rotating addresses) cannot grow memory without
/// end; a new key finding the limiter full of live keys is refused, never admitted.
pub(crate) const DEFAULT_MAX_KEYS: u64 = 1_000_000;

/// What a rule limits with: its algorithm's quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quota {
    /// Nothing: the rule admits everything.
    Unlimited,
    FixedWindow(WindowQuota),
    SlidingWindow(WindowQuota),
    SlidingLog(WindowQuota),
    TokenBucket(BucketQuota),
}

impl Quota {
    /// The window's length, for the window algorithms.
    pub(crate) fn window(&self) -> Option<std::time::Duration> {
        match self {
            Self::FixedWindow(quota) | Self::SlidingWindow(quota) | Self::SlidingLog(quota) => {
                Some(quota.window_length())
            }
            Self::Unlimited | Self::TokenBucket(_) => None,
        }
    }
}

/// A rule's quota, as [`RuleSet::quota`](super::RuleSet::quota) reads it: what HTTP
/// headers advertise (ringlimit-tower's `RateLimit-Policy`), without the limiter itself.
///
/// ```
/// use ringlimit::rules::{Format, RuleQuota, RuleSet};
/// use ringlimit::WindowQuota;
/// let rules = RuleSet::new();
/// rules.reload_str(Format::Yaml, "rules:\n  - {name: per-ip, key: client_ip, algorithm: sliding_window, rate: 100/min}\n")?;
/// assert_eq!(rules.quota("per-ip"), Some(RuleQuota::Window(WindowQuota::per_minute(100)?)));
/// assert_eq!(rules.quota("absent"), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleQuota {
    /// The rule admits everything.
    Unlimited,
    /// A window or log rule: its limit per window.
    Window(WindowQuota),
    /// A token bucket rule: its rate and burst.
    Bucket(BucketQuota),
}

impl From<Quota> for RuleQuota {
    fn from(quota: Quota) -> Self {
        match quota {
            Quota::Unlimited => Self::Unlimited,
            Quota::FixedWindow(quota) | Quota::SlidingWindow(quota) | Quota::SlidingLog(quota) => {
                Self::Window(quota)
            }
            Quota::TokenBucket(quota) => Self::Bucket(quota),
        }
    }
}

/// A rule, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) name: Arc<str>,
    pub(crate) scope: Scope,
    pub(crate) key: KeySource,
    pub(crate) algorithm: Algorithm,
    pub(crate) quota: Quota,
    /// For keyed rules; 0 for global ones.
    pub(crate) max_keys: usize,
}

/// Checks every rule of a file, in order, and that their names are unique.
pub(crate) fn check_all(texts: Vec<RuleText>) -> Result<Vec<Rule>, RulesError> {
    let mut names = HashSet::new();
    texts
        .into_iter()
        .enumerate()
        .map(|(index, text)| {
            let rule = check(text).map_err(|error| match error.rule() {
                // A rule without a readable name is named by its place, as the parse does.
                None => error.in_rule(format!("rules[{index}]")),
                Some(_) => error,
            })?;
            if !names.insert(rule.name.clone()) {
                return Err(RulesError::of_field(
                    &rule.name,
                    "name",
                    "another rule has this name: names must be unique (reloads match rules by name)",
                ));
            }
            Ok(rule)
        })
        .collect()
}

fn check(text: RuleText) -> Result<Rule, RulesError> {
    let name = text.name.trim();
    if name.is_empty() {
        return Err(RulesError::new("a rule's name must not be empty").at_field("name"));
    }
    let error = |field: &str, reason: String| RulesError::of_field(name, field, reason);
    let quota = match text.algorithm {
        Algorithm::TokenBucket => bucket_quota(&text).map_err(|(field, why)| error(field, why))?,
        _ => window_quota(&text).map_err(|(field, why)| error(field, why))?,
    };
    let max_keys = match (&text.key, text.max_keys) {
        (KeySource::Global, Some(_)) => {
            return Err(error(
                "max_keys",
                "a global rule holds one limit, not one per key".into(),
            ))
        }
        (KeySource::Global, None) => 0,
        (_, max_keys) => {
            let max_keys = max_keys.map_or(DEFAULT_MAX_KEYS, |count| count.0);
            usize::try_from(max_keys).unwrap_or(usize::MAX)
        }
    };
    Ok(Rule {
        name: name.into(),
        scope: Scope::new(text.resource.as_deref()),
        key: text.key,
        algorithm: text.algorithm,
        quota,
        max_keys,
    })
}

type FieldError = (&'static str, String);

/// A window or log rule: `rate`, or `limit` and `window`.
fn window_quota(text: &RuleText) -> Result<Quota, FieldError> {
    let field = if text.rate.is_some() {
        "rate"
    } else {
        "window"
    };
    let quota = match window(text)? {
        None => return Ok(Quota::Unlimited),
        Some(quota) => quota,
    };
    fits(text, quota).map_err(|error| (field, error.to_string()))?;
    Ok(match text.algorithm {
        Algorithm::FixedWindow => Quota::FixedWindow(quota),
        Algorithm::SlidingLog => Quota::SlidingLog(quota),
        _ => Quota::SlidingWindow(quota),
    })
}

/// Whether the limiter `text`'s rule builds holds `quota`, checked by building its
/// configuration: a global fixed or sliding window holds every quota, while a log and the
/// keyed windows' cells hold smaller limits ([`ConfigError::LimitTooLarge`] naming theirs).
fn fits(text: &RuleText, quota: WindowQuota) -> Result<(), ConfigError> {
    let keyed = text.key != KeySource::Global;
    match text.algorithm {
        Algorithm::FixedWindow if keyed => WindowConfig::new(quota).map(drop),
        Algorithm::SlidingLog => LogConfig::new(quota).map(drop),
        // A sliding window rule counts in 10 buckets (the keyed cell's resolution): a window
        // of fewer nanoseconds cannot be split so.
        Algorithm::SlidingWindow if keyed => SlidingConfig::<10>::new(quota).map(drop),
        Algorithm::SlidingWindow => quota.buckets(10).map(drop),
        Algorithm::FixedWindow | Algorithm::TokenBucket => Ok(()),
    }
}

/// The window quota of a window or log rule, `None` for no limit.
fn window(text: &RuleText) -> Result<Option<WindowQuota>, FieldError> {
    let algorithm = text.algorithm.name();
    if text.burst.is_some() {
        return Err((
            "burst",
            format!("{algorithm} has no burst (only token_bucket has)"),
        ));
    }
    let (limit, window) = match (text.rate, text.limit, text.window) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            let field = if text.limit.is_some() {
                "limit"
            } else {
                "window"
            };
            return Err((
                field,
                "give either `rate` (such as `100/min`) or `limit` and `window`, not both".into(),
            ));
        }
        (Some(RuleRate::Unlimited), None, None) | (None, Some(Limit::Unlimited), _) => {
            return Ok(None)
        }
        (Some(RuleRate::Per { permits, per }), None, None) => (permits, per),
        (None, Some(Limit::At(limit)), Some(window)) => (limit, window.0),
        (None, Some(Limit::At(_)), None) => {
            return Err((
                "window",
                format!("{algorithm} with a `limit` needs a `window` (such as `1m`)"),
            ))
        }
        (None, None, _) => {
            return Err((
                "rate",
                format!(
                    "{algorithm} needs a `rate` (such as `100/min`), or a `limit` and a `window`"
                ),
            ))
        }
    };
    let field = if text.rate.is_some() { "rate" } else { "limit" };
    WindowQuota::per(limit, window)
        .map(Some)
        .map_err(|error| match error {
            ConfigError::ZeroWindow | ConfigError::WindowTooLong { .. } if text.rate.is_none() => {
                ("window", error.to_string())
            }
            _ => (field, error.to_string()),
        })
}

/// A token bucket rule: `rate` and an optional `burst` (the rate's permits, by default),
/// or `limit = -1`.
fn bucket_quota(text: &RuleText) -> Result<Quota, FieldError> {
    if text.window.is_some() {
        return Err((
            "window",
            "token_bucket has no window: its `rate` refills it and its `burst` bounds it".into(),
        ));
    }
    match (text.rate, text.limit) {
        (_, Some(Limit::At(_))) => Err((
            "limit",
            "token_bucket takes a `rate` and a `burst`, not a `limit` (except -1 for no limit)"
                .into(),
        )),
        (Some(_), Some(Limit::Unlimited)) => Err((
            "limit",
            "give either `rate` or `limit = -1`, not both".into(),
        )),
        (None, Some(Limit::Unlimited)) | (Some(RuleRate::Unlimited), None) => {
            if text.burst.is_some() {
                return Err(("burst", "an unlimited rule has no burst".into()));
            }
            Ok(Quota::Unlimited)
        }
        (None, None) => Err((
            "rate",
            "token_bucket needs a `rate` (such as `100/s`) and may have a `burst`".into(),
        )),
        (Some(RuleRate::Per { permits, per }), None) => {
            let rate = Rate::new(permits, per).map_err(|error| ("rate", error.to_string()))?;
            let burst = text.burst.map_or(permits, |burst| burst.0);
            BucketQuota::new(rate, burst)
                .map(Quota::TokenBucket)
                .map_err(|error| {
                    let field = if text.burst.is_some() {
                        "burst"
                    } else {
                        "rate"
                    };
                    (field, error.to_string())
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::file::{self, Format};

    fn checked(key: &str, algorithm: &str, rate: &str) -> Result<Vec<Rule>, RulesError> {
        let text = format!(
            "rules:\n  - {{name: big, key: \"{key}\", algorithm: {algorithm}, rate: {rate}}}\n"
        );
        check_all(file::parse(Format::Yaml, &text)?.rules)
    }

    /// The check holds a rule's quota to the limiter it builds: a global fixed or sliding
    /// window holds a limit past 2^20 − 1, a log and the keyed cells do not (the build of
    /// the global windows is left to the engine's tests: this is the check alone).
    #[test]
    fn limits_are_checked_against_the_rules_limiter() {
        for algorithm in ["sliding_window", "fixed_window"] {
            let rules = checked("global", algorithm, "10000000/h").unwrap();
            let quota = WindowQuota::per_hour(10_000_000).unwrap();
            assert_eq!(RuleQuota::from(rules[0].quota), RuleQuota::Window(quota));
        }
        for (key, algorithm) in [
            ("global", "sliding_log"),
            ("user", "sliding_log"),
            ("user", "fixed_window"),
            ("user", "sliding_window"),
        ] {
            let error = checked(key, algorithm, "10000000/h").unwrap_err();
            assert_eq!((error.rule(), error.field()), (Some("big"), Some("rate")));
            let refused = ConfigError::LimitTooLarge {
                limit: 10_000_000,
                max: (1 << 20) - 1,
            };
            assert_eq!(error.reason(), refused.to_string(), "{key} {algorithm}");
        }
        // Past the quota's own bound, every window rule is refused by the quota.
        let error = checked("global", "sliding_window", "2000000000000/h").unwrap_err();
        assert!(error.reason().contains("1099511627775"), "{error}");
        // A window too short for 10 buckets, global or keyed, as before.
        for key in ["global", "user"] {
            assert!(checked(key, "sliding_window", "1/5ns").is_err(), "{key}");
        }
    }
}
