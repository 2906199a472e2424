//! Client keys over real HTTP: trusted proxies walked from the right (a spoofed left-most
//! `X-Forwarded-For` changes nothing), IPv6 grouped by /64, the id header's missing rule,
//! routes rather than raw paths.

use std::net::SocketAddr;
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

use crate::common::{one_a_minute_by_id, rules, serve, Http};

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

fn key(ip: &str) -> IpKey {
    IpKey::new(ip.parse().unwrap())
}

/// A non-text byte or an open quote in the client's own (left) part of a forwarding line
/// changes neither the client's key nor the proxy's bucket.
#[tokio::test]
async fn the_clients_own_bytes_left_of_the_walk_change_nothing() {
    let (app, per_ip) = per_ip(
        1,
        Some(TrustedProxies::x_forwarded_for(["127.0.0.0/8"
            .parse()
            .unwrap()])),
    );
    let http = Http::new(serve(app).await);
    let clean = http.get("/", &[("x-forwarded-for", b"203.0.113.9")]).await;
    assert_eq!(clean.status, 200);
    let dirty = http
        .get("/", &[("x-forwarded-for", b"\xff, 203.0.113.9")])
        .await;
    assert_eq!(dirty.status, 429, "the same client, the same bucket");
    assert_eq!(
        per_ip.available(&key("127.0.0.1")),
        1,
        "the proxy's untouched"
    );

    let (app, per_ip) = per_ip_forwarded();
    let http = Http::new(serve(app).await);
    assert_eq!(
        http.get("/", &[("forwarded", b"for=203.0.113.9")])
            .await
            .status,
        200
    );
    for line in [
        &b"for=\"x, for=203.0.113.9"[..],
        b"for=\"\xff, for=203.0.113.9",
    ] {
        assert_eq!(http.get("/", &[("forwarded", line)]).await.status, 429);
    }
    assert_eq!(per_ip.available(&key("127.0.0.1")), 1);
}

fn per_ip_forwarded() -> (Router, Arc<Keyed<IpKey, FixedWindows>>) {
    per_ip(
        1,
        Some(TrustedProxies::forwarded(["127.0.0.0/8".parse().unwrap()])),
    )
}

/// `Forwarded` parameters are read with their quotes: a `for=` inside another parameter's
/// quoted value (a proxy that writes the client's Host) is that value's, and an element with
/// `for` twice is malformed.
#[tokio::test]
async fn forwarded_parameters_are_read_with_their_quotes() {
    let (app, per_ip) = per_ip_forwarded();
    let http = Http::new(serve(app).await);
    let injected = http
        .get(
            "/",
            &[("forwarded", br#"host="a;for=6.6.6.6;x=";for=203.0.113.9"#)],
        )
        .await;
    assert_eq!(injected.status, 200);
    assert_eq!(per_ip.available(&key("203.0.113.9")), 0);
    assert_eq!(per_ip.len(), 1, "no key for 6.6.6.6");
    // Twice in one element: malformed, keyed by the proxy (now used up).
    let twice = http
        .get("/", &[("forwarded", b"for=198.51.100.1;for=6.6.6.7")])
        .await;
    assert_eq!(twice.status, 200);
    assert_eq!(per_ip.available(&key("127.0.0.1")), 0);
    assert_eq!(per_ip.available(&key("198.51.100.1")), 1);
    assert_eq!(per_ip.available(&key("6.6.6.7")), 1);
}

/// Obfuscated ports and quoted-pairs keep their address: each such client has its own key,
/// not the proxy's.
#[tokio::test]
async fn obfuscated_ports_key_by_the_address() {
    let (app, per_ip) = per_ip_forwarded();
    let http = Http::new(serve(app).await);
    for line in [
        &br#"for="203.0.113.9:_p1""#[..],
        br#"for="[2001:db8::1]:_abc""#,
        br#"for="\[2001:db8:0:1::1\]""#,
    ] {
        assert_eq!(http.get("/", &[("forwarded", line)]).await.status, 200);
    }
    assert_eq!(per_ip.len(), 3);
    assert_eq!(per_ip.available(&key("127.0.0.1")), 1);
}

/// Trusted networks written IPv4-mapped (`::ffff:127.0.0.0/104`) match IPv4 peers.
#[tokio::test]
async fn ipv4_mapped_proxy_networks_are_trusted() {
    let (app, per_ip) = per_ip(
        1,
        Some(TrustedProxies::x_forwarded_for(["::ffff:127.0.0.0/104"
            .parse()
            .unwrap()])),
    );
    let http = Http::new(serve(app).await);
    let reply = http.get("/", &[("x-forwarded-for", b"203.0.113.9")]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(per_ip.available(&key("203.0.113.9")), 0);
    assert_eq!(per_ip.available(&key("127.0.0.1")), 1);
}

/// A rule keyed by `api_key` limits each key.
#[tokio::test]
async fn api_key_rules_limit() {
    let rules = rules(
        "rules:\n  - {name: api, key: api_key, algorithm: fixed_window, limit: 1, window: 1m}\n",
    );
    let keys =
        ClientKeys::new().api_key_header(HeaderName::from_static("x-api-key"), Missing::Deny);
    let layer = RateLimitLayer::builder(rules).keys(keys).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let http = Http::new(serve(app).await);
    assert_eq!(http.get("/", &[("x-api-key", b"k1")]).await.status, 200);
    assert_eq!(http.get("/", &[("x-api-key", b"k1")]).await.status, 429);
    assert_eq!(http.get("/", &[("x-api-key", b"k2")]).await.status, 200);
    assert_eq!(http.get("/", &[]).await.status, 403);
    let long = vec![b'k'; ringlimit_tower::MAX_ID_LEN + 1];
    assert_eq!(http.get("/", &[("x-api-key", &long)]).await.status, 400);
}

/// Served without the peer's address, a request is answered 500 naming the fix, never
/// admitted past its per-address limits.
#[tokio::test]
async fn no_peer_address_is_an_error_not_a_bypass() {
    let policy = Policy::builder()
        .per_key(
            "per-ip",
            Arc::new(Keyed::<IpKey, FixedWindows>::with_config(
                WindowConfig::new(WindowQuota::per_minute(1).unwrap()).unwrap(),
                TscClock::new(),
            )),
            Client::ip_key,
        )
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy)).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    // `into_make_service()`: no ConnectInfo.
    tokio::spawn(async move { axum::serve(listener, app.into_make_service()).await });
    let http = Http::new(addr);
    for _ in 0..2 {
        let reply = http.get("/", &[]).await;
        assert_eq!(reply.status, 500);
        assert_eq!(
            reply.header("content-type"),
            Some("application/problem+json")
        );
        let detail = reply.json()["detail"].as_str().unwrap().to_owned();
        assert!(
            detail.contains("into_make_service_with_connect_info"),
            "{detail}"
        );
    }
}

/// A `header:<name>` key is cut to `MAX_ID_LEN` bytes: keys have a bounded size.
#[tokio::test]
async fn header_keys_are_capped() {
    let rules = rules(
        "rules:\n  - {name: h, key: \"header:x-k\", algorithm: fixed_window, limit: 1, window: 1m}\n",
    );
    let layer = RateLimitLayer::builder(rules).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let http = Http::new(serve(app).await);
    let long = |tail: u8| {
        let mut value = vec![b'a'; 20_000];
        value.push(tail);
        value
    };
    assert_eq!(http.get("/", &[("x-k", &long(b'1'))]).await.status, 200);
    // The same first MAX_ID_LEN bytes: the same (bounded) key.
    assert_eq!(http.get("/", &[("x-k", &long(b'2'))]).await.status, 429);
    assert_eq!(http.get("/", &[("x-k", b"short")]).await.status, 200);
}

/// An id header sent twice is malformed (400): the limit and the upstream could otherwise
/// read different instances.
#[tokio::test]
async fn a_repeated_id_header_is_malformed() {
    let http = Http::new(serve(one_a_minute_by_id()).await);
    let reply = http
        .get("/", &[("x-user-id", b"alice"), ("x-user-id", b"mallory")])
        .await;
    assert_eq!(reply.status, 400);
}
