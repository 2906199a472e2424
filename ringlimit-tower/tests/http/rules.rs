//! Rules from a real file behind the layer, reloaded by the real watcher: the headers
//! follow the file, the counts survive the reload, a broken file changes nothing.

use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use http::HeaderName;
use ringlimit::rules::{RuleSet, Watcher};
use ringlimit_tower::{ClientKeys, Missing, RateLimitLayer};

use crate::common::{serve, Http};

fn rule(rate: &str) -> String {
    format!(
        "rules:\n  - name: per-ip\n    key: client_ip\n    algorithm: fixed_window\n    rate: {rate}\n  - name: per-user\n    key: header:X-User-Id\n    algorithm: fixed_window\n    rate: 100/min\n"
    )
}

/// Writes `text` whole: a temporary file renamed over the old one.
fn write(path: &Path, text: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text).unwrap();
    std::fs::rename(&temporary, path).unwrap();
}

#[tokio::test]
async fn a_rules_file_limits_and_reloads() {
    let dir = std::env::temp_dir().join(format!("ringlimit-tower-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rules.yaml");
    write(&path, &rule("1/min"));
    let rules = Arc::new(RuleSet::from_path(&path).unwrap());
    let (reloads, reloaded) = mpsc::channel();
    let _watcher = Watcher::new(
        rules.clone(),
        &path,
        Duration::from_millis(50),
        move |outcome| {
            let _ = reloads.send(
                outcome
                    .map(|report| report.to_string())
                    .map_err(|e| e.to_string()),
            );
        },
    )
    .unwrap();
    let keys = ClientKeys::new().id_header(
        HeaderName::from_static("x-user-id"),
        Missing::Shared("anonymous".into()),
    );
    let layer = RateLimitLayer::builder(rules).keys(keys).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let http = Http::new(serve(app).await);

    let first = http.get("/", &[]).await;
    assert_eq!(first.status, 200);
    assert_eq!(
        first.header("ratelimit-policy"),
        Some(r#""per-ip";q=1;w=60"#)
    );
    // The minute's window ends within the minute: `t` says when.
    let (name, r, t) = first.ratelimit();
    assert_eq!((&*name, r), ("per-ip", Some(0)));
    assert!(t.is_some_and(|t| (1..=60).contains(&t)), "{t:?}");
    assert_eq!(http.get("/", &[]).await.status, 429);

    write(&path, &rule("3/min"));
    let outcome = tokio::task::spawn_blocking(move || {
        let outcome = reloaded.recv_timeout(Duration::from_secs(10)).unwrap();
        (outcome, reloaded)
    })
    .await
    .unwrap();
    let (outcome, reloaded) = outcome;
    assert_eq!(outcome, Ok("reconfigured per-ip".to_owned()));
    // The one permit counted before the reload stays counted: two left of three.
    let after = http.get("/", &[]).await;
    assert_eq!(after.status, 200);
    assert_eq!(
        after.header("ratelimit-policy"),
        Some(r#""per-ip";q=3;w=60"#)
    );
    let (_, r, later) = after.ratelimit();
    assert_eq!(r, Some(1));
    assert!(later.is_some_and(|later| later <= t.unwrap()), "{later:?}");
    assert_eq!(http.get("/", &[]).await.status, 200);
    assert_eq!(http.get("/", &[]).await.status, 429);

    // A broken file: the rules in force stay.
    write(
        &path,
        "rules:\n  - name: per-ip\n    key: client_ip\n    rate: 3/mni\n",
    );
    let outcome = tokio::task::spawn_blocking(move || {
        reloaded.recv_timeout(Duration::from_secs(10)).unwrap()
    })
    .await
    .unwrap();
    assert!(outcome.is_err(), "{outcome:?}");
    let refused = http.get("/", &[]).await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.json()["violated-policies"],
        serde_json::json!(["per-ip"])
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
