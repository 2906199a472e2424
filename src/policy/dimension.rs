//! The dimensions a [`Policy`](super::Policy) checks: one limiter each (keyed, with the
//! function that finds the caller's key, or one limit for everyone), behind one object-safe
//! trait so that a policy holds dimensions of any families.

use std::hash::{BuildHasher, Hash};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::keyed::{Keyed, KeyedError, RateFamily};
use crate::limiter::{Admission, Grant, RateLimiter};

/// What one dimension did with a request.
pub(crate) enum Taken {
    /// The dimension does not apply to this request (its key function found no key).
    Skipped,
    /// Granted; refund it with the same context if a later dimension refuses.
    Granted {
        grant: Grant,
        /// How long until the dimension counts nothing any more for this request's key,
        /// if no other permit is taken meanwhile (`None`: its limiter does not say).
        reset_after: Option<Duration>,
    },
    /// Refused; nothing taken.
    Refused {
        available: u64,
        retry_after: Duration,
    },
}

/// One dimension of a policy.
pub(crate) trait Dimension<Ctx: ?Sized>: Send + Sync {
    /// Takes `n` permits for the request `ctx`.
    fn take(&self, ctx: &Ctx, n: u64) -> Result<Taken, KeyedError>;
    /// Gives back `grant`, taken by [`take`](Self::take) for the same `ctx`.
    fn give_back(&self, ctx: &Ctx, grant: Grant);
    /// The limit `ctx` is decided under (the metrics' denominator): the key's for a keyed
    /// dimension (its tier's if it has one). Read only when a recorder takes the gauges.
    #[cfg(feature = "metrics")]
    fn limit(&self, ctx: &Ctx) -> u64;
    /// Whether the policy records this dimension's allowances (a rule's draining limiter
    /// records only its refusals, and sets no gauges: the rule's new limiter records the
    /// allowances and the gauges).
    #[cfg(feature = "metrics")]
    fn records_allowed(&self) -> bool {
        true
    }
}

/// What a limiter's `admission` means for a dimension, its reset time `reset_after` if the
/// limiter says.
pub(crate) fn taken(admission: Admission, reset_after: Option<Duration>) -> Taken {
    match admission {
        Admission::Granted(grant) => Taken::Granted { grant, reset_after },
        Admission::Refused {
            available,
            retry_after,
        } => Taken::Refused {
            available,
            retry_after,
        },
    }
}

/// A keyed limiter and the function that finds a request's key (`None`: not limited here).
pub(crate) struct PerKey<K, F: RateFamily, C: Clock, S: BuildHasher, G> {
    pub(crate) limiter: Arc<Keyed<K, F, C, S>>,
    pub(crate) key: G,
}

impl<Ctx, K, F, C, S, G> Dimension<Ctx> for PerKey<K, F, C, S, G>
where
    Ctx: ?Sized,
    K: Eq + Hash + Clone + Send + Sync,
    F: RateFamily,
    C: Clock + Send + Sync,
    S: BuildHasher + Send + Sync,
    G: Fn(&Ctx) -> Option<K> + Send + Sync,
{
    fn take(&self, ctx: &Ctx, n: u64) -> Result<Taken, KeyedError> {
        let Some(key) = (self.key)(ctx) else {
            return Ok(Taken::Skipped);
        };
        let (admission, reset_after) = self.limiter.try_grant_reset(&key, n)?;
        Ok(taken(admission, reset_after))
    }

    fn give_back(&self, ctx: &Ctx, grant: Grant) {
        // The key function is a function of the request: the same key as at `take`.
        if let Some(key) = (self.key)(ctx) {
            self.limiter.refund(&key, grant);
        }
    }

    #[cfg(feature = "metrics")]
    fn limit(&self, ctx: &Ctx) -> u64 {
        (self.key)(ctx).map_or(0, |key| self.limiter.limit_for(&key))
    }
}

/// One limiter every request shares (a global or per-API limit).
pub(crate) struct Shared<L: ?Sized> {
    pub(crate) limiter: Arc<L>,
}

impl<Ctx: ?Sized, L: RateLimiter + Send + Sync + ?Sized> Dimension<Ctx> for Shared<L> {
    fn take(&self, _: &Ctx, n: u64) -> Result<Taken, KeyedError> {
        // A limiter of any kind: none says when it is whole again (the rules' global
        // limiters, whose kinds are known, do: `rules::live`).
        Ok(taken(self.limiter.try_grant(n)?, None))
    }

    fn give_back(&self, _: &Ctx, grant: Grant) {
        self.limiter.refund(grant);
    }

    #[cfg(feature = "metrics")]
    fn limit(&self, _: &Ctx) -> u64 {
        // Read after the decision (a concurrent `set_limit` may come between: the gauges
        // are a sample, not a decision).
        self.limiter.limit()
    }
}
