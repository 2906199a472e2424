//! The connection to Redis or Redis Cluster: one multiplexed connection replaced when it
//! stops being trustworthy (`link.rs`), or a Cluster's connection replaced when a master's
//! goes silent (`cluster.rs`), with a timeout on every call and TCP_NODELAY and keepalive
//! on every socket. Replies are read by `reply.rs`; whether Redis answered lately is
//! `health.rs`'s.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::cluster::ClusterClient;
use redis::{RedisError, RedisResult, Script, Value};

use tokio::sync::{mpsc, oneshot};

use crate::algorithm::Params;
use crate::batch::{self, Pending};
use crate::cluster::Cluster;
use crate::error::Error;
use crate::health::{down_until_after, Health};
use crate::link::{self, Server};
use crate::reply::{classify, integers, Failure, Reply};
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

#[derive(Clone)]
enum Link {
    Single(Arc<Server>),
    Cluster(Arc<Cluster>),
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
    /// keepalive set on every node's connection. Every second a probe `PING`s the masters;
    /// when one gets no answer within 500 ms on this connection but answers on a new one (a
    /// node's connection went silent), the new connection replaces it.
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
        let cluster = Cluster::open(client).await.map_err(connect)?;
        Ok(Self {
            link: Link::Cluster(cluster),
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

    /// Whether a call found Redis unavailable within the last [`RETRY_AFTER_FAILURE`](crate::RETRY_AFTER_FAILURE) (never
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
        let server = match &self.link {
            Link::Single(server) => server,
            Link::Cluster(cluster) => {
                let mut invocation = script.prepare_invoke();
                for key in keys {
                    invocation.key(key.as_slice());
                }
                for arg in args {
                    invocation.arg(arg.as_slice());
                }
                let mut cluster = cluster.connection();
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
            tagged(&mut connection, script, keys, args)
                .await
                .map_err(Some)
        };
        let outcome = tokio::time::timeout(self.timeout, call).await;
        let (trusted, outcome) = match outcome {
            Err(_) | Ok(Err(None)) => (false, Err(Failure::Unavailable)),
            Ok(Err(Some(error))) => (link::trusted_after(&error), Err(classify(error))),
            // Another call's replies: this call's never came (the failure policy decides).
            Ok(Ok(None)) => (false, Err(Failure::Unavailable)),
            Ok(Ok(Some(value))) => match value.extract_error() {
                // The script's own error reply: the stream is in step.
                Err(error) => (true, Err(classify(error))),
                Ok(value) => {
                    let outcome = integers(value);
                    (outcome.is_ok(), outcome)
                }
            },
        };
        if let Some(lease) = &leased {
            server.report(lease, trusted);
        }
        outcome
    }
}

/// `script` with `keys` and `args` by `EVALSHA`, then an `ECHO` of a fresh tag, in one
/// pipeline: the script's reply (an error reply as a value), or `None` when the tag does not
/// come back (the replies are another call's: one was lost on the connection). `NOSCRIPT`
/// loads the script and runs it again, as redis-rs's `ScriptInvocation` does.
async fn tagged(
    connection: &mut MultiplexedConnection,
    script: &Script,
    keys: &[Vec<u8>],
    args: &[Vec<u8>],
) -> RedisResult<Option<Value>> {
    for first in [true, false] {
        let tag = link::next_tag();
        let mut pipeline = redis::pipe();
        pipeline
            .ignore_errors()
            .cmd("EVALSHA")
            .arg(script.get_hash())
            .arg(keys.len());
        for key in keys {
            pipeline.arg(key.as_slice());
        }
        for arg in args {
            pipeline.arg(arg.as_slice());
        }
        pipeline.cmd("ECHO").arg(tag.as_str());
        let mut replies: Vec<Value> = pipeline.query_async(connection).await?;
        let ours = replies.len() == 2
            && matches!(&replies[1], Value::BulkString(got) if *got == tag.as_bytes());
        if !ours {
            return Ok(None);
        }
        let reply = replies.swap_remove(0);
        match &reply {
            Value::ServerError(error) if first && error.code() == "NOSCRIPT" => {
                script.load_async(connection).await?;
            }
            _ => return Ok(Some(reply)),
        }
    }
    Ok(None)
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
