//! The watcher reloads a file updated through a symlinked directory, the way Kubernetes
//! updates a mounted ConfigMap: `rules.yaml -> ..data/rules.yaml`, then `..data` is
//! atomically re-pointed by renaming `..data_tmp` over it (no event names `rules.yaml`).

use crate::rules_common;

use std::os::unix::fs::symlink;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use ringlimit::clock::ManualClock;
use ringlimit::rules::{RuleSet, Watcher};
use rules_common::TempDir;

fn file(rate: &str) -> String {
    format!("rules:\n  - {{name: g, key: global, algorithm: fixed_window, rate: {rate}}}\n")
}

#[test]
fn a_configmap_style_symlink_swap_is_reloaded() {
    let dir = TempDir::new("watch-symlinks");
    let root = dir.path();
    std::fs::create_dir(root.join("..v1")).unwrap();
    std::fs::write(root.join("..v1/rules.yaml"), file("1/min")).unwrap();
    symlink("..v1", root.join("..data")).unwrap();
    symlink("..data/rules.yaml", root.join("rules.yaml")).unwrap();
    let path = root.join("rules.yaml");

    let rules = Arc::new(RuleSet::with_clock(ManualClock::new()));
    rules.reload_path(&path).unwrap();
    let (sender, outcomes) = mpsc::channel();
    let _watcher = Watcher::new(rules.clone(), &path, Duration::from_millis(50), move |o| {
        let _ = sender.send(o.map(|r| r.to_string()));
    })
    .unwrap();

    // The update: a new version directory, `..data` re-pointed atomically.
    std::fs::create_dir(root.join("..v2")).unwrap();
    std::fs::write(root.join("..v2/rules.yaml"), file("2/min")).unwrap();
    symlink("..v2", root.join("..data_tmp")).unwrap();
    std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), file("2/min"));

    let outcome = outcomes.recv_timeout(Duration::from_secs(5));
    assert!(
        matches!(&outcome, Ok(Ok(report)) if report == "reconfigured g"),
        "the watcher did not reload the new contents: {outcome:?}"
    );
}
