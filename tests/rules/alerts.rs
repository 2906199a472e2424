//! The shipped Prometheus alert rules (`docs/alerts.yml`) are valid (`promtool check rules`)
//! and behave as documented (`promtool test rules docs/alerts_test.yml`: fires after 1m over
//! 0.9, not at 0.9, not for a 45 s spike). Without `promtool` the test prints `SKIPPED` and
//! passes, except in CI (`CI` set), where it fails: `.ci/run` installs `promtool`.

use std::path::Path;
use std::process::Command;

/// Runs `promtool` with `args` in `docs/`; `None` if there is no `promtool` to run.
fn promtool(args: &[&str]) -> Option<std::process::Output> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    match Command::new("promtool")
        .args(args)
        .current_dir(docs)
        .output()
    {
        Ok(output) => Some(output),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => panic!("promtool {args:?}: {error}"),
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0")
}

#[test]
fn alert_rules_check_and_unit_tests_pass() {
    for args in [
        &["check", "rules", "alerts.yml"][..],
        &["test", "rules", "alerts_test.yml"][..],
    ] {
        let Some(output) = promtool(args) else {
            let reason = "promtool not found on PATH (Debian package `prometheus`)";
            assert!(!in_ci(), "promtool is required in CI: {reason}");
            println!("SKIPPED: promtool {}: {reason}", args.join(" "));
            return;
        };
        assert!(
            output.status.success(),
            "promtool {}: {}\n{}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn alert_rule_is_the_documented_one() {
    let rules = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/alerts.yml"))
        .expect("docs/alerts.yml");
    for line in [
        "- alert: HighWindowUtilization",
        "expr: ringlimit_utilization > 0.9",
        "for: 1m",
        "severity: warning",
        "summary:",
    ] {
        assert!(rules.contains(line), "docs/alerts.yml lacks `{line}`");
    }
}
