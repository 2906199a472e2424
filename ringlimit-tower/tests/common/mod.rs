//! Real HTTP over loopback: an axum server on an ephemeral port, served with the peer's
//! address, and a hyper client.

#![allow(dead_code)]

use std::net::SocketAddr;

use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

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
