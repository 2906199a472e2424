//! The layer over Redis (feature `redis`), against a real `redis-server` on a loopback
//! port: the fleet's count in the headers (`r` and `t`), then the server killed: a
//! fail-open limiter serves without `RateLimit` (nothing was counted), a fail-closed one
//! answers 503 `temporary-reduced-capacity`, neither saying anything false.
//!
//! Without `redis-server` the test says SKIPPED (and appends the line to the file named by
//! `RINGLIMIT_SKIP_LOG`, which CI checks); under `CI` a missing server is a failure.
#![cfg(feature = "redis")]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use http::HeaderName;
use ringlimit::WindowQuota;
use ringlimit_redis::{Algorithm, Connection, OnFailure, RedisLimiter, RedisPolicy};
use ringlimit_tower::{Client, ClientKeys, Missing, RateLimitLayer};

use crate::common::{serve, Http};

/// A `redis-server` on a free loopback port, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Option<Server> {
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let spawned = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(error) => {
            let line = format!("SKIPPED: ringlimit-tower tests/http/redis.rs: redis-server not found ({error}; apt-get install redis-server)");
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
            assert!(!ci, "{line}");
            eprintln!("{line}");
            if let Some(log) = std::env::var_os("RINGLIMIT_SKIP_LOG").filter(|l| !l.is_empty()) {
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .unwrap();
                writeln!(file, "{line}").unwrap();
            }
            return None;
        }
    };
    let server = Server { child, port };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "redis-server did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

/// An app limited to `limit` a minute per client address on Redis, failing as `on_failure`
/// (a sliding window: no epoch-aligned boundary for the test to straddle).
async fn app(connection: &Connection, name: &str, limit: u64, on_failure: OnFailure) -> Http {
    let quota = WindowQuota::per_minute(limit).unwrap();
    let limiter = RedisLimiter::builder(connection, name, Algorithm::SlidingWindow(quota))
        .on_failure(on_failure)
        .build()
        .unwrap();
    let policy = RedisPolicy::builder()
        .dimension("per-ip", &limiter, |client: &Client| {
            client.ip_key().map(|key| key.to_string())
        })
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy))
        .quota("per-ip", quota)
        .build();
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
async fn headers_follow_who_decided() {
    let Some(server) = start() else { return };
    let connection = Connection::open(&format!("redis://127.0.0.1:{}/", server.port)).unwrap();
    let fleet = app(&connection, "fleet", 2, OnFailure::Closed).await;
    let open = app(&connection, "open", 2, OnFailure::Open).await;
    let closed = app(&connection, "closed", 2, OnFailure::Closed).await;

    // Redis decides: the fleet's remaining count, and when the window ends.
    let first = fleet.get("/", &[]).await;
    assert_eq!(first.status, 200);
    assert_eq!(
        first.header("ratelimit-policy"),
        Some(r#""per-ip";q=2;w=60"#)
    );
    let ratelimit = first.header("ratelimit").unwrap();
    let t: u64 = ratelimit
        .strip_prefix(r#""per-ip";r=1;t="#)
        .unwrap_or_else(|| panic!("{ratelimit}"))
        .parse()
        .unwrap();
    assert!((1..=60).contains(&t), "{ratelimit}");
    assert!(fleet
        .get("/", &[])
        .await
        .header("ratelimit")
        .unwrap()
        .starts_with(r#""per-ip";r=0;"#));
    let refused = fleet.get("/", &[]).await;
    assert_eq!(refused.status, 429);
    assert!(refused.header("retry-after").is_some());
    assert_eq!(
        open.get("/", &[])
            .await
            .header("ratelimit")
            .map(|r| r.starts_with(r#""per-ip";r=1;"#)),
        Some(true)
    );

    // Redis goes away.
    drop(server);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let served = open.get("/", &[]).await;
    assert_eq!(served.status, 200, "fails open");
    assert_eq!(
        served.header("ratelimit-policy"),
        Some(r#""per-ip";q=2;w=60"#)
    );
    assert_eq!(
        served.header("ratelimit"),
        None,
        "nothing was counted: no remaining"
    );
    let unavailable = closed.get("/", &[]).await;
    assert_eq!(unavailable.status, 503, "fails closed");
    assert_eq!(unavailable.header("ratelimit"), None);
    assert!(unavailable.header("retry-after").is_some());
    assert_eq!(
        unavailable.json()["type"],
        "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
    );
    // `violated-policies` is `quota-exceeded`'s member, not this one's.
    assert_eq!(unavailable.json().get("violated-policies"), None);
}

/// A trivial inner service.
#[derive(Clone)]
struct Ok200;

impl tower_service::Service<http::Request<String>> for Ok200 {
    type Response = http::Response<String>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<http::Response<String>, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<String>) -> Self::Future {
        std::future::ready(Ok(http::Response::new("ok".into())))
    }
}

/// A response dropped while a policy over two connections decides (a timeout layer, a
/// client gone) still refunds the first group's grant: the decision runs to its end as a
/// task, and the `global` limit loses no permit.
#[tokio::test]
async fn a_dropped_decision_still_refunds_its_grants() {
    use tower_layer::Layer;
    use tower_service::Service;
    let (Some(a), Some(b)) = (start(), start()) else {
        return;
    };
    let on_a = Connection::open(&format!("redis://127.0.0.1:{}/", a.port)).unwrap();
    let on_b = Connection::open(&format!("redis://127.0.0.1:{}/", b.port))
        .unwrap()
        .timeout(Duration::from_secs(5));
    let global = RedisLimiter::builder(
        &on_a,
        "global",
        Algorithm::SlidingWindow(WindowQuota::per_minute(2).unwrap()),
    )
    .on_failure(OnFailure::Closed)
    .build()
    .unwrap();
    let per_user = RedisLimiter::builder(
        &on_b,
        "per-user",
        Algorithm::SlidingWindow(WindowQuota::per_minute(1).unwrap()),
    )
    .on_failure(OnFailure::Closed)
    .build()
    .unwrap();
    let policy = RedisPolicy::builder()
        .dimension("global", &global, |_: &Client| Some("all".to_string()))
        .dimension("per-user", &per_user, |client: &Client| {
            client.id_str().map(str::to_owned)
        })
        .build();
    let keys = ClientKeys::new()
        .allow_missing_peer()
        .id_header(HeaderName::from_static("x-user-id"), Missing::Deny);
    let mut service = RateLimitLayer::builder(Arc::new(policy))
        .keys(keys)
        .build()
        .layer(Ok200);
    let request = |user: &str| {
        http::Request::builder()
            .header("x-user-id", user)
            .body(String::new())
            .unwrap()
    };
    // x: global 1 of 2, per-user x 1 of 1.
    assert_eq!(service.call(request("x")).await.unwrap().status(), 200);
    // x again, with per-user's server stopped: global grants its 2nd permit, per-user
    // hangs; the response is dropped there. Once per-user answers (refused), the grant on
    // global must be given back.
    let stop = |signal: &str, pid: u32| {
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    stop("-STOP", b.child.id());
    let dropped =
        tokio::time::timeout(Duration::from_millis(300), service.call(request("x"))).await;
    assert!(
        dropped.is_err(),
        "decided while per-user's server was stopped"
    );
    stop("-CONT", b.child.id());
    tokio::time::sleep(Duration::from_millis(500)).await;
    // y: global has its 2nd permit back; per-user y has room.
    let y = service.call(request("y")).await.unwrap();
    assert_eq!(y.status(), 200, "global's permit leaked: {:?}", y.headers());
}
