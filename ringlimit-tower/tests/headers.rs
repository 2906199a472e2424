//! The answers over real HTTP: `RateLimit-Policy` and `RateLimit` parsed as structured
//! fields (draft-ietf-httpapi-ratelimit-headers rev. 11), 429 with `Retry-After` and
//! problem+json, legacy headers, gRPC's RESOURCE_EXHAUSTED.

mod common;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::TscClock;
use ringlimit::keyed::{FixedWindows, IpKey, Keyed};
use ringlimit::policy::Policy;
use ringlimit::WindowQuota;
use ringlimit_tower::{Client, RateLimitLayer};
use sfv::{BareItem, FieldType, List, ListEntry, Parser};

use common::{serve, Http};

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

/// The one item of a structured-field list: its string and its parameters.
fn item(value: &str) -> (String, Vec<(String, BareItem)>) {
    let list: List = Parser::new(value).parse().expect("a structured-field list");
    assert_eq!(list.len(), 1, "{value}");
    let ListEntry::Item(item) = &list[0] else {
        panic!("an item, not an inner list: {value}");
    };
    let BareItem::String(name) = &item.bare_item else {
        panic!("the item is a String (rev. 11 §3, §4): {value}");
    };
    let params = item
        .params
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
        .collect();
    // And it serializes back to what was sent.
    assert_eq!(list.serialize().as_deref(), Some(value));
    (name.as_str().to_owned(), params)
}

fn int(params: &[(String, BareItem)], key: &str) -> Option<i64> {
    params.iter().find(|(k, _)| k == key).map(|(_, v)| match v {
        BareItem::Integer(i) => i64::from(*i),
        other => panic!("{key} is an Integer, not {other:?}"),
    })
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
    // The in-process policy does not say when the window ends: no `t` rather than a guess.
    assert_eq!(int(&params, "t"), None);
    assert!(reply.header("x-ratelimit-limit").is_none());
    assert_eq!(
        int(
            &item(http.get("/", &[]).await.header("ratelimit").unwrap()).1,
            "r"
        ),
        Some(1)
    );
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
