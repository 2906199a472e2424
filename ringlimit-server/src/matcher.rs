//! The descriptor tree of each domain, and how a request's descriptor finds its limit:
//! entry by entry, the most specific match at each level (the exact value, then a
//! wildcard value, then the key alone), the limit of the node the last entry reached.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::{DescriptorConfig, DomainConfig, RateLimitConfig};

/// What one node's value matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// No value: any value, one counter per value.
    Any,
    /// This value only.
    Exact(String),
    /// `*` matches any run of characters; `shared`: every matching value, one counter.
    Wildcard { pattern: String, shared: bool },
}

impl Pattern {
    fn of(entry: &DescriptorConfig) -> Self {
        match &entry.value {
            None => Self::Any,
            Some(value) if value.contains('*') => Self::Wildcard {
                pattern: value.clone(),
                shared: entry.share_threshold,
            },
            Some(value) => Self::Exact(value.clone()),
        }
    }
}

/// Whether `value` matches `pattern`, where each `*` stands for any run of characters.
fn wildcard_matches(pattern: &str, value: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = value.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*` at all: an exact match
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A limit of the configuration, as the backends see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The domain and the path of keys and values that leads to it
    /// (`messaging.message_type_marketing.to_number`): its identity across reloads and its
    /// metric label (values are named only where the file names them).
    pub id: String,
    /// The same path with each part's length (`9:messaging/12:message_type=9:marketing/…`):
    /// unique where ids are not (`key: a_b` and `key: a, value: b` share the id `d.a_b`),
    /// it names the rule's limiter and prefixes its counters, in process and on Redis.
    pub key: String,
    /// The limit's `name`, for `replaces`.
    pub name: Option<String>,
    /// Names of the limits this one replaces.
    pub replaces: Vec<String>,
    /// The limit as configured.
    pub limit: Limit,
    /// Counts, never refuses.
    pub shadow: bool,
}

/// How much a rule admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Never counted, never refused.
    Unlimited,
    /// `requests` per `unit`, counted by `algorithm`.
    Counted {
        /// Requests per unit.
        requests: u64,
        /// The unit.
        unit: crate::config::Unit,
        /// How they are counted.
        algorithm: crate::config::Algorithm,
        /// A token bucket's burst.
        burst: Option<u64>,
        /// A sliding window's buckets (Redis).
        buckets: Option<u64>,
    },
}

impl Limit {
    fn of(config: &RateLimitConfig) -> Self {
        match (config.unlimited, config.unit, config.requests_per_unit) {
            (false, Some(unit), Some(requests)) => Self::Counted {
                requests,
                unit,
                algorithm: config.algorithm,
                burst: config.burst,
                buckets: config.buckets,
            },
            // `DomainConfig::parse` has checked that a counted limit has both.
            _ => Self::Unlimited,
        }
    }
}

#[derive(Debug)]
struct Node {
    key: String,
    pattern: Pattern,
    rule: Option<Arc<Rule>>,
    children: Vec<Node>,
}

/// Every domain's tree.
///
/// ```
/// use ringlimit_server::config::DomainConfig;
/// use ringlimit_server::matcher::Matcher;
/// let domain = DomainConfig::parse("d.yaml", "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")?;
/// let matcher = Matcher::new(&[domain]);
/// let found = matcher.find("d", &[("user", "alice")]).expect("a limit");
/// assert_eq!(found.rule.id, "d.user");
/// assert_eq!(found.rule.key, "1:d/4:user");
/// assert_eq!(found.counter, "1:d/4:user\u{1f}5:alice"); // each part with its length
/// assert!(matcher.find("d", &[("other", "x")]).is_none());
/// # Ok::<(), ringlimit_server::config::ConfigError>(())
/// ```
#[derive(Debug, Default)]
pub struct Matcher {
    domains: HashMap<String, Vec<Node>>,
}

/// A request descriptor's limit and the counter it counts in.
#[derive(Debug, Clone)]
pub struct Found {
    /// The rule.
    pub rule: Arc<Rule>,
    /// The counter's key: the rule's id and the request's values where the rule counts
    /// per value.
    pub counter: String,
}

impl Matcher {
    /// The trees of `domains`.
    pub fn new(domains: &[DomainConfig]) -> Self {
        fn build(list: &[DescriptorConfig], path: &str, unique: &str) -> Vec<Node> {
            list.iter()
                .map(|entry| {
                    let (step, unique) = match &entry.value {
                        Some(value) => (
                            format!("{path}.{}_{value}", entry.key),
                            format!("{unique}/{}={}", sized(&entry.key), sized(value)),
                        ),
                        None => (
                            format!("{path}.{}", entry.key),
                            format!("{unique}/{}", sized(&entry.key)),
                        ),
                    };
                    Node {
                        key: entry.key.clone(),
                        pattern: Pattern::of(entry),
                        rule: entry.rate_limit.as_ref().map(|limit| {
                            Arc::new(Rule {
                                id: step.clone(),
                                key: unique.clone(),
                                name: limit.name.clone(),
                                replaces: limit.replaces.iter().map(|r| r.name.clone()).collect(),
                                limit: Limit::of(limit),
                                shadow: entry.shadow_mode,
                            })
                        }),
                        children: build(&entry.descriptors, &step, &unique),
                    }
                })
                .collect()
        }
        Self {
            domains: domains
                .iter()
                .map(|d| {
                    let nodes = build(&d.descriptors, &d.domain, &sized(&d.domain));
                    (d.domain.clone(), nodes)
                })
                .collect(),
        }
    }

    /// Whether `domain` is configured.
    ///
    /// ```
    /// use ringlimit_server::{config::DomainConfig, matcher::Matcher};
    /// let matcher = Matcher::new(&[DomainConfig::parse("d.yaml", "domain: d\n")?]);
    /// assert!(matcher.has_domain("d") && !matcher.has_domain("e"));
    /// assert!(matcher.rules().is_empty());
    /// # Ok::<(), ringlimit_server::config::ConfigError>(())
    /// ```
    pub fn has_domain(&self, domain: &str) -> bool {
        self.domains.contains_key(domain)
    }

    /// Every rule, in tree order.
    pub fn rules(&self) -> Vec<Arc<Rule>> {
        fn walk(nodes: &[Node], out: &mut Vec<Arc<Rule>>) {
            for node in nodes {
                out.extend(node.rule.clone());
                walk(&node.children, out);
            }
        }
        let mut out = Vec::new();
        for nodes in self.domains.values() {
            walk(nodes, &mut out);
        }
        out
    }

    /// The limit of the descriptor `entries` in `domain`: `None` where no node matches
    /// every entry, level by level, or the node the last one reaches has no limit.
    pub fn find(&self, domain: &str, entries: &[(&str, &str)]) -> Option<Found> {
        let mut level = self.domains.get(domain)?;
        let mut counter = String::new();
        let mut reached = None;
        for (key, value) in entries {
            let node = best(level, key, value)?;
            // The counter names each request value the node counts apart: a value-less
            // node's, a wildcard's unless shared. A fixed value is in the rule's id. Each
            // value goes with its length, so that no two lists of values (whatever bytes
            // they hold) share a counter: the rule's path fixes which levels add one.
            match &node.pattern {
                Pattern::Exact(_) => {}
                Pattern::Wildcard { shared: true, .. } => {}
                _ => {
                    counter.push('\u{1f}');
                    counter.push_str(&sized(value));
                }
            }
            level = &node.children;
            reached = Some(node);
        }
        let rule = reached?.rule.clone()?;
        let counter = format!("{}{counter}", rule.key);
        Some(Found { rule, counter })
    }
}

/// `text` with its length before it (`5:alice`): a list of these reads back one way only.
fn sized(text: &str) -> String {
    format!("{}:{text}", text.len())
}

/// The most specific node of `level` for `key` and `value`.
fn best<'a>(level: &'a [Node], key: &str, value: &str) -> Option<&'a Node> {
    let of_key = || level.iter().filter(move |node| node.key == key);
    of_key()
        .find(|n| matches!(&n.pattern, Pattern::Exact(v) if v == value))
        .or_else(|| {
            of_key().find(|n| {
                matches!(&n.pattern, Pattern::Wildcard { pattern, .. } if wildcard_matches(pattern, value))
            })
        })
        .or_else(|| of_key().find(|n| n.pattern == Pattern::Any))
}

#[cfg(test)]
mod tests {
    use super::{wildcard_matches, Matcher};
    use crate::config::DomainConfig;

    #[test]
    fn distinct_values_never_share_a_counter() {
        let config = DomainConfig::parse(
            "d.yaml",
            "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit: {unit: second, requests_per_unit: 1}\n  - key: c\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
        )
        .unwrap();
        let matcher = Matcher::new(&[config]);
        let counter = |entries: &[(&str, &str)]| matcher.find("d", entries).unwrap().counter;
        let sep = "\u{1f}";
        assert_ne!(
            counter(&[("a", &format!("x{sep}y")), ("b", "z")]),
            counter(&[("a", "x"), ("b", &format!("y{sep}z"))])
        );
        assert_ne!(counter(&[("c", "")]), counter(&[("c", sep)]));
        assert_eq!(counter(&[("c", "v")]), counter(&[("c", "v")]));
    }

    #[test]
    fn wildcards_match_prefixes_middles_and_several_segments() {
        assert!(wildcard_matches("value*", "value1"));
        assert!(wildcard_matches("value*", "value"));
        assert!(!wildcard_matches("value*", "valu"));
        assert!(wildcard_matches("/api/*/action", "/api/123/action"));
        assert!(!wildcard_matches("/api/*/action", "/api/123/other"));
        assert!(wildcard_matches(
            "/api/*/resource/*/action",
            "/api/v1/resource/9/action"
        ));
        assert!(!wildcard_matches("a*a", "a"));
    }
}
