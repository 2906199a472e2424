//! The connection to Redis or Redis Cluster: one multiplexed connection replaced when it
//! stops being trustworthy (`link.rs`) or a `cluster-async` connection, with a timeout on
//! every call and TCP_NODELAY and keepalive on every socket.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, RedisError, Script, ServerErrorKind, Value};

use tokio::sync::{mpsc, oneshot};

use crate::algorithm::Params;
use crate::batch::{self, Pending};
use crate::error::Error;
use crate::limiter::Reply;
use crate::link::{self, Server};
use crate::verdict::Verdict;

/// How long a call may take before the failure policy decides instead: 50 ms by default.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit_redis::{Connection, DEFAULT_TIMEOUT};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// assert_eq!(connection.call_timeout(), DEFAULT_TIMEOUT);
/// # Ok(()) }
/// ```
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(50);

/// A connection to Redis or to a Redis Cluster, shared by every limiter built on it (clones
/// share the one multiplexed connection).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use ringlimit_redis::Connection;
/// let single = Connection::open("redis://127.0.0.1:6379/")?.timeout(Duration::from_millis(20));
/// let cluster = Connection::cluster(["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Connection {
    link: Link,
    timeout: Duration,
    health: Arc<Health>,
    /// The task gathering concurrent decisions into one call (`batch.rs`), started by the
    /// first decision (one server only).
    batcher: Arc<Mutex<Option<mpsc::UnboundedSender<Pending>>>>,
}

/// Whether Redis answered lately: after a call found it unavailable, calls skip it (the
/// failure policy decides at once, without waiting out a timeout each) until `down_until`;
/// then the next call tries again. The fleet's heartbeat probes it meanwhile.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Milliseconds since `epoch()` until which Redis is presumed down (0: up).
    pub(crate) down_until: AtomicU64,
}

impl Health {
    /// Whether Redis is presumed down now.
    pub(crate) fn presumed_down(&self) -> bool {
        // Relaxed: a hint for skipping calls; a stale reading costs one call or one skip.
        epoch_millis() < self.down_until.load(Ordering::Relaxed)
    }
}

/// What `down_until` becomes after a call with this outcome: a while from now after
/// unavailability (never on a Cluster), else 0.
pub(crate) fn down_until_after<T>(outcome: &Result<T, Failure>, cluster: bool) -> u64 {
    match outcome {
        Err(Failure::Unavailable) if !cluster => {
            epoch_millis() + RETRY_AFTER_FAILURE.as_millis() as u64
        }
        _ => 0,
    }
}

/// How long Redis is presumed down after a call found it unavailable.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Algorithm, Connection, RedisLimiter};
/// let down = Connection::open("redis://127.0.0.1:1/")?.timeout(Duration::from_millis(20));
/// let per_ip = RedisLimiter::builder(&down, "per_ip", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
/// per_ip.available("10.0.0.1").await?; // finds Redis down
/// assert!(down.presumed_down()); // calls skip it for RETRY_AFTER_FAILURE
/// # Ok(()) }
/// ```
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(250);

fn epoch_millis() -> u64 {
    static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[derive(Clone)]
enum Link {
    Single(Arc<Server>),
    Cluster(ClusterConnection),
}

/// Why a call got no answer the limiter can use.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// Redis is unreachable, slow, loading, or its cluster is down: the failure policy decides.
    Unavailable,
    /// An answer that no failure policy should hide.
    Error(Error),
}

impl Connection {
    /// A connection to one Redis server (`redis://host:port/db`), made lazily: the first call
    /// connects, and a server that is down when the limiter starts is a failure like any
    /// other (the failure policy decides) rather than an error here.
    ///
    /// One multiplexed connection, with TCP_NODELAY and keepalive set. It is dropped after a
    /// call on it timed out or failed without a server error reply (its later replies could
    /// go to the wrong calls), or when a `PING` after a second without replies got no answer
    /// within 500 ms; the next call connects again, attempts backing off from 10 ms to 200 ms
    /// while they fail.
    ///
    /// Errors: [`Error::Connect`] for a URL redis-rs cannot parse.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit_redis::{Connection, Error};
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?; // nothing connects yet
    /// assert!(matches!(Connection::open("not a url"), Err(Error::Connect { .. })));
    /// # Ok(()) }
    /// ```
    pub fn open(url: &str) -> Result<Self, Error> {
        let server = Server::open(url).map_err(connect)?;
        Ok(Self {
            link: Link::Single(server),
            timeout: DEFAULT_TIMEOUT,
            health: Arc::default(),
            batcher: Arc::default(),
        })
    }

    /// A connection to a Redis Cluster, from some of its nodes' URLs, with TCP_NODELAY and
    /// keepalive set on every node's connection.
    ///
    /// Errors: [`Error::Connect`] when the URLs are bad or no node answers.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit_redis::Connection;
    /// let cluster = Connection::cluster(["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"]).await?;
    /// assert!(cluster.is_cluster());
    /// # Ok(()) }
    /// ```
    pub async fn cluster<S: AsRef<str>>(nodes: impl IntoIterator<Item = S>) -> Result<Self, Error> {
        let nodes: Vec<String> = nodes.into_iter().map(|s| s.as_ref().to_owned()).collect();
        let client = ClusterClient::builder(nodes)
            .connection_timeout(Duration::from_secs(1))
            .response_timeout(Duration::from_secs(10))
            .retries(2)
            .tcp_settings(link::tcp_settings())
            .build()
            .map_err(connect)?;
        let connection = client.get_async_connection().await.map_err(connect)?;
        Ok(Self {
            link: Link::Cluster(connection),
            timeout: DEFAULT_TIMEOUT,
            health: Arc::default(),
            batcher: Arc::default(),
        })
    }

    /// The same connection with another timeout per call ([`DEFAULT_TIMEOUT`] unless set).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::Connection;
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?.timeout(Duration::from_millis(20));
    /// assert_eq!(connection.call_timeout(), Duration::from_millis(20));
    /// # Ok(()) }
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The timeout per call.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::Connection;
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?;
    /// assert_eq!(connection.call_timeout(), Duration::from_millis(50));
    /// # Ok(()) }
    /// ```
    pub fn call_timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether this is a Cluster connection (keys of one script must share a slot).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit_redis::Connection;
    /// assert!(!Connection::open("redis://127.0.0.1:6379/")?.is_cluster());
    /// # Ok(()) }
    /// ```
    pub fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// Whether a call found Redis unavailable within the last [`RETRY_AFTER_FAILURE`] (never
    /// on a Cluster: one shard's failure says nothing of the others, so each call there
    /// waits out its own timeout).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, Connection, RedisLimiter};
    /// let down = Connection::open("redis://127.0.0.1:1/")?.timeout(Duration::from_millis(20));
    /// assert!(!down.presumed_down()); // not tried yet
    /// let per_ip = RedisLimiter::builder(&down, "per_ip", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
    /// per_ip.available("10.0.0.1").await?;
    /// assert!(down.presumed_down());
    /// # Ok(()) }
    /// ```
    pub fn presumed_down(&self) -> bool {
        self.health.presumed_down()
    }

    /// Whether `other` is a clone of this connection (the same server or cluster link).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::Connection;
    /// let a = Connection::open("redis://127.0.0.1:6379/")?;
    /// let b = a.clone().timeout(Duration::from_millis(20));
    /// let c = Connection::open("redis://127.0.0.1:6379/")?;
    /// assert!(a.same_as(&b) && !a.same_as(&c));
    /// # Ok(()) }
    /// ```
    pub fn same_as(&self, other: &Connection) -> bool {
        Arc::ptr_eq(&self.health, &other.health)
    }

    /// Runs `script` with `keys` and `args` within the timeout, unless Redis is presumed
    /// down; the reply as integers.
    pub(crate) async fn run(
        &self,
        script: &Script,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
    ) -> Result<Vec<i64>, Failure> {
        if self.presumed_down() {
            return Err(Failure::Unavailable);
        }
        self.probe(script, keys, args).await
    }

    /// Runs `script` even when Redis is presumed down (the heartbeat's probe), and records
    /// whether it answered.
    pub(crate) async fn probe(
        &self,
        script: &Script,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
    ) -> Result<Vec<i64>, Failure> {
        let outcome = self.call(script, keys, args).await;
        // Relaxed: see `presumed_down`.
        self.health.down_until.store(
            down_until_after(&outcome, self.is_cluster()),
            Ordering::Relaxed,
        );
        outcome
    }

    /// Decides `n` permits of one dimension (the state under `base`, as `key::base` names
    /// it), taking them. On one server the request is gathered with the others in flight
    /// into one call (`batch.rs`); on a Cluster it is `script`'s call of its own.
    pub(crate) async fn decide_one(
        &self,
        script: &Script,
        base: Vec<u8>,
        params: Params,
        n: u64,
    ) -> Result<Verdict, Failure> {
        if self.presumed_down() {
            return Err(Failure::Unavailable);
        }
        let Link::Single(server) = &self.link else {
            let mut args = vec![b"1".to_vec(), b"1".to_vec()];
            params.push_args(&mut args, n);
            let reply = self.probe(script, &params.keys(&base), &args).await?;
            return Reply::parse(&reply, 1)
                .map(|reply| reply.verdict(0))
                .map_err(Failure::Error);
        };
        let deadline = Instant::now() + self.timeout;
        let (reply, answer) = oneshot::channel();
        let mut pending = Pending {
            base,
            params,
            n,
            deadline,
            reply,
        };
        // The gathering task lives on the runtime of the call that started it: when that
        // runtime is gone, the next call starts another on its own.
        for _ in 0..2 {
            let sender = {
                let mut batcher = self
                    .batcher
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                match &*batcher {
                    Some(sender) if !sender.is_closed() => sender.clone(),
                    _ => batcher
                        .insert(batch::start(Arc::clone(server), Arc::clone(&self.health)))
                        .clone(),
                }
            };
            match sender.send(pending) {
                Ok(()) => break,
                Err(returned) => pending = returned.0,
            }
        }
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(outcome)) => outcome,
            // Timed out, or the batch was dropped: the failure policy decides.
            _ => Err(Failure::Unavailable),
        }
    }

    async fn call(
        &self,
        script: &Script,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
    ) -> Result<Vec<i64>, Failure> {
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(key.as_slice());
        }
        for arg in args {
            invocation.arg(arg.as_slice());
        }
        let server = match &self.link {
            Link::Single(server) => server,
            Link::Cluster(cluster) => {
                let mut cluster = cluster.clone();
                let call = invocation.invoke_async::<Value>(&mut cluster);
                return match tokio::time::timeout(self.timeout, call).await {
                    Err(_) => Err(Failure::Unavailable),
                    Ok(Err(error)) => Err(classify(error)),
                    Ok(Ok(value)) => integers(value),
                };
            }
        };
        let mut leased = None;
        let call = async {
            let lease = server.get().await.map_err(|_| None)?;
            let mut connection = lease.connection.clone();
            leased = Some(lease);
            invocation
                .invoke_async::<Value>(&mut connection)
                .await
                .map_err(Some)
        };
        let outcome = tokio::time::timeout(self.timeout, call).await;
        let (trusted, outcome) = match outcome {
            Err(_) | Ok(Err(None)) => (false, Err(Failure::Unavailable)),
            Ok(Err(Some(error))) => (link::trusted_after(&error), Err(classify(error))),
            Ok(Ok(value)) => {
                let outcome = integers(value);
                (outcome.is_ok(), outcome)
            }
        };
        if let Some(lease) = &leased {
            server.report(lease, trusted);
        }
        outcome
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("cluster", &self.is_cluster())
            .field("timeout", &self.timeout)
            .finish()
    }
}

fn connect(error: RedisError) -> Error {
    Error::Connect {
        message: error.to_string(),
    }
}

/// Whether a server error code means the server cannot decide now, whatever the request:
/// busy with a script, loading, failing over, a replica, out of memory, unable to persist or
/// to reach its replicas. The failure policy decides then.
pub(crate) fn unavailable_code(code: &str) -> bool {
    matches!(
        code,
        "BUSY"
            | "LOADING"
            | "CLUSTERDOWN"
            | "MASTERDOWN"
            | "READONLY"
            | "TRYAGAIN"
            | "OOM"
            | "MISCONF"
            | "NOREPLICAS"
    )
}

/// Unreachable, slow, loading, failing over: unavailable. Anything else the server said is
/// an error of its own.
pub(crate) fn classify(error: RedisError) -> Failure {
    let unavailable = error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || matches!(
            error.kind(),
            ErrorKind::Io
                | ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                )
        )
        || error.code().is_some_and(unavailable_code);
    if unavailable {
        return Failure::Unavailable;
    }
    if error.code() == Some("WRONGTYPE") {
        return Failure::Error(Error::WrongType {
            message: error.to_string(),
        });
    }
    Failure::Error(Error::Server {
        message: error.to_string(),
    })
}

fn integers(value: Value) -> Result<Vec<i64>, Failure> {
    let unexpected = |value: &Value| {
        Failure::Error(Error::UnexpectedReply {
            reply: format!("{value:?}"),
        })
    };
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Int(i) => Ok(*i),
                other => Err(unexpected(other)),
            })
            .collect(),
        Value::Int(i) => Ok(vec![i]),
        other => Err(unexpected(&other)),
    }
}
