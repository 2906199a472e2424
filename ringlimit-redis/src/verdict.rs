//! A decision with where it came from.

use std::time::Duration;

use ringlimit::outcome::Decision;

/// Who decided.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::BucketQuota;
/// use ringlimit_redis::{Algorithm, RedisLimiter, Source};
/// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
/// let per_user = RedisLimiter::builder(&down, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
/// let verdict = per_user.check("user:42", 1).await?;
/// assert_eq!(verdict.source, Source::FailClosed); // Redis down: the failure policy refused
/// assert!(!verdict.source.is_redis());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The script on Redis: exact, shared by every node.
    Redis,
    /// Redis was unavailable and the limiter fails open: admitted without a limit.
    FailOpen,
    /// Redis was unavailable and the limiter fails closed: refused.
    FailClosed,
    /// Redis was unavailable: this node's share of the quota, in process.
    LocalShare,
    /// The quota is unlimited: nobody was asked.
    Unlimited,
    /// A permit Redis leased to this node earlier (`LeasedWindow`): counted on Redis,
    /// decided in process.
    Leased,
}

impl Source {
    /// The name used in metrics (`source` label).
    ///
    /// ```
    /// use ringlimit_redis::Source;
    /// assert_eq!(Source::FailOpen.as_str(), "fail_open");
    /// assert_eq!(Source::Redis.as_str(), "redis");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Redis => "redis",
            Self::FailOpen => "fail_open",
            Self::FailClosed => "fail_closed",
            Self::LocalShare => "local_share",
            Self::Unlimited => "unlimited",
            Self::Leased => "leased",
        }
    }

    /// Whether Redis decided (the counts are the fleet's, not a fallback's).
    ///
    /// ```
    /// use ringlimit_redis::Source;
    /// assert!(Source::Redis.is_redis() && Source::Leased.is_redis());
    /// assert!(!Source::FailOpen.is_redis() && !Source::LocalShare.is_redis());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_redis(&self) -> bool {
        matches!(self, Self::Redis | Self::Unlimited | Self::Leased)
    }
}

/// A decision, when the limit is whole again, who decided, and the server's time.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::outcome::Decision;
/// use ringlimit_redis::{Source, Verdict};
/// let verdict = Verdict {
///     decision: Decision::Admitted { remaining: 4 },
///     reset_after: Duration::from_millis(600),
///     source: Source::Redis,
///     server_time: Some(Duration::from_secs(1_800_000_000)),
/// };
/// assert!(verdict.decision.is_admitted() && verdict.source.is_redis());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The decision, as the in-process limiters make it.
    pub decision: Decision,
    /// How long until nothing is counted any more (the bucket full, the window empty); zero
    /// when not known (a fallback).
    pub reset_after: Duration,
    /// Who decided.
    pub source: Source,
    /// The server's time of the decision (since the Unix epoch), when Redis decided.
    pub server_time: Option<Duration>,
}
