//! What a Redis limit decides with: an [`Algorithm`] and its quota, checked once into the
//! integers the scripts take.

use std::fmt;
use std::time::Duration;

use ringlimit::{BucketQuota, WindowQuota};

/// The largest span (a window, a bucket's refill) a script accepts, in µs: 2^50 µs, about
/// 35 years. With the server's time (about 2^51 µs since the epoch today) every sum the
/// scripts make stays below 2^53, exact in Lua's doubles.
///
/// ```
/// use std::time::Duration;
/// use ringlimit_redis::MAX_SPAN_MICROS;
/// assert_eq!(Duration::from_micros(MAX_SPAN_MICROS).as_secs() / (365 * 86_400), 35);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_SPAN_MICROS: u64 = 1 << 50;

/// The largest limit or burst a script accepts: 2^50.
///
/// ```
/// use ringlimit::{BucketQuota, Rate};
/// use ringlimit_redis::{Algorithm, QuotaError, MAX_LIMIT};
/// let huge = Algorithm::TokenBucket(BucketQuota::new(Rate::per_second(1_000_000)?, MAX_LIMIT + 1)?);
/// assert_eq!(huge.capacity(), Err(QuotaError::LimitTooLarge { limit: MAX_LIMIT + 1 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_LIMIT: u64 = 1 << 50;

/// An algorithm deciding on Redis, with its quota (the in-process quota types).
///
/// Times on the server are whole microseconds: a window or a bucket must be a whole number
/// of microseconds, and a token bucket's period (the time per permit) is rounded up to one,
/// so the rate enforced is never above the one asked for.
///
/// ```
/// use ringlimit::{BucketQuota, WindowQuota};
/// use ringlimit_redis::Algorithm;
/// let per_user = Algorithm::TokenBucket(BucketQuota::per_second(10)?.burst(20)?);
/// let per_api = Algorithm::SlidingWindow(WindowQuota::per_minute(6_000)?.buckets(60)?);
/// assert_eq!(per_user.capacity()?, 20);
/// assert_eq!(per_api.capacity()?, 6_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// At most `limit` per aligned window (aligned to the Unix epoch on the server).
    FixedWindow(WindowQuota),
    /// At most `limit` in any run of the quota's buckets (a hash of bucket counts per key).
    SlidingWindow(WindowQuota),
    /// At most `limit` in every interval of the window, exactly (a sorted set per key, one
    /// member per permit: about 80 bytes each on the server).
    SlidingLog(WindowQuota),
    /// A token bucket as GCRA (one integer per key).
    TokenBucket(BucketQuota),
}

/// A quota the scripts cannot hold exactly.
///
/// ```
/// use ringlimit::{BucketQuota, WindowQuota};
/// use ringlimit_redis::{Algorithm, QuotaError};
/// let cold = Algorithm::TokenBucket(BucketQuota::per_second(10)?.start_empty());
/// assert_eq!(cold.capacity(), Err(QuotaError::StartsEmpty));
/// let budget = Algorithm::FixedWindow(WindowQuota::budget(100)?);
/// assert_eq!(budget.capacity().unwrap_err().to_string(), QuotaError::Budget.to_string());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaError {
    /// The window, bucket or period is not a whole number of microseconds.
    NotWholeMicroseconds {
        /// The span.
        span: Duration,
    },
    /// A span beyond [`MAX_SPAN_MICROS`] (a budget that is never renewed is one).
    SpanTooLong {
        /// The span.
        span: Duration,
    },
    /// A limit or burst beyond [`MAX_LIMIT`].
    LimitTooLarge {
        /// The limit.
        limit: u64,
    },
    /// A bucket that starts empty: an expired key on the server reads as full.
    StartsEmpty,
    /// A leased window shorter than `LeasedWindow`'s `MIN_WINDOW`: a lease could not be used
    /// before its window ends.
    WindowTooShortForLeases {
        /// The window.
        window: Duration,
    },
    /// A budget that is never renewed (`WindowQuota::budget`): windows on the server are
    /// aligned to the Unix epoch, so it would renew at the next boundary.
    Budget,
    /// A window limit beyond what the in-process fallback of
    /// [`OnFailure::LocalShare`](crate::OnFailure::LocalShare) holds (its keyed windows'
    /// cells: 2^20 − 1 per window); the limit on Redis alone, with another failure policy,
    /// is fine.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, Error, Fleet, OnFailure, QuotaError, RedisLimiter};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(Duration::from_millis(20));
    /// let hourly = Algorithm::FixedWindow(WindowQuota::per_hour(10_000_000)?);
    /// assert!(RedisLimiter::builder(&down, "api", hourly).build().is_ok());
    /// let fleet = Fleet::join(&down, "api", Duration::from_secs(1), 4).await;
    /// let shared = RedisLimiter::builder(&down, "api", hourly).on_failure(OnFailure::LocalShare(fleet)).build();
    /// assert_eq!(
    ///     shared.unwrap_err(),
    ///     Error::Quota(QuotaError::LocalShareTooLarge { limit: 10_000_000, max: WindowConfig::MAX_LIMIT })
    /// );
    /// # Ok(()) }
    /// ```
    LocalShareTooLarge {
        /// The quota's limit.
        limit: u64,
        /// The most the local share's cells hold.
        max: u64,
    },
}

impl fmt::Display for QuotaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotWholeMicroseconds { span } => {
                write!(
                    f,
                    "{span:?} is not a whole number of microseconds (Redis time is in µs)"
                )
            }
            Self::SpanTooLong { span } => {
                write!(
                    f,
                    "{span:?} is longer than 2^50 µs, the most Lua's doubles keep exact"
                )
            }
            Self::LimitTooLarge { limit } => write!(f, "limit {limit} is above 2^50"),
            Self::WindowTooShortForLeases { window } => {
                write!(f, "a leased window of {window:?} is too short to use a lease in (at least 10 ms)")
            }
            Self::LocalShareTooLarge { limit, max } => write!(
                f,
                "a limit of {limit} does not fit the local share's in-process windows (at most {max})"
            ),
            Self::Budget => f.write_str("a budget that is never renewed cannot live on Redis (its windows are aligned to the epoch)"),
            Self::StartsEmpty => f.write_str(
                "a bucket that starts empty cannot live on Redis (an expired key reads as full)",
            ),
        }
    }
}

impl std::error::Error for QuotaError {}

/// The script's code for an algorithm (as in `lua/*.lua`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Code {
    FixedWindow = 1,
    SlidingWindow = 2,
    SlidingLog = 3,
    TokenBucket = 4,
}

/// An algorithm as the scripts take it: its code and three integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) code: Code,
    /// Fixed and sliding window, log: limit, window µs, bucket µs (the window for the
    /// others). Token bucket: period µs, burst, 0.
    pub(crate) args: [u64; 3],
    /// The most permits one request can ever get.
    pub(crate) capacity: u64,
    /// The key suffixes this algorithm stores under (the log keeps a sequence beside).
    pub(crate) suffixes: &'static [&'static str],
    /// No limit at all: decided without asking Redis.
    pub(crate) unlimited: bool,
}

fn micros(span: Duration) -> Result<u64, QuotaError> {
    if !span.subsec_nanos().is_multiple_of(1_000) {
        return Err(QuotaError::NotWholeMicroseconds { span });
    }
    match u64::try_from(span.as_micros()) {
        Ok(us) if us <= MAX_SPAN_MICROS => Ok(us),
        _ => Err(QuotaError::SpanTooLong { span }),
    }
}

fn limit(limit: u64) -> Result<u64, QuotaError> {
    if limit > MAX_LIMIT {
        return Err(QuotaError::LimitTooLarge { limit });
    }
    Ok(limit)
}

impl Algorithm {
    /// The most permits one request can get (the limit, or the burst): asking for more is
    /// [`Error::ExceedsLimit`](crate::Error::ExceedsLimit).
    ///
    /// Errors: the [`QuotaError`] that makes the quota unfit for Redis.
    ///
    /// ```
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, QuotaError};
    /// assert_eq!(Algorithm::FixedWindow(WindowQuota::per_second(5)?).capacity()?, 5);
    /// let budget = Algorithm::FixedWindow(WindowQuota::budget(5)?);
    /// assert_eq!(budget.capacity(), Err(QuotaError::Budget));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> Result<u64, QuotaError> {
        Ok(self.params()?.capacity)
    }

    pub(crate) fn params(&self) -> Result<Params, QuotaError> {
        let window = |code, quota: &WindowQuota, suffixes| -> Result<Params, QuotaError> {
            if quota.is_unlimited() {
                return Ok(Params::unlimited(code, suffixes));
            }
            if WindowQuota::budget(1)
                .is_ok_and(|budget| budget.window_length() == quota.window_length())
            {
                return Err(QuotaError::Budget);
            }
            let window = micros(quota.window_length())?;
            let bucket = if code == Code::SlidingWindow {
                let buckets = quota.bucket_count();
                if !window.is_multiple_of(buckets) {
                    let span = quota.window_length() / u32::try_from(buckets).unwrap_or(u32::MAX);
                    return Err(QuotaError::NotWholeMicroseconds { span });
                }
                window / buckets
            } else {
                window
            };
            let limit = limit(quota.limit())?;
            Ok(Params {
                code,
                args: [limit, window, bucket],
                capacity: limit,
                suffixes,
                unlimited: false,
            })
        };
        match self {
            Self::FixedWindow(quota) => window(Code::FixedWindow, quota, &[""]),
            Self::SlidingWindow(quota) => window(Code::SlidingWindow, quota, &[""]),
            Self::SlidingLog(quota) => window(Code::SlidingLog, quota, &["", ":seq"]),
            Self::TokenBucket(quota) => {
                if quota.is_unlimited() {
                    return Ok(Params::unlimited(Code::TokenBucket, &[""]));
                }
                if quota.starts_empty() {
                    return Err(QuotaError::StartsEmpty);
                }
                let period = quota.rate().period_nanos().div_ceil(1_000).max(1);
                let burst = limit(quota.burst_size())?;
                let span = period.saturating_mul(burst);
                if span > MAX_SPAN_MICROS {
                    return Err(QuotaError::SpanTooLong {
                        span: Duration::from_micros(span),
                    });
                }
                Ok(Params {
                    code: Code::TokenBucket,
                    args: [period, burst, 0],
                    capacity: burst,
                    suffixes: &[""],
                    unlimited: false,
                })
            }
        }
    }
}

impl Params {
    /// The Redis keys of a state whose base name (`key::base`) is `base`.
    pub(crate) fn keys(&self, base: &[u8]) -> Vec<Vec<u8>> {
        self.suffixes
            .iter()
            .map(|suffix| [base, suffix.as_bytes()].concat())
            .collect()
    }

    /// Appends the five script arguments of one dimension asking `n`: code, n, p1, p2, p3.
    pub(crate) fn push_args(&self, args: &mut Vec<Vec<u8>>, n: u64) {
        args.push((self.code as u8).to_string().into_bytes());
        args.push(n.to_string().into_bytes());
        args.extend(self.args.map(|p| p.to_string().into_bytes()));
    }

    fn unlimited(code: Code, suffixes: &'static [&'static str]) -> Self {
        Self {
            code,
            args: [0; 3],
            capacity: u64::MAX,
            suffixes,
            unlimited: true,
        }
    }
}
