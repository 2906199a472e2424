//! The middleware in an axum app: 100 requests a minute per client address, with the
//! `RateLimit-Policy` and `RateLimit` headers (the README's fifteen lines).
//!
//! ```text
//! cargo run -p ringlimit-tower --example axum_app   # then: curl -i http://127.0.0.1:8080/
//! ```

use std::{net::SocketAddr, sync::Arc};

use axum::{routing::get, Router};
use ringlimit::{
    cell::WindowConfig,
    clock::TscClock,
    keyed::{FixedWindows, IpKey, Keyed},
    policy::Policy,
    WindowQuota,
};
use ringlimit_tower::{Client, RateLimitLayer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quota = WindowQuota::per_minute(100)?;
    let per_ip = Arc::new(Keyed::<IpKey, FixedWindows>::with_config(
        WindowConfig::new(quota)?,
        TscClock::new(),
    ));
    let policy = Policy::builder()
        .per_key("per-ip", per_ip, Client::ip_key)
        .build();
    let layer = RateLimitLayer::builder(Arc::new(policy))
        .quota("per-ip", quota)
        .build();
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}
