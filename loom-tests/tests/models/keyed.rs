//! Loom models of keyed limiters (`ringlimit::keyed`): the protocol around the map (the
//! reservation that bounds the keys, creating a key, dropping idle ones) with the map
//! replaced by a stand-in whose lock loom models, giving the guarantees scc's bucket locks
//! give (a request on a key under a shared lock, insertion and removal under an exclusive
//! one).
//!
//! Run: `bash loom-tests/run keyed::`

use std::time::Duration;

use loom::sync::Arc;
use loom_tests::spawn_with;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{Buckets, FixedWindows, InFlight, Keyed, KeyedError};
use ringlimit::WindowQuota;
use ringlimit::{BucketQuota, ConcurrencyQuota, Rate};

type Limits = Keyed<u64, FixedWindows, ManualClock>;

fn limits(limit: u64, max_keys: usize, clock: &ManualClock) -> Arc<Limits> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(10)).unwrap();
    let config = WindowConfig::new(quota).unwrap();
    Arc::new(Keyed::with_config(config, clock.clone()).max_keys(max_keys))
}

/// Two threads create the same new key at once (limit 1): one cell wins, so exactly one
/// permit is admitted, and the bound's count is the map's.
#[test]
fn two_threads_creating_one_key_get_one_cell() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 4, &clock);
        let other = spawn_with(&shared, |shared| shared.try_acquire(&7));
        let mine = shared.try_acquire(&7);
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "admitted: {mine} and {theirs}");
        assert_eq!(shared.len(), 1);
        assert!(!shared.try_acquire(&7));
    });
}

/// An idle key (its window passed) is taken again while a sweep drops idle keys: the sweep
/// drops it only before the request (which then creates a fresh cell) or not at all, never
/// under it, so the permit taken is never lost: a second request in the same window is
/// refused.
#[test]
fn a_sweep_racing_a_request_never_drops_a_live_cell() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 4, &clock);
        assert!(shared.try_acquire(&7));
        clock.advance(Duration::from_nanos(10));
        let sweeper = spawn_with(&shared, |shared| shared.evict_idle());
        let admitted = shared.try_acquire(&7);
        let dropped = sweeper.join().unwrap();
        assert!(admitted);
        assert!(dropped <= 1);
        assert_eq!(
            shared.len(),
            1,
            "the key taken again is held (dropped {dropped})"
        );
        assert!(!shared.try_acquire(&7), "the permit taken was lost");
    });
}

/// Two new keys race for the last place of a limiter bounded at 1 (limit 1 per window, the
/// clock still, so no key goes idle): exactly one gets in, the other is refused as
/// `Full`, and the map never holds two keys.
#[test]
fn racing_inserts_never_pass_the_key_bound() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 1, &clock);
        let other = spawn_with(&shared, |shared| shared.try_acquire_n(&2, 1));
        let mine = shared.try_acquire_n(&1, 1);
        let theirs = other.join().unwrap();
        let full = [&mine, &theirs]
            .iter()
            .filter(|r| matches!(r, Err(KeyedError::Full { max_keys: 1 })))
            .count();
        let admitted = [&mine, &theirs]
            .iter()
            .filter(|r| matches!(r, Ok(d) if d.is_admitted()))
            .count();
        assert_eq!((admitted, full), (1, 1), "{mine:?} {theirs:?}");
        assert_eq!(shared.len(), 1);
    });
}

/// Buckets: a sweep racing a request on a full bucket (burst 1, one permit an hour) while
/// the burst is raised to 2. Kept or dropped, the key ends with the raised burst less the
/// permit taken: a dropped full bucket comes back as the kept one would have converted
/// (full stays full), and a bucket in debt is never dropped.
#[test]
fn a_sweep_racing_a_request_and_a_raise_on_a_bucket_loses_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let quota = BucketQuota::new(Rate::every(Duration::from_secs(3600)).unwrap(), 1).unwrap();
        let shared: Arc<Keyed<u64, Buckets, ManualClock>> =
            Arc::new(Keyed::with_clock(quota, clock.clone()).max_keys(4));
        assert!(shared.try_acquire(&7));
        clock.advance(Duration::from_secs(3600));
        let sweeper = spawn_with(&shared, |shared| shared.evict_idle());
        let raiser = {
            let (shared, clock) = (shared.clone(), clock.clone());
            loom::thread::spawn(move || shared.config().set_limit(&clock, 2).unwrap())
        };
        let admitted = shared.try_acquire(&7);
        sweeper.join().unwrap();
        raiser.join().unwrap();
        assert!(admitted);
        assert_eq!(
            shared.available(&7),
            1,
            "the permit taken was lost or doubled"
        );
    });
}

/// Concurrency per key: a sweep races a permit given back and a new permit taken on the same
/// key (limit 1). The key with a permit out is never dropped, so the new permit is counted in
/// the map's cell: a second request is refused until it is given back, whatever the order.
#[test]
fn a_sweep_racing_a_release_and_an_acquire_never_loses_a_permit() {
    loom::model(|| {
        let shared: Arc<Keyed<u64, InFlight, ManualClock>> = Arc::new(
            Keyed::with_clock(ConcurrencyQuota::new(1).unwrap(), ManualClock::new()).max_keys(2),
        );
        let first = shared.try_acquire_permit(&7).unwrap().unwrap();
        let sweeper = spawn_with(&shared, |shared| shared.evict_idle());
        drop(first);
        let second = shared.try_acquire_permit(&7).unwrap();
        sweeper.join().unwrap();
        let second = second.expect("the first permit was given back");
        assert_eq!(shared.in_flight(&7), 1, "the permit out is counted");
        assert!(shared.try_acquire_permit(&7).unwrap().is_none());
        drop(second);
        assert_eq!(shared.in_flight(&7), 0);
    });
}

/// Tiers: a request on a key races the key's assignment to a tier (own quota 1, already
/// taken; the tier's 2). Decided under the own quota it is refused and the tier still has 2;
/// decided under the tier it is admitted and the tier has 1 left. Never admitted under the
/// own quota again (the assignment leaves the own cell in place, so a request that missed
/// the assignment finds it exhausted rather than re-creating it fresh).
#[test]
fn an_assignment_racing_a_request_decides_it_under_one_quota() {
    loom::model(|| {
        let clock = ManualClock::new();
        let shared = limits(1, 4, &clock);
        let quota = WindowQuota::per(2, Duration::from_nanos(10)).unwrap();
        let tier = shared.tier_of(WindowConfig::new(quota).unwrap());
        assert!(shared.try_acquire(&7));
        let request = spawn_with(&shared, |shared| shared.try_acquire(&7));
        shared.assign(7, &tier);
        let admitted = request.join().unwrap();
        assert_eq!(shared.available(&7), if admitted { 1 } else { 2 });
    });
}

/// Refunds: a sliding window of limit 3 over 2 buckets of 1 ns; key 7 holds a grant of 2 in
/// bucket 0. One thread refunds it while another takes a permit at 1 ns (a rollover to
/// bucket 1; admitted either way, 2 + 1 fitting the limit). Refunded first, the 2 leave the
/// count (2 left after the taker); rolled over first, the refund finds its bucket gone and
/// restores nothing (0 left). The one inexact case, as `SlidingWindow`'s: a refund landing
/// after the rollover published bucket 0's count and before it sealed reports 2 restored while
/// the window still counts them (0 left): fewer admitted, never more. A refund that took the
/// permit the taker counted in bucket 1 would restore 1.
#[test]
fn a_refund_racing_a_rollover_restores_only_a_current_bucket() {
    loom::model(|| {
        let config = ringlimit::cell::SlidingConfig::<2>::new(
            WindowQuota::per(3, Duration::from_nanos(2))
                .and_then(|q| q.buckets(2))
                .unwrap(),
        )
        .unwrap();
        let clock = ManualClock::new();
        let shared: Arc<Keyed<u64, ringlimit::keyed::SlidingWindows<2>, ManualClock>> =
            Arc::new(Keyed::with_config(config, clock.clone()));
        let grant = shared.try_grant(&7, 2).unwrap().into_grant().unwrap();
        clock.set_nanos(1);
        let refunder = spawn_with(&shared, move |shared| shared.refund(&7, grant));
        assert!(shared.try_acquire(&7));
        let restored = refunder.join().unwrap();
        let left = shared.available(&7);
        assert!(
            matches!((restored, left), (2, 2) | (0, 0) | (2, 0)),
            "restored {restored}, {left} left"
        );
    });
}

/// Refunds on a token bucket: burst 2, one permit a second, frozen clock; key 7 holds a
/// grant of both. A refund races a taker: the taker is admitted only after the refund, and
/// the bucket never holds more than its burst.
#[test]
fn a_refund_racing_a_taker_on_a_bucket_restores_exactly_once() {
    loom::model(|| {
        let clock = ManualClock::new();
        let quota = BucketQuota::new(Rate::every(Duration::from_secs(1)).unwrap(), 2).unwrap();
        let shared: Arc<Keyed<u64, Buckets, ManualClock>> =
            Arc::new(Keyed::with_clock(quota, clock.clone()));
        let grant = shared.try_grant(&7, 2).unwrap().into_grant().unwrap();
        let refunder = spawn_with(&shared, move |shared| shared.refund(&7, grant));
        let taken = shared.try_acquire(&7);
        assert_eq!(refunder.join().unwrap(), 2);
        assert_eq!(shared.available(&7), if taken { 1 } else { 2 });
    });
}
