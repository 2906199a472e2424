//! Where counts live: in process ([`local`], the default) or on Redis ([`redis`]). Each
//! rule gets a [`Handle`] from its backend; a request's matched descriptors are decided
//! together, all or nothing.

pub mod local;
pub mod redis;

use std::sync::Arc;
use std::time::Duration;

use ringlimit::clock::TscClock;

use crate::matcher::{Limit, Rule};

/// One descriptor of a request, matched to its rule.
#[derive(Debug)]
pub struct Item<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// Its limiter.
    pub handle: &'a Handle,
    /// The counter's key.
    pub counter: &'a str,
    /// Hits to add.
    pub hits: u64,
}

/// A descriptor's decision, before shadow mode is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The limiter refused.
    pub over: bool,
    /// Left after the decision (`u64::MAX` where unknown or unlimited).
    pub remaining: u64,
    /// When the counter is whole again (for a refusal: when the same request could pass).
    pub reset: Duration,
}

/// A rule's limiter on its backend.
#[derive(Debug, Clone)]
pub enum Handle {
    /// Never counted.
    Unlimited,
    /// In process.
    Local(Arc<local::LocalLimiter>),
    /// On Redis.
    Redis(::ringlimit_redis::RedisLimiter),
}

/// The backend requests are counted on.
///
/// ```
/// use ringlimit_server::backend::Backend;
/// assert_eq!(Backend::local().name(), "local");
/// ```
#[derive(Debug, Clone)]
pub enum Backend {
    /// Keyed limiters in this process, on one clock.
    Local(TscClock),
    /// Redis through ringlimit-redis.
    Redis(::ringlimit_redis::Connection),
}

/// A rule the backend cannot hold.
#[derive(Debug)]
pub struct BackendError {
    /// The rule's id.
    pub rule: String,
    /// Why.
    pub message: String,
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "limit `{}`: {}", self.rule, self.message)
    }
}

impl std::error::Error for BackendError {}

impl Backend {
    /// The in-process backend.
    pub fn local() -> Self {
        Self::Local(TscClock::new())
    }

    /// Its name in logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Local(_) => "local",
            Self::Redis(_) => "redis",
        }
    }

    /// The limiter of `rule`.
    pub fn handle(&self, rule: &Rule) -> Result<Handle, BackendError> {
        let error = |message: String| BackendError {
            rule: rule.id.clone(),
            message,
        };
        if rule.limit == Limit::Unlimited {
            return Ok(Handle::Unlimited);
        }
        match self {
            Self::Local(clock) => local::LocalLimiter::new(&rule.limit, clock.clone())
                .map(|limiter| limiter.map_or(Handle::Unlimited, |l| Handle::Local(Arc::new(l))))
                .map_err(|e| error(e.to_string())),
            Self::Redis(connection) => redis::limiter(connection, rule)
                .map(|limiter| limiter.map_or(Handle::Unlimited, Handle::Redis))
                .map_err(error),
        }
    }

    /// Decides `items` all or nothing: if one that is not in shadow mode refuses, every
    /// grant is given back. An error says why the backend did not decide (Redis did not
    /// answer in time, or refused the call).
    pub async fn decide(&self, items: &[Item<'_>]) -> Result<Vec<Verdict>, String> {
        match self {
            Self::Local(_) => Ok(local::decide(items)),
            Self::Redis(_) => redis::decide(items).await,
        }
    }
}

/// What an unlimited descriptor reports (envoyproxy/ratelimit: `u32::MAX` remaining).
pub(crate) const UNLIMITED: Verdict = Verdict {
    over: false,
    remaining: u64::MAX,
    reset: Duration::ZERO,
};
