//! Waits for a key's permits: blocking ([`Keyed::acquire_key`]) and, with the `tokio`
//! feature, async ([`Keyed::until_key_ready`], governor's name).
//!
//! A wait repeats one step, as the single limiters' waits do for the window family: take
//! the permits if the key's cell admits them, else sleep the retry time it answered (at
//! least 1 ns, so a zero retry time cannot spin) and ask again. A refusal no reading of
//! the clock can end is [`KeyedError::TimeExhausted`]; more permits than the limit and a
//! new key refused by a full limiter end the wait at once with their errors.

use std::hash::{BuildHasher, Hash};
use std::time::Duration;

use crate::clock::Clock;
use crate::limiter::{nanos, Decision};

use super::error::KeyedError;
use super::family::RateFamily;
use super::key::ToKey;
use super::limiter::Keyed;

/// What one step of a key's wait says: done, or sleep this long first.
enum Step {
    Ready,
    Sleep(Duration),
}

impl<K: Eq + Hash, F: RateFamily, C: Clock, S: BuildHasher> Keyed<K, F, C, S> {
    /// Blocks until one permit for `key` is granted; the time waited on the limiter's clock
    /// (a [`ManualClock`](crate::clock::ManualClock) moves instead of sleeping).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// let limits: Keyed<&str, FixedWindows, _> =
    ///     Keyed::try_with_clock(WindowQuota::per_second(1)?, ManualClock::new())?;
    /// assert_eq!(limits.acquire_key("alice")?, Duration::ZERO);
    /// assert_eq!(limits.acquire_key("alice")?, Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_key<'k, Q>(&self, key: &'k Q) -> Result<Duration, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        self.acquire_key_n(key, 1)
    }

    /// Blocks until `n` permits for `key` are granted at once; the time waited.
    /// [`KeyedError::ExceedsLimit`] at once for more than the limit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::clock::ManualClock;
    /// use ringlimit::keyed::{Buckets, Keyed, KeyedError};
    /// use ringlimit::BucketQuota;
    /// let limits: Keyed<u64, Buckets, _> =
    ///     Keyed::with_clock(BucketQuota::per_second(10)?.burst(2)?, ManualClock::new());
    /// assert_eq!(limits.acquire_key_n(&1, 2)?, Duration::ZERO);
    /// assert_eq!(limits.acquire_key_n(&1, 2)?, Duration::from_millis(200));
    /// assert!(matches!(limits.acquire_key_n(&1, 3), Err(KeyedError::ExceedsLimit(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_key_n<'k, Q>(&self, key: &'k Q, n: u64) -> Result<Duration, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        let clock = self.clock();
        let start = clock.now_nanos();
        loop {
            match self.step(key, n)? {
                Step::Ready => return Ok(Duration::from_nanos(clock.now_nanos() - start)),
                Step::Sleep(retry_after) => clock.sleep(retry_after),
            }
        }
    }

    /// Waits, on tokio's timer, until one permit for `key` is granted; the time waited on
    /// the limiter's clock. Dropping the future takes nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringlimit::keyed::{FixedWindows, Keyed};
    /// use ringlimit::WindowQuota;
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let limits: Keyed<String, FixedWindows> =
    ///         Keyed::try_new(WindowQuota::per(1, Duration::from_millis(10))?)?;
    ///     limits.until_key_ready("alice").await?;
    ///     limits.until_key_ready("alice").await?; // about 10 ms later
    ///     assert!(limits.until_key_ready("bob").await? < Duration::from_millis(1));
    ///     Ok(())
    /// }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn until_key_ready<'k, Q>(&self, key: &'k Q) -> Result<Duration, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        self.until_key_n_ready(key, 1).await
    }

    /// Waits, on tokio's timer, until `n` permits for `key` are granted at once; the time
    /// waited. [`KeyedError::ExceedsLimit`] at once for more than the limit.
    ///
    /// ```
    /// use ringlimit::keyed::{Buckets, Keyed, KeyedError};
    /// use ringlimit::BucketQuota;
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let limits: Keyed<u64, Buckets> = Keyed::new(BucketQuota::per_second(100)?.burst(4)?);
    ///     limits.until_key_n_ready(&1, 4).await?;
    ///     limits.until_key_n_ready(&1, 2).await?; // 20 ms later
    ///     assert!(matches!(limits.until_key_n_ready(&1, 5).await, Err(KeyedError::ExceedsLimit(_))));
    ///     Ok(())
    /// }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn until_key_n_ready<'k, Q>(&self, key: &'k Q, n: u64) -> Result<Duration, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        let start = self.clock().now_nanos();
        loop {
            match self.step(key, n)? {
                Step::Ready => {
                    return Ok(Duration::from_nanos(self.clock().now_nanos() - start));
                }
                Step::Sleep(retry_after) => tokio::time::sleep(retry_after).await,
            }
        }
    }

    /// One step of a wait: takes the permits, or says how long to sleep before asking again.
    fn step<'k, Q>(&self, key: &'k Q, n: u64) -> Result<Step, KeyedError>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToKey<'k, K> + ?Sized,
    {
        match self.try_acquire_n(key, n)? {
            Decision::Admitted { .. } => Ok(Step::Ready),
            Decision::Refused { retry_after, .. } => {
                let now = self.clock().now_nanos();
                if nanos(retry_after) == u64::MAX || now.checked_add(nanos(retry_after)).is_none() {
                    return Err(KeyedError::TimeExhausted);
                }
                Ok(Step::Sleep(retry_after.max(Duration::from_nanos(1))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::cell::WindowConfig;
    use crate::clock::{Clock, ManualClock};
    use crate::keyed::{Buckets, FixedWindows, Keyed, KeyedError, SlidingLogs};
    use crate::{BucketQuota, ConfigError, WindowQuota};

    #[test]
    fn a_blocking_wait_sleeps_each_retry_time_on_the_limiters_clock() {
        let clock = ManualClock::new();
        let limits: Keyed<&str, Buckets, _> =
            Keyed::with_clock(BucketQuota::per_second(4).unwrap(), clock.clone());
        for _ in 0..4 {
            assert_eq!(limits.acquire_key("k").unwrap(), Duration::ZERO);
        }
        assert_eq!(limits.acquire_key("k").unwrap(), Duration::from_millis(250));
        assert_eq!(clock.now_nanos(), 250_000_000);
        // Another key waits for nothing: its bucket is its own.
        assert_eq!(limits.acquire_key_n("other", 4).unwrap(), Duration::ZERO);
    }

    #[test]
    fn a_wait_for_more_than_the_limit_or_a_full_limiter_ends_at_once() {
        let clock = ManualClock::new();
        let quota = WindowQuota::per_second(2).unwrap();
        let limits: Keyed<u64, FixedWindows, _> = Keyed::try_with_clock(quota, clock.clone())
            .unwrap()
            .max_keys(1);
        assert!(matches!(
            limits.acquire_key_n(&1, 3),
            Err(KeyedError::ExceedsLimit(_))
        ));
        assert_eq!(limits.acquire_key(&1), Ok(Duration::ZERO));
        assert_eq!(
            limits.acquire_key(&2),
            Err(KeyedError::Full { max_keys: 1 })
        );
        assert_eq!(clock.now_nanos(), 0);
    }

    #[test]
    fn a_window_family_built_from_a_quota_refuses_one_its_cells_cannot_hold() {
        let too_many = WindowQuota::per_second(WindowConfig::MAX_LIMIT + 1).unwrap();
        assert!(matches!(
            Keyed::<u64, FixedWindows>::try_new(too_many),
            Err(ConfigError::LimitTooLarge { .. })
        ));
        let fits = WindowQuota::per_second(3).unwrap();
        let logs: Keyed<String, SlidingLogs> = Keyed::try_new(fits).unwrap();
        assert_eq!(logs.available("alice"), 3);
    }

    #[test]
    fn reset_after_is_when_the_key_counts_nothing_and_creates_nothing() {
        let clock = ManualClock::new();
        let quota = WindowQuota::per_second(5).unwrap();
        let limits: Keyed<String, FixedWindows, _> =
            Keyed::try_with_clock(quota, clock.clone()).unwrap();
        assert_eq!(limits.reset_after("alice"), None);
        assert!(limits.is_empty());
        clock.advance(Duration::from_millis(300));
        assert!(limits.try_acquire("alice"));
        assert_eq!(
            limits.reset_after("alice"),
            Some(Duration::from_millis(700))
        );
        clock.advance(Duration::from_millis(700));
        assert_eq!(limits.reset_after("alice"), None);
    }

    #[test]
    fn borrowed_str_keys_are_looked_up_as_str() {
        let name = String::from("alice");
        let limits: Keyed<&str, Buckets> = Keyed::new(BucketQuota::per_minute(1).unwrap());
        assert!(limits.try_acquire(name.as_str()));
        assert!(!limits.try_acquire("alice"));
        assert!(!limits.try_acquire(&"alice"));
        assert_eq!(limits.len(), 1);
    }
}
