//! [`RedisLimiter`]: one algorithm and quota, a state per key on Redis.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ringlimit::outcome::Decision;

use crate::algorithm::{Algorithm, Params};
use crate::connection::Connection;
use crate::error::Error;
use crate::failure::{Fallback, OnFailure};
use crate::key::{self, KeyTooLong, DEFAULT_MAX_KEY_LEN};
use crate::reply::{Failure, Reply};
use crate::script;
use crate::verdict::{Source, Verdict};

/// The prefix of every key ringlimit-redis stores, unless set with
/// [`RedisLimiterBuilder::prefix`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Algorithm, Connection, RedisLimiter, DEFAULT_PREFIX};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let per_ip = RedisLimiter::builder(&connection, "per_ip", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
/// assert_eq!(DEFAULT_PREFIX, "ringlimit");
/// assert_eq!(per_ip.redis_keys("10.0.0.1")?, [b"{ringlimit:per_ip:10.0.0.1}".to_vec()]);
/// # Ok(()) }
/// ```
pub const DEFAULT_PREFIX: &str = "ringlimit";

/// A limit shared by every node, decided by one Lua script on Redis per call: the keyed
/// interface of the in-process limiters (`try_acquire`, `try_acquire_n`, `available`), async.
/// Clones share everything.
///
/// State lives under `<prefix>:<name>:<key>` (in `{…}` unless the key has a hash tag of
/// its own), with a TTL that ends when the state is as good as none. Time is the server's.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::BucketQuota;
/// use ringlimit::outcome::Decision;
/// use ringlimit_redis::{Algorithm, Connection, OnFailure, RedisLimiter};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let per_user = RedisLimiter::builder(&connection, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?))
///     .on_failure(OnFailure::Open)
///     .build()?;
/// if per_user.try_acquire("user:42").await? {
///     // serve the request
/// }
/// match per_user.try_acquire_n("user:42", 3).await? {
///     Decision::Admitted { remaining } => println!("{remaining} left"),
///     Decision::Refused { retry_after, .. } => println!("retry in {retry_after:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisLimiter {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) connection: Connection,
    pub(crate) prefix: String,
    pub(crate) name: String,
    pub(crate) algorithm: Algorithm,
    pub(crate) params: Params,
    pub(crate) fallback: Fallback,
    pub(crate) max_key_len: usize,
}

/// Builds a [`RedisLimiter`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::BucketQuota;
/// use ringlimit_redis::{Algorithm, OnFailure, RedisLimiter};
/// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
/// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?))
///     .prefix("shop")
///     .on_failure(OnFailure::Open)
///     .max_key_len(256)
///     .build()?;
/// assert!(per_user.try_acquire("user:42").await?); // Redis down: fails open
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RedisLimiterBuilder {
    connection: Connection,
    name: String,
    algorithm: Algorithm,
    prefix: String,
    on_failure: OnFailure,
    max_key_len: usize,
}

impl RedisLimiter {
    /// A limiter named `name` (part of its keys: two limiters with one name share state).
    ///
    /// ```no_run
    /// # fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, Connection, RedisLimiter};
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?;
    /// let per_ip = RedisLimiter::builder(&connection, "per_ip", Algorithm::SlidingLog(WindowQuota::per_minute(100)?)).build()?;
    /// # Ok(()) }
    /// ```
    pub fn builder(
        connection: &Connection,
        name: &str,
        algorithm: Algorithm,
    ) -> RedisLimiterBuilder {
        RedisLimiterBuilder {
            connection: connection.clone(),
            name: name.to_owned(),
            algorithm,
            prefix: DEFAULT_PREFIX.to_owned(),
            on_failure: OnFailure::default(),
            max_key_len: DEFAULT_MAX_KEY_LEN,
        }
    }

    /// Takes one permit for `key` if one is available.
    ///
    /// Errors: as [`check`](Self::check).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
    /// if per_user.try_acquire("user:42").await? {
    ///     unreachable!("Redis is down and the limiter fails closed");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self, key: impl AsRef<[u8]>) -> Result<bool, Error> {
        Ok(self.check(key, 1).await?.decision.is_admitted())
    }

    /// Takes `n` permits for `key`, all or none.
    ///
    /// Errors: as [`check`](Self::check).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit::outcome::Decision;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
    /// match per_user.try_acquire_n("user:42", 3).await? {
    ///     Decision::Admitted { remaining } => println!("{remaining} left"),
    ///     Decision::Refused { retry_after, .. } => println!("retry in {retry_after:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire_n(&self, key: impl AsRef<[u8]>, n: u64) -> Result<Decision, Error> {
        Ok(self.check(key, n).await?.decision)
    }

    /// Takes `n` permits for `key`, all or none, and says who decided and when the limit is
    /// whole again.
    ///
    /// Errors: [`Error::ExceedsLimit`] for more than the limit at once, [`Error::KeyTooLong`],
    /// and the server's own errors ([`Error::WrongType`], [`Error::Server`]); never for Redis
    /// being unavailable, which the failure policy decides.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, OnFailure, RedisLimiter, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).on_failure(OnFailure::Open).build()?;
    /// let verdict = per_user.check("user:42", 1).await?;
    /// assert!(verdict.decision.is_admitted());
    /// assert_eq!(verdict.source, Source::FailOpen); // the failure policy decided, not Redis
    /// # Ok(()) }
    /// ```
    pub async fn check(&self, key: impl AsRef<[u8]>, n: u64) -> Result<Verdict, Error> {
        self.decide(key.as_ref(), n, true).await
    }

    /// The permits `key` has now, taking none (zero when Redis is unavailable, unless the
    /// limiter fails open).
    ///
    /// Errors: as [`check`](Self::check).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
    /// assert_eq!(per_user.available("user:42").await?, 0); // Redis down: fails closed
    /// # Ok(()) }
    /// ```
    pub async fn available(&self, key: impl AsRef<[u8]>) -> Result<u64, Error> {
        let verdict = self.decide(key.as_ref(), 0, false).await?;
        Ok(match verdict.decision {
            Decision::Admitted { remaining } => remaining,
            Decision::Refused { available, .. } => available,
        })
    }

    /// The decisions made by the failure policy since the limiter was built.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
    /// per_user.try_acquire("user:42").await?;
    /// assert_eq!(per_user.fallbacks(), 1);
    /// # Ok(()) }
    /// ```
    pub fn fallbacks(&self) -> u64 {
        self.inner.fallback.count()
    }

    /// The limiter's name.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
    /// assert_eq!(per_user.name(), "per_user");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The algorithm and quota.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
    /// assert_eq!(per_user.algorithm(), Algorithm::TokenBucket(BucketQuota::per_second(10)?));
    /// # Ok(()) }
    /// ```
    pub fn algorithm(&self) -> Algorithm {
        self.inner.algorithm
    }

    /// The Redis keys holding `key`'s state (the log has two).
    ///
    /// Errors: [`Error::KeyTooLong`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_ip = RedisLimiter::builder(&down, "per_ip", Algorithm::SlidingLog(WindowQuota::per_minute(100)?)).build()?;
    /// let keys = per_ip.redis_keys("10.0.0.1")?;
    /// assert_eq!(keys, [b"{ringlimit:per_ip:10.0.0.1}".to_vec(), b"{ringlimit:per_ip:10.0.0.1}:seq".to_vec()]);
    /// // A key with a hash tag of its own keeps it (and its slot on a Cluster).
    /// assert_eq!(per_ip.redis_keys("{user:42}")?[0], b"ringlimit:per_ip:{user:42}");
    /// # Ok(()) }
    /// ```
    pub fn redis_keys(&self, key: impl AsRef<[u8]>) -> Result<Vec<Vec<u8>>, Error> {
        self.inner.check_request(key.as_ref(), 0)?;
        Ok(self.inner.keys(key.as_ref()))
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    async fn decide(&self, key: &[u8], n: u64, commit: bool) -> Result<Verdict, Error> {
        let inner = &*self.inner;
        inner.check_request(key, n)?;
        if inner.params.unlimited {
            return Ok(Verdict::unlimited());
        }
        let script = script::decide(inner.params.code);
        // Permits the local share admitted during an outage, which Redis did not count.
        let unseen = if commit && n > 0 {
            inner.fallback.unseen(key, n, inner.params.capacity)
        } else {
            0
        };
        let verdict = if commit {
            let base = key::base(&inner.prefix, &inner.name, key);
            inner
                .connection
                .decide_one(script, base, inner.params, n + unseen)
                .await
        } else {
            let mut args = vec![b"0".to_vec(), b"1".to_vec()];
            inner.push_args(&mut args, n);
            match inner.connection.run(script, &inner.keys(key), &args).await {
                Ok(reply) => Reply::parse(&reply, 1)
                    .map(|reply| reply.verdict(0))
                    .map_err(Failure::Error),
                Err(failure) => Err(failure),
            }
        };
        match verdict {
            Ok(verdict) => {
                if unseen > 0 && verdict.decision.is_admitted() {
                    inner.fallback.synced(key);
                }
                Ok(verdict)
            }
            Err(Failure::Error(error)) => Err(error),
            Err(Failure::Unavailable) => Ok(inner.fallback.decide(key, n, commit)),
        }
    }
}

impl Inner {
    pub(crate) fn check_request(&self, key: &[u8], n: u64) -> Result<(), Error> {
        if n > self.params.capacity {
            return Err(Error::ExceedsLimit {
                requested: n,
                limit: self.params.capacity,
            });
        }
        if key.len() > self.max_key_len {
            return Err(Error::KeyTooLong(KeyTooLong {
                len: key.len(),
                max: self.max_key_len,
            }));
        }
        Ok(())
    }

    /// The Redis keys of `key`'s state, for a key `check_request` accepted.
    pub(crate) fn keys(&self, key: &[u8]) -> Vec<Vec<u8>> {
        self.params.keys(&key::base(&self.prefix, &self.name, key))
    }

    /// Appends this dimension's five script arguments: code, n, p1, p2, p3.
    pub(crate) fn push_args(&self, args: &mut Vec<Vec<u8>>, n: u64) {
        self.params.push_args(args, n);
    }
}

impl Verdict {
    fn unlimited() -> Self {
        Verdict {
            decision: Decision::Admitted {
                remaining: u64::MAX,
            },
            reset_after: Duration::ZERO,
            source: Source::Unlimited,
            server_time: None,
        }
    }
}

impl RedisLimiterBuilder {
    /// The prefix of the limiter's keys ([`DEFAULT_PREFIX`] unless set).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).prefix("shop").build()?;
    /// assert_eq!(per_user.redis_keys("42")?, [b"{shop:per_user:42}".to_vec()]);
    /// # Ok(()) }
    /// ```
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_owned();
        self
    }

    /// What decides while Redis is unavailable ([`OnFailure::Closed`] unless set).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, OnFailure, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).on_failure(OnFailure::Open).build()?;
    /// assert!(per_user.try_acquire("user:42").await?); // Redis down: admitted
    /// # Ok(()) }
    /// ```
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        self.on_failure = on_failure;
        self
    }

    /// The longest key accepted ([`DEFAULT_MAX_KEY_LEN`] unless set).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::BucketQuota;
    /// use ringlimit_redis::{Algorithm, Error, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).max_key_len(64).build()?;
    /// assert!(matches!(per_user.try_acquire([b'x'; 65]).await, Err(Error::KeyTooLong(_))));
    /// # Ok(()) }
    /// ```
    pub fn max_key_len(mut self, max_key_len: usize) -> Self {
        self.max_key_len = max_key_len;
        self
    }

    /// The limiter.
    ///
    /// Errors: [`Error::Quota`] when the quota cannot be kept exactly on Redis, or by the
    /// local share of [`OnFailure::LocalShare`](crate::OnFailure::LocalShare).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, Error, QuotaError, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let once = RedisLimiter::builder(&down, "once", Algorithm::FixedWindow(WindowQuota::budget(100)?)).build();
    /// assert_eq!(once.unwrap_err(), Error::Quota(QuotaError::Budget)); // windows on Redis renew
    /// # Ok(()) }
    /// ```
    pub fn build(self) -> Result<RedisLimiter, Error> {
        let params = self.algorithm.params()?;
        let fallback = Fallback::new(&self.name, self.on_failure, self.algorithm)?;
        Ok(RedisLimiter {
            inner: Arc::new(Inner {
                connection: self.connection,
                prefix: self.prefix,
                name: self.name,
                algorithm: self.algorithm,
                params,
                fallback,
                max_key_len: self.max_key_len,
            }),
        })
    }
}

impl fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("name", &self.inner.name)
            .field("algorithm", &self.inner.algorithm)
            .field("fallback", &self.inner.fallback)
            .finish()
    }
}
