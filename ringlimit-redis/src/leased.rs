//! [`LeasedWindow`]: permits leased from Redis in batches into a lock-free local pool.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use ringlimit::outcome::Decision;
use ringlimit::WindowQuota;

use crate::algorithm::{Algorithm, Code, QuotaError};
use crate::connection::Connection;
use crate::error::Error;
use crate::failure::{Fallback, OnFailure};
use crate::fleet::Fleet;
use crate::key;
use crate::limiter::DEFAULT_PREFIX;
use crate::reply::Failure;
use crate::script;
use crate::verdict::{Source, Verdict};

/// A fixed-window limit for the whole fleet (`limit` per aligned window on the server)
/// whose permits a node *leases* in batches into a local pool: most decisions are one
/// atomic operation in process, and only one call in a batch goes to Redis. The sharded
/// window's idea ([`ringlimit::guide::sharded`]) across machines.
///
/// **Guarantee.** Never over-admits: every permit admitted locally was counted by the lease
/// script in the server's current window `w`, and is admitted before the pool's deadline:
/// the window's end as the server reported it, measured from *before* the request was sent
/// (so never later than the server's end of `w`), less 0.1% and a millisecond for the two
/// clocks' rates (NTP slews a clock by at most 0.05%). A clock *stepped* forward on the
/// server (or a failover to one that is ahead) ends its windows early: each such step can
/// let up to `nodes × batch` through. Within that margin and a round trip of a window's end
/// no lease could be used in time: there each request is decided on the window itself, one
/// call each, exactly. Under-admits by at most the permits leased and not used when a
/// window ends, at most `nodes × batch` per window; the batch is at most `max_batch`, and
/// shrinks as the window runs out: the script leases at most a `1 / (2 × live nodes)` share
/// of what is left (at least one permit). A lease whose reply comes after the call's
/// timeout (counted on Redis, the pool never filled) is given back to its window when the
/// reply comes within 5 s; only a reply later than that, or a give-back that fails, is
/// lost beyond that bound.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Connection, LeasedWindow};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let search = LeasedWindow::builder(&connection, "search", WindowQuota::per_second(10_000)?)
///     .max_batch(100)
///     .build()?;
/// if search.try_acquire().await? {
///     // serve
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeasedWindow {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Connection,
    key: Vec<u8>,
    limit: u64,
    window_us: u64,
    max_batch: u64,
    /// No limit at all: every call admitted, nobody asked.
    unlimited: bool,
    fleet: Option<Fleet>,
    /// The pool, a [`Pool`] word.
    pool: AtomicU64,
    /// One lease request at a time.
    refill: tokio::sync::Mutex<()>,
    fallback: Fallback,
    leases: AtomicU64,
}

/// How long a lease call waits for its reply after its caller stopped waiting, to give the
/// lease back if it comes.
const LATE_LEASE_WAIT: Duration = Duration::from_secs(5);

/// Gives back to its window what a lease reply that came too late took: the batch, or the
/// one request the script admitted directly. Only while that window is current (a window
/// that ended has nothing to give back to); a failure here leaves the permits lost, an
/// under-admission.
async fn give_back(
    connection: &Connection,
    key: Vec<u8>,
    limit: u64,
    window_us: u64,
    need: u64,
    late: &[i64],
) {
    let [batch, _left, ends_in, now, too_late, direct] = late[..] else {
        return;
    };
    let (Ok(batch), Ok(ends_in), Ok(now)) = (
        u64::try_from(batch),
        u64::try_from(ends_in),
        u64::try_from(now),
    ) else {
        return;
    };
    let taken = if too_late == 1 {
        if direct == 1 {
            need
        } else {
            0
        }
    } else {
        batch
    };
    if taken == 0 || window_us == 0 {
        return;
    }
    // The window the script charged: it ends `ends_in` after `now`.
    let window = (now + ends_in) / window_us - 1;
    let args = [
        1,
        Code::FixedWindow as u64,
        taken,
        limit,
        window_us,
        0,
        window,
        now,
    ]
    .map(|a| a.to_string().into_bytes());
    let _ = connection
        .probe(script::refund(), std::slice::from_ref(&key), &args)
        .await;
}

/// The local pool in one word: `[deadline_ms: 39 | exhausted: 1 | permits: 24]`.
/// `deadline_ms`: milliseconds since the process's epoch until which the permits may be
/// used; `exhausted`: the window had nothing left (refuse until the deadline without asking
/// Redis); `permits`: left in the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pool {
    deadline_ms: u64,
    exhausted: bool,
    permits: u64,
}

const PERMIT_BITS: u32 = 24;
const PERMIT_MASK: u64 = (1 << PERMIT_BITS) - 1;
const EXHAUSTED: u64 = 1 << PERMIT_BITS;
const DEADLINE_SHIFT: u32 = PERMIT_BITS + 1;

/// The largest batch: what the pool's permit field holds.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Connection, Error, LeasedWindow, MAX_BATCH};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// // The batch is at most MAX_BATCH, and at most the limit.
/// let api = LeasedWindow::builder(&connection, "api", WindowQuota::per_second(1_000)?).max_batch(MAX_BATCH).build()?;
/// assert_eq!(api.check(1_001).await.unwrap_err(), Error::ExceedsLimit { requested: 1_001, limit: 1_000 });
/// # Ok(()) }
/// ```
pub const MAX_BATCH: u64 = PERMIT_MASK;

impl Pool {
    fn pack(self) -> u64 {
        (self.deadline_ms << DEADLINE_SHIFT)
            | if self.exhausted { EXHAUSTED } else { 0 }
            | self.permits
    }

    fn unpack(word: u64) -> Self {
        Pool {
            deadline_ms: word >> DEADLINE_SHIFT,
            exhausted: word & EXHAUSTED != 0,
            permits: word & PERMIT_MASK,
        }
    }
}

fn epoch() -> Instant {
    static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
    *EPOCH
}

fn micros_since_epoch() -> u64 {
    u64::try_from(epoch().elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// What the pool says to a request.
enum Local {
    Taken(u64),
    Exhausted(Duration),
    Empty,
}

/// Builds a [`LeasedWindow`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{LeasedWindow, OnFailure};
/// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
/// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?)
///     .max_batch(32)
///     .on_failure(OnFailure::Open)
///     .build()?;
/// assert!(api.try_acquire().await?); // Redis down, the pool empty: fails open
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LeasedWindowBuilder {
    connection: Connection,
    name: String,
    quota: WindowQuota,
    max_batch: u64,
    fleet: Option<Fleet>,
    on_failure: OnFailure,
}

impl LeasedWindow {
    /// A leased limit named `name`, `quota.limit()` per aligned `quota.window_length()` on
    /// the server, for the whole fleet.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::LeasedWindow;
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).build()?;
    /// assert!(!api.try_acquire().await?); // nothing leased, Redis down: fails closed
    /// # Ok(()) }
    /// ```
    pub fn builder(connection: &Connection, name: &str, quota: WindowQuota) -> LeasedWindowBuilder {
        LeasedWindowBuilder {
            connection: connection.clone(),
            name: name.to_owned(),
            quota,
            max_batch: 64,
            fleet: None,
            on_failure: OnFailure::default(),
        }
    }

    /// Takes one permit.
    ///
    /// Errors: as [`check`](Self::check).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{LeasedWindow, OnFailure};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).on_failure(OnFailure::Open).build()?;
    /// if api.try_acquire().await? {
    ///     // serve the request
    /// }
    /// assert_eq!(api.fallbacks(), 1);
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<bool, Error> {
        Ok(self.check(1).await?.decision.is_admitted())
    }

    /// Takes one permit from the local pool only, never waiting on Redis: `false` when the
    /// pool is empty (then [`try_acquire`](Self::try_acquire) leases more).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::LeasedWindow;
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).build()?;
    /// assert!(!api.try_acquire_local()); // nothing leased yet
    /// # Ok(()) }
    /// ```
    pub fn try_acquire_local(&self) -> bool {
        matches!(self.inner.take(1), Local::Taken(_))
    }

    /// Takes `n` permits (at most the batch size), from the pool, leasing a batch from
    /// Redis when it is empty.
    ///
    /// Errors: [`Error::ExceedsLimit`] above `max_batch`; the server's own errors.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{LeasedWindow, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).build()?;
    /// let verdict = api.check(5).await?;
    /// assert!(!verdict.decision.is_admitted());
    /// assert_eq!(verdict.source, Source::FailClosed);
    /// # Ok(()) }
    /// ```
    pub async fn check(&self, n: u64) -> Result<Verdict, Error> {
        let inner = &*self.inner;
        if inner.unlimited {
            return Ok(Verdict {
                decision: Decision::Admitted {
                    remaining: u64::MAX,
                },
                reset_after: Duration::ZERO,
                source: Source::Unlimited,
                server_time: None,
            });
        }
        if n > inner.max_batch {
            return Err(Error::ExceedsLimit {
                requested: n,
                limit: inner.max_batch,
            });
        }
        if n == 0 {
            let remaining = match inner.take(0) {
                Local::Taken(remaining) => remaining,
                _ => 0,
            };
            return Ok(leased(Decision::Admitted { remaining }));
        }
        // Each round either decides from the pool or leases a fresh batch; a batch taken by
        // others before this request gets to it sends it round again. Rounds are bounded:
        // past them, the request is refused (an under-admission, never more).
        for _ in 0..MAX_ROUNDS {
            if let Some(decided) = inner.pool_decision(n) {
                return Ok(decided);
            }
            let _one_at_a_time = inner.refill.lock().await;
            // Another request may have leased meanwhile: take from its batch if it suffices.
            if let Some(decided) = inner.pool_decision(n) {
                return Ok(decided);
            }
            match inner.lease(n).await {
                Ok(None) => {}
                Ok(Some(short)) => return Ok(leased(short)),
                Err(Failure::Error(error)) => return Err(error),
                Err(Failure::Unavailable) => return Ok(inner.fallback.decide(b"", n, true)),
            }
        }
        Ok(leased(Decision::Refused {
            available: 0,
            retry_after: Duration::from_millis(1),
        }))
    }

    /// The calls made to Redis for leases so far.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::LeasedWindow;
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).build()?;
    /// api.try_acquire().await?;
    /// assert_eq!(api.leases(), 0); // Redis never answered
    /// # Ok(()) }
    /// ```
    pub fn leases(&self) -> u64 {
        // Relaxed: a statistic.
        self.inner.leases.load(Ordering::Relaxed)
    }

    /// The decisions made by the failure policy so far.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::LeasedWindow;
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).build()?;
    /// api.try_acquire().await?;
    /// assert_eq!(api.fallbacks(), 1);
    /// # Ok(()) }
    /// ```
    pub fn fallbacks(&self) -> u64 {
        self.inner.fallback.count()
    }
}

fn leased(decision: Decision) -> Verdict {
    Verdict {
        decision,
        reset_after: Duration::ZERO,
        source: Source::Leased,
        server_time: None,
    }
}

/// The most lease rounds one request makes before it is refused.
const MAX_ROUNDS: usize = 8;

/// The shortest window a lease can serve (below it the deadline's margin and a round trip
/// leave nothing usable): 10 ms.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Connection, Error, LeasedWindow, QuotaError, MIN_WINDOW};
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let quick = LeasedWindow::builder(&connection, "quick", WindowQuota::per(100, MIN_WINDOW / 2)?).build();
/// let window = Duration::from_millis(5);
/// assert!(matches!(quick, Err(Error::Quota(QuotaError::WindowTooShortForLeases { window: w })) if w == window));
/// # Ok(()) }
/// ```
pub const MIN_WINDOW: Duration = Duration::from_millis(10);

impl Inner {
    /// The pool's decision on `n > 0`, or `None` when it is empty.
    fn pool_decision(&self, n: u64) -> Option<Verdict> {
        match self.take(n) {
            Local::Taken(remaining) => Some(leased(Decision::Admitted { remaining })),
            Local::Exhausted(retry_after) => Some(leased(Decision::Refused {
                available: 0,
                retry_after,
            })),
            Local::Empty => None,
        }
    }

    /// The deadline's margin for a window ending `ends_in` µs from now: 0.1% (over NTP's
    /// 500 ppm slew limit) and a millisecond.
    fn margin(ends_in: u64) -> u64 {
        1_000 + ends_in / 1_000
    }

    /// Takes `n` from the pool (`n = 0`: only looks).
    fn take(&self, n: u64) -> Local {
        let now_ms = micros_since_epoch() / 1000;
        // Acquire: the permits and deadline a lease stored (Release) are read together.
        let mut word = self.pool.load(Ordering::Acquire);
        loop {
            let pool = Pool::unpack(word);
            if now_ms >= pool.deadline_ms {
                return Local::Empty;
            }
            if pool.exhausted {
                return Local::Exhausted(Duration::from_millis(pool.deadline_ms - now_ms));
            }
            if pool.permits < n || (n == 0 && pool.permits == 0) {
                return Local::Empty;
            }
            if n == 0 {
                return Local::Taken(pool.permits);
            }
            let next = Pool {
                permits: pool.permits - n,
                ..pool
            }
            .pack();
            // Relaxed on success: the permits are counts, nothing else is published with
            // them; Acquire on failure as the load above.
            match self
                .pool
                .compare_exchange_weak(word, next, Ordering::Relaxed, Ordering::Acquire)
            {
                Ok(_) => return Local::Taken(pool.permits - n),
                Err(current) => word = current,
            }
        }
    }

    /// The lease script's reply, within the connection's timeout. The call itself runs in a
    /// task of its own and waits up to [`LATE_LEASE_WAIT`] for its reply: a reply that
    /// comes after the caller stopped waiting (the lease counted on Redis, the pool never
    /// filled) is given back to its window, so that late replies do not under-admit.
    async fn lease_call(&self, args: [Vec<u8>; 6]) -> Result<Vec<i64>, Failure> {
        if self.connection.presumed_down() {
            return Err(Failure::Unavailable);
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        let patient = self.connection.clone().timeout(LATE_LEASE_WAIT);
        let (key, limit, window_us) = (self.key.clone(), self.limit, self.window_us);
        let need = &args[4];
        let need = std::str::from_utf8(need)
            .ok()
            .and_then(|n| n.parse::<u64>().ok());
        tokio::spawn(async move {
            let outcome = patient
                .probe(script::lease(), std::slice::from_ref(&key), &args)
                .await;
            if let Err(Ok(late)) = reply.send(outcome) {
                give_back(&patient, key, limit, window_us, need.unwrap_or(0), &late).await;
            }
        });
        match tokio::time::timeout(self.connection.call_timeout(), answer).await {
            Ok(Ok(outcome)) => outcome,
            _ => Err(Failure::Unavailable),
        }
    }

    /// Leases a batch of at least `need` permits from Redis into the pool (replacing what is
    /// left: those permits are lost, an under-admission). `Some(refusal)` when the window
    /// has fewer than `need` left (the pool is left as it was, unless nothing at all is left).
    async fn lease(&self, need: u64) -> Result<Option<Decision>, Failure> {
        let sent_us = micros_since_epoch();
        let nodes = self.fleet.as_ref().map_or(1, Fleet::live_nodes);
        // No lease when the window ends within the margin and another millisecond (a round
        // trip): its permits would expire before they could be used.
        let horizon = Self::margin(self.window_us) + 1_000;
        let args = [
            self.limit,
            self.window_us,
            self.max_batch,
            nodes,
            need,
            horizon,
        ]
        .map(|a| a.to_string().into_bytes());
        let reply = self.lease_call(args).await?;
        // Relaxed: a statistic.
        self.leases.fetch_add(1, Ordering::Relaxed);
        let unexpected = || {
            Failure::Error(Error::UnexpectedReply {
                reply: format!("{reply:?}"),
            })
        };
        let [batch, left, ends_in, _now, too_late, direct] = reply[..] else {
            return Err(unexpected());
        };
        let (Ok(batch), Ok(ends_in)) = (u64::try_from(batch), u64::try_from(ends_in)) else {
            return Err(unexpected());
        };
        let left = u64::try_from(left).unwrap_or(0);
        if too_late == 1 {
            // The window ends before a lease could be used: the script decided this request
            // on the window itself, and the pool stays empty (the next request asks again,
            // until the window rolls over).
            return Ok(Some(if direct == 1 {
                Decision::Admitted { remaining: left }
            } else {
                Decision::Refused {
                    available: left,
                    retry_after: Duration::from_micros(ends_in),
                }
            }));
        }
        if batch == 0 && left > 0 {
            let retry_after = Duration::from_micros(ends_in);
            return Ok(Some(Decision::Refused {
                available: left,
                retry_after,
            }));
        }
        // The server's window ends at least `ends_in` after the request was sent, by the
        // server's clock. The deadline is that, less a margin for the two clocks' rates
        // (0.1% of the span, over NTP's 500 ppm slew limit, plus a millisecond), in whole
        // milliseconds rounded down.
        let margin = Self::margin(ends_in);
        let deadline_ms = (sent_us + ends_in.saturating_sub(margin)) / 1000;
        let pool = Pool {
            deadline_ms,
            exhausted: batch == 0,
            permits: batch.min(MAX_BATCH),
        };
        // Release: a taker that reads this word (Acquire) sees a whole lease.
        self.pool.store(pool.pack(), Ordering::Release);
        Ok(None)
    }
}

impl LeasedWindowBuilder {
    /// The most permits leased at once (64 unless set, at most [`MAX_BATCH`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Connection, Error, LeasedWindow};
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?;
    /// let api = LeasedWindow::builder(&connection, "api", WindowQuota::per_second(1_000)?).max_batch(16).build()?;
    /// assert_eq!(api.check(17).await.unwrap_err(), Error::ExceedsLimit { requested: 17, limit: 16 });
    /// # Ok(()) }
    /// ```
    pub fn max_batch(mut self, max_batch: u64) -> Self {
        self.max_batch = max_batch.clamp(1, MAX_BATCH);
        self
    }

    /// The fleet whose live-node count shrinks the batch (one node unless set).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Fleet, LeasedWindow};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let fleet = Fleet::join(&down, "api", Duration::from_secs(1), 4).await;
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).fleet(&fleet).build()?;
    /// assert!(!api.try_acquire_local());
    /// # Ok(()) }
    /// ```
    pub fn fleet(mut self, fleet: &Fleet) -> Self {
        self.fleet = Some(fleet.clone());
        self
    }

    /// What decides when the pool is empty and Redis is unavailable ([`OnFailure::Closed`]
    /// unless set).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{LeasedWindow, OnFailure, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let api = LeasedWindow::builder(&down, "api", WindowQuota::per_second(1_000)?).on_failure(OnFailure::Open).build()?;
    /// assert_eq!(api.check(1).await?.source, Source::FailOpen);
    /// # Ok(()) }
    /// ```
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        self.on_failure = on_failure;
        self
    }

    /// The limiter.
    ///
    /// Errors: [`Error::Quota`] when the quota cannot be kept exactly on Redis, or its
    /// window is shorter than [`MIN_WINDOW`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Connection, Error, LeasedWindow, QuotaError};
    /// let connection = Connection::open("redis://127.0.0.1:6379/")?;
    /// assert!(LeasedWindow::builder(&connection, "api", WindowQuota::per_second(1_000)?).build().is_ok());
    /// let budget = LeasedWindow::builder(&connection, "once", WindowQuota::budget(1_000)?).build();
    /// assert!(matches!(budget, Err(Error::Quota(QuotaError::Budget))));
    /// # Ok(()) }
    /// ```
    pub fn build(self) -> Result<LeasedWindow, Error> {
        let algorithm = Algorithm::FixedWindow(self.quota);
        let params = algorithm.params()?;
        debug_assert_eq!(params.code, Code::FixedWindow);
        if !params.unlimited && Duration::from_micros(params.args[1]) < MIN_WINDOW {
            return Err(Error::Quota(QuotaError::WindowTooShortForLeases {
                window: Duration::from_micros(params.args[1]),
            }));
        }
        Ok(LeasedWindow {
            inner: Arc::new(Inner {
                connection: self.connection,
                key: key::base(DEFAULT_PREFIX, &self.name, b"leased"),
                limit: params.args[0],
                window_us: params.args[1],
                max_batch: self.max_batch.min(params.capacity.max(1)),
                unlimited: params.unlimited,
                fleet: self.fleet,
                pool: AtomicU64::new(0),
                refill: tokio::sync::Mutex::new(()),
                fallback: Fallback::new(&self.name, self.on_failure, algorithm)?,
                leases: AtomicU64::new(0),
            }),
        })
    }
}

impl fmt::Debug for LeasedWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeasedWindow")
            .field("limit", &self.inner.limit)
            .field("window_us", &self.inner.window_us)
            .field("max_batch", &self.inner.max_batch)
            // Relaxed: a snapshot for display only.
            .field(
                "pool",
                &Pool::unpack(self.inner.pool.load(Ordering::Relaxed)),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_round_trips() {
        for pool in [
            Pool {
                deadline_ms: 0,
                exhausted: false,
                permits: 0,
            },
            Pool {
                deadline_ms: (1 << 39) - 1,
                exhausted: true,
                permits: MAX_BATCH,
            },
            Pool {
                deadline_ms: 123_456,
                exhausted: false,
                permits: 77,
            },
        ] {
            assert_eq!(Pool::unpack(pool.pack()), pool);
        }
    }
}
