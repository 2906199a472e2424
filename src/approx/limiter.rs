//! The approximate sliding window: two counters and a weighted estimate, O(1) memory.
//! How a decision, a rollover and `set_limit` work, and why a stale word never looks current:
//! [the guide](crate::guide::approx).

use std::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::{Clock, TscClock};
use crate::error::{ConfigError, ExceedsLimit};
use crate::limiter::{Admission, Decision, Grant, Owner, RateLimiter, Ticket};
use crate::sync::{atomic, AdminLock, AtomicU64, Backoff, Ordering, LONG_RETRY_STEP};
use crate::validate;
use crate::window::WindowQuota;

use super::estimate::{locate, Snapshot, Verdict};
use crate::gen_limits::{limit_of, with_limit};

use super::word::{Claim, Head, LAST_WINDOW, MAX_LIMIT};

/// A lock-free approximate sliding window: `limit` permits per `window`, weighing the
/// previous aligned window's count by how much of it still overlaps the sliding window.
///
/// Admits `n` at time `t` iff `floor(prev * (W - r) / W) + cur + n <= limit`, where `prev`
/// and `cur` are the permits admitted in the previous and the current aligned window and
/// `r = t mod W` (see [`ApproxSlidingWindowSpec`](crate::spec::ApproxSlidingWindowSpec)).
///
/// **Guarantee.** O(1) memory: two counters, however large the limit. The estimate is exact
/// when the previous window's permits arrived uniformly; otherwise up to about `2 * limit`
/// can pass inside one interval of length W in the worst case (a burst at the end of one
/// window, counted at a discount, and a second at the start of the next), and never more
/// than `limit` in one aligned window.
///
/// **Concurrency.** Linearizable with respect to the spec, with no deviation: no interleaving
/// over-admits, and no call is refused unless the spec would refuse it at the call's
/// linearization point (an admission's is its CAS on the head; a refusal's, and an
/// `available()`'s, is its load of the head). A call whose clock reading is older than the
/// newest window is decided at the first instant of that window (`r = 0`): time never runs
/// backwards. Every request for `n >= 1` permits moves the limiter to its window first,
/// whatever its outcome, in the spec and here alike: an `ExceedsLimit` too is decided from
/// the head of the caller's window or a later one, under the limit of that head's `gen`, so
/// a `set_limit` racing a rollover never leaves a moved window behind a call the spec says
/// moved nothing (`n = 0` and `available()` move nothing).
///
/// **Residual assumption (ABA).** Every change of the head is a CAS from the exact word the
/// changer read, and every refusal or `available()` re-reads the head's sequence to check
/// that it is unchanged. The word carries a 23-bit install sequence number that every
/// rollover advances by 1 and every `set_limit` by 2, so a stale word can pass for the
/// current one only if the sequence advanced by a multiple of 2^23 = 8 388 608 (and the
/// counters and generation came back to the same values) while its thread stalled between
/// loading the head and the CAS or re-read: a few instructions, the estimate's arithmetic at
/// most; for a rollover helper, all but one of those installs must even come after its claim
/// re-check, the step right before its CAS. That takes at least 8 388 608 rollovers, each
/// into a later window (so also as many windows of clock time, unless the clock jumps), or
/// 4 194 304 `set_limit` calls (serialized on a lock), or a mix: at over 50 ns each, a stall
/// of more than 0.2 s between two adjacent steps. The assumption is that no such stall meets
/// such a run; if one did, a stale admission could over-admit its `n`, and a stale install
/// could forget up to one window's admissions (`limit`).
///
/// **Hot path.** `try_acquire` reads the clock, loads the claim (a `Relaxed` guess of the
/// window, then again to decide), head and limits and re-loads the claim (one cache line), checks the estimate with two `u128` multiplications
/// (no division: the reading's window and position come from the claimed window, and the
/// check is `prev·(W - r) < (N - cur - n + 1)·W`), and admits with one CAS of the head; a
/// refusal is those loads plus a re-load of the head, no write. Under contention a failed
/// CAS retries from fresh loads after an exponential backoff (crossbeam's `Backoff`, 31
/// PAUSEs before the first retry, out of line: the first try pays nothing for it). Rollover (once per window) adds one CAS
/// on the claim and one on the head.
///
/// **Limits.** `1 <= limit <=` [`ApproxSlidingWindow::MAX_LIMIT`] (1 048 575, checked when
/// the limiter is built: a [`WindowQuota`] may hold more), `1 ns <= window <= 2^60 ns`
/// (checked when the quota is made). Memory: the three words share
/// one 128-byte cache line; with the window, the admin lock and the clock handle the limiter
/// takes 256 bytes ([`footprint`](ApproxSlidingWindow::footprint)), whatever the limit.
///
/// ```
/// use std::time::Duration;
/// use ringlimit::{clock::ManualClock, ApproxSlidingWindow, RateLimiter, WindowQuota};
/// let clock = ManualClock::new();
/// let limiter = ApproxSlidingWindow::with_clock(WindowQuota::per(10, Duration::from_secs(1))?, clock.clone())?;
/// assert!(limiter.try_acquire_n(10)?.is_admitted());
/// assert!(!limiter.try_acquire());
/// // 1.25 s: 75% of the previous window's 10 permits still count.
/// clock.advance(Duration::from_millis(1250));
/// assert_eq!(limiter.available(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **How it works:** [`guide::approx`](crate::guide::approx) (claim, install, why a stale word never looks current).
pub struct ApproxSlidingWindow<C = TscClock> {
    words: CachePadded<Words>,
    window: u64,
    admin: AdminLock,
    /// The id stamped on this window's grants; a refund of any other grant restores 0.
    owner: Owner,
    clock: C,
    /// Built from [`WindowQuota::unlimited`]: admit whatever the counters refuse (read
    /// only after a refusal).
    unlimited: bool,
}

/// The three words every decision reads, on one cache line.
struct Words {
    /// `[epoch: 62 | parity: 1 | near: 1]`, see [the guide](crate::guide::approx).
    claim: AtomicU64,
    /// `[seq: 23 | gen: 1 | prev: 20 | cur: 20]`, see [the guide](crate::guide::approx).
    head: AtomicU64,
    /// `[limit for gen 1: 32 | limit for gen 0: 32]`; written only by `set_limit`.
    limits: AtomicU64,
}

/// A reading of the claim and the head, the head read while the claim stood.
#[derive(Clone, Copy)]
struct View {
    claim_word: u64,
    claim: Claim,
    head_word: u64,
    head: Head,
}

impl View {
    /// Whether the head is installed for the claimed window (no rollover in progress).
    fn settled(&self) -> bool {
        self.head.is_for(self.claim)
    }

    /// The claimed window's `(prev, cur)`: the head's, or what its install will write.
    fn counters(&self) -> (u64, u64) {
        match (self.settled(), self.claim.near) {
            (true, _) => (self.head.prev, self.head.cur),
            (false, true) => (self.head.cur, 0),
            (false, false) => (0, 0),
        }
    }
}

/// A view and the limit in force when its head was read.
#[derive(Clone, Copy)]
struct State {
    view: View,
    limit: u64,
}

impl ApproxSlidingWindow {
    /// The largest limit (2^20 − 1): the counters are 20-bit fields of one atomic word.
    /// Below [`WindowQuota::MAX_LIMIT`] (2^40 − 1, the bucketed windows' bound): building an
    /// approximate window of a larger quota fails with [`ConfigError::LimitTooLarge`]
    /// naming this bound.
    ///
    /// ```
    /// use ringlimit::{ApproxSlidingWindow, ConfigError, WindowQuota};
    /// assert_eq!(ApproxSlidingWindow::MAX_LIMIT, (1 << 20) - 1);
    /// assert!(ApproxSlidingWindow::new(WindowQuota::per_second(ApproxSlidingWindow::MAX_LIMIT)?).is_ok());
    /// let too_many = WindowQuota::per_second(ApproxSlidingWindow::MAX_LIMIT + 1)?;
    /// assert_eq!(
    ///     ApproxSlidingWindow::new(too_many).err(),
    ///     Some(ConfigError::LimitTooLarge {
    ///         limit: ApproxSlidingWindow::MAX_LIMIT + 1,
    ///         max: ApproxSlidingWindow::MAX_LIMIT,
    ///     })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub const MAX_LIMIT: u64 = MAX_LIMIT;

    /// `quota.limit()` permits per `quota.window_length()` (the quota's buckets are not
    /// used), on the default [`TscClock`].
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`ApproxSlidingWindow::MAX_LIMIT`].
    ///
    /// ```
    /// use ringlimit::{clock::ManualClock, ApproxSlidingWindow, RateLimiter, WindowQuota};
    /// let limiter = ApproxSlidingWindow::new(WindowQuota::per_second(100)?)?;
    /// assert_eq!(limiter.limit(), 100);
    /// // Tests and simulations pick their clock instead:
    /// let manual = ApproxSlidingWindow::with_clock(WindowQuota::per_second(100)?, ManualClock::new())?;
    /// assert_eq!(manual.available(), 100);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn new(quota: WindowQuota) -> Result<Self, ConfigError> {
        ApproxSlidingWindow::with_clock(quota, TscClock::new())
    }
}

impl<C: Clock> ApproxSlidingWindow<C> {
    /// `quota`, reading time from `clock`.
    ///
    /// Errors: [`ConfigError::LimitTooLarge`] when the quota's limit is above
    /// [`ApproxSlidingWindow::MAX_LIMIT`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, ApproxSlidingWindow, ConfigError, RateLimiter, WindowQuota};
    /// let clock = ManualClock::new();
    /// let quota = WindowQuota::per(2, Duration::from_millis(10))?;
    /// let limiter = ApproxSlidingWindow::with_clock(quota, clock.clone())?;
    /// assert!(limiter.try_acquire());
    /// let hourly = WindowQuota::per_hour(10_000_000)?;
    /// assert_eq!(
    ///     ApproxSlidingWindow::with_clock(hourly, clock).err(),
    ///     Some(ConfigError::LimitTooLarge { limit: 10_000_000, max: ApproxSlidingWindow::MAX_LIMIT })
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn with_clock(quota: WindowQuota, clock: C) -> Result<Self, ConfigError> {
        // An unlimited quota counts under the largest limit (and admits past it).
        let limit = if quota.is_unlimited() {
            MAX_LIMIT
        } else {
            validate::limit(quota.limit(), MAX_LIMIT)?
        };
        Ok(Self {
            words: CachePadded::new(Words {
                claim: atomic(Claim::FIRST.pack()),
                head: atomic(Head::FIRST.pack()),
                limits: atomic(with_limit(0, 0, limit)),
            }),
            window: quota.window_nanos(),
            admin: AdminLock::new(),
            owner: Owner::new(),
            clock,
            unlimited: quota.is_unlimited(),
        })
    }

    /// The window W.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, ApproxSlidingWindow, WindowQuota};
    /// let limiter = ApproxSlidingWindow::with_clock(WindowQuota::per(5, Duration::from_secs(2))?, ManualClock::new())?;
    /// assert_eq!(limiter.window(), Duration::from_secs(2));
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.window)
    }

    /// The limiter's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::{Clock, ManualClock}, ApproxSlidingWindow, WindowQuota};
    /// let limiter = ApproxSlidingWindow::with_clock(WindowQuota::per(5, Duration::from_secs(1))?, ManualClock::new())?;
    /// limiter.clock().advance(Duration::from_nanos(7));
    /// assert_eq!(limiter.clock().now_nanos(), 7);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Bytes this limiter occupies (not counting the clock's shared state).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::{clock::ManualClock, ApproxSlidingWindow, WindowQuota};
    /// let limiter = ApproxSlidingWindow::with_clock(WindowQuota::per(5, Duration::from_secs(1))?, ManualClock::new())?;
    /// assert!(limiter.footprint() <= 256);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// `locate(now, W)` (the reading's window and position in it), without its division
    /// when the reading falls in the claimed window (or the next), as nearly every call's
    /// does: a multiplication and two comparisons instead.
    #[inline]
    fn locate(&self, now: u64) -> (u64, u64) {
        // Relaxed: only a guess at the window, checked against `now` below; the decision's
        // own loads of the claim come after.
        let guess = Claim::unpack(self.words.claim.load(Ordering::Relaxed)).epoch;
        // `start = guess × W <= now` when `now` is in window `guess` or later: then `now / W`
        // is `guess` if `now - start < W`, `guess + 1` if below `2W` (window numbers are
        // at most LAST_WINDOW, and `locate` caps only beyond it).
        if let Some(start) = guess.checked_mul(self.window) {
            if let Some(into) = now.checked_sub(start) {
                if into < self.window {
                    return (guess, into);
                }
                if into - self.window < self.window && guess < LAST_WINDOW {
                    return (guess + 1, into - self.window);
                }
            }
        }
        locate(now, self.window)
    }

    /// Decides `n` permits at time `now` (ns).
    #[inline]
    fn decide(&self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        self.grant(now, n).map(|(decision, _)| decision)
    }

    /// Decides `n` permits at time `now` (ns); an admission comes with the window it was
    /// counted in, which a refund needs.
    #[inline]
    fn grant(&self, now: u64, n: u64) -> Result<(Decision, u64), ExceedsLimit> {
        let (epoch, r) = self.locate(now);
        loop {
            match self.grant_once(now, n, epoch, r) {
                Ok(decided) => return decided,
                Err(Retry::Moved) => {}
                Err(Retry::Lost) => return self.grant_again(now, n, epoch, r),
            }
        }
    }

    /// [`grant`](Self::grant) after a lost CAS on the head, out of line so that the
    /// uncontended first try pays nothing for it: a backoff (`sync::Backoff`) before each
    /// try that follows a lost CAS, from `sync::LONG_RETRY_STEP`: 63 PAUSEs waited at once
    /// and 64 more before each retry. Retrying at once, or backing off from a lower step,
    /// leaves the approximate window at or below a mutex at 2 threads; from this step it
    /// stays above it at 2 to 8 (`cargo run --release --example compare -- --only
    /// approx_window,allow --threads 2,4 --samples 3`; figures: docs/BENCHMARKS.md, Backoff
    /// and retry tuning).
    #[cold]
    #[inline(never)]
    fn grant_again(
        &self,
        now: u64,
        n: u64,
        epoch: u64,
        r: u64,
    ) -> Result<(Decision, u64), ExceedsLimit> {
        let backoff = Backoff::starting_at(LONG_RETRY_STEP);
        loop {
            backoff.spin();
            loop {
                match self.grant_once(now, n, epoch, r) {
                    Ok(decided) => return decided,
                    Err(Retry::Moved) => {}
                    Err(Retry::Lost) => break,
                }
            }
        }
    }

    /// One try of [`grant`](Self::grant) for a reading in window `epoch` at position `r`:
    /// the outcome, or why to try again.
    #[inline]
    fn grant_once(
        &self,
        now: u64,
        n: u64,
        epoch: u64,
        r: u64,
    ) -> Result<Result<(Decision, u64), ExceedsLimit>, Retry> {
        // Acquire: the claimer read this claim's predecessor head settled before its
        // Release CAS of the claim, so the head loaded next is that head or a later one,
        // never an older one.
        let claim_word = self.words.claim.load(Ordering::Acquire);
        let claim = Claim::unpack(claim_word);
        if claim.epoch < epoch {
            // As in the spec, `n = 0` leaves the window where it is; every request for
            // permits moves it to its reading first, whatever its outcome (`ExceedsLimit`
            // included: see the type's docs).
            if n == 0 {
                let snap = self.read_only(epoch, r);
                return Ok(Ok((
                    Decision::Admitted {
                        remaining: snap.available(),
                    },
                    epoch,
                )));
            }
            self.advance(epoch);
            return Err(Retry::Moved);
        }
        // Acquire: pairs with the Release of the install or `set_limit` CAS that wrote
        // this head (admission CASes, being read-modify-writes, continue its release
        // sequence), so the claim it was installed for and the limit of its `gen` are
        // visible from here on.
        let head_word = self.words.head.load(Ordering::Acquire);
        let head = Head::unpack(head_word);
        if !head.is_for(claim) {
            self.help();
            return Err(Retry::Moved);
        }
        // Acquire: pairs with `set_limit`'s Release store. If this reads a limit stored
        // by a `set_limit` that started after the head above was relimited away from
        // its `gen`, that relimiting CAS happens before everything below, so the
        // admission CAS fails and the refusal's sequence re-read sees the change.
        let limits = self.words.limits.load(Ordering::Acquire);
        // Relaxed: sequenced after the head's Acquire load. If the head is a later
        // claim's (same parity, two or more rollovers on), its installer read that claim
        // first, so this load sees it (or a later one). Unchanged, the claim proves the
        // head was its own when it was read.
        if self.words.claim.load(Ordering::Relaxed) != claim_word {
            return Err(Retry::Moved);
        }
        let snap = Snapshot {
            limit: limit_of(limits, head.generation),
            window: self.window,
            epoch: claim.epoch,
            r: 0,
            prev: head.prev,
            cur: head.cur,
        }
        .at(epoch, r);
        let outcome = match crate::limiter::spec::trivial(n, snap.limit, || snap.available()) {
            Err(exceeds) => Err(exceeds),
            Ok(Some(done)) => Ok(done),
            Ok(None) => match snap.decide(now, n) {
                Verdict::Admit { cur } => {
                    // Set to `{ cur: cur + n, ..head }`.
                    let next = Head { cur, ..head };
                    // Relaxed: the decision depends on this word alone (the claim and
                    // the limit were validated for it above), and success proves the
                    // head is still that word: the linearization point. Failure:
                    // Relaxed, the loop re-reads everything.
                    if self
                        .words
                        .head
                        .compare_exchange(
                            head_word,
                            next.pack(),
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        )
                        .is_ok()
                    {
                        // Dead in `try_acquire`, so its division is optimized out.
                        let remaining = snap.remaining(cur);
                        return Ok(Ok((Decision::Admitted { remaining }, claim.epoch)));
                    }
                    // Another caller changed the line under us.
                    return Err(Retry::Lost);
                }
                Verdict::Refuse(refused) => Ok(refused),
            },
        };
        // Relaxed: sequenced after the limits' Acquire load (see there). An unchanged
        // sequence means no `set_limit` came between the head and the limits loads, so
        // the limit read is the one in force at the head load, the linearization point
        // of this outcome.
        if Head::unpack(self.words.head.load(Ordering::Relaxed)).seq == head.seq {
            return Ok(outcome.map(|decision| (decision, claim.epoch)));
        }
        Err(Retry::Moved)
    }

    /// Gives back `n` permits counted in window `epoch` at `now`: one CAS of the head to
    /// `{ cur: cur - k, ..head }`, `k = min(n, cur)`, while `epoch` is the installed window
    /// and `now` is not past it; else nothing (the window has passed: its `cur` is now some
    /// later window's `prev`, frozen). Exact: a rollover copies `cur` into `prev` with a CAS
    /// from the exact head word, so it sees the refund or fails and re-reads.
    fn give_back(&self, epoch: u64, n: u64, now: u64) -> u64 {
        if n == 0 || locate(now, self.window).0 > epoch {
            return 0;
        }
        loop {
            // Acquire: as in `grant`, the head loaded next is this claim's or a later one.
            let claim_word = self.words.claim.load(Ordering::Acquire);
            if Claim::unpack(claim_word).epoch != epoch {
                return 0;
            }
            // Acquire: as in `grant`.
            let head_word = self.words.head.load(Ordering::Acquire);
            let head = Head::unpack(head_word);
            if !head.is_for(Claim::unpack(claim_word)) {
                self.help();
                continue;
            }
            // Relaxed: as in `grant`, an unchanged claim proves the head was its own.
            if self.words.claim.load(Ordering::Relaxed) != claim_word {
                continue;
            }
            let restored = n.min(head.cur);
            // Set to `{ cur: cur - restored, ..head }`.
            let next = Head {
                cur: head.cur - restored,
                ..head
            };
            // Relaxed: the refund depends on this word alone, and success proves the head is
            // still the one installed for `epoch`: the linearization point. Failure: Relaxed,
            // the loop re-reads everything.
            if self
                .words
                .head
                .compare_exchange(head_word, next.pack(), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return restored;
            }
        }
    }

    /// The state a reading in window `epoch` at position `r` sees, without writing anything:
    /// a rollover in progress or due is applied to the snapshot, not to the words.
    fn read_only(&self, epoch: u64, r: u64) -> Snapshot {
        let State { view, limit } = self.state();
        let (prev, cur) = view.counters();
        Snapshot {
            limit,
            window: self.window,
            epoch: view.claim.epoch,
            r: 0,
            prev,
            cur,
        }
        .at(epoch, r)
    }

    /// A view with the limit in force at its head load: one instant's state.
    fn state(&self) -> State {
        loop {
            let view = self.view();
            // Acquire: as in `decide`.
            let limits = self.words.limits.load(Ordering::Acquire);
            // Relaxed: as the sequence re-read in `decide`.
            if Head::unpack(self.words.head.load(Ordering::Relaxed)).seq == view.head.seq {
                return State {
                    view,
                    limit: limit_of(limits, view.head.generation),
                };
            }
        }
    }

    /// Reads the claim and the head consistently (the claim unchanged around the head).
    fn view(&self) -> View {
        loop {
            // Acquire: as in `decide`.
            let claim_word = self.words.claim.load(Ordering::Acquire);
            // Acquire: as in `decide`.
            let head_word = self.words.head.load(Ordering::Acquire);
            // Relaxed: as the claim re-load in `decide`.
            if self.words.claim.load(Ordering::Relaxed) == claim_word {
                return View {
                    claim_word,
                    claim: Claim::unpack(claim_word),
                    head_word,
                    head: Head::unpack(head_word),
                };
            }
        }
    }

    /// Moves the limiter towards window `epoch`: helps a rollover in progress, or claims it.
    #[cold]
    fn advance(&self, epoch: u64) {
        let view = self.view();
        if !view.settled() {
            self.install(view);
            return;
        }
        if view.claim.epoch >= epoch {
            return;
        }
        // Set to `{ epoch, parity: !parity, near: epoch == old epoch + 1 }`.
        let next = view.claim.successor(epoch);
        // Release: a reader that acquires the new claim then reads at least the head this
        // claimer saw settled, never an older one. Failure: Relaxed, the caller re-reads and
        // helps whichever claim won.
        let _ = self.words.claim.compare_exchange(
            view.claim_word,
            next.pack(),
            Ordering::Release,
            Ordering::Relaxed,
        );
    }

    /// Helps a rollover in progress, if there is one.
    #[cold]
    fn help(&self) {
        let view = self.view();
        if !view.settled() {
            self.install(view);
        }
    }

    /// Installs the claimed window's first head over its predecessor in `view`.
    #[cold]
    fn install(&self, view: View) {
        let (prev, _) = view.counters();
        // Set to `{ seq: seq + 1, gen, prev: old cur if near else 0, cur: 0 }`.
        let next = view.head.successor(prev);
        // Relaxed: only a freshness check. Re-validated right before the CAS, a claim that
        // moved on means this install is done (claims are made only from settled views), and
        // the helper gives up instead of racing later rollovers with a stale word: a stale
        // CAS then needs a run of 2^23 sequence steps between here and the next line.
        if self.words.claim.load(Ordering::Relaxed) != view.claim_word {
            return;
        }
        // Release: the claim this helper read happens before this CAS, so a reader that
        // acquires the new head (or a later one) sees the claim, and the limit of its `gen`.
        // Only the helper that read the predecessor's final word succeeds. Failure: Relaxed,
        // the caller re-reads.
        let _ = self.words.head.compare_exchange(
            view.head_word,
            next.pack(),
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}

/// Why one try of a decision ends without an outcome.
enum Retry {
    /// The words moved on (a rollover claimed or installed, or the claim or the sequence
    /// changed under a read): try again at once.
    Moved,
    /// The admission's CAS on the head lost to another caller's: try again after a backoff.
    Lost,
}

impl<C: Clock> RateLimiter for ApproxSlidingWindow<C> {
    #[inline]
    fn try_acquire(&self) -> bool {
        // An unlimited limiter's flag is read only once the counters refused.
        self.decide(self.clock.now_nanos(), 1)
            .is_ok_and(|decision| decision.is_admitted())
            || self.unlimited
    }

    fn try_acquire_n(&self, n: u64) -> Result<Decision, ExceedsLimit> {
        if self.unlimited {
            return Ok(Decision::UNLIMITED);
        }
        self.decide(self.clock.now_nanos(), n)
    }

    fn try_grant(&self, n: u64) -> Result<Admission, ExceedsLimit> {
        if self.unlimited {
            return Ok(Admission::unlimited(n, self.clock.now_nanos()));
        }
        let now = self.clock.now_nanos();
        Ok(match self.grant(now, n)? {
            (Decision::Admitted { remaining }, epoch) => {
                let mark = if n == 0 { 0 } else { u128::from(epoch) };
                let ticket = Ticket::new(n, now, now, mark);
                Admission::Granted(Grant::new(ticket, remaining).owned_by(self.owner))
            }
            (
                Decision::Refused {
                    available,
                    retry_after,
                },
                _,
            ) => Admission::Refused {
                available,
                retry_after,
            },
        })
    }

    /// Restores `min(n, cur)` while the grant's window is still the current one (see
    /// [the guide](crate::guide::refunds)); else 0.
    fn refund(&self, grant: Grant) -> u64 {
        if !grant.is_from(self.owner) {
            return 0;
        }
        let ticket = grant.ticket();
        match u64::try_from(ticket.mark()) {
            Ok(epoch) => self.give_back(epoch, ticket.permits(), self.clock.now_nanos()),
            Err(_) => 0,
        }
    }

    fn available(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        let (epoch, r) = locate(self.clock.now_nanos(), self.window);
        self.read_only(epoch, r).available()
    }

    fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        if self.unlimited {
            return Err(ConfigError::Unlimited);
        }
        let limit = validate::limit(limit, MAX_LIMIT)?;
        self.admin.with(|| {
            // Relaxed: only `set_limit` flips `gen`, under the admin lock, which orders this
            // load after the previous holder's CAS; installs copy `gen`.
            let mut word = self.words.head.load(Ordering::Relaxed);
            let next_gen = Head::unpack(word).generation ^ 1;
            // Relaxed: the limits word is written only here, under the lock.
            let limits = self.words.limits.load(Ordering::Relaxed);
            // Release: a reader whose limits load (Acquire) reads this store then has the
            // previous `set_limit`'s head CAS (before the lock hand-over) happen before its
            // re-read of the head, so it cannot pair this limit with a head from before that
            // CAS (see `decide`).
            self.words
                .limits
                .store(with_limit(limits, next_gen, limit), Ordering::Release);
            loop {
                // Set to `{ seq: seq + 2, gen: next_gen, ..head }`: the parity, hence a
                // rollover in progress, is unaffected, and its install keeps `next_gen`.
                let next = Head::unpack(word).relimited();
                debug_assert_eq!(next.generation, next_gen);
                // Release: publishes the limit stored above to every reader that acquires
                // this head or a later one. Failure: Relaxed, retry from the value seen.
                match self.words.head.compare_exchange(
                    word,
                    next.pack(),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(seen) => word = seen,
                }
            }
        });
        Ok(())
    }

    fn limit(&self) -> u64 {
        if self.unlimited {
            return u64::MAX;
        }
        self.state().limit
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}

impl<C> fmt::Debug for ApproxSlidingWindow<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed (all): a diagnostic snapshot, not a decision.
        let claim = Claim::unpack(self.words.claim.load(Ordering::Relaxed));
        let head = Head::unpack(self.words.head.load(Ordering::Relaxed));
        let limits = self.words.limits.load(Ordering::Relaxed);
        f.debug_struct("ApproxSlidingWindow")
            .field("epoch", &claim.epoch)
            .field("settled", &head.is_for(claim))
            .field("prev", &head.prev)
            .field("cur", &head.cur)
            .field("limit", &limit_of(limits, head.generation))
            .field("window_nanos", &self.window)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{spec, word};
    use super::*;
    use crate::clock::ManualClock;
    use crate::limiter::spec::Spec;

    fn limiter(limit: u64, window: u64) -> (ApproxSlidingWindow<ManualClock>, ManualClock) {
        let clock = ManualClock::new();
        let limiter = ApproxSlidingWindow::with_clock(
            WindowQuota::per(limit, Duration::from_nanos(window)).unwrap(),
            clock.clone(),
        )
        .unwrap();
        (limiter, clock)
    }

    /// The limiter's division-free `locate` equals the spec's for every guess
    /// (claimed window) around the reading, at window boundaries and at the epoch cap.
    #[test]
    fn locate_matches_the_spec_for_every_guess() {
        let max_w = crate::validate::MAX_WINDOW_NANOS;
        for window in [1u64, 2, 3, 7, 1000, 999_983, 1 << 32, max_w - 1, max_w] {
            let (limiter, _clock) = limiter(5, window);
            let cap = (u128::from(word::LAST_WINDOW) + 1) * u128::from(window);
            let mut nows = vec![
                0u64,
                1,
                window - 1,
                window,
                window + 1,
                2 * window - 1,
                u64::MAX,
                u64::MAX - 1,
                u64::MAX / 2,
            ];
            for k in [
                1u64,
                2,
                3,
                1 << 20,
                1 << 40,
                word::LAST_WINDOW - 1,
                word::LAST_WINDOW,
            ] {
                for d in [0i128, -1, 1, i128::from(window), -i128::from(window)] {
                    let t = i128::from(k) * i128::from(window) + d;
                    if (0..=i128::from(u64::MAX)).contains(&t) {
                        nows.push(t as u64);
                    }
                }
            }
            let _ = cap;
            for &now in &nows {
                let exact = locate(now, window);
                let mut guesses = vec![0u64, 1, word::LAST_WINDOW, word::LAST_WINDOW - 1];
                for g in [exact.0, now / window] {
                    for d in [-2i128, -1, 0, 1, 2] {
                        let g = i128::from(g) + d;
                        if (0..=i128::from(word::LAST_WINDOW)).contains(&g) {
                            guesses.push(g as u64);
                        }
                    }
                }
                for g in guesses {
                    let claim = word::Claim {
                        epoch: g,
                        parity: g & 1,
                        near: false,
                    };
                    limiter.words.claim.store(claim.pack(), Ordering::Relaxed);
                    assert_eq!(limiter.locate(now), exact, "W={window} now={now} guess={g}");
                }
            }
        }
    }

    #[test]
    fn deterministic_trace_matches_the_spec() {
        let (limiter, clock) = limiter(10, 1000);
        for (now, n, expected) in spec::tests::expected_trace() {
            clock.set_nanos(now);
            assert_eq!(
                limiter.try_acquire_n(n).unwrap(),
                expected,
                "at {now} for {n}"
            );
        }
        clock.set_nanos(4500);
        assert_eq!(limiter.available(), 4);
        limiter.set_limit(4).unwrap();
        assert_eq!(limiter.limit(), 4);
        assert_eq!(
            limiter.try_acquire_n(1).unwrap(),
            Decision::Refused {
                available: 0,
                retry_after: Duration::from_nanos(201),
            }
        );
    }

    #[test]
    fn jumps_of_2_pow_32_and_2_pow_40_windows_start_fresh() {
        let window = 1000;
        let (limiter, clock) = limiter(5, window);
        assert!(limiter.try_acquire_n(5).unwrap().is_admitted());
        for jump in [1u64 << 32, 1 << 40, 1 << 14, 1 << 15, 1 << 23] {
            // Powers of two: the head carries no window index, so only the claim can tell.
            clock.advance_nanos(jump * window);
            assert_eq!(limiter.available(), 5, "after {jump} windows");
            assert!(limiter.try_acquire_n(5).unwrap().is_admitted());
            assert!(!limiter.try_acquire());
            // The next window weighs the full 5 at r = 0, 4 at r = 200.
            clock.advance_nanos(window);
            assert_eq!(limiter.available(), 0);
            clock.advance_nanos(200);
            assert_eq!(limiter.available(), 1);
            assert!(limiter.try_acquire());
            clock.advance_nanos(window - 200);
            assert!(limiter.try_acquire_n(4).unwrap().is_admitted());
        }
    }

    #[test]
    fn clock_going_backwards_joins_the_newest_window_at_its_start() {
        let (limiter, clock) = limiter(4, 100);
        assert!(limiter.try_acquire_n(4).unwrap().is_admitted());
        clock.set_nanos(150);
        // prev = 4, r = 50: estimate 2.
        assert_eq!(limiter.available(), 2);
        assert!(limiter.try_acquire());
        clock.set_nanos(10);
        // Window 0 is gone: the reading joins window 1 at r = 0, estimate 4.
        assert_eq!(limiter.available(), 0);
        assert!(!limiter.try_acquire());
        clock.set_nanos(175);
        // Estimate floor(4 * 25 / 100) = 1, cur = 1.
        assert_eq!(limiter.available(), 2);
    }

    /// Found by the proptest: `n = 0` decides nothing and must not roll the window over.
    #[test]
    fn calls_that_decide_nothing_leave_the_window_alone() {
        let (limiter, clock) = limiter(1, 13);
        let mut spec = spec::ApproxSlidingWindowSpec::new(1, Duration::from_nanos(13)).unwrap();
        for (now, n) in [(13, 0), (0, 1), (0, 1)] {
            clock.set_nanos(now);
            assert_eq!(
                limiter.try_acquire_n(n),
                spec.decide(now, n),
                "at {now} for {n}"
            );
        }
        // Window 0 holds the permit; window 1 weighs it from r = 1 on.
        assert_eq!(
            limiter.try_acquire_n(1).unwrap().retry_after(),
            Duration::from_nanos(14)
        );
    }

    /// Found by the external adversarial checker: a request above the limit moves the window
    /// to its reading, in the spec as here (a racing `set_limit` could otherwise leave a
    /// window moved by a call that the spec says moved nothing).
    #[test]
    fn requests_above_the_limit_move_the_window_like_the_spec() {
        let (limiter, clock) = limiter(1, 13);
        let mut spec = spec::ApproxSlidingWindowSpec::new(1, Duration::from_nanos(13)).unwrap();
        for (now, n) in [(13, 2), (0, 1), (0, 1)] {
            clock.set_nanos(now);
            assert_eq!(
                limiter.try_acquire_n(n),
                spec.decide(now, n),
                "at {now} for {n}"
            );
        }
        // Window 1 holds the permit (the reading 0 joined it); window 2 weighs it from r = 1.
        assert_eq!(
            limiter.try_acquire_n(1).unwrap().retry_after(),
            Duration::from_nanos(27)
        );
    }

    #[test]
    fn huge_limits_are_config_errors() {
        let clock = ManualClock::new();
        let second = Duration::from_secs(1);
        assert_eq!(
            WindowQuota::per(u64::MAX, second).unwrap_err(),
            ConfigError::LimitTooLarge {
                limit: u64::MAX,
                max: WindowQuota::MAX_LIMIT
            }
        );
        // A quota may hold more than the counters: the limiter refuses it, naming their bound.
        for limit in [WindowQuota::MAX_LIMIT, u64::from(u32::MAX), MAX_LIMIT + 1] {
            let quota = WindowQuota::per(limit, second).unwrap();
            assert_eq!(
                ApproxSlidingWindow::with_clock(quota, clock.clone()).err(),
                Some(ConfigError::LimitTooLarge {
                    limit,
                    max: MAX_LIMIT
                })
            );
        }
        let (limiter, _) = limiter(3, 10);
        assert!(matches!(
            limiter.set_limit(u64::MAX),
            Err(ConfigError::LimitTooLarge { .. })
        ));
        assert_eq!(limiter.limit(), 3);
        let quota = WindowQuota::per(MAX_LIMIT, second).unwrap();
        assert_eq!(
            ApproxSlidingWindow::with_clock(quota, clock.clone())
                .unwrap()
                .limit(),
            MAX_LIMIT
        );
        // Unlimited quotas stay accepted.
        let unlimited = ApproxSlidingWindow::with_clock(WindowQuota::unlimited(), clock);
        assert_eq!(unlimited.unwrap().limit(), u64::MAX);
        assert!(WindowQuota::per(1, Duration::from_secs(u64::MAX)).is_err());
    }

    #[test]
    fn a_full_window_of_max_limit_fits_the_counters() {
        let (limiter, clock) = limiter(MAX_LIMIT, 1000);
        assert!(limiter.try_acquire_n(MAX_LIMIT).unwrap().is_admitted());
        clock.set_nanos(1000);
        assert_eq!(limiter.available(), 0);
        clock.set_nanos(1999);
        // floor(MAX * 1 / 1000) of the previous window still counts.
        assert_eq!(limiter.available(), MAX_LIMIT - MAX_LIMIT / 1000);
        assert!(limiter
            .try_acquire_n(MAX_LIMIT - MAX_LIMIT / 1000)
            .unwrap()
            .is_admitted());
        assert!(!limiter.try_acquire());
    }

    #[test]
    fn saturated_window_indices_stand_still() {
        let (limiter, clock) = limiter(2, 1);
        clock.set_nanos(u64::MAX);
        assert!(limiter.try_acquire_n(2).unwrap().is_admitted());
        assert!(!limiter.try_acquire());
        clock.set_nanos(u64::MAX - 3);
        assert_eq!(limiter.available(), 0);
    }

    /// The install sequence wraps (mod 2^23) in the middle of rollovers and `set_limit`s;
    /// the parity keeps alternating and every outcome still matches the spec.
    #[test]
    fn the_install_sequence_wraps() {
        let (limiter, clock) = limiter(4, 10);
        let mut spec = spec::ApproxSlidingWindowSpec::new(4, Duration::from_nanos(10)).unwrap();
        // Start three steps before the wrap, in window 0 (parity 0 needs an even sequence).
        let last = (1 << word::SEQ_BITS) - 1;
        let start = Head {
            seq: last - 3,
            ..Head::FIRST
        };
        limiter.words.head.store(start.pack(), Ordering::Relaxed);
        let mut seqs = Vec::new();
        for step in 0..12u64 {
            let now = step * 7;
            clock.set_nanos(now);
            if step % 4 == 3 {
                let l = 2 + step % 3;
                limiter.set_limit(l).unwrap();
                spec.set_limit(0, l).unwrap();
            }
            for n in [1, 2] {
                assert_eq!(limiter.try_acquire_n(n), spec.decide(now, n), "at {now}");
            }
            assert_eq!(limiter.available(), spec.available(now), "at {now}");
            let head = Head::unpack(limiter.words.head.load(Ordering::Relaxed));
            let claim = Claim::unpack(limiter.words.claim.load(Ordering::Relaxed));
            assert!(head.is_for(claim), "settled at {now}");
            seqs.push(head.seq);
        }
        // It went past the wrap: from just below 2^23 to just above 0.
        assert!(
            seqs[0] >= last - 3 && *seqs.last().unwrap() < 16,
            "{seqs:?}"
        );
    }

    #[test]
    fn debug_shows_the_state() {
        let (limiter, _) = limiter(3, 10);
        assert!(limiter.try_acquire());
        let shown = format!("{limiter:?}");
        assert!(
            shown.contains("cur: 1") && shown.contains("limit: 3"),
            "{shown}"
        );
    }
}
