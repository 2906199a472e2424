//! `ringlimit-server`: serves Envoy's rate limit service from a directory of
//! envoyproxy/ratelimit YAML files. `ringlimit-server --help` lists the flags.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ringlimit_server::backend::Backend;
use ringlimit_server::service::Bounds;
use ringlimit_server::{Options, Server};

/// Envoy's rate limit service (envoy.service.ratelimit.v3) on ringlimit's exact limiters.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Directory of configuration files (envoyproxy/ratelimit's YAML, one domain each),
    /// reloaded when it changes.
    #[arg(long, default_value = "config")]
    config: PathBuf,
    /// gRPC address.
    #[arg(long, default_value = "127.0.0.1:8081")]
    grpc: SocketAddr,
    /// Address of `/metrics` (Prometheus) and `/healthz`.
    #[arg(long, default_value = "127.0.0.1:6070")]
    metrics: SocketAddr,
    /// Count on Redis at this URL (`redis://host:6379/`) instead of in process.
    #[arg(long)]
    redis: Option<String>,
    /// Answer OK to everything without reading the configuration (to measure gRPC's own cost).
    #[arg(long)]
    noop: bool,
    /// Do not reload the configuration when it changes.
    #[arg(long)]
    no_watch: bool,
    /// Logs as JSON lines (else text).
    #[arg(long)]
    json_logs: bool,
    /// Most descriptors in one request.
    #[arg(long, default_value_t = Bounds::default().max_descriptors)]
    max_descriptors: usize,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    if args.json_logs {
        logs.json().init();
    } else {
        logs.init();
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.threads {
        runtime.worker_threads(threads);
    }
    let runtime = match runtime.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "no runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "stopped");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let backend = match &args.redis {
        Some(url) => Backend::Redis(ringlimit_redis::Connection::open(url)?),
        None => Backend::local(),
    };
    let mut options = Options::new(args.config).noop(args.noop);
    options.grpc = args.grpc;
    options.metrics = Some(args.metrics);
    options.backend = backend;
    options.watch = !args.no_watch;
    options.bounds.max_descriptors = args.max_descriptors;
    let server = Server::start(options).await?;
    tokio::select! {
        result = server.wait() => result?,
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted, stopping"),
    }
    Ok(())
}
