//! [`TrustedProxies`]: the client's address behind proxies, walked from the right.

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
            // An IPv4-mapped network (`::ffff:10.0.0.0/104`, as dual-stack sockets log) is
            // kept as its IPv4 network: `trusts` compares canonical (IPv4) addresses.
            networks: networks.into_iter().map(canonical_net).collect(),
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
        // Each line is read as raw bytes from the right, and only as far as the walk needs:
        // the left part of a line is the client's own words (proxies append to it), so
        // nothing there (a non-text byte, an open quote) may change the result.
        for value in headers.get_all(self.header.name()).iter().rev() {
            let mut entries = Entries::new(self.header, value.as_bytes());
            while let Some(entry) = entries.next_back() {
                if read == self.max_hops {
                    return Err(fail(ForwardedErrorKind::TooManyHops, last));
                }
                read += 1;
                let ip = match entry {
                    Ok(entry) => match self.header {
                        ForwardingHeader::XForwardedFor => xff_entry(entry),
                        ForwardingHeader::Forwarded => forwarded_for(entry),
                    },
                    Err(kind) => Err(kind),
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

/// `net` with an IPv4-mapped IPv6 prefix of at least 96 bits as its IPv4 network.
fn canonical_net(net: IpNet) -> IpNet {
    if let IpNet::V6(v6) = net
        && let (Some(v4), true) = (v6.addr().to_ipv4_mapped(), v6.prefix_len() >= 96)
        && let Ok(v4) = ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96)
    {
        return IpNet::V4(v4.trunc());
    }
    net
}

/// The entries of one header line, read right to left.
struct Entries<'a> {
    header: ForwardingHeader,
    /// What is left of the line, not yet read.
    rest: Option<&'a [u8]>,
}

impl<'a> Entries<'a> {
    fn new(header: ForwardingHeader, line: &'a [u8]) -> Self {
        Self {
            header,
            rest: Some(line),
        }
    }

    /// The next entry from the right: `Err(Malformed)` for a `Forwarded` element whose
    /// quoted string never opens (the walk stops there).
    fn next_back(&mut self) -> Option<Result<&'a [u8], ForwardedErrorKind>> {
        let rest = self.rest?;
        let split = match self.header {
            ForwardingHeader::XForwardedFor => Ok(rest.iter().rposition(|&b| b == b',')),
            ForwardingHeader::Forwarded => last_element_start(rest),
        };
        Some(match split {
            Ok(Some(comma)) => {
                self.rest = Some(&rest[..comma]);
                Ok(&rest[comma + 1..])
            }
            Ok(None) => {
                self.rest = None;
                Ok(rest)
            }
            Err(kind) => {
                self.rest = None;
                Err(kind)
            }
        })
    }
}

/// Where the last comma outside quoted strings is in a `Forwarded` line, scanning from the
/// right (`None`: the whole line is one element). A quote is escaped when an odd number of
/// backslashes precede it (RFC 7230 quoted-pair; qdtext has no bare backslash). A quoted
/// string that never opens is `Malformed`: only this element is bad, the elements right of
/// it were read already.
fn last_element_start(line: &[u8]) -> Result<Option<usize>, ForwardedErrorKind> {
    let mut quoted = false;
    let mut i = line.len();
    while i > 0 {
        i -= 1;
        match line[i] {
            b'"' if !quoted => quoted = true,
            b'"' => {
                let backslashes = line[..i].iter().rev().take_while(|&&b| b == b'\\').count();
                if backslashes % 2 == 0 {
                    quoted = false;
                }
            }
            b',' if !quoted => return Ok(Some(i)),
            _ => {}
        }
    }
    if quoted {
        return Err(ForwardedErrorKind::Malformed);
    }
    Ok(None)
}

fn is_ows(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

fn trim_ows(mut bytes: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = bytes {
        if !is_ows(*first) {
            break;
        }
        bytes = rest;
    }
    while let [rest @ .., last] = bytes {
        if !is_ows(*last) {
            break;
        }
        bytes = rest;
    }
    bytes
}

/// RFC 7230 tchar.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// One `X-Forwarded-For` entry: visible ASCII, then an address.
fn xff_entry(entry: &[u8]) -> Result<IpAddr, ForwardedErrorKind> {
    let entry = trim_ows(entry);
    if !entry.iter().all(|b| b.is_ascii_graphic()) {
        return Err(ForwardedErrorKind::NotText);
    }
    // Visible ASCII is UTF-8.
    node(std::str::from_utf8(entry).map_err(|_| ForwardedErrorKind::NotText)?)
}

/// The address of a `Forwarded` element's `for=` parameter. The element is tokenized as
/// RFC 7239 says: `pair *( ";" pair )`, `pair = token "=" ( token / quoted-string )`, with
/// quoted-pairs unescaped; so a `;` or `for=` inside another parameter's quoted value
/// (`host="a;for=6.6.6.6"`) is that value's, not a parameter. A parameter twice in one
/// element is malformed (RFC 7239 §4: it MUST NOT occur).
fn forwarded_for(element: &[u8]) -> Result<IpAddr, ForwardedErrorKind> {
    if !element.iter().all(|&b| b.is_ascii_graphic() || is_ows(b)) {
        return Err(ForwardedErrorKind::NotText);
    }
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut found = None;
    let mut i = 0;
    let at = |i: usize| element.get(i).copied();
    loop {
        while at(i).is_some_and(is_ows) {
            i += 1;
        }
        match at(i) {
            None => break,
            Some(b';') => {
                i += 1;
                continue;
            }
            Some(_) => {}
        }
        let name_start = i;
        while at(i).is_some_and(is_tchar) {
            i += 1;
        }
        let name = element[name_start..i].to_ascii_lowercase();
        if name.is_empty() || at(i) != Some(b'=') {
            return Err(ForwardedErrorKind::Malformed);
        }
        i += 1;
        let mut value = Vec::new();
        if at(i) == Some(b'"') {
            i += 1;
            loop {
                match at(i) {
                    None => return Err(ForwardedErrorKind::Malformed),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        value.push(at(i + 1).ok_or(ForwardedErrorKind::Malformed)?);
                        i += 2;
                    }
                    Some(byte) => {
                        value.push(byte);
                        i += 1;
                    }
                }
            }
        } else {
            // A token, leniently: proxies write `for=10.0.0.8:1234` and `for=[::1]` unquoted
            // (":" and "[" are not tchars); anything up to the next ";" or space.
            let start = i;
            while at(i).is_some_and(|b| b.is_ascii_graphic() && b != b';' && b != b'"') {
                i += 1;
            }
            value.extend_from_slice(&element[start..i]);
        }
        while at(i).is_some_and(is_ows) {
            i += 1;
        }
        if !matches!(at(i), None | Some(b';')) {
            return Err(ForwardedErrorKind::Malformed);
        }
        if seen.contains(&name) {
            return Err(ForwardedErrorKind::Malformed);
        }
        if name == b"for" {
            found = Some(value);
        }
        seen.push(name);
    }
    let value = found.ok_or(ForwardedErrorKind::Malformed)?;
    node(std::str::from_utf8(&value).map_err(|_| ForwardedErrorKind::NotText)?)
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:443`, and RFC 7239 §6 obfuscated ports
/// (`192.0.2.1:_p1`, `[2001:db8::1]:_abc`: the address is still real); `unknown` and
/// `_obfuscated` nodes are hidden.
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
    // obfport = "_" 1*( ALPHA / DIGIT / "." / "_" / "-" )
    let text = match text.rsplit_once(':') {
        Some((host, port))
            if port.len() > 1
                && port.starts_with('_')
                && port
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
        {
            if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
                return Ok(IpAddr::V4(ip));
            }
            // Only a bracketed IPv6 address takes a port.
            if !host.starts_with('[') {
                return Err(ForwardedErrorKind::Malformed);
            }
            host
        }
        _ => text,
    };
    text.strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .and_then(|inner| inner.parse::<std::net::Ipv6Addr>().ok())
        .map(IpAddr::V6)
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
        assert_eq!(last_element_start(br#"a="x,y", b"#), Ok(Some(7)));
    }

    /// the client's own (left) part of a line never changes the result.
    #[test]
    fn left_garbage_never_changes_the_client() {
        let xff = TrustedProxies::x_forwarded_for(["10.0.0.0/8".parse().unwrap()]);
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            http::HeaderValue::from_bytes(b"\xff\"x, 203.0.113.9").unwrap(),
        );
        assert_eq!(
            xff.client_ip(ip("10.0.0.2"), &headers),
            Ok(ip("203.0.113.9"))
        );
        let fwd = TrustedProxies::forwarded(["10.0.0.0/8".parse().unwrap()]);
        let lines: [&[u8]; 4] = [
            br#"for="x, for=203.0.113.9"#,
            br#"for="x\", for=203.0.113.9"#,
            b"for=\"\xff, for=203.0.113.9",
            br#"";;==,,, for=203.0.113.9;proto=https"#,
        ];
        for line in lines {
            let mut headers = HeaderMap::new();
            headers.insert(FORWARDED, http::HeaderValue::from_bytes(line).unwrap());
            assert_eq!(
                fwd.client_ip(ip("10.0.0.2"), &headers),
                Ok(ip("203.0.113.9")),
                "{line:?}"
            );
        }
        // Bad bytes in an entry the walk reads are still an error.
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            http::HeaderValue::from_bytes(b"1.1.1.1, \xff").unwrap(),
        );
        let error = xff.client_ip(ip("10.0.0.2"), &headers).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::NotText);
    }

    /// parameters are tokenized with quotes; a duplicate `for` is malformed.
    #[test]
    fn forwarded_params_respect_quotes() {
        let proxies = TrustedProxies::forwarded(["10.0.0.0/8".parse().unwrap()]);
        let line = r#"host="a;for=6.6.6.6;x=";for=203.0.113.9"#;
        assert_eq!(walk(&proxies, "10.0.0.1", &[line]), Ok(ip("203.0.113.9")));
        let line = r#"host="a;for=6.6.6.6";for=203.0.113.9"#;
        assert_eq!(walk(&proxies, "10.0.0.1", &[line]), Ok(ip("203.0.113.9")));
        let line = r#"host="a\";for=6.6.6.6";for=203.0.113.9"#;
        assert_eq!(walk(&proxies, "10.0.0.1", &[line]), Ok(ip("203.0.113.9")));
        let error = walk(&proxies, "10.0.0.1", &["for=203.0.113.9;for=6.6.6.6"]).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::Malformed);
        let error = walk(&proxies, "10.0.0.1", &["for=203.0.113.9;FOR=6.6.6.6"]).unwrap_err();
        assert_eq!(error.kind, ForwardedErrorKind::Malformed);
    }

    /// obfuscated ports and quoted-pairs carry a real address.
    #[test]
    fn obfuscated_ports_and_quoted_pairs() {
        let proxies = TrustedProxies::forwarded(["10.0.0.0/8".parse().unwrap()]);
        for (line, want) in [
            (r#"for="203.0.113.9:_p1""#, "203.0.113.9"),
            (r#"for="[2001:db8::1]:_abc""#, "2001:db8::1"),
            (r#"for="[2001:db8::1]:_a.b-c_d""#, "2001:db8::1"),
            (r#"for="\[2001:db8::1\]""#, "2001:db8::1"),
        ] {
            assert_eq!(walk(&proxies, "10.0.0.1", &[line]), Ok(ip(want)), "{line}");
        }
        for bad in [
            "203.0.113.9:_",
            "203.0.113.9:_a!",
            "2001:db8::1:_p",
            "[::1]:_p:1",
        ] {
            assert_eq!(node(bad), Err(ForwardedErrorKind::Malformed), "{bad}");
        }
    }

    /// IPv4-mapped trusted networks match.
    #[test]
    fn mapped_networks_are_canonical() {
        let proxies = TrustedProxies::x_forwarded_for(["::ffff:10.0.0.0/104".parse().unwrap()]);
        assert!(proxies.trusts(ip("10.0.0.2")));
        assert!(proxies.trusts(ip("::ffff:10.0.0.2")));
        assert!(!proxies.trusts(ip("11.0.0.2")));
        assert_eq!(
            walk(&proxies, "::ffff:10.0.0.2", &["203.0.113.9"]),
            Ok(ip("203.0.113.9"))
        );
    }

    #[test]
    fn parses_nodes() {
        assert_eq!(node("192.0.2.1:8080"), Ok(ip("192.0.2.1")));
        assert_eq!(node("[::1]"), Ok(ip("::1")));
        assert_eq!(node("[::1]:443"), Ok(ip("::1")));
        assert_eq!(node(""), Err(ForwardedErrorKind::Malformed));
    }
}
