//! Clocks: where limiters read the time, in nanoseconds as `u64`.
//!
//! | clock | source | cost measured on the dev machine |
//! |---|---|---|
//! | [`TscClock`] (default) | the TSC through `quanta`, calibrated to ns | ~10 ns |
//! | [`RecentClock`] | `quanta`'s upkeep thread, one atomic load | ~2 ns, coarse |
//! | [`StdClock`] | `std::time::Instant` | ~25 ns |
//! | [`ManualClock`] | a shared atomic you move by hand | one load |
//!
//! Clock readings are not trusted to be monotonic: the TSC can differ between cores. Each
//! limiter keeps its own notion of time from moving backwards (a reading older than the
//! limiter's newest epoch joins that epoch), so a clock only has to be roughly right.

use std::fmt;
use std::sync::{Mutex, OnceLock, Weak};
use std::time::Duration;

use crate::sync::{Arc, AtomicU64, Ordering};

/// A source of time for limiters: nanoseconds since some fixed origin of the clock's own.
///
/// # Example
/// ```
/// use ringlimit::clock::{Clock, ManualClock};
/// let clock = ManualClock::new();
/// clock.advance(std::time::Duration::from_millis(3));
/// assert_eq!(clock.now_nanos(), 3_000_000);
/// ```
pub trait Clock: Send + Sync {
    /// Nanoseconds since the clock's origin. Should rarely go backwards; limiters cope if it does.
    ///
    /// ```
    /// use ringlimit::clock::{Clock, ManualClock, StdClock};
    /// let manual = ManualClock::starting_at(10);
    /// assert_eq!(manual.now_nanos(), 10);
    /// // Any clock will do behind a reference or an `Arc`.
    /// let shared: std::sync::Arc<dyn Clock> = std::sync::Arc::new(StdClock::new());
    /// let a = shared.now_nanos();
    /// assert!(shared.now_nanos() >= a);
    /// ```
    fn now_nanos(&self) -> u64;

    /// Blocks the calling thread while `duration` of this clock's time passes: what the
    /// blocking waits (`acquire`, `try_acquire_for`, `Reservation::wait`) sleep on.
    ///
    /// The default is [`std::thread::sleep`]; [`ManualClock`] moves itself forward instead,
    /// so waits in tests are instant and exact.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, ManualClock};
    /// let clock = ManualClock::new();
    /// // A manual clock's sleep returns at once, having moved the time forward.
    /// clock.sleep(Duration::from_millis(20));
    /// assert_eq!(clock.now_nanos(), 20_000_000);
    /// ```
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_nanos(&self) -> u64 {
        (**self).now_nanos()
    }
    fn sleep(&self, duration: Duration) {
        (**self).sleep(duration);
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_nanos(&self) -> u64 {
        (**self).now_nanos()
    }
    fn sleep(&self, duration: Duration) {
        (**self).sleep(duration);
    }
}

/// The default clock: the CPU's time-stamp counter read through [`quanta`], scaled to ns.
///
/// Its origin is the moment it was created.
///
/// ```
/// use ringlimit::clock::{Clock, TscClock};
/// let clock = TscClock::new();
/// let a = clock.now_nanos();
/// assert!(clock.now_nanos() >= a);
/// ```
#[derive(Clone)]
pub struct TscClock {
    clock: quanta::Clock,
    origin: u64,
}

impl TscClock {
    /// Creates a clock whose origin is now.
    ///
    /// ```
    /// use ringlimit::clock::{Clock, TscClock};
    /// let clock = TscClock::new();
    /// let start = clock.now_nanos();
    /// std::thread::sleep(std::time::Duration::from_millis(1));
    /// assert!(clock.now_nanos() > start);
    /// ```
    pub fn new() -> Self {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        Self { clock, origin }
    }
}

impl Default for TscClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TscClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        // `delta_as_nanos` returns 0 for a raw reading below the origin (cross-core skew).
        self.clock.delta_as_nanos(self.origin, self.clock.raw())
    }
}

impl fmt::Debug for TscClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TscClock").finish_non_exhaustive()
    }
}

/// A coarse clock: one atomic load of the time `quanta`'s upkeep thread last wrote.
///
/// The upkeep thread is started by the first `RecentClock` and stopped when the last clone
/// of the last `RecentClock` is dropped, so there is nothing to manage. Readings lag the
/// real time by up to the upkeep interval (1 ms by default), so windows much shorter than
/// the interval see bursts arrive in one epoch.
///
/// ```
/// use ringlimit::clock::{Clock, RecentClock};
/// let clock = RecentClock::new().expect("upkeep thread");
/// let _ns = clock.now_nanos();
/// ```
#[derive(Clone)]
pub struct RecentClock {
    clock: quanta::Clock,
    origin: quanta::Instant,
    _upkeep: std::sync::Arc<quanta::Handle>,
}

/// The upkeep thread is process-global in quanta: one handle shared by every `RecentClock`.
fn upkeep_handle(interval: Duration) -> Result<std::sync::Arc<quanta::Handle>, quanta::Error> {
    static SHARED: OnceLock<Mutex<Weak<quanta::Handle>>> = OnceLock::new();
    let slot = SHARED.get_or_init(|| Mutex::new(Weak::new()));
    let mut weak = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(handle) = weak.upgrade() {
        return Ok(handle);
    }
    // The previous handle's thread may still be exiting; quanta refuses a second one until
    // it has, so retry briefly.
    let mut attempts = 0;
    let handle = loop {
        match quanta::Upkeep::new(interval).start() {
            Ok(handle) => break std::sync::Arc::new(handle),
            Err(quanta::Error::UpkeepRunning) if attempts < 1000 => {
                attempts += 1;
                std::thread::sleep(Duration::from_micros(100));
            }
            Err(e) => return Err(e),
        }
    };
    *weak = std::sync::Arc::downgrade(&handle);
    Ok(handle)
}

impl RecentClock {
    /// Starts (or shares) the upkeep thread with a 1 ms interval.
    ///
    /// ```
    /// use ringlimit::clock::{Clock, RecentClock};
    /// use ringlimit::{RateLimiter, SlidingWindow, WindowQuota};
    /// let clock = RecentClock::new()?;
    /// let a = clock.now_nanos();
    /// assert!(clock.now_nanos() >= a);
    /// let limiter = SlidingWindow::builder(WindowQuota::per_second(100)?).clock(clock).build();
    /// assert!(limiter.try_acquire());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Result<Self, quanta::Error> {
        Self::with_interval(Duration::from_millis(1))
    }

    /// Starts (or shares) the upkeep thread. When one is already running, its interval is kept.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, RecentClock};
    /// let clock = RecentClock::with_interval(Duration::from_micros(500))?;
    /// std::thread::sleep(Duration::from_millis(5));
    /// assert!(clock.now_nanos() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_interval(interval: Duration) -> Result<Self, quanta::Error> {
        let upkeep = upkeep_handle(interval)?;
        let clock = quanta::Clock::new();
        let origin = clock.recent();
        Ok(Self {
            clock,
            origin,
            _upkeep: upkeep,
        })
    }
}

impl Clock for RecentClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        let elapsed = self.clock.recent().saturating_duration_since(self.origin);
        u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
    }
}

impl fmt::Debug for RecentClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecentClock").finish_non_exhaustive()
    }
}

/// `std::time::Instant`, for platforms or tests where the TSC is unwelcome.
///
/// ```
/// use ringlimit::clock::{Clock, StdClock};
/// assert!(StdClock::new().now_nanos() < 1_000_000_000);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StdClock {
    origin: std::time::Instant,
}

impl StdClock {
    /// Creates a clock whose origin is now.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, StdClock};
    /// use ringlimit::{RateLimiter, TokenBucket, BucketQuota};
    /// let clock = StdClock::new();
    /// std::thread::sleep(Duration::from_millis(1));
    /// assert!(clock.now_nanos() >= 1_000_000);
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(10)?).clock(clock).build();
    /// assert!(bucket.try_acquire());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        Self {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for StdClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told to: for tests, simulations and loom models.
///
/// Clones share one time. [`Clock::sleep`] on a manual clock does not block: it moves the
/// time forward to at least the reading plus the duration (never backwards past another
/// thread's move), so a blocking wait on a limiter with a manual clock returns at once
/// with the exact wait it would have slept. The time lives in a facade atomic, so loom explores every order
/// of a clock move against the limiters' steps. It may be set backwards, to test that
/// limiters never let time run backwards themselves.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::clock::{Clock, ManualClock};
/// let clock = ManualClock::new();
/// let handle = clock.clone();
/// handle.advance(Duration::from_secs(1));
/// assert_eq!(clock.now_nanos(), 1_000_000_000);
/// clock.set_nanos(5);
/// assert_eq!(handle.now_nanos(), 5);
/// ```
#[derive(Clone)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading 0.
    ///
    /// ```
    /// use ringlimit::clock::{Clock, ManualClock};
    /// let clock = ManualClock::new();
    /// assert_eq!(clock.now_nanos(), 0);
    /// ```
    pub fn new() -> Self {
        Self::starting_at(0)
    }

    /// A clock reading `nanos`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, ManualClock};
    /// let clock = ManualClock::starting_at(1_000);
    /// clock.advance(Duration::from_nanos(500));
    /// assert_eq!(clock.now_nanos(), 1_500);
    /// ```
    pub fn starting_at(nanos: u64) -> Self {
        Self {
            nanos: Arc::new(AtomicU64::new(nanos)),
        }
    }

    /// Moves the time forward by `by`, saturating at `u64::MAX` ns.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, ManualClock};
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_millis(5));
    /// assert_eq!(clock.now_nanos(), 5_000_000);
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.advance_nanos(by);
    }

    /// Moves the time forward by `by` nanoseconds, saturating at `u64::MAX`.
    ///
    /// ```
    /// use ringlimit::clock::{Clock, ManualClock};
    /// let clock = ManualClock::new();
    /// clock.advance_nanos(7);
    /// assert_eq!(clock.now_nanos(), 7);
    /// ```
    pub fn advance_nanos(&self, by: u64) {
        // SeqCst: readings take part in the single total order with a shared bucket
        // configuration's publication, so that a reading taken after seeing a new epoch is no
        // older than one taken before another thread saw the old epoch (guide::bucket, "Cells
        // and a shared configuration").
        let _ = self
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Sets the time, forwards or backwards.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, ManualClock};
    /// let clock = ManualClock::new();
    /// clock.set(Duration::from_secs(2));
    /// assert_eq!(clock.now_nanos(), 2_000_000_000);
    /// ```
    pub fn set(&self, to: Duration) {
        self.set_nanos(u64::try_from(to.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Sets the time in nanoseconds, forwards or backwards.
    ///
    /// ```
    /// use ringlimit::clock::{Clock, ManualClock};
    /// let clock = ManualClock::new();
    /// clock.set_nanos(42);
    /// assert_eq!(clock.now_nanos(), 42);
    /// ```
    pub fn set_nanos(&self, to: u64) {
        // SeqCst: as in `advance_nanos`.
        self.nanos.store(to, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        // SeqCst: as in `advance_nanos` (a plain load on x86_64).
        self.nanos.load(Ordering::SeqCst)
    }

    fn sleep(&self, duration: Duration) {
        let by = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let wake = self.now_nanos().saturating_add(by);
        // SeqCst: as in `advance_nanos`. `fetch_max`: sleepers racing each other end at the
        // latest wake-up time, as real time would.
        self.nanos.fetch_max(wake, Ordering::SeqCst);
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("nanos", &self.now_nanos())
            .finish()
    }
}

/// tokio's clock (`tokio::time::Instant`): pauses and auto-advances with tokio's test
/// clock, so async waits on a limiter can be tested under `tokio::time::pause`.
///
/// Blocking waits on this clock sleep in real time; use it with the async waits
/// ([`Wait::until_ready`](crate::Wait::until_ready)).
///
/// ```
/// use ringlimit::clock::{Clock, TokioClock};
/// let clock = TokioClock::new();
/// assert!(clock.now_nanos() < 1_000_000_000);
/// ```
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

#[cfg(feature = "tokio")]
impl TokioClock {
    /// Creates a clock whose origin is tokio's now.
    ///
    /// ```
    /// use ringlimit::clock::{Clock, TokioClock};
    /// let clock = TokioClock::new();
    /// let a = clock.now_nanos();
    /// assert!(clock.now_nanos() >= a);
    /// ```
    pub fn new() -> Self {
        Self {
            origin: tokio::time::Instant::now(),
        }
    }
}

#[cfg(feature = "tokio")]
impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "tokio")]
impl Clock for TokioClock {
    fn now_nanos(&self) -> u64 {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.origin);
        u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
    }
}
