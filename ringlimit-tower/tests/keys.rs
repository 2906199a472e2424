//! Client keys over real HTTP: trusted proxies walked from the right (a spoofed left-most
//! `X-Forwarded-For` changes nothing), IPv6 grouped by /64, the id header's missing rule,
//! routes rather than raw paths.

mod common;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use http::HeaderName;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::TscClock;
use ringlimit::keyed::{FixedWindows, IpKey, Keyed};
use ringlimit::policy::Policy;
use ringlimit::WindowQuota;
use ringlimit_tower::{Client, ClientKeys, Missing, RateLimitLayer, TrustedProxies};

use common::{serve, Http};

/// One permit per minute per client address; the loopback peer is a trusted proxy.
fn per_ip(
    limit: u64,
    proxies: Option<TrustedProxies>,
) -> (Router, Arc<Keyed<IpKey, FixedWindows>>) {
    let per_ip = Arc::new(Keyed::<IpKey, FixedWindows>::with_config(
        WindowConfig::new(WindowQuota::per_minute(limit).unwrap()).unwrap(),
        TscClock::new(),
    ));
    let policy = Policy::builder()
        .per_key("per-ip", per_ip.clone(), Client::ip_key)
        .build();
    let mut keys = ClientKeys::new();
    if let Some(proxies) = proxies {
        keys = keys.trusted_proxies(proxies);
    }
    let layer = RateLimitLayer::builder(Arc::new(policy)).keys(keys).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    (app, per_ip)
}

fn loopback_proxy() -> TrustedProxies {
    TrustedProxies::x_forwarded_for(["127.0.0.0/8".parse().unwrap()])
}

#[tokio::test]
async fn a_spoofed_left_most_x_forwarded_for_does_not_change_the_key() {
    let (app, per_ip) = per_ip(2, Some(loopback_proxy()));
    let http = Http::new(serve(app).await);
    // The client writes a new left-most address each time; the trusted proxy (the loopback
    // peer) appended the address it saw, 203.0.113.5. A limiter keyed by the left-most
    // entry (tower-governor's) would admit all ten.
    let mut statuses = Vec::new();
    for n in 0..10 {
        let xff = format!("6.6.6.{n}, 203.0.113.5");
        statuses.push(
            http.get("/", &[("x-forwarded-for", xff.as_bytes())])
                .await
                .status,
        );
    }
    assert_eq!(
        statuses.iter().filter(|s| s.is_success()).count(),
        2,
        "{statuses:?}"
    );
    assert_eq!(per_ip.len(), 1, "one key: the proxy's view of the client");
    assert_eq!(
        per_ip.available(&IpKey::new("203.0.113.5".parse().unwrap())),
        0
    );
    // Another client behind the same proxy has its own limit.
    let other = http
        .get("/", &[("x-forwarded-for", b"6.6.6.0, 203.0.113.6")])
        .await;
    assert_eq!(other.status, 200);
}

#[tokio::test]
async fn forwarding_headers_from_an_untrusted_peer_are_ignored() {
    // No trusted proxy: the header is the client's own words.
    let (app, per_ip) = per_ip(
        1,
        Some(TrustedProxies::x_forwarded_for(["10.0.0.0/8"
            .parse()
            .unwrap()])),
    );
    let http = Http::new(serve(app).await);
    assert_eq!(
        http.get("/", &[("x-forwarded-for", b"203.0.113.1")])
            .await
            .status,
        200
    );
    assert_eq!(
        http.get("/", &[("x-forwarded-for", b"203.0.113.2")])
            .await
            .status,
        429
    );
    assert_eq!(
        per_ip.available(&IpKey::new("127.0.0.1".parse().unwrap())),
        0
    );
}

#[tokio::test]
async fn ipv6_addresses_in_one_slash_64_share_a_limit() {
    let (app, _) = per_ip(2, Some(loopback_proxy()));
    let http = Http::new(serve(app).await);
    let from = |ip: &'static str| [("x-forwarded-for", ip.as_bytes())];
    assert_eq!(http.get("/", &from("2001:db8:1:2::1")).await.status, 200);
    assert_eq!(
        http.get("/", &from("2001:db8:1:2:ffff:ffff:ffff:fffe"))
            .await
            .status,
        200
    );
    // A third address of the same /64: the /64's limit is spent.
    assert_eq!(
        http.get("/", &from("2001:db8:1:2:abcd::7")).await.status,
        429
    );
    // The next /64 is another client.
    assert_eq!(http.get("/", &from("2001:db8:1:3::1")).await.status, 200);
}

/// One permit per minute per id; requests without one follow `missing`.
async fn per_id(missing: Missing) -> Http {
    let per_id = Arc::new(Keyed::<Arc<str>, FixedWindows>::with_config(
        WindowConfig::new(WindowQuota::per_minute(1).unwrap()).unwrap(),
        TscClock::new(),
    ));
    let policy = Policy::builder()
        .per_key("per-user", per_id, Client::id_key)
        .build();
    let keys = ClientKeys::new().id_header(HeaderName::from_static("x-user-id"), missing);
    let layer = RateLimitLayer::builder(Arc::new(policy)).keys(keys).build();
    Http::new(
        serve(
            Router::new()
                .route("/", get(|| async { "ok" }))
                .layer(layer),
        )
        .await,
    )
}

#[tokio::test]
async fn a_missing_user_header_follows_its_rule() {
    // Deny: 403 with a problem body, the service not called.
    let deny = per_id(Missing::Deny).await;
    let refused = deny.get("/", &[]).await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.header("content-type"),
        Some("application/problem+json")
    );
    assert!(refused.json()["detail"]
        .as_str()
        .unwrap()
        .contains("x-user-id"));
    assert_eq!(deny.get("/", &[("x-user-id", b"alice")]).await.status, 200);
    assert_eq!(deny.get("/", &[("x-user-id", b"alice")]).await.status, 429);
    assert_eq!(
        deny.get("/", &[("x-user-id", b"")]).await.status,
        403,
        "empty is missing"
    );

    // Shared: every anonymous request shares one limit.
    let shared = per_id(Missing::Shared("anonymous".into())).await;
    assert_eq!(shared.get("/", &[]).await.status, 200);
    assert_eq!(shared.get("/", &[]).await.status, 429);
    assert_eq!(shared.get("/", &[("x-user-id", b"bob")]).await.status, 200);

    // Allow: not limited per user at all.
    let allow = per_id(Missing::Allow).await;
    for _ in 0..5 {
        assert_eq!(allow.get("/", &[]).await.status, 200);
    }
    assert_eq!(allow.get("/", &[("x-user-id", b"bob")]).await.status, 200);
    assert_eq!(allow.get("/", &[("x-user-id", b"bob")]).await.status, 429);
}

#[tokio::test]
async fn a_non_utf8_or_oversized_id_is_a_typed_400() {
    let http = per_id(Missing::Allow).await;
    let reply = http.get("/", &[("x-user-id", b"\xff\xfe")]).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.header("content-type"),
        Some("application/problem+json")
    );
    let long = vec![b'a'; ringlimit_tower::MAX_ID_LEN + 1];
    assert_eq!(http.get("/", &[("x-user-id", &long)]).await.status, 400);
    let longest = vec![b'a'; ringlimit_tower::MAX_ID_LEN];
    assert_eq!(http.get("/", &[("x-user-id", &longest)]).await.status, 200);
}

#[tokio::test]
async fn malformed_and_oversized_forwarding_headers_key_by_the_proxy() {
    let (app, per_ip) = per_ip(1_000, Some(loopback_proxy()));
    let http = Http::new(serve(app).await);
    let proxy = IpKey::new("127.0.0.1".parse().unwrap());
    let huge = vec!["127.0.0.1"; 5_000].join(", "); // 55 kB, all trusted: too many hops
    let bad: [&[u8]; 5] = [
        b"not an address",
        b"\xff\xfe",
        b"unknown",
        b",,,",
        huge.as_bytes(),
    ];
    for (i, value) in bad.into_iter().enumerate() {
        let reply = http.get("/", &[("x-forwarded-for", value)]).await;
        assert_eq!(reply.status, 200, "served, keyed by the proxy");
        assert_eq!(per_ip.available(&proxy), 1_000 - 1 - i as u64);
    }
    assert_eq!(per_ip.len(), 1);
}

#[tokio::test]
async fn thousands_of_distinct_paths_make_one_route_key() {
    let per_route = Arc::new(Keyed::<Arc<str>, FixedWindows>::with_config(
        WindowConfig::new(WindowQuota::per_minute(10).unwrap()).unwrap(),
        TscClock::new(),
    ));
    let policy = Policy::builder()
        .per_key("per-route", per_route.clone(), Client::route_key)
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy)).build();
    let app = Router::new()
        .route("/items/{id}", get(|| async { "item" }))
        .layer(layer);
    let http = Http::new(serve(app).await);
    let mut admitted = 0;
    for n in 0..2_000 {
        let reply = http.get(&format!("/items/{n}-{}", n * 7919), &[]).await;
        admitted += usize::from(reply.status == 200);
    }
    assert_eq!(admitted, 10);
    assert_eq!(per_route.len(), 1, "keys are routes, not paths");
    assert_eq!(per_route.available(&Arc::<str>::from("/items/{id}")), 0);
}
