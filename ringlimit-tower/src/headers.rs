//! The rate-limit response headers: IETF `RateLimit-Policy` and `RateLimit`
//! (draft-ietf-httpapi-ratelimit-headers, revision 11), optionally the legacy
//! `X-RateLimit-*`, and `Retry-After`.
//!
//! What a policy's headers and refusal say of it alone (its name, its quota, its problem
//! body, built by `answer.rs`) is built once per policy and quota ([`PolicyHeaders`], kept by [`HeaderCache`]);
//! a response formats only its numbers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

use crate::answer::{percent_encode, Refusal};
use crate::quota::{ceil_seconds, Quota};

/// `RateLimit-Policy`: the policy's quota (`"name";q=100;w=60`).
///
/// The policy's name is spelled as in every other place a response names it (`RateLimit`,
/// the problem body's `violated-policies` and `detail`): printable ASCII as is except `%`,
/// every other byte of its UTF-8 as `%XX`, so `ördér` is `"%C3%B6rd%C3%A9r"` (a
/// structured-field String carries printable ASCII only).
///
/// ```
/// assert_eq!(ringlimit_tower::RATELIMIT_POLICY.as_str(), "ratelimit-policy");
/// ```
pub static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`: what is left under the policy (`"name";r=50;t=30`).
pub static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// Legacy `X-RateLimit-Limit`.
pub static X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
/// Legacy `X-RateLimit-Remaining`.
pub static X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// Legacy `X-RateLimit-Reset` (seconds from now).
pub static X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// What one policy's headers and refusals say, built once per policy and quota.
#[derive(Debug)]
pub(crate) struct PolicyHeaders {
    /// The quota these were built for (`None`: not known, no `RateLimit-Policy`).
    quota: Option<Quota>,
    /// The name as a structured-field String, quoted.
    name: Box<str>,
    /// `RateLimit-Policy`, if the quota is known and the value valid.
    policy: Option<HeaderValue>,
    /// Legacy `X-RateLimit-Limit`, if the layer writes the legacy headers and the quota is
    /// known.
    limit: Option<HeaderValue>,
    /// Whether the layer writes the legacy headers.
    legacy: bool,
    /// This policy's refusal (429, `quota-exceeded`).
    pub(crate) refusal: Arc<Refusal>,
}

impl PolicyHeaders {
    fn new(name: &str, quota: Option<Quota>, legacy: bool) -> Self {
        // One spelling of the name in every place a response names it.
        let name = &wire_name(name);
        let sf_name = sf_string(name);
        let policy = quota.and_then(|quota| {
            let (limit, window) = (sf(quota.limit()), sf(quota.window_seconds()));
            HeaderValue::try_from(format!("{sf_name};q={limit};w={window}")).ok()
        });
        let limit = quota
            .filter(|_| legacy)
            .map(|quota| HeaderValue::from(sf(quota.limit())));
        Self {
            quota,
            name: sf_name.into(),
            policy,
            limit,
            legacy,
            refusal: Arc::new(Refusal::quota_exceeded(name)),
        }
    }
}

/// The [`PolicyHeaders`] of every policy the layer has answered for, by name: read without
/// a lock, rebuilt for a policy whose quota changed (a rules file reloaded). At most
/// [`HeaderCache::MAX`] policies: past that (more policies than that, or names that come and
/// go over many reloads), a policy not kept has its headers built for each response, at a
/// cost that does not grow with the cache (no copy of it, nothing evicted).
pub(crate) struct HeaderCache {
    legacy: bool,
    entries: ArcSwap<HashMap<Box<str>, Arc<PolicyHeaders>, foldhash::fast::RandomState>>,
}

impl HeaderCache {
    /// The most policies kept.
    const MAX: usize = 1024;

    pub(crate) fn new(legacy: bool) -> Self {
        Self {
            legacy,
            entries: ArcSwap::from_pointee(HashMap::default()),
        }
    }

    pub(crate) fn legacy(&self) -> bool {
        self.legacy
    }

    /// The headers of policy `name` under `quota`.
    pub(crate) fn get(&self, name: &str, quota: Option<Quota>) -> Arc<PolicyHeaders> {
        let entries = self.entries.load();
        match entries.get(name) {
            Some(entry) if entry.quota == quota => entry.clone(),
            // Full: built for this response only; the map is neither copied nor changed.
            None if entries.len() >= Self::MAX => self.build(name, quota),
            // A new policy, or a kept one whose quota changed: kept from now on.
            _ => self.insert(name, quota),
        }
    }

    #[cold]
    #[inline(never)]
    fn build(&self, name: &str, quota: Option<Quota>) -> Arc<PolicyHeaders> {
        Arc::new(PolicyHeaders::new(name, quota, self.legacy))
    }

    #[cold]
    #[inline(never)]
    fn insert(&self, name: &str, quota: Option<Quota>) -> Arc<PolicyHeaders> {
        let entry = self.build(name, quota);
        self.entries.rcu(|entries| {
            if entries.len() >= Self::MAX && !entries.contains_key(name) {
                // Filled meanwhile by other policies: this one is not kept.
                return Arc::clone(entries);
            }
            let mut entries = HashMap::clone(entries);
            entries.insert(name.into(), entry.clone());
            Arc::new(entries)
        });
        entry
    }
}

/// What the headers of one response say, each part only when known.
#[derive(Debug, Clone, Default)]
pub(crate) struct RateHeaders {
    /// The policy that decided (`None`: none, no `RateLimit` headers).
    pub(crate) policy: Option<Arc<PolicyHeaders>>,
    pub(crate) remaining: Option<u64>,
    pub(crate) reset: Option<Duration>,
    pub(crate) retry_after: Option<Duration>,
}

/// The largest structured-field integer (RFC 8941 §3.3.1: at most 15 digits). Every number
/// in these headers is saturated to it: one more digit and parsers reject the whole field.
pub(crate) const SF_INTEGER_MAX: u64 = 999_999_999_999_999;

fn sf(n: u64) -> u64 {
    n.min(SF_INTEGER_MAX)
}

impl RateHeaders {
    /// Writes them into `headers`.
    pub(crate) fn write(&self, headers: &mut HeaderMap) {
        // A refusal (the only answer with a retry-after) never says "retry in 0 seconds":
        // at least 1, and `t` (the same instant on a 429) too.
        let retry_after = self.retry_after.map(|d| sf(ceil_seconds(d)).max(1));
        if let Some(retry_after) = retry_after {
            headers.insert(RETRY_AFTER, number(retry_after));
        }
        let Some(policy) = &self.policy else {
            return;
        };
        let reset = self.reset.map(|d| sf(ceil_seconds(d))).map(|t| {
            if retry_after.is_some() {
                t.max(1)
            } else {
                t
            }
        });
        let remaining = self.remaining.map(sf);
        if let Some(value) = &policy.policy {
            headers.insert(RATELIMIT_POLICY.clone(), value.clone());
        }
        if let Some(limit) = &policy.limit {
            headers.insert(X_RATELIMIT_LIMIT.clone(), limit.clone());
        }
        if let Some(remaining) = remaining {
            if let Some(value) = ratelimit(&policy.name, remaining, reset) {
                headers.insert(RATELIMIT.clone(), value);
            }
            if policy.legacy {
                headers.insert(X_RATELIMIT_REMAINING.clone(), number(remaining));
                if let Some(reset) = reset {
                    headers.insert(X_RATELIMIT_RESET.clone(), number(reset));
                }
            }
        }
    }
}

/// `RateLimit: "name";r=remaining;t=reset`, formatted into one buffer of its exact size:
/// one allocation (a buffer with room to spare would take a second one, for the shared
/// header `Bytes` makes of it).
fn ratelimit(name: &str, remaining: u64, reset: Option<u64>) -> Option<HeaderValue> {
    let (mut r, mut t) = (itoa::Buffer::new(), itoa::Buffer::new());
    let r = r.format(remaining).as_bytes();
    let t = reset.map(|reset| t.format(reset).as_bytes());
    let mut value = Vec::with_capacity(name.len() + 3 + r.len() + t.map_or(0, |t| 3 + t.len()));
    value.extend_from_slice(name.as_bytes());
    value.extend_from_slice(b";r=");
    value.extend_from_slice(r);
    if let Some(t) = t {
        value.extend_from_slice(b";t=");
        value.extend_from_slice(t);
    }
    HeaderValue::from_maybe_shared(Bytes::from(value)).ok()
}

/// The numbers of a minute and less, as values that take no allocation to clone.
const SMALL: [&str; 61] = [
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
    "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31", "32",
    "33", "34", "35", "36", "37", "38", "39", "40", "41", "42", "43", "44", "45", "46", "47", "48",
    "49", "50", "51", "52", "53", "54", "55", "56", "57", "58", "59", "60",
];

/// `n` as a header value (one of [`SMALL`], or formatted into a buffer of its exact size:
/// one allocation, where `HeaderValue::from(n)` takes two).
fn number(n: u64) -> HeaderValue {
    match usize::try_from(n).ok().and_then(|n| SMALL.get(n)) {
        Some(text) => HeaderValue::from_static(text),
        None => {
            let mut digits = itoa::Buffer::new();
            // Digits are always a valid value: the fallback is never taken.
            HeaderValue::from_bytes(digits.format(n).as_bytes()).unwrap_or_else(|_| n.into())
        }
    }
}

/// A policy's name as responses write it (in `RateLimit-Policy`, `RateLimit`, the problem
/// body's `violated-policies` and `detail`): printable ASCII as is, except `%`, and every
/// other byte of its UTF-8 as `%XX` (`ördér` is `%C3%B6rd%C3%A9r`, `50%` is `50%25`).
/// Structured-field Strings carry printable ASCII only; this spelling keeps every name
/// apart from every other, and decodes back to the name.
pub(crate) fn wire_name(name: &str) -> Cow<'_, str> {
    if name.bytes().all(|b| matches!(b, b' '..=b'~') && b != b'%') {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(percent_encode(name))
    }
}

/// `name` (already [`wire_name`]d: printable ASCII) as a structured-field String: in
/// quotes, `"` and `\` escaped.
pub(crate) fn sf_string(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_is_known_only() {
        let cache = HeaderCache::new(true);
        let mut headers = HeaderMap::new();
        RateHeaders {
            policy: Some(cache.get("per-ip", Some(Quota::new(100, Duration::from_secs(60))))),
            ..RateHeaders::default()
        }
        .write(&mut headers);
        assert_eq!(headers[&RATELIMIT_POLICY], r#""per-ip";q=100;w=60"#);
        assert!(headers.get(&RATELIMIT).is_none());
        assert!(headers.get(&X_RATELIMIT_REMAINING).is_none());
        assert_eq!(headers[&X_RATELIMIT_LIMIT], "100");
    }

    #[test]
    fn formats_numbers_and_saturates_them() {
        let cache = HeaderCache::new(true);
        let mut headers = HeaderMap::new();
        RateHeaders {
            policy: Some(cache.get("a", None)),
            remaining: Some(u64::MAX),
            reset: Some(Duration::from_millis(59_001)),
            retry_after: None,
        }
        .write(&mut headers);
        assert_eq!(headers[&RATELIMIT], r#""a";r=999999999999999;t=60"#);
        assert_eq!(headers[&X_RATELIMIT_RESET], "60");
        assert_eq!(headers[&X_RATELIMIT_REMAINING], "999999999999999");
        for n in [0, 1, 60, 61, 3_600, SF_INTEGER_MAX, u64::MAX] {
            assert_eq!(number(n), n.to_string().as_str());
        }
    }

    #[test]
    fn a_changed_quota_rebuilds_the_policys_headers() {
        let cache = HeaderCache::new(false);
        let one = cache.get("p", Some(Quota::new(1, Duration::from_secs(1))));
        assert!(Arc::ptr_eq(
            &one,
            &cache.get("p", Some(Quota::new(1, Duration::from_secs(1))))
        ));
        let two = cache.get("p", Some(Quota::new(2, Duration::from_secs(1))));
        assert_eq!(two.policy.as_ref().unwrap(), r#""p";q=2;w=1"#);
        for i in 0..2 * HeaderCache::MAX {
            cache.get(&i.to_string(), None);
        }
        assert!(cache.entries.load().len() <= HeaderCache::MAX);
    }

    /// Past the cap, a policy not kept gets its headers built for its response, the map
    /// untouched: a miss neither copies the whole map nor empties it.
    #[test]
    fn a_miss_past_the_cap_neither_copies_nor_changes_the_map() {
        let cache = HeaderCache::new(true);
        for i in 0..HeaderCache::MAX {
            cache.get(&i.to_string(), None);
        }
        let full = cache.entries.load_full();
        assert_eq!(full.len(), HeaderCache::MAX);
        let quota = Some(Quota::new(7, Duration::from_secs(2)));
        for _ in 0..3 {
            let extra = cache.get("extra", quota);
            assert_eq!(extra.policy.as_ref().unwrap(), r#""extra";q=7;w=2"#);
            assert_eq!(extra.limit.as_ref().unwrap(), "7");
            assert!(
                Arc::ptr_eq(&full, &cache.entries.load_full()),
                "the map was replaced"
            );
        }
        // A kept policy is still found, and one whose quota changed is rebuilt and kept.
        assert!(Arc::ptr_eq(&full["5"], &cache.get("5", None)));
        let changed = cache.get("5", quota);
        assert_eq!(changed.policy.as_ref().unwrap(), r#""5";q=7;w=2"#);
        assert!(Arc::ptr_eq(&changed, &cache.get("5", quota)));
        assert_eq!(cache.entries.load().len(), HeaderCache::MAX);
    }

    #[test]
    fn ratelimit_values_are_exact() {
        assert_eq!(ratelimit(r#""p""#, 0, None).unwrap(), r#""p";r=0"#);
        assert_eq!(
            ratelimit(r#""per-ip""#, 123, Some(SF_INTEGER_MAX)).unwrap(),
            r#""per-ip";r=123;t=999999999999999"#
        );
    }

    #[test]
    fn escapes_names() {
        assert_eq!(sf_string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(sf_string(&wire_name("débit")), r#""d%C3%A9bit""#);
        assert_eq!(wire_name("50%"), "50%25");
        assert!(matches!(wire_name("per-ip"), Cow::Borrowed("per-ip")));
    }
}
