//! [`RequestInfo`]: what rules read of a request, and the keys they find in it.

use std::fmt;
use std::net::IpAddr;

use crate::keyed::IpKey;

/// What rules read of a request: the application's request type implements this, so rules
/// stay independent of any HTTP crate. Every method defaults to `None`: a rule whose key
/// the request does not have (no such header, no client IP) does not limit that request,
/// and neither does a rule whose `resource` the request's [`route`](Self::route) does not
/// match. Implement what your rules use.
///
/// ```
/// use std::net::IpAddr;
/// use ringlimit::rules::{Format, RequestInfo, RuleSet};
/// struct Request {
///     user: Option<String>,
///     peer: IpAddr,
///     route: &'static str,
/// }
/// impl RequestInfo for Request {
///     fn user(&self) -> Option<&str> {
///         self.user.as_deref()
///     }
///     fn client_ip(&self) -> Option<IpAddr> {
///         Some(self.peer)
///     }
///     fn route(&self) -> Option<&str> {
///         Some(self.route)
///     }
/// }
/// let rules = RuleSet::new();
/// rules.reload_str(Format::Yaml, "
/// rules:
///   - name: per-user
///     key: user
///     algorithm: fixed_window
///     rate: 1/min
/// ")?;
/// let alice = Request { user: Some("alice".into()), peer: [192, 0, 2, 1].into(), route: "/pay" };
/// assert!(rules.check(&alice)?.is_admitted());
/// assert!(!rules.check(&alice)?.is_admitted());
/// let anonymous = Request { user: None, ..alice };
/// assert!(rules.check(&anonymous)?.is_admitted()); // no user: not limited per user
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait RequestInfo {
    /// The value of header `name` as the rules file spells it (`key = "header:X-User-Id"`).
    /// HTTP header names are case-insensitive: compare them so.
    ///
    /// ```
    /// use ringlimit::rules::RequestInfo;
    /// struct Request(Vec<(String, String)>);
    /// impl RequestInfo for Request {
    ///     fn header(&self, name: &str) -> Option<&str> {
    ///         let (_, value) = self.0.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))?;
    ///         Some(value)
    ///     }
    /// }
    /// let request = Request(vec![("x-user-id".into(), "42".into())]);
    /// assert_eq!(request.header("X-User-Id"), Some("42"));
    /// ```
    fn header(&self, name: &str) -> Option<&str> {
        let _ = name;
        None
    }

    /// The client's address (`key = "client_ip"`): the peer, or the address a trusted
    /// proxy reported (never the left-most `X-Forwarded-For` entry, which the client
    /// writes). IPv6 clients are grouped by /64 unless the rule says otherwise
    /// ([`IpKey`](crate::keyed::IpKey)).
    ///
    /// ```
    /// use std::net::{IpAddr, Ipv4Addr};
    /// use ringlimit::rules::RequestInfo;
    /// struct Request(IpAddr);
    /// impl RequestInfo for Request {
    ///     fn client_ip(&self) -> Option<IpAddr> {
    ///         Some(self.0)
    ///     }
    /// }
    /// assert!(Request(Ipv4Addr::LOCALHOST.into()).client_ip().is_some());
    /// ```
    fn client_ip(&self) -> Option<IpAddr> {
        None
    }

    /// The matched route or operation (`/api/order/{id}`, `getOrder`, a payment channel):
    /// what a rule's `resource` is matched against, and the key of `key = "route"`. Prefer
    /// the matched route's template to the raw path, which a client can vary at will.
    ///
    /// ```
    /// use ringlimit::rules::RequestInfo;
    /// struct Request;
    /// impl RequestInfo for Request {
    ///     fn route(&self) -> Option<&str> {
    ///         Some("/api/order/{id}")
    ///     }
    /// }
    /// assert_eq!(Request.route(), Some("/api/order/{id}"));
    /// ```
    fn route(&self) -> Option<&str> {
        None
    }

    /// The API key the request presented (`key = "api_key"`).
    ///
    /// ```
    /// use ringlimit::rules::RequestInfo;
    /// struct Request;
    /// impl RequestInfo for Request {}
    /// assert_eq!(Request.api_key(), None);
    /// ```
    fn api_key(&self) -> Option<&str> {
        None
    }

    /// The authenticated user (`key = "user"`).
    ///
    /// ```
    /// use ringlimit::rules::RequestInfo;
    /// struct Request;
    /// impl RequestInfo for Request {
    ///     fn user(&self) -> Option<&str> {
    ///         Some("alice")
    ///     }
    /// }
    /// assert_eq!(Request.user(), Some("alice"));
    /// ```
    fn user(&self) -> Option<&str> {
        None
    }
}

impl<R: RequestInfo + ?Sized> RequestInfo for &R {
    fn header(&self, name: &str) -> Option<&str> {
        (**self).header(name)
    }
    fn client_ip(&self) -> Option<IpAddr> {
        (**self).client_ip()
    }
    fn route(&self) -> Option<&str> {
        (**self).route()
    }
    fn api_key(&self) -> Option<&str> {
        (**self).api_key()
    }
    fn user(&self) -> Option<&str> {
        (**self).user()
    }
}

/// Where a rule finds its key: the file's `key` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeySource {
    /// One limit shared by every request the rule applies to (`global`).
    Global,
    /// The client's address, IPv6 grouped by its first `v6_prefix` bits (`client_ip`,
    /// `client_ip/48`).
    ClientIp { v6_prefix: u8 },
    /// The matched route (`route`).
    Route,
    /// The API key (`api_key`).
    ApiKey,
    /// The authenticated user (`user`).
    User,
    /// A header's value (`header:X-User-Id`).
    Header(String),
}

impl KeySource {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        const EXPECTED: &str =
            "expected `global`, `client_ip` (or `client_ip/48`), `route`, `api_key`, `user` or `header:<name>`";
        let text = text.trim();
        if let Some(name) = text.strip_prefix("header:") {
            let name = name.trim();
            let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if name.is_empty() || !name.bytes().all(token) {
                return Err(format!("`{name}` is not a header name; {EXPECTED}"));
            }
            return Ok(Self::Header(name.to_owned()));
        }
        if let Some(prefix) = text.strip_prefix("client_ip/") {
            return match prefix.trim().parse::<u8>() {
                Ok(v6_prefix @ 1..=128) => Ok(Self::ClientIp { v6_prefix }),
                _ => Err(format!(
                    "`{prefix}` is not an IPv6 prefix length (1 to 128); {EXPECTED}"
                )),
            };
        }
        match text {
            "global" => Ok(Self::Global),
            "client_ip" => Ok(Self::ClientIp { v6_prefix: 64 }),
            "route" => Ok(Self::Route),
            "api_key" => Ok(Self::ApiKey),
            "user" => Ok(Self::User),
            _ => Err(format!("`{text}` is not a key; {EXPECTED}")),
        }
    }

    /// The key of `request`, `None` if it has none.
    pub(crate) fn key_of<R: RequestInfo + ?Sized>(&self, request: &R) -> Option<Key> {
        let text = |value: Option<&str>| value.map(|value| Key::Text(value.to_owned()));
        match self {
            Self::Global => Some(Key::Everyone),
            Self::ClientIp { v6_prefix } => request
                .client_ip()
                .map(|ip| Key::Ip(IpKey::with_v6_prefix(ip, *v6_prefix))),
            Self::Route => text(request.route()),
            Self::ApiKey => text(request.api_key()),
            Self::User => text(request.user()),
            Self::Header(name) => text(request.header(name)),
        }
    }

    /// Whether keys are IP addresses (a keyed limiter of [`IpKey`]s) or text.
    pub(crate) fn is_ip(&self) -> bool {
        matches!(self, Self::ClientIp { .. })
    }
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Global => f.write_str("global"),
            Self::ClientIp { v6_prefix: 64 } => f.write_str("client_ip"),
            Self::ClientIp { v6_prefix } => write!(f, "client_ip/{v6_prefix}"),
            Self::Route => f.write_str("route"),
            Self::ApiKey => f.write_str("api_key"),
            Self::User => f.write_str("user"),
            Self::Header(name) => write!(f, "header:{name}"),
        }
    }
}

/// A request's key for one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    /// The rule's one shared limit.
    Everyone,
    Ip(IpKey),
    Text(String),
}

/// Which requests a rule applies to: the file's `resource` field, matched against
/// [`RequestInfo::route`]: the whole route, or with a trailing `*` any route it begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    Everything,
    Exactly(String),
    StartingWith(String),
}

impl Scope {
    pub(crate) fn new(resource: Option<&str>) -> Self {
        match resource {
            None => Self::Everything,
            Some(resource) => match resource.strip_suffix('*') {
                Some(prefix) => Self::StartingWith(prefix.to_owned()),
                None => Self::Exactly(resource.to_owned()),
            },
        }
    }

    pub(crate) fn applies_to<R: RequestInfo + ?Sized>(&self, request: &R) -> bool {
        match self {
            Self::Everything => true,
            Self::Exactly(resource) => request.route() == Some(resource),
            Self::StartingWith(prefix) => request
                .route()
                .is_some_and(|route| route.starts_with(prefix.as_str())),
        }
    }
}

/// The keys of one request, one per rule in the rule set's order: `None` where the rule
/// does not apply (out of its scope, or no key). Owned, so that checks hold no borrow of
/// the request across the policy (whose context type is `'static`). The first
/// [`Keys::INLINE`] rules' keys are held inline, the rest in a `Vec`: no allocation per check
/// for a rules file of that many rules or fewer.
pub(crate) struct Keys {
    inline: [Option<Key>; Keys::INLINE],
    /// The keys of the rules past the inline ones.
    more: Vec<Option<Key>>,
    /// The rules whose keys are pushed.
    len: usize,
}

impl Keys {
    /// The rules whose keys are held inline.
    pub(crate) const INLINE: usize = 4;

    /// No keys yet.
    pub(crate) fn new() -> Self {
        Self {
            inline: [None, None, None, None],
            more: Vec::new(),
            len: 0,
        }
    }

    /// Appends the key of the next rule.
    pub(crate) fn push(&mut self, key: Option<Key>) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = key,
            None => self.more.push(key),
        }
        self.len += 1;
    }

    pub(crate) fn get(&self, rule: usize) -> Option<&Key> {
        match self.inline.get(rule) {
            Some(key) => key.as_ref(),
            None => self.more.get(rule - Self::INLINE).and_then(Option::as_ref),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_past_the_inline_ones_are_found_in_order() {
        for rules in [0, 1, Keys::INLINE, Keys::INLINE + 1, 3 * Keys::INLINE] {
            let mut keys = Keys::new();
            for i in 0..rules {
                keys.push((i % 3 != 1).then(|| Key::Text(i.to_string())));
            }
            for i in 0..rules + 2 {
                let want = (i < rules && i % 3 != 1).then(|| Key::Text(i.to_string()));
                assert_eq!(keys.get(i), want.as_ref(), "rule {i} of {rules}");
            }
        }
    }
}
