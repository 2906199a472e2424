//! The rate-limit response headers: IETF `RateLimit-Policy` and `RateLimit`
//! (draft-ietf-httpapi-ratelimit-headers, revision 11), optionally the legacy
//! `X-RateLimit-*`, and `Retry-After`.

use std::fmt::Write;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

use crate::quota::{ceil_seconds, Quota};

/// `RateLimit-Policy`: the policy's quota (`"name";q=100;w=60`).
pub static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`: what is left under the policy (`"name";r=50;t=30`).
pub static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// Legacy `X-RateLimit-Limit`.
pub static X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
/// Legacy `X-RateLimit-Remaining`.
pub static X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// Legacy `X-RateLimit-Reset` (seconds from now).
pub static X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// What the headers of one response say, each part only when known.
#[derive(Debug, Clone, Default)]
pub(crate) struct RateHeaders {
    pub(crate) name: Option<String>,
    pub(crate) quota: Option<Quota>,
    pub(crate) remaining: Option<u64>,
    pub(crate) reset: Option<Duration>,
    pub(crate) retry_after: Option<Duration>,
    pub(crate) legacy: bool,
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
        let Some(name) = &self.name else {
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
        if let Some(quota) = self.quota {
            let (limit, window) = (sf(quota.limit()), sf(quota.window_seconds()));
            let value = format!("{name};q={limit};w={window}");
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(RATELIMIT_POLICY.clone(), value);
            }
            if self.legacy {
                headers.insert(X_RATELIMIT_LIMIT.clone(), number(limit));
            }
        }
        if let Some(remaining) = remaining {
            let mut value = format!("{name};r={remaining}");
            if let Some(reset) = reset {
                let _ = write!(value, ";t={reset}");
            }
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(RATELIMIT.clone(), value);
            }
            if self.legacy {
                headers.insert(X_RATELIMIT_REMAINING.clone(), number(remaining));
                if let Some(reset) = reset {
                    headers.insert(X_RATELIMIT_RESET.clone(), number(reset));
                }
            }
        }
    }
}

fn number(n: u64) -> HeaderValue {
    HeaderValue::from(n)
}

/// `name` as a structured-field String: printable ASCII in quotes, `"` and `\` escaped;
/// any other character (a rule name in another script) becomes `_`, which sf-strings
/// cannot carry.
pub(crate) fn sf_string(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('_'),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_is_known_only() {
        let mut headers = HeaderMap::new();
        RateHeaders {
            name: Some(sf_string("per-ip")),
            quota: Some(Quota::new(100, Duration::from_secs(60))),
            remaining: None,
            reset: None,
            retry_after: None,
            legacy: true,
        }
        .write(&mut headers);
        assert_eq!(headers[&RATELIMIT_POLICY], r#""per-ip";q=100;w=60"#);
        assert!(headers.get(&RATELIMIT).is_none());
        assert!(headers.get(&X_RATELIMIT_REMAINING).is_none());
        assert_eq!(headers[&X_RATELIMIT_LIMIT], "100");
    }

    #[test]
    fn escapes_names() {
        assert_eq!(sf_string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(sf_string("débit"), r#""d_bit""#);
    }
}
