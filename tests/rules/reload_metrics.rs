//! A reload never resets a limit (rename, remove and re-add, key change and back), drain
//! refusals set no gauges, removed rules' gauges are zeroed.

use crate::rules_common;

use std::time::Duration;

use metrics::{SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::CompositeKey;
use ringlimit::clock::ManualClock;
use ringlimit::rules::{Format, RuleSet};
use rules_common::{manual, Request};

/// How many of `attempts` checks of user `u1`'s request are admitted.
fn admitted(rules: &RuleSet<ManualClock>, attempts: u64) -> u64 {
    rules_common::admitted(rules, &Request::user("u1"), attempts)
}

/// A rule set on a manual clock at 0 loaded with `A`, its window used up (3 of 10
/// admitted), and the clock.
fn used_up() -> (ManualClock, RuleSet<ManualClock>) {
    let (clock, rules) = manual();
    rules.reload_str(Format::Yaml, A).unwrap();
    assert_eq!(admitted(&rules, 10), 3);
    (clock, rules)
}

const A: &str = "rules:\n  - {name: a, key: global, algorithm: fixed_window, rate: 3/min}\n";
const B: &str = "rules:\n  - {name: b, key: global, algorithm: fixed_window, rate: 3/min}\n";
const A_USER: &str = "rules:\n  - {name: a, key: user, algorithm: fixed_window, rate: 3/min}\n";
const NONE: &str = "rules: []\n";

#[test]
fn a_rename_keeps_the_count() {
    let (clock, rules) = used_up();
    let report = rules.reload_str(Format::Yaml, B).unwrap();
    assert_eq!(report.renamed, [("a".into(), "b".into())]);
    assert!(report.added.is_empty() && report.removed.is_empty());
    assert_eq!(report.to_string(), "renamed a to b");
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        admitted(&rules, 10),
        0,
        "the renamed rule's window is used up"
    );
}

#[test]
fn remove_then_readd_keeps_the_count_until_it_expires() {
    let (clock, rules) = used_up();
    let removed = rules.reload_str(Format::Yaml, NONE).unwrap();
    assert_eq!(removed.removed, ["a".into()]);
    let back = rules.reload_str(Format::Yaml, A).unwrap();
    assert_eq!(back.added, ["a".into()]);
    assert_eq!(back.revived, ["a".into()]);
    assert_eq!(admitted(&rules, 10), 0, "the old window's count is back");
    // Once what it counted has expired, a removed rule's limiter goes.
    rules.reload_str(Format::Yaml, NONE).unwrap();
    clock.advance(Duration::from_secs(61));
    let back = rules.reload_str(Format::Yaml, A).unwrap();
    assert!(back.revived.is_empty());
    assert_eq!(admitted(&rules, 10), 3);
}

#[test]
fn a_key_change_and_back_keeps_the_count() {
    let (_, rules) = used_up();
    rules.reload_str(Format::Yaml, A_USER).unwrap();
    let back = rules.reload_str(Format::Yaml, A).unwrap();
    assert_eq!(back.revived, ["a".into()]);
    assert_eq!(admitted(&rules, 10), 0, "the global window's count is back");
}

/// What a recorder holds, from one snapshot (taking one resets what it read, gauges too).
type Metrics = Vec<(CompositeKey, Option<Unit>, Option<SharedString>, DebugValue)>;

/// Runs `during` on a rule set loaded with `A` (on a manual clock at 0) under a recorder of
/// its own; returns what the recorder holds then.
fn recorded(during: impl FnOnce(&RuleSet<ManualClock>)) -> Metrics {
    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let (_clock, rules) = manual();
    metrics::with_local_recorder(&recorder, || {
        rules.reload_str(Format::Yaml, A).unwrap();
        during(&rules);
    });
    snap.snapshot().into_vec()
}

/// The value of the metric `name` labelled `rule = rule` in `metrics`.
fn value(metrics: &Metrics, name: &str, rule: &str) -> Option<f64> {
    metrics.iter().find_map(|(key, _, _, value)| {
        let key = key.key();
        (key.name() == name
            && key
                .labels()
                .any(|label| label.key() == "rule" && label.value() == rule))
        .then(|| match value {
            DebugValue::Gauge(gauge) => gauge.into_inner(),
            DebugValue::Counter(counter) => *counter as f64,
            DebugValue::Histogram(_) => f64::NAN,
        })
    })
}

#[test]
fn a_removed_rules_gauges_are_zeroed() {
    let metrics = recorded(|rules| {
        assert_eq!(admitted(rules, 4), 3); // utilization 1.0 (a snapshot would reset it)
        rules.reload_str(Format::Yaml, NONE).unwrap();
    });
    assert_eq!(value(&metrics, "ringlimit_utilization", "a"), Some(0.0));
    assert_eq!(value(&metrics, "ringlimit_window_count", "a"), Some(0.0));
}

#[test]
fn a_drain_refusal_counts_the_rejection_and_sets_no_gauge() {
    let metrics = recorded(|rules| {
        assert_eq!(admitted(rules, 2), 2); // utilization 2/3
        let to_bucket =
            "rules:\n  - {name: a, key: global, algorithm: token_bucket, rate: 100/s}\n";
        let report = rules.reload_str(Format::Yaml, to_bucket).unwrap();
        assert_eq!(report.draining.len(), 1);
        // 4 at once: more than the old limit (an ExceedsLimit the drain refuses).
        let request = Request::user("u1");
        assert!(!rules.check_n(&request, 4).unwrap().is_admitted());
    });
    let mut utilization = None;
    let mut rejected = None;
    for (key, _, _, value) in metrics {
        let key = key.key();
        let label = |name: &str| {
            (key.labels())
                .find(|label| label.key() == name)
                .map(|label| label.value().to_owned())
        };
        assert_eq!(label("rule").as_deref(), Some("a"));
        match (key.name(), value) {
            ("ringlimit_utilization", DebugValue::Gauge(gauge)) => {
                utilization = Some(gauge.into_inner());
            }
            ("ringlimit_requests_total", DebugValue::Counter(count))
                if label("result").as_deref() == Some("rejected") =>
            {
                rejected = Some(count);
            }
            _ => {}
        }
    }
    let utilization = utilization.unwrap();
    assert!(
        (utilization - 2.0 / 3.0).abs() < 1e-9,
        "the drain's refusal set the gauge: {utilization}"
    );
    assert_eq!(rejected, Some(1), "the drain's refusal is counted");
}
