//! The layer's own answers: 429 and 503 with an RFC 9457 problem+json body, 403 and 400
//! for requests without a usable id, and gRPC's trailers-only status for gRPC requests.
//! Every status, problem body and gRPC message the layer writes is chosen here; the
//! rate-limit headers that go with an answer are `headers.rs`'s.

use std::fmt::Write;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};

use crate::body::ResponseBody;
use crate::keys::KeyError;

/// The problem type of a refusal (draft-ietf-httpapi-ratelimit-headers §5.1).
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";
/// The problem type of a backend that could not decide (§5.2).
pub const TEMPORARY_REDUCED_CAPACITY: &str =
    "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

/// gRPC's `RESOURCE_EXHAUSTED`: a limit refused.
pub const GRPC_RESOURCE_EXHAUSTED: u8 = 8;
/// gRPC's `UNAVAILABLE`: the backend could not decide.
pub const GRPC_UNAVAILABLE: u8 = 14;
/// gRPC's `INVALID_ARGUMENT`: a malformed id.
pub const GRPC_INVALID_ARGUMENT: u8 = 3;
/// gRPC's `UNAUTHENTICATED` (HTTP 401). Not used by the layer: a missing id under
/// `Missing::Deny` is HTTP 403, gRPC [`GRPC_PERMISSION_DENIED`].
pub const GRPC_UNAUTHENTICATED: u8 = 16;
/// gRPC's `PERMISSION_DENIED` (HTTP 403): no id under `Missing::Deny`.
pub const GRPC_PERMISSION_DENIED: u8 = 7;
/// gRPC's `INTERNAL` (HTTP 500): no peer address ([`KeyError::NoPeer`](crate::KeyError::NoPeer)).
pub const GRPC_INTERNAL: u8 = 13;

/// One answer of the layer's own: its status, and what its body (or gRPC message) says.
/// The rate-limit headers that go with it are the caller's (`RateHeaders`).
pub(crate) struct Answer {
    status: StatusCode,
    grpc_status: u8,
    problem: Problem,
}

/// What an answer's problem+json body (or gRPC message) says.
enum Problem {
    /// A refusal by a policy: its body and message, built once per policy.
    Quota(Arc<Refusal>),
    /// Built for this answer (a request without a usable key, a backend that could not
    /// decide).
    Built {
        problem_type: &'static str,
        title: &'static str,
        detail: String,
    },
}

/// A policy's refusal (429, `quota-exceeded`): its problem+json body and `grpc-message`,
/// the same for every refusal by the policy, so built once and kept with its headers.
#[derive(Debug)]
pub(crate) struct Refusal {
    problem: Bytes,
    grpc_message: Option<HeaderValue>,
}

/// The title of a refusal's problem (draft §5.1).
const QUOTA_EXCEEDED_TITLE: &str =
    "Request cannot be satisfied as assigned quota has been exceeded";

impl Refusal {
    /// The refusal of the policy named `name`, as responses spell it (`headers::wire_name`).
    pub(crate) fn quota_exceeded(name: &str) -> Self {
        // The detail names no number: the time to retry is in `Retry-After` (and `t`), so
        // the body is the same for every refusal by this policy.
        let detail = format!("the `{name}` limit refused the request; retry after Retry-After");
        let mut body = String::with_capacity(256);
        body.push_str(r#"{"type":"#);
        push_json_string(&mut body, QUOTA_EXCEEDED);
        body.push_str(r#","title":"#);
        push_json_string(&mut body, QUOTA_EXCEEDED_TITLE);
        body.push_str(r#","status":429,"detail":"#);
        push_json_string(&mut body, &detail);
        body.push_str(r#","violated-policies":["#);
        push_json_string(&mut body, name);
        body.push_str("]}");
        Self {
            problem: Bytes::from(body),
            grpc_message: HeaderValue::try_from(percent_encode(&detail)).ok(),
        }
    }
}

impl Answer {
    /// 429: a policy refused (gRPC `RESOURCE_EXHAUSTED`).
    pub(crate) fn refused(refusal: Arc<Refusal>) -> Self {
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            grpc_status: GRPC_RESOURCE_EXHAUSTED,
            problem: Problem::Quota(refusal),
        }
    }

    /// 503 `temporary-reduced-capacity`: the backend could not decide, for `reason` (gRPC
    /// `UNAVAILABLE`).
    pub(crate) fn unavailable(reason: String) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            grpc_status: GRPC_UNAVAILABLE,
            problem: Problem::Built {
                problem_type: TEMPORARY_REDUCED_CAPACITY,
                title: "Request cannot be satisfied due to temporary server capacity constraints",
                // `violated-policies` belongs to `quota-exceeded` in the draft; the policy is
                // in the headers and the detail.
                detail: reason,
            },
        }
    }

    /// The answer to a request without a usable client key.
    pub(crate) fn key_error(error: &KeyError) -> Self {
        let (status, grpc_status) = match error {
            // HTTP 403 is gRPC's PERMISSION_DENIED (UNAUTHENTICATED is 401): one meaning for both.
            KeyError::MissingId { .. } => (StatusCode::FORBIDDEN, GRPC_PERMISSION_DENIED),
            KeyError::MalformedId { .. } => (StatusCode::BAD_REQUEST, GRPC_INVALID_ARGUMENT),
            // The server's set-up, not the client's fault.
            KeyError::NoPeer => (StatusCode::INTERNAL_SERVER_ERROR, GRPC_INTERNAL),
        };
        Self {
            status,
            grpc_status,
            problem: Problem::Built {
                problem_type: "about:blank",
                title: status.canonical_reason().unwrap_or("Error"),
                detail: error.to_string(),
            },
        }
    }

    /// The response: a gRPC status for a gRPC request (`grpc`: the content type to answer
    /// with, see [`is_grpc`]), else problem+json. The caller adds the rate-limit headers.
    pub(crate) fn response<B>(self, grpc: Option<HeaderValue>) -> Response<ResponseBody<B>> {
        // Room for every header the answer takes: one allocation, no regrowth.
        let mut response = Response::new(ResponseBody::full(Bytes::new()));
        *response.headers_mut() = HeaderMap::with_capacity(8);
        if let Some(content_type) = grpc {
            // Trailers-only: HTTP 200, the status in the headers, no body.
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, content_type);
            headers.insert(
                "grpc-status",
                HeaderValue::from(u16::from(self.grpc_status)),
            );
            let message = match &self.problem {
                Problem::Quota(refusal) => refusal.grpc_message.clone(),
                Problem::Built { detail, .. } => HeaderValue::try_from(percent_encode(detail)).ok(),
            };
            if let Some(message) = message {
                headers.insert("grpc-message", message);
            }
        } else {
            let body = match self.problem {
                Problem::Quota(refusal) => refusal.problem.clone(),
                Problem::Built {
                    problem_type,
                    title,
                    detail,
                } => Bytes::from(problem_json(problem_type, title, self.status, &detail)),
            };
            *response.body_mut() = ResponseBody::full(body);
            *response.status_mut() = self.status;
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/problem+json"),
            );
        }
        response
    }
}

/// An RFC 9457 problem+json document.
fn problem_json(problem_type: &str, title: &str, status: StatusCode, detail: &str) -> String {
    let mut body = String::with_capacity(256);
    body.push_str(r#"{"type":"#);
    push_json_string(&mut body, problem_type);
    body.push_str(r#","title":"#);
    push_json_string(&mut body, title);
    let _ = write!(body, r#","status":{},"detail":"#, status.as_u16());
    push_json_string(&mut body, detail);
    body.push('}');
    body
}

/// Whether a request is gRPC, and the content type of the layer's answer to it:
/// `application/grpc` for gRPC (`application/grpc`, `application/grpc+proto`…); for
/// grpc-web (`application/grpc-web`, `application/grpc-web-text+proto`…) the request's own
/// content type, which its client expects back (a grpc-web client does not read an answer
/// labelled `application/grpc`). `None`: not gRPC.
pub(crate) fn is_grpc(headers: &HeaderMap) -> Option<HeaderValue> {
    let value = headers.get(CONTENT_TYPE)?;
    let text = value.to_str().ok()?;
    if text.starts_with("application/grpc-web") {
        Some(value.clone())
    } else if text.starts_with("application/grpc") {
        Some(HeaderValue::from_static("application/grpc"))
    } else {
        None
    }
}

/// Appends `text` as a JSON string to `out`.
pub(crate) fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `grpc-message`'s encoding: printable ASCII but `%` as is, every other byte `%XX`.
pub(crate) fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b' '..=b'~' if byte != b'%' => out.push(char::from(byte)),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_json_and_grpc_messages() {
        let mut json = String::new();
        push_json_string(&mut json, "a\"b\\\n");
        assert_eq!(json, r#""a\"b\\\u000a""#);
        assert_eq!(percent_encode("50% é"), "50%25 %C3%A9");
    }
}
