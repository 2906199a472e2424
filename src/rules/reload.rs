//! Reloading: which rules a new file adds, removes, reconfigures in place or replaces, and
//! the [`ReloadReport`] saying so.

use std::fmt;
use std::sync::Arc;

use crate::clock::Clock;
use crate::policy::Policy;

use super::error::RulesError;
use super::live::{self, Live};
use super::request::{Keys, RequestInfo};
use super::rule::{Quota, Rule};

/// What a reload changed, rule by rule (by name: a renamed rule is one removed and one
/// added).
///
/// ```
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
/// "#)?;
/// assert_eq!(second.reconfigured, ["per-user".into()]); // counts kept
/// assert_eq!(second.to_string(), "reconfigured per-user");
/// # Ok::<(), ringlimit::rules::RulesError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// Rules new in this file: they start limiting with fresh limiters.
    pub added: Vec<Arc<str>>,
    /// Rules gone from this file: they no longer limit.
    pub removed: Vec<Arc<str>>,
    /// Rules whose limit or resource changed, their algorithm, key and window staying:
    /// their live limiters were reconfigured in place, every permit already counted kept
    /// (a reload never lets a burst through them).
    pub reconfigured: Vec<Arc<str>>,
    /// Rules whose change no limiter can make in place (another algorithm, key, window or
    /// `max_keys`, limited to or from unlimited, a sliding log's limit above what its log
    /// holds): they start again with fresh limiters, counting from zero, and why.
    pub replaced: Vec<(Arc<str>, String)>,
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

/// One rule in force and its live limiter (`None` for an unlimited rule).
pub(crate) struct InForce {
    pub(crate) rule: Rule,
    pub(crate) live: Option<Arc<dyn Live>>,
}

/// The rules in force: each with its limiter, and the policy checking them in file order,
/// except sliding-log rules, checked after all others (in file order among themselves): a
/// log's grant cannot be given back, so a log checked before a rule that refuses would be
/// charged for a request that rule refused (found by an independent review).
pub(crate) struct Compiled {
    pub(crate) rules: Vec<InForce>,
    pub(crate) policy: Policy<Keys>,
}

impl Compiled {
    /// `rules` with their limiters, checked in order.
    pub(crate) fn new(rules: Vec<InForce>) -> Self {
        let mut policy = Policy::builder();
        let is_log = |in_force: &InForce| matches!(in_force.rule.quota, Quota::SlidingLog(_));
        let refundable_first = (rules.iter().enumerate().filter(|(_, r)| !is_log(r)))
            .chain(rules.iter().enumerate().filter(|(_, r)| is_log(r)));
        for (i, in_force) in refundable_first {
            if let Some(live) = &in_force.live {
                policy = policy.dimension(&in_force.rule.name, live.clone().dimension(i));
            }
        }
        Self {
            rules,
            policy: policy.build(),
        }
    }

    /// The keys `request` has for each rule (`None` for an unlimited rule, a rule out of
    /// its scope, a key the request lacks).
    pub(crate) fn keys_of<R: RequestInfo + ?Sized>(&self, request: &R) -> Keys {
        Keys(
            self.rules
                .iter()
                .map(|InForce { rule, live }| {
                    if live.is_none() || !rule.scope.applies_to(request) {
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

/// Why `new` cannot keep `old`'s limiter, if it cannot.
fn replacement(old: &Rule, new: &Rule) -> Option<&'static str> {
    let unlimited = |rule: &Rule| rule.quota == Quota::Unlimited;
    if unlimited(old) && unlimited(new) {
        // No limiter either side.
        return None;
    }
    if old.algorithm != new.algorithm {
        Some("its algorithm changed")
    } else if old.key != new.key {
        Some("its key changed")
    } else if unlimited(old) != unlimited(new) {
        Some("it changed between limited and unlimited")
    } else if old.max_keys != new.max_keys {
        Some("its max_keys changed")
    } else if old.quota.window() != new.quota.window() {
        Some("its window changed, which no window can change in place")
    } else {
        None
    }
}

/// What a reload does with one rule of the new file.
enum Step {
    /// The limiter in force, exactly as it is.
    Keep(Option<Arc<dyn Live>>),
    /// The limiter in force, retuned to the new quota; `spare` (fresh) if that fails.
    Retune {
        live: Arc<dyn Live>,
        spare: Option<Arc<dyn Live>>,
    },
    /// A fresh limiter.
    Fresh(Option<Arc<dyn Live>>),
}

/// The rules of a new file replacing `current`'s: each keeps, retunes or replaces its
/// limiter. Nothing in force changes until every fresh limiter is built; retuning (which
/// changes the limiters the current rules check, a moment before the new rules take over)
/// falls back on a fresh limiter, so nothing after it fails.
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
    let mut report = ReloadReport::default();
    let mut steps = Vec::with_capacity(rules.len());
    for rule in &rules {
        let name = rule.name.clone();
        let step = match current.find(&rule.name) {
            None => {
                report.added.push(name);
                Step::Fresh(fresh(rule)?)
            }
            Some(old) if old.rule == *rule => {
                report.unchanged.push(name);
                Step::Keep(old.live.clone())
            }
            Some(old) => match (replacement(&old.rule, rule), &old.live) {
                (Some(why), _) => {
                    report.replaced.push((name, why.to_owned()));
                    Step::Fresh(fresh(rule)?)
                }
                (None, Some(live)) if old.rule.quota != rule.quota => Step::Retune {
                    live: live.clone(),
                    spare: fresh(rule)?,
                },
                // The resource alone changed, or an unlimited rule's text.
                (None, live) => {
                    report.reconfigured.push(name);
                    Step::Keep(live.clone())
                }
            },
        };
        steps.push(step);
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
        .zip(steps)
        .map(|(rule, step)| {
            let live = match step {
                Step::Keep(live) | Step::Fresh(live) => live,
                Step::Retune { live, spare } => match live.retune(&rule.quota) {
                    Ok(()) => {
                        report.reconfigured.push(rule.name.clone());
                        Some(live)
                    }
                    Err(why) => {
                        report.replaced.push((rule.name.clone(), why));
                        spare
                    }
                },
            };
            InForce { rule, live }
        })
        .collect();
    // In the file's order, the retuned ones among the others.
    let place = |name: &Arc<str>| order.iter().position(|other| other == name);
    report.reconfigured.sort_by_key(place);
    report.replaced.sort_by_key(|(name, _)| place(name));
    Ok((Compiled::new(in_force), report))
}
