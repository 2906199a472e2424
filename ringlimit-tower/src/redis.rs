//! [`Backend`] for `ringlimit_redis::RedisPolicy<Client>` (the `redis` feature): limits
//! shared by many machines, each failure mode answered truthfully.

use std::sync::Arc;
use std::time::Duration;

use ringlimit::policy::PolicyDecision;
use ringlimit_redis::{PolicyVerdict, RedisPolicy, Source};

use crate::backend::{Backend, Decided, Verdict, RETRY_AFTER_UNAVAILABLE};
use crate::client::{Client, ClientRequest};

/// Decides on Redis. What the headers say depends on who decided
/// ([`Source`](ringlimit_redis::Source)):
///
/// | source | admitted | refused |
/// |---|---|---|
/// | Redis (or a lease, or unlimited) | `RateLimit` with `r`, and `t` when Redis gave a reset | 429, `r` and `t` |
/// | fail open | served, no `RateLimit` (nothing was counted) | — |
/// | local share | served, no `RateLimit` (the fleet's count is unknown) | 429, no `r` |
/// | fail closed | — | 503 `temporary-reduced-capacity`, no `RateLimit` |
///
/// A Redis error (not an outage: a wrong type, a script error) is a 503 too.
///
/// On a tokio runtime each decision runs as its own task, so a response dropped while
/// Redis decides (a client gone, a timeout) does not leave the grants of a multi-slot
/// policy unrefunded; the permits of a request decided but never served stay taken.
impl Backend for RedisPolicy<Client> {
    fn decide(this: &Arc<Self>, request: &ClientRequest<'_>) -> Decided {
        let policy = this.clone();
        let client = request.client().clone();
        let deciding = async move {
            match policy.check(&client).await {
                Ok(verdict) => from_verdict(verdict),
                Err(error) => Verdict::Unavailable {
                    policy: None,
                    reason: error.to_string(),
                    retry_after: RETRY_AFTER_UNAVAILABLE,
                    quota: None,
                },
            }
        };
        // Across slots or connections the check admits group by group and refunds the
        // earlier grants when a later group refuses. Dropped half-way (the client went, a
        // timeout layer), the refund would never run and the grants would leak. So on a
        // tokio runtime the decision is its own task: it runs to the end, refund included,
        // whatever becomes of the response.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let task = runtime.spawn(deciding);
                Decided::Later(Box::pin(async move {
                    task.await.unwrap_or_else(|error| Verdict::Unavailable {
                        policy: None,
                        reason: format!("the rate-limit decision failed: {error}"),
                        retry_after: RETRY_AFTER_UNAVAILABLE,
                        quota: None,
                    })
                }))
            }
            Err(_) => Decided::Later(Box::pin(deciding)),
        }
    }
}

/// The layer's verdict from Redis's, saying only what its source knows.
fn from_verdict(verdict: PolicyVerdict<'_>) -> Verdict {
    let PolicyVerdict {
        decision,
        source,
        reset_after,
    } = verdict;
    let fleet = source.is_redis();
    let reset = (fleet && reset_after > Duration::ZERO).then_some(reset_after);
    match decision {
        PolicyDecision::Admitted { tightest: "", .. } => Verdict::Admitted {
            policy: None,
            remaining: None,
            reset_after: None,
            quota: None,
        },
        PolicyDecision::Admitted {
            remaining,
            tightest,
            ..
        } => Verdict::Admitted {
            policy: Some(tightest.into()),
            remaining: fleet.then_some(remaining),
            reset_after: reset,
            quota: None,
        },
        PolicyDecision::Refused {
            dimension,
            retry_after,
            ..
        } if source == Source::FailClosed => Verdict::Unavailable {
            policy: Some(dimension.into()),
            reason: format!("the `{dimension}` limit cannot be checked now and fails closed"),
            retry_after,
            quota: None,
        },
        PolicyDecision::Refused {
            dimension,
            available,
            retry_after,
        } => Verdict::Refused {
            policy: dimension.into(),
            available: fleet.then_some(available),
            retry_after,
            quota: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(decision: PolicyDecision<'static>, source: Source) -> Verdict {
        from_verdict(PolicyVerdict {
            decision,
            source,
            reset_after: Duration::from_secs(3),
        })
    }

    #[test]
    fn says_only_what_the_source_knows() {
        let admitted = PolicyDecision::Admitted {
            remaining: 7,
            tightest: "ip",
            reset_after: Some(Duration::from_secs(3)),
        };
        assert_eq!(
            verdict(admitted.clone(), Source::Redis),
            Verdict::Admitted {
                policy: Some("ip".into()),
                remaining: Some(7),
                reset_after: Some(Duration::from_secs(3)),
                quota: None,
            }
        );
        for source in [Source::FailOpen, Source::LocalShare] {
            assert_eq!(
                verdict(admitted.clone(), source),
                Verdict::Admitted {
                    policy: Some("ip".into()),
                    remaining: None,
                    reset_after: None,
                    quota: None,
                }
            );
        }
        let refused = PolicyDecision::Refused {
            dimension: "ip",
            available: 0,
            retry_after: Duration::from_secs(2),
        };
        assert!(matches!(
            verdict(refused.clone(), Source::FailClosed),
            Verdict::Unavailable { .. }
        ));
        assert_eq!(
            verdict(refused, Source::LocalShare),
            Verdict::Refused {
                policy: "ip".into(),
                available: None,
                retry_after: Duration::from_secs(2),
                quota: None,
            }
        );
    }
}
