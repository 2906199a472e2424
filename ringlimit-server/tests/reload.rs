//! A changed directory is reloaded while serving: limits that did not change keep their
//! counts, changed ones start afresh, and a file that does not load leaves the limits in
//! force.

mod support;

use std::time::{Duration, Instant};

use ringlimit_server::backend::Backend;
use support::{call, request, start};

const LIMITS: &str = "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: sliding_window}\n";

/// Waits until the server's limits satisfy `done`.
async fn until(
    server: &ringlimit_server::Server,
    done: impl Fn(&ringlimit_server::limits::Limits) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done(&server.limits()) {
        assert!(Instant::now() < deadline, "no reload within 20 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_the_counts_of_unchanged_limits() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), LIMITS).unwrap();
    let (server, mut client) = start(dir.path(), Backend::local()).await;
    let alice: &[(&str, &str)] = &[("user", "alice")];
    let reply = call(&mut client, request("api", &[alice], 3)).await;
    assert_eq!(reply.statuses[0].limit_remaining, 2);

    // A second domain: `api` is unchanged, and keeps alice's 3.
    std::fs::write(dir.path().join("web.yaml"), "domain: web\ndescriptors:\n  - key: page\n    rate_limit: {unit: second, requests_per_unit: 1}\n").unwrap();
    until(&server, |limits| limits.matcher.has_domain("web")).await;
    let reply = call(&mut client, request("api", &[alice], 1)).await;
    assert_eq!(reply.statuses[0].limit_remaining, 1);

    // A file that does not load: the limits in force stay.
    std::fs::write(
        dir.path().join("broken.yaml"),
        "domain: broken\nnot_a_field: 1\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let reply = call(&mut client, request("api", &[alice], 1)).await;
    assert_eq!(reply.statuses[0].limit_remaining, 0);
    std::fs::remove_file(dir.path().join("broken.yaml")).unwrap();

    // A changed limit starts afresh.
    std::fs::write(dir.path().join("api.yaml"), LIMITS.replace("5,", "50,")).unwrap();
    until(&server, |limits| {
        limits
            .matcher
            .find("api", &[("user", "alice")])
            .is_some_and(|f| {
                matches!(
                    f.rule.limit,
                    ringlimit_server::matcher::Limit::Counted { requests: 50, .. }
                )
            })
    })
    .await;
    let reply = call(&mut client, request("api", &[alice], 1)).await;
    assert_eq!(reply.statuses[0].limit_remaining, 49);
}
