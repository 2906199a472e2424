//! [`RedisConcurrency`]: at most so many in flight across the fleet, with leases that expire.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::connection::Connection;
use crate::error::Error;
use crate::health::RETRY_AFTER_FAILURE;
use crate::key::{self, KeyTooLong, DEFAULT_MAX_KEY_LEN};
use crate::limiter::DEFAULT_PREFIX;
use crate::reply::Failure;
use crate::script;
use crate::verdict::Source;

/// At most `max` permits in flight per key across every node. A permit is a *lease* with an
/// expiry (server time): a holder that crashes without releasing gives its permits back
/// when the lease expires; a holder working longer renews it.
///
/// On failure, only open or closed apply (`OnFailure::LocalShare` is closed here: a node
/// cannot know what the others hold).
///
/// ```no_run
/// # async fn run() -> Result<(), ringlimit_redis::Error> {
/// use std::time::Duration;
/// use ringlimit_redis::{Connection, LeaseDecision, RedisConcurrency};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let exports = RedisConcurrency::new(&connection, "exports", 4, Duration::from_secs(30));
/// if let LeaseDecision::Granted(lease) = exports.acquire("tenant:7", 1).await? {
///     // ... the work, renewing every few seconds if it may outlast 30 s ...
///     lease.release().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisConcurrency {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Connection,
    prefix: String,
    name: String,
    max: u64,
    lease: Duration,
    fail_open: bool,
    /// Shared by the fail-open twin, so lease ids stay unique.
    next_id: Arc<AtomicU64>,
    node: String,
}

/// The outcome of [`RedisConcurrency::acquire`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use ringlimit_redis::{LeaseDecision, RedisConcurrency, Source};
/// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
/// let uploads = RedisConcurrency::new(&down, "uploads", 2, Duration::from_secs(30));
/// match uploads.acquire("user:42", 1).await? {
///     LeaseDecision::Granted(lease) => drop(lease.release().await?),
///     LeaseDecision::Refused { source, .. } => assert_eq!(source, Source::FailClosed),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum LeaseDecision {
    /// The permits, held until released or expired.
    Granted(Lease),
    /// Too many in flight.
    Refused {
        /// Permits free now (fewer than asked).
        available: u64,
        /// When enough leases expire, if none is released before.
        retry_after: Duration,
        /// Who decided.
        source: Source,
    },
}

/// Permits held under a lease. Release it when done; dropping it without releasing leaves
/// the permits held until the lease expires (a release is spawned on the current tokio
/// runtime if there is one).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use ringlimit_redis::{LeaseDecision, RedisConcurrency};
/// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
/// let uploads = RedisConcurrency::new(&down, "uploads", 2, Duration::from_secs(30)).fail_open();
/// if let LeaseDecision::Granted(lease) = uploads.acquire("user:42", 1).await? {
///     // do the work, then give the permits back
///     lease.release().await?;
/// }
/// # Ok(()) }
/// ```
pub struct Lease {
    limiter: RedisConcurrency,
    key: Vec<u8>,
    id: String,
    n: u64,
    source: Source,
    released: bool,
}

impl RedisConcurrency {
    /// At most `max` in flight per key, each lease lasting `lease` unless renewed; fails
    /// closed.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{Connection, Error, RedisConcurrency};
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?;
    /// let uploads = RedisConcurrency::new(&connection, "uploads", 4, Duration::from_secs(30));
    /// assert!(matches!(uploads.acquire("user:42", 5).await, Err(Error::ExceedsLimit { requested: 5, limit: 4 })));
    /// # Ok(()) }
    /// ```
    pub fn new(connection: &Connection, name: &str, max: u64, lease: Duration) -> Self {
        use std::hash::{BuildHasher, RandomState};
        Self {
            inner: Arc::new(Inner {
                connection: connection.clone(),
                prefix: DEFAULT_PREFIX.to_owned(),
                name: name.to_owned(),
                max,
                lease,
                fail_open: false,
                next_id: Arc::new(AtomicU64::new(0)),
                node: format!("{:016x}", RandomState::new().hash_one(std::process::id())),
            }),
        }
    }

    /// The same limiter failing open (leases granted without Redis hold nothing).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{LeaseDecision, RedisConcurrency, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let uploads = RedisConcurrency::new(&down, "uploads", 4, Duration::from_secs(30)).fail_open();
    /// let LeaseDecision::Granted(lease) = uploads.acquire("user:42", 1).await? else { panic!() };
    /// assert_eq!(lease.source(), Source::FailOpen); // Redis down: granted anyway
    /// # Ok(()) }
    /// ```
    pub fn fail_open(self) -> Self {
        let inner = &*self.inner;
        Self {
            inner: Arc::new(Inner {
                connection: inner.connection.clone(),
                prefix: inner.prefix.clone(),
                name: inner.name.clone(),
                max: inner.max,
                lease: inner.lease,
                fail_open: true,
                next_id: Arc::clone(&inner.next_id),
                node: inner.node.clone(),
            }),
        }
    }

    /// Takes `n` permits for `key` if that many are free.
    ///
    /// Errors: [`Error::ExceedsLimit`] above `max`, [`Error::KeyTooLong`] above 4 KiB, the
    /// server's own errors.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{LeaseDecision, RedisConcurrency, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let uploads = RedisConcurrency::new(&down, "uploads", 4, Duration::from_secs(30));
    /// let decision = uploads.acquire("user:42", 1).await?;
    /// assert!(matches!(decision, LeaseDecision::Refused { source: Source::FailClosed, .. }));
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, key: impl AsRef<[u8]>, n: u64) -> Result<LeaseDecision, Error> {
        let inner = &*self.inner;
        let key = key.as_ref();
        if n > inner.max {
            return Err(Error::ExceedsLimit {
                requested: n,
                limit: inner.max,
            });
        }
        if key.len() > DEFAULT_MAX_KEY_LEN {
            return Err(Error::KeyTooLong(KeyTooLong {
                len: key.len(),
                max: DEFAULT_MAX_KEY_LEN,
            }));
        }
        // Relaxed: only uniqueness matters.
        let id = format!(
            "{}-{}",
            inner.node,
            inner.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let redis_key = key::base(&inner.prefix, &inner.name, key);
        let reply = self.run(&redis_key, "acquire", n, &id).await;
        match reply {
            Ok(r) if r[0] == 1 => Ok(LeaseDecision::Granted(Lease {
                limiter: self.clone(),
                key: redis_key,
                id: id.clone(),
                n,
                source: Source::Redis,
                released: false,
            })),
            Ok(r) => Ok(LeaseDecision::Refused {
                available: u64::try_from(r[1]).unwrap_or(0),
                retry_after: u64::try_from(r[2]).map_or(Duration::MAX, Duration::from_micros),
                source: Source::Redis,
            }),
            Err(Failure::Error(error)) => Err(error),
            Err(Failure::Unavailable) if inner.fail_open => Ok(LeaseDecision::Granted(Lease {
                limiter: self.clone(),
                key: redis_key,
                id: id.clone(),
                n,
                source: Source::FailOpen,
                released: true,
            })),
            Err(Failure::Unavailable) => Ok(LeaseDecision::Refused {
                available: 0,
                retry_after: RETRY_AFTER_FAILURE,
                source: Source::FailClosed,
            }),
        }
    }

    async fn run(&self, redis_key: &[u8], op: &str, n: u64, id: &str) -> Result<Vec<i64>, Failure> {
        let inner = &*self.inner;
        let lease = u64::try_from(inner.lease.as_micros()).unwrap_or(u64::MAX);
        let args = [
            op,
            &inner.max.to_string(),
            &n.to_string(),
            &lease.to_string(),
            id,
        ]
        .map(|a| a.as_bytes().to_vec());
        let reply = inner
            .connection
            .run(script::concurrency(), &[redis_key.to_vec()], &args)
            .await?;
        if reply.len() != 5 {
            return Err(Failure::Error(Error::UnexpectedReply {
                reply: format!("{reply:?}"),
            }));
        }
        Ok(reply)
    }
}

impl Lease {
    /// The permits held.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{LeaseDecision, RedisConcurrency};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let uploads = RedisConcurrency::new(&down, "uploads", 4, Duration::from_secs(30)).fail_open();
    /// let LeaseDecision::Granted(lease) = uploads.acquire("user:42", 3).await? else { panic!() };
    /// assert_eq!(lease.permits(), 3);
    /// # Ok(()) }
    /// ```
    pub fn permits(&self) -> u64 {
        self.n
    }

    /// Who granted the lease (a fail-open lease holds nothing on Redis).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{LeaseDecision, RedisConcurrency, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let uploads = RedisConcurrency::new(&down, "uploads", 4, Duration::from_secs(30)).fail_open();
    /// let LeaseDecision::Granted(lease) = uploads.acquire("user:42", 1).await? else { panic!() };
    /// assert!(!lease.source().is_redis()); // a fail-open lease holds nothing on Redis
    /// # Ok(()) }
    /// ```
    pub fn source(&self) -> Source {
        self.source
    }

    /// Extends the lease by the limiter's lease length from now; `false` when it had
    /// already expired (its permits may be someone else's now: stop the work).
    ///
    /// Errors: the server's own errors; `Ok(false)` when Redis is unavailable.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{Connection, LeaseDecision, RedisConcurrency};
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?;
    /// let jobs = RedisConcurrency::new(&connection, "jobs", 10, Duration::from_secs(30));
    /// if let LeaseDecision::Granted(lease) = jobs.acquire("queue:emails", 1).await? {
    ///     if !lease.renew().await? { return Ok(()); } // during a long job; expired: stop
    ///     lease.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn renew(&self) -> Result<bool, Error> {
        if self.source != Source::Redis {
            return Ok(true);
        }
        match self.limiter.run(&self.key, "renew", self.n, &self.id).await {
            Ok(reply) => Ok(reply[0] == 1),
            Err(Failure::Error(error)) => Err(error),
            Err(Failure::Unavailable) => Ok(false),
        }
    }

    /// Gives the permits back now. `Ok(false)` when the lease had expired already or Redis
    /// is unavailable (it expires by itself then).
    ///
    /// Errors: the server's own errors.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit_redis::{LeaseDecision, RedisConcurrency};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let uploads = RedisConcurrency::new(&down, "uploads", 4, Duration::from_secs(30)).fail_open();
    /// let LeaseDecision::Granted(lease) = uploads.acquire("user:42", 1).await? else { panic!() };
    /// assert!(!lease.release().await?); // a fail-open lease had nothing to give back
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<bool, Error> {
        self.released = true;
        if self.source != Source::Redis {
            return Ok(false);
        }
        match self
            .limiter
            .run(&self.key, "release", self.n, &self.id)
            .await
        {
            Ok(reply) => Ok(reply[0] == 1),
            Err(Failure::Error(error)) => Err(error),
            Err(Failure::Unavailable) => Ok(false),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.released || self.source != Source::Redis {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let limiter = self.limiter.clone();
            let key = std::mem::take(&mut self.key);
            let (n, id) = (self.n, std::mem::take(&mut self.id));
            runtime.spawn(async move {
                let _ = limiter.run(&key, "release", n, &id).await;
            });
        }
    }
}

impl fmt::Debug for RedisConcurrency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConcurrency")
            .field("name", &self.inner.name)
            .field("max", &self.inner.max)
            .field("lease", &self.inner.lease)
            .finish()
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("permits", &self.n)
            .field("source", &self.source)
            .finish()
    }
}
