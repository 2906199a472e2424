//! Reloading: which rules a new file adds, removes, reconfigures in place or replaces, and
//! the [`ReloadReport`] saying so.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::policy::Policy;

use super::drain::{self, Draining};
use super::error::RulesError;
use super::live::{self, Live};
use super::request::{Keys, RequestInfo};
use super::rule::{Quota, Rule};

/// What a reload changed, rule by rule (by name: a renamed rule is one removed and one
/// added).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::rules::{Format, RuleSet};
/// let rules = RuleSet::new();
/// let first = rules.reload_str(Format::Toml, r#"
/// [[rules]]
/// name = "per-user"
/// key = "user"
/// algorithm = "sliding_window"
/// rate = "100/min"
/// "#)?;
/// assert_eq!(first.added, ["per-user".into()]);
/// let second = rules.reload_str(Format::Toml, r#"
/// [[rules]]
/// name = "per-user"
/// key = "user"
/// algorithm = "sliding_window"
/// rate = "200/min"
/// max_keys = 10000
/// "#)?;
/// assert_eq!(second.reconfigured, ["per-user".into()]); // counts kept
/// assert_eq!(second.to_string(), "reconfigured per-user");
/// // Another window: a fresh limiter, the old one limiting beside it for its last window.
/// let third = rules.reload_str(Format::Toml, r#"
/// [[rules]]
/// name = "per-user"
/// key = "user"
/// algorithm = "sliding_window"
/// rate = "5000/h"
/// "#)?;
/// assert_eq!(third.replaced[0].0, "per-user".into());
/// let (name, left) = &third.draining[0];
/// assert!(&**name == "per-user" && *left <= Duration::from_secs(60));
/// # Ok::<(), ringlimit::rules::RulesError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// Rules new in this file: they start limiting with fresh limiters.
    pub added: Vec<Arc<str>>,
    /// Rules gone from this file: they no longer limit.
    pub removed: Vec<Arc<str>>,
    /// Rules whose limit, resource or `max_keys` changed, their algorithm, key and window
    /// staying: their live limiters were reconfigured in place, every permit already counted
    /// kept (a reload never lets a burst through them).
    pub reconfigured: Vec<Arc<str>>,
    /// Rules whose change no limiter can make in place (another algorithm, key or window,
    /// limited to or from unlimited, a sliding log's limit above what its log holds): they
    /// get fresh limiters, and why. Under the same key, the old limiter keeps limiting
    /// beside the new one until what it counted expires (see
    /// [`draining`](Self::draining)), so no burst gets through; under another key, the new
    /// limiter counts from zero.
    pub replaced: Vec<(Arc<str>, String)>,
    /// The replaced rules whose old limiter keeps limiting beside the new one, and for how
    /// long from this reload: the old window's length, or the time the old token bucket
    /// takes to refill. A request is admitted only if both admit it (all or nothing); after
    /// that time the old limiter is skipped, and the next reload drops it.
    pub draining: Vec<(Arc<str>, Duration)>,
    /// Rules exactly as they were.
    pub unchanged: Vec<Arc<str>>,
}

impl ReloadReport {
    /// Whether the reload changed nothing.
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleSet};
    /// let rules = RuleSet::new();
    /// let text = "rules:\n  - name: global\n    key: global\n    algorithm: token_bucket\n    rate: 50000/s\n";
    /// assert!(!rules.reload_str(Format::Yaml, text)?.is_unchanged());
    /// assert!(rules.reload_str(Format::Yaml, text)?.is_unchanged());
    /// # Ok::<(), ringlimit::rules::RulesError>(())
    /// ```
    pub fn is_unchanged(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.reconfigured.is_empty()
            && self.replaced.is_empty()
    }
}

impl fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (what, names) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("reconfigured", &self.reconfigured),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what} {}", names.join(", ")));
            }
        }
        if !self.replaced.is_empty() {
            let replaced: Vec<String> = self
                .replaced
                .iter()
                .map(|(name, why)| format!("{name} ({why})"))
                .collect();
            parts.push(format!("replaced {}", replaced.join(", ")));
        }
        if parts.is_empty() {
            return f.write_str("unchanged");
        }
        f.write_str(&parts.join("; "))
    }
}

/// One rule in force, its live limiter (`None` for an unlimited rule), and the limiters it
/// replaced that still limit until what they counted expires.
pub(crate) struct InForce {
    pub(crate) rule: Rule,
    pub(crate) live: Option<Arc<dyn Live>>,
    pub(crate) draining: Vec<Draining>,
}

/// The rules in force: each with its limiter, and the policy checking them in file order,
/// except sliding logs, checked after all others (in file order among themselves): a log's
/// grant cannot be given back, so a log checked before a rule that refuses would be charged
/// for a request that rule refused (found by an independent review). A rule's draining
/// limiters come right before its limiter (each placed as a log or not by its own
/// algorithm), so that a log refusing during the drain charges only the old log, which the
/// drain drops.
pub(crate) struct Compiled {
    pub(crate) rules: Vec<InForce>,
    pub(crate) policy: Policy<Keys>,
}

impl Compiled {
    /// `rules` with their limiters, checked in order.
    pub(crate) fn new(rules: Vec<InForce>) -> Self {
        let mut dimensions = Vec::new();
        for (i, in_force) in rules.iter().enumerate() {
            let name = &in_force.rule.name;
            let most = drain::most_at_once(&in_force.rule.quota);
            for draining in in_force.draining.iter().filter(|d| !d.is_over()) {
                dimensions.push((draining.is_log(), name, draining.dimension(i, most)));
            }
            if let Some(live) = &in_force.live {
                let log = matches!(in_force.rule.quota, Quota::SlidingLog(_));
                dimensions.push((log, name, live.clone().dimension(i, false)));
            }
        }
        // Stable: refundable first, logs after, each in the file's order.
        dimensions.sort_by_key(|(log, _, _)| *log);
        let policy = (dimensions.into_iter())
            .fold(Policy::builder(), |policy, (_, name, dimension)| {
                policy.dimension(name, dimension)
            })
            .build();
        Self { rules, policy }
    }

    /// The keys `request` has for each rule (`None` for a rule that limits nothing, a rule
    /// out of its scope, a key the request lacks).
    pub(crate) fn keys_of<R: RequestInfo + ?Sized>(&self, request: &R) -> Keys {
        Keys(
            self.rules
                .iter()
                .map(|in_force| {
                    let InForce {
                        rule,
                        live,
                        draining,
                    } = in_force;
                    if live.is_none() && draining.is_empty() || !rule.scope.applies_to(request) {
                        return None;
                    }
                    rule.key.key_of(request)
                })
                .collect(),
        )
    }

    /// The name of rule `name` as the rule set shares it.
    pub(crate) fn name(&self, name: &str) -> Option<Arc<str>> {
        self.rules
            .iter()
            .find(|in_force| &*in_force.rule.name == name)
            .map(|in_force| in_force.rule.name.clone())
    }

    fn find(&self, name: &str) -> Option<&InForce> {
        self.rules
            .iter()
            .find(|in_force| &*in_force.rule.name == name)
    }
}

/// Why `new` cannot keep `old`'s limiter, if it cannot, and whether the old limiter can
/// keep limiting beside the new one while its counts expire (it can while the key stays:
/// under another key, its counts belong to keys the new rule does not have).
fn replacement(old: &Rule, new: &Rule) -> Option<(&'static str, bool)> {
    let unlimited = |rule: &Rule| rule.quota == Quota::Unlimited;
    if unlimited(old) && unlimited(new) {
        // No limiter either side.
        return None;
    }
    if old.key != new.key {
        Some(("its key changed", false))
    } else if old.algorithm != new.algorithm {
        Some(("its algorithm changed", true))
    } else if unlimited(old) != unlimited(new) {
        Some(("it changed between limited and unlimited", true))
    } else if old.quota.window() != new.quota.window() {
        Some((
            "its window changed, which no window can change in place",
            true,
        ))
    } else {
        None
    }
}

/// What a reload does with the limiter of one rule of the new file.
enum Step {
    /// The limiter in force, exactly as it is.
    Keep(Option<Arc<dyn Live>>),
    /// The limiter in force, retuned to the new quota; if that fails, `spare` (fresh), the
    /// old one draining.
    Retune {
        live: Arc<dyn Live>,
        old: Quota,
        spare: Option<Arc<dyn Live>>,
    },
    /// A fresh limiter.
    Fresh(Option<Arc<dyn Live>>),
}

/// One rule of a new file: what becomes of its limiter, the limiters that drain beside it,
/// and its bound on keys if the limiter kept must change it.
struct Plan {
    step: Step,
    draining: Vec<Draining>,
    max_keys: Option<usize>,
}

/// The rules of a new file replacing `current`'s: each keeps, retunes or replaces its
/// limiter (a replaced one draining beside the new one while the key stays). Nothing in
/// force changes until every fresh limiter is built; retuning and the bound on keys (which
/// change the limiters the current rules check, a moment before the new rules take over)
/// come last, and a failed retune falls back on a fresh limiter, so nothing after it fails.
pub(crate) fn reload<C>(
    current: &Compiled,
    rules: Vec<Rule>,
    clock: &C,
) -> Result<(Compiled, ReloadReport), RulesError>
where
    C: Clock + Clone + Send + Sync + 'static,
{
    let fresh = |rule: &Rule| {
        live::build(rule, clock)
            .map_err(|error| RulesError::new(error.to_string()).in_rule(&*rule.name))
    };
    let shared_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let drain = |quota: &Quota, live: &Arc<dyn Live>| {
        Draining::new(quota, live.clone(), shared_clock.clone())
    };
    let mut report = ReloadReport::default();
    let mut plans = Vec::with_capacity(rules.len());
    for rule in &rules {
        let name = rule.name.clone();
        let Some(old) = current.find(&rule.name) else {
            report.added.push(name);
            plans.push(Plan {
                step: Step::Fresh(fresh(rule)?),
                draining: Vec::new(),
                max_keys: None,
            });
            continue;
        };
        // The limiters the rule's earlier replacements left draining, until they are over.
        let mut draining: Vec<Draining> = (old.draining.iter())
            .filter(|draining| !draining.is_over())
            .cloned()
            .collect();
        let max_keys = (old.rule.max_keys != rule.max_keys).then_some(rule.max_keys);
        let step = match (replacement(&old.rule, rule), &old.live) {
            _ if old.rule == *rule => {
                report.unchanged.push(name);
                Step::Keep(old.live.clone())
            }
            (Some((why, drains)), live) => {
                let mut why = why.to_owned();
                if !drains {
                    why.push_str(": counting from zero");
                    draining.clear();
                } else if let Some(old_drain) =
                    live.as_ref().and_then(|l| drain(&old.rule.quota, l))
                {
                    why.push_str(&draining_note(old_drain.left()));
                    report.draining.push((name.clone(), old_drain.left()));
                    draining.push(old_drain);
                }
                report.replaced.push((name, why));
                Step::Fresh(fresh(rule)?)
            }
            (None, Some(live)) if old.rule.quota != rule.quota => Step::Retune {
                live: live.clone(),
                old: old.rule.quota,
                spare: fresh(rule)?,
            },
            // The resource or the bound on keys alone changed, or an unlimited rule's text.
            (None, live) => {
                report.reconfigured.push(name);
                Step::Keep(live.clone())
            }
        };
        let max_keys = match step {
            Step::Fresh(_) => None,
            Step::Keep(_) | Step::Retune { .. } => max_keys,
        };
        plans.push(Plan {
            step,
            draining,
            max_keys,
        });
    }
    report.removed = current
        .rules
        .iter()
        .filter(|in_force| !rules.iter().any(|rule| rule.name == in_force.rule.name))
        .map(|in_force| in_force.rule.name.clone())
        .collect();
    let order: Vec<Arc<str>> = rules.iter().map(|rule| rule.name.clone()).collect();
    let in_force = rules
        .into_iter()
        .zip(plans)
        .map(|(rule, plan)| {
            let Plan {
                step,
                mut draining,
                max_keys,
            } = plan;
            let live = match step {
                Step::Keep(live) | Step::Fresh(live) => live,
                Step::Retune { live, old, spare } => match live.retune(&rule.quota) {
                    Ok(()) => {
                        report.reconfigured.push(rule.name.clone());
                        Some(live)
                    }
                    Err(mut why) => {
                        if let Some(old_drain) = drain(&old, &live) {
                            why.push_str(&draining_note(old_drain.left()));
                            report.draining.push((rule.name.clone(), old_drain.left()));
                            draining.push(old_drain);
                        }
                        report.replaced.push((rule.name.clone(), why));
                        // A fresh limiter: the old one's bound stays with it.
                        return InForce {
                            rule,
                            live: spare,
                            draining,
                        };
                    }
                },
            };
            if let (Some(max_keys), Some(live)) = (max_keys, &live) {
                live.set_max_keys(max_keys);
            }
            InForce {
                rule,
                live,
                draining,
            }
        })
        .collect();
    // In the file's order, the retuned ones among the others.
    let place = |name: &Arc<str>| order.iter().position(|other| other == name);
    report.reconfigured.sort_by_key(place);
    report.replaced.sort_by_key(|(name, _)| place(name));
    report.draining.sort_by_key(|(name, _)| place(name));
    Ok((Compiled::new(in_force), report))
}

/// What a replaced rule's report adds when its old limiters keep limiting for `left`.
fn draining_note(left: Duration) -> String {
    format!("; its old limiter keeps limiting beside the new one for {left:?}, until what it counted expires")
}
