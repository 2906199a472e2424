//! A rate-limiting gateway: an axum server that proxies to an upstream (or answers from a
//! demo handler), limits by a rules file it reloads on change, and serves `/metrics` in
//! Prometheus text format.
//!
//! ```text
//! cargo run --release -p ringlimit-tower --example gateway -- --rules rules.yaml \
//!     [--listen 127.0.0.1:8080] [--upstream http://127.0.0.1:9000] \
//!     [--trust 10.0.0.0/8,fd00::/8] [--id-header x-user-id] [--legacy] [--no-limit] \
//!     [--pass-through]
//! ```
//!
//! - `--upstream`: proxy every request there (HTTP/1), appending the peer to
//!   `X-Forwarded-For`; without it, a demo handler answers `hello from <route>`.
//! - `--trust`: the proxies in front of the gateway whose `X-Forwarded-For` is believed
//!   (walked from the right).
//! - `--id-header`: the header that names the client (rules key it with
//!   `header:<name>`); requests without it share the id `anonymous`.
//! - `--no-limit`: the same server without the layer (to measure what it costs).
//! - `--pass-through`: the same server with a layer that does nothing in place of the rate
//!   limit (what axum's `Router::layer` costs any layer: the service wrapped and cloned per
//!   request).
//!
//! Routes, as the rules' `resource` and `route` key see them: `/api/orders/{id}`,
//! `/api/users/{id}`, `/{*path}` (everything else), `/` — and `/metrics`, not limited.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ipnet::IpNet;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use ringlimit::rules::{RuleSet, Watcher};
use ringlimit_tower::{ClientKeys, Missing, RateLimitLayer, TrustedProxies};

/// The command line.
#[derive(Debug, Clone)]
struct Args {
    rules: PathBuf,
    listen: SocketAddr,
    upstream: Option<Uri>,
    trust: Vec<IpNet>,
    id_header: Option<HeaderName>,
    legacy: bool,
    no_limit: bool,
    pass_through: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        rules: PathBuf::new(),
        listen: "127.0.0.1:8080".parse().map_err(|e| format!("{e}"))?,
        upstream: None,
        trust: Vec::new(),
        id_header: None,
        legacy: false,
        no_limit: false,
        pass_through: false,
    };
    let mut rules = None;
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--rules" => rules = Some(PathBuf::from(value()?)),
            "--listen" => parsed.listen = value()?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--upstream" => {
                parsed.upstream = Some(value()?.parse().map_err(|e| format!("--upstream: {e}"))?)
            }
            "--trust" => {
                for net in value()?.split(',') {
                    parsed.trust.push(
                        net.trim()
                            .parse()
                            .map_err(|e| format!("--trust {net}: {e}"))?,
                    );
                }
            }
            "--id-header" => {
                parsed.id_header = Some(value()?.parse().map_err(|e| format!("--id-header: {e}"))?)
            }
            "--legacy" => parsed.legacy = true,
            "--no-limit" => parsed.no_limit = true,
            "--pass-through" => parsed.pass_through = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    parsed.rules = rules.ok_or("--rules <file.yaml|file.toml> is required")?;
    Ok(parsed)
}

/// Where requests go: the upstream, or the demo handler.
#[derive(Clone)]
struct Forward {
    client: Client<HttpConnector, Body>,
    upstream: Option<Uri>,
}

async fn handle(
    State(forward): State<Forward>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    route: Option<MatchedPath>,
    mut request: Request,
) -> Response {
    let Some(upstream) = &forward.upstream else {
        let route = route.as_ref().map_or("?", MatchedPath::as_str);
        return format!("hello from {route}\n").into_response();
    };
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    let Ok(uri) = format!("{}{}", upstream.to_string().trim_end_matches('/'), path).parse::<Uri>()
    else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    *request.uri_mut() = uri;
    request.headers_mut().remove(axum::http::header::HOST);
    let xff = HeaderName::from_static("x-forwarded-for");
    let appended = match request.headers().get(&xff).and_then(|v| v.to_str().ok()) {
        Some(before) => format!("{before}, {}", peer.ip()),
        None => peer.ip().to_string(),
    };
    if let Ok(value) = HeaderValue::from_str(&appended) {
        request.headers_mut().insert(xff, value);
    }
    match forward.client.request(request).await {
        Ok(response) => response.map(Body::new),
        Err(error) => (StatusCode::BAD_GATEWAY, format!("upstream: {error}\n")).into_response(),
    }
}

/// The gateway's router, and the watcher reloading its rules (keep it alive).
fn gateway(args: &Args, metrics: PrometheusHandle) -> Result<(Router, Option<Watcher>), String> {
    let forward = Forward {
        client: Client::builder(TokioExecutor::new()).build_http(),
        upstream: args.upstream.clone(),
    };
    let routes = Router::new()
        .route("/", any(handle))
        .route("/api/orders/{id}", any(handle))
        .route("/api/users/{id}", any(handle))
        .route("/{*path}", any(handle))
        .with_state(forward);
    let mut watcher = None;
    let routes = if args.no_limit {
        routes
    } else if args.pass_through {
        routes.layer(tower_layer::layer_fn(|route| route))
    } else {
        let rules = Arc::new(RuleSet::from_path(&args.rules).map_err(|e| e.to_string())?);
        watcher = Some(
            Watcher::new(
                rules.clone(),
                &args.rules,
                Duration::from_millis(100),
                |outcome| match outcome {
                    Ok(report) => eprintln!("rules reloaded: {report}"),
                    Err(error) => eprintln!("rules not reloaded (the old ones stay): {error}"),
                },
            )
            .map_err(|e| e.to_string())?,
        );
        let mut keys = ClientKeys::new();
        if !args.trust.is_empty() {
            keys = keys.trusted_proxies(TrustedProxies::x_forwarded_for(args.trust.clone()));
        }
        if let Some(header) = &args.id_header {
            keys = keys.id_header(header.clone(), Missing::Shared("anonymous".into()));
        }
        let layer = RateLimitLayer::builder(rules)
            .keys(keys)
            .legacy_headers(args.legacy)
            .build();
        routes.layer(layer)
    };
    let app = Router::new()
        .route("/metrics", get(move || async move { metrics.render() }))
        .merge(routes);
    Ok((app, watcher))
}

#[tokio::main]
async fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("gateway: {error}");
            std::process::exit(2);
        }
    };
    let metrics = match PrometheusBuilder::new().install_recorder() {
        Ok(handle) => handle,
        Err(error) => {
            eprintln!("gateway: metrics: {error}");
            std::process::exit(1);
        }
    };
    let (app, _watcher) = match gateway(&args, metrics) {
        Ok(built) => built,
        Err(error) => {
            eprintln!("gateway: {error}");
            std::process::exit(1);
        }
    };
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("gateway: {}: {error}", args.listen);
            std::process::exit(1);
        }
    };
    eprintln!(
        "gateway on http://{} ({}), rules {}{}",
        args.listen,
        args.upstream
            .as_ref()
            .map_or("demo handler".to_owned(), |u| format!("proxy to {u}")),
        args.rules.display(),
        if args.no_limit || args.pass_through {
            ", NOT LIMITED"
        } else {
            ""
        }
    );
    let served = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await;
    if let Err(error) = served {
        eprintln!("gateway: {error}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty};

    async fn fetch(
        client: &Client<HttpConnector, Empty<Bytes>>,
        url: String,
    ) -> (StatusCode, axum::http::HeaderMap, String) {
        let response = client.get(url.parse().unwrap()).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&body).into_owned(),
        )
    }

    async fn serve(app: Router) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .unwrap()
        });
        addr
    }

    /// The gateway proxies to a real upstream, limits by its rules file, reloads it, and
    /// its `/metrics` scrape counts the decisions.
    #[tokio::test]
    async fn proxies_limits_reloads_and_exports_metrics() {
        let dir = std::env::temp_dir().join(format!("ringlimit-gateway-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rules.yaml");
        let rules = |rate: &str| {
            format!("rules:\n  - name: orders\n    resource: /api/orders/*\n    key: client_ip\n    algorithm: fixed_window\n    rate: {rate}\n")
        };
        std::fs::write(&path, rules("2/min")).unwrap();
        let upstream = serve(Router::new().route(
            "/{*path}",
            get(|request: Request| async move {
                let xff = request.headers().get("x-forwarded-for").cloned();
                format!("upstream {} xff={xff:?}", request.uri())
            }),
        ))
        .await;
        let args = parse_args(
            [
                "--rules",
                path.to_str().unwrap(),
                "--upstream",
                &format!("http://{upstream}"),
            ]
            .into_iter()
            .map(String::from),
        )
        .unwrap();
        let metrics = PrometheusBuilder::new().install_recorder().unwrap();
        let (app, _watcher) = gateway(&args, metrics).unwrap();
        let addr = serve(app).await;
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let url = |path: &str| format!("http://{addr}{path}");

        let (status, headers, body) = fetch(&client, url("/api/orders/7?x=1")).await;
        assert_eq!(status, 200);
        assert_eq!(body, r#"upstream /api/orders/7?x=1 xff=Some("127.0.0.1")"#);
        assert_eq!(headers["ratelimit-policy"], r#""orders";q=2;w=60"#);
        assert_eq!(fetch(&client, url("/api/orders/8")).await.0, 200);
        let (status, headers, _) = fetch(&client, url("/api/orders/9")).await;
        assert_eq!(status, 429);
        assert!(headers.contains_key("retry-after"));
        // Out of the rule's resource: not limited, no headers.
        let (status, headers, _) = fetch(&client, url("/api/users/1")).await;
        assert_eq!(status, 200);
        assert!(!headers.contains_key("ratelimit-policy"));

        let temporary = dir.join("rules.tmp");
        std::fs::write(&temporary, rules("5/min")).unwrap();
        std::fs::rename(&temporary, &path).unwrap();
        let mut reloaded = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let (status, headers, _) = fetch(&client, url("/api/orders/10")).await;
            if status == 200 {
                assert_eq!(headers["ratelimit-policy"], r#""orders";q=5;w=60"#);
                reloaded = true;
                break;
            }
        }
        assert!(reloaded, "the reload raised the limit");

        let (status, _, scrape) = fetch(&client, url("/metrics")).await;
        assert_eq!(status, 200);
        let allowed = scrape
            .lines()
            .find(|l| {
                l.starts_with("ringlimit_requests_total")
                    && l.contains(r#"rule="orders""#)
                    && l.contains("allowed")
            })
            .unwrap_or_else(|| panic!("{scrape}"));
        assert!(allowed.ends_with(" 3"), "{allowed}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parses_its_command_line() {
        let args = parse_args(
            [
                "--rules",
                "r.yaml",
                "--trust",
                "10.0.0.0/8, fd00::/8",
                "--id-header",
                "x-user-id",
                "--legacy",
            ]
            .into_iter()
            .map(String::from),
        )
        .unwrap();
        assert_eq!(args.trust.len(), 2);
        assert!(args.legacy && !args.no_limit);
        assert!(parse_args(["--listen", "x"].into_iter().map(String::from)).is_err());
        assert!(parse_args(std::iter::empty()).is_err());
    }
}
