//! The watcher: a real file edited on disk, its new rules taking effect within a bounded
//! wait, a broken edit keeping the old ones.

use crate::rules_common;

use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ringlimit::clock::ManualClock;
use ringlimit::rules::{ReloadReport, RuleSet, RulesError, Watcher};
use rules_common::{yaml_rule, Request, TempDir};

/// How long an edit may take to be reloaded before the test fails.
const BOUND: Duration = Duration::from_secs(20);

type Outcome = Result<ReloadReport, RulesError>;

/// Waits (at most [`BOUND`]) for an outcome `wanted` accepts, skipping the others (an edit
/// may be seen as more than one change).
fn wait_for(outcomes: &Receiver<Outcome>, wanted: impl Fn(&Outcome) -> bool) -> Outcome {
    let deadline = Instant::now() + BOUND;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let outcome = outcomes
            .recv_timeout(left)
            .expect("the watcher reloads the edited file within the bound");
        if wanted(&outcome) {
            return outcome;
        }
    }
}

fn file(rules: &[String]) -> String {
    format!("rules:\n{}", rules.concat())
}

#[test]
fn edits_to_a_watched_file_take_effect() {
    let dir = TempDir::new("rules-watch");
    let global =
        |rate: &str| yaml_rule("global", "global", "fixed_window", &format!("rate: {rate}"));
    let path = dir.write("rules.yaml", &file(&[global("1/min")]));
    let rules = Arc::new(RuleSet::with_clock(ManualClock::new()));
    rules.reload_path(&path).unwrap();
    let (sender, outcomes) = mpsc::channel();
    let _watcher = Watcher::new(
        rules.clone(),
        &path,
        Duration::from_millis(50),
        move |outcome| {
            let _ = sender.send(outcome);
        },
    )
    .unwrap();
    let request = Request::user("u");
    assert!(rules.check(&request).unwrap().is_admitted());
    assert!(!rules.check(&request).unwrap().is_admitted());

    // Renamed over the old file: raised to 3, the count of 1 kept.
    dir.write("rules.yaml", &file(&[global("3/min")]));
    let report = wait_for(
        &outcomes,
        |o| matches!(o, Ok(r) if !r.reconfigured.is_empty()),
    )
    .unwrap();
    assert_eq!(report.reconfigured, ["global".into()]);
    assert!(rules.check(&request).unwrap().is_admitted());
    assert!(rules.check(&request).unwrap().is_admitted());
    assert!(!rules.check(&request).unwrap().is_admitted());

    // Broken, written in place: reported, the old rule stays in force.
    std::fs::write(&path, file(&[global("3/fortnight")])).unwrap();
    let error = wait_for(&outcomes, Result::is_err).unwrap_err();
    assert_eq!(
        (error.rule(), error.field()),
        (Some("global"), Some("rate"))
    );
    assert_eq!(error.file(), Some(path.as_path()));
    assert_eq!(rules.names(), ["global".into()]);
    assert!(!rules.check(&request).unwrap().is_admitted());

    // Fixed, with a rule added, written in place.
    let per_user = yaml_rule("per-user", "user", "token_bucket", "rate: 1/h");
    std::fs::write(&path, file(&[global("10/min"), per_user])).unwrap();
    let report = wait_for(&outcomes, |o| matches!(o, Ok(r) if !r.added.is_empty())).unwrap();
    assert_eq!(report.added, ["per-user".into()]);
    assert!(rules.check(&request).unwrap().is_admitted());
    let refused = rules.check(&request).unwrap();
    assert_eq!(refused.rule(), Some("per-user"));

    // Another file in the directory is not the rules file: once the edits above are
    // quiet (an edit in place may be seen twice), writing it reloads nothing.
    // Quiet it must get: a reload's own read of the file is no change to reload for.
    let deadline = Instant::now() + BOUND;
    while let Ok(outcome) = outcomes.recv_timeout(Duration::from_millis(500)) {
        assert!(
            Instant::now() < deadline,
            "the watcher never stops reloading"
        );
        assert!(outcome.unwrap().is_unchanged());
    }
    dir.write("other.yaml", "not: rules");
    assert!(outcomes.recv_timeout(Duration::from_millis(500)).is_err());
}
