//! [`ClientKeys`]: how the layer finds the [`Client`] behind a request.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::{Extensions, HeaderMap, HeaderName};

use crate::client::Client;
use crate::forwarded::{ForwardedError, TrustedProxies};

/// The longest id (or api key) the layer takes as a key, in bytes: a longer value is refused
/// ([`KeyError::MalformedId`]), so a client cannot make keys of any size. Any other header a
/// rule is keyed on (`header:<name>`) is cut to this length (see
/// [`ClientRequest`](crate::ClientRequest)).
pub const MAX_ID_LEN: usize = 256;

/// The matched route, for routers other than axum's: put it in the request's extensions
/// before the layer (axum's `MatchedPath` is read with the `axum` feature). Routes, not raw
/// paths: a client can send any number of distinct paths, never more routes than the
/// router has. A route is only as firm as the router's matching: behind a catch-all route,
/// `/api/orders/1/`, `//api/orders/1` or `/API/orders/1` fall to the catch-all, not to
/// `/api/orders/{id}`. Normalise paths before the router (the gateway example's
/// `normalize`: dot segments, empty segments, a trailing slash and ASCII case, refusing
/// what cannot be normalised), so that a rule on a route cannot be escaped by spelling.
///
/// ```
/// use ringlimit_tower::Route;
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(Route("/users/{id}".into()));
/// assert!(request.extensions().get::<Route>().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route(pub Arc<str>);

/// What to do with a request that lacks the id header.
///
/// ```
/// use ringlimit_tower::Missing;
/// let rule = Missing::Shared("anonymous".into());
/// assert_ne!(rule, Missing::Deny);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// Refuse it: 403 and a problem+json body ([`KeyError::MissingId`]), as Spring Cloud
    /// Gateway's `deny-empty-key`.
    Deny,
    /// Let it through with no id: dimensions keyed by the id do not limit it.
    Allow,
    /// Give it this id: every request without one shares one limit.
    Shared(Arc<str>),
}

/// Why the layer found no client key for a request: it answers without calling the service.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The id header is missing (or empty) and the rule is [`Missing::Deny`].
    MissingId {
        /// The header.
        header: HeaderName,
    },
    /// The id header is not UTF-8, longer than [`MAX_ID_LEN`], or sent more than once (the
    /// limit and the upstream's authentication could read different instances).
    MalformedId {
        /// The header.
        header: HeaderName,
    },
    /// The request carries no peer address (no `SocketAddr` or axum `ConnectInfo`
    /// extension): the server is set up wrong, and limits keyed by the client's address
    /// cannot apply. Answered 500 rather than let every request skip those limits; see
    /// [`ClientKeys::allow_missing_peer`].
    NoPeer,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingId { header } => write!(f, "the request lacks the `{header}` header"),
            Self::MalformedId { header } => write!(
                f,
                "the `{header}` header is not one UTF-8 value of at most {MAX_ID_LEN} bytes"
            ),
            Self::NoPeer => f.write_str(
                "the request has no peer address: serve with \
                 `into_make_service_with_connect_info::<SocketAddr>()` or insert a `SocketAddr` \
                 extension",
            ),
        }
    }
}

impl std::error::Error for KeyError {}

/// How the layer finds the client behind a request: its address (the peer, or through
/// [`TrustedProxies`]), IPv6 grouped by a prefix, the matched route, and an id header with a
/// rule for requests that lack it.
///
/// The peer is read from the request's extensions: a `SocketAddr` (hyper users insert it),
/// or with the `axum` feature axum's `ConnectInfo<SocketAddr>` (serve with
/// `into_make_service_with_connect_info::<SocketAddr>()`). A request with neither is refused
/// with [`KeyError::NoPeer`] (the layer answers 500 with a problem body naming the fix):
/// a server set up without the peer would otherwise skip every per-address limit without a
/// word. [`allow_missing_peer`](Self::allow_missing_peer) lets such requests through with no
/// address, for layers that key nothing by it. The route: a [`Route`] extension, or with the
/// `axum` feature axum's `MatchedPath`.
///
/// An api key can be read from a header too ([`api_key_header`](Self::api_key_header)): the
/// rules' `key: api_key`.
///
/// ```
/// use std::net::SocketAddr;
/// use http::{HeaderName, Request};
/// use ringlimit_tower::{ClientKeys, KeyError, Missing, TrustedProxies};
/// let keys = ClientKeys::new()
///     .trusted_proxies(TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse()?]))
///     .id_header(HeaderName::from_static("x-user-id"), Missing::Deny);
/// let mut request = Request::builder()
///     .header("x-forwarded-for", "6.6.6.6, 192.0.2.9")
///     .header("x-user-id", "alice")
///     .body(())?;
/// request.extensions_mut().insert("10.0.0.2:3000".parse::<SocketAddr>()?);
/// let client = keys.client(request.headers(), request.extensions())?;
/// assert_eq!(client.ip(), Some("192.0.2.9".parse()?));
/// assert_eq!(client.id_str(), Some("alice"));
/// request.headers_mut().remove("x-user-id");
/// let denied = keys.client(request.headers(), request.extensions());
/// assert!(matches!(denied, Err(KeyError::MissingId { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ClientKeys {
    proxies: Option<TrustedProxies>,
    v6_prefix: u8,
    id: Option<(HeaderName, Missing)>,
    api_key: Option<(HeaderName, Missing)>,
    peer_optional: bool,
}

impl Default for ClientKeys {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientKeys {
    /// The peer's address, IPv6 by /64, no id header, no trusted proxy; a request without a
    /// peer address is refused ([`KeyError::NoPeer`]).
    ///
    /// ```
    /// use ringlimit_tower::{ClientKeys, KeyError};
    /// let keys = ClientKeys::new();
    /// let request = http::Request::new(());
    /// assert_eq!(keys.client(request.headers(), request.extensions()), Err(KeyError::NoPeer));
    /// ```
    pub fn new() -> Self {
        Self {
            proxies: None,
            v6_prefix: 64,
            id: None,
            api_key: None,
            peer_optional: false,
        }
    }

    /// Lets a request without a peer address through with no address (instead of
    /// [`KeyError::NoPeer`]): dimensions and rules keyed by the address then do not limit
    /// it. Only for layers that key nothing by the address.
    ///
    /// ```
    /// use ringlimit_tower::ClientKeys;
    /// let keys = ClientKeys::new().allow_missing_peer();
    /// let request = http::Request::new(());
    /// assert_eq!(keys.client(request.headers(), request.extensions())?.ip(), None);
    /// # Ok::<(), ringlimit_tower::KeyError>(())
    /// ```
    pub fn allow_missing_peer(self) -> Self {
        Self {
            peer_optional: true,
            ..self
        }
    }

    /// Reads the client's api key (the rules' `key: api_key`) from `header`, and what to do
    /// without one: the same rules as the id ([`Missing`], at most [`MAX_ID_LEN`] bytes, one
    /// instance). Without an api-key header, a rule keyed by `api_key` never limits.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use http::HeaderName;
    /// use ringlimit_tower::{ClientKeys, KeyError, Missing};
    /// let keys = ClientKeys::new().api_key_header(HeaderName::from_static("x-api-key"), Missing::Deny);
    /// let mut request = http::Request::builder().header("x-api-key", "k1").body(())?;
    /// request.extensions_mut().insert("192.0.2.1:1".parse::<SocketAddr>()?);
    /// assert_eq!(keys.client(request.headers(), request.extensions())?.api_key_str(), Some("k1"));
    /// request.headers_mut().remove("x-api-key");
    /// let denied = keys.client(request.headers(), request.extensions());
    /// assert!(matches!(denied, Err(KeyError::MissingId { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn api_key_header(self, header: HeaderName, missing: Missing) -> Self {
        Self {
            api_key: Some((header, missing)),
            ..self
        }
    }

    /// The api-key header's name, if one is configured.
    ///
    /// ```
    /// use http::HeaderName;
    /// use ringlimit_tower::{ClientKeys, Missing};
    /// let keys = ClientKeys::new().api_key_header(HeaderName::from_static("x-api-key"), Missing::Allow);
    /// assert_eq!(keys.api_key_header_name(), Some("x-api-key"));
    /// ```
    pub fn api_key_header_name(&self) -> Option<&str> {
        self.api_key.as_ref().map(|(name, _)| name.as_str())
    }

    /// Believes the forwarding header of these proxies (see [`TrustedProxies`]).
    ///
    /// ```
    /// use ringlimit_tower::{ClientKeys, TrustedProxies};
    /// let keys = ClientKeys::new().trusted_proxies(TrustedProxies::forwarded(["10.0.0.0/8".parse()?]));
    /// # Ok::<(), ipnet::AddrParseError>(())
    /// ```
    pub fn trusted_proxies(self, proxies: TrustedProxies) -> Self {
        Self {
            proxies: Some(proxies),
            ..self
        }
    }

    /// Groups IPv6 clients by their first `prefix` bits (default 64: one client owns a /64).
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use ringlimit_tower::ClientKeys;
    /// let keys = ClientKeys::new().v6_prefix(56);
    /// let mut request = http::Request::new(());
    /// request.extensions_mut().insert("[2001:db8:0:ab12::1]:1".parse::<SocketAddr>()?);
    /// let client = keys.client(request.headers(), request.extensions())?;
    /// assert_eq!(client.ip_key().unwrap().to_string(), "2001:db8:0:ab00::/56");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn v6_prefix(self, prefix: u8) -> Self {
        Self {
            v6_prefix: prefix,
            ..self
        }
    }

    /// Reads the client's id from `header`, and what to do without one.
    ///
    /// ```
    /// use http::HeaderName;
    /// use ringlimit_tower::{ClientKeys, Missing};
    /// let keys = ClientKeys::new()
    ///     .id_header(HeaderName::from_static("x-user-id"), Missing::Shared("anonymous".into()))
    ///     .allow_missing_peer();
    /// let request = http::Request::new(());
    /// assert_eq!(keys.client(request.headers(), request.extensions())?.id_str(), Some("anonymous"));
    /// # Ok::<(), ringlimit_tower::KeyError>(())
    /// ```
    pub fn id_header(self, header: HeaderName, missing: Missing) -> Self {
        Self {
            id: Some((header, missing)),
            ..self
        }
    }

    /// The id header's name, if one is configured.
    ///
    /// ```
    /// use http::HeaderName;
    /// use ringlimit_tower::{ClientKeys, Missing};
    /// let keys = ClientKeys::new().id_header(HeaderName::from_static("x-user-id"), Missing::Allow);
    /// assert_eq!(keys.id_header_name(), Some("x-user-id"));
    /// ```
    pub fn id_header_name(&self) -> Option<&str> {
        self.id.as_ref().map(|(name, _)| name.as_str())
    }

    /// The client behind a request with `headers` and `extensions`. A forwarding header
    /// that cannot be walked keys the client by the last trusted address
    /// ([`ForwardedError::fallback`]): never a bypass, at worst the proxy's shared limit.
    ///
    /// Errors: [`KeyError`] for an id or api-key header that is missing under
    /// [`Missing::Deny`], or malformed; for a request without a peer address, unless
    /// [`allow_missing_peer`](Self::allow_missing_peer).
    ///
    /// ```
    /// use http::HeaderName;
    /// use ringlimit_tower::{ClientKeys, KeyError, Missing};
    /// let keys = ClientKeys::new()
    ///     .id_header(HeaderName::from_static("x-user-id"), Missing::Allow)
    ///     .allow_missing_peer();
    /// let request = http::Request::builder().header("x-user-id", &b"\xff"[..]).body(())?;
    /// let error = keys.client(request.headers(), request.extensions()).unwrap_err();
    /// assert!(matches!(error, KeyError::MalformedId { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn client(&self, headers: &HeaderMap, extensions: &Extensions) -> Result<Client, KeyError> {
        let ip = match peer(extensions) {
            Some(peer) => Some(match &self.proxies {
                None => peer.to_canonical(),
                Some(proxies) => proxies
                    .client_ip(peer, headers)
                    .unwrap_or_else(|ForwardedError { fallback, .. }| fallback),
            }),
            None if self.peer_optional => None,
            None => return Err(KeyError::NoPeer),
        };
        let mut client = route(Client::new(ip).v6_prefix(self.v6_prefix), extensions);
        if let Some(id) = keyed_header(headers, self.id.as_ref())? {
            client = client.id(id);
        }
        if let Some(key) = keyed_header(headers, self.api_key.as_ref())? {
            client = client.api_key(key);
        }
        Ok(client)
    }
}

/// The value of a keyed header (the id, the api key), under its [`Missing`] rule.
fn keyed_header(
    headers: &HeaderMap,
    config: Option<&(HeaderName, Missing)>,
) -> Result<Option<Arc<str>>, KeyError> {
    let Some((header, missing)) = config else {
        return Ok(None);
    };
    let malformed = || KeyError::MalformedId {
        header: header.clone(),
    };
    let mut values = headers.get_all(header).iter();
    let value = values.next().map(|value| value.as_bytes());
    // Two instances: the upstream may authenticate the other one than the limit reads.
    if values.next().is_some() {
        return Err(malformed());
    }
    match value.filter(|value| !value.is_empty()) {
        Some(bytes) => {
            let text = std::str::from_utf8(bytes)
                .ok()
                .filter(|text| text.len() <= MAX_ID_LEN)
                .ok_or_else(malformed)?;
            Ok(Some(text.into()))
        }
        None => match missing {
            Missing::Deny => Err(KeyError::MissingId {
                header: header.clone(),
            }),
            Missing::Allow => Ok(None),
            Missing::Shared(id) => Ok(Some(id.clone())),
        },
    }
}

/// The peer's address from the request's extensions.
fn peer(extensions: &Extensions) -> Option<IpAddr> {
    if let Some(addr) = extensions.get::<SocketAddr>() {
        return Some(addr.ip());
    }
    #[cfg(feature = "axum")]
    if let Some(axum::extract::ConnectInfo(addr)) =
        extensions.get::<axum::extract::ConnectInfo<SocketAddr>>()
    {
        return Some(addr.ip());
    }
    None
}

/// `client` on the matched route from the request's extensions, if any.
fn route(client: Client, extensions: &Extensions) -> Client {
    if let Some(Route(route)) = extensions.get::<Route>() {
        return client.route(route.clone());
    }
    #[cfg(feature = "axum")]
    if let Some(path) = extensions.get::<axum::extract::MatchedPath>() {
        return client.matched_path(path.clone());
    }
    client
}
