//! [`RateLimitLayer`]: the layer, its builder, and what every clone of its service shares.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use http::StatusCode;
use tower_layer::Layer;

use crate::answer::{self, Answer, Problem};
use crate::backend::{Backend, Verdict};
use crate::headers::{HeaderCache, PolicyHeaders, RateHeaders};
use crate::keys::{ClientKeys, KeyError};
use crate::quota::Quota;
use crate::service::RateLimitService;

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
///   problem body naming the fix ([`KeyError::NoPeer`]), gRPC `INTERNAL`. Skipping the
///   per-address limits instead would turn them off without a word.
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

/// What the layer and every service and clone share.
pub(crate) struct Shared<B> {
    pub(crate) backend: Arc<B>,
    pub(crate) keys: ClientKeys,
    quotas: HashMap<String, Quota, foldhash::fast::RandomState>,
    /// Each policy's headers and refusal, built once.
    headers: HeaderCache,
}

/// What to do with a request once decided.
pub(crate) enum Outcome<'a> {
    /// Call the service, then add these headers.
    Call(RateHeaders),
    /// Answer without it.
    Answer(Answer<'a>),
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
            shared: Arc::new(Shared {
                backend: self.backend,
                keys: self.keys,
                quotas: self.quotas.into_iter().collect(),
                headers: HeaderCache::new(self.legacy),
            }),
        }
    }
}

impl<S: Clone, B> Layer<S> for RateLimitLayer<B> {
    type Service = RateLimitService<S, B>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService::new(inner, self.shared.clone())
    }
}

impl<B: Backend> Shared<B> {
    /// What policy `name`'s headers say of it alone, under the quota the verdict names
    /// (the one its request was decided under), unless the builder was given the policy's.
    fn policy_headers(&self, name: &str, quota: Option<Quota>) -> Arc<PolicyHeaders> {
        let quota = self.quotas.get(name).copied().or(quota);
        self.headers.get(name, quota)
    }

    /// The headers of policy `name` (`None`: none applied), its numbers still unknown.
    fn headers(&self, policy: Option<&str>, quota: Option<Quota>) -> RateHeaders {
        RateHeaders {
            policy: policy.map(|name| self.policy_headers(name, quota)),
            ..RateHeaders::default()
        }
    }

    /// What the verdict means for the request.
    pub(crate) fn outcome<'a>(&'a self, verdict: &'a Verdict) -> Outcome<'a> {
        match verdict {
            Verdict::Admitted {
                policy,
                remaining,
                reset_after,
                quota,
            } => Outcome::Call(RateHeaders {
                remaining: *remaining,
                reset: *reset_after,
                ..self.headers(policy.as_deref(), *quota)
            }),
            Verdict::Refused {
                policy,
                available,
                retry_after,
                quota,
            } => {
                let policy = self.policy_headers(policy, *quota);
                Outcome::Answer(Answer {
                    status: StatusCode::TOO_MANY_REQUESTS,
                    grpc_status: answer::GRPC_RESOURCE_EXHAUSTED,
                    problem: Problem::Quota(policy.clone()),
                    headers: RateHeaders {
                        policy: Some(policy),
                        remaining: *available,
                        // Retry-After is not before the end of the effective window (draft §6).
                        reset: Some(*retry_after),
                        retry_after: Some(*retry_after),
                    },
                })
            }
            Verdict::Unavailable {
                policy,
                reason,
                retry_after,
                quota,
            } => Outcome::Answer(Answer {
                status: StatusCode::SERVICE_UNAVAILABLE,
                grpc_status: answer::GRPC_UNAVAILABLE,
                problem: Problem::Built {
                    problem_type: answer::TEMPORARY_REDUCED_CAPACITY,
                    title:
                        "Request cannot be satisfied due to temporary server capacity constraints",
                    detail: reason.clone(),
                    // `violated-policies` belongs to `quota-exceeded` in the draft; the policy is
                    // in the headers and the detail.
                    violated: None,
                },
                headers: RateHeaders {
                    retry_after: Some(*retry_after),
                    ..self.headers(policy.as_deref(), *quota)
                },
            }),
        }
    }
}

/// The answer to a request without a usable client key.
pub(crate) fn key_answer(error: &KeyError) -> Answer<'static> {
    let (status, grpc_status) = match error {
        // HTTP 403 is gRPC's PERMISSION_DENIED (UNAUTHENTICATED is 401): one meaning for both.
        KeyError::MissingId { .. } => (StatusCode::FORBIDDEN, answer::GRPC_PERMISSION_DENIED),
        KeyError::MalformedId { .. } => (StatusCode::BAD_REQUEST, answer::GRPC_INVALID_ARGUMENT),
        // The server's set-up, not the client's fault.
        KeyError::NoPeer => (StatusCode::INTERNAL_SERVER_ERROR, answer::GRPC_INTERNAL),
    };
    Answer {
        status,
        grpc_status,
        problem: Problem::Built {
            problem_type: "about:blank",
            title: status.canonical_reason().unwrap_or("Error"),
            detail: error.to_string(),
            violated: None,
        },
        headers: RateHeaders::default(),
    }
}
