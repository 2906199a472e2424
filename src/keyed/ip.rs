//! [`IpKey`]: an IP address as a rate-limiting key, IPv6 grouped by prefix.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP address as a rate-limiting key: an IPv4 address as it is, an IPv6 address grouped
/// by its /64 prefix, because one IPv6 client (a home, a phone, a VM) owns a whole /64 and
/// can rotate through its 2^64 addresses. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are
/// the IPv4 address they map.
///
/// ```
/// use std::net::IpAddr;
/// use ringlimit::keyed::IpKey;
/// let a: IpAddr = "2001:db8:1:2::1".parse()?;
/// let b: IpAddr = "2001:db8:1:2:ffff::9".parse()?;
/// let c: IpAddr = "2001:db8:1:3::1".parse()?;
/// assert_eq!(IpKey::new(a), IpKey::new(b)); // one /64, one key
/// assert_ne!(IpKey::new(a), IpKey::new(c));
/// let v4: IpAddr = "192.0.2.7".parse()?;
/// let mapped: IpAddr = "::ffff:192.0.2.7".parse()?;
/// assert_eq!(IpKey::new(v4), IpKey::new(mapped));
/// assert_eq!(IpKey::new(a).to_string(), "2001:db8:1:2::/64");
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpKey {
    /// The IPv4 address in its IPv4-mapped form, or the masked IPv6 address.
    bits: u128,
    /// The IPv6 prefix length kept; `None` for an IPv4 address.
    prefix: Option<u8>,
}

impl IpKey {
    /// The key of `addr`: IPv6 addresses grouped by /64.
    ///
    /// ```
    /// use std::net::Ipv4Addr;
    /// use ringlimit::keyed::IpKey;
    /// assert_eq!(IpKey::new(Ipv4Addr::LOCALHOST.into()).to_string(), "127.0.0.1");
    /// ```
    pub fn new(addr: IpAddr) -> Self {
        Self::with_v6_prefix(addr, 64)
    }

    /// The key of `addr` with IPv6 addresses grouped by their first `prefix` bits (`128`
    /// keeps each address apart; a `prefix` above 128 means 128, the whole address).
    ///
    /// ```
    /// use std::net::IpAddr;
    /// use ringlimit::keyed::IpKey;
    /// let a: IpAddr = "2001:db8:1:2::1".parse()?;
    /// let b: IpAddr = "2001:db8:1:3::1".parse()?;
    /// assert_eq!(IpKey::with_v6_prefix(a, 48), IpKey::with_v6_prefix(b, 48));
    /// assert_eq!(IpKey::with_v6_prefix(a, 48).to_string(), "2001:db8:1::/48");
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn with_v6_prefix(addr: IpAddr, prefix: u8) -> Self {
        match addr.to_canonical() {
            IpAddr::V4(v4) => Self {
                bits: u128::from(v4.to_ipv6_mapped()),
                prefix: None,
            },
            IpAddr::V6(v6) => {
                let prefix = prefix.min(128);
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                Self {
                    bits: u128::from(v6) & mask,
                    prefix: Some(prefix),
                }
            }
        }
    }
}

impl From<IpAddr> for IpKey {
    fn from(addr: IpAddr) -> Self {
        Self::new(addr)
    }
}

impl From<Ipv4Addr> for IpKey {
    fn from(addr: Ipv4Addr) -> Self {
        Self::new(addr.into())
    }
}

impl From<Ipv6Addr> for IpKey {
    fn from(addr: Ipv6Addr) -> Self {
        Self::new(addr.into())
    }
}

impl fmt::Display for IpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = Ipv6Addr::from(self.bits);
        match self.prefix {
            None => v6.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED).fmt(f),
            Some(prefix) => write!(f, "{v6}/{prefix}"),
        }
    }
}
