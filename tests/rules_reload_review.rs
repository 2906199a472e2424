//! Regressions of an independent review of the rules reload and its metrics: a reload
//! never resets a limit (rename, remove and re-add, key change and back), drain refusals
//! set no gauges, removed rules' gauges are zeroed.
#![cfg(all(feature = "rules", feature = "metrics"))]

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use ringlimit::clock::ManualClock;
use ringlimit::rules::{Format, RequestInfo, RuleSet};

struct Req;
impl RequestInfo for Req {
    fn user(&self) -> Option<&str> {
        Some("u1")
    }
}

fn admitted(rules: &RuleSet<ManualClock>, n: usize) -> usize {
    (0..n)
        .filter(|_| rules.check(&Req).unwrap().is_admitted())
        .count()
}

const A: &str = "rules:\n  - {name: a, key: global, algorithm: fixed_window, rate: 3/min}\n";
const B: &str = "rules:\n  - {name: b, key: global, algorithm: fixed_window, rate: 3/min}\n";
const A_USER: &str = "rules:\n  - {name: a, key: user, algorithm: fixed_window, rate: 3/min}\n";
const NONE: &str = "rules: []\n";

#[test]
fn a_rename_keeps_the_count() {
    let clock = ManualClock::new();
    let rules = RuleSet::with_clock(clock.clone());
    rules.reload_str(Format::Yaml, A).unwrap();
    assert_eq!(admitted(&rules, 10), 3);
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
    let clock = ManualClock::new();
    let rules = RuleSet::with_clock(clock.clone());
    rules.reload_str(Format::Yaml, A).unwrap();
    assert_eq!(admitted(&rules, 10), 3);
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
    let clock = ManualClock::new();
    let rules = RuleSet::with_clock(clock.clone());
    rules.reload_str(Format::Yaml, A).unwrap();
    assert_eq!(admitted(&rules, 10), 3);
    rules.reload_str(Format::Yaml, A_USER).unwrap();
    let back = rules.reload_str(Format::Yaml, A).unwrap();
    assert_eq!(back.revived, ["a".into()]);
    assert_eq!(admitted(&rules, 10), 0, "the global window's count is back");
}

fn value(snap: &Snapshotter, name: &str, rule: &str) -> Option<f64> {
    snap.snapshot()
        .into_vec()
        .into_iter()
        .find_map(|(key, _, _, value)| {
            let key = key.key();
            (key.name() == name
                && key
                    .labels()
                    .any(|label| label.key() == "rule" && label.value() == rule))
            .then(|| match value {
                DebugValue::Gauge(gauge) => gauge.into_inner(),
                DebugValue::Counter(counter) => counter as f64,
                DebugValue::Histogram(_) => f64::NAN,
            })
        })
}

#[test]
fn a_removed_rules_gauges_are_zeroed() {
    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let clock = ManualClock::new();
    let rules = RuleSet::with_clock(clock.clone());
    metrics::with_local_recorder(&recorder, || {
        rules.reload_str(Format::Yaml, A).unwrap();
        assert_eq!(admitted(&rules, 4), 3); // utilization 1.0 (a snapshot would reset it)
        rules.reload_str(Format::Yaml, NONE).unwrap();
    });
    assert_eq!(value(&snap, "ringlimit_utilization", "a"), Some(0.0));
    assert_eq!(value(&snap, "ringlimit_window_count", "a"), Some(0.0));
}

#[test]
fn a_drain_refusal_counts_the_rejection_and_sets_no_gauge() {
    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let clock = ManualClock::new();
    let rules = RuleSet::with_clock(clock.clone());
    metrics::with_local_recorder(&recorder, || {
        rules.reload_str(Format::Yaml, A).unwrap();
        assert_eq!(admitted(&rules, 2), 2); // utilization 2/3
        let to_bucket =
            "rules:\n  - {name: a, key: global, algorithm: token_bucket, rate: 100/s}\n";
        let report = rules.reload_str(Format::Yaml, to_bucket).unwrap();
        assert_eq!(report.draining.len(), 1);
        // 4 at once: more than the old limit (an ExceedsLimit the drain refuses).
        assert!(!rules.check_n(&Req, 4).unwrap().is_admitted());
    });
    // One snapshot (taking one resets what it read).
    let mut utilization = None;
    let mut rejected = None;
    for (key, _, _, value) in snap.snapshot().into_vec() {
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
