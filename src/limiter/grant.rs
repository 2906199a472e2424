//! Grants: the [`Ticket`] of permits granted, the [`Grant`] that can give them back, the
//! [`Admission`] that carries one, the [`Reservation`] that holds one until its time, and the
//! [`Attempt`] that one waiting step returns. Nothing here knows the traits.

use std::fmt;
use std::time::Duration;

use crate::clock::Clock;

/// The mark of a ticket no limiter gives anything back for (see [`Ticket::immediate`]).
const UNREFUNDABLE: u128 = u128::MAX;

/// The limiter a [`Grant`] came from: a process-unique id each limiter takes when it is
/// made, so that a refund gives nothing back for a grant another limiter made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner(u64);

impl Owner {
    /// No limiter: the owner of a grant nothing can take back (a wait's immediate grant).
    pub(crate) const NONE: Self = Self(0);

    /// A fresh owner, unequal to every other.
    pub(crate) fn new() -> Self {
        Self(crate::sync::next_id())
    }

    /// The owner of a keyed limiter's grant: a fingerprint of the limiter, the key and the
    /// configuration it was decided under, its top bit set (no [`new`](Self::new) id has it).
    // Used by keyed limiters only (the `keyed` feature).
    #[cfg_attr(not(feature = "keyed"), allow(dead_code))]
    pub(crate) fn keyed(fingerprint: u64) -> Self {
        Self(fingerprint | 1 << 63)
    }
}

/// The record of one grant: how many permits, when they were granted and when they may be
/// used, plus a limiter-private mark that lets [`Reservation::cancel`] give them back.
///
/// Two tickets are equal when all of that is, including the limiter-private configuration
/// epoch (see `Ticket::new`).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket};
/// let clock = ManualClock::starting_at(1_000);
/// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
/// let _first = bucket.reserve(1)?;
/// let second = bucket.reserve(1)?;
/// let ticket = second.ticket();
/// assert_eq!(ticket.permits(), 1);
/// assert_eq!(ticket.delay(), Duration::from_millis(100));
/// assert_eq!(ticket.act_at() - ticket.made_at(), 100_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    permits: u64,
    made_at: u64,
    act_at: u64,
    mark: u128,
    /// The configuration the grant was made under, for limiters whose mark cannot tell
    /// configurations apart on its own (the warm-up limiter's reconfiguration count); 0
    /// elsewhere.
    epoch: u64,
}

impl Ticket {
    /// A grant of `permits` at `made_at` (ns) that may be used at `act_at` (ns, not before
    /// `made_at`); `mark` is whatever the limiter needs to cancel it. Its configuration
    /// epoch is 0.
    pub(crate) fn new(permits: u64, made_at: u64, act_at: u64, mark: u128) -> Self {
        Self {
            permits,
            made_at,
            act_at: act_at.max(made_at),
            mark,
            epoch: 0,
        }
    }

    /// This ticket, made under the configuration numbered `epoch`.
    pub(crate) fn with_epoch(self, epoch: u64) -> Self {
        Self { epoch, ..self }
    }

    /// The configuration the grant was made under (0 unless the limiter numbers them).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A grant usable at once, which cannot be given back: its mark is one no limiter
    /// accepts, so a refund of it restores nothing.
    pub(crate) fn immediate(permits: u64, now: u64) -> Self {
        Self::new(permits, now, now, UNREFUNDABLE)
    }

    /// Permits granted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// clock.set_nanos(500);
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(1)?).clock(clock).build();
    /// bucket.reserve(1)?.into_grant(); // the burst of 1, used at once
    /// let reservation = bucket.reserve_within(1, Duration::from_secs(1))?;
    /// let ticket = reservation.ticket();
    /// assert_eq!(ticket.permits(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// When they were granted, in the limiter's clock (ns).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// clock.set_nanos(500);
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(1)?).clock(clock).build();
    /// bucket.reserve(1)?.into_grant(); // the burst of 1, used at once
    /// let reservation = bucket.reserve_within(1, Duration::from_secs(1))?;
    /// let ticket = reservation.ticket();
    /// assert_eq!(ticket.made_at(), 500);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn made_at(&self) -> u64 {
        self.made_at
    }

    /// When they may be used, in the limiter's clock (ns).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// clock.set_nanos(500);
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(1)?).clock(clock).build();
    /// bucket.reserve(1)?.into_grant(); // the burst of 1, used at once
    /// let reservation = bucket.reserve_within(1, Duration::from_secs(1))?;
    /// let ticket = reservation.ticket();
    /// assert_eq!(ticket.act_at(), 1_000_000_500); // the next permit, a second later
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn act_at(&self) -> u64 {
        self.act_at
    }

    /// The limiter's private mark (public only with the `oracles` feature, for the tests).
    #[cfg(feature = "oracles")]
    pub fn mark(&self) -> u128 {
        self.mark
    }

    /// The limiter's private mark.
    #[cfg(not(feature = "oracles"))]
    pub(crate) fn mark(&self) -> u128 {
        self.mark
    }

    /// How long after the grant the permits may be used.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// clock.set_nanos(500);
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(1)?).clock(clock).build();
    /// bucket.reserve(1)?.into_grant(); // the burst of 1, used at once
    /// let reservation = bucket.reserve_within(1, Duration::from_secs(1))?;
    /// let ticket = reservation.ticket();
    /// assert_eq!(ticket.delay(), Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.act_at - self.made_at)
    }
}

/// The right to give granted permits back: what
/// [`RateLimiter::try_grant`](crate::RateLimiter::try_grant) returns and
/// [`RateLimiter::refund`](crate::RateLimiter::refund) consumes.
///
/// Neither `Copy` nor `Clone`, and made only by limiters, so a grant is refunded at most
/// once: a double refund does not type-check. Dropping it keeps the permits (they were
/// used). What a refund restores depends on the algorithm and on what happened since the
/// grant (see [the guide](crate::guide::refunds)); it never lets a limiter admit more than
/// its limit. A grant refunded to a limiter that did not make it restores nothing (each
/// limiter stamps its grants with its own id, and checks it first).
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
/// let clock = ManualClock::new();
/// let limiter = SlidingWindow::builder(WindowQuota::per(3, Duration::from_secs(1))?).clock(clock.clone()).build();
/// let grant = limiter.try_grant(2)?.into_grant().expect("room for 2");
/// assert_eq!((grant.permits(), grant.remaining()), (2, 1));
/// assert_eq!(limiter.refund(grant), 2); // same window: all of it comes back
/// assert_eq!(limiter.available(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
#[must_use = "dropping a grant keeps its permits; refund it to give them back"]
pub struct Grant {
    ticket: Ticket,
    remaining: u64,
    /// The limiter that made it; [`Owner::NONE`] until that limiter stamps it.
    owner: Owner,
}

impl Grant {
    /// A grant of `ticket`'s permits, leaving `remaining` available right after it, owned
    /// by no limiter until one stamps it with [`owned_by`](Self::owned_by).
    pub(crate) fn new(ticket: Ticket, remaining: u64) -> Self {
        Self {
            ticket,
            remaining,
            owner: Owner::NONE,
        }
    }

    /// This grant, made by `owner`.
    pub(crate) fn owned_by(self, owner: Owner) -> Self {
        Self { owner, ..self }
    }

    /// Whether `owner` made this grant (never for [`Owner::NONE`]): the first check of
    /// every refund.
    pub(crate) fn is_from(&self, owner: Owner) -> bool {
        owner != Owner::NONE && self.owner == owner
    }

    /// Permits granted.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, RateLimiter, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(10)?).clock(ManualClock::new()).build();
    /// let grant = bucket.try_grant(4)?.into_grant().expect("a full bucket");
    /// assert_eq!(grant.permits(), 4);
    /// assert_eq!(bucket.refund(grant), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits(&self) -> u64 {
        self.ticket.permits
    }

    /// Permits still available right after this grant.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, RateLimiter, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(10)?).clock(ManualClock::new()).build();
    /// let grant = bucket.try_grant(4)?.into_grant().expect("a full bucket");
    /// assert_eq!(grant.remaining(), 6);
    /// assert_eq!(bucket.available(), 6);
    /// # drop(grant);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// The record of the grant: when it was made, when its permits may be used, and the
    /// limiter's private mark that tells a refund what to give back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let clock = ManualClock::starting_at(7);
    /// let limiter = FixedWindow::builder(WindowQuota::per(5, Duration::from_secs(1))?).clock(clock.clone()).build();
    /// let grant = limiter.try_grant(2)?.into_grant().expect("room for 2");
    /// assert_eq!((grant.ticket().permits(), grant.ticket().made_at()), (2, 7));
    /// assert_eq!(grant.ticket().delay(), Duration::ZERO); // a window's grants are usable at once
    /// # drop(grant);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ticket(&self) -> &Ticket {
        &self.ticket
    }
}

/// The outcome of [`RateLimiter::try_grant`](crate::RateLimiter::try_grant): a [`Grant`],
/// or a refusal that consumed nothing.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
/// use ringlimit::outcome::Admission;
/// let clock = ManualClock::new();
/// let limiter = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(clock.clone()).build();
/// let first = limiter.try_grant(1)?;
/// assert!(first.is_granted());
/// let second = limiter.try_grant(1)?;
/// assert_eq!(second.retry_after(), Duration::from_secs(1));
/// assert!(matches!(second, Admission::Refused { available: 0, .. }));
/// # drop(first);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a granted admission holds permits: use them, or refund the grant"]
pub enum Admission {
    /// The permits were granted.
    Granted(Grant),
    /// The permits were refused; nothing was consumed.
    Refused {
        /// Permits available at the moment of refusal (fewer than requested).
        available: u64,
        /// The earliest time from now at which the same request could be admitted, if no
        /// one else takes permits meanwhile.
        retry_after: Duration,
    },
}

impl Admission {
    /// The grant of an unlimited limiter, which counted nothing: its ticket restores nothing
    /// (a refund could give nothing back).
    pub(crate) fn unlimited(n: u64, now: u64) -> Self {
        Admission::Granted(Grant::new(Ticket::immediate(n, now), u64::MAX))
    }

    /// `true` when the permits were granted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let limiter = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(ManualClock::new()).build();
    /// let first = limiter.try_grant(1)?;
    /// assert!(first.is_granted());
    /// assert!(!limiter.try_grant(1)?.is_granted());
    /// # drop(first);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_granted(&self) -> bool {
        matches!(self, Self::Granted(_))
    }

    /// How long to wait before retrying; zero when granted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(ManualClock::new()).build();
    /// let first = bucket.try_grant(1)?;
    /// assert_eq!(first.retry_after(), Duration::ZERO);
    /// assert_eq!(bucket.try_grant(1)?.retry_after(), Duration::from_millis(100));
    /// # drop(first);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn retry_after(&self) -> Duration {
        match self {
            Self::Granted(_) => Duration::ZERO,
            Self::Refused { retry_after, .. } => *retry_after,
        }
    }

    /// Permits left right after the grant, or available at the refusal.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, RateLimiter, SlidingWindow, WindowQuota};
    /// let limiter = SlidingWindow::builder(WindowQuota::per(3, Duration::from_secs(1))?).clock(ManualClock::new()).build();
    /// let granted = limiter.try_grant(2)?;
    /// assert_eq!(granted.remaining(), 1); // left after the grant
    /// assert_eq!(limiter.try_grant(2)?.remaining(), 1); // available at the refusal
    /// # drop(granted);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        match self {
            Self::Granted(grant) => grant.remaining,
            Self::Refused { available, .. } => *available,
        }
    }

    /// This admission, its grant (if any) made by `owner`.
    pub(crate) fn owned_by(self, owner: Owner) -> Self {
        match self {
            Self::Granted(grant) => Self::Granted(grant.owned_by(owner)),
            refused => refused,
        }
    }

    /// The grant, if granted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, FixedWindow, RateLimiter, WindowQuota};
    /// let limiter = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(ManualClock::new()).build();
    /// let grant = limiter.try_grant(1)?.into_grant().expect("room for 1");
    /// assert!(limiter.try_grant(1)?.into_grant().is_none());
    /// assert_eq!(limiter.refund(grant), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_grant(self) -> Option<Grant> {
        match self {
            Self::Granted(grant) => Some(grant),
            Self::Refused { .. } => None,
        }
    }
}

/// What a limiter that can schedule permits ahead lends its reservations.
pub(crate) trait Schedule: Sync {
    /// The clock the reservation's times are in.
    fn schedule_clock(&self) -> &dyn Clock;
    /// The limiter's id, stamped on the grants of its reservations.
    fn owner(&self) -> Owner;
    /// Gives back what can be given back of `ticket`: the limiter's
    /// [`refund`](crate::RateLimiter::refund), for the grant a reservation holds.
    fn refund(&self, ticket: &Ticket) -> u64;
}

/// Permits granted now for use at a scheduled time (golang's `Reservation`).
///
/// A reservation holds a [`Grant`]: dropping it keeps its permits consumed;
/// [`cancel`](Self::cancel) is the limiter's [`refund`](crate::RateLimiter::refund) of that
/// grant. Waiters are served in reservation order: each reservation's time is fixed when it
/// is made, so a later caller can never overtake an earlier one.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket};
/// let clock = ManualClock::new();
/// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
/// let first = bucket.reserve(1)?;
/// assert_eq!(first.delay(), Duration::ZERO);
/// let second = bucket.reserve(1)?;
/// assert_eq!(second.delay(), Duration::from_millis(100));
/// assert_eq!(second.wait(), Duration::from_millis(100)); // a manual clock sleeps instantly
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a reservation holds permits: wait for it, use it, or cancel it to give them back"]
pub struct Reservation<'a> {
    owner: Option<&'a dyn Schedule>,
    clock: &'a dyn Clock,
    grant: Grant,
}

impl<'a> Reservation<'a> {
    pub(crate) fn scheduled(owner: &'a dyn Schedule, ticket: Ticket) -> Self {
        Self {
            owner: Some(owner),
            clock: owner.schedule_clock(),
            grant: Grant::new(ticket, 0).owned_by(owner.owner()),
        }
    }

    pub(crate) fn immediate(clock: &'a dyn Clock, ticket: Ticket) -> Self {
        Self {
            owner: None,
            clock,
            grant: Grant::new(ticket, 0),
        }
    }

    /// Permits reserved.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, Reserve, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::per_second(10)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.reserve(3)?.permits(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits(&self) -> u64 {
        self.grant.permits()
    }

    /// How long after the reservation was made its permits may be used.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 2)?).clock(ManualClock::new()).build();
    /// assert_eq!(bucket.reserve(2)?.delay(), Duration::ZERO); // the burst
    /// assert_eq!(bucket.reserve(1)?.delay(), Duration::from_millis(100));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delay(&self) -> Duration {
        self.grant.ticket.delay()
    }

    /// How long from now until the permits may be used (zero once they may).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
    /// let _first = bucket.reserve(1)?;
    /// let second = bucket.reserve(1)?;
    /// assert_eq!(second.ready_in(), Duration::from_millis(100));
    /// clock.advance(Duration::from_millis(60));
    /// assert_eq!(second.ready_in(), Duration::from_millis(40)); // the delay stays 100 ms
    /// clock.advance(Duration::from_millis(60));
    /// assert_eq!(second.ready_in(), Duration::ZERO);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ready_in(&self) -> Duration {
        let now = self.clock.now_nanos();
        Duration::from_nanos(self.grant.ticket.act_at.saturating_sub(now))
    }

    /// The underlying record.
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket};
    /// let clock = ManualClock::starting_at(5_000);
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
    /// let reservation = bucket.reserve(1)?;
    /// assert_eq!(reservation.ticket().permits(), 1);
    /// assert_eq!(reservation.ticket().made_at(), reservation.ticket().act_at()); // usable at once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ticket(&self) -> &Ticket {
        &self.grant.ticket
    }

    /// The grant this reservation holds, to keep or to give to
    /// [`RateLimiter::refund`](crate::RateLimiter::refund) (which is what
    /// [`cancel`](Self::cancel) does).
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, RateLimiter, Reserve, TokenBucket};
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 2)?).clock(ManualClock::new()).build();
    /// let grant = bucket.reserve(2)?.into_grant();
    /// assert_eq!((grant.permits(), bucket.available()), (2, 0));
    /// assert_eq!(bucket.refund(grant), 2); // the same as cancelling the reservation
    /// assert_eq!(bucket.available(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_grant(self) -> Grant {
        self.grant
    }

    /// Blocks on the limiter's clock until the permits may be used; returns the time slept.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::{Clock, ManualClock}, BucketQuota, Rate, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(4)?, 1)?).clock(clock.clone()).build();
    /// assert_eq!(bucket.reserve(1)?.wait(), Duration::ZERO);
    /// // The next permit is 250 ms away; a manual clock "sleeps" by moving forward.
    /// assert_eq!(bucket.reserve(1)?.wait(), Duration::from_millis(250));
    /// assert_eq!(clock.now_nanos(), 250_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(self) -> Duration {
        let start = self.clock.now_nanos();
        loop {
            let now = self.clock.now_nanos();
            if now >= self.grant.ticket.act_at {
                return Duration::from_nanos(now.saturating_sub(start));
            }
            self.clock
                .sleep(Duration::from_nanos(self.grant.ticket.act_at - now));
        }
    }

    /// Gives the permits back: the limiter's [`refund`](crate::RateLimiter::refund) of the
    /// grant this reservation holds (one operation, two ways to reach it). Returns the
    /// permits restored. For the bucket family that is golang's rule for the amount: only
    /// the part that later reservations have not already been scheduled behind, so
    /// cancelling never lets a newer request jump ahead of one already waiting (see
    /// [the guide](crate::guide::refunds)). A grant from a wait of the window family (and of
    /// any limiter whose waits grant only at once) is not refundable: its cancel, and a
    /// refund of its [`into_grant`](Self::into_grant), restore nothing. Take permits meant
    /// to be given back with [`try_grant`](crate::RateLimiter::try_grant).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, BucketQuota, Rate, Reserve, TokenBucket};
    /// let clock = ManualClock::new();
    /// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
    /// let _first = bucket.reserve(1)?;
    /// let second = bucket.reserve(1)?; // usable in 100 ms
    /// assert_eq!(second.cancel(), 1); // nothing behind it: all of it comes back
    /// assert_eq!(bucket.reserve(1)?.delay(), Duration::from_millis(100));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(self) -> u64 {
        match self.owner {
            Some(owner) => owner.refund(&self.grant.ticket),
            None => 0,
        }
    }
}

impl fmt::Debug for Reservation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("ticket", &self.grant.ticket)
            .field("cancellable", &self.owner.is_some())
            .finish()
    }
}

/// One step of a wait, as [`RateLimiter::attempt`](crate::RateLimiter::attempt) returns it.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, BucketQuota, FixedWindow, Rate, RateLimiter, TokenBucket, WindowQuota};
/// use ringlimit::spec::Attempt;
/// let clock = ManualClock::new();
/// // A window grants only permits usable now; otherwise it says when to ask again.
/// let window = FixedWindow::builder(WindowQuota::per(1, Duration::from_secs(1))?).clock(clock.clone()).build();
/// assert!(matches!(window.attempt(1, Duration::from_secs(5))?, Attempt::Granted(_)));
/// match window.attempt(1, Duration::from_secs(5))? {
///     Attempt::RetryAfter(after) => assert_eq!(after, Duration::from_secs(1)),
///     Attempt::Granted(_) => unreachable!("the window is full"),
/// }
/// // A bucket reserves a later slot, within the wait allowed.
/// let bucket = TokenBucket::builder(BucketQuota::new(Rate::per_second(10)?, 1)?).clock(clock.clone()).build();
/// assert!(bucket.try_acquire());
/// match bucket.attempt(1, Duration::from_secs(1))? {
///     Attempt::Granted(reservation) => assert_eq!(reservation.delay(), Duration::from_millis(100)),
///     Attempt::RetryAfter(_) => unreachable!("buckets reserve"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum Attempt<'a> {
    /// The permits are granted; they may be used once the reservation's delay has passed
    /// (at once for the window family, whose grants are never in the future).
    Granted(Reservation<'a>),
    /// Not granted, nothing consumed: ask again after this long.
    RetryAfter(Duration),
}
