//! What the tests share: a server on a loopback port (port 0) with a real tonic client,
//! requests built from `(key, value)` lists, and a `redis-server` of the test's own
//! (SKIPPED in capitals without one, outside CI; the line is appended to the file named by
//! `RINGLIMIT_SKIP_LOG`, which CI checks).
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ringlimit_server::backend::Backend;
use ringlimit_server::proto::envoy::extensions::common::ratelimit::v3::{
    rate_limit_descriptor::Entry, RateLimitDescriptor,
};
use ringlimit_server::proto::rls::rate_limit_response::{Code, DescriptorStatus};
use ringlimit_server::proto::rls::rate_limit_service_client::RateLimitServiceClient;
use ringlimit_server::proto::rls::{RateLimitRequest, RateLimitResponse};
use ringlimit_server::{Options, Server};
use tonic::transport::Channel;

/// A server of `dir` on `backend`, and a client connected to it.
pub async fn start(dir: &Path, backend: Backend) -> (Server, RateLimitServiceClient<Channel>) {
    let mut options = Options::new(dir);
    options.backend = backend;
    let server = Server::start(options).await.expect("the server starts");
    let client = RateLimitServiceClient::connect(format!("http://{}", server.grpc_addr()))
        .await
        .expect("the client connects");
    (server, client)
}

/// A request of `descriptors`, each a list of `(key, value)` entries.
pub fn request(domain: &str, descriptors: &[&[(&str, &str)]], hits: u32) -> RateLimitRequest {
    RateLimitRequest {
        domain: domain.into(),
        descriptors: descriptors
            .iter()
            .map(|entries| RateLimitDescriptor {
                entries: entries
                    .iter()
                    .map(|(key, value)| Entry {
                        key: (*key).into(),
                        value: (*value).into(),
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        hits_addend: hits,
    }
}

/// Calls `ShouldRateLimit`, expecting an answer.
pub async fn call(
    client: &mut RateLimitServiceClient<Channel>,
    request: RateLimitRequest,
) -> RateLimitResponse {
    client
        .should_rate_limit(request)
        .await
        .unwrap_or_else(|status| panic!("ShouldRateLimit failed: {status:?}"))
        .into_inner()
}

/// Whether the overall code is OVER_LIMIT.
pub fn is_over(response: &RateLimitResponse) -> bool {
    response.overall_code == Code::OverLimit as i32
}

/// A status's code.
pub fn code(status: &DescriptorStatus) -> Code {
    Code::try_from(status.code).expect("a known code")
}

/// A fresh directory holding the files of `from`.
pub fn copy_dir(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for entry in std::fs::read_dir(from).expect("the test data") {
        let path = entry.expect("an entry").path();
        if path.is_file() {
            std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).expect("a copy");
        }
    }
    dir
}

/// The test data folder `name`.
pub fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A `redis-server` on a free loopback port, killed when dropped.
pub struct Redis {
    child: Child,
    port: u16,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Redis {
    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Starts one, or says SKIPPED (failing under `CI`) when there is no `redis-server`.
    pub fn start(test: &str) -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let spawned = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(error) => {
                let line = format!(
                    "SKIPPED: ringlimit-server {test}: redis-server not found ({error}; apt-get install redis-server)"
                );
                let ci =
                    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
                assert!(!ci, "{line}");
                eprintln!("{line}");
                if let Some(log) = std::env::var_os("RINGLIMIT_SKIP_LOG").filter(|l| !l.is_empty())
                {
                    use std::io::Write;
                    let mut file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(log)
                        .unwrap();
                    writeln!(file, "{line}").unwrap();
                }
                return None;
            }
        };
        let redis = Redis { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(redis)
    }
}
