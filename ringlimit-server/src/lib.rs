//! # ringlimit-server
//!
//! Envoy's rate limit service, `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`
//! over gRPC, on ringlimit's exact limiters. Configuration files are envoyproxy/ratelimit's
//! YAML ([`config`]), matched as it matches them ([`matcher`]); every descriptor of a request
//! is decided all or nothing ([`backend`]: in process, or on Redis through ringlimit-redis);
//! the limits reload when their directory changes ([`limits`]), counts kept for the limits
//! that did not change; `/metrics` in Prometheus' text format ([`metrics`]).
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use ringlimit_server::{Options, Server};
//! let server = Server::start(Options::new("config/")).await?;
//! println!("gRPC on {}", server.grpc_addr());
//! server.wait().await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod config;
pub mod limits;
pub mod matcher;
pub mod metrics;
pub mod proto;
pub mod service;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;

use crate::backend::Backend;
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::proto::rls::rate_limit_service_server::RateLimitServiceServer;
use crate::service::{Bounds, Noop, RateLimiter};

/// How to run a server.
///
/// ```
/// let options = ringlimit_server::Options::new("config/").noop(true);
/// assert!(options.noop);
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    /// The directory of configuration files.
    pub config: PathBuf,
    /// The gRPC address (`127.0.0.1:0` picks a free port).
    pub grpc: SocketAddr,
    /// The address of `/metrics`, if served.
    pub metrics: Option<SocketAddr>,
    /// Where counts live.
    pub backend: Backend,
    /// Reload the directory when it changes.
    pub watch: bool,
    /// Admit everything without reading the configuration (the benchmark's baseline).
    pub noop: bool,
    /// What one request may carry.
    pub bounds: Bounds,
}

impl Options {
    /// Defaults: the in-process backend on loopback ports picked by the system, `/metrics`
    /// served, the directory watched.
    pub fn new(config: impl Into<PathBuf>) -> Self {
        Self {
            config: config.into(),
            grpc: ([127, 0, 0, 1], 0).into(),
            metrics: Some(([127, 0, 0, 1], 0).into()),
            backend: Backend::local(),
            watch: true,
            noop: false,
            bounds: Bounds::default(),
        }
    }

    /// Serves a no-op service instead.
    pub fn noop(mut self, noop: bool) -> Self {
        self.noop = noop;
        self
    }
}

/// Why a server did not start or stopped.
#[derive(Debug)]
pub enum Error {
    /// The configuration did not load.
    Load(limits::LoadError),
    /// A socket, or the directory watcher.
    Io(std::io::Error),
    /// The gRPC server.
    Transport(tonic::transport::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Load(e) => write!(f, "configuration: {e}"),
            Self::Io(e) => write!(f, "{e}"),
            Self::Transport(e) => write!(f, "gRPC server: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// A running server; dropping it stops it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit_server::{Options, Server};
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("api.yaml"), "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 10}\n")?;
/// let server = Server::start(Options::new(dir.path())).await?;
/// assert_ne!(server.grpc_addr().port(), 0);
/// assert!(server.metrics_addr().is_some());
/// assert_eq!(server.limits().rule_count(), 1);
/// # Ok(()) }
/// ```
pub struct Server {
    grpc: SocketAddr,
    metrics: Option<SocketAddr>,
    limits: Arc<ArcSwap<Limits>>,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
    metrics_task: Option<JoinHandle<()>>,
    _watcher: Option<Box<dyn Send + Sync>>,
}

impl Server {
    /// Loads the configuration, binds the sockets and serves in the background.
    pub async fn start(options: Options) -> Result<Self, Error> {
        let limits = if options.noop {
            Limits::default()
        } else {
            Limits::load(&options.config, &options.backend, None).map_err(Error::Load)?
        };
        let limits = Arc::new(ArcSwap::from_pointee(limits));
        let watcher: Option<Box<dyn Send + Sync>> = if options.watch && !options.noop {
            let watcher = limits::watch(
                options.config.clone(),
                options.backend.clone(),
                limits.clone(),
            )
            .map_err(|e| Error::Io(std::io::Error::other(e)))?;
            Some(Box::new(watcher))
        } else {
            None
        };
        let metrics = Arc::new(Metrics::default());
        let (metrics_addr, metrics_task) = match options.metrics {
            Some(addr) => {
                let listener = TcpListener::bind(addr).await.map_err(Error::Io)?;
                let addr = listener.local_addr().map_err(Error::Io)?;
                (
                    Some(addr),
                    Some(tokio::spawn(metrics::serve(listener, metrics.clone()))),
                )
            }
            None => (None, None),
        };
        let listener = TcpListener::bind(options.grpc).await.map_err(Error::Io)?;
        let grpc = listener.local_addr().map_err(Error::Io)?;
        let (health, health_service) = tonic_health::server::health_reporter();
        let reflection = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
            .build_v1()
            .map_err(|e| Error::Io(std::io::Error::other(e)))?;
        let router = tonic::transport::Server::builder()
            .tcp_nodelay(true)
            .add_service(health_service)
            .add_service(reflection);
        let router = if options.noop {
            health.set_serving::<RateLimitServiceServer<Noop>>().await;
            router.add_service(RateLimitServiceServer::new(Noop))
        } else {
            health
                .set_serving::<RateLimitServiceServer<RateLimiter>>()
                .await;
            let service = RateLimiter::new(options.backend.clone(), limits.clone(), metrics)
                .bounds(options.bounds);
            router.add_service(RateLimitServiceServer::new(service))
        };
        let task = tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener)));
        tracing::info!(%grpc, metrics = ?metrics_addr, backend = options.backend.name(), noop = options.noop, "serving");
        Ok(Self {
            grpc,
            metrics: metrics_addr,
            limits,
            task,
            metrics_task,
            _watcher: watcher,
        })
    }

    /// The gRPC address.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc
    }

    /// The address of `/metrics`, if served.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// The limits in force.
    pub fn limits(&self) -> Arc<Limits> {
        self.limits.load_full()
    }

    /// Serves until the gRPC server stops.
    pub async fn wait(mut self) -> Result<(), Error> {
        match (&mut self.task).await {
            Ok(result) => result.map_err(Error::Transport),
            Err(join) => Err(Error::Io(std::io::Error::other(join))),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(task) = &self.metrics_task {
            task.abort();
        }
    }
}
