//! What a policy records (feature `metrics`), read from `metrics-util`'s debugging recorder
//! installed on the test's thread: each family, per rule, with the values
//! `ringlimit::policy::metrics` documents, and never a user key.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use ringlimit::cell::WindowConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{FixedWindows, Keyed, KeyedError};
use ringlimit::policy::metrics::{REQUESTS_TOTAL, UTILIZATION, WINDOW_COUNT};
use ringlimit::policy::{Policy, PolicyBuilder};
use ringlimit::{BucketQuota, FixedWindow, Rate, RateLimiter, TokenBucket, WindowQuota};

/// Series as `name{label="value",...}` (labels sorted) to their values.
fn series(snapshotter: &Snapshotter) -> BTreeMap<String, f64> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let mut labels: Vec<String> = key
                .key()
                .labels()
                .map(|label| format!("{}=\"{}\"", label.key(), label.value()))
                .collect();
            labels.sort();
            let value = match value {
                DebugValue::Counter(count) => count as f64,
                DebugValue::Gauge(gauge) => gauge.into_inner(),
                DebugValue::Histogram(_) => panic!("no histograms"),
            };
            (
                format!("{}{{{}}}", key.key().name(), labels.join(",")),
                value,
            )
        })
        .collect()
}

fn requests(rule: &str, result: &str) -> String {
    format!("{REQUESTS_TOTAL}{{result=\"{result}\",rule=\"{rule}\"}}")
}

fn gauge(name: &str, rule: &str) -> String {
    format!("{name}{{rule=\"{rule}\"}}")
}

struct Request {
    user: Option<&'static str>,
}

/// A per-user fixed window of 3 and a global one of 5 on one manual clock.
fn user_then_global(
    clock: &ManualClock,
) -> (
    Arc<Keyed<String, FixedWindows, ManualClock>>,
    PolicyBuilder<Request>,
) {
    let minute = |n| WindowQuota::per(n, Duration::from_secs(60)).unwrap();
    let per_user = Arc::new(Keyed::with_config(
        WindowConfig::new(minute(3)).unwrap(),
        clock.clone(),
    ));
    let global = Arc::new(FixedWindow::builder(minute(5)).clock(clock.clone()).build());
    let builder = Policy::builder()
        .per_key("user", per_user.clone(), |r: &Request| {
            r.user.map(str::to_owned)
        })
        .shared("global", global);
    (per_user, builder)
}

#[test]
fn allowed_rejected_and_gauges_per_rule_without_keys() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    metrics::with_local_recorder(&recorder, || {
        let (per_user, builder) = user_then_global(&clock);
        let policy = builder.build();
        let alice = Request {
            user: Some("alice-4f1c"),
        };
        let bob = Request {
            user: Some("bob-9e2a"),
        };
        for _ in 0..3 {
            assert!(policy.check(&alice).unwrap().is_admitted());
        }
        // Refused by `user`: `global` is not asked.
        assert!(!policy.check(&alice).unwrap().is_admitted());
        assert!(policy.check(&bob).unwrap().is_admitted());
        assert!(policy.check(&bob).unwrap().is_admitted()); // global: 5 of 5
                                                            // `user` grants, `global` refuses: bob's grant is refunded and not recorded.
        assert!(!policy.check(&bob).unwrap().is_admitted());
        assert_eq!(per_user.available("bob-9e2a"), 1);
        // No key: `user` does not apply and records nothing; `global` refuses.
        assert!(!policy.check(&Request { user: None }).unwrap().is_admitted());
    });
    let series = series(&snapshotter);
    let expected = BTreeMap::from([
        (requests("user", "allowed"), 5.0),
        (requests("user", "rejected"), 1.0),
        (requests("global", "allowed"), 5.0),
        (requests("global", "rejected"), 2.0),
        // The key `user` last decided on and kept: bob's second, 2 of 3.
        (gauge(WINDOW_COUNT, "user"), 2.0),
        (gauge(UTILIZATION, "user"), 2.0 / 3.0),
        // The last refusal: 5 of 5.
        (gauge(WINDOW_COUNT, "global"), 5.0),
        (gauge(UTILIZATION, "global"), 1.0),
    ]);
    assert_eq!(series, expected);
    let text = format!("{series:?}");
    assert!(!text.contains("alice") && !text.contains("bob"), "{text}");
}

#[test]
fn the_limit_is_the_keys_tier_and_the_count_follows_the_window() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    let (per_user, builder) = user_then_global(&clock);
    // The handles are the recorder's from `build` on, wherever the checks run.
    let policy = metrics::with_local_recorder(&recorder, || builder.build());
    let gold = per_user.tier_of(
        WindowConfig::new(WindowQuota::per(10, Duration::from_secs(60)).unwrap()).unwrap(),
    );
    per_user.assign("carol".to_owned(), &gold);
    let carol = Request {
        user: Some("carol"),
    };
    for _ in 0..4 {
        assert!(policy.check(&carol).unwrap().is_admitted());
    }
    let series = self::series(&snapshotter);
    assert_eq!(series[&gauge(WINDOW_COUNT, "user")], 4.0);
    assert_eq!(series[&gauge(UTILIZATION, "user")], 0.4); // of the tier's 10, not 3
    assert_eq!(series[&gauge(UTILIZATION, "global")], 0.8);

    // A new window: the counts start again.
    clock.advance(Duration::from_secs(60));
    assert!(policy.check(&carol).unwrap().is_admitted());
    let series = self::series(&snapshotter);
    assert_eq!(series[&gauge(WINDOW_COUNT, "user")], 1.0);
    assert_eq!(series[&gauge(UTILIZATION, "user")], 0.1);
    assert_eq!(series[&gauge(UTILIZATION, "global")], 0.2);
}

#[test]
fn a_token_bucket_counts_the_missing_tokens_and_errors_are_rejections() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    metrics::with_local_recorder(&recorder, || {
        let bucket = Arc::new(
            TokenBucket::builder(BucketQuota::new(Rate::per_second(10).unwrap(), 8).unwrap())
                .clock(clock.clone())
                .build(),
        );
        let policy = Policy::<()>::builder()
            .shared("api", bucket.clone())
            .build();
        assert!(policy.check_n(&(), 6).unwrap().is_admitted());
        clock.advance(Duration::from_millis(200)); // 2 tokens back: 6 missing - 2 = 4
        assert!(policy.check(&()).unwrap().is_admitted());
        assert_eq!(bucket.available(), 3);
        // More than the burst: an error, counted as rejected, the gauges left as they are.
        let error = policy.check_n(&(), 9).unwrap_err();
        assert_eq!(&*error.dimension, "api");
    });
    let series = series(&snapshotter);
    assert_eq!(series[&requests("api", "allowed")], 2.0);
    assert_eq!(series[&requests("api", "rejected")], 1.0);
    assert_eq!(series[&gauge(WINDOW_COUNT, "api")], 5.0);
    assert_eq!(series[&gauge(UTILIZATION, "api")], 5.0 / 8.0);
}

#[test]
fn a_full_keyed_limiter_is_a_rejection() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let per_ip = Arc::new(
            Keyed::<u32, FixedWindows, _>::with_config(
                WindowConfig::new(WindowQuota::per_minute(2).unwrap()).unwrap(),
                ManualClock::new(),
            )
            .max_keys(1),
        );
        let policy = Policy::builder()
            .per_key("ip", per_ip, |ip: &u32| Some(*ip))
            .build();
        assert!(policy.check(&1).unwrap().is_admitted());
        let error = policy.check(&2).unwrap_err();
        assert_eq!(error.error, KeyedError::Full { max_keys: 1 });
    });
    let series = series(&snapshotter);
    assert_eq!(series[&requests("ip", "allowed")], 1.0);
    assert_eq!(series[&requests("ip", "rejected")], 1.0);
    assert_eq!(series[&gauge(UTILIZATION, "ip")], 0.5); // key 1's, from its check
}

#[test]
fn a_policy_built_before_the_recorder_records_nothing() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let global = Arc::new(FixedWindow::new(WindowQuota::per_minute(5).unwrap()));
    let policy = Policy::<()>::builder().shared("global", global).build();
    metrics::with_local_recorder(&recorder, || {
        assert!(policy.check(&()).unwrap().is_admitted());
    });
    assert!(series(&snapshotter).is_empty());
}

/// A rule whose old limiter drains beside its new one counts each check once: the new
/// limiter records the allowances, the old one only the refusals it makes.
#[cfg(feature = "rules")]
#[test]
fn a_draining_rule_counts_each_check_once() {
    use ringlimit::rules::{Format, RequestInfo, RuleSet};
    struct Everyone;
    impl RequestInfo for Everyone {}
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    let rules = RuleSet::with_clock(clock.clone());
    let file = |rate: &str| {
        format!(
            "rules:\n  - {{name: drained, key: global, algorithm: fixed_window, rate: {rate}}}\n"
        )
    };
    metrics::with_local_recorder(&recorder, || {
        rules.reload_str(Format::Yaml, &file("3/min")).unwrap();
        assert!(rules.check(&Everyone).unwrap().is_admitted());
        // Another window: the old limiter (2 of 3 left) drains beside the new one.
        rules.reload_str(Format::Yaml, &file("10/h")).unwrap();
        for _ in 0..4 {
            rules.check(&Everyone).unwrap();
        }
    });
    let series = series(&snapshotter);
    let requests =
        |result: &str| series[&format!("{REQUESTS_TOTAL}{{result=\"{result}\",rule=\"drained\"}}")];
    // 1 before the reload; after it, 2 admitted by both, 2 refused by the old one.
    assert_eq!((requests("allowed"), requests("rejected")), (3.0, 2.0));
}
