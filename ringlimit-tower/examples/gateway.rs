//! A rate-limiting gateway: an axum server that proxies to an upstream (or answers from a
//! demo handler), limits by a rules file it reloads on change, and serves `/metrics` in
//! Prometheus text format.
//!
//! ```text
//! cargo run --release -p ringlimit-tower --example gateway -- --rules rules.yaml \
//!     [--listen 127.0.0.1:8080] [--upstream http://127.0.0.1:9000] \
//!     [--trust 10.0.0.0/8,fd00::/8] [--id-header x-user-id] [--legacy] [--no-limit] \
//!     [--pass-through] [--max-connections 512] [--max-connections-per-peer 64] \
//!     [--header-timeout 10s] [--idle-timeout 60s]
//! ```
//!
//! See [`USAGE`] (`--help`) for each option. Two rules keep clients from escaping the
//! limits through the transport:
//!
//! - **Paths are normalised before routing** ([`normalize`]): the rules' `resource` and
//!   `route` key see the normal form, and the upstream gets it, so `/api/orders/1/`,
//!   `//api/orders/1`, `/api//orders/1`, `/API/orders/1`, `/api/orders/./1`,
//!   `/api/x/../orders/1` and `/api/%6Frders/1` are all `/api/orders/{id}`. What cannot be
//!   normalised without guessing how the upstream reads it is refused with 400.
//! - **Connections are limited and timed** ([`Limits`]): per peer, overall, a header-read
//!   timeout and an idle timeout, so one address cannot hold every descriptor.
//!
//! Routes, as the rules' `resource` and `route` key see them: `/api/orders/{id}`,
//! `/api/users/{id}`, `/{*path}` (everything else), `/` — and `/metrics`, not limited.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use ipnet::IpNet;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use ringlimit::keyed::IpKey;
use ringlimit::rules::{RuleSet, Watcher};
use ringlimit_tower::{ClientKeys, Missing, RateLimitLayer, TrustedProxies};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_service::Service;

/// `--help`.
const USAGE: &str = "\
Usage: gateway --rules <file.yaml|file.toml> [options]

A rate-limiting HTTP gateway: limits by the rules file (reloaded when it changes), proxies
to --upstream or answers from a demo handler, serves /metrics (Prometheus).

Options:
  --rules <file>                  the rules file (YAML or TOML), required
  --listen <addr:port>            where to listen [default: 127.0.0.1:8080]
  --upstream <http://host:port>   proxy every request there (HTTP/1), appending the peer
                                  to X-Forwarded-For; without it, a demo handler answers
  --trust <net,net,...>           proxies in front whose X-Forwarded-For is believed
                                  (walked from the right); exempt from the per-peer limit
  --id-header <name>              the header naming the client (rules: header:<name>);
                                  requests without it share the id `anonymous`
  --legacy                        also write X-RateLimit-Limit/-Remaining/-Reset
  --no-limit                      no rate-limit layer (to measure what it costs)
  --pass-through                  a layer that does nothing in its place
  --max-connections <n>           open connections at most, all peers together; past it,
                                  new ones wait in the listen backlog [default: 512]
  --max-connections-per-peer <n>  open connections at most from one address (IPv6: one
                                  /64); past it, a new one is closed at once [default: 64]
  --header-timeout <dur>          a request's headers must arrive in full within this,
                                  counted from the connection's start or the end of the
                                  previous response (so it also closes a kept-alive
                                  connection that sends no next request) [default: 10s]
  --idle-timeout <dur>            a connection on which no byte moves either way for this
                                  long is closed, whatever it is doing (a stalled body, a
                                  client that stopped reading, an upstream that does not
                                  answer) [default: 60s]
  -h, --help                      print this and exit

Durations: a whole number with `ms` or `s` (500ms, 10s). Paths are normalised before
routing and forwarding: see the README's gateway section.
";

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
    limits: Limits,
}

/// What the command line asks for.
#[derive(Debug, Clone)]
enum Command {
    /// Serve.
    Serve(Box<Args>),
    /// Print [`USAGE`] and exit 0.
    Help,
}

/// The gateway's connection limits and timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    /// Open connections at most, all peers together (`--max-connections`).
    total: usize,
    /// Open connections at most from one peer, IPv6 by /64, trusted proxies exempt
    /// (`--max-connections-per-peer`).
    per_peer: usize,
    /// A request's headers must arrive within this (`--header-timeout`).
    header_timeout: Duration,
    /// A connection with no byte moving for this long is closed (`--idle-timeout`).
    idle_timeout: Duration,
}

impl Default for Limits {
    /// 512 connections, 64 per peer: under the usual 1 024 descriptors, with room for the
    /// upstream's connections and the rules file; 10 s for headers (slowloris); 60 s idle.
    fn default() -> Self {
        Self {
            total: 512,
            per_peer: 64,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// `500ms`, `10s`: a whole number and its unit, above zero.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let parsed = if let Some(ms) = text.strip_suffix("ms") {
        ms.parse().ok().map(Duration::from_millis)
    } else if let Some(s) = text.strip_suffix('s') {
        s.parse().ok().map(Duration::from_secs)
    } else {
        None
    };
    parsed
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("`{text}` is not a duration above zero (500ms, 10s)"))
}

/// A count above zero.
fn parse_count(flag: &str, text: &str) -> Result<usize, String> {
    match text.parse() {
        Ok(0) | Err(_) => Err(format!("{flag}: `{text}` is not a count above zero")),
        Ok(n) => Ok(n),
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut parsed = Args {
        rules: PathBuf::new(),
        listen: "127.0.0.1:8080".parse().map_err(|e| format!("{e}"))?,
        upstream: None,
        trust: Vec::new(),
        id_header: None,
        legacy: false,
        no_limit: false,
        pass_through: false,
        limits: Limits::default(),
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
            "--max-connections" => parsed.limits.total = parse_count(&flag, &value()?)?,
            "--max-connections-per-peer" => parsed.limits.per_peer = parse_count(&flag, &value()?)?,
            "--header-timeout" => {
                parsed.limits.header_timeout =
                    parse_duration(&value()?).map_err(|e| format!("{flag}: {e}"))?
            }
            "--idle-timeout" => {
                parsed.limits.idle_timeout =
                    parse_duration(&value()?).map_err(|e| format!("{flag}: {e}"))?
            }
            "-h" | "--help" => return Ok(Command::Help),
            other => return Err(format!("unknown argument {other} (see --help)")),
        }
    }
    parsed.rules = rules.ok_or("--rules <file.yaml|file.toml> is required (see --help)")?;
    Ok(Command::Serve(Box::new(parsed)))
}

/// Why a path is refused (400) rather than normalised: each is a path the upstream could
/// read otherwise than the gateway, whatever form the gateway chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathError {
    /// A `..` segment above the root (`/../admin`).
    AboveRoot,
    /// A percent-encoded `/` or `\` (`%2F`, `%5C`): a separator to some servers, a
    /// character of a segment to others.
    EncodedSeparator,
    /// A `\`: a separator to some servers.
    Backslash,
    /// A `%` not followed by two hex digits.
    BadPercent,
    /// A normal form that is no valid request target (never met: a guard).
    Unparsable,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AboveRoot => "the path's `..` climbs above the root",
            Self::EncodedSeparator => "the path holds a percent-encoded `/` or `\\`",
            Self::Backslash => "the path holds a `\\`",
            Self::BadPercent => "the path holds a `%` not followed by two hex digits",
            Self::Unparsable => "the path's normal form is not a valid request target",
        })
    }
}

/// A path in normal form: what the router and the rules match ([`route`](Self::route)),
/// and what the upstream gets ([`forward`](Self::forward)).
#[derive(Debug, Clone, PartialEq, Eq)]
struct NormalPath {
    /// The segments, the client's letter case kept.
    forward: String,
    /// Whether the client's path ended in `/` (or a `.`/`..` segment).
    trailing_slash: bool,
}

impl NormalPath {
    /// What the upstream gets: the normal form, with the client's letter case and trailing
    /// slash (a directory's `/docs/` stays `/docs/`: an upstream redirecting `/docs` to
    /// `/docs/` would otherwise loop).
    fn forward(&self) -> String {
        if self.trailing_slash && self.forward != "/" {
            format!("{}/", self.forward)
        } else {
            self.forward.clone()
        }
    }

    /// What the router and the rules match: the normal form, in ASCII lowercase, without a
    /// trailing slash. `/API/orders/1` is `/api/orders/1`: an upstream that reads paths
    /// without regard to case cannot be reached past a rule.
    fn route(&self) -> String {
        self.forward.to_ascii_lowercase()
    }
}

/// `path` in normal form (RFC 3986 §6.2.2, and more):
///
/// 1. percent-encoded unreserved characters are decoded (`%6F` is `o`, `%2E` is `.`), other
///    escapes are kept with uppercase hex (`%c3%a9` is `%C3%A9`);
/// 2. empty segments and `.` segments are removed (`//a//b/./c` is `/a/b/c`), and `..`
///    removes the segment before it;
/// 3. refused ([`PathError`]): a `..` above the root, a percent-encoded `/` or `\`, a `\`,
///    a `%` without two hex digits.
///
/// Case and a trailing slash: see [`NormalPath`]. `;` (path parameters) is an ordinary
/// character: `/a;x/b` is not `/a/b`.
fn normalize(path: &str) -> Result<NormalPath, PathError> {
    let decoded = decode_unreserved(path)?;
    let mut segments: Vec<&str> = Vec::new();
    let mut trailing_slash = false;
    for segment in decoded.split('/') {
        trailing_slash = matches!(segment, "" | "." | "..");
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop().ok_or(PathError::AboveRoot)?;
            }
            segment => segments.push(segment),
        }
    }
    Ok(NormalPath {
        forward: format!("/{}", segments.join("/")),
        trailing_slash,
    })
}

/// `path` with its percent-encoded unreserved characters decoded and its other escapes'
/// hex in uppercase.
fn decode_unreserved(path: &str) -> Result<String, PathError> {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => return Err(PathError::Backslash),
            b'%' => {
                let hex = |at: usize| {
                    bytes
                        .get(at)
                        .and_then(|&b| char::from(b).to_digit(16))
                        .ok_or(PathError::BadPercent)
                };
                let byte = u8::try_from(hex(i + 1)? * 16 + hex(i + 2)?).unwrap_or(0);
                match byte {
                    b'/' | b'\\' => return Err(PathError::EncodedSeparator),
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        out.push(char::from(byte))
                    }
                    _ => out.push_str(&format!("%{byte:02X}")),
                }
                i += 3;
            }
            // The path of a parsed URI is ASCII.
            byte => {
                out.push(char::from(byte));
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The path and query the upstream gets (the request's [`NormalPath::forward`]).
#[derive(Debug, Clone)]
struct ForwardPath(String);

/// Normalises the request's path before the router: the router sees the route form, the
/// handler forwards the forward form ([`ForwardPath`]).
fn normalize_request<B>(request: &mut http::Request<B>) -> Result<(), PathError> {
    let uri = request.uri();
    let normal = normalize(uri.path())?;
    let query = uri.query().map_or(String::new(), |q| format!("?{q}"));
    let mut parts = uri.clone().into_parts();
    // The normal form of a valid path is a valid path (only unreserved characters were
    // decoded); were it not, the request is refused rather than routed as sent.
    parts.path_and_query = format!("{}{query}", normal.route()).parse().ok();
    *request.uri_mut() = Uri::from_parts(parts).map_err(|_| PathError::Unparsable)?;
    request
        .extensions_mut()
        .insert(ForwardPath(format!("{}{query}", normal.forward())));
    Ok(())
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
    // The normal form (see `normalize`), never the client's spelling.
    let path = match request.extensions().get::<ForwardPath>() {
        Some(ForwardPath(path)) => path.clone(),
        None => request
            .uri()
            .path_and_query()
            .map_or("/".to_owned(), |p| p.as_str().to_owned()),
    };
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

/// The open connections of each peer (IPv6 by /64), trusted proxies exempt.
struct Peers {
    open: Mutex<HashMap<IpKey, usize>>,
    limit: usize,
    exempt: Vec<IpNet>,
}

/// One connection's place under its peer's limit, given back when dropped.
struct PeerSlot {
    peers: Arc<Peers>,
    key: Option<IpKey>,
}

impl Peers {
    /// A place for one more connection from `ip`, if it has one left.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<PeerSlot> {
        let ip = ip.to_canonical();
        if self.exempt.iter().any(|net| net.contains(&ip)) {
            return Some(PeerSlot {
                peers: self.clone(),
                key: None,
            });
        }
        let key = IpKey::with_v6_prefix(ip, 64);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(key).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: self.clone(),
            key: Some(key),
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let Some(key) = self.key else { return };
        let mut open = self.peers.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&key);
            }
        }
    }
}

/// A connection's stream, noting when a byte last moved either way (milliseconds since
/// `start`), for the idle timeout.
struct Watched {
    stream: TcpStream,
    start: tokio::time::Instant,
    last: Arc<AtomicU64>,
}

impl Watched {
    fn moved(&self, bytes: usize) {
        if bytes > 0 {
            let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
            // Relaxed: a timestamp read by the idle timer alone, which only needs some
            // recent value.
            self.last.store(now, Ordering::Relaxed);
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        self.moved(buf.filled().len() - before);
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.moved(n);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Resolves once no byte has moved on the connection for `idle`.
async fn idle_for(start: tokio::time::Instant, last: Arc<AtomicU64>, idle: Duration) {
    loop {
        let deadline = start + Duration::from_millis(last.load(Ordering::Relaxed)) + idle;
        if tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}

/// Serves `app` on `listener` under `limits` (trusted proxies, `exempt`, have no per-peer
/// limit): each request's path normalised before the router, the peer given to it as
/// axum's `ConnectInfo`.
async fn serve(listener: TcpListener, app: Router, limits: Limits, exempt: Vec<IpNet>) {
    let total = Arc::new(Semaphore::new(limits.total));
    let peers = Arc::new(Peers {
        open: Mutex::new(HashMap::new()),
        limit: limits.per_peer,
        exempt,
    });
    loop {
        // Past the overall limit, new connections wait in the listen backlog.
        let Ok(permit) = total.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors (EMFILE) or a connection reset before it was accepted:
                // wait a little rather than spin.
                eprintln!("gateway: accept: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Past its peer's limit, a connection is closed at once.
        let Some(slot) = peers.admit(peer.ip()) else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            peer,
            app.clone(),
            limits,
            (permit, slot),
        ));
    }
}

/// One connection, served until it ends, times out or idles; `held` are its places under
/// the limits, given back when it ends.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: Limits,
    held: (OwnedSemaphorePermit, PeerSlot),
) {
    let start = tokio::time::Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(Watched {
        stream,
        start,
        last: last.clone(),
    });
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        let mut app = app.clone();
        async move {
            if let Err(error) = normalize_request(&mut request) {
                return Ok((StatusCode::BAD_REQUEST, format!("{error}\n")).into_response());
            }
            request.extensions_mut().insert(ConnectInfo(peer));
            let request = request.map(Body::new);
            std::future::poll_fn(|cx| Service::<Request>::poll_ready(&mut app, cx)).await?;
            app.call(request).await
        }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let serving = http.serve_connection(io, service);
    tokio::select! {
        _ = serving => {}
        () = idle_for(start, last, limits.idle_timeout) => {}
    }
    drop(held);
}

fn main() {
    main_on(std::env::args().skip(1));
}

/// `gateway` run with the arguments `line`: serves, or prints the usage (`--help`) and
/// returns, or exits 2 on a bad command line.
fn main_on(line: impl Iterator<Item = String>) {
    let args = match parse_args(line) {
        Ok(Command::Serve(args)) => args,
        Ok(Command::Help) => {
            print!("{USAGE}");
            let _ = std::io::stdout().flush();
            return;
        }
        Err(error) => {
            eprintln!("gateway: {error}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("gateway: {error}");
            std::process::exit(1);
        }
    };
    runtime.block_on(run(*args));
}

async fn run(args: Args) {
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
    let listener = match TcpListener::bind(args.listen).await {
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
    serve(listener, app, args.limits, args.trust.clone()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

    /// Serves `app` with axum's own server (the upstream).
    async fn serve_upstream(app: Router) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
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
        let upstream = serve_upstream(Router::new().route(
            "/{*path}",
            get(|request: Request| async move {
                let xff = request.headers().get("x-forwarded-for").cloned();
                format!("upstream {} xff={xff:?}", request.uri())
            }),
        ))
        .await;
        let args = args(&[
            "--rules",
            path.to_str().unwrap(),
            "--upstream",
            &format!("http://{upstream}"),
        ]);
        let metrics = PrometheusBuilder::new().install_recorder().unwrap();
        let (addr, _watcher) = start(&args, metrics).await;
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
        let parsed = args(&[
            "--rules",
            "r.yaml",
            "--trust",
            "10.0.0.0/8, fd00::/8",
            "--id-header",
            "x-user-id",
            "--legacy",
            "--max-connections",
            "100",
            "--header-timeout",
            "500ms",
            "--idle-timeout",
            "2s",
        ]);
        assert_eq!(parsed.trust.len(), 2);
        assert!(parsed.legacy && !parsed.no_limit);
        assert_eq!(
            parsed.limits,
            Limits {
                total: 100,
                header_timeout: Duration::from_millis(500),
                idle_timeout: Duration::from_secs(2),
                ..Limits::default()
            }
        );
        assert_eq!(args(&["--rules", "r.yaml"]).limits, Limits::default());
        let parse = |line: &[&str]| parse_args(line.iter().map(|s| s.to_string()));
        assert!(parse(&["--listen", "x"]).is_err());
        assert!(parse(&[]).is_err());
        for bad in ["0s", "10", "s", "1m", "-1s", "1.5s"] {
            assert!(
                parse(&["--rules", "r", "--idle-timeout", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(parse(&["--rules", "r", "--max-connections-per-peer", "0"]).is_err());
        assert!(matches!(parse(&["--help"]), Ok(Command::Help)));
        assert!(matches!(parse(&["--rules", "r", "-h"]), Ok(Command::Help)));
    }

    /// Not a test: the entry of this test binary run again as the gateway's `main`, on
    /// the arguments in `GATEWAY_MAIN_ARGS` (one a line). Does nothing without it.
    #[test]
    fn gateway_main_in_a_child_process() {
        if let Some(line) = std::env::var_os("GATEWAY_MAIN_ARGS") {
            let line = line.into_string().unwrap();
            main_on(line.lines().map(String::from));
            std::process::exit(0);
        }
    }

    /// The gateway's `main` in a process of its own, on `line`, under `sh` commands
    /// `before` (`ulimit -n 64`); its output captured.
    fn gateway_process(line: &[&str], before: &str) -> std::process::Command {
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "{before}\nexec \"$0\" --exact tests::gateway_main_in_a_child_process --nocapture"
            ))
            .arg(std::env::current_exe().unwrap())
            .env("GATEWAY_MAIN_ARGS", line.join("\n"));
        command
    }

    /// `gateway --help` prints the usage and exits 0.
    #[test]
    fn help_prints_usage_and_exits_0() {
        let output = gateway_process(&["--help"], "").output().unwrap();
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("Usage: gateway --rules"), "{stdout}");
        for flag in [
            "--max-connections-per-peer",
            "--header-timeout",
            "--idle-timeout",
            "[default: 64]",
        ] {
            assert!(stdout.contains(flag), "{flag}");
        }
    }

    /// One address cannot exhaust the descriptors of the gateway as deployed: its own
    /// process, 64 descriptors, one address holding 100 idle connections; another address
    /// is still served.
    #[tokio::test]
    async fn one_address_cannot_exhaust_the_gateways_descriptors() {
        let path = rules_file(
            "nofile",
            "rules:\n  - {name: global, key: global, algorithm: token_bucket, rate: 1000/s}\n",
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let listen = addr.to_string();
        let line = [
            "--rules",
            path.to_str().unwrap(),
            "--listen",
            &listen,
            "--max-connections-per-peer",
            "16",
        ];
        let mut gateway = gateway_process(&line, "ulimit -n 64")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut up = false;
        for _ in 0..200 {
            if TcpStream::connect(addr).await.is_ok() {
                up = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut held = Vec::new();
        for _ in 0..100 {
            held.push(TcpStream::connect(addr).await.unwrap());
        }
        let served =
            tokio::time::timeout(Duration::from_secs(5), get_from("127.0.0.2", addr)).await;
        gateway.kill().unwrap();
        gateway.wait().unwrap();
        assert!(up, "the gateway did not start");
        assert_eq!(
            served.ok(),
            Some(StatusCode::OK),
            "another address is served"
        );
        drop(held);
    }

    #[test]
    fn normalizes_paths_or_refuses_them() {
        let normal = |path: &str| normalize(path).map(|n| (n.route(), n.forward()));
        let both = |route: &str, forward: &str| Ok((route.to_owned(), forward.to_owned()));
        for path in [
            "/api/orders/1",
            "//api/orders/1",
            "/api//orders/1",
            "/api/orders/./1",
            "/api/x/../orders/1",
            "/api/%6Frders/%31",
            "/api/orders/%2E/1",
        ] {
            assert_eq!(
                normal(path),
                both("/api/orders/1", "/api/orders/1"),
                "{path}"
            );
        }
        for path in ["/api/orders/1/", "/api/orders/1/.", "/api/orders/1/x/.."] {
            assert_eq!(
                normal(path),
                both("/api/orders/1", "/api/orders/1/"),
                "{path}"
            );
        }
        assert_eq!(
            normal("/API/Orders/1"),
            both("/api/orders/1", "/API/Orders/1")
        );
        assert_eq!(normal("/"), both("/", "/"));
        assert_eq!(normal("/./"), both("/", "/"));
        assert_eq!(normal("/a/%c3%a9;x"), both("/a/%c3%a9;x", "/a/%C3%A9;x"));
        assert_eq!(normal("/.."), Err(PathError::AboveRoot));
        assert_eq!(normal("/a/../../b"), Err(PathError::AboveRoot));
        assert_eq!(normal("/a/%2e%2E/%2e%2e/b"), Err(PathError::AboveRoot));
        assert_eq!(normal("/a%2Fb"), Err(PathError::EncodedSeparator));
        assert_eq!(normal("/a%5cb"), Err(PathError::EncodedSeparator));
        assert_eq!(normal("/a\\b"), Err(PathError::Backslash));
        for bad in ["/a%", "/a%2", "/a%zz", "/a%%41"] {
            assert_eq!(normal(bad), Err(PathError::BadPercent), "{bad}");
        }
    }

    /// The command line `line` parsed: a gateway to serve.
    fn args(line: &[&str]) -> Args {
        match parse_args(line.iter().map(|s| s.to_string())) {
            Ok(Command::Serve(args)) => *args,
            other => panic!("{other:?}"),
        }
    }

    /// The gateway of `args`, served by its own accept loop on an ephemeral port.
    async fn start(args: &Args, metrics: PrometheusHandle) -> (SocketAddr, Option<Watcher>) {
        let (app, watcher) = gateway(args, metrics).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, app, args.limits, args.trust.clone()));
        (addr, watcher)
    }

    /// A rules file of its own for the test `name`.
    fn rules_file(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ringlimit-gateway-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rules.yaml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A gateway on its demo handler with `extra` options, limiting little.
    async fn demo_gateway(name: &str, extra: &[&str]) -> (SocketAddr, Option<Watcher>) {
        let path = rules_file(
            name,
            "rules:\n  - {name: global, key: global, algorithm: token_bucket, rate: 1000/s}\n",
        );
        let mut line = vec!["--rules", path.to_str().unwrap()];
        line.extend_from_slice(extra);
        let metrics = PrometheusBuilder::new().build_recorder().handle();
        start(&args(&line), metrics).await
    }

    /// A GET of `/` on a connection of its own from `from` (a loopback address): the status.
    async fn get_from(from: &str, addr: SocketAddr) -> StatusCode {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let stream = socket.connect(addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let request = http::Request::get("/")
            .header("host", "gateway")
            .body(Empty::<Bytes>::new())
            .unwrap();
        sender.send_request(request).await.unwrap().status()
    }

    /// Whether the gateway closes `stream` within `within` (its end, or an error).
    async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
        let mut buf = [0_u8; 1024];
        loop {
            match tokio::time::timeout(within, stream.read(&mut buf)).await {
                Err(_) => return false,
                Ok(Ok(0) | Err(_)) => return true,
                // An answer (a 408, say) before the close.
                Ok(Ok(_)) => continue,
            }
        }
    }

    #[tokio::test]
    async fn path_variants_are_limited_as_their_route_and_forwarded_normalised() {
        let path = rules_file(
            "paths",
            "rules:\n  - {name: orders, resource: /api/orders/*, key: client_ip, algorithm: fixed_window, rate: 3/min}\n",
        );
        let upstream = serve_upstream(
            Router::new()
                .fallback(|request: Request| async move { format!("upstream {}", request.uri()) }),
        )
        .await;
        let args = args(&[
            "--rules",
            path.to_str().unwrap(),
            "--upstream",
            &format!("http://{upstream}"),
        ]);
        let metrics = PrometheusBuilder::new().build_recorder().handle();
        let (addr, _watcher) = start(&args, metrics).await;
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let url = |path: &str| format!("http://{addr}{path}");
        // Every spelling of one order is the route `/api/orders/{id}`: 3 a minute in all.
        let mut seen = Vec::new();
        for variant in [
            "/api/orders/1/",
            "//api/orders/1?q=1",
            "/API/orders/1",
            "/api//orders/1",
            "/api/orders/./1",
            "/api/orders/1/.",
            "/api/x/../orders/1",
            "/api/%6Frders/1",
            "/api/orders/1",
        ] {
            let (status, headers, body) = fetch(&client, url(variant)).await;
            assert!(headers.contains_key("ratelimit-policy"), "{variant}");
            seen.push((status.as_u16(), body));
        }
        let upstream_saw = |path: &str| (200, format!("upstream {path}"));
        assert_eq!(seen[0], upstream_saw("/api/orders/1/"));
        assert_eq!(seen[1], upstream_saw("/api/orders/1?q=1"));
        // The client's letter case reaches the upstream; the limit is the route's.
        assert_eq!(seen[2], upstream_saw("/API/orders/1"));
        for (status, body) in &seen[3..] {
            assert_eq!(*status, 429, "{body}");
            assert!(!body.starts_with("upstream"), "{body}");
        }
        // What cannot be normalised without guessing is refused, never forwarded.
        for refused in ["/../api/orders/1", "/api/orders%2F1", "/api/orders/%zz"] {
            let (status, headers, body) = fetch(&client, url(refused)).await;
            assert_eq!(status, 400, "{refused}: {body}");
            assert!(!headers.contains_key("ratelimit"), "{refused}");
        }
        // Other paths are forwarded in normal form, and not limited by the orders rule.
        let (status, headers, body) = fetch(&client, url("/api/users//7/./")).await;
        assert_eq!((status.as_u16(), body), upstream_saw("/api/users/7/"));
        assert!(!headers.contains_key("ratelimit-policy"));
    }

    #[tokio::test]
    async fn one_peer_past_its_connection_limit_cannot_stop_another_from_being_served() {
        let (addr, _watcher) = demo_gateway(
            "peers",
            &["--max-connections", "6", "--max-connections-per-peer", "4"],
        )
        .await;
        // 127.0.0.1 opens ten idle connections: four stay, the other six are closed at once.
        let mut held = Vec::new();
        for _ in 0..10 {
            held.push(TcpStream::connect(addr).await.unwrap());
        }
        let mut closed = 0;
        for stream in &mut held {
            if closed_within(stream, Duration::from_secs(1)).await {
                closed += 1;
            }
        }
        assert_eq!(
            closed, 6,
            "connections past the peer's limit of 4 are closed"
        );
        // Another address is served while the first holds all it may.
        let status = tokio::time::timeout(Duration::from_secs(5), get_from("127.0.0.2", addr))
            .await
            .expect("another peer is served");
        assert_eq!(status, 200);
        // The first peer, at its limit, still cannot open a fifth.
        let mut fifth = TcpStream::connect(addr).await.unwrap();
        assert!(closed_within(&mut fifth, Duration::from_secs(1)).await);
        // Closing one gives its place back.
        held.truncate(3);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let status = tokio::time::timeout(Duration::from_secs(5), get_from("127.0.0.1", addr))
            .await
            .expect("a place given back is taken again");
        assert_eq!(status, 200);
    }

    /// A trusted proxy speaks for many clients: no per-peer limit (the overall one holds).
    #[tokio::test]
    async fn a_trusted_proxy_has_no_per_peer_limit() {
        let (addr, _watcher) = demo_gateway(
            "trusted",
            &["--max-connections-per-peer", "2", "--trust", "127.0.0.1/32"],
        )
        .await;
        let mut held = Vec::new();
        for _ in 0..5 {
            held.push(TcpStream::connect(addr).await.unwrap());
        }
        for stream in &mut held {
            assert!(!closed_within(stream, Duration::from_millis(200)).await);
        }
        let status = tokio::time::timeout(Duration::from_secs(5), get_from("127.0.0.1", addr))
            .await
            .expect("the proxy is served");
        assert_eq!(status, 200);
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_after_the_idle_timeout() {
        let (addr, _watcher) = demo_gateway(
            "idle",
            &["--idle-timeout", "300ms", "--header-timeout", "30s"],
        )
        .await;
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        let driver = tokio::spawn(conn);
        let request = http::Request::get("/")
            .header("host", "gateway")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.unwrap();
        // Kept alive, then idle: closed by the gateway after 300 ms.
        let idle = std::time::Instant::now();
        tokio::time::timeout(Duration::from_secs(3), driver)
            .await
            .expect("the idle connection was closed")
            .unwrap()
            .unwrap();
        assert!(
            idle.elapsed() >= Duration::from_millis(200),
            "{:?}",
            idle.elapsed()
        );
        // A connection that never sends a byte, too.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        assert!(closed_within(&mut silent, Duration::from_secs(3)).await);
    }

    #[tokio::test]
    async fn a_slowloris_is_dropped_after_the_header_read_timeout() {
        let (addr, _watcher) = demo_gateway(
            "slowloris",
            &["--header-timeout", "300ms", "--idle-timeout", "30s"],
        )
        .await;
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut read, mut write) = stream.into_split();
        let started = std::time::Instant::now();
        // Headers that never end: one line every 50 ms (so the connection is never idle).
        let trickle = tokio::spawn(async move {
            write
                .write_all(b"GET / HTTP/1.1\r\nhost: gateway\r\n")
                .await?;
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                write.write_all(b"x-slow: 1\r\n").await?;
            }
            #[allow(unreachable_code)]
            Ok::<(), std::io::Error>(())
        });
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), read.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "the slowloris was not dropped");
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        let rest = String::from_utf8_lossy(&rest);
        assert!(
            rest.is_empty() || rest.starts_with("HTTP/1.1 408"),
            "{rest}"
        );
        // The writer finds the connection gone.
        let written = tokio::time::timeout(Duration::from_secs(5), trickle).await;
        assert!(matches!(written, Ok(Ok(Err(_)))), "{written:?}");
    }
}
