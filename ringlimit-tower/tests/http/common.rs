//! Real HTTP over loopback: an axum server on an ephemeral port, served with the peer's
//! address, and a hyper client.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ringlimit::rules::{Format, RuleSet};
use sfv::{BareItem, FieldType, List, ListEntry, Parser};

/// Serves `app` on 127.0.0.1 (an ephemeral port) until the test's runtime ends.
pub async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    addr
}

/// A response, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// `RateLimit` parsed as a structured field: the policy, `r` and `t`.
    pub fn ratelimit(&self) -> (String, Option<i64>, Option<i64>) {
        let (name, params) = item(self.header("ratelimit").expect("a RateLimit header"));
        (name, int(&params, "r"), int(&params, "t"))
    }
}

/// A hyper client (HTTP/1, pooled).
#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Empty<Bytes>>,
    base: String,
}

impl Http {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            base: format!("http://{addr}"),
        }
    }

    /// GET `path` with `headers` (raw bytes allowed: non-UTF-8 values).
    pub async fn get(&self, path: &str, headers: &[(&str, &[u8])]) -> Reply {
        let mut request = Request::get(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = self
            .client
            .request(request.body(Empty::new()).unwrap())
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }
}

/// The one item of a structured-field list: its string and its parameters.
pub fn item(value: &str) -> (String, Vec<(String, BareItem)>) {
    let list: List = Parser::new(value).parse().expect("a structured-field list");
    assert_eq!(list.len(), 1, "{value}");
    let ListEntry::Item(item) = &list[0] else {
        panic!("an item, not an inner list: {value}");
    };
    let BareItem::String(name) = &item.bare_item else {
        panic!("the item is a String (rev. 11 §3, §4): {value}");
    };
    let params = item
        .params
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
        .collect();
    // And it serializes back to what was sent.
    assert_eq!(list.serialize().as_deref(), Some(value));
    (name.as_str().to_owned(), params)
}

pub fn int(params: &[(String, BareItem)], key: &str) -> Option<i64> {
    params.iter().find(|(k, _)| k == key).map(|(_, v)| match v {
        BareItem::Integer(i) => i64::from(*i),
        other => panic!("{key} is an Integer, not {other:?}"),
    })
}

/// A rule set loaded from `yaml`.
pub fn rules(yaml: &str) -> Arc<RuleSet> {
    let rules = RuleSet::new();
    rules.reload_str(Format::Yaml, yaml).unwrap();
    Arc::new(rules)
}

/// One permit a minute for all requests together, requests without an `x-user-id` header
/// denied (403).
pub fn one_a_minute_by_id() -> Router {
    let policy = ringlimit::policy::Policy::<ringlimit_tower::Client>::builder()
        .shared(
            "global",
            Arc::new(ringlimit::FixedWindow::new(
                ringlimit::WindowQuota::per_minute(1).unwrap(),
            )),
        )
        .build();
    let keys = ringlimit_tower::ClientKeys::new().id_header(
        http::HeaderName::from_static("x-user-id"),
        ringlimit_tower::Missing::Deny,
    );
    let layer = ringlimit_tower::RateLimitLayer::builder(Arc::new(policy))
        .keys(keys)
        .build();
    Router::new()
        .route("/", axum::routing::get(|| async { "ok" }))
        .layer(layer)
}
