//! [`Policy`]: all-or-nothing limits across dimensions.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, TscClock};
use crate::keyed::{Keyed, KeyedError, RateFamily};
use crate::limiter::RateLimiter;

use super::dimension::{Dimension, PerKey, Shared, Taken};

/// All-or-nothing limits across dimensions (per user, per IP, per API, global): a request
/// is admitted iff every dimension that applies to it admits it. The dimensions are checked
/// in order, each taking a refundable grant; when one refuses, the grants already taken are
/// refunded, so no dimension is charged for a request another refused (the usual
/// check-one-after-the-other charges the user's quota for a request the global limit then
/// refuses).
///
/// **Guarantee.** No dimension ever admits more than its own limit: each is one of the
/// crate's limiters, exact on its own, and a refund only gives back what its grant took. A
/// request may be refused because a concurrent check briefly held a permit it then
/// refunded: the permit is held from its dimension's grant until a later dimension of the
/// same check refuses (one check, never a wait). How often that happens depends on the
/// order: `tests/rules/policy.rs` measures a key with one permit that a failing check takes and
/// refunds in a tight loop, refusing 59% of direct attempts on it when the refusing
/// dimension comes last, and none when it comes first. Put the dimensions most likely to
/// refuse first (global before per user): a dimension that refuses takes nothing.
///
/// **Limiters that cannot give a grant back** (the sliding log, keyed or not, and the
/// concurrency limiter: their `refund` restores nothing) are charged when a later dimension
/// refuses: put them last. (The `rules` feature's `RuleSet` checks its `sliding_log`
/// rules last for that reason.)
///
/// **`retry_after`** is the refusing dimension's: the dimensions after it are not asked
/// (asking would take and give back their permits, refusing concurrent checks for nothing,
/// and charge those that cannot give back), so a retry may be refused by a later dimension
/// with its own, longer retry time.
///
/// ```
/// use std::sync::Arc;
/// use ringlimit::keyed::{FixedWindows, Keyed};
/// use ringlimit::policy::{Policy, PolicyDecision};
/// use ringlimit::{FixedWindow, WindowQuota};
/// struct Request { user: u64 }
/// let per_user = Arc::new(Keyed::<u64, FixedWindows>::try_new(WindowQuota::per_minute(2)?)?);
/// let global = Arc::new(FixedWindow::new(WindowQuota::per_minute(3)?));
/// let policy = Policy::builder()
///     .per_key("user", per_user.clone(), |r: &Request| Some(r.user))
///     .shared("global", global)
///     .build();
/// assert!(policy.check(&Request { user: 1 })?.is_admitted());
/// assert!(policy.check(&Request { user: 1 })?.is_admitted());
/// assert!(policy.check(&Request { user: 2 })?.is_admitted());
/// // Global is spent: user 2's grant is given back, so user 2 still has 1 of 2.
/// match policy.check(&Request { user: 2 })? {
///     PolicyDecision::Refused { dimension, .. } => assert_eq!(dimension, "global"),
///     admitted => panic!("{admitted:?}"),
/// }
/// assert_eq!(per_user.available(&2), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Policy<Ctx: ?Sized> {
    dimensions: Vec<(Arc<str>, Box<dyn Dimension<Ctx>>)>,
    /// The clock the waits read and sleep on.
    pub(super) clock: Arc<dyn Clock>,
    /// Each dimension's metric handles, in the same order.
    #[cfg(feature = "metrics")]
    metrics: Vec<super::metrics::DimensionMetrics>,
}

/// The outcome of a policy check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision<'p> {
    /// Every dimension that applies admitted the request.
    Admitted {
        /// The permits left in the tightest dimension (`u64::MAX` if none applied).
        remaining: u64,
        /// That dimension's name (empty if none applied).
        tightest: &'p str,
        /// How long until that dimension counts nothing any more for this request (its
        /// key's window empty, its bucket full: the limit whole again), if no other request
        /// is admitted meanwhile; `None` when its limiter does not say (a limiter given to
        /// [`PolicyBuilder::shared`], whose kind the policy does not know) or none applied.
        /// Keyed dimensions ([`PolicyBuilder::per_key`]) say it, read in the same lookup as
        /// the decision. See [`PolicyDecision::reset_after`].
        reset_after: Option<Duration>,
    },
    /// A dimension refused; the grants taken from the dimensions before it were refunded.
    Refused {
        /// The first dimension, in the policy's order, that refused.
        dimension: &'p str,
        /// What it had available (fewer than asked).
        available: u64,
        /// When the same request could be admitted by that dimension, if no one else took
        /// its permits meanwhile (a later dimension may refuse then).
        retry_after: Duration,
    },
}

impl PolicyDecision<'_> {
    /// Whether the request was admitted.
    ///
    /// ```
    /// use ringlimit::policy::PolicyDecision;
    /// assert!(PolicyDecision::Admitted { remaining: 3, tightest: "user", reset_after: None }.is_admitted());
    /// ```
    pub fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted { .. })
    }

    /// When the limit that decided is whole again: for an admission, the tightest
    /// dimension's reset time if its limiter says (see [`PolicyDecision::Admitted`]); for a
    /// refusal, `None` (its `retry_after` says when the same request could be admitted).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ringlimit::cell::WindowConfig;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::policy::Policy;
    /// use ringlimit::WindowQuota;
    /// let clock = ManualClock::new();
    /// let config = WindowConfig::new(WindowQuota::per_second(5)?)?;
    /// let per_user = Keyed::<u64, FixedWindows, _>::with_config(config, clock.clone());
    /// let policy = Policy::builder().per_key("user", Arc::new(per_user), |user: &u64| Some(*user)).build();
    /// clock.advance(Duration::from_millis(300));
    /// // The window counts the permit until it ends, 700 ms from now.
    /// assert_eq!(policy.check(&7)?.reset_after(), Some(Duration::from_millis(700)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset_after(&self) -> Option<Duration> {
        match self {
            Self::Admitted { reset_after, .. } => *reset_after,
            Self::Refused { .. } => None,
        }
    }
}

/// A dimension's error: more permits than its limit, or a keyed dimension full of live
/// keys. The grants taken before it were refunded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The dimension.
    pub dimension: Arc<str>,
    /// What it said.
    pub error: KeyedError,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dimension `{}`: {}", self.dimension, self.error)
    }
}

impl std::error::Error for PolicyError {}

impl<Ctx: ?Sized> Policy<Ctx> {
    /// A policy of no dimensions yet.
    ///
    /// ```
    /// use ringlimit::policy::Policy;
    /// let policy = Policy::<()>::builder().build();
    /// assert!(policy.check(&())?.is_admitted());
    /// # Ok::<(), ringlimit::policy::PolicyError>(())
    /// ```
    pub fn builder() -> PolicyBuilder<Ctx> {
        PolicyBuilder {
            dimensions: Vec::new(),
            clock: Arc::new(TscClock::new()),
        }
    }

    /// Checks one permit for `ctx` on every dimension: see [`check_n`](Self::check_n).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::policy::Policy;
    /// use ringlimit::{FixedWindow, WindowQuota};
    /// let policy = Policy::<()>::builder()
    ///     .shared("global", Arc::new(FixedWindow::new(WindowQuota::per_second(1)?)))
    ///     .build();
    /// assert!(policy.check(&())?.is_admitted());
    /// assert!(!policy.check(&())?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self, ctx: &Ctx) -> Result<PolicyDecision<'_>, PolicyError> {
        self.check_n(ctx, 1)
    }

    /// Checks `n` permits for `ctx`: admitted iff every dimension that applies admits them,
    /// all or nothing (the grants of the dimensions before a refusal or an error are
    /// refunded before this returns).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::policy::{Policy, PolicyDecision};
    /// use ringlimit::{SlidingWindow, WindowQuota};
    /// let per_ip = Arc::new(Keyed::<u32, FixedWindows>::try_new(WindowQuota::per_second(5)?)?);
    /// let api = Arc::new(SlidingWindow::new(WindowQuota::per_second(3)?));
    /// let policy = Policy::builder()
    ///     .per_key("ip", per_ip, |ip: &u32| Some(*ip))
    ///     .shared("api", api)
    ///     .build();
    /// assert_eq!(
    ///     policy.check_n(&7, 2)?,
    ///     PolicyDecision::Admitted { remaining: 1, tightest: "api", reset_after: None }
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_n(&self, ctx: &Ctx, n: u64) -> Result<PolicyDecision<'_>, PolicyError> {
        self.check_from(0, ctx, n)
    }

    /// Checks dimensions `i..` (the grants of the earlier ones are held by the callers up the
    /// stack, which refund them if this refuses or fails: no allocation per check).
    fn check_from(&self, i: usize, ctx: &Ctx, n: u64) -> Result<PolicyDecision<'_>, PolicyError> {
        let Some((name, dimension)) = self.dimensions.get(i) else {
            return Ok(PolicyDecision::Admitted {
                remaining: u64::MAX,
                tightest: "",
                reset_after: None,
            });
        };
        // What to record is known once the rest of the check is (see `policy::metrics`).
        #[cfg(feature = "metrics")]
        let metrics = &self.metrics[i];
        let taken = dimension.take(ctx, n).map_err(|error| {
            #[cfg(feature = "metrics")]
            metrics.failed();
            PolicyError {
                dimension: name.clone(),
                error,
            }
        })?;
        // The limit, read only if a recorder takes the gauges (none installed: nothing read).
        #[cfg(feature = "metrics")]
        let limit = || dimension.limit(ctx);
        match taken {
            Taken::Skipped => self.check_from(i + 1, ctx, n),
            Taken::Refused {
                available,
                retry_after,
            } => {
                #[cfg(feature = "metrics")]
                metrics.refused(limit, available);
                Ok(PolicyDecision::Refused {
                    dimension: name,
                    available,
                    retry_after,
                })
            }
            Taken::Granted {
                grant,
                reset_after: my_reset,
            } => {
                let mine = grant.remaining();
                let rest = self.check_from(i + 1, ctx, n);
                #[cfg(feature = "metrics")]
                if matches!(rest, Ok(PolicyDecision::Admitted { .. })) {
                    metrics.allowed(limit, mine);
                }
                match rest {
                    Ok(PolicyDecision::Admitted {
                        remaining,
                        tightest,
                        reset_after,
                    }) => Ok(if mine < remaining {
                        PolicyDecision::Admitted {
                            remaining: mine,
                            tightest: name,
                            reset_after: my_reset,
                        }
                    } else {
                        PolicyDecision::Admitted {
                            remaining,
                            tightest,
                            reset_after,
                        }
                    }),
                    refused_or_failed => {
                        dimension.give_back(ctx, grant);
                        refused_or_failed
                    }
                }
            }
        }
    }

    /// The dimensions' names, in order.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::policy::Policy;
    /// use ringlimit::{FixedWindow, WindowQuota};
    /// let policy = Policy::<()>::builder()
    ///     .shared("global", Arc::new(FixedWindow::new(WindowQuota::per_second(1)?)))
    ///     .build();
    /// assert_eq!(policy.dimensions().collect::<Vec<_>>(), ["global"]);
    /// # Ok::<(), ringlimit::ConfigError>(())
    /// ```
    pub fn dimensions(&self) -> impl Iterator<Item = &str> {
        self.dimensions.iter().map(|(name, _)| &**name)
    }
}

impl<Ctx: ?Sized> fmt::Debug for Policy<Ctx> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("dimensions", &self.dimensions().collect::<Vec<_>>())
            .finish()
    }
}

/// Builds a [`Policy`], dimension by dimension, in the order they are checked (put the
/// most likely to refuse first: a refusal there takes no grant at all).
pub struct PolicyBuilder<Ctx: ?Sized> {
    dimensions: Vec<(Arc<str>, Box<dyn Dimension<Ctx>>)>,
    clock: Arc<dyn Clock>,
}

impl<Ctx: ?Sized + 'static> PolicyBuilder<Ctx> {
    /// A dimension limited per key: `key` finds the request's key (`None`: this dimension
    /// does not limit the request).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::keyed::{Buckets, Keyed};
    /// use ringlimit::policy::Policy;
    /// use ringlimit::BucketQuota;
    /// struct Request { api_key: Option<String> }
    /// let per_key = Arc::new(Keyed::<String, Buckets>::new(BucketQuota::per_second(1)?.burst(1)?));
    /// let policy = Policy::builder()
    ///     .per_key("api_key", per_key, |r: &Request| r.api_key.clone())
    ///     .build();
    /// assert!(policy.check(&Request { api_key: Some("k".into()) })?.is_admitted());
    /// assert!(!policy.check(&Request { api_key: Some("k".into()) })?.is_admitted());
    /// assert!(policy.check(&Request { api_key: None })?.is_admitted()); // not limited here
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn per_key<K, F, C, S, G>(
        mut self,
        name: &str,
        limiter: Arc<Keyed<K, F, C, S>>,
        key: G,
    ) -> Self
    where
        K: Eq + Hash + Clone + Send + Sync + 'static,
        F: RateFamily,
        C: Clock + Send + Sync + 'static,
        S: BuildHasher + Send + Sync + 'static,
        G: Fn(&Ctx) -> Option<K> + Send + Sync + 'static,
    {
        self.dimensions
            .push((name.into(), Box::new(PerKey { limiter, key })));
        self
    }

    /// A dimension every request shares (global, or one API's limit).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ringlimit::policy::Policy;
    /// use ringlimit::{RateLimiter, TokenBucket, BucketQuota};
    /// let global: Arc<dyn RateLimiter + Send + Sync> =
    ///     Arc::new(TokenBucket::new(BucketQuota::per_second(50_000)?));
    /// let policy = Policy::<()>::builder().shared("global", global).build();
    /// assert!(policy.check(&())?.is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shared<L: RateLimiter + Send + Sync + ?Sized + 'static>(
        mut self,
        name: &str,
        limiter: Arc<L>,
    ) -> Self {
        self.dimensions
            .push((name.into(), Box::new(Shared { limiter })));
        self
    }

    /// The clock [`check_within`](Policy::check_within) reads and sleeps on (default: a
    /// [`TscClock`], as every limiter's); give the dimensions' clock when it is a
    /// [`ManualClock`](crate::clock::ManualClock), so that a wait moves it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ringlimit::clock::{Clock, ManualClock};
    /// use ringlimit::policy::Policy;
    /// use ringlimit::{FixedWindow, WindowQuota};
    /// let clock = ManualClock::new();
    /// let global = FixedWindow::builder(WindowQuota::per_second(1)?).clock(clock.clone()).build();
    /// let policy = Policy::<()>::builder().shared("global", Arc::new(global)).clock(clock.clone()).build();
    /// assert!(policy.check(&())?.is_admitted());
    /// // Waits until the next window: the manual clock moves by the retry time.
    /// assert!(policy.check_within(&(), 1, Duration::from_secs(2))?.is_admitted());
    /// assert_eq!(clock.now_nanos(), 1_000_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock<C: Clock + 'static>(self, clock: C) -> Self {
        Self {
            clock: Arc::new(clock),
            ..self
        }
    }

    /// A dimension of the crate's own making (the rules' dimensions read their keys from
    /// a request's [`Keys`](crate::rules) rather than through a key function).
    #[cfg(feature = "rules")]
    pub(crate) fn dimension(mut self, name: &str, dimension: Box<dyn Dimension<Ctx>>) -> Self {
        self.dimensions.push((name.into(), dimension));
        self
    }

    /// The policy.
    ///
    /// ```
    /// use ringlimit::policy::Policy;
    /// assert_eq!(Policy::<()>::builder().build().dimensions().count(), 0);
    /// ```
    pub fn build(self) -> Policy<Ctx> {
        #[cfg(feature = "metrics")]
        super::metrics::describe();
        Policy {
            #[cfg(feature = "metrics")]
            metrics: self
                .dimensions
                .iter()
                .map(|(name, dimension)| {
                    super::metrics::DimensionMetrics::register(name, dimension.records_allowed())
                })
                .collect(),
            dimensions: self.dimensions,
            clock: self.clock,
        }
    }
}
