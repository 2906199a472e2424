//! The connection to Redis or Redis Cluster: a redis-rs `ConnectionManager` (one
//! multiplexed connection, reconnecting by itself) or a `cluster-async` connection, with a
//! timeout on every call.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{ErrorKind, RedisError, Script, ServerErrorKind, Value};

use crate::error::Error;

/// How long a call may take before the failure policy decides instead: 50 ms by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(50);

/// A connection to Redis or to a Redis Cluster, shared by every limiter built on it (clones
/// share the one multiplexed connection).
///
/// ```no_run
/// # async fn run() -> Result<(), ringlimit_redis::Error> {
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
}

/// Whether Redis answered lately: after a call found it unavailable, calls skip it (the
/// failure policy decides at once, without waiting out a timeout each) until `down_until`;
/// then the next call tries again. The fleet's heartbeat probes it meanwhile.
///
/// On a Cluster, per slot: one master down (its slots unserved until a replica takes over)
/// says nothing of the others, whose keys Redis keeps deciding. A single presumed-down flag
/// for the whole connection made every key of the cluster fall back for 250 ms after each
/// failure of the dead master's slots (found by `tests/cluster.rs`: with one of three
/// masters killed, a key on a healthy master was decided by the failure policy in about a
/// third of its calls).
#[derive(Debug)]
struct Health {
    /// Per slot (one entry for a single server, [`SLOTS`] for a Cluster): milliseconds
    /// since `epoch_millis()`'s epoch until which it is presumed down (0: up).
    down_until: Box<[AtomicU64]>,
}

/// The slots of a Redis Cluster.
const SLOTS: usize = 16_384;

impl Health {
    fn new(entries: usize) -> Arc<Self> {
        Arc::new(Self {
            down_until: (0..entries).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// The entry of a call's keys (all in one slot: the limiters' keys share a hash tag).
    fn entry(&self, keys: &[Vec<u8>]) -> &AtomicU64 {
        let index = match keys.first() {
            Some(key) if self.down_until.len() == SLOTS => usize::from(slot(key)),
            _ => 0,
        };
        &self.down_until[index]
    }
}

/// The Cluster slot of `key`: CRC16 (XMODEM) of its hash tag (the bytes between the first
/// `{` and the first `}` after it, when not empty) or of the whole key, modulo 16384.
fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    let mut crc: u16 = 0;
    for &byte in tagged.unwrap_or(key) {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % SLOTS as u16
}

/// How long Redis is presumed down after a call found it unavailable.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(250);

fn epoch_millis() -> u64 {
    static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[derive(Clone)]
enum Link {
    /// One server: its client (to build the manager again for another timeout) and the
    /// manager.
    Single {
        client: redis::Client,
        manager: ConnectionManager,
    },
    Cluster(ClusterConnection),
}

/// A lazy `ConnectionManager` whose own limits (to connect, and to wait for an answer) are
/// the call timeout.
fn manager(client: &redis::Client, timeout: Duration) -> Result<ConnectionManager, Error> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(100));
    ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(connect)
}

/// Why a call got no answer the limiter can use.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Redis is unreachable, slow, loading, or its cluster is down: the failure policy decides.
    Unavailable(String),
    /// An answer that no failure policy should hide.
    Error(Error),
}

impl Connection {
    /// A connection to one Redis server (`redis://host:port/db`), made lazily: the first call
    /// connects, and a server that is down when the limiter starts is a failure like any
    /// other (the failure policy decides) rather than an error here.
    ///
    /// Errors: [`Error::Connect`] for a URL redis-rs cannot parse.
    pub fn open(url: &str) -> Result<Self, Error> {
        let client = redis::Client::open(url).map_err(connect)?;
        let manager = manager(&client, DEFAULT_TIMEOUT)?;
        Ok(Self {
            link: Link::Single { client, manager },
            timeout: DEFAULT_TIMEOUT,
            health: Health::new(1),
        })
    }

    /// A connection to a Redis Cluster, from some of its nodes' URLs.
    ///
    /// Errors: [`Error::Connect`] when the URLs are bad or no node answers.
    pub async fn cluster<S: AsRef<str>>(nodes: impl IntoIterator<Item = S>) -> Result<Self, Error> {
        let nodes: Vec<String> = nodes.into_iter().map(|s| s.as_ref().to_owned()).collect();
        let client = ClusterClient::builder(nodes)
            .connection_timeout(Duration::from_millis(500))
            .response_timeout(Duration::from_millis(500))
            .retries(2)
            .build()
            .map_err(connect)?;
        let connection = client.get_async_connection().await.map_err(connect)?;
        Ok(Self {
            link: Link::Cluster(connection),
            timeout: DEFAULT_TIMEOUT,
            health: Health::new(SLOTS),
        })
    }

    /// The same connection with another timeout per call ([`DEFAULT_TIMEOUT`] unless set).
    ///
    /// For one server, set it before the first call and before cloning: the connection
    /// manager is made again with this timeout to connect and to wait for answers (clones
    /// made before keep the former manager, and its connection). On a Cluster, redis-rs's
    /// own limits stay those of [`cluster`](Self::cluster): 500 ms to connect and to answer,
    /// with 2 retries.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        // redis-rs's own limits must be the call timeout too: the manager's response
        // timeout fixed at `DEFAULT_TIMEOUT` cut every call at 50 ms whatever the timeout
        // set here (found by `tests/faults.rs`: a server answering in 200 ms, a timeout of
        // 2 s, and the failure policy decided after 50 ms); its connection timeout would
        // have kept a server farther than 50 ms from ever being reached.
        if let Link::Single {
            client,
            manager: current,
        } = &mut self.link
        {
            if timeout != self.timeout {
                // Never fails: the configuration has no push channel to disagree with.
                if let Ok(rebuilt) = manager(client, timeout) {
                    *current = rebuilt;
                }
            }
        }
        self.timeout = timeout;
        self
    }

    /// The timeout per call.
    pub fn call_timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether this is a Cluster connection (keys of one script must share a slot).
    pub fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// Whether a call found Redis unavailable within the last [`RETRY_AFTER_FAILURE`] (on
    /// a Cluster: for some slot; calls skip only the slots presumed down).
    pub fn presumed_down(&self) -> bool {
        let now = epoch_millis();
        // Relaxed: a hint for skipping calls; a stale reading costs one call or one skip.
        self.health
            .down_until
            .iter()
            .any(|until| now < until.load(Ordering::Relaxed))
    }

    /// Runs `script` with `keys` and `args` within the timeout, unless Redis is presumed
    /// down; the reply as integers.
    pub(crate) async fn run(
        &self,
        script: &Script,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
    ) -> Result<Vec<i64>, Failure> {
        // Relaxed: see `presumed_down`.
        if epoch_millis() < self.health.entry(keys).load(Ordering::Relaxed) {
            return Err(Failure::Unavailable(
                "presumed down after a recent failure".into(),
            ));
        }
        self.probe(script, keys, args).await
    }

    /// Runs `script` even when Redis is presumed down (the heartbeat's probe), and records
    /// whether it answered (for the slot of `keys`, on a Cluster).
    pub(crate) async fn probe(
        &self,
        script: &Script,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
    ) -> Result<Vec<i64>, Failure> {
        let outcome = self.call(script, keys, args).await;
        let down_until = match &outcome {
            Err(Failure::Unavailable(_)) => epoch_millis() + RETRY_AFTER_FAILURE.as_millis() as u64,
            _ => 0,
        };
        // Relaxed: see `presumed_down`.
        self.health.entry(keys).store(down_until, Ordering::Relaxed);
        outcome
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
        let call = async {
            match &self.link {
                Link::Single { manager, .. } => {
                    invocation.invoke_async::<Value>(&mut manager.clone()).await
                }
                Link::Cluster(cluster) => {
                    invocation.invoke_async::<Value>(&mut cluster.clone()).await
                }
            }
        };
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => Err(Failure::Unavailable(format!(
                "no answer within {:?}",
                self.timeout
            ))),
            Ok(Err(error)) => Err(classify(error)),
            Ok(Ok(value)) => integers(value),
        }
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

/// Unreachable, slow, loading, failing over: unavailable. Anything else the server said is
/// an error of its own.
fn classify(error: RedisError) -> Failure {
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
        || matches!(
            error.code(),
            Some("BUSY" | "LOADING" | "CLUSTERDOWN" | "MASTERDOWN")
        );
    if unavailable {
        return Failure::Unavailable(error.to_string());
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

#[cfg(test)]
mod tests {
    use redis::cluster_routing::Slot;

    use super::*;

    #[test]
    fn slot_is_the_clusters() {
        let mut keys: Vec<Vec<u8>> = [
            &b""[..],
            b"a",
            b"{user:1}:orders",
            b"{}x",
            b"x{}y{z}",
            b"{a}{b}",
            b"a{b",
            b"a}b{c}",
            b"{ringlimit:fixed:user42}",
            b"ringlimit:log:{hot}:seq",
            b"new\nline\xff",
        ]
        .iter()
        .map(|k| k.to_vec())
        .collect();
        keys.extend((0..2000).map(|i| format!("key:{i}").into_bytes()));
        for key in keys {
            assert_eq!(
                Slot::new(slot(&key)),
                Some(Slot::for_key(&key)),
                "{:?}",
                String::from_utf8_lossy(&key)
            );
        }
    }

    #[test]
    fn health_is_per_slot_on_a_cluster_and_whole_on_a_server() {
        let a = vec![b"{a}".to_vec()];
        let b = vec![b"{b}".to_vec()];
        assert_ne!(slot(b"a"), slot(b"b"));
        let cluster = Health::new(SLOTS);
        cluster.entry(&a).store(7, Ordering::Relaxed);
        assert_eq!(cluster.entry(&b).load(Ordering::Relaxed), 0);
        assert_eq!(
            cluster.entry(&[b"x{a}y".to_vec()]).load(Ordering::Relaxed),
            7
        );
        let single = Health::new(1);
        single.entry(&a).store(7, Ordering::Relaxed);
        assert_eq!(single.entry(&b).load(Ordering::Relaxed), 7);
    }
}
