//! The answers over real HTTP: `RateLimit-Policy` and `RateLimit` parsed as structured
//! fields (draft-ietf-httpapi-ratelimit-headers rev. 11), 429 with `Retry-After` and
//! problem+json, legacy headers, gRPC's RESOURCE_EXHAUSTED.

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
use ringlimit_tower::{
    Backend, Client, ClientKeys, ClientRequest, Decided, Quota, RateLimitLayer, Verdict,
};

use crate::common::{int, item, one_a_minute_by_id, rules, serve, Http};

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

/// A backend that always refuses with "never" (`Duration::MAX`, the core bucket's NEVER) or
/// with zero.
struct Refuses(Duration);

impl Backend for Refuses {
    fn decide(this: &Arc<Self>, _: &ClientRequest<'_>) -> Decided {
        Decided::Now(Verdict::Refused {
            policy: "p".into(),
            available: Some(u64::MAX),
            retry_after: this.0,
            quota: None,
        })
    }
}

/// Header numbers stay within the structured-field integer range (15 digits), and a
/// refusal's "never" (`Duration::MAX`) or zero retry is a valid `Retry-After` of at least 1.
#[tokio::test]
async fn header_numbers_stay_in_range() {
    for (wait, want) in [(Duration::MAX, "999999999999999"), (Duration::ZERO, "1")] {
        let layer = RateLimitLayer::builder(Arc::new(Refuses(wait)))
            .keys(ClientKeys::new())
            .quota("p", Quota::new(u64::MAX, Duration::MAX))
            .legacy_headers(true)
            .build();
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer);
        let http = Http::new(serve(app).await);
        let reply = http.get("/", &[]).await;
        assert_eq!(reply.status, 429);
        assert_eq!(reply.header("retry-after"), Some(want));
        for name in ["ratelimit", "ratelimit-policy"] {
            let value = reply.header(name).unwrap();
            sfv::Parser::new(value)
                .parse::<sfv::List>()
                .unwrap_or_else(|e| panic!("{name}: {value}: {e}"));
        }
        assert_eq!(
            reply.header("ratelimit-policy"),
            Some(r#""p";q=999999999999999;w=999999999999999"#)
        );
        assert_eq!(
            reply.header("ratelimit"),
            Some(format!(r#""p";r=999999999999999;t={want}"#).as_str())
        );
        assert_eq!(reply.header("x-ratelimit-limit"), Some("999999999999999"));
    }
}

/// gRPC answers say one thing: grpc-web gets its own content type back, and HTTP 403 is
/// gRPC's PERMISSION_DENIED.
#[tokio::test]
async fn grpc_answers_say_one_thing() {
    let http = Http::new(serve(one_a_minute_by_id()).await);
    let denied = http
        .get("/", &[("content-type", b"application/grpc")])
        .await;
    assert_eq!(denied.header("grpc-status"), Some("7"));
    assert_eq!(denied.header("content-type"), Some("application/grpc"));
    let web = http
        .get(
            "/",
            &[
                ("content-type", b"application/grpc-web-text+proto"),
                ("x-user-id", b"a"),
            ],
        )
        .await;
    assert_eq!(web.status, 200, "admitted");
    let web = http
        .get(
            "/",
            &[
                ("content-type", b"application/grpc-web-text+proto"),
                ("x-user-id", b"a"),
            ],
        )
        .await;
    assert_eq!(web.header("grpc-status"), Some("8"));
    assert_eq!(
        web.header("content-type"),
        Some("application/grpc-web-text+proto")
    );
}

/// A rule set reloaded right after each decision, before the layer writes the response's
/// headers (a reload landing between a check and its response): the files in turn.
struct ReloadsAfterDeciding {
    rules: Arc<RuleSet>,
    files: [&'static str; 2],
    next: std::sync::atomic::AtomicUsize,
}

impl Backend for ReloadsAfterDeciding {
    fn decide(this: &Arc<Self>, request: &ClientRequest<'_>) -> Decided {
        let decided = Backend::decide(&this.rules, request);
        let next = this.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        this.rules
            .reload_str(Format::Yaml, this.files[next % 2])
            .unwrap();
        decided
    }
}

/// `RateLimit-Policy` advertises the quota the request was decided under, even when the
/// rules are reloaded between the decision and the response.
#[tokio::test]
async fn the_advertised_quota_is_the_one_that_decided() {
    let two = "rules:\n  - {name: per-ip, key: client_ip, algorithm: fixed_window, limit: 2, window: 1m}\n";
    let one = "rules:\n  - {name: per-ip, key: client_ip, algorithm: fixed_window, limit: 1, window: 1m}\n";
    let backend = Arc::new(ReloadsAfterDeciding {
        rules: rules(two),
        files: [one, two],
        next: std::sync::atomic::AtomicUsize::new(0),
    });
    let layer = RateLimitLayer::builder(backend).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let http = Http::new(serve(app).await);
    // Decided under 2 a minute (then reloaded to 1), refused under 1 (then reloaded to 2),
    // admitted under 2 (the last).
    let admitted = http.get("/", &[]).await;
    assert_eq!(admitted.status, 200);
    assert_eq!(
        admitted.header("ratelimit-policy"),
        Some(r#""per-ip";q=2;w=60"#)
    );
    let refused = http.get("/", &[]).await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.header("ratelimit-policy"),
        Some(r#""per-ip";q=1;w=60"#)
    );
    let last = http.get("/", &[]).await;
    assert_eq!(last.status, 200);
    assert_eq!(
        last.header("ratelimit-policy"),
        Some(r#""per-ip";q=2;w=60"#)
    );
    assert_eq!(last.ratelimit().1, Some(0));
}
