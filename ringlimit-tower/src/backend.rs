//! [`Backend`]: where decisions are made (in process or on Redis), and the [`Verdict`] the
//! layer answers from.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ringlimit::clock::Clock;
use ringlimit::policy::{Policy, PolicyDecision, PolicyError};
use ringlimit::rules::{RuleDecision, RuleSet};

use crate::client::{Client, ClientRequest};
use crate::quota::Quota;

/// How long a client is told to wait when a backend could not decide (a keyed limiter full
/// of live keys, a Redis error).
pub const RETRY_AFTER_UNAVAILABLE: Duration = Duration::from_secs(1);

/// A backend's decision on one request, with only what the backend knows for sure: the
/// layer's headers say nothing more.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Admitted: call the service.
    Admitted {
        /// The tightest policy that applied (`None`: none applied, no headers).
        policy: Option<Arc<str>>,
        /// What it has left, if known (not when a fallback decided).
        remaining: Option<u64>,
        /// When it is whole again (counts nothing any more), if known: the in-process
        /// backends' keyed limiters and a rule set's limiters say it, Redis says it, a
        /// fallback does not.
        reset_after: Option<Duration>,
        /// The policy's quota the request was decided under, if the backend knows it (a
        /// rule set does): `RateLimit-Policy` advertises it, unless the layer's builder
        /// was given the policy's quota ([`quota`](crate::RateLimitLayerBuilder::quota)).
        quota: Option<Quota>,
    },
    /// Refused by a limit: 429.
    Refused {
        /// The policy that refused.
        policy: Arc<str>,
        /// What it has available, if known.
        available: Option<u64>,
        /// When the same request could be admitted.
        retry_after: Duration,
        /// The policy's quota the request was refused under, if the backend knows it.
        quota: Option<Quota>,
    },
    /// The backend could not decide and refuses (a failure policy that fails closed, a
    /// keyed limiter full of live keys, an error): 503, the limit itself unknown.
    Unavailable {
        /// The policy concerned, if one.
        policy: Option<Arc<str>>,
        /// Why.
        reason: String,
        /// When to try again.
        retry_after: Duration,
        /// The policy's quota when the backend failed, if it knows it.
        quota: Option<Quota>,
    },
}

impl Verdict {
    /// A verdict from an in-process policy's decision or error. A
    /// [`Policy`](ringlimit::policy::Policy) does not know its dimensions' quotas: none in
    /// the verdict (the layer's builder is given them).
    ///
    /// ```
    /// use ringlimit::policy::PolicyDecision;
    /// use ringlimit_tower::Verdict;
    /// use std::time::Duration;
    /// let reset_after = Some(Duration::from_secs(3));
    /// let verdict = Verdict::from_policy(Ok(PolicyDecision::Admitted { remaining: 4, tightest: "ip", reset_after }));
    /// assert_eq!(verdict, Verdict::Admitted { policy: Some("ip".into()), remaining: Some(4), reset_after, quota: None });
    /// ```
    pub fn from_policy(decision: Result<PolicyDecision<'_>, PolicyError>) -> Self {
        match decision {
            Ok(PolicyDecision::Admitted { tightest: "", .. }) => Self::Admitted {
                policy: None,
                remaining: None,
                reset_after: None,
                quota: None,
            },
            Ok(PolicyDecision::Admitted {
                remaining,
                tightest,
                reset_after,
            }) => Self::Admitted {
                policy: Some(tightest.into()),
                remaining: Some(remaining),
                reset_after,
                quota: None,
            },
            Ok(PolicyDecision::Refused {
                dimension,
                available,
                retry_after,
            }) => Self::Refused {
                policy: dimension.into(),
                available: Some(available),
                retry_after,
                quota: None,
            },
            Err(PolicyError { dimension, error }) => Self::Unavailable {
                policy: Some(dimension),
                reason: error.to_string(),
                retry_after: RETRY_AFTER_UNAVAILABLE,
                quota: None,
            },
        }
    }

    /// Whether the request was admitted.
    ///
    /// ```
    /// use ringlimit_tower::Verdict;
    /// let admitted = Verdict::Admitted { policy: None, remaining: None, reset_after: None, quota: None };
    /// assert!(admitted.is_admitted());
    /// ```
    pub fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted { .. })
    }
}

/// A verdict now (in process) or later (over the network).
pub enum Decided {
    /// Decided.
    Now(Verdict),
    /// To be decided.
    Later(Pin<Box<dyn Future<Output = Verdict> + Send + 'static>>),
}

/// Where the layer's decisions are made: implemented for an in-process
/// [`Policy<Client>`](ringlimit::policy::Policy), a [`RuleSet`] (rules from a file,
/// reloaded), and with the `redis` feature `ringlimit_redis::RedisPolicy<Client>`.
///
/// ```
/// use std::sync::Arc;
/// use http::HeaderMap;
/// use ringlimit::policy::Policy;
/// use ringlimit::{FixedWindow, WindowQuota};
/// use ringlimit_tower::{Backend, Client, ClientRequest, Decided, Verdict};
/// let policy = Arc::new(Policy::<Client>::builder()
///     .shared("global", Arc::new(FixedWindow::new(WindowQuota::per_minute(1)?)))
///     .build());
/// let (client, headers) = (Client::new(None), HeaderMap::new());
/// let request = ClientRequest::new(&client, &headers);
/// assert!(matches!(Backend::decide(&policy, &request), Decided::Now(v) if v.is_admitted()));
/// assert!(matches!(Backend::decide(&policy, &request), Decided::Now(Verdict::Refused { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Backend: Send + Sync + 'static {
    /// Decides one request (one permit on every policy that applies to it). The verdict
    /// carries the deciding policy's quota where the backend knows it (a rule set knows its
    /// rules'; a policy's are given to the layer's builder): `RateLimit-Policy` advertises
    /// the quota the request was decided under, even if a reload changes it before the
    /// response is written.
    fn decide(this: &Arc<Self>, request: &ClientRequest<'_>) -> Decided;
}

impl Backend for Policy<Client> {
    fn decide(this: &Arc<Self>, request: &ClientRequest<'_>) -> Decided {
        Decided::Now(Verdict::from_policy(this.check(request.client())))
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> Backend for RuleSet<C> {
    fn decide(this: &Arc<Self>, request: &ClientRequest<'_>) -> Decided {
        Decided::Now(match this.check(request) {
            Ok(RuleDecision::Admitted { rule: None, .. }) => Verdict::Admitted {
                policy: None,
                remaining: None,
                reset_after: None,
                quota: None,
            },
            // The quota of the rules checked, not of those in force when the headers are
            // written (a reload may come in between).
            Ok(RuleDecision::Admitted {
                remaining,
                rule,
                reset_after,
                quota,
            }) => Verdict::Admitted {
                policy: rule,
                remaining: Some(remaining),
                reset_after,
                quota: Quota::from_rule(quota),
            },
            Ok(RuleDecision::Refused {
                rule,
                available,
                retry_after,
                quota,
            }) => Verdict::Refused {
                policy: rule,
                available: Some(available),
                retry_after,
                quota: Quota::from_rule(quota),
            },
            // Rare (a keyed rule full of live keys): the rule's quota read now, beside the
            // failed check.
            Err(error) => {
                let quota = this.quota(&error.dimension).and_then(Quota::from_rule);
                match Verdict::from_policy(Err(error)) {
                    Verdict::Unavailable {
                        policy,
                        reason,
                        retry_after,
                        ..
                    } => Verdict::Unavailable {
                        policy,
                        reason,
                        retry_after,
                        quota,
                    },
                    verdict => verdict,
                }
            }
        })
    }
}
