//! [`TrustedProxies`]: the client's address behind proxies, walked from the right.

use std::collections::VecDeque;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use http::header::{HeaderMap, HeaderName, FORWARDED};
use ipnet::IpNet;

/// The hops a walk reads at most before it stops: more proxies than any real chain has.
pub const DEFAULT_MAX_HOPS: usize = 32;

/// Which header the trusted proxies write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardingHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2`: each proxy appends the address it saw.
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=192.0.2.60;proto=https, for="[2001:db8::1]:4711"`.
    Forwarded,
}

impl ForwardingHeader {
    fn name(self) -> HeaderName {
        match self {
            Self::XForwardedFor => HeaderName::from_static("x-forwarded-for"),
            Self::Forwarded => FORWARDED,
        }
    }
}

/// The proxies whose forwarding header is believed, by network, and the header they write.
///
/// The client's address is found by walking the header **from the right**: the right-most
/// entry was written by the proxy the request came from, the one before it by the proxy
/// before that, and so on; the first entry that is not itself a trusted proxy is the client.
/// The left-most entry is never taken as such: the client writes it, and whatever it
/// writes there is skipped (tower-governor takes it, so a spoofed header bypasses its
/// limit). A request whose peer is not a trusted proxy came straight from the client: its
/// headers are ignored and the peer is the client.
///
/// ```
/// use std::net::IpAddr;
/// use http::HeaderMap;
/// use ringlimit_tower::TrustedProxies;
/// let proxies = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse()?]);
/// let mut headers = HeaderMap::new();
/// // The client wrote "1.1.1.1"; the edge proxy appended the address it saw, 203.0.113.9.
/// headers.insert("x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.7".parse()?);
/// let peer: IpAddr = "10.0.0.2".parse()?;
/// assert_eq!(proxies.client_ip(peer, &headers)?, "203.0.113.9".parse::<IpAddr>()?);
/// // Not from a trusted proxy: the header is the client's own words, ignored.
/// let stranger: IpAddr = "198.51.100.4".parse()?;
/// assert_eq!(proxies.client_ip(stranger, &headers)?, stranger);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedProxies {
    networks: Vec<IpNet>,
    header: ForwardingHeader,
    max_hops: usize,
}

/// Why a forwarding header could not be walked to the client. The walk stops at the bad
/// entry; [`fallback`](Self::fallback) is the last address it trusted (the nearest proxy's
/// view), which the layer uses as the client: a broken header never escapes a limit, at
/// worst it shares the proxy's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardedError {
    /// What was wrong.
    pub kind: ForwardedErrorKind,
    /// The last address the walk trusted.
    pub fallback: IpAddr,
}

/// What was wrong with a forwarding header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardedErrorKind {
    /// A value is not visible ASCII (non-UTF-8, control characters).
    NotText,
    /// An entry is not an address (`for=` missing, an unterminated quote, garbage).
    Malformed,
    /// An entry is `unknown` or an obfuscated identifier (`_hidden`): no address to key by.
    Hidden,
    /// Every one of the [`max_hops`](TrustedProxies::max_hops) entries read was a trusted proxy.
    TooManyHops,
}

impl fmt::Display for ForwardedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ForwardedErrorKind::NotText => "a forwarding header is not visible ASCII",
            ForwardedErrorKind::Malformed => "a forwarding entry is not an address",
            ForwardedErrorKind::Hidden => "a forwarding entry hides its address",
            ForwardedErrorKind::TooManyHops => "too many trusted hops in a forwarding header",
        };
        write!(f, "{what}; keyed by {} instead", self.fallback)
    }
}

impl std::error::Error for ForwardedError {}

impl TrustedProxies {
    /// Proxies in `networks` that append to `X-Forwarded-For`.
    ///
    /// ```
    /// use ringlimit_tower::TrustedProxies;
    /// let proxies = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse()?, "fd00::/8".parse()?]);
    /// assert!(proxies.trusts("fd00::1".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn x_forwarded_for(networks: impl IntoIterator<Item = IpNet>) -> Self {
        Self::new(ForwardingHeader::XForwardedFor, networks)
    }

    /// Proxies in `networks` that append to RFC 7239 `Forwarded`.
    ///
    /// ```
    /// use std::net::IpAddr;
    /// use http::HeaderMap;
    /// use ringlimit_tower::TrustedProxies;
    /// let proxies = TrustedProxies::forwarded(["192.168.0.0/16".parse()?]);
    /// let mut headers = HeaderMap::new();
    /// headers.insert("forwarded", r#"for=1.1.1.1, for="[2001:db8::5]:4711";proto=https"#.parse()?);
    /// let ip = proxies.client_ip("192.168.1.1".parse()?, &headers)?;
    /// assert_eq!(ip, "2001:db8::5".parse::<IpAddr>()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn forwarded(networks: impl IntoIterator<Item = IpNet>) -> Self {
        Self::new(ForwardingHeader::Forwarded, networks)
    }

    /// Proxies in `networks` that write `header`.
    ///
    /// ```
    /// use ringlimit_tower::{ForwardingHeader, TrustedProxies};
    /// let proxies = TrustedProxies::new(ForwardingHeader::Forwarded, []);
    /// assert!(!proxies.trusts("10.0.0.1".parse()?)); // nobody: the peer is the client
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(header: ForwardingHeader, networks: impl IntoIterator<Item = IpNet>) -> Self {
        Self {
            networks: networks.into_iter().collect(),
            header,
            max_hops: DEFAULT_MAX_HOPS,
        }
    }

    /// Reads at most `max_hops` entries from the right (default [`DEFAULT_MAX_HOPS`]): the
    /// work per request is bounded whatever the header's length.
    ///
    /// ```
    /// use ringlimit_tower::TrustedProxies;
    /// let proxies = TrustedProxies::x_forwarded_for([]).max_hops(4);
    /// assert_eq!(proxies.hops(), 4);
    /// ```
    pub fn max_hops(self, max_hops: usize) -> Self {
        Self {
            max_hops: max_hops.max(1),
            ..self
        }
    }

    /// The entries a walk reads at most.
    ///
    /// ```
    /// use ringlimit_tower::{TrustedProxies, DEFAULT_MAX_HOPS};
    /// assert_eq!(TrustedProxies::x_forwarded_for([]).hops(), DEFAULT_MAX_HOPS);
    /// ```
    pub fn hops(&self) -> usize {
        self.max_hops
    }

    /// Whether `ip` is one of the trusted proxies (IPv4-mapped IPv6 as its IPv4 address).
    ///
    /// ```
    /// use ringlimit_tower::TrustedProxies;
    /// let proxies = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse()?]);
    /// assert!(proxies.trusts("::ffff:10.1.2.3".parse()?));
    /// assert!(!proxies.trusts("11.0.0.1".parse()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.networks.iter().any(|net| net.contains(&ip))
    }

    /// The client's address for a request from `peer` with `headers`: `peer` itself unless
    /// it is a trusted proxy; else the right-most entry of the forwarding header that is not
    /// a trusted proxy (or the left-most entry read, if all of them are trusted).
    ///
    /// Errors: [`ForwardedError`], carrying the last trusted address, when an entry the walk
    /// reaches is not text, not an address, hidden, or the walk reads `max_hops` trusted
    /// entries. A trusted peer that sent no header is the client.
    ///
    /// ```
    /// use http::HeaderMap;
    /// use ringlimit_tower::{ForwardedErrorKind, TrustedProxies};
    /// let proxies = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse()?]);
    /// let mut headers = HeaderMap::new();
    /// headers.insert("x-forwarded-for", "not-an-ip".parse()?);
    /// let error = proxies.client_ip("10.0.0.2".parse()?, &headers).unwrap_err();
    /// assert_eq!(error.kind, ForwardedErrorKind::Malformed);
    /// assert_eq!(error.fallback, "10.0.0.2".parse::<std::net::IpAddr>()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn client_ip(&self, peer: IpAddr, headers: &HeaderMap) -> Result<IpAddr, ForwardedError> {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return Ok(peer);
        }
        let mut last = peer;
        let mut read = 0;
        let fail = |kind, last| ForwardedError {
            kind,
            fallback: last,
        };
        // Later header lines were appended later: the right-most entry is the last line's.
        for value in headers.get_all(self.header.name()).iter().rev() {
            let text = value
                .to_str()
                .map_err(|_| fail(ForwardedErrorKind::NotText, last))?;
            let mut entries = match self.header {
                ForwardingHeader::XForwardedFor => Entries::Commas(text.rsplit(',')),
                ForwardingHeader::Forwarded => Entries::Elements(
                    forwarded_elements(text, self.max_hops + 1 - read)
                        .ok_or_else(|| fail(ForwardedErrorKind::Malformed, last))?,
                ),
            };
            while let Some(entry) = entries.next_back() {
                if read == self.max_hops {
                    return Err(fail(ForwardedErrorKind::TooManyHops, last));
                }
                read += 1;
                let ip = match self.header {
                    ForwardingHeader::XForwardedFor => node(entry.trim()),
                    ForwardingHeader::Forwarded => forwarded_for(entry),
                }
                .map_err(|kind| fail(kind, last))?
                .to_canonical();
                if !self.trusts(ip) {
                    return Ok(ip);
                }
                last = ip;
            }
        }
        // Every entry was a trusted proxy: the left-most one read is as far as we know.
        Ok(last)
    }
}

/// The entries of one header line, right to left.
enum Entries<'a> {
    Commas(std::str::RSplit<'a, char>),
    Elements(VecDeque<&'a str>),
}

impl<'a> Entries<'a> {
    fn next_back(&mut self) -> Option<&'a str> {
        match self {
            Self::Commas(entries) => entries.next(),
            Self::Elements(elements) => elements.pop_back(),
        }
    }
}

/// The comma-separated elements of a `Forwarded` line, commas inside quoted strings kept;
/// only the last `keep` (bounded memory whatever the line's length). `None`: an
/// unterminated quoted string.
fn forwarded_elements(text: &str, keep: usize) -> Option<VecDeque<&str>> {
    let mut elements = VecDeque::with_capacity(keep.min(8));
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, byte) in text.bytes().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                if elements.len() == keep {
                    elements.pop_front();
                }
                elements.push_back(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quoted {
        return None;
    }
    if elements.len() == keep {
        elements.pop_front();
    }
    elements.push_back(&text[start..]);
    Some(elements)
}

/// The address of a `Forwarded` element's `for=` parameter.
fn forwarded_for(element: &str) -> Result<IpAddr, ForwardedErrorKind> {
    let value = element
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("for"))
        .map(|(_, value)| value.trim())
        .ok_or(ForwardedErrorKind::Malformed)?;
    let value = match value.strip_prefix('"') {
        Some(rest) => rest
            .strip_suffix('"')
            .filter(|inner| !inner.contains(['"', '\\']))
            .ok_or(ForwardedErrorKind::Malformed)?,
        None => value,
    };
    node(value)
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:443`; `unknown` and `_obfuscated` are hidden.
fn node(text: &str) -> Result<IpAddr, ForwardedErrorKind> {
    if text.eq_ignore_ascii_case("unknown") || text.starts_with('_') {
        return Err(ForwardedErrorKind::Hidden);
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(ip);
    }
    if let Ok(socket) = text.parse::<SocketAddr>() {
        return Ok(socket.ip());
    }
    text.strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .and_then(|inner| inner.parse::<IpAddr>().ok())
        .ok_or(ForwardedErrorKind::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(
        proxies: &TrustedProxies,
        peer: &str,
        lines: &[&str],
    ) -> Result<IpAddr, ForwardedError> {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(proxies.header.name(), line.parse().unwrap());
        }
        proxies.client_ip(peer.parse().unwrap(), &headers)
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn walks_across_lines_from_the_right() {
        let proxies = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse().unwrap()]);
        let lines = ["6.6.6.6, 7.7.7.7", "203.0.113.1, 10.0.0.9"];
        assert_eq!(walk(&proxies, "10.0.0.1", &lines), Ok(ip("203.0.113.1")));
        // All trusted: the left-most read.
        assert_eq!(
            walk(&proxies, "10.0.0.1", &["10.0.0.5, 10.0.0.6"]),
            Ok(ip("10.0.0.5"))
        );
        // A trusted peer without a header is the client.
        assert_eq!(walk(&proxies, "10.0.0.1", &[]), Ok(ip("10.0.0.1")));
    }

    #[test]
    fn stops_at_the_first_bad_entry_with_the_last_trusted_address() {
        let proxies = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse().unwrap()]);
        let error = walk(&proxies, "10.0.0.1", &["1.2.3.4, garbage, 10.0.0.3"]).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::Malformed);
        assert_eq!(error.fallback, ip("10.0.0.3"));
        let hidden = walk(&proxies, "10.0.0.1", &["unknown"]).unwrap_err();
        assert_eq!(hidden.kind, ForwardedErrorKind::Hidden);
        // Garbage left of the client's entry is never read.
        assert_eq!(
            walk(&proxies, "10.0.0.1", &["garbage,, 9.9.9.9"]),
            Ok(ip("9.9.9.9"))
        );
    }

    #[test]
    fn bounds_the_walk() {
        let proxies = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse().unwrap()]).max_hops(3);
        let long = vec!["10.0.0.4"; 10_000].join(",");
        let error = walk(&proxies, "10.0.0.1", &[&long]).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::TooManyHops);
    }

    #[test]
    fn parses_forwarded_elements() {
        let proxies = TrustedProxies::forwarded(["10.0.0.0/8".parse().unwrap()]);
        let line = r#"for=1.1.1.1;by="a,b", For="[2001:db8::1]:80";proto=https, for=10.0.0.8:1234"#;
        assert_eq!(walk(&proxies, "10.0.0.1", &[line]), Ok(ip("2001:db8::1")));
        let error = walk(&proxies, "10.0.0.1", &[r#"for="1.1.1.1"#]).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::Malformed);
        let error = walk(&proxies, "10.0.0.1", &["proto=https"]).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::Malformed);
        let error = walk(&proxies, "10.0.0.1", &["for=_hidden"]).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::Hidden);
        assert_eq!(forwarded_elements("a,b,c,d", 2).unwrap(), ["c", "d"]);
    }

    #[test]
    fn parses_nodes() {
        assert_eq!(node("192.0.2.1:8080"), Ok(ip("192.0.2.1")));
        assert_eq!(node("[::1]"), Ok(ip("::1")));
        assert_eq!(node("[::1]:443"), Ok(ip("::1")));
        assert_eq!(node(""), Err(ForwardedErrorKind::Malformed));
    }
}
