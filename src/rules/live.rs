//! A rule's live limiter: built fresh from its quota, reconfigured in place on a reload
//! (counts kept), and checked as one dimension of the rule set's policy.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use crate::cell::{LogConfig, SlidingConfig, WindowConfig};
use crate::clock::Clock;
use crate::keyed::{
    Buckets, FixedWindows, IpKey, Keyed, KeyedError, RateFamily, SlidingLogs, SlidingWindows, ToKey,
};
use crate::layout::Layout;
use crate::limiter::{Admission, Grant, RateLimiter};
use crate::policy::dimension::{taken, Dimension, Shared, Taken};
use crate::window::Window;
use crate::{BucketQuota, ConfigError, FixedWindow, SlidingLog, SlidingWindow, TokenBucket};

use super::request::{Key, KeySource, Keys};
use super::rule::{Quota, Rule};

/// A rule's limiter, kept across reloads while the rule's algorithm, key and window stay.
pub(crate) trait Live: Send + Sync {
    /// The policy dimension checking the key of rule number `rule` with this limiter; with
    /// `held_only`, a keyed limiter skips the keys it holds no cell for (a replaced limiter
    /// draining: such a key has nothing counted there, and needs no cell created).
    fn dimension(self: Arc<Self>, rule: usize, held_only: bool) -> Box<dyn Dimension<Keys>>;

    /// Changes the bound on keys held, keeping every key's counts (a keyed limiter's; a
    /// global rule's limiter holds no keys).
    fn set_max_keys(&self, _max_keys: usize) {}

    /// Whether [`set_max_keys`](Self::set_max_keys) can raise the bound to `max_keys` in
    /// place: not above the bound a keyed table was built for.
    fn holds_keys(&self, _max_keys: usize) -> bool {
        true
    }

    /// Changes the limit to `quota`'s, of the same algorithm and window, keeping the
    /// permits already counted; or says why it cannot (nothing changed then).
    fn retune(&self, quota: &Quota) -> Result<(), String>;
}

/// The live limiter of `rule`, fresh; `None` for an unlimited rule, which needs none. A
/// sliding log gets the room its ring has anyway ([`LogConfig::with_free_room`]): a raise
/// within it is made in place.
pub(crate) fn build<C>(rule: &Rule, clock: &C) -> Result<Option<Arc<dyn Live>>, ConfigError>
where
    C: Clock + Clone + Send + Sync + 'static,
{
    let clock = clock.clone();
    Ok(Some(match (&rule.key, rule.quota) {
        (_, Quota::Unlimited) => return Ok(None),
        (KeySource::Global, Quota::FixedWindow(quota)) => {
            Arc::new(FixedWindow::builder(quota).clock(clock).build())
        }
        (KeySource::Global, Quota::SlidingWindow(quota)) => {
            Arc::new(SlidingWindow::builder(quota).clock(clock).build())
        }
        (KeySource::Global, Quota::SlidingLog(quota)) => Arc::new(SlidingLog::with_config(
            LogConfig::with_free_room(quota)?,
            clock,
        )),
        (KeySource::Global, Quota::TokenBucket(quota)) => {
            Arc::new(TokenBucket::builder(quota).clock(clock).build())
        }
        (key, quota) if key.is_ip() => keyed::<IpKey, C>(quota, rule.max_keys, clock)?,
        (_, quota) => keyed::<String, C>(quota, rule.max_keys, clock)?,
    }))
}

fn keyed<K: RuleKey, C>(
    quota: Quota,
    max_keys: usize,
    clock: C,
) -> Result<Arc<dyn Live>, ConfigError>
where
    C: Clock + Send + Sync + 'static,
{
    Ok(match quota {
        Quota::FixedWindow(quota) => Arc::new(
            Keyed::<K, FixedWindows, C>::with_config(WindowConfig::new(quota)?, clock)
                .max_keys(max_keys),
        ),
        Quota::SlidingWindow(quota) => Arc::new(
            Keyed::<K, SlidingWindows, C>::with_config(SlidingConfig::new(quota)?, clock)
                .max_keys(max_keys),
        ),
        Quota::SlidingLog(quota) => Arc::new(
            Keyed::<K, SlidingLogs, C>::with_config(LogConfig::with_free_room(quota)?, clock)
                .max_keys(max_keys),
        ),
        Quota::TokenBucket(quota) => {
            Arc::new(Keyed::<K, Buckets, C>::with_clock(quota, clock).max_keys(max_keys))
        }
        Quota::Unlimited => return Err(ConfigError::Unlimited),
    })
}

/// A keyed limiter's key type: text (users, headers, routes, API keys) or an [`IpKey`].
trait RuleKey: Eq + Hash + Clone + Send + Sync + 'static + Borrow<Self::Lookup> {
    /// What a key is looked up by.
    type Lookup: ?Sized + Hash + Eq + for<'a> ToKey<'a, Self>;
    /// The lookup of `key`, if it is of this type.
    fn lookup(key: &Key) -> Option<&Self::Lookup>;
}

impl RuleKey for String {
    type Lookup = str;
    fn lookup(key: &Key) -> Option<&str> {
        match key {
            Key::Text(text) => Some(text),
            Key::Everyone | Key::Ip(_) => None,
        }
    }
}

impl RuleKey for IpKey {
    type Lookup = IpKey;
    fn lookup(key: &Key) -> Option<&IpKey> {
        match key {
            Key::Ip(ip) => Some(ip),
            Key::Everyone | Key::Text(_) => None,
        }
    }
}

/// A keyed limiter checking the key of rule number `rule` (with `held_only`, only the keys
/// it holds).
struct KeyedDimension<L> {
    limiter: Arc<L>,
    rule: usize,
    held_only: bool,
}

impl<K: RuleKey, F: RateFamily, C: Clock + Send + Sync> KeyedDimension<Keyed<K, F, C>> {
    /// The key this dimension decides on, if any.
    fn key<'k>(&self, keys: &'k Keys) -> Option<&'k K::Lookup> {
        let key = keys.get(self.rule).and_then(K::lookup)?;
        // A key not held has nothing counted (a cell is only dropped idle); one dropped
        // right after this is idle, and deciding on a fresh cell then is the same.
        (!self.held_only || self.limiter.holds(key)).then_some(key)
    }
}

impl<K: RuleKey, F: RateFamily, C: Clock + Send + Sync> Dimension<Keys>
    for KeyedDimension<Keyed<K, F, C>>
{
    fn take(&self, keys: &Keys, n: u64) -> Result<Taken, KeyedError> {
        let Some(key) = self.key(keys) else {
            return Ok(Taken::Skipped);
        };
        let (admission, reset_after) = self.limiter.try_grant_reset(key, n)?;
        Ok(taken(admission, reset_after))
    }

    fn give_back(&self, keys: &Keys, grant: Grant) {
        if let Some(key) = keys.get(self.rule).and_then(K::lookup) {
            self.limiter.refund(key, grant);
        }
    }

    #[cfg(feature = "metrics")]
    fn limit(&self, keys: &Keys) -> u64 {
        self.key(keys).map_or(0, |key| self.limiter.limit_for(key))
    }
}

/// One limiter shared by every request a global rule applies to, checking rule number
/// `rule`: the policy's own shared dimension, skipped for a request the rule does not apply
/// to.
struct SharedDimension<L> {
    shared: Shared<L>,
    rule: usize,
}

impl<L> SharedDimension<L> {
    fn new(limiter: Arc<L>, rule: usize) -> Self {
        Self {
            shared: Shared { limiter },
            rule,
        }
    }
}

impl<L: RateLimiter + Reset + Send + Sync> Dimension<Keys> for SharedDimension<L> {
    fn take(&self, keys: &Keys, n: u64) -> Result<Taken, KeyedError> {
        if keys.get(self.rule).is_none() {
            return Ok(Taken::Skipped);
        }
        let admission = self.shared.limiter.try_grant(n)?;
        let reset_after = match &admission {
            Admission::Granted(grant) => self.shared.limiter.reset_after(grant),
            Admission::Refused { .. } => None,
        };
        Ok(taken(admission, reset_after))
    }

    fn give_back(&self, keys: &Keys, grant: Grant) {
        self.shared.give_back(keys, grant);
    }

    #[cfg(feature = "metrics")]
    fn limit(&self, keys: &Keys) -> u64 {
        self.shared.limit(keys)
    }
}

/// When a global rule's limiter counts nothing any more, from one of its grants: what the
/// keyed families read from their cells (`Family::idle_at`), here from what the grant and
/// the limiter's configuration say, for the limiters a rule builds.
trait Reset {
    /// How long after `grant` (just made) the limiter counts nothing, if nothing else is
    /// admitted meanwhile.
    fn reset_after(&self, grant: &Grant) -> Option<Duration>;
}

/// Fixed and sliding windows: the grant's mark is the bucket (epoch) it was counted in,
/// which leaves the window `buckets` bucket widths after it began (a fixed window is one
/// bucket: its end).
impl<K, C: Clock, L: Layout> Reset for Window<K, C, L> {
    fn reset_after(&self, grant: &Grant) -> Option<Duration> {
        let width = u64::try_from(self.bucket_width().as_nanos()).ok()?;
        let epoch = u64::try_from(grant.ticket().mark()).ok()?;
        let ends = epoch.checked_add(self.buckets())?.checked_mul(width)?;
        Some(Duration::from_nanos(
            ends.saturating_sub(grant.ticket().made_at()),
        ))
    }
}

/// A log: the grant is its newest entry, counted for one window from its making.
impl<C: Clock> Reset for SlidingLog<C> {
    fn reset_after(&self, _: &Grant) -> Option<Duration> {
        Some(self.window())
    }
}

/// A token bucket: full again once the tokens missing after the grant are back, one per
/// period. An upper bound, by less than one period: the bucket may hold part of the next
/// token already, which `remaining` (whole tokens) does not count.
impl<C: Clock, L: Layout> Reset for TokenBucket<C, L> {
    fn reset_after(&self, grant: &Grant) -> Option<Duration> {
        let missing = self.burst().saturating_sub(grant.remaining());
        let nanos = u128::from(missing) * u128::from(self.rate().period_nanos());
        Some(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    }
}

/// The window limit of `quota`, which a retune only reaches for a window rule.
fn window_limit(quota: &Quota) -> Result<u64, String> {
    match quota {
        Quota::FixedWindow(quota) | Quota::SlidingWindow(quota) | Quota::SlidingLog(quota) => {
            Ok(quota.limit())
        }
        Quota::Unlimited | Quota::TokenBucket(_) => Err("its algorithm changed".into()),
    }
}

fn bucket_quota(quota: &Quota) -> Result<&BucketQuota, String> {
    match quota {
        Quota::TokenBucket(quota) => Ok(quota),
        _ => Err("its algorithm changed".into()),
    }
}

/// Changes a bucket of `rate` to `quota`'s rate and burst in two steps, `set_rate` and
/// `set_burst`, ordered so that the configuration between them is a valid one (of the two
/// mixes, one always is: their spans multiply to the old one's times the new one's). If the
/// second step fails, the first is undone (back to `rate` and `burst`), so that a failed
/// retune leaves the limiter as it was.
fn retune_bucket(
    (rate, burst): (crate::Rate, u64),
    quota: &BucketQuota,
    set_rate: impl Fn(crate::Rate) -> Result<(), ConfigError>,
    set_burst: impl Fn(u64) -> Result<(), ConfigError>,
) -> Result<(), String> {
    let (new_rate, new_burst) = (quota.rate(), quota.burst_size());
    // Two steps: if the second fails, the first is undone (its old value was valid with the
    // other old one), so that a failed retune changes nothing, as `Live::retune` promises.
    let result = if BucketQuota::new(rate, new_burst).is_ok() {
        set_burst(new_burst).and_then(|()| {
            set_rate(new_rate).inspect_err(|_| {
                let _ = set_burst(burst);
            })
        })
    } else {
        set_rate(new_rate).and_then(|()| {
            set_burst(new_burst).inspect_err(|_| {
                let _ = set_rate(rate);
            })
        })
    };
    result.map_err(|error| error.to_string())
}

/// `Live` for a keyed family whose configuration changes its limit with `set_limit`.
macro_rules! keyed_window {
    ($family:ty $(, $capacity:ident)?) => {
        impl<K: RuleKey, C: Clock + Send + Sync + 'static> Live for Keyed<K, $family, C> {
            fn dimension(
                self: Arc<Self>,
                rule: usize,
                held_only: bool,
            ) -> Box<dyn Dimension<Keys>> {
                Box::new(KeyedDimension { limiter: self, rule, held_only })
            }

            fn set_max_keys(&self, max_keys: usize) {
                Keyed::set_max_keys(self, max_keys);
            }

            fn holds_keys(&self, max_keys: usize) -> bool {
                Keyed::holds_keys(self, max_keys)
            }

            fn retune(&self, quota: &Quota) -> Result<(), String> {
                let limit = window_limit(quota)?;
                $(
                    let $capacity = self.config().max_limit();
                    if limit > $capacity {
                        return Err(format!(
                            "its limit rose above {}, the most its log was built to hold",
                            $capacity
                        ));
                    }
                )?
                self.config().set_limit(limit).map_err(|error| error.to_string())
            }
        }
    };
}

keyed_window!(FixedWindows);
keyed_window!(SlidingWindows);
keyed_window!(SlidingLogs, capacity);

impl<K: RuleKey, C: Clock + Send + Sync + 'static> Live for Keyed<K, Buckets, C> {
    fn dimension(self: Arc<Self>, rule: usize, held_only: bool) -> Box<dyn Dimension<Keys>> {
        Box::new(KeyedDimension {
            limiter: self,
            rule,
            held_only,
        })
    }

    fn set_max_keys(&self, max_keys: usize) {
        Keyed::set_max_keys(self, max_keys);
    }

    fn holds_keys(&self, max_keys: usize) -> bool {
        Keyed::holds_keys(self, max_keys)
    }

    fn retune(&self, quota: &Quota) -> Result<(), String> {
        let quota = bucket_quota(quota)?;
        let config = self.config();
        retune_bucket(
            (config.rate(), config.limit()),
            quota,
            |rate| config.set_rate(&self.clock(), rate),
            |burst| config.set_limit(&self.clock(), burst),
        )
    }
}

/// `Live` for a shared limiter whose limit changes with `RateLimiter::set_limit`.
macro_rules! shared_window {
    ($limiter:ty $(, $capacity:ident)?) => {
        impl<C: Clock + Send + Sync + 'static> Live for $limiter {
            fn dimension(self: Arc<Self>, rule: usize, _: bool) -> Box<dyn Dimension<Keys>> {
                Box::new(SharedDimension::new(self, rule))
            }

            fn retune(&self, quota: &Quota) -> Result<(), String> {
                let limit = window_limit(quota)?;
                $(
                    let $capacity = self.max_limit();
                    if limit > $capacity {
                        return Err(format!(
                            "its limit rose above {}, the most its log was built to hold",
                            $capacity
                        ));
                    }
                )?
                self.set_limit(limit).map_err(|error| error.to_string())
            }
        }
    };
}

shared_window!(FixedWindow<C>);
shared_window!(SlidingWindow<C>);
shared_window!(SlidingLog<C>, capacity);

impl<C: Clock + Send + Sync + 'static> Live for TokenBucket<C> {
    fn dimension(self: Arc<Self>, rule: usize, _: bool) -> Box<dyn Dimension<Keys>> {
        Box::new(SharedDimension::new(self, rule))
    }

    fn retune(&self, quota: &Quota) -> Result<(), String> {
        let quota = bucket_quota(quota)?;
        retune_bucket(
            (self.rate(), self.burst()),
            quota,
            |rate| self.set_rate(rate),
            |burst| self.set_burst(burst),
        )
    }
}

#[cfg(test)]
mod retune_bucket_tests {
    use std::cell::RefCell;

    use super::*;

    /// A retune whose second step fails undoes its first step.
    #[test]
    fn a_failed_second_step_undoes_the_first() {
        let old_rate = crate::Rate::per_second(10).unwrap();
        let quota = BucketQuota::per_second(20).unwrap().burst(40).unwrap();
        let calls = RefCell::new(Vec::new());
        let result = retune_bucket(
            (old_rate, 10),
            &quota,
            |rate| {
                calls.borrow_mut().push(format!("rate {rate:?}"));
                Err(ConfigError::ZeroLimit)
            },
            |burst| {
                calls.borrow_mut().push(format!("burst {burst}"));
                Ok(())
            },
        );
        assert!(result.is_err());
        let calls = calls.into_inner();
        assert_eq!(calls.last().unwrap(), "burst 10", "{calls:?}");
    }
}
