//! The Redis backend: one [`RedisLimiter`] per rule, a request's descriptors decided by
//! one [`RedisPolicy`] (one script where their keys share a slot: always on a single
//! server; across slots of a Cluster, admitted then refunded). Descriptors in shadow mode
//! are decided apart, after it, so that they never refuse the request.

use std::time::Duration;

use ringlimit::policy::PolicyDecision;
use ringlimit::{BucketQuota, Rate, WindowQuota};
use ringlimit_redis::{Algorithm, Connection, RedisLimiter, RedisPolicy};

use super::{Handle, Item, Verdict, UNLIMITED};
use crate::config;
use crate::matcher::{Limit, Rule};

/// The limiter of `rule` (`None` for an unlimited one).
pub(crate) fn limiter(
    connection: &Connection,
    rule: &Rule,
) -> Result<Option<RedisLimiter>, String> {
    let Limit::Counted {
        requests,
        unit,
        algorithm,
        burst,
        buckets,
    } = rule.limit
    else {
        return Ok(None);
    };
    let text = |e: ringlimit::ConfigError| e.to_string();
    // A limit of zero refuses everything: a window of one that every request exceeds is
    // not it, so zero is kept as a window of 0 the scripts refuse.
    let window = WindowQuota::per(requests.max(1), unit.duration()).map_err(text)?;
    let algorithm = match algorithm {
        config::Algorithm::FixedWindow => Algorithm::FixedWindow(window),
        config::Algorithm::SlidingWindow => {
            Algorithm::SlidingWindow(window.buckets(buckets.unwrap_or(10)).map_err(text)?)
        }
        config::Algorithm::SlidingLog => Algorithm::SlidingLog(window),
        config::Algorithm::TokenBucket => Algorithm::TokenBucket(
            BucketQuota::new(
                Rate::new(requests.max(1), unit.duration()).map_err(text)?,
                burst.unwrap_or(requests).max(1),
            )
            .map_err(text)?,
        ),
    };
    RedisLimiter::builder(connection, &rule.key, algorithm)
        // The server's bounds keep a counter's key under this (16 entries of 1 KiB each).
        .max_key_len(64 << 10)
        .build()
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The counters of a request, one per dimension of its policy.
struct Counters(Vec<Vec<u8>>);

/// Decides `items` on Redis, all or nothing across those not in shadow mode.
/// Redis did not decide: an error, or a failure policy decided in its place (Envoy's
/// `failure_mode_deny` is the place to choose what a gateway does then).
fn unanswered(source: ringlimit_redis::Source) -> String {
    format!("Redis did not answer ({} decided)", source.as_str())
}

pub(crate) async fn decide(items: &[Item<'_>]) -> Result<Vec<Verdict>, String> {
    let mut verdicts = vec![UNLIMITED; items.len()];
    let hits = items.iter().map(|i| i.hits).max().unwrap_or(1);
    let mut builder = RedisPolicy::<Counters>::builder();
    let mut counters = Vec::new();
    let mut members = Vec::new();
    for (at, item) in items.iter().enumerate() {
        let Handle::Redis(limiter) = item.handle else {
            continue;
        };
        if item.rule.shadow {
            continue;
        }
        if is_closed(item.rule) || exceeds(limiter, item.hits) {
            verdicts[at] = closed();
            continue;
        }
        let dim = counters.len();
        counters.push(item.counter.as_bytes().to_vec());
        members.push(at);
        builder = builder.dimension(&dim.to_string(), limiter, move |c: &Counters| {
            Some(c.0[dim].clone())
        });
    }
    let refused_early = verdicts.iter().any(|v| v.over);
    if !members.is_empty() && !refused_early {
        let policy = builder.build();
        let verdict = policy
            .check_n(&Counters(counters), hits)
            .await
            .map_err(|e| e.to_string())?;
        if !verdict.source.is_redis() {
            return Err(unanswered(verdict.source));
        }
        match verdict.decision {
            PolicyDecision::Admitted {
                remaining,
                tightest,
                ..
            } => {
                // The tightest dimension's count is known; the others have at least as
                // many left, and report it.
                let _ = tightest;
                for &at in &members {
                    verdicts[at] = Verdict {
                        over: false,
                        remaining,
                        reset: verdict.reset_after,
                    };
                }
            }
            PolicyDecision::Refused {
                dimension,
                available,
                retry_after,
            } => {
                for (dim, &at) in members.iter().enumerate() {
                    let refusing = dim.to_string() == dimension;
                    verdicts[at] = Verdict {
                        over: refusing,
                        remaining: if refusing { available } else { u64::MAX },
                        reset: if refusing {
                            retry_after
                        } else {
                            Duration::ZERO
                        },
                    };
                }
            }
        }
    }
    for (at, item) in items.iter().enumerate() {
        let Handle::Redis(limiter) = item.handle else {
            continue;
        };
        if !item.rule.shadow {
            continue;
        }
        verdicts[at] = if is_closed(item.rule) || exceeds(limiter, item.hits) {
            closed()
        } else {
            let v = limiter
                .check(item.counter, item.hits)
                .await
                .map_err(|e| e.to_string())?;
            if !v.source.is_redis() {
                return Err(unanswered(v.source));
            }
            Verdict {
                over: !v.decision.is_admitted(),
                remaining: match v.decision {
                    ringlimit::outcome::Decision::Admitted { remaining } => remaining,
                    ringlimit::outcome::Decision::Refused { available, .. } => available,
                },
                reset: v.reset_after,
            }
        };
    }
    Ok(verdicts)
}

/// Whether `hits` is more than `limiter` ever admits at once (refused without asking).
fn exceeds(limiter: &RedisLimiter, hits: u64) -> bool {
    limiter
        .algorithm()
        .capacity()
        .is_ok_and(|capacity| hits > capacity)
}

fn is_closed(rule: &Rule) -> bool {
    matches!(rule.limit, Limit::Counted { requests: 0, .. })
}

fn closed() -> Verdict {
    Verdict {
        over: true,
        remaining: 0,
        reset: Duration::MAX,
    }
}
