//! [`RateLimitLayer`]: the layer and its builder; it builds the service (`service.rs`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use tower_layer::Layer;

use crate::backend::Backend;
use crate::keys::ClientKeys;
use crate::quota::Quota;
use crate::service::{RateLimitService, Shared};

/// A tower [`Layer`] that limits every request through one [`Backend`] shared by every
/// service it makes and every clone of them: under axum, which clones a service per request
/// (axum #2634, where `tower::limit::RateLimit`, per clone, limits nothing), the limit is
/// still one limit.
///
/// Each request's [`Client`](crate::Client) is found by its [`ClientKeys`]; the backend
/// decides; an admitted request goes to the service and its response gets the
/// `RateLimit-Policy` and `RateLimit` headers; a refused one is answered 429 with
/// `Retry-After` and a problem+json body (gRPC: `grpc-status: 8`, `RESOURCE_EXHAUSTED`).
///
/// What the layer does when it cannot key a request:
///
/// - **No peer address** (a `SocketAddr` or axum `ConnectInfo<SocketAddr>` extension; axum
///   must be served with `into_make_service_with_connect_info::<SocketAddr>()`): 500 with a
///   problem body naming the fix ([`KeyError::NoPeer`](crate::KeyError::NoPeer)), gRPC
///   `INTERNAL`. Skipping the per-address limits instead would turn them off without a word.
///   [`ClientKeys::allow_missing_peer`] opts out, for layers that key nothing by address.
/// - **An id or api-key header** missing under [`Missing::Deny`](crate::Missing::Deny):
///   403 (gRPC `PERMISSION_DENIED`); malformed (not UTF-8, over
///   [`MAX_ID_LEN`](crate::MAX_ID_LEN) bytes, sent twice): 400 (gRPC `INVALID_ARGUMENT`).
/// - **A `header:<name>` rule key** is cut to [`MAX_ID_LEN`](crate::MAX_ID_LEN) bytes, so
///   every key has a bounded size.
/// - **A keyed limiter full** of live keys (`max_keys`): the core refuses every *new* key
///   with `KeyedError::Full` and never admits past a limit; the layer answers such a
///   request 503 `temporary-reduced-capacity` with `Retry-After`. Keys already live go on
///   being limited as before; new clients are refused until keys go idle. Size `max_keys`
///   for the distinct clients a window can see.
///
/// ```
/// use std::sync::Arc;
/// use ringlimit::cell::WindowConfig;
/// use ringlimit::clock::TscClock;
/// use ringlimit::keyed::{IpKey, Keyed, FixedWindows};
/// use ringlimit::policy::Policy;
/// use ringlimit::WindowQuota;
/// use ringlimit_tower::{Client, RateLimitLayer};
/// let quota = WindowQuota::per_minute(100)?;
/// let config = WindowConfig::new(quota)?;
/// let per_ip = Arc::new(Keyed::<IpKey, FixedWindows>::with_config(config, TscClock::new()));
/// let policy = Policy::builder().per_key("per-ip", per_ip, Client::ip_key).build();
/// let layer = RateLimitLayer::builder(Arc::new(policy)).quota("per-ip", quota).build();
/// // axum: Router::new().route(..).layer(layer)
/// # let _ = layer;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RateLimitLayer<B> {
    shared: Arc<Shared<B>>,
}

impl<B> Clone for RateLimitLayer<B> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<B> fmt::Debug for RateLimitLayer<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("keys", &self.shared.keys)
            .field("quotas", &self.shared.quotas)
            .field("legacy_headers", &self.shared.headers.legacy())
            .finish_non_exhaustive()
    }
}

/// Builds a [`RateLimitLayer`].
pub struct RateLimitLayerBuilder<B> {
    backend: Arc<B>,
    keys: ClientKeys,
    quotas: HashMap<String, Quota>,
    legacy: bool,
}

impl<B: Backend> RateLimitLayer<B> {
    /// A layer over `backend` (an `Arc`, so that the application can keep it: a rule set to
    /// reload, a policy to inspect): the peer's address as the client, no quotas advertised
    /// beyond what the backend knows, no legacy headers, until the builder says otherwise.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::rules::RuleSet;
    /// use ringlimit_tower::RateLimitLayer;
    /// let rules = Arc::new(RuleSet::new());
    /// let layer = RateLimitLayer::builder(rules.clone()).legacy_headers(true).build();
    /// # let _ = layer;
    /// ```
    pub fn builder(backend: Arc<B>) -> RateLimitLayerBuilder<B> {
        RateLimitLayerBuilder {
            backend,
            keys: ClientKeys::new(),
            quotas: HashMap::new(),
            legacy: false,
        }
    }

    /// The backend.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::rules::RuleSet;
    /// use ringlimit_tower::RateLimitLayer;
    /// let rules = Arc::new(RuleSet::new());
    /// let layer = RateLimitLayer::builder(rules.clone()).build();
    /// assert!(Arc::ptr_eq(layer.backend(), &rules));
    /// ```
    pub fn backend(&self) -> &Arc<B> {
        &self.shared.backend
    }
}

impl<B: Backend> RateLimitLayerBuilder<B> {
    /// How clients are found (default: [`ClientKeys::new`], the peer's address).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::rules::RuleSet;
    /// use ringlimit_tower::{ClientKeys, RateLimitLayer, TrustedProxies};
    /// let keys = ClientKeys::new().trusted_proxies(TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse()?]));
    /// let layer = RateLimitLayer::builder(Arc::new(RuleSet::new())).keys(keys).build();
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keys(self, keys: ClientKeys) -> Self {
        Self { keys, ..self }
    }

    /// Advertises policy `name`'s quota in `RateLimit-Policy` (a
    /// [`Policy`](ringlimit::policy::Policy) does not say its dimensions' quotas; a rule set
    /// does, and a quota given here overrides it).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::policy::Policy;
    /// use ringlimit::{BucketQuota, TokenBucket};
    /// use ringlimit_tower::{Client, RateLimitLayer};
    /// let quota = BucketQuota::per_second(100)?;
    /// let policy = Policy::<Client>::builder().shared("global", Arc::new(TokenBucket::new(quota))).build();
    /// let layer = RateLimitLayer::builder(Arc::new(policy)).quota("global", quota).build();
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quota(mut self, name: &str, quota: impl Into<Quota>) -> Self {
        self.quotas.insert(name.to_owned(), quota.into());
        self
    }

    /// Also writes the legacy `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
    /// `X-RateLimit-Reset` headers (seconds from now), for clients that read only those.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::rules::RuleSet;
    /// use ringlimit_tower::RateLimitLayer;
    /// let layer = RateLimitLayer::builder(Arc::new(RuleSet::new())).legacy_headers(true).build();
    /// # let _ = layer;
    /// ```
    pub fn legacy_headers(self, legacy: bool) -> Self {
        Self { legacy, ..self }
    }

    /// The layer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::rules::RuleSet;
    /// use ringlimit_tower::RateLimitLayer;
    /// let layer = RateLimitLayer::builder(Arc::new(RuleSet::new())).build();
    /// assert_eq!(Arc::strong_count(layer.backend()), 1);
    /// ```
    pub fn build(self) -> RateLimitLayer<B> {
        RateLimitLayer {
            shared: Arc::new(Shared::new(
                self.backend,
                self.keys,
                self.quotas,
                self.legacy,
            )),
        }
    }
}

impl<S: Clone, B> Layer<S> for RateLimitLayer<B> {
    type Service = RateLimitService<S, B>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService::new(inner, self.shared.clone())
    }
}
