//! [`Client`]: what the layer knows of the client behind a request, the facts a policy's
//! key functions read; [`ClientRequest`]: that and the headers, as the rules read them.

use std::cell::OnceCell;
use std::net::IpAddr;
use std::sync::Arc;

use http::HeaderMap;
use ringlimit::keyed::IpKey;
use ringlimit::rules::RequestInfo;

/// The client behind one request, as [`ClientKeys`](crate::ClientKeys) found it: its address
/// (through trusted proxies), the matched route, and its id (a header's value, or the shared
/// key for requests without one). A [`Policy<Client>`](ringlimit::policy::Policy)'s key
/// functions read it.
///
/// ```
/// use std::sync::Arc;
/// use ringlimit::cell::WindowConfig;
/// use ringlimit::clock::TscClock;
/// use ringlimit::keyed::{FixedWindows, Keyed, IpKey};
/// use ringlimit::policy::Policy;
/// use ringlimit::WindowQuota;
/// use ringlimit_tower::Client;
/// let config = WindowConfig::new(WindowQuota::per_minute(1)?)?;
/// let per_ip = Arc::new(Keyed::<IpKey, FixedWindows>::with_config(config, TscClock::new()));
/// let policy = Policy::builder().per_key("per-ip", per_ip, Client::ip_key).build();
/// let a = Client::new(Some("2001:db8:1:2::1".parse()?));
/// let b = Client::new(Some("2001:db8:1:2::99".parse()?)); // the same /64
/// assert!(policy.check(&a)?.is_admitted());
/// assert!(!policy.check(&b)?.is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    ip: Option<IpAddr>,
    v6_prefix: u8,
    route: Option<RouteName>,
    id: Option<Arc<str>>,
    api_key: Option<Arc<str>>,
}

impl Client {
    /// A client at `ip` (`None`: unknown), IPv6 grouped by /64, no route, no id.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).ip(), None);
    /// ```
    pub fn new(ip: Option<IpAddr>) -> Self {
        Self {
            ip,
            v6_prefix: 64,
            route: None,
            id: None,
            api_key: None,
        }
    }

    /// The same client, its IPv6 address grouped by its first `prefix` bits.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// let client = Client::new(Some("2001:db8:1:2::1".parse()?)).v6_prefix(48);
    /// assert_eq!(client.ip_key().unwrap().to_string(), "2001:db8:1::/48");
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn v6_prefix(self, prefix: u8) -> Self {
        Self {
            v6_prefix: prefix,
            ..self
        }
    }

    /// The same client on `route`.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).route("/users/{id}").route_key(), Some("/users/{id}".into()));
    /// ```
    pub fn route(self, route: impl Into<Arc<str>>) -> Self {
        Self {
            route: Some(RouteName::Shared(route.into())),
            ..self
        }
    }

    /// The same client on axum's matched route, shared rather than copied.
    #[cfg(feature = "axum")]
    pub(crate) fn matched_path(self, path: axum::extract::MatchedPath) -> Self {
        Self {
            route: Some(RouteName::Matched(path)),
            ..self
        }
    }

    /// The same client with id `id`.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).id("alice").id_key(), Some("alice".into()));
    /// ```
    pub fn id(self, id: impl Into<Arc<str>>) -> Self {
        Self {
            id: Some(id.into()),
            ..self
        }
    }

    /// The same client with api key `key` (the rules' `key: api_key`).
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).api_key("k1").api_key_str(), Some("k1"));
    /// ```
    pub fn api_key(self, key: impl Into<Arc<str>>) -> Self {
        Self {
            api_key: Some(key.into()),
            ..self
        }
    }

    /// The client's api key, borrowed.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).api_key_str(), None);
    /// ```
    pub fn api_key_str(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// The client's address, if known.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// let ip = "192.0.2.1".parse()?;
    /// assert_eq!(Client::new(Some(ip)).ip(), Some(ip));
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn ip(&self) -> Option<IpAddr> {
        self.ip
    }

    /// The client's address as a key: IPv6 grouped by prefix (/64 unless
    /// [`v6_prefix`](Self::v6_prefix) said otherwise), so one client cannot rotate through
    /// its own addresses.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// let a = Client::new(Some("2001:db8::1".parse()?));
    /// let b = Client::new(Some("2001:db8::ffff:1".parse()?));
    /// assert_eq!(a.ip_key(), b.ip_key());
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn ip_key(&self) -> Option<IpKey> {
        self.ip.map(|ip| IpKey::with_v6_prefix(ip, self.v6_prefix))
    }

    /// The matched route (a template such as `/users/{id}`, never the raw path), as a key.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).route_key(), None);
    /// ```
    pub fn route_key(&self) -> Option<Arc<str>> {
        match self.route.as_ref()? {
            RouteName::Shared(route) => Some(route.clone()),
            #[cfg(feature = "axum")]
            RouteName::Matched(path) => Some(path.as_str().into()),
        }
    }

    /// The client's id, as a key.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).id_key(), None);
    /// ```
    pub fn id_key(&self) -> Option<Arc<str>> {
        self.id.clone()
    }

    /// The matched route, borrowed.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).route("/a").route_str(), Some("/a"));
    /// ```
    pub fn route_str(&self) -> Option<&str> {
        self.route.as_ref().map(RouteName::as_str)
    }

    /// The client's id, borrowed.
    ///
    /// ```
    /// use ringlimit_tower::Client;
    /// assert_eq!(Client::new(None).id("bob").id_str(), Some("bob"));
    /// ```
    pub fn id_str(&self) -> Option<&str> {
        self.id.as_deref()
    }
}

/// The matched route: given, or axum's (which holds it shared: taken per request without
/// copying it).
#[derive(Debug, Clone)]
enum RouteName {
    Shared(Arc<str>),
    #[cfg(feature = "axum")]
    Matched(axum::extract::MatchedPath),
}

impl RouteName {
    fn as_str(&self) -> &str {
        match self {
            Self::Shared(route) => route,
            #[cfg(feature = "axum")]
            Self::Matched(path) => path.as_str(),
        }
    }
}

impl PartialEq for RouteName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for RouteName {}

/// A request as a backend sees it: the [`Client`] and the request's headers. It is the
/// rules' [`RequestInfo`]: `client_ip` is the client's address (through trusted proxies),
/// `route` the matched route, `user` the id, `api_key` the api key (read from
/// [`ClientKeys::api_key_header`](crate::ClientKeys::api_key_header)), and `header` the
/// request's header, except the id and api-key headers, which read as the id and api key (so
/// a rule keyed by them follows the missing-header rule).
///
/// A `header:<name>` key is the header's first value cut to its first
/// [`MAX_ID_LEN`](crate::MAX_ID_LEN) bytes: a client cannot make keys of any size (values
/// that share those bytes share a limit, which only limits harder). Every value is a key,
/// whatever its bytes, so no byte lets a request skip the rule:
///
/// - a UTF-8 value (visible ASCII, or text such as `clé`) is its own text (a cut that
///   splits a character drops that character's first bytes);
/// - any other value (obs-text such as Latin-1 `k1\xe9`) is keyed by its bytes, spelled as
///   a NUL followed by the bytes in lowercase hex (`"\0" + "6b31e9"`): a spelling no header
///   value has (a value cannot hold a NUL), so it never shares a key with a text value nor
///   with other bytes. Spelled once per header and request; past
///   [`MAX_SPELLED`](Self::MAX_SPELLED) such headers in one request, the further ones share
///   one key ([`SPELLING_OVERFLOW`](Self::SPELLING_OVERFLOW)), which only limits harder.
///
/// ```
/// use http::HeaderMap;
/// use ringlimit::rules::RequestInfo;
/// use ringlimit_tower::{Client, ClientRequest};
/// let mut headers = HeaderMap::new();
/// headers.insert("x-api-key", "k1".parse()?);
/// let client = Client::new(Some("192.0.2.1".parse()?)).route("/a/{b}");
/// let request = ClientRequest::new(&client, &headers);
/// assert_eq!(request.header("X-Api-Key"), Some("k1"));
/// assert_eq!(request.route(), Some("/a/{b}"));
/// headers.insert("x-api-key", http::HeaderValue::from_bytes(b"k1\xe9")?);
/// let request = ClientRequest::new(&client, &headers);
/// assert_eq!(request.header("X-Api-Key"), Some("\06b31e9"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ClientRequest<'a> {
    client: &'a Client,
    headers: &'a HeaderMap,
    id_header: Option<&'a str>,
    api_key_header: Option<&'a str>,
    /// The spellings of the values that are not UTF-8, by header name, made when first
    /// read.
    spelled: [OnceCell<(Box<str>, Box<str>)>; ClientRequest::MAX_SPELLED],
}

impl<'a> ClientRequest<'a> {
    /// The most header values that are not UTF-8 spelled as their own keys in one request.
    ///
    /// ```
    /// assert_eq!(ringlimit_tower::ClientRequest::MAX_SPELLED, 4);
    /// ```
    pub const MAX_SPELLED: usize = 4;

    /// The key of every value that is not UTF-8 past the first
    /// [`MAX_SPELLED`](Self::MAX_SPELLED) headers read in one request: shared by them all.
    ///
    /// ```
    /// use http::{HeaderMap, HeaderValue};
    /// use ringlimit::rules::RequestInfo;
    /// use ringlimit_tower::{Client, ClientRequest};
    /// let mut headers = HeaderMap::new();
    /// for name in ["a", "b", "c", "d", "e"] {
    ///     headers.insert(name, HeaderValue::from_bytes(b"\xff")?);
    /// }
    /// let client = Client::new(None);
    /// let request = ClientRequest::new(&client, &headers);
    /// assert_eq!(request.header("a"), Some("\0ff"));
    /// for name in ["b", "c", "d"] {
    ///     request.header(name);
    /// }
    /// assert_eq!(request.header("e"), Some(ClientRequest::SPELLING_OVERFLOW));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const SPELLING_OVERFLOW: &'static str = "\0overflow";

    /// `client`'s request with `headers`.
    ///
    /// ```
    /// use http::HeaderMap;
    /// use ringlimit_tower::{Client, ClientRequest};
    /// let client = Client::new(None);
    /// let headers = HeaderMap::new();
    /// assert_eq!(ClientRequest::new(&client, &headers).client(), &client);
    /// ```
    pub fn new(client: &'a Client, headers: &'a HeaderMap) -> Self {
        Self {
            client,
            headers,
            id_header: None,
            api_key_header: None,
            spelled: Default::default(),
        }
    }

    /// The same, header `name` reading as the client's id.
    pub(crate) fn with_id_header(self, name: Option<&'a str>) -> Self {
        Self {
            id_header: name,
            ..self
        }
    }

    /// The same, header `name` reading as the client's api key.
    pub(crate) fn with_api_key_header(self, name: Option<&'a str>) -> Self {
        Self {
            api_key_header: name,
            ..self
        }
    }

    /// The client.
    ///
    /// ```
    /// use http::HeaderMap;
    /// use ringlimit_tower::{Client, ClientRequest};
    /// let client = Client::new(None).id("alice");
    /// let headers = HeaderMap::new();
    /// assert_eq!(ClientRequest::new(&client, &headers).client().id_str(), Some("alice"));
    /// ```
    pub fn client(&self) -> &'a Client {
        self.client
    }

    /// The request's headers.
    ///
    /// ```
    /// use http::HeaderMap;
    /// use ringlimit_tower::{Client, ClientRequest};
    /// let client = Client::new(None);
    /// let headers = HeaderMap::new();
    /// assert!(ClientRequest::new(&client, &headers).headers().is_empty());
    /// ```
    pub fn headers(&self) -> &'a HeaderMap {
        self.headers
    }
}

impl ClientRequest<'_> {
    /// The key of header `name`'s value `bytes`, not UTF-8: NUL, then the bytes in hex.
    #[cold]
    fn spelled(&self, name: &str, bytes: &[u8]) -> &str {
        for slot in &self.spelled {
            let (seen, spelling) = slot.get_or_init(|| (name.into(), spell(bytes)));
            if seen.eq_ignore_ascii_case(name) {
                return spelling;
            }
        }
        Self::SPELLING_OVERFLOW
    }
}

/// `bytes` as NUL and lowercase hex: a spelling no header value has.
fn spell(bytes: &[u8]) -> Box<str> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(1 + 2 * bytes.len());
    out.push('\0');
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out.into()
}

impl RequestInfo for ClientRequest<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        if self
            .id_header
            .is_some_and(|id| id.eq_ignore_ascii_case(name))
        {
            return self.client.id_str();
        }
        if self
            .api_key_header
            .is_some_and(|key| key.eq_ignore_ascii_case(name))
        {
            return self.client.api_key_str();
        }
        // Cut to MAX_ID_LEN bytes so that keys have a bounded size.
        let value = self.headers.get(name)?.as_bytes();
        let cut = &value[..value.len().min(crate::MAX_ID_LEN)];
        match std::str::from_utf8(cut) {
            Ok(text) => Some(text),
            // Text whose last character the cut split: the whole characters before it.
            Err(error) if error.error_len().is_none() && cut.len() < value.len() => {
                std::str::from_utf8(&cut[..error.valid_up_to()]).ok()
            }
            Err(_) => Some(self.spelled(name, cut)),
        }
    }

    fn api_key(&self) -> Option<&str> {
        self.client.api_key_str()
    }

    fn client_ip(&self) -> Option<IpAddr> {
        self.client.ip
    }

    fn route(&self) -> Option<&str> {
        self.client.route_str()
    }

    fn user(&self) -> Option<&str> {
        self.client.id_str()
    }
}
