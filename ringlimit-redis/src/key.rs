//! Redis key names: `<prefix>:<limit name>:<key>`, sharing one hash tag so that every key of
//! one decision lives in one Cluster slot.

use std::fmt;

/// The longest key a limiter accepts by default: 4 KiB (set with the builders' `max_key_len`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Algorithm, Connection, RedisLimiter, DEFAULT_MAX_KEY_LEN};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let per_ip = RedisLimiter::builder(&connection, "per_ip", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
/// assert!(per_ip.redis_keys(vec![b'x'; DEFAULT_MAX_KEY_LEN]).is_ok());
/// assert!(per_ip.redis_keys(vec![b'x'; DEFAULT_MAX_KEY_LEN + 1]).is_err());
/// # Ok(()) }
/// ```
pub const DEFAULT_MAX_KEY_LEN: usize = 4096;

/// Whether `key` has a hash tag by Redis Cluster's rule: a `{` followed, later, by a `}`
/// with at least one byte between them (the first `{` and the first `}` after it).
pub(crate) fn has_hash_tag(key: &[u8]) -> bool {
    match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) => len > 0,
            None => false,
        },
        None => false,
    }
}

/// The base name of a limit's state for one key: `<prefix>:<name>:<key>`, wrapped in `{…}`
/// when it has no hash tag of its own, so that the keys derived from it (the log's sequence)
/// share its slot. A key that carries a hash tag (`{user:42}:orders`) keeps it, and so
/// shares a slot with every other limit keyed by the same tag: that is how a policy's
/// dimensions decide in one script on a Cluster.
pub(crate) fn base(prefix: &str, name: &str, key: &[u8]) -> Vec<u8> {
    // Written after a `{`, which is dropped when the name has a tag of its own: one
    // allocation either way.
    let mut base = Vec::with_capacity(prefix.len() + name.len() + key.len() + 4);
    base.push(b'{');
    base.extend_from_slice(prefix.as_bytes());
    base.push(b':');
    base.extend_from_slice(name.as_bytes());
    base.push(b':');
    base.extend_from_slice(key);
    if has_hash_tag(&base[1..]) {
        base.remove(0);
    } else {
        base.push(b'}');
    }
    base
}

/// A key too long for the limiter.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Algorithm, Connection, Error, KeyTooLong, RedisLimiter};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let per_ip = RedisLimiter::builder(&connection, "per_ip", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
/// let error = per_ip.redis_keys(vec![b'x'; 5000]).unwrap_err();
/// assert_eq!(error, Error::KeyTooLong(KeyTooLong { len: 5000, max: 4096 }));
/// assert_eq!(error.to_string(), "a key of 5000 bytes, above the limiter's maximum of 4096");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyTooLong {
    /// The key's length in bytes.
    pub len: usize,
    /// The most the limiter accepts.
    pub max: usize,
}

impl fmt::Display for KeyTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a key of {} bytes, above the limiter's maximum of {}",
            self.len, self.max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::cluster_routing::Slot;

    fn slot(key: &[u8]) -> Slot {
        Slot::for_key(key)
    }

    #[test]
    fn derived_keys_share_a_slot() {
        for key in [
            &b"plain"[..],
            b"a}b",
            b"a{b",
            b"{}x",
            b"{user:1}:orders",
            b"new\nline",
            b"{",
            b"}",
        ] {
            let base = base("rl", "log", key);
            let mut seq = base.clone();
            seq.extend_from_slice(b":seq");
            assert_eq!(
                slot(&base),
                slot(&seq),
                "{:?}",
                String::from_utf8_lossy(key)
            );
        }
        assert_eq!(base("rl", "a", b"{user:1}"), b"rl:a:{user:1}");
        assert_eq!(
            slot(&base("rl", "a", b"{u}")),
            slot(&base("rl", "b", b"{u}:x"))
        );
        assert_eq!(base("rl", "a", b"u"), b"{rl:a:u}");
    }
}
