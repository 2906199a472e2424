//! Regressions for the review of the layer, over real HTTP on loopback: the client's own
//! part of a forwarding header never changes its key, `Forwarded` parameters are read with
//! their quotes, obfuscated ports, IPv4-mapped proxy networks, api-key rules, a server
//! without the peer's address, header keys' size, header numbers' range, gRPC answers, and
//! a repeated id header; from the second review, the quota advertised for a request decided
//! before a reload, and an inner service whose `poll_ready` failed.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use http::HeaderName;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::TscClock;
use ringlimit::keyed::{FixedWindows, IpKey, Keyed};
use ringlimit::policy::Policy;
use ringlimit::rules::{Format, RuleSet};
use ringlimit::{FixedWindow, WindowQuota};
use ringlimit_tower::{
    Backend, Client, ClientKeys, ClientRequest, Decided, Missing, Quota, RateLimitLayer,
    TrustedProxies, Verdict,
};

use common::{serve, Http};

/// One permit per minute per client address, the loopback peer a trusted proxy writing
/// `header`'s kind.
fn per_ip(proxies: TrustedProxies) -> (Router, Arc<Keyed<IpKey, FixedWindows>>) {
    let per_ip = Arc::new(Keyed::<IpKey, FixedWindows>::with_config(
        WindowConfig::new(WindowQuota::per_minute(1).unwrap()).unwrap(),
        TscClock::new(),
    ));
    let policy = Policy::builder()
        .per_key("per-ip", per_ip.clone(), Client::ip_key)
        .build();
    let keys = ClientKeys::new().trusted_proxies(proxies);
    let layer = RateLimitLayer::builder(Arc::new(policy)).keys(keys).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    (app, per_ip)
}

fn key(ip: &str) -> IpKey {
    IpKey::new(ip.parse().unwrap())
}

/// Finding 1: a non-text byte or an open quote in the client's (left) part of the line
/// keyed the client by the proxy: a second bucket at will, and the proxy's bucket used up.
#[tokio::test]
async fn the_clients_own_bytes_left_of_the_walk_change_nothing() {
    let (app, per_ip) = per_ip(TrustedProxies::x_forwarded_for(["127.0.0.0/8"
        .parse()
        .unwrap()]));
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
    per_ip(TrustedProxies::forwarded(["127.0.0.0/8".parse().unwrap()]))
}

/// Finding 2: a `for=` inside another parameter's quoted value (a proxy that writes the
/// client's Host) chose the key; a duplicate `for` was taken.
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

/// Finding 4: obfuscated ports and quoted-pairs carry a real address; all such clients
/// shared the proxy's key.
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

/// Finding 7: trusted networks written IPv4-mapped (`::ffff:127.0.0.0/104`) match.
#[tokio::test]
async fn ipv4_mapped_proxy_networks_are_trusted() {
    let (app, per_ip) = per_ip(TrustedProxies::x_forwarded_for(["::ffff:127.0.0.0/104"
        .parse()
        .unwrap()]));
    let http = Http::new(serve(app).await);
    let reply = http.get("/", &[("x-forwarded-for", b"203.0.113.9")]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(per_ip.available(&key("203.0.113.9")), 0);
    assert_eq!(per_ip.available(&key("127.0.0.1")), 1);
}

fn rules(yaml: &str) -> Arc<RuleSet> {
    let rules = RuleSet::new();
    rules.reload_str(Format::Yaml, yaml).unwrap();
    Arc::new(rules)
}

/// Finding 3: a rule keyed by `api_key` limits (it admitted everything).
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

/// Finding 5: served without the peer's address, per-address limits were skipped silently
/// (every request admitted). Now a 500 that names the fix.
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

/// Finding 6: a `header:<name>` key of any size went into the keyed map (60 KB confirmed).
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

/// Finding 10: header numbers over 15 digits made parsers reject the field;
/// `Duration::MAX` overflowed (a panic in debug, `Retry-After: 0` in release).
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

fn grpc_app() -> Router {
    let policy = Policy::<Client>::builder()
        .shared(
            "global",
            Arc::new(FixedWindow::new(WindowQuota::per_minute(1).unwrap())),
        )
        .build();
    let keys = ClientKeys::new().id_header(HeaderName::from_static("x-user-id"), Missing::Deny);
    let layer = RateLimitLayer::builder(Arc::new(policy)).keys(keys).build();
    Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer)
}

/// Finding 12: grpc-web gets its own content type back; 403 is PERMISSION_DENIED.
#[tokio::test]
async fn grpc_answers_say_one_thing() {
    let http = Http::new(serve(grpc_app()).await);
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

/// Finding 13: two instances of the id header are refused (the limit read the first, the
/// upstream may authenticate the last).
#[tokio::test]
async fn a_repeated_id_header_is_malformed() {
    let http = Http::new(serve(grpc_app()).await);
    let reply = http
        .get("/", &[("x-user-id", b"alice"), ("x-user-id", b"mallory")])
        .await;
    assert_eq!(reply.status, 400);
}

/// An inner service that reserves capacity in `poll_ready` (as `ConcurrencyLimit` and
/// `Buffer` do) and releases it in `call`.
struct Reserving {
    reserved: Arc<std::sync::atomic::AtomicUsize>,
    holding: bool,
}

impl Clone for Reserving {
    fn clone(&self) -> Self {
        Self {
            reserved: self.reserved.clone(),
            holding: false,
        }
    }
}

impl tower_service::Service<http::Request<String>> for Reserving {
    type Response = http::Response<String>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<http::Response<String>, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        if !self.holding {
            self.holding = true;
            self.reserved
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        assert!(self.holding, "called without poll_ready");
        self.holding = false;
        self.reserved
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        std::future::ready(Ok(http::Response::new("ok".into())))
    }
}

/// Finding 9: a refused request left the inner service's `poll_ready` reservation pinned
/// under a driver that keeps one service (a `Buffer` worker, `call_all`, a connection loop).
#[tokio::test]
async fn a_refused_request_reserves_nothing_in_the_inner_service() {
    use tower_layer::Layer;
    use tower_service::Service;
    let policy = Policy::<Client>::builder()
        .shared(
            "global",
            Arc::new(FixedWindow::new(WindowQuota::per_minute(1).unwrap())),
        )
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy))
        .keys(ClientKeys::new().allow_missing_peer())
        .build();
    let reserved = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut service = layer.layer(Reserving {
        reserved: reserved.clone(),
        holding: false,
    });
    let count = || reserved.load(std::sync::atomic::Ordering::SeqCst);
    // One service driven as a driver drives it: ready, call; ready, call.
    std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .unwrap();
    let admitted = service
        .call(http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(admitted.status(), 200);
    assert_eq!(count(), 0);
    std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .unwrap();
    let refused = service
        .call(http::Request::new(String::new()))
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(
        count(),
        0,
        "the refusal left a reservation in the inner service"
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

/// Second review, finding 1: `RateLimit-Policy`'s quota was looked up when the response
/// was written, from the rules then in force: after a reload in between, it advertised a
/// quota the request was not decided under.
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

/// An inner service whose `poll_ready` fails the first time any of its clones is polled;
/// the clone that failed stays failed (its clones too), and says so if called.
#[derive(Clone)]
struct FailsOnce {
    failed: Arc<std::sync::atomic::AtomicBool>,
    broken: bool,
}

impl tower_service::Service<http::Request<String>> for FailsOnce {
    type Response = http::Response<String>;
    type Error = &'static str;
    type Future = std::future::Ready<Result<http::Response<String>, &'static str>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), &'static str>> {
        if self.broken || !self.failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.broken = true;
            return std::task::Poll::Ready(Err("not ready"));
        }
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        std::future::ready(match self.broken {
            true => Err("called after its poll_ready failed"),
            false => Ok(http::Response::new("ok".into())),
        })
    }
}

/// Second review, finding 3: after the inner service's `poll_ready` failed, the failed
/// service stayed the layer's and was polled and called for later requests (tower: a
/// service whose `poll_ready` failed is not to be used again).
#[tokio::test]
async fn a_failed_inner_service_is_not_used_again() {
    use tower_layer::Layer;
    use tower_service::Service;
    let policy = Policy::<Client>::builder()
        .shared(
            "global",
            Arc::new(FixedWindow::new(WindowQuota::per_minute(100).unwrap())),
        )
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy))
        .keys(ClientKeys::new().allow_missing_peer())
        .build();
    let mut service = layer.layer(FailsOnce {
        failed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        broken: false,
    });
    // One service driven as a connection loop drives it: ready, call; ready, call.
    let mut results = Vec::new();
    for _ in 0..3 {
        std::future::poll_fn(|cx| service.poll_ready(cx))
            .await
            .unwrap();
        let response = service.call(http::Request::new(String::new())).await;
        results.push(response.map(|response| response.status()));
    }
    assert_eq!(
        results,
        [
            Err("not ready"),
            Ok(http::StatusCode::OK),
            Ok(http::StatusCode::OK)
        ]
    );
    // Its clones too.
    let mut clone = service.clone();
    let response = clone.call(http::Request::new(String::new())).await.unwrap();
    assert_eq!(response.status(), 200);
}
