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
use super::rule::{Quota, Rule, RuleQuota};

/// What a reload changed, rule by rule, by name. A rule gone from the file whose key,
/// scope and quota a new rule has exactly is [`renamed`](Self::renamed): the new rule
/// keeps its limiters. A rule that comes back (re-added, or its key changed back) while
/// what its old limiters counted under that name and key has not yet expired gets them
/// back ([`revived`](Self::revived)): a reload never resets a limit.
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
    /// Rules gone from this file: they no longer limit (their limiters are kept, unchecked,
    /// until what they counted has expired, for the rule coming back: see
    /// [`revived`](Self::revived)).
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
    /// limiter counts from zero, and the old one is kept for a change back (see
    /// [`revived`](Self::revived)).
    pub replaced: Vec<(Arc<str>, String)>,
    /// The replaced rules whose old limiter keeps limiting beside the new one, and for how
    /// long from this reload: the old window's length, or the time the old token bucket
    /// takes to refill. A request is admitted only if both admit it (all or nothing); after
    /// that time the old limiter is skipped, and the first check after it (or the next
    /// reload) drops it. A reload that would leave a rule more than 16 draining is refused.
    pub draining: Vec<(Arc<str>, Duration)>,
    /// Rules exactly as they were.
    pub unchanged: Vec<Arc<str>>,
    /// Rules gone from the file (old name), each replaced by a new rule (new name) of the
    /// same key, scope and quota: the same rule renamed, which keeps its limiters and every
    /// permit they counted (neither listed as removed or added).
    pub renamed: Vec<(Arc<str>, Arc<str>)>,
    /// Rules (also listed as added, or as replaced when their key changed back) that got
    /// back the limiters they had under the same name and key before a reload removed the
    /// rule or changed its key: those limiters are kept, unchecked, until what they counted
    /// has expired, so that removing a rule and adding it back, or changing its key and back,
    /// never resets its limit.
    pub revived: Vec<Arc<str>>,
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
            && self.renamed.is_empty()
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
        if !self.renamed.is_empty() {
            let renamed: Vec<String> = (self.renamed.iter())
                .map(|(old, new)| format!("{old} to {new}"))
                .collect();
            parts.push(format!("renamed {}", renamed.join(", ")));
        }
        if !self.replaced.is_empty() {
            let replaced: Vec<String> = self
                .replaced
                .iter()
                .map(|(name, why)| format!("{name} ({why})"))
                .collect();
            parts.push(format!("replaced {}", replaced.join(", ")));
        }
        if !self.revived.is_empty() {
            parts.push(format!("revived {}", self.revived.join(", ")));
        }
        if parts.is_empty() {
            return f.write_str("unchanged");
        }
        f.write_str(&parts.join("; "))
    }
}

/// One rule in force, its live limiter (`None` for an unlimited rule), and the limiters it
/// replaced that still limit until what they counted expires.
#[derive(Clone)]
pub(crate) struct InForce {
    pub(crate) rule: Rule,
    pub(crate) live: Option<Arc<dyn Live>>,
    pub(crate) draining: Vec<Draining>,
}

/// The rules in force: each with its limiter, and the policy checking them in file order,
/// except sliding logs, checked after all others (in file order among themselves): a log's
/// grant cannot be given back, so a log checked before a rule that refuses would be charged
/// for a request that rule refused. A rule's draining
/// limiters come right before its limiter (each placed as a log or not by its own
/// algorithm), so that a log refusing during the drain charges only the old log, which the
/// drain drops.
pub(crate) struct Compiled {
    pub(crate) rules: Vec<InForce>,
    /// Rules removed, or whose key changed, whose limiters are kept (not checked) until
    /// what they counted has expired, for a rule coming back under the same name and key.
    pub(crate) retired: Vec<Retired>,
    pub(crate) policy: Policy<Keys>,
    /// The clock reading at which the first drain or retired rule ends (`u64::MAX`: none):
    /// the first check from then on rebuilds the rules without it (see
    /// [`compacted`](Self::compacted)), releasing its limiter.
    pub(crate) next_expiry: u64,
}

/// Most limiters a rule may have draining at once: a reload that would replace a rule
/// with as many still draining is refused (the rules in force stay, with every count),
/// rather than drop a drain, which could admit more than a rule in force would have.
pub(crate) const MAX_DRAINS: usize = 16;

/// A rule no longer in force under its name and key (removed, or its key changed), its
/// limiters kept until what they counted has expired.
#[derive(Clone)]
pub(crate) struct Retired {
    pub(crate) in_force: InForce,
    /// Its own limiter's drain time (`None`: unlimited, none).
    timer: Option<Draining>,
}

impl Retired {
    fn new(in_force: InForce, clock: &Arc<dyn Clock>) -> Self {
        let timer = (in_force.live.as_ref())
            .and_then(|live| Draining::new(&in_force.rule.quota, live.clone(), clock.clone()));
        Self { in_force, timer }
    }

    fn is_over(&self) -> bool {
        self.timer.as_ref().is_none_or(Draining::is_over)
            && self.in_force.draining.iter().all(Draining::is_over)
    }

    /// What is left of it once what is over goes: `None` if all of it.
    fn compacted(&self) -> Option<Self> {
        let mut kept = self.clone();
        kept.in_force
            .draining
            .retain(|draining| !draining.is_over());
        kept.timer = kept.timer.filter(|timer| !timer.is_over());
        (kept.timer.is_some() || !kept.in_force.draining.is_empty()).then_some(kept)
    }
}

impl Compiled {
    /// `rules` with their limiters, checked in order, and the `retired` ones kept.
    pub(crate) fn new(rules: Vec<InForce>, retired: Vec<Retired>) -> Self {
        let ends = (rules.iter().chain(retired.iter().map(|r| &r.in_force)))
            .flat_map(|in_force| in_force.draining.iter())
            .chain(retired.iter().filter_map(|r| r.timer.as_ref()))
            .map(Draining::until);
        let next_expiry = ends.min().unwrap_or(u64::MAX);
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
        Self {
            rules,
            retired,
            policy,
            next_expiry,
        }
    }

    /// These rules without the drains and retired rules that are over, whose limiters go
    /// with them.
    pub(crate) fn compacted(&self) -> Self {
        let rules = (self.rules.iter())
            .map(|in_force| {
                let mut in_force = in_force.clone();
                in_force.draining.retain(|draining| !draining.is_over());
                in_force
            })
            .collect();
        let retired = self.retired.iter().filter_map(Retired::compacted).collect();
        Self::new(rules, retired)
    }

    /// The keys `request` has for each rule (`None` for a rule that limits nothing, a rule
    /// out of its scope, a key the request lacks).
    pub(crate) fn keys_of<R: RequestInfo + ?Sized>(&self, request: &R) -> Keys {
        let mut keys = Keys::new();
        for in_force in &self.rules {
            let InForce {
                rule,
                live,
                draining,
            } = in_force;
            let applies =
                (live.is_some() || !draining.is_empty()) && rule.scope.applies_to(request);
            keys.push(applies.then(|| rule.key.key_of(request)).flatten());
        }
        keys
    }

    /// The name of rule `name` as the rule set shares it, and its quota (`None` and
    /// [`RuleQuota::Unlimited`] for no such rule).
    pub(crate) fn rule(&self, name: &str) -> (Option<Arc<str>>, RuleQuota) {
        match self.find(name) {
            Some(in_force) => (Some(in_force.rule.name.clone()), in_force.rule.quota.into()),
            None => (None, RuleQuota::Unlimited),
        }
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
    let in_file = |name: &Arc<str>| rules.iter().any(|rule| rule.name == *name);
    // Retired rules given back, and removed rules renamed, by index.
    let mut revived = vec![false; current.retired.len()];
    let mut renamed = vec![false; current.rules.len()];
    for rule in &rules {
        let name = rule.name.clone();
        let by_name = current.find(&rule.name);
        // The limiters to carry on: the rule's under the same key; else those it had under
        // this name and key before a reload removed it or changed its key, if not expired;
        // else (a new key) its own, counting from zero; else a removed rule's of the same
        // key, scope and quota (renamed).
        let retired = (by_name.is_none_or(|old| old.rule.key != rule.key))
            .then(|| {
                current.retired.iter().position(|retired| {
                    retired.in_force.rule.name == rule.name
                        && retired.in_force.rule.key == rule.key
                        && !retired.is_over()
                })
            })
            .flatten();
        let rename = (by_name.is_none() && retired.is_none())
            .then(|| {
                current.rules.iter().enumerate().position(|(i, old)| {
                    !renamed[i]
                        && !in_file(&old.rule.name)
                        && old.rule.key == rule.key
                        && old.rule.scope == rule.scope
                        && old.rule.quota == rule.quota
                })
            })
            .flatten();
        let old = if let Some(i) = retired {
            revived[i] = true;
            report.revived.push(name.clone());
            if by_name.is_none() {
                report.added.push(name.clone());
            }
            &current.retired[i].in_force
        } else if let Some(old) = by_name {
            old
        } else if let Some(i) = rename {
            renamed[i] = true;
            report
                .renamed
                .push((current.rules[i].rule.name.clone(), name.clone()));
            &current.rules[i]
        } else {
            report.added.push(name);
            plans.push(Plan {
                step: Step::Fresh(fresh(rule)?),
                draining: Vec::new(),
                max_keys: None,
            });
            continue;
        };
        // Listed as revived or renamed, not as unchanged or reconfigured too.
        let quiet = retired.is_some() || rename.is_some();
        // The limiters the rule's earlier replacements left draining, until they are over.
        let mut draining: Vec<Draining> = (old.draining.iter())
            .filter(|draining| !draining.is_over())
            .cloned()
            .collect();
        let at_cap = |draining: &[Draining]| {
            if draining.len() < MAX_DRAINS {
                return Ok(());
            }
            let next = draining
                .iter()
                .map(Draining::left)
                .min()
                .unwrap_or_default();
            Err(RulesError::new(format!(
                "it was replaced {MAX_DRAINS} times within its drain time: its old limiters \
                 all still limit, and another would be one too many (the next stops in \
                 {next:?}); the rules in force stay"
            ))
            .in_rule(&*rule.name))
        };
        let max_keys = (old.rule.max_keys != rule.max_keys).then_some(rule.max_keys);
        // A table holds no more keys than it was built for: a bound raised above it needs a
        // fresh limiter, the old one draining (its keys keep their counts until its window
        // passes).
        let outgrown = match (&old.live, max_keys) {
            (Some(live), Some(max_keys)) if !live.holds_keys(max_keys) => Some((
                "its max_keys rose above the keys its table was built for",
                true,
            )),
            _ => None,
        };
        let step = match (replacement(&old.rule, rule).or(outgrown), &old.live) {
            _ if old.rule == *rule => {
                if !quiet {
                    report.unchanged.push(name);
                }
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
                    at_cap(&draining)?;
                    why.push_str(&draining_note(old_drain.left()));
                    report.draining.push((name.clone(), old_drain.left()));
                    draining.push(old_drain);
                }
                report.replaced.push((name, why));
                Step::Fresh(fresh(rule)?)
            }
            (None, Some(live)) if old.rule.quota != rule.quota => {
                // A failed retune drains the old limiter: refused at the cap, as above.
                at_cap(&draining)?;
                Step::Retune {
                    live: live.clone(),
                    old: old.rule.quota,
                    spare: fresh(rule)?,
                }
            }
            // The resource or the bound on keys alone changed, or an unlimited rule's text.
            (None, live) => {
                if !quiet {
                    report.reconfigured.push(name);
                }
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
    report.removed = (current.rules.iter().enumerate())
        .filter(|(i, in_force)| !renamed[*i] && !in_file(&in_force.rule.name))
        .map(|(_, in_force)| in_force.rule.name.clone())
        .collect();
    // Kept for a rule coming back: the retired rules not given back, and the rules
    // removed, or whose key changed, now (each replacing one retired under the same name
    // and key).
    let mut retired: Vec<Retired> = (current.retired.iter().zip(&revived))
        .filter(|(_, revived)| !**revived)
        .filter_map(|(retired, _)| retired.compacted())
        .collect();
    for (in_force, renamed) in current.rules.iter().zip(&renamed) {
        let gone = !*renamed && !in_file(&in_force.rule.name);
        let rekeyed = (rules.iter())
            .any(|rule| rule.name == in_force.rule.name && rule.key != in_force.rule.key);
        if gone || rekeyed {
            retired.retain(|other| {
                other.in_force.rule.name != in_force.rule.name
                    || other.in_force.rule.key != in_force.rule.key
            });
            let mut in_force = in_force.clone();
            in_force.draining.retain(|draining| !draining.is_over());
            if let Some(kept) = Retired::new(in_force, &shared_clock).compacted() {
                retired.push(kept);
            }
        }
    }
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
    Ok((Compiled::new(in_force, retired), report))
}

/// What a replaced rule's report adds when its old limiters keep limiting for `left`.
fn draining_note(left: Duration) -> String {
    format!("; its old limiter keeps limiting beside the new one for {left:?}, until what it counted expires")
}

#[cfg(test)]
mod drain_release_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::MAX_DRAINS;
    use crate::clock::ManualClock;
    use crate::rules::{Format, RequestInfo, RuleSet};

    struct Req;
    impl RequestInfo for Req {
        fn user(&self) -> Option<&str> {
            Some("u")
        }
    }

    fn rule(algorithm: &str) -> String {
        format!("rules:\n  - {{name: a, key: user, algorithm: {algorithm}, rate: 3/min}}\n")
    }

    /// A drained limiter is dropped at the first check after its drain, not kept alive until
    /// the next reload.
    #[test]
    fn a_drained_limiter_goes_at_the_first_check_after_its_drain() {
        let clock = ManualClock::new();
        let rules = RuleSet::with_clock(clock.clone());
        rules
            .reload_str(Format::Yaml, &rule("fixed_window"))
            .unwrap();
        assert!(rules.check(&Req).unwrap().is_admitted());
        let old = rules.current.load().rules[0].live.clone().unwrap();
        let weak = Arc::downgrade(&old);
        drop(old);
        rules
            .reload_str(Format::Yaml, &rule("token_bucket"))
            .unwrap();
        assert!(weak.upgrade().is_some(), "draining");
        clock.advance(Duration::from_secs(3600));
        assert!(rules.check(&Req).unwrap().is_admitted());
        assert!(weak.upgrade().is_none(), "released without a reload");
        assert!(rules.current.load().rules[0].draining.is_empty());
        assert_eq!(rules.current.load().next_expiry, u64::MAX);
    }

    /// Rapid reloads cannot pile up drains without bound: a reload past the cap is refused.
    #[test]
    fn drains_are_capped_by_refusing_the_reload() {
        let clock = ManualClock::new();
        let rules = RuleSet::with_clock(clock.clone());
        rules
            .reload_str(Format::Yaml, &rule("fixed_window"))
            .unwrap();
        let mut refused = 0;
        for i in 0..50 {
            let algorithm = ["token_bucket", "fixed_window"][i % 2];
            if rules.reload_str(Format::Yaml, &rule(algorithm)).is_err() {
                refused += 1;
            }
            clock.advance(Duration::from_millis(100));
        }
        assert_eq!(rules.current.load().rules[0].draining.len(), MAX_DRAINS);
        // Past the cap, every other reload is refused (the one between it is unchanged).
        assert_eq!(refused, (50 - MAX_DRAINS) / 2);
        // Once the drains end, reloads go through again.
        clock.advance(Duration::from_secs(61));
        assert!(rules.check(&Req).unwrap().is_admitted());
        assert!(rules.current.load().rules[0].draining.is_empty());
        rules
            .reload_str(Format::Yaml, &rule("sliding_window"))
            .unwrap();
    }
}
