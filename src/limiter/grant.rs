//! Grants: the [`Ticket`] of permits granted, the [`Reservation`] that holds one until its
//! time, and the [`Attempt`] that one waiting step returns. Nothing here knows the traits.

use std::fmt;
use std::time::Duration;

use crate::clock::Clock;

/// The record of one grant: how many permits, when they were granted and when they may be
/// used, plus a limiter-private mark that lets [`Reservation::cancel`] give them back.
///
/// Two tickets are equal when all of that is, including the limiter-private configuration
/// epoch (see [`new`](Self::new)).
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
    ///
    /// ```
    /// use ringlimit::Ticket;
    /// let ticket = Ticket::new(2, 10, 5, 0);
    /// assert_eq!((ticket.permits(), ticket.made_at(), ticket.act_at()), (2, 10, 10));
    /// ```
    pub fn new(permits: u64, made_at: u64, act_at: u64, mark: u128) -> Self {
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

    /// A grant usable at once, which cannot be given back.
    pub fn immediate(permits: u64, now: u64) -> Self {
        Self::new(permits, now, now, 0)
    }

    /// Permits granted.
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// When they were granted, in the limiter's clock (ns).
    pub fn made_at(&self) -> u64 {
        self.made_at
    }

    /// When they may be used, in the limiter's clock (ns).
    pub fn act_at(&self) -> u64 {
        self.act_at
    }

    /// The limiter's private mark.
    pub fn mark(&self) -> u128 {
        self.mark
    }

    /// How long after the grant the permits may be used.
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.act_at - self.made_at)
    }
}

/// What a limiter that can schedule permits ahead lends its reservations.
pub(crate) trait Schedule: Sync {
    /// The clock the reservation's times are in.
    fn schedule_clock(&self) -> &dyn Clock;
    /// Gives back what can be given back of `ticket` (see [`Reservation::cancel`]).
    fn cancel(&self, ticket: &Ticket);
}

/// Permits granted now for use at a scheduled time (golang's `Reservation`).
///
/// Dropping a reservation keeps its permits consumed; [`cancel`](Self::cancel) gives them
/// back. Waiters are served in reservation order: each reservation's time is fixed when it
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
    ticket: Ticket,
}

impl<'a> Reservation<'a> {
    pub(crate) fn scheduled(owner: &'a dyn Schedule, ticket: Ticket) -> Self {
        Self {
            owner: Some(owner),
            clock: owner.schedule_clock(),
            ticket,
        }
    }

    pub(crate) fn immediate(clock: &'a dyn Clock, ticket: Ticket) -> Self {
        Self {
            owner: None,
            clock,
            ticket,
        }
    }

    /// Permits reserved.
    pub fn permits(&self) -> u64 {
        self.ticket.permits
    }

    /// How long after the reservation was made its permits may be used.
    pub fn delay(&self) -> Duration {
        self.ticket.delay()
    }

    /// How long from now until the permits may be used (zero once they may).
    pub fn ready_in(&self) -> Duration {
        let now = self.clock.now_nanos();
        Duration::from_nanos(self.ticket.act_at.saturating_sub(now))
    }

    /// The underlying record.
    pub fn ticket(&self) -> &Ticket {
        &self.ticket
    }

    /// Blocks on the limiter's clock until the permits may be used; returns the time slept.
    pub fn wait(self) -> Duration {
        let start = self.clock.now_nanos();
        loop {
            let now = self.clock.now_nanos();
            if now >= self.ticket.act_at {
                return Duration::from_nanos(now.saturating_sub(start));
            }
            self.clock
                .sleep(Duration::from_nanos(self.ticket.act_at - now));
        }
    }

    /// Gives the permits back, as golang's `Reservation.Cancel` does: only while their time
    /// has not come (permits whose time has come may have been used), and only the part that
    /// later reservations have not already been scheduled behind, so cancelling never lets a
    /// newer request jump ahead of one already waiting. Immediate grants cannot be cancelled.
    pub fn cancel(self) {
        if let Some(owner) = self.owner {
            owner.cancel(&self.ticket);
        }
    }
}

impl fmt::Debug for Reservation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("ticket", &self.ticket)
            .field("cancellable", &self.owner.is_some())
            .finish()
    }
}

/// One step of a wait, as [`RateLimiter::attempt`](crate::RateLimiter::attempt) returns it.
#[derive(Debug)]
pub enum Attempt<'a> {
    /// The permits are granted; they may be used once the reservation's delay has passed
    /// (at once for the window family, whose grants are never in the future).
    Granted(Reservation<'a>),
    /// Not granted, nothing consumed: ask again after this long.
    RetryAfter(Duration),
}
