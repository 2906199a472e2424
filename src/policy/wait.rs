//! Waiting policy checks: [`Policy::check_within`] and, with the `tokio` feature,
//! [`Policy::until_checked`].

use std::time::Duration;

use crate::limiter::nanos;

use super::check::{Policy, PolicyDecision, PolicyError};

/// What to do after a refusal whose retry time is `retry_after`, read at `now` with the
/// wait's `deadline`: `None` to return the refusal (it ends after the deadline, no time is
/// left, or no reading of the clock can end it), else how long to sleep, at least 1 ns so
/// that a zero retry time cannot spin without time passing. A refusal that ends exactly at
/// the deadline is slept for, as every limiter's own timed wait does: the permits are
/// reachable in time.
fn pause(retry_after: Duration, now: u64, deadline: u64) -> Option<Duration> {
    let left = deadline.saturating_sub(now);
    let after = nanos(retry_after);
    // `u64::MAX` ns is "never" (a retry time past the clock's last reading).
    (left > 0 && after <= left && after < u64::MAX)
        .then(|| retry_after.max(Duration::from_nanos(1)))
}

/// What a waiting check does after one attempt.
enum Attempt<'p> {
    /// Returns this decision: admitted, or refused past the deadline.
    Done(PolicyDecision<'p>),
    /// Sleeps this long, then attempts again.
    Sleep(Duration),
}

impl<Ctx: ?Sized> Policy<Ctx> {
    /// One attempt of a wait ending at `deadline` (a reading of the policy's clock).
    fn attempt(&self, ctx: &Ctx, n: u64, deadline: u64) -> Result<Attempt<'_>, PolicyError> {
        let decision = self.check_n(ctx, n)?;
        let PolicyDecision::Refused { retry_after, .. } = decision else {
            return Ok(Attempt::Done(decision));
        };
        Ok(match pause(retry_after, self.clock.now_nanos(), deadline) {
            Some(sleep) => Attempt::Sleep(sleep),
            None => Attempt::Done(decision),
        })
    }
}

impl<Ctx: ?Sized> Policy<Ctx> {
    /// Checks `n` permits for `ctx`, waiting while refused for at most `timeout` on the
    /// policy's [clock](super::PolicyBuilder::clock): each attempt is one all-or-nothing
    /// [`check_n`](Self::check_n) and holds nothing while it sleeps (a wait never keeps
    /// permits of one dimension from others while another dimension refuses). After a
    /// refusal it sleeps the refusing dimension's `retry_after` and checks again; a refusal
    /// whose retry time ends after the timeout is returned at once, without sleeping, and
    /// one that ends exactly at it is slept for and checked again at the deadline.
    /// `Duration::MAX` waits as long as it takes (a dimension that will never admit, such
    /// as a request above a finite quota's remaining lifetime, is returned). A zero timeout
    /// is one check.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::clock::{Clock, ManualClock};
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::policy::{Policy, PolicyDecision};
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let per_user = Arc::new(Keyed::<u64, FixedWindows, _>::with_config(
    ///     ringlimit::cell::WindowConfig::new(WindowQuota::per_second(1)?)?,
    ///     clock.clone(),
    /// ));
    /// let policy = Policy::builder().per_key("user", per_user, |u: &u64| Some(*u)).clock(clock.clone()).build();
    /// assert!(policy.check(&7)?.is_admitted());
    /// // Not within 100 ms: refused at once, no time slept.
    /// let refused = policy.check_within(&7, 1, Duration::from_millis(100))?;
    /// assert!(matches!(refused, PolicyDecision::Refused { dimension: "user", .. }));
    /// assert_eq!(clock.now_nanos(), 0);
    /// // Within 2 s: admitted when the next window opens.
    /// assert!(policy.check_within(&7, 1, Duration::from_secs(2))?.is_admitted());
    /// assert_eq!(clock.now_nanos(), 1_000_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_within(
        &self,
        ctx: &Ctx,
        n: u64,
        timeout: Duration,
    ) -> Result<PolicyDecision<'_>, PolicyError> {
        let deadline = self.clock.now_nanos().saturating_add(nanos(timeout));
        loop {
            match self.attempt(ctx, n, deadline)? {
                Attempt::Done(decision) => return Ok(decision),
                Attempt::Sleep(sleep) => self.clock.sleep(sleep),
            }
        }
    }

    /// [`check_within`](Self::check_within) for async code, sleeping on tokio's timer (the
    /// policy's clock is read, not slept on). Dropping the future holds nothing: between
    /// attempts no permit is taken.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ringlimit::clock::TokioClock;
    /// use ringlimit::policy::Policy;
    /// use ringlimit::{FixedWindow, WindowQuota};
    /// let global = FixedWindow::builder(WindowQuota::per_second(1)?).clock(TokioClock::new()).build();
    /// let policy = Policy::<()>::builder().shared("global", Arc::new(global)).clock(TokioClock::new()).build();
    /// assert!(policy.until_checked(&(), 1, Duration::from_secs(2)).await?.is_admitted());
    /// assert!(policy.until_checked(&(), 1, Duration::from_secs(2)).await?.is_admitted());
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn until_checked(
        &self,
        ctx: &Ctx,
        n: u64,
        timeout: Duration,
    ) -> Result<PolicyDecision<'_>, PolicyError> {
        let deadline = self.clock.now_nanos().saturating_add(nanos(timeout));
        loop {
            match self.attempt(ctx, n, deadline)? {
                Attempt::Done(decision) => return Ok(decision),
                Attempt::Sleep(sleep) => tokio::time::sleep(sleep).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_only_when_the_retry_ends_in_time() {
        let ms = Duration::from_millis;
        assert_eq!(pause(ms(5), 0, 10_000_000), Some(ms(5)));
        // Ending exactly at the deadline: reachable, slept for.
        assert_eq!(pause(ms(10), 0, 10_000_000), Some(ms(10)));
        assert_eq!(pause(ms(10) + Duration::from_nanos(1), 0, 10_000_000), None);
        assert_eq!(pause(ms(5), 6_000_000, 10_000_000), None);
        // At or past the deadline: no more sleeps.
        assert_eq!(pause(ms(1), 10_000_000, 10_000_000), None);
        assert_eq!(pause(ms(1), 10_000_001, 10_000_000), None);
        // A zero retry time sleeps 1 ns; a retry time no clock reading reaches returns.
        assert_eq!(pause(Duration::ZERO, 0, 1), Some(Duration::from_nanos(1)));
        assert_eq!(pause(Duration::ZERO, 1, 1), None);
        assert_eq!(pause(Duration::MAX, 0, u64::MAX), None);
        assert_eq!(pause(ms(1), u64::MAX, u64::MAX), None);
    }
}
