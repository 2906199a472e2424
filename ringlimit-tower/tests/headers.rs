//! The answers over real HTTP: `RateLimit-Policy` and `RateLimit` parsed as structured
//! fields (draft-ietf-httpapi-ratelimit-headers rev. 11), 429 with `Retry-After` and
//! problem+json, legacy headers, gRPC's RESOURCE_EXHAUSTED.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::{ManualClock, TscClock};
use ringlimit::keyed::{FixedWindows, IpKey, Keyed};
use ringlimit::policy::Policy;
use ringlimit::rules::{Format, RuleSet};
use ringlimit::WindowQuota;
use ringlimit_tower::{Client, RateLimitLayer};

use common::{int, item, serve, Http};

fn app(limit: u64, legacy: bool) -> Router {
    let quota = WindowQuota::per_minute(limit).unwrap();
    let per_ip = Arc::new(Keyed::<IpKey, FixedWindows>::with_config(
        WindowConfig::new(quota).unwrap(),
        TscClock::new(),
    ));
    let policy = Policy::builder()
        .per_key("per-ip", per_ip, Client::ip_key)
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy))
        .quota("per-ip", quota)
        .legacy_headers(legacy)
        .build();
    Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(layer)
}

#[tokio::test]
async fn admitted_responses_carry_the_drafts_fields() {
    let http = Http::new(serve(app(3, false)).await);
    let reply = http.get("/", &[]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(&reply.body[..], b"hello");
    let (name, params) = item(reply.header("ratelimit-policy").unwrap());
    assert_eq!(name, "per-ip");
    assert_eq!(int(&params, "q"), Some(3));
    assert_eq!(int(&params, "w"), Some(60));
    let (name, params) = item(reply.header("ratelimit").unwrap());
    assert_eq!(name, "per-ip");
    assert_eq!(int(&params, "r"), Some(2));
    // The keyed window says when it ends: within the minute, never 0 while it counts.
    let t = int(&params, "t").expect("`t` from the in-process policy");
    assert!((1..=60).contains(&t), "{t}");
    assert!(reply.header("x-ratelimit-limit").is_none());
    let (_, r, later) = http.get("/", &[]).await.ratelimit();
    assert_eq!(r, Some(1));
    // The same window: its end does not move away.
    assert!(later.is_some_and(|later| later <= t), "{later:?} after {t}");
}

/// A rule set on a manual clock behind the layer: `t` of an admission is when the rule is
/// whole again, to the second, for each algorithm a rule builds; on a refusal, when to
/// retry (as `Retry-After`).
#[tokio::test]
async fn in_process_admissions_say_when_the_limit_is_whole_again() {
    let clock = ManualClock::new();
    let rules = Arc::new(RuleSet::with_clock(clock.clone()));
    rules
        .reload_str(
            Format::Yaml,
            "rules:\n\
             - {name: fixed, resource: /fixed, key: client_ip, algorithm: fixed_window, rate: 10/min}\n\
             - {name: sliding, resource: /sliding, key: client_ip, algorithm: sliding_window, rate: 10/min}\n\
             - {name: log, resource: /log, key: client_ip, algorithm: sliding_log, rate: 10/min}\n\
             - {name: bucket, resource: /bucket, key: client_ip, algorithm: token_bucket, rate: 1/s, burst: 5}\n\
             - {name: global, resource: /global, key: global, algorithm: token_bucket, rate: 1/s, burst: 5}\n",
        )
        .unwrap();
    let layer = RateLimitLayer::builder(rules).legacy_headers(true).build();
    let mut app = Router::new();
    for route in ["/fixed", "/sliding", "/log", "/bucket", "/global"] {
        app = app.route(route, get(|| async { "ok" }));
    }
    let http = Http::new(serve(app.layer(layer)).await);
    clock.advance(Duration::from_secs(20));
    // (route, `t` of the first admission, `t` of the second, 1 s later); each case 2 s
    // after the one before.
    let cases = [
        // At 20 s: the minute's window ends 40 s from now, then 39.
        ("/fixed", 40, 39),
        // At 22 s: its 6 s bucket [18 s, 24 s) leaves the window at 78 s: 56 s, then 55.
        ("/sliding", 56, 55),
        // The newest entry leaves a minute after it came.
        ("/log", 60, 60),
        // One token back per second: one missing, then (one back, one more taken) one.
        ("/bucket", 1, 1),
        ("/global", 1, 1),
    ];
    for (route, first, second) in cases {
        let reply = http.get(route, &[]).await;
        assert_eq!(reply.status, 200, "{route}");
        let (_, _, t) = reply.ratelimit();
        assert_eq!(t, Some(first), "{route}");
        assert_eq!(reply.header("x-ratelimit-reset"), Some(&*first.to_string()));
        clock.advance(Duration::from_secs(1));
        assert_eq!(
            http.get(route, &[]).await.ratelimit().2,
            Some(second),
            "{route}"
        );
        clock.advance(Duration::from_secs(1));
    }
    // A bucket emptied: `t` of the last admission is the whole refill, and the refusal's
    // `t` is its `Retry-After`, the next token.
    let mut last = None;
    loop {
        let reply = http.get("/bucket", &[]).await;
        if reply.status == 429 {
            let retry_after: i64 = reply.header("retry-after").unwrap().parse().unwrap();
            assert_eq!(
                (retry_after, reply.ratelimit()),
                (1, ("bucket".into(), Some(0), Some(1)))
            );
            break;
        }
        last = Some(reply.ratelimit());
    }
    assert_eq!(last, Some(("bucket".into(), Some(0), Some(5))));
}

#[tokio::test]
async fn a_refusal_is_429_with_retry_after_and_problem_json() {
    let http = Http::new(serve(app(1, true)).await);
    let first = http.get("/", &[]).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("x-ratelimit-limit"), Some("1"));
    assert_eq!(first.header("x-ratelimit-remaining"), Some("0"));
    let refused = http.get("/", &[]).await;
    assert_eq!(refused.status, 429);
    let retry_after: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let (name, params) = item(refused.header("ratelimit").unwrap());
    assert_eq!(name, "per-ip");
    assert_eq!(int(&params, "r"), Some(0));
    // Retry-After is not before the end of the effective window (rev. 11 §6).
    assert_eq!(int(&params, "t"), Some(retry_after as i64));
    assert_eq!(
        int(&item(refused.header("ratelimit-policy").unwrap()).1, "q"),
        Some(1)
    );
    assert_eq!(
        refused.header("content-type"),
        Some("application/problem+json")
    );
    let problem = refused.json();
    assert_eq!(
        problem["type"],
        "https://iana.org/assignments/http-problem-types#quota-exceeded"
    );
    assert_eq!(problem["status"], 429);
    assert_eq!(problem["violated-policies"], serde_json::json!(["per-ip"]));
    assert!(problem["title"].is_string() && problem["detail"].is_string());
    assert_eq!(refused.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(
        refused.header("x-ratelimit-reset"),
        Some(&*retry_after.to_string())
    );
}

#[tokio::test]
async fn a_grpc_request_is_refused_with_resource_exhausted_trailers_only() {
    let http = Http::new(serve(app(1, false)).await);
    let grpc = [
        ("content-type", &b"application/grpc"[..]),
        ("te", b"trailers"),
    ];
    assert_eq!(http.get("/", &grpc).await.status, 200);
    let refused = http.get("/", &grpc).await;
    assert_eq!(
        refused.status, 200,
        "gRPC carries its status in grpc-status"
    );
    assert_eq!(refused.header("grpc-status"), Some("8"));
    assert_eq!(refused.header("content-type"), Some("application/grpc"));
    assert!(refused.header("grpc-message").unwrap().contains("per-ip"));
    assert!(refused.body.is_empty(), "trailers-only: no body");
}
