//! ringlimit's rate limits as a tower [`Layer`](tower_layer::Layer), for axum, hyper and
//! tonic: one limit shared by every clone of the service, clients keyed safely, and answers
//! in the standard headers.
//!
//! | part | what it does |
//! |---|---|
//! | [`RateLimitLayer`] | limits each request through one [`Backend`] shared by every clone (axum clones a service per request: `tower::limit::RateLimit`, per clone, limits nothing there, axum #2634) |
//! | [`Backend`] | an in-process [`Policy<Client>`](ringlimit::policy::Policy), a [`RuleSet`](ringlimit::rules::RuleSet) from a rules file (reloaded), or with the `redis` feature `ringlimit_redis::RedisPolicy<Client>` |
//! | [`ClientKeys`] | the client: the peer's address, or through [`TrustedProxies`] walking `X-Forwarded-For`/`Forwarded` from the right (never the left-most, client-written entry); IPv6 grouped by /64; an id header with a [`Missing`] rule; the matched [`Route`], never the raw path; `header:<name>` rules keyed by any value's bytes, text or not (see [`ClientRequest`]) |
//! | answers | 429 with `Retry-After` (whole seconds, rounded up) and an RFC 9457 problem+json body naming the policy; gRPC requests get `grpc-status: 8` (`RESOURCE_EXHAUSTED`), trailers-only |
//! | headers | on every limited response, `RateLimit-Policy: "name";q=100;w=60` and `RateLimit: "name";r=50;t=30` (draft-ietf-httpapi-ratelimit-headers, revision 11), optionally `X-RateLimit-*`; only what the backend knows (no `r` when a fallback decided); a policy's name spelled one way in headers and body (non-ASCII bytes as `%XX`, see [`RATELIMIT_POLICY`]) |
//!
//! ```
//! use std::sync::Arc;
//! use http::HeaderName;
//! use ringlimit::cell::WindowConfig;
//! use ringlimit::clock::TscClock;
//! use ringlimit::keyed::{IpKey, Keyed, FixedWindows};
//! use ringlimit::policy::Policy;
//! use ringlimit::WindowQuota;
//! use ringlimit_tower::{Client, ClientKeys, Missing, RateLimitLayer, TrustedProxies};
//! let quota = WindowQuota::per_minute(100)?;
//! let per_ip = Keyed::<IpKey, FixedWindows>::with_config(WindowConfig::new(quota)?, TscClock::new());
//! let policy = Policy::builder()
//!     .per_key("per-ip", Arc::new(per_ip), Client::ip_key)
//!     .build();
//! let keys = ClientKeys::new()
//!     .trusted_proxies(TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse()?]))
//!     .id_header(HeaderName::from_static("x-user-id"), Missing::Shared("anonymous".into()));
//! let layer = RateLimitLayer::builder(Arc::new(policy)).keys(keys).quota("per-ip", quota).build();
//! // axum::Router::new().route("/", get(handler)).layer(layer)
//! # let _ = layer;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod answer;
mod backend;
mod body;
mod client;
mod forwarded;
mod headers;
mod keys;
mod layer;
mod quota;
#[cfg(feature = "redis")]
mod redis;
mod service;

pub use answer::{
    GRPC_INTERNAL, GRPC_INVALID_ARGUMENT, GRPC_PERMISSION_DENIED, GRPC_RESOURCE_EXHAUSTED,
    GRPC_UNAUTHENTICATED, GRPC_UNAVAILABLE, QUOTA_EXCEEDED, TEMPORARY_REDUCED_CAPACITY,
};
pub use backend::{Backend, Decided, Verdict, RETRY_AFTER_UNAVAILABLE};
pub use body::ResponseBody;
pub use client::{Client, ClientRequest};
pub use forwarded::{
    ForwardedError, ForwardedErrorKind, ForwardingHeader, TrustedProxies, DEFAULT_MAX_HOPS,
};
pub use headers::{
    RATELIMIT, RATELIMIT_POLICY, X_RATELIMIT_LIMIT, X_RATELIMIT_REMAINING, X_RATELIMIT_RESET,
};
pub use keys::{ClientKeys, KeyError, Missing, Route, MAX_ID_LEN};
pub use layer::{RateLimitLayer, RateLimitLayerBuilder};
pub use quota::Quota;
pub use service::{RateLimitService, ResponseFuture};
