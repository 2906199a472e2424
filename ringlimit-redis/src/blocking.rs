//! [`Blocking`]: the async API for code without an async runtime.

use std::future::Future;
use std::time::Duration;

use crate::connection::Connection;
use crate::error::Error;
use crate::fleet::Fleet;

/// A small tokio runtime of the limiters' own (one worker thread drives the connections
/// and heartbeats) on which blocking code runs any call of this crate to completion.
///
/// ```no_run
/// # fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::BucketQuota;
/// use ringlimit_redis::{Algorithm, Blocking, RedisLimiter};
/// let blocking = Blocking::new()?;
/// let connection = blocking.open("redis://127.0.0.1:6379/")?;
/// let per_user = RedisLimiter::builder(&connection, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(5)?)).build()?;
/// if blocking.run(per_user.try_acquire("user:42"))? {
///     // serve
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Blocking {
    runtime: tokio::runtime::Runtime,
}

impl Blocking {
    /// A runtime with one worker thread.
    ///
    /// Errors: [`Error::Connect`] when the thread cannot be started.
    ///
    /// ```
    /// use ringlimit_redis::Blocking;
    /// let blocking = Blocking::new()?;
    /// assert_eq!(blocking.run(async { Ok(1 + 1) })?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ringlimit-redis")
            .enable_all()
            .build()
            .map_err(|error| Error::Connect {
                message: format!("cannot start the runtime: {error}"),
            })?;
        Ok(Self { runtime })
    }

    /// [`Connection::open`] on this runtime.
    ///
    /// Errors: as [`Connection::open`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit_redis::Blocking;
    /// let blocking = Blocking::new()?;
    /// // Lazy: nothing connects until the first call.
    /// let connection = blocking.open("redis://127.0.0.1:1/")?.timeout(Duration::from_millis(20));
    /// assert!(!connection.is_cluster());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(&self, url: &str) -> Result<Connection, Error> {
        let _inside = self.runtime.enter();
        Connection::open(url)
    }

    /// [`Connection::cluster`] on this runtime.
    ///
    /// Errors: as [`Connection::cluster`], and [`Error::BlockingInsideRuntime`].
    ///
    /// ```no_run
    /// # fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit_redis::Blocking;
    /// let blocking = Blocking::new()?;
    /// let cluster = blocking.cluster(["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"])?;
    /// assert!(cluster.is_cluster());
    /// # Ok(()) }
    /// ```
    pub fn cluster<S: AsRef<str>>(
        &self,
        nodes: impl IntoIterator<Item = S>,
    ) -> Result<Connection, Error> {
        self.run(Connection::cluster(nodes))
    }

    /// [`Fleet::join`] on this runtime (its heartbeat runs on the runtime's thread).
    ///
    /// Errors: [`Error::BlockingInsideRuntime`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit_redis::Blocking;
    /// let blocking = Blocking::new()?;
    /// let down = blocking.open("redis://127.0.0.1:1/")?.timeout(Duration::from_millis(20));
    /// let fleet = blocking.join(&down, "api", Duration::from_secs(1), 4)?;
    /// assert_eq!(fleet.live_nodes(), 4); // no beat answered: the assumed size
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(
        &self,
        connection: &Connection,
        group: &str,
        every: Duration,
        assumed_nodes: u64,
    ) -> Result<Fleet, Error> {
        self.run(async { Ok(Fleet::join(connection, group, every, assumed_nodes).await) })
    }

    /// Runs `call` (any async call of this crate) to completion on this thread.
    ///
    /// Errors: what `call` returns, and [`Error::BlockingInsideRuntime`] when called from
    /// inside an async runtime (blocking there would stall its thread; await the call).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, Blocking, RedisLimiter};
    /// let blocking = Blocking::new()?;
    /// let down = blocking.open("redis://127.0.0.1:1/")?.timeout(Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(5)?)).build()?;
    /// assert!(!blocking.run(per_user.try_acquire("user:42"))?); // Redis down: fails closed
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run<T>(&self, call: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::BlockingInsideRuntime);
        }
        self.runtime.block_on(call)
    }
}
