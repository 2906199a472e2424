//! [`RedisPolicy`]: all or nothing across dimensions, on Redis.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::cluster_routing::Slot;
use ringlimit::outcome::Decision;
use ringlimit::policy::PolicyDecision;

use crate::connection::Connection;
use crate::error::Error;
use crate::limiter::RedisLimiter;
use crate::reply::{Failure, Reply};
use crate::script;
use crate::verdict::Source;

type KeyOf<Ctx> = Box<dyn Fn(&Ctx) -> Option<Vec<u8>> + Send + Sync>;

/// A request limited on several dimensions at once (per user, per IP, per API, global),
/// all or nothing, on Redis: the in-process [`ringlimit::policy::Policy`] across machines,
/// with the same [`PolicyDecision`].
///
/// - Dimensions whose keys share a Cluster slot (on one server: all of them) are decided by
///   **one script**, atomically: each is looked at, and the permits are taken from all of
///   them only if every one admits. Nothing is ever given back. Give keys a common hash tag
///   (`{user:42}`) to get this on a Cluster.
/// - Across slots, the groups are decided in order, **admit then refund**: when a later
///   group refuses (or fails), the grants of the earlier ones are given back by a refund
///   script. Never over-admits; between the grant and the refund, a concurrent request may
///   be refused by the earlier dimension that would have been admitted. A refund that
///   cannot reach Redis is lost (an under-admission, never more).
/// - When a group's Redis is unavailable, each of its dimensions' failure policies decides.
///   Local shares taken before a later dimension refused are not given back
///   (under-admission). When Redis is back, a dimension's first admission on Redis also
///   takes what its local share admitted meanwhile, as a [`RedisLimiter`]'s does
///   ([`OnFailure::LocalShare`](crate::OnFailure::LocalShare)): no second burst.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::policy::PolicyDecision;
/// use ringlimit::{BucketQuota, WindowQuota};
/// use ringlimit_redis::{Algorithm, Connection, RedisLimiter, RedisPolicy};
/// struct Request { user: u64, api: &'static str }
/// let connection = Connection::open("redis://127.0.0.1:6379/")?;
/// let per_user = RedisLimiter::builder(&connection, "user", Algorithm::TokenBucket(BucketQuota::per_second(10)?)).build()?;
/// let per_api = RedisLimiter::builder(&connection, "api", Algorithm::SlidingWindow(WindowQuota::per_second(1000)?)).build()?;
/// let policy = RedisPolicy::builder()
///     .dimension("user", &per_user, |r: &Request| Some(r.user.to_string()))
///     .dimension("api", &per_api, |r: &Request| Some(r.api))
///     .build();
/// match policy.check(&Request { user: 42, api: "search" }).await?.decision {
///     PolicyDecision::Admitted { .. } => { /* serve */ }
///     PolicyDecision::Refused { dimension, retry_after, .. } => println!("{dimension}: retry in {retry_after:?}"),
/// }
/// # Ok(()) }
/// ```
pub struct RedisPolicy<Ctx: ?Sized> {
    dimensions: Vec<Dimension<Ctx>>,
}

struct Dimension<Ctx: ?Sized> {
    name: Arc<str>,
    limiter: RedisLimiter,
    key: KeyOf<Ctx>,
}

/// A policy's decision and who made it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::policy::PolicyDecision;
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Algorithm, RedisLimiter, RedisPolicy, Source};
/// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
/// let per_user = RedisLimiter::builder(&down, "user", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
/// let policy = RedisPolicy::builder().dimension("user", &per_user, |user: &u64| Some(user.to_string())).build();
/// let verdict = policy.check(&42).await?;
/// assert!(matches!(verdict.decision, PolicyDecision::Refused { dimension: "user", .. }));
/// assert_eq!(verdict.source, Source::FailClosed);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVerdict<'p> {
    /// The decision, as an in-process policy makes it.
    pub decision: PolicyDecision<'p>,
    /// Who decided: Redis, unless a dimension's failure policy did.
    pub source: Source,
    /// For the tightest (admitted) or the refusing dimension, how long until its limit is
    /// whole again (zero when a fallback decided).
    pub reset_after: Duration,
}

/// Builds a [`RedisPolicy`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ringlimit::WindowQuota;
/// use ringlimit_redis::{Algorithm, RedisLimiter, RedisPolicy};
/// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
/// let per_user = RedisLimiter::builder(&down, "user", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
/// let per_api = RedisLimiter::builder(&down, "api", Algorithm::FixedWindow(WindowQuota::per_second(1_000)?)).build()?;
/// let builder = RedisPolicy::builder().dimension("user", &per_user, |r: &(u64, &str)| Some(r.0.to_string()));
/// let policy = builder.dimension("api", &per_api, |r: &(u64, &str)| Some(r.1)).build();
/// assert_eq!(policy.dimensions().collect::<Vec<_>>(), ["user", "api"]);
/// # Ok(()) }
/// ```
pub struct RedisPolicyBuilder<Ctx: ?Sized> {
    dimensions: Vec<Dimension<Ctx>>,
}

/// One dimension's part of a request: its index, keys and permits.
struct Part {
    dim: usize,
    /// The request's key in this dimension.
    key: Vec<u8>,
    keys: Vec<Vec<u8>>,
    /// What Redis takes for this part: the request's permits and the dimension's unseen
    /// ones (what its local share admitted during an outage, see `Fallback::unseen`).
    n: u64,
}

/// What a decided group left behind: its parts, to refund if a later group refuses.
struct Granted<'a> {
    parts: &'a [Part],
    tokens: Vec<i64>,
    /// The server's time of the grant.
    at: u64,
}

impl<Ctx: ?Sized> RedisPolicy<Ctx> {
    /// An empty policy. Each dimension is decided on its limiter's connection; dimensions
    /// on different connections are decided apart (admit then refund).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit_redis::{RedisPolicy, Source};
    /// let none = RedisPolicy::<str>::builder().build();
    /// let verdict = none.check("anything").await?; // no dimension applies: admitted
    /// assert!(verdict.decision.is_admitted() && verdict.source == Source::Unlimited);
    /// # Ok(()) }
    /// ```
    pub fn builder() -> RedisPolicyBuilder<Ctx> {
        RedisPolicyBuilder {
            dimensions: Vec::new(),
        }
    }

    /// Checks one permit on every dimension that applies to `ctx`.
    ///
    /// Errors: as [`check_n`](Self::check_n).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, OnFailure, RedisLimiter, RedisPolicy, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "user", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).on_failure(OnFailure::Open).build()?;
    /// let policy = RedisPolicy::builder().dimension("user", &per_user, |user: &u64| Some(user.to_string())).build();
    /// let verdict = policy.check(&42).await?;
    /// assert!(verdict.decision.is_admitted() && verdict.source == Source::FailOpen);
    /// # Ok(()) }
    /// ```
    pub async fn check(&self, ctx: &Ctx) -> Result<PolicyVerdict<'_>, Error> {
        self.check_n(ctx, 1).await
    }

    /// Takes `n` permits on every dimension that applies to `ctx` (its key function says
    /// `Some`), all or nothing.
    ///
    /// Errors: a dimension's [`Error::ExceedsLimit`] or [`Error::KeyTooLong`], and
    /// [`Error::SharedKey`] when two dimensions would decide on one Redis key, before anything
    /// is taken; the server's own errors ([`Error::WrongType`], …) after giving back what was
    /// taken.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, Error, RedisLimiter, RedisPolicy};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "user", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
    /// let policy = RedisPolicy::builder().dimension("user", &per_user, |user: &u64| Some(user.to_string())).build();
    /// let error = policy.check_n(&42, 11).await.unwrap_err(); // refused before anything is taken
    /// assert_eq!(error, Error::ExceedsLimit { requested: 11, limit: 10 });
    /// # Ok(()) }
    /// ```
    pub async fn check_n(&self, ctx: &Ctx, n: u64) -> Result<PolicyVerdict<'_>, Error> {
        let mut parts = Vec::with_capacity(self.dimensions.len());
        for (dim, dimension) in self.dimensions.iter().enumerate() {
            if let Some(key) = (dimension.key)(ctx) {
                let inner = dimension.limiter.inner();
                inner.check_request(&key, n)?;
                if !inner.params.unlimited {
                    let unseen = if n > 0 {
                        inner.fallback.unseen(&key, n, inner.params.capacity)
                    } else {
                        0
                    };
                    parts.push(Part {
                        dim,
                        keys: inner.keys(&key),
                        key,
                        n: n + unseen,
                    });
                }
            }
        }
        for (i, part) in parts.iter().enumerate() {
            if parts[..i].iter().any(|other| other.keys[0] == part.keys[0]) {
                return Err(Error::SharedKey {
                    dimension: self.dimensions[part.dim].name.to_string(),
                });
            }
        }
        let groups = self.groups(&parts);
        let mut granted: Vec<Granted<'_>> = Vec::new();
        let mut tightest: Option<(u64, usize, Duration)> = None;
        let mut source = Source::Redis;
        for group in groups {
            match self.decide(group).await {
                Ok(reply) => {
                    if let Some(refusing) = reply.first_refusal {
                        self.refund(&granted).await;
                        let dim = group[refusing].dim;
                        let verdict = reply.verdict(refusing);
                        let (available, retry_after) = match verdict.decision {
                            Decision::Refused {
                                available,
                                retry_after,
                            } => (available, retry_after),
                            Decision::Admitted { remaining } => (remaining, Duration::ZERO),
                        };
                        return Ok(PolicyVerdict {
                            decision: PolicyDecision::Refused {
                                dimension: &self.dimensions[dim].name,
                                available,
                                retry_after,
                            },
                            source: Source::Redis,
                            reset_after: verdict.reset_after,
                        });
                    }
                    for (i, part) in group.iter().enumerate() {
                        let d = reply.dims[i];
                        if tightest.is_none_or(|(left, _, _)| d.left < left) {
                            tightest = Some((d.left, part.dim, Duration::from_micros(d.reset_us)));
                        }
                    }
                    granted.push(Granted {
                        parts: group,
                        tokens: reply.dims.iter().map(|d| d.token).collect(),
                        at: reply.now_us,
                    });
                }
                Err(Failure::Error(error)) => {
                    self.refund(&granted).await;
                    return Err(error);
                }
                Err(Failure::Unavailable) => {
                    for part in group {
                        let dimension = &self.dimensions[part.dim];
                        let verdict = dimension
                            .limiter
                            .inner()
                            .fallback
                            .decide(&part.key, n, true);
                        source = verdict.source;
                        match verdict.decision {
                            Decision::Refused {
                                available,
                                retry_after,
                            } => {
                                self.refund(&granted).await;
                                return Ok(PolicyVerdict {
                                    decision: PolicyDecision::Refused {
                                        dimension: &dimension.name,
                                        available,
                                        retry_after,
                                    },
                                    source,
                                    reset_after: Duration::ZERO,
                                });
                            }
                            Decision::Admitted { remaining } => {
                                if tightest.is_none_or(|(left, _, _)| remaining < left) {
                                    tightest = Some((remaining, part.dim, Duration::ZERO));
                                }
                            }
                        }
                    }
                }
            }
        }
        // Admitted: Redis took the unseen permits of every part it granted, once.
        for group in &granted {
            for part in group.parts.iter().filter(|part| part.n > n) {
                let inner = self.dimensions[part.dim].limiter.inner();
                inner.fallback.synced(&part.key);
            }
        }
        Ok(match tightest {
            Some((remaining, dim, reset_after)) => PolicyVerdict {
                decision: PolicyDecision::Admitted {
                    remaining,
                    tightest: &self.dimensions[dim].name,
                    // What the verdict says, zero (a fallback) being "not known".
                    reset_after: (reset_after > Duration::ZERO).then_some(reset_after),
                },
                source,
                reset_after,
            },
            None => PolicyVerdict {
                decision: PolicyDecision::Admitted {
                    remaining: u64::MAX,
                    tightest: "",
                    reset_after: None,
                },
                source: Source::Unlimited,
                reset_after: Duration::ZERO,
            },
        })
    }

    /// The dimensions' names, in order.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter, RedisPolicy};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_ip = RedisLimiter::builder(&down, "ip", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
    /// let policy = RedisPolicy::builder().dimension("ip", &per_ip, |ip: &str| Some(ip.to_owned())).build();
    /// assert_eq!(policy.dimensions().collect::<Vec<_>>(), ["ip"]);
    /// # Ok(()) }
    /// ```
    pub fn dimensions(&self) -> impl Iterator<Item = &str> {
        self.dimensions.iter().map(|d| &*d.name)
    }

    /// The parts in groups that one script can decide: consecutive parts on one connection
    /// and, on a Cluster, in one slot (a policy lists co-located dimensions together; parts
    /// of one slot apart from each other are decided apart, still all or nothing by refunds).
    fn groups<'a>(&self, parts: &'a [Part]) -> Vec<&'a [Part]> {
        let together = |a: &Part, b: &Part| {
            let (ca, cb) = (self.connection_of(a), self.connection_of(b));
            ca.same_as(cb)
                && (!ca.is_cluster() || Slot::for_key(&a.keys[0]) == Slot::for_key(&b.keys[0]))
        };
        let mut groups = Vec::new();
        let mut start = 0;
        for i in 1..=parts.len() {
            if i == parts.len() || !together(&parts[start], &parts[i]) {
                groups.push(&parts[start..i]);
                start = i;
            }
        }
        groups
    }

    fn connection_of(&self, part: &Part) -> &Connection {
        &self.dimensions[part.dim].limiter.inner().connection
    }

    async fn decide(&self, group: &[Part]) -> Result<Reply, Failure> {
        let code = if group.len() == 1 {
            script::decide(self.dimensions[group[0].dim].limiter.inner().params.code)
        } else {
            script::policy()
        };
        let mut args = vec![b"1".to_vec(), group.len().to_string().into_bytes()];
        let mut keys = Vec::new();
        for part in group {
            self.dimensions[part.dim]
                .limiter
                .inner()
                .push_args(&mut args, part.n);
            keys.extend(part.keys.iter().cloned());
        }
        let reply = self
            .connection_of(&group[0])
            .run(code, &keys, &args)
            .await?;
        Reply::parse(&reply, group.len()).map_err(Failure::Error)
    }

    /// Gives back the grants of the groups decided so far (best effort: a refund that
    /// cannot reach Redis leaves an under-admission).
    async fn refund(&self, granted: &[Granted<'_>]) {
        for group in granted {
            let mut args = vec![group.parts.len().to_string().into_bytes()];
            let mut keys = Vec::new();
            for (part, token) in group.parts.iter().zip(&group.tokens) {
                self.dimensions[part.dim]
                    .limiter
                    .inner()
                    .push_args(&mut args, part.n);
                args.push(token.to_string().into_bytes());
                args.push(group.at.to_string().into_bytes());
                keys.extend(part.keys.iter().cloned());
            }
            let _ = self
                .connection_of(&group.parts[0])
                .run(script::refund(), &keys, &args)
                .await;
        }
    }
}

impl<Ctx: ?Sized> RedisPolicyBuilder<Ctx> {
    /// Adds a dimension: `limiter`, keyed by what `key` returns for a request (`None`: the
    /// dimension does not apply to it).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter, RedisPolicy, Source};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "user", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
    /// // Anonymous requests (`None`) are not limited per user.
    /// let policy = RedisPolicy::builder().dimension("user", &per_user, |user: &Option<u64>| user.map(|u| u.to_string())).build();
    /// assert_eq!(policy.check(&None).await?.source, Source::Unlimited);
    /// # Ok(()) }
    /// ```
    pub fn dimension<K, F>(mut self, name: &str, limiter: &RedisLimiter, key: F) -> Self
    where
        K: AsRef<[u8]>,
        F: Fn(&Ctx) -> Option<K> + Send + Sync + 'static,
    {
        self.dimensions.push(Dimension {
            name: name.into(),
            limiter: limiter.clone(),
            key: Box::new(move |ctx| key(ctx).map(|k| k.as_ref().to_vec())),
        });
        self
    }

    /// The policy.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use ringlimit::WindowQuota;
    /// use ringlimit_redis::{Algorithm, RedisLimiter, RedisPolicy};
    /// # let down = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")?.timeout(std::time::Duration::from_millis(20));
    /// let per_user = RedisLimiter::builder(&down, "user", Algorithm::FixedWindow(WindowQuota::per_second(10)?)).build()?;
    /// let policy = RedisPolicy::builder().dimension("user", &per_user, |user: &u64| Some(user.to_string())).build();
    /// assert_eq!(format!("{policy:?}"), r#"RedisPolicy { dimensions: ["user"] }"#);
    /// # Ok(()) }
    /// ```
    pub fn build(self) -> RedisPolicy<Ctx> {
        RedisPolicy {
            dimensions: self.dimensions,
        }
    }
}

impl<Ctx: ?Sized> fmt::Debug for RedisPolicy<Ctx> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPolicy")
            .field("dimensions", &self.dimensions().collect::<Vec<_>>())
            .finish()
    }
}
