//! Rules and policies across refusals and reloads: a refusal gives back what the earlier
//! rules granted (a sliding log rule included, which `RuleSet` checks last); a reload never
//! lets a burst through (tightening or raising a rule, changing `max_keys`: a replaced rule's
//! old limiter drains for one old window, drains stack, a changed key counts from zero); and
//! errors name the rule and the field.

use crate::rules_common;

use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::LogConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{Keyed, SlidingLogs};
use ringlimit::policy::Policy;
use ringlimit::rules::Format;
use ringlimit::{BucketQuota, Rate, SlidingLog, TokenBucket, WindowQuota};
use rules_common::{admitted, manual, Request};

/// A `sliding_log` rule is not charged for requests a later rule refused ("a refusal gives
/// back what the earlier rules granted", `RuleSet` and `Policy` rustdoc): a user who was
/// never admitted is not locked out by their own rule.
#[test]
fn a_sliding_log_rule_is_not_charged_for_requests_a_later_rule_refused() {
    let (clock, rules) = manual();
    rules
        .reload_str(
            Format::Yaml,
            "rules:
  - {name: per-user, key: user, algorithm: sliding_log, rate: 2/h}
  - {name: global, key: global, algorithm: token_bucket, rate: 1/s, burst: 1}
",
        )
        .unwrap();
    let alice = Request::user("alice");
    let bob = Request::user("bob");
    assert!(rules.check(&bob).unwrap().is_admitted()); // global spent
                                                       // Alice is refused by `global` twice: her `per-user` grants should be given back.
    for _ in 0..2 {
        assert_eq!(rules.check(&alice).unwrap().rule(), Some("global"));
    }
    clock.advance(Duration::from_secs(1)); // global has a permit again
    let decision = rules.check(&alice).unwrap();
    assert!(
        decision.is_admitted(),
        "alice was never admitted, yet her own rule refuses her: {decision:?}"
    );
}

/// The same with the Policy API: a shared `SlidingLog` or a keyed `SlidingLogs` dimension
/// gives back the permits of a check that a later dimension refused (ignored while a log
/// cannot give a grant back).
#[test]
#[ignore = "open (issue 10): a sliding log cannot give a grant back; Policy documents it (put logs last) and RuleSet checks log rules last"]
fn policy_sliding_log_dimensions_are_refunded() {
    let clock = ManualClock::new();
    let log = Arc::new(
        SlidingLog::with_clock(
            WindowQuota::per(1, Duration::from_secs(60)).unwrap(),
            clock.clone(),
        )
        .unwrap(),
    );
    let per_user = Arc::new(Keyed::<u64, SlidingLogs, _>::with_config(
        LogConfig::new(WindowQuota::per(1, Duration::from_secs(60)).unwrap()).unwrap(),
        clock.clone(),
    ));
    let last = Arc::new(
        TokenBucket::builder(BucketQuota::new(Rate::per_second(1).unwrap(), 1).unwrap())
            .clock(clock.clone())
            .build(),
    );
    assert!(ringlimit::RateLimiter::try_acquire(&*last)); // the last dimension is spent
    let policy = Policy::builder()
        .shared("log", log.clone())
        .per_key("user", per_user.clone(), |u: &u64| Some(*u))
        .shared("last", last)
        .build();
    assert!(!policy.check(&7).unwrap().is_admitted());
    // "when one refuses, the grants already taken are refunded, so no dimension is charged
    // for a request another refused"
    assert_eq!(
        (
            ringlimit::RateLimiter::available(&*log),
            per_user.available(&7)
        ),
        (1, 1),
        "dimensions charged for a refused check"
    );
}

/// A reload that tightens a window rule (5/min -> 5/h) keeps the permits already counted:
/// no fresh burst in the same minute, since neither the old rule nor the new one allows more
/// than 5 ("a reload never lets a burst through").
#[test]
fn tightening_a_window_rule_lets_no_burst_through() {
    for key in ["global", "user"] {
        let (_, rules) = manual();
        let alice = Request::user("alice");
        let file = |rate: &str| {
            format!("rules:\n  - {{name: r, key: {key}, algorithm: fixed_window, rate: {rate}}}\n")
        };
        rules.reload_str(Format::Yaml, &file("5/min")).unwrap();
        assert_eq!(admitted(&rules, &alice, 10), 5);
        let report = rules.reload_str(Format::Yaml, &file("5/h")).unwrap();
        assert_eq!(
            admitted(&rules, &alice, 10),
            0,
            "{key}: a tightened rule admitted a fresh burst in the same minute ({report})"
        );
    }
}

/// Raising a keyed rule's `max_keys` (say, because it filled up) keeps every key's count:
/// no key gets a whole new limit at once.
#[test]
fn changing_max_keys_keeps_every_keys_count() {
    let (_, rules) = manual();
    let file = |max_keys: u64| {
        format!("rules:\n  - {{name: r, key: user, algorithm: sliding_window, rate: 3/h, max_keys: {max_keys}}}\n")
    };
    rules.reload_str(Format::Yaml, &file(1000)).unwrap();
    let users: Vec<_> = (0..10).map(|u| Request::user(&u.to_string())).collect();
    for user in &users {
        assert_eq!(admitted(&rules, user, 5), 3);
    }
    let report = rules.reload_str(Format::Yaml, &file(2000)).unwrap();
    let again: u64 = users.iter().map(|user| admitted(&rules, user, 5)).sum();
    assert_eq!(
        again, 0,
        "a max_keys change re-admitted {again} permits ({report})"
    );
}

/// Raising a `sliding_log` rule above the limit it was first loaded with keeps its count:
/// 5 admitted, raised to 6, 1 more admitted in the same minute.
#[test]
fn raising_a_sliding_log_rule_lets_no_burst_through() {
    let (_, rules) = manual();
    let alice = Request::user("alice");
    let file = |rate: &str| {
        format!("rules:\n  - {{name: r, key: user, algorithm: sliding_log, rate: {rate}}}\n")
    };
    rules.reload_str(Format::Yaml, &file("5/min")).unwrap();
    assert_eq!(admitted(&rules, &alice, 10), 5);
    let report = rules.reload_str(Format::Yaml, &file("6/min")).unwrap();
    assert_eq!(
        admitted(&rules, &alice, 10),
        1,
        "the new limit is 6 a minute, 5 already counted ({report})"
    );
}

/// Errors name the rule and the field (`RulesError::rule` promises `rules[i]` when the name
/// is missing or unreadable).
#[test]
fn an_empty_name_error_names_the_rule_by_index() {
    let (_, rules) = manual();
    let error = rules
        .reload_str(
            Format::Yaml,
            "rules:\n  - {name: a, key: user, algorithm: fixed_window, rate: 5/s}\n  - {name: '', key: user, algorithm: fixed_window, rate: 5/s}\n",
        )
        .unwrap_err();
    assert_eq!(error.rule(), Some("rules[1]"), "{error}");
}

#[test]
fn a_missing_field_error_names_the_field() {
    let (_, rules) = manual();
    let error = rules
        .reload_str(
            Format::Yaml,
            "rules:\n  - {name: a, key: user, rate: 5/s}\n",
        )
        .unwrap_err();
    assert_eq!(
        (error.rule(), error.field()),
        (Some("a"), Some("algorithm")),
        "{error}"
    );
    let error = rules
        .reload_str(
            Format::Toml,
            "[[rules]]\nname = 'a'\nalgorithm = 'fixed_window'\nrate = '5/s'\n",
        )
        .unwrap_err();
    assert_eq!(
        (error.rule(), error.field()),
        (Some("a"), Some("key")),
        "{error}"
    );
}

#[test]
fn a_duplicate_yaml_field_names_the_rule_and_the_field() {
    let (_, rules) = manual();
    let error = rules
        .reload_str(
            Format::Yaml,
            "rules:\n  - name: a\n    key: user\n    key: global\n    algorithm: fixed_window\n    rate: 5/s\n",
        )
        .unwrap_err();
    assert_eq!(
        (error.rule(), error.field()),
        (Some("a"), Some("key")),
        "{error}"
    );
}

/// More cases: a missing name is `rules[i]`'s field `name`; TOML's own duplicate key,
/// a duplicate in the second rule, and a YAML duplicate's message without the parser's
/// advice.
#[test]
fn more_errors_name_the_rule_and_the_field() {
    let (_, rules) = manual();
    let error = rules
        .reload_str(
            Format::Toml,
            "[[rules]]\nname = 'a'\nkey = 'user'\nalgorithm = 'fixed_window'\nrate = '5/s'\n\n[[rules]]\nkey = 'user'\nalgorithm = 'fixed_window'\nrate = '5/s'\n",
        )
        .unwrap_err();
    assert_eq!(
        (error.rule(), error.field()),
        (Some("rules[1]"), Some("name")),
        "{error}"
    );
    let error = rules
        .reload_str(
            Format::Toml,
            "[[rules]]\nname = 'a'\nkey = 'user'\nkey = 'global'\nalgorithm = 'fixed_window'\nrate = '5/s'\n",
        )
        .unwrap_err();
    // TOML's parser rejects the document before any name is read: the rule by its place.
    assert_eq!(error.line(), Some(4), "{error}");
    assert_eq!(
        (error.rule(), error.field()),
        (Some("rules[0]"), Some("key")),
        "{error}"
    );
    let error = rules
        .reload_str(
            Format::Yaml,
            "rules:\n  - {name: a, key: user, algorithm: fixed_window, rate: 5/s}\n  - name: b\n    key: user\n    algorithm: fixed_window\n    rate: 5/s\n    rate: 6/s\n",
        )
        .unwrap_err();
    assert_eq!(
        (error.rule(), error.field(), error.line()),
        (Some("b"), Some("rate"), Some(7)),
        "{error}"
    );
    assert!(!error.reason().contains("DuplicateKeyPolicy"), "{error}");
}

/// A replaced rule's old limiter keeps limiting beside the new one for its
/// last window (the report says for how long), refusals retrying no later than its end;
/// then the new limiter alone decides, and the next reload drops the old one.
#[test]
fn a_replaced_rule_drains_its_old_limiter_for_one_old_window() {
    let alice = Request::user("alice");
    let file = |algorithm: &str, params: &str| {
        format!("rules:\n  - {{name: r, key: user, algorithm: {algorithm}, {params}}}\n")
    };
    for (algorithm, params) in [
        ("fixed_window", "rate: 5/h"),           // another window
        ("token_bucket", "rate: 5/s, burst: 5"), // another algorithm
        ("sliding_log", "rate: 100/min"),        // a log raised past its ring's room
        ("fixed_window", "rate: -1"),            // unlimited
    ] {
        let (clock, rules) = manual();
        let start = if algorithm == "sliding_log" {
            ("sliding_log", "rate: 5/min")
        } else {
            ("fixed_window", "rate: 5/min")
        };
        rules
            .reload_str(Format::Yaml, &file(start.0, start.1))
            .unwrap();
        assert_eq!(admitted(&rules, &alice, 10), 5, "{params}");
        clock.advance(Duration::from_secs(20));
        let report = rules
            .reload_str(Format::Yaml, &file(algorithm, params))
            .unwrap();
        assert_eq!(report.replaced.len(), 1, "{params}: {report}");
        assert!(report.to_string().contains("keeps limiting"), "{report}");
        assert_eq!(
            report.draining,
            [("r".into(), Duration::from_secs(60))],
            "{params}: {report}"
        );
        match rules.check(&alice).unwrap() {
            ringlimit::rules::RuleDecision::Refused { retry_after, .. } => {
                // The old fixed window ends in 40 s, the old log's entries go in 40 s.
                assert!(retry_after <= Duration::from_secs(60), "{params}")
            }
            admitted => panic!("{params}: {admitted:?}"),
        }
        assert_eq!(admitted(&rules, &alice, 10), 0, "{params}: {report}");
        clock.advance(Duration::from_secs(60)); // the drain is over
        let expected = match algorithm {
            "fixed_window" if params.contains("-1") => 10,
            "sliding_log" => 10,
            _ => 5,
        };
        assert_eq!(admitted(&rules, &alice, 10), expected, "{params}");
        let again = rules
            .reload_str(Format::Yaml, &file(algorithm, params))
            .unwrap();
        assert!(again.is_unchanged() && again.draining.is_empty(), "{again}");
    }
}

/// A second replacement while the first drains keeps both old limiters limiting; a
/// changed key starts from zero (its counts belong to other keys) and says so.
#[test]
fn drains_stack_and_a_changed_key_counts_from_zero() {
    let (clock, rules) = manual();
    let alice = Request {
        api_key: Some("k".into()),
        ..Request::user("alice")
    };
    let file = |key: &str, rate: &str| {
        format!("rules:\n  - {{name: r, key: {key}, algorithm: fixed_window, rate: {rate}}}\n")
    };
    rules
        .reload_str(Format::Yaml, &file("user", "5/min"))
        .unwrap();
    assert_eq!(admitted(&rules, &alice, 10), 5);
    rules
        .reload_str(Format::Yaml, &file("user", "5/h"))
        .unwrap();
    clock.advance(Duration::from_secs(1));
    let report = rules
        .reload_str(Format::Yaml, &file("user", "8/s"))
        .unwrap();
    assert_eq!(report.draining, [("r".into(), Duration::from_secs(3600))]);
    assert_eq!(
        admitted(&rules, &alice, 10),
        0,
        "the first old limiter still limits"
    );
    clock.advance(Duration::from_secs(60));
    // The 5/min limiter's drain is over; the 5/h one counted nothing for alice (the first
    // refused every request before it was asked), so it holds no key of hers.
    assert_eq!(admitted(&rules, &alice, 10), 8);
    // A longer old window drains for that window: 5/h with 5 counted, then 8/s.
    rules
        .reload_str(Format::Yaml, &file("user", "5/h"))
        .unwrap();
    clock.advance(Duration::from_secs(3600));
    assert_eq!(admitted(&rules, &alice, 10), 5);
    rules
        .reload_str(Format::Yaml, &file("user", "8/s"))
        .unwrap();
    clock.advance(Duration::from_secs(1800));
    assert_eq!(
        admitted(&rules, &alice, 10),
        0,
        "5 of 5/h counted, 30 min ago"
    );
    clock.advance(Duration::from_secs(1800));
    assert_eq!(admitted(&rules, &alice, 10), 8);
    let report = rules
        .reload_str(Format::Yaml, &file("api_key", "8/s"))
        .unwrap();
    assert!(report.draining.is_empty(), "{report}");
    assert!(
        report.replaced[0].1.contains("counting from zero"),
        "{report}"
    );
    assert_eq!(admitted(&rules, &alice, 10), 8);
}

/// Lowering `max_keys` keeps every key's count too, and the lower bound holds for new
/// keys.
#[test]
fn lowering_max_keys_keeps_the_counts() {
    let (_, rules) = manual();
    let file = |max_keys: u64| {
        format!("rules:\n  - {{name: r, key: user, algorithm: fixed_window, rate: 3/h, max_keys: {max_keys}}}\n")
    };
    rules.reload_str(Format::Yaml, &file(10)).unwrap();
    let users: Vec<_> = (0..4).map(|u| Request::user(&u.to_string())).collect();
    for user in &users {
        assert_eq!(admitted(&rules, user, 5), 3);
    }
    let report = rules.reload_str(Format::Yaml, &file(2)).unwrap();
    assert_eq!(report.reconfigured, ["r".into()], "{report}");
    for user in &users {
        assert_eq!(admitted(&rules, user, 5), 0);
    }
    assert!(rules.check(&Request::user("new")).is_err(), "full: 4 of 2");
}
