//! One limit for every clone: axum builds a service per route and clones it per request
//! (axum #2634, where `tower::limit::RateLimit` limits nothing); and the limit holds exactly
//! under concurrent clients over real connections.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::TscClock;
use ringlimit::keyed::{FixedWindows, IpKey, Keyed};
use ringlimit::policy::Policy;
use ringlimit::{FixedWindow, WindowQuota};
use ringlimit_tower::{Client, ClientKeys, RateLimitLayer, TrustedProxies};

use crate::common::{serve, Http};

fn global(limit: u64) -> RateLimitLayer<Policy<Client>> {
    let global = Arc::new(FixedWindow::new(WindowQuota::per_minute(limit).unwrap()));
    let policy = Policy::builder().shared("global", global).build();
    RateLimitLayer::builder(Arc::new(policy)).build()
}

#[tokio::test]
async fn every_route_and_clone_shares_one_limit() {
    let layer = global(5);
    // `Router::layer` makes one service per route; a merged router brings its own layer
    // clone; axum clones each per request.
    let other = Router::new()
        .route("/c", get(|| async { "c" }))
        .layer(layer.clone());
    let app = Router::new()
        .route("/a", get(|| async { "a" }))
        .route("/b", get(|| async { "b" }))
        .layer(layer)
        .merge(other);
    let http = Http::new(serve(app).await);
    let mut admitted = 0;
    for i in 0..30 {
        let path = ["/a", "/b", "/c"][i % 3];
        admitted += usize::from(http.get(path, &[]).await.status == 200);
    }
    assert_eq!(admitted, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_limit_holds_exactly_under_concurrent_clients() {
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(global(200));
    let http = Http::new(serve(app).await);
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let http = http.clone();
            tokio::spawn(async move {
                let mut admitted = 0;
                for _ in 0..40 {
                    let status = http.get("/", &[]).await.status;
                    assert!(status == 200 || status == 429, "{status}");
                    admitted += usize::from(status == 200);
                }
                admitted
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += task.await.unwrap();
    }
    assert_eq!(admitted, 200, "exactly the limit of 640 requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn per_client_limits_hold_exactly_under_concurrency() {
    let per_ip = Arc::new(Keyed::<IpKey, FixedWindows>::with_config(
        WindowConfig::new(WindowQuota::per_minute(10).unwrap()).unwrap(),
        TscClock::new(),
    ));
    let policy = Policy::builder()
        .per_key("per-ip", per_ip, Client::ip_key)
        .build();
    let keys = ClientKeys::new().trusted_proxies(TrustedProxies::x_forwarded_for(["127.0.0.0/8"
        .parse()
        .unwrap()]));
    let layer = RateLimitLayer::builder(Arc::new(policy)).keys(keys).build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let http = Http::new(serve(app).await);
    // 8 clients, each from 4 concurrent tasks of 10 requests: 40 tries per client.
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let http = http.clone();
            tokio::spawn(async move {
                let client = task % 8;
                let xff = format!("198.51.100.{client}");
                let mut admitted = 0;
                for _ in 0..10 {
                    let reply = http.get("/", &[("x-forwarded-for", xff.as_bytes())]).await;
                    admitted += usize::from(reply.status == 200);
                }
                (client, admitted)
            })
        })
        .collect();
    let mut per_client = [0; 8];
    for task in tasks {
        let (client, admitted) = task.await.unwrap();
        per_client[client] += admitted;
    }
    assert_eq!(per_client, [10; 8]);
}
