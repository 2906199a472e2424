//! Rules from real files, reloaded for real: what loads, what a reload keeps, and what a
//! broken file changes (nothing).

use crate::rules_common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringlimit::rules::{Format, RuleDecision, RuleQuota};
use ringlimit::WindowQuota;
use rules_common::{admitted, manual, yaml_rule, Request, TempDir};

fn yaml(rules: &[String]) -> String {
    format!("rules:\n{}", rules.concat())
}

fn example(name: &str) -> String {
    let path = format!("{}/docs/rules/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("the example rules file")
}

#[test]
fn the_example_files_load_from_disk_and_decide_alike() {
    let dir = TempDir::new("rules-example");
    let toml = dir.write("service.toml", &example("service.toml"));
    let yaml = dir.write("service.yaml", &example("service.yaml"));
    let (_, from_toml) = manual();
    let (_, from_yaml) = manual();
    let report = from_toml
        .reload_path(&toml)
        .expect("the TOML example loads");
    assert_eq!(
        report.added.iter().map(|n| &**n).collect::<Vec<_>>(),
        [
            "global",
            "per-api",
            "per-ip",
            "per-user",
            "channel-alipay",
            "channel-bank-transfer",
            "channel-internal"
        ]
    );
    from_yaml
        .reload_path(&yaml)
        .expect("the YAML example loads");
    assert_eq!(from_toml.names(), from_yaml.names());

    let user = Request {
        headers: vec![("x-user-id".into(), "42".into())],
        ip: Some("203.0.113.9".parse().unwrap()),
        route: Some("/api/order/{id}".into()),
        ..Request::default()
    };
    let bank = Request {
        route: Some("pay/bank-transfer".into()),
        ..Request::default()
    };
    let internal = Request {
        route: Some("pay/internal".into()),
        ..Request::default()
    };
    for rules in [&from_toml, &from_yaml] {
        assert_eq!(admitted(rules, &user, 150), 100, "per user, 100 a minute");
        assert_eq!(
            rules.check(&user).unwrap().rule(),
            Some("per-user"),
            "the refusing rule is named"
        );
        assert_eq!(
            admitted(rules, &bank, 80),
            50,
            "the bank channel, 50 a second"
        );
        assert_eq!(
            admitted(rules, &internal, 80),
            80,
            "the internal channel is -1"
        );
    }
}

/// Each algorithm, global and keyed: a rule's limit spent, then raised by one or changed
/// at the same size; after the reload, the spent permits still count.
#[test]
fn a_reload_never_lets_a_burst_through() {
    let cases = [
        ("fixed_window", "rate: 5/min", "rate: 6/min"),
        ("sliding_window", "rate: 5/min", "rate: 6/min"),
        ("sliding_log", "rate: 5/min", "rate: 6/min"),
        (
            "fixed_window",
            "limit: 5, window: 1m",
            "limit: 6, window: 1m",
        ),
        ("token_bucket", "rate: 5/min", "rate: 6/min"),
        (
            "token_bucket",
            "rate: 5/min, burst: 5",
            "rate: 50/min, burst: 6",
        ),
    ];
    for (algorithm, before, raised) in cases {
        for key in ["global", "user"] {
            let what = format!("{algorithm} {key}: {before} -> {raised}");
            let (_, rules) = manual();
            let request = Request::user("alice");
            let file = |params: &str| yaml(&[yaml_rule("r", key, algorithm, params)]);
            if algorithm == "sliding_log" {
                // A log holds the limit it was built with: built for 6, it rises back to 6
                // in place (above, it would be replaced, and say so).
                rules.reload_str(Format::Yaml, &file(raised)).unwrap();
            }
            rules.reload_str(Format::Yaml, &file(before)).unwrap();
            assert_eq!(admitted(&rules, &request, 10), 5, "{what}: the limit");

            // The same size, another resource (that still applies): nothing more.
            let rescoped = format!("{before}, resource: \"*\"");
            let mut with_route = request.clone();
            with_route.route = Some("/x".into());
            let report = rules.reload_str(Format::Yaml, &file(&rescoped)).unwrap();
            assert_eq!(report.reconfigured, ["r".into()], "{what}");
            assert_eq!(admitted(&rules, &with_route, 10), 0, "{what}: same size");

            // One more permit: at most one more admission (a window: exactly one).
            let report = rules.reload_str(Format::Yaml, &file(raised)).unwrap();
            assert_eq!(report.reconfigured, ["r".into()], "{what}: {report}");
            assert!(report.replaced.is_empty(), "{what}: {report}");
            let more = admitted(&rules, &request, 10);
            if algorithm == "token_bucket" && key == "global" {
                // A shared bucket keeps its permits available across a new burst (0 here),
                // a keyed one keeps its debt (a full bucket stays full): 1 here.
                assert_eq!(more, 0, "{what}");
            } else {
                assert_eq!(more, 1, "{what}");
            }
        }
    }
}

#[test]
fn a_change_no_limiter_can_make_in_place_is_reported_as_replaced() {
    let (_, rules) = manual();
    let request = Request::user("bob");
    let file =
        |algorithm: &str, key: &str, params: &str| yaml(&[yaml_rule("r", key, algorithm, params)]);
    rules
        .reload_str(Format::Yaml, &file("fixed_window", "user", "rate: 2/min"))
        .unwrap();
    assert_eq!(admitted(&rules, &request, 5), 2);
    for (algorithm, key, params, why) in [
        ("fixed_window", "user", "rate: 2/h", "window"),
        ("sliding_window", "user", "rate: 2/h", "algorithm"),
        ("sliding_window", "api_key", "rate: 2/h", "key"),
        ("sliding_window", "api_key", "rate: -1", "unlimited"),
        ("sliding_window", "api_key", "rate: 2/h", "unlimited"),
    ] {
        let report = rules
            .reload_str(Format::Yaml, &file(algorithm, key, params))
            .unwrap();
        assert_eq!(report.replaced.len(), 1, "{report}");
        assert!(report.replaced[0].1.contains(why), "{report}");
    }
    // `max_keys` is a bound, changed in place.
    let report = rules
        .reload_str(
            Format::Yaml,
            &file("sliding_window", "api_key", "rate: 2/h, max_keys: 10"),
        )
        .unwrap();
    assert_eq!(report.reconfigured, ["r".into()], "{report}");
    // A log raised within the room its ring has (3 for a limit of 2) is reconfigured; above
    // it, replaced, and says so.
    rules
        .reload_str(Format::Yaml, &file("sliding_log", "user", "rate: 2/min"))
        .unwrap();
    let report = rules
        .reload_str(Format::Yaml, &file("sliding_log", "user", "rate: 3/min"))
        .unwrap();
    assert_eq!(report.reconfigured, ["r".into()], "{report}");
    let report = rules
        .reload_str(Format::Yaml, &file("sliding_log", "user", "rate: 10/min"))
        .unwrap();
    assert!(report.replaced[0].1.contains("log"), "{report}");
    // Lowered, it is reconfigured.
    let report = rules
        .reload_str(Format::Yaml, &file("sliding_log", "user", "rate: 1/min"))
        .unwrap();
    assert_eq!(report.reconfigured, ["r".into()], "{report}");
}

/// A keyed rule's table holds the keys it was built for: `max_keys` raised above them
/// replaces the limiter, the old one draining (every key keeps its count until its window
/// passes), and the new one has room for the new bound; lowered, or raised back within it,
/// it changes in place.
#[test]
fn max_keys_raised_above_the_table_replaces_the_limiter_and_keeps_every_count() {
    let (_, rules) = manual();
    let file = |max_keys: u64| {
        yaml(&[yaml_rule(
            "r",
            "user",
            "fixed_window",
            &format!("rate: 1/h, max_keys: {max_keys}"),
        )])
    };
    rules.reload_str(Format::Yaml, &file(4)).unwrap();
    let users: Vec<_> = (0..12).map(|u| Request::user(&format!("u{u}"))).collect();
    // Twice each: admitted, refused, or refused `Full` once four keys are held.
    let first: Vec<u64> = users
        .iter()
        .map(|user| {
            (0..2)
                .filter(|_| rules.check(user).is_ok_and(|d| d.is_admitted()))
                .count() as u64
        })
        .collect();
    assert_eq!(first, [1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], "four keys fit");
    let report = rules.reload_str(Format::Yaml, &file(2)).unwrap();
    assert_eq!(report.reconfigured, ["r".into()], "{report}");
    let report = rules.reload_str(Format::Yaml, &file(4)).unwrap();
    assert_eq!(report.reconfigured, ["r".into()], "{report}");
    let report = rules.reload_str(Format::Yaml, &file(100)).unwrap();
    assert_eq!(report.replaced.len(), 1, "{report}");
    assert!(report.replaced[0].1.contains("max_keys"), "{report}");
    // The four admitted keep their count (the old limiter drains); the eight others get in.
    let again: Vec<u64> = users.iter().map(|user| admitted(&rules, user, 2)).collect();
    assert_eq!(again[..4], [0, 0, 0, 0], "{again:?}");
    assert_eq!(again[4..], [1; 8], "{again:?}");
}

#[test]
fn a_broken_file_keeps_the_rules_in_force_and_says_why() {
    let dir = TempDir::new("rules-broken");
    let (_, rules) = manual();
    let good = "[[rules]]\nname = \"per-user\"\nkey = \"user\"\nalgorithm = \"fixed_window\"\nrate = \"2/min\"\n";
    let path = dir.write("rules.toml", good);
    rules.reload_path(&path).unwrap();
    let alice = Request::user("alice");
    assert_eq!(admitted(&rules, &alice, 1), 1);

    let broken = [
        (good.replace("2/min", "2/mni"), Some("rate"), Some(5)),
        (good.replace("rate", "rat"), Some("rat"), Some(5)),
        (
            good.replace("fixed_window", "fixed"),
            Some("algorithm"),
            Some(4),
        ),
        (good.replace("\"user\"", "\"usr\""), Some("key"), Some(3)),
        (
            good.replace("rate = \"2/min\"", "limit = 2"),
            Some("window"),
            None,
        ),
        (good.replace("]]\nname", "]\nname"), None, Some(1)),
    ];
    for (text, field, line) in broken {
        std::fs::write(&path, &text).unwrap();
        let error = rules.reload_path(&path).unwrap_err();
        assert_eq!(error.file(), Some(path.as_path()), "{error}");
        assert_eq!(error.field(), field, "{error}");
        assert_eq!(error.line(), line, "{error}");
        if field.is_some() {
            assert_eq!(error.rule(), Some("per-user"), "{error}");
        }
        assert!(
            error.to_string().starts_with(&*path.to_string_lossy()),
            "{error}"
        );
        // The old rule, its count of 1 kept: 1 more.
        assert_eq!(rules.names(), ["per-user".into()]);
    }
    assert_eq!(admitted(&rules, &alice, 5), 1);

    let missing = rules
        .reload_path(dir.path().join("absent.toml"))
        .unwrap_err();
    assert!(std::error::Error::source(&missing).is_some(), "{missing}");
    let unknown = rules.reload_path(dir.path().join("rules.ini")).unwrap_err();
    assert!(unknown.reason().contains("extension"), "{unknown}");
    assert_eq!(rules.names(), ["per-user".into()]);
}

#[test]
fn removed_rules_stop_limiting_and_new_rules_start() {
    let (clock, rules) = manual();
    let request = Request {
        user: Some("u".into()),
        api_key: Some("k".into()),
        ..Request::default()
    };
    let per_user = yaml_rule("per-user", "user", "fixed_window", "rate: 1/min");
    let per_key = yaml_rule("per-key", "api_key", "token_bucket", "rate: 2/min");
    rules
        .reload_str(Format::Yaml, &yaml(std::slice::from_ref(&per_user)))
        .unwrap();
    assert_eq!(admitted(&rules, &request, 3), 1);
    let report = rules.reload_str(Format::Yaml, &yaml(&[per_key])).unwrap();
    assert_eq!(report.removed, ["per-user".into()]);
    assert_eq!(report.added, ["per-key".into()]);
    assert_eq!(report.to_string(), "added per-key; removed per-user");
    assert_eq!(
        admitted(&rules, &request, 5),
        2,
        "per-user is gone, per-key starts"
    );
    // Back again within its window: its old limiter back, its count kept (a reload never
    // resets a limit).
    let report = (rules.reload_str(Format::Yaml, &yaml(std::slice::from_ref(&per_user)))).unwrap();
    assert_eq!(report.added, ["per-user".into()]);
    assert_eq!(report.revived, ["per-user".into()]);
    assert_eq!(admitted(&rules, &request, 3), 0);
    // Removed, and back after its window: its old limiter gone, a fresh one.
    rules.reload_str(Format::Yaml, "rules: []\n").unwrap();
    clock.advance(Duration::from_secs(60));
    let report = rules.reload_str(Format::Yaml, &yaml(&[per_user])).unwrap();
    assert_eq!(report.added, ["per-user".into()]);
    assert!(report.revived.is_empty());
    assert_eq!(admitted(&rules, &request, 3), 1);
}

#[test]
fn keys_come_from_the_request() {
    let (_, rules) = manual();
    rules
        .reload_str(
            Format::Yaml,
            &yaml(&[
                yaml_rule(
                    "by-header",
                    "header:X-Tenant",
                    "fixed_window",
                    "rate: 1/min",
                ),
                yaml_rule("by-ip", "client_ip", "fixed_window", "rate: 1/min"),
                yaml_rule("by-ip48", "client_ip/48", "fixed_window", "rate: 2/min"),
                yaml_rule("by-route", "route", "fixed_window", "rate: 1/min"),
            ]),
        )
        .unwrap();
    let tenant = Request::header("x-tenant", "acme");
    assert!(rules.check(&tenant).unwrap().is_admitted());
    assert_eq!(rules.check(&tenant).unwrap().rule(), Some("by-header"));
    assert!(rules
        .check(&Request::header("X-TENANT", "other"))
        .unwrap()
        .is_admitted());

    // One /64, one key; another /64 of the same /48 shares the /48 rule's limit of 2.
    assert!(rules
        .check(&Request::ip("2001:db8:1:2::1"))
        .unwrap()
        .is_admitted());
    let same64 = rules.check(&Request::ip("2001:db8:1:2::ffff")).unwrap();
    assert_eq!(same64.rule(), Some("by-ip"));
    assert!(rules
        .check(&Request::ip("2001:db8:1:3::1"))
        .unwrap()
        .is_admitted());
    let same48 = rules.check(&Request::ip("2001:db8:1:4::1")).unwrap();
    assert_eq!(same48.rule(), Some("by-ip48"));
    // IPv4 and its mapped form are one key.
    assert!(rules
        .check(&Request::ip("192.0.2.1"))
        .unwrap()
        .is_admitted());
    assert!(!rules
        .check(&Request::ip("::ffff:192.0.2.1"))
        .unwrap()
        .is_admitted());

    assert!(rules.check(&Request::route("/a")).unwrap().is_admitted());
    assert!(!rules.check(&Request::route("/a")).unwrap().is_admitted());
    assert!(rules.check(&Request::route("/b")).unwrap().is_admitted());
    // A request with none of the keys is not limited by any rule.
    for _ in 0..10 {
        assert_eq!(
            rules.check(&Request::default()).unwrap(),
            RuleDecision::Admitted {
                remaining: u64::MAX,
                rule: None,
                reset_after: None,
                quota: RuleQuota::Unlimited,
            }
        );
    }
}

#[test]
fn resources_scope_rules_by_route() {
    let (_, rules) = manual();
    rules
        .reload_str(
            Format::Toml,
            r#"
[[rules]]
name = "orders"
resource = "/api/order/*"
key = "global"
algorithm = "fixed_window"
rate = "1/min"

[[rules]]
name = "login"
resource = "/login"
key = "global"
algorithm = "fixed_window"
rate = "2/min"
"#,
        )
        .unwrap();
    assert_eq!(admitted(&rules, &Request::route("/api/order/{id}"), 3), 1);
    assert_eq!(admitted(&rules, &Request::route("/api/order/list"), 3), 0);
    assert_eq!(admitted(&rules, &Request::route("/login"), 3), 2);
    assert_eq!(admitted(&rules, &Request::route("/login/x"), 3), 3);
    assert_eq!(admitted(&rules, &Request::default(), 3), 3);
}

#[test]
fn unlimited_rules_admit_everything() {
    let (_, rules) = manual();
    for (algorithm, params) in [
        ("fixed_window", "limit: -1"),
        ("sliding_window", "limit: unlimited"),
        ("sliding_log", "rate: -1"),
        ("token_bucket", "rate: unlimited"),
        ("token_bucket", "limit: -1"),
        ("fixed_window", "limit: -1, window: 1s"),
    ] {
        rules
            .reload_str(
                Format::Yaml,
                &yaml(&[yaml_rule("channel", "global", algorithm, params)]),
            )
            .unwrap();
        assert_eq!(
            admitted(&rules, &Request::default(), 2_000),
            2_000,
            "{algorithm} {params}"
        );
    }
}

#[test]
fn decisions_name_the_rule_and_when_to_retry() {
    let (_, rules) = manual();
    rules
        .reload_str(
            Format::Yaml,
            &yaml(&[
                yaml_rule("global", "global", "token_bucket", "rate: 10/s, burst: 3"),
                yaml_rule("per-user", "user", "fixed_window", "limit: 2, window: 1m"),
            ]),
        )
        .unwrap();
    let alice = Request::user("alice");
    assert_eq!(
        rules.check(&alice).unwrap(),
        RuleDecision::Admitted {
            remaining: 1,
            rule: Some("per-user".into()),
            // The minute's window ends a minute from the manual clock's start.
            reset_after: Some(Duration::from_secs(60)),
            quota: RuleQuota::Window(WindowQuota::per_minute(2).unwrap()),
        }
    );
    rules.check(&alice).unwrap();
    assert_eq!(
        rules.check(&alice).unwrap(),
        RuleDecision::Refused {
            rule: "per-user".into(),
            available: 0,
            retry_after: Duration::from_secs(60),
            quota: RuleQuota::Window(WindowQuota::per_minute(2).unwrap()),
        }
    );
    // The global bucket gave back the grant per-user refused: 1 of 3 is left.
    assert!(rules.check(&Request::user("bob")).unwrap().is_admitted());
    match rules.check(&Request::user("carol")).unwrap() {
        RuleDecision::Refused {
            rule, retry_after, ..
        } => {
            assert_eq!(&*rule, "global");
            assert_eq!(retry_after, Duration::from_millis(100));
        }
        admitted => panic!("{admitted:?}"),
    }
    let error = rules.check_n(&alice, 4).unwrap_err();
    assert_eq!(&*error.dimension, "global");
}

/// Checks race reloads that keep or raise a limit by one: across all of them, never more
/// admitted than the highest limit, and (the clock frozen) exactly that in the end.
#[test]
fn checks_racing_reloads_never_over_admit() {
    for algorithm in [
        "fixed_window",
        "sliding_window",
        "sliding_log",
        "token_bucket",
    ] {
        for key in ["global", "user"] {
            let (_, rules) = manual();
            let rules = Arc::new(rules);
            let file = |params: &str| yaml(&[yaml_rule("r", key, algorithm, params)]);
            let base = file("rate: 100/min");
            let rescoped = file("rate: 100/min, resource: \"*\"");
            let raised = file("rate: 101/min");
            // A log is built for the highest limit it will be raised to in place.
            rules.reload_str(Format::Yaml, &raised).unwrap();
            rules.reload_str(Format::Yaml, &base).unwrap();
            let admitted_total = Arc::new(AtomicU64::new(0));
            let done = Arc::new(AtomicBool::new(false));
            let checkers: Vec<_> = (0..2)
                .map(|_| {
                    let (rules, admitted_total, done) =
                        (rules.clone(), admitted_total.clone(), done.clone());
                    std::thread::spawn(move || {
                        let mut request = Request::user("u");
                        request.route = Some("/r".into());
                        while !done.load(Ordering::Relaxed) {
                            if rules.check(&request).unwrap().is_admitted() {
                                admitted_total.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            for i in 0..100 {
                let text = [&base, &rescoped][i % 2];
                let report = rules.reload_str(Format::Yaml, text).unwrap();
                assert!(
                    report.replaced.is_empty() && report.added.is_empty(),
                    "{report}"
                );
            }
            rules.reload_str(Format::Yaml, &raised).unwrap();
            done.store(true, Ordering::Relaxed);
            for checker in checkers {
                checker.join().unwrap();
            }
            let mut request = Request::user("u");
            request.route = Some("/r".into());
            let total = admitted_total.load(Ordering::Relaxed) + admitted(&rules, &request, 200);
            let what = format!("{algorithm} {key}");
            if algorithm == "token_bucket" && key == "global" {
                // A shared bucket's new burst adds no permit at once (see above).
                assert!((100..=101).contains(&total), "{what}: {total}");
            } else {
                assert_eq!(total, 101, "{what}");
            }
        }
    }
}

/// A limit a window quota holds but the rule's limiter cannot (10 million per hour: past
/// the log's and the keyed window cells' 2^20 − 1) is refused when the file loads, naming
/// the rule, its field and the limiter's bound; the rules in force stay.
#[test]
fn limits_the_rules_limiter_cannot_hold_are_refused() {
    let (_, rules) = manual();
    let kept = yaml_rule("kept", "user", "fixed_window", "rate: 1/min");
    rules.reload_str(Format::Yaml, &yaml(&[kept])).unwrap();
    let hourly = "rate: 10000000/h";
    for (key, algorithm) in [
        ("global", "sliding_log"),
        ("user", "sliding_log"),
        ("user", "fixed_window"),
        ("client_ip", "sliding_window"),
    ] {
        let rule = yaml_rule("big", key, algorithm, hourly);
        let error = rules.reload_str(Format::Yaml, &yaml(&[rule])).unwrap_err();
        assert_eq!((error.rule(), error.field()), (Some("big"), Some("rate")));
        assert!(
            error.reason().contains("10000000") && error.reason().contains("1048575"),
            "{key} {algorithm}: {error}"
        );
        assert_eq!(rules.names(), ["kept".into()], "{key} {algorithm}");
    }
    // The largest limit they hold loads.
    let largest = "rate: 1048575/h";
    for (key, algorithm) in [("user", "sliding_log"), ("route", "sliding_window")] {
        let rule = yaml_rule("big", key, algorithm, largest);
        rules.reload_str(Format::Yaml, &yaml(&[rule])).unwrap();
    }
}

/// A global sliding or fixed window rule holds 10 million per hour (the bucketed windows'
/// wide engine).
#[test]
fn global_windows_load_ten_million_per_hour() {
    let (_, rules) = manual();
    for algorithm in ["sliding_window", "fixed_window"] {
        let rule = yaml_rule("big", "global", algorithm, "rate: 10000000/h");
        rules.reload_str(Format::Yaml, &yaml(&[rule])).unwrap();
        let request = Request::default();
        assert_eq!(admitted(&rules, &request, 1_000), 1_000, "{algorithm}");
    }
}

/// When each algorithm a rule builds is whole again after an admission, keyed and global:
/// a fixed window's end, the sliding window's bucket leaving it, the log's window from the
/// admission, the bucket's refill; and that it is true (the rule admits its whole limit
/// again then, not before).
#[test]
fn admissions_say_when_the_rule_is_whole_again() {
    let ms = Duration::from_millis;
    // (algorithm, parameters, first admission's reset 300 ms in, the whole limit back then)
    let cases = [
        ("fixed_window", "limit: 3, window: 1s", ms(700)),
        // 10 buckets of 100 ms: the bucket [300, 400) leaves the window at 1 300 ms.
        ("sliding_window", "limit: 3, window: 1s", ms(1_000)),
        ("sliding_log", "limit: 3, window: 1s", ms(1_000)),
        // One token of 3 taken, 1 every 333.3 ms: an upper bound by less than one period.
        ("token_bucket", "rate: 3/s, burst: 3", ms(334)),
    ];
    for (algorithm, params, reset) in cases {
        for key in ["user", "global"] {
            let (clock, rules) = manual();
            rules
                .reload_str(
                    Format::Yaml,
                    &yaml(&[yaml_rule("r", key, algorithm, params)]),
                )
                .unwrap();
            let alice = Request::user("alice");
            clock.advance(ms(300));
            let decision = rules.check(&alice).unwrap();
            let said = decision.reset_after().expect("a reset time");
            let case = format!("{algorithm} {key}: {said:?}");
            assert!(said <= reset && reset - said < ms(1), "{case}");
            // Spend the rest, then wait the time said: the whole limit is back.
            while rules.check(&alice).unwrap().is_admitted() {}
            let spent = rules.check(&alice).unwrap().reset_after();
            assert_eq!(spent, None, "a refusal says retry_after instead: {case}");
            clock.advance(said);
            if algorithm == "token_bucket" {
                // Its later admissions restart the refill: wait it out whole.
                clock.advance(ms(1_000));
            }
            assert_eq!(admitted(&rules, &alice, 4), 3, "{case}");
        }
    }
}

/// A decision names the quota of the rules it was checked against: what HTTP headers
/// advertise for it, whatever a reload has made of the rule since.
#[test]
fn decisions_carry_the_quota_they_were_checked_under() {
    let (_clock, rules) = manual();
    let file = |limit: u64| {
        yaml(&[yaml_rule(
            "per-user",
            "user",
            "fixed_window",
            &format!("limit: {limit}, window: 1m"),
        )])
    };
    rules.reload_str(Format::Yaml, &file(2)).unwrap();
    let alice = Request::user("alice");
    let before = rules.check(&alice).unwrap();
    rules.reload_str(Format::Yaml, &file(5)).unwrap();
    let after = rules.check(&alice).unwrap();
    let window = |limit| RuleQuota::Window(WindowQuota::per_minute(limit).unwrap());
    assert!(matches!(before, RuleDecision::Admitted { quota, .. } if quota == window(2)));
    assert!(matches!(after, RuleDecision::Admitted { quota, .. } if quota == window(5)));
    for _ in 0..3 {
        rules.check(&alice).unwrap();
    }
    assert!(
        matches!(rules.check(&alice).unwrap(), RuleDecision::Refused { quota, .. } if quota == window(5))
    );
}
