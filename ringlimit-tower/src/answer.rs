//! The layer's own answers: 429 and 503 with an RFC 9457 problem+json body, 403 and 400
//! for requests without a usable id, and gRPC's trailers-only status for gRPC requests.

use http::header::{HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};

use crate::body::ResponseBody;
use crate::headers::RateHeaders;

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
/// gRPC's `UNAUTHENTICATED`: no id under `Missing::Deny`.
pub const GRPC_UNAUTHENTICATED: u8 = 16;

/// One answer of the layer's own.
pub(crate) struct Answer<'a> {
    pub(crate) status: StatusCode,
    pub(crate) grpc_status: u8,
    pub(crate) problem_type: &'a str,
    pub(crate) title: &'a str,
    pub(crate) detail: String,
    pub(crate) violated: Option<&'a str>,
    pub(crate) headers: RateHeaders,
}

impl Answer<'_> {
    /// The response: a gRPC status for a gRPC request, else problem+json.
    pub(crate) fn response<B>(self, grpc: bool) -> Response<ResponseBody<B>> {
        let mut headers = HeaderMap::new();
        self.headers.write(&mut headers);
        let mut response = if grpc {
            // Trailers-only: HTTP 200, the status in the headers, no body.
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
            headers.insert(
                "grpc-status",
                HeaderValue::from(u16::from(self.grpc_status)),
            );
            if let Ok(message) = HeaderValue::from_str(&percent_encode(&self.detail)) {
                headers.insert("grpc-message", message);
            }
            Response::new(ResponseBody::full(""))
        } else {
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/problem+json"),
            );
            let mut body = format!(
                r#"{{"type":{},"title":{},"status":{},"detail":{}"#,
                json_string(self.problem_type),
                json_string(self.title),
                self.status.as_u16(),
                json_string(&self.detail),
            );
            if let Some(policy) = self.violated {
                body.push_str(&format!(
                    r#","violated-policies":[{}]"#,
                    json_string(policy)
                ));
            }
            body.push('}');
            let mut response = Response::new(ResponseBody::full(body));
            *response.status_mut() = self.status;
            response
        };
        response.headers_mut().extend(headers);
        response
    }
}

/// Whether a request is gRPC (`content-type: application/grpc`, `application/grpc+proto`…).
pub(crate) fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"))
}

/// `text` as a JSON string.
pub(crate) fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `grpc-message`'s encoding: printable ASCII but `%` as is, every other byte `%XX`.
fn percent_encode(text: &str) -> String {
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
        assert_eq!(json_string("a\"b\\\n"), r#""a\"b\\\u000a""#);
        assert_eq!(percent_encode("50% é"), "50%25 %C3%A9");
    }
}
