//! What can go wrong, as types. Redis being unreachable is not among them: the limiter's
//! failure policy ([`OnFailure`](crate::OnFailure)) decides then. These are the errors no
//! failure policy should hide: bad input, and a server that answers something a limiter
//! cannot mean.

use std::fmt;

use crate::algorithm::QuotaError;
use crate::key::KeyTooLong;

/// An error of a Redis limiter.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Algorithm, Connection, Error, RedisLimiter};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let per_ip = RedisLimiter::builder(&connection, "per_ip", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
/// let error = per_ip.try_acquire_n("10.0.0.1", 11).await.unwrap_err();
/// assert_eq!(error, Error::ExceedsLimit { requested: 11, limit: 10 });
/// assert_eq!(error.to_string(), "11 permits asked at once, above the limit of 10");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The quota cannot be kept exactly on Redis.
    Quota(QuotaError),
    /// More permits than the limit (or burst) in one request: never admitted.
    ExceedsLimit {
        /// Asked for.
        requested: u64,
        /// The most one request can get.
        limit: u64,
    },
    /// The key is longer than the limiter accepts.
    KeyTooLong(KeyTooLong),
    /// A key of the limiter holds a value of another type (left by another program, or a
    /// different algorithm under the same name): nothing was changed.
    WrongType {
        /// The server's message.
        message: String,
    },
    /// Two dimensions of a policy would decide on one Redis key (one limiter twice with the
    /// same key): the script could not keep them all or nothing.
    SharedKey {
        /// The second dimension.
        dimension: String,
    },
    /// The server answered something the scripts never send (a changed or foreign script).
    UnexpectedReply {
        /// What came back.
        reply: String,
    },
    /// Any other error the server reported, with its message; nothing was changed.
    Server {
        /// The server's error code and message.
        message: String,
    },
    /// The URL or cluster nodes could not be used.
    Connect {
        /// Why.
        message: String,
    },
    /// A blocking call made from inside an async runtime, where it would block the
    /// runtime's thread: use the async API there.
    BlockingInsideRuntime,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Quota(error) => write!(f, "quota: {error}"),
            Self::ExceedsLimit { requested, limit } => {
                write!(
                    f,
                    "{requested} permits asked at once, above the limit of {limit}"
                )
            }
            Self::KeyTooLong(error) => error.fmt(f),
            Self::WrongType { message } => write!(f, "a limiter key holds another type: {message}"),
            Self::SharedKey { dimension } => {
                write!(
                    f,
                    "dimension `{dimension}` decides on the same Redis key as an earlier one"
                )
            }
            Self::UnexpectedReply { reply } => write!(f, "unexpected reply from Redis: {reply}"),
            Self::Server { message } => write!(f, "Redis: {message}"),
            Self::Connect { message } => write!(f, "cannot connect: {message}"),
            Self::BlockingInsideRuntime => f.write_str(
                "a blocking Redis limiter was called inside an async runtime; use the async API",
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<QuotaError> for Error {
    fn from(error: QuotaError) -> Self {
        Self::Quota(error)
    }
}

impl From<KeyTooLong> for Error {
    fn from(error: KeyTooLong) -> Self {
        Self::KeyTooLong(error)
    }
}
