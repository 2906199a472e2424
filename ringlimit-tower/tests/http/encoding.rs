//! Bytes that are not plain ASCII, over real HTTP: header values keyed by their bytes
//! (never unlimited), and policy names written one way in every place they appear.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use ringlimit::rules::{Format, RuleSet};
use ringlimit_tower::RateLimitLayer;

use crate::common::{item, serve, Http};

fn app(yaml: &str) -> Router {
    let rules = RuleSet::new();
    rules.reload_str(Format::Yaml, yaml).unwrap();
    Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::builder(Arc::new(rules)).build())
}

const API_KEY_RULE: &str = "rules:\n  - {name: per-key, key: \"header:X-Api-Key\", algorithm: fixed_window, rate: 2/min}\n";

/// Each value, sent `times` times: the statuses and whether each carried `RateLimit`.
async fn send(http: &Http, value: &[u8], times: usize) -> Vec<(u16, bool)> {
    let mut seen = Vec::new();
    for _ in 0..times {
        let reply = http.get("/", &[("x-api-key", value)]).await;
        seen.push((reply.status.as_u16(), reply.header("ratelimit").is_some()));
    }
    seen
}

#[tokio::test]
async fn a_header_value_that_is_not_text_is_still_a_key() {
    let http = Http::new(serve(app(API_KEY_RULE)).await);
    let limited = vec![(200, true), (200, true), (429, true), (429, true)];
    assert_eq!(send(&http, b"k1", 4).await, limited);
    // Latin-1 é: not UTF-8. Its own key, limited like any other.
    assert_eq!(send(&http, b"k1\xe9", 4).await, limited);
    // Other bytes make other keys: k1\xe8 is not k1\xe9.
    assert_eq!(send(&http, b"k1\xe8", 4).await, limited);
}

#[tokio::test]
async fn a_utf8_header_value_is_its_own_key() {
    let http = Http::new(serve(app(API_KEY_RULE)).await);
    let limited = vec![(200, true), (200, true), (429, true)];
    assert_eq!(send(&http, "k1é".as_bytes(), 3).await, limited);
    assert_eq!(send(&http, "k1è".as_bytes(), 3).await, limited);
    // And a value of invalid bytes is not confused with any text: its own key again.
    assert_eq!(send(&http, b"k1\xc3", 3).await, limited);
}

#[tokio::test]
async fn a_long_value_of_any_bytes_is_cut_to_a_bounded_key() {
    let http = Http::new(serve(app(API_KEY_RULE)).await);
    let mut long = vec![0xe9_u8; 300];
    let limited = [(200, true), (200, true), (429, true)];
    assert_eq!(send(&http, &long, 2).await, limited[..2]);
    // The same first 256 bytes: the same key.
    long[299] = b'x';
    assert_eq!(send(&http, &long, 1).await, limited[2..]);
}

#[tokio::test]
async fn a_non_ascii_policy_name_is_written_the_same_way_in_headers_and_body() {
    let yaml = "rules:\n  - {name: ördér, key: client_ip, algorithm: fixed_window, rate: 1/min}\n";
    let http = Http::new(serve(app(yaml)).await);
    let admitted = http.get("/", &[]).await;
    assert_eq!(admitted.status, 200);
    let refused = http.get("/", &[]).await;
    assert_eq!(refused.status, 429);
    let (in_policy, _) = item(refused.header("ratelimit-policy").unwrap());
    let (in_ratelimit, _) = item(refused.header("ratelimit").unwrap());
    let body = refused.json();
    let in_body = body["violated-policies"][0].as_str().unwrap();
    assert_eq!(in_policy, "%C3%B6rd%C3%A9r");
    assert_eq!(in_ratelimit, in_policy);
    assert_eq!(in_body, in_policy);
    // Names that differ stay different on the wire (no two names share one spelling).
    let yaml = "rules:\n  - {name: ärdér, key: client_ip, algorithm: fixed_window, rate: 1/min}\n";
    let other = Http::new(serve(app(yaml)).await).get("/", &[]).await;
    let (other_name, _) = item(other.header("ratelimit-policy").unwrap());
    assert_ne!(other_name, in_policy);
}

#[tokio::test]
async fn a_percent_in_a_policy_name_is_encoded_so_names_never_collide() {
    let yaml =
        "rules:\n  - {name: \"%C3%A4\", key: client_ip, algorithm: fixed_window, rate: 1/min}\n";
    let http = Http::new(serve(app(yaml)).await);
    let (name, _) = item(http.get("/", &[]).await.header("ratelimit-policy").unwrap());
    assert_eq!(name, "%25C3%25A4");
}
