//! Policies, rules from files, their reload and watcher, their metrics and the alert rules.

#[cfg(feature = "rules")]
mod rules_common;

mod alerts;
#[cfg(feature = "keyed")]
mod policy;
#[cfg(feature = "metrics")]
mod policy_metrics;
#[cfg(feature = "keyed")]
mod policy_retry_after;
#[cfg(all(feature = "rules", feature = "metrics"))]
mod reload_metrics;
#[cfg(feature = "rules")]
mod rule_changes;
#[cfg(feature = "rules")]
mod rules;
#[cfg(feature = "rules")]
mod rules_fuzz;
#[cfg(feature = "watch")]
mod rules_watch;
#[cfg(all(feature = "watch", unix))]
mod watch_symlinks;
