//! Whether Redis answered lately, shared by every call on one connection: after a call
//! found it unavailable, calls skip it for [`RETRY_AFTER_FAILURE`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use crate::reply::Failure;

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
