//! `OnFailure::LocalShare` over an outage: one burst at the switch to the local share (the
//! documented one), and none more when Redis is back: admissions over the whole run stay
//! within the quota's bound plus that one burst, for a limiter and for a policy.

use std::time::{Duration, Instant};

use ringlimit::{BucketQuota, WindowQuota};
use ringlimit_redis::{Algorithm, Fleet, OnFailure, RedisLimiter, RedisPolicy, Source};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_second_burst_when_redis_is_back() {
    let Some((_server, proxy, connection)) = support::proxied() else {
        return;
    };
    let fleet = Fleet::join(&connection, "share", Duration::from_millis(100), 1).await;
    // GCRA 1000/s, burst 1000.
    let quota = BucketQuota::per_second(1000).unwrap();
    let limiter = RedisLimiter::builder(&connection, "share", Algorithm::TokenBucket(quota))
        .on_failure(OnFailure::LocalShare(fleet))
        .build()
        .unwrap();
    let started = Instant::now();
    let (mut admitted, mut local, mut redis_after) = (0u64, 0u64, 0u64);
    let mut phase = 0;
    while started.elapsed() < Duration::from_millis(3500) {
        let elapsed = started.elapsed();
        if phase == 0 && elapsed > Duration::from_millis(500) {
            // A 2 s outage.
            proxy.silence();
            phase = 1;
        } else if phase == 1 && elapsed > Duration::from_millis(2500) {
            proxy.release_new();
            phase = 2;
        }
        let verdict = limiter.check("k", 1).await.unwrap();
        if verdict.decision.is_admitted() {
            admitted += 1;
            local += u64::from(verdict.source == Source::LocalShare);
            redis_after += u64::from(phase == 2 && verdict.source == Source::Redis);
        }
        tokio::task::yield_now().await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    // GCRA's bound over the run (a burst and the rate), plus the documented burst at the
    // switch to the local share.
    let bound = 1000.0 + 1000.0 * elapsed + 1000.0;
    eprintln!(
        "admitted {admitted} in {elapsed:.2} s (local {local}, Redis after the outage {redis_after}); bound {bound:.0}"
    );
    assert!(redis_after > 0, "Redis never decided after the outage");
    // 100 of margin for the clocks of a loaded machine; a second burst is 1000.
    assert!(
        (admitted as f64) <= bound + 100.0,
        "admitted {admitted} over a bound of {bound:.0}"
    );
}

/// A policy's dimension on a local share also hands back to Redis without a second burst:
/// its first decision on Redis takes what the share admitted during the outage, so the
/// window admits at most its limit plus what Redis had admitted before the switch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_hands_back_to_redis_without_a_second_burst() {
    let Some((_server, proxy, connection)) = support::proxied() else {
        return;
    };
    let fleet = Fleet::join(&connection, "policy-share", Duration::from_millis(100), 1).await;
    // About two weeks: no window ends during the test.
    let quota = WindowQuota::per(10, Duration::from_secs(1_200_000)).unwrap();
    let limiter = RedisLimiter::builder(&connection, "policy-share", Algorithm::FixedWindow(quota))
        .on_failure(OnFailure::LocalShare(fleet))
        .build()
        .unwrap();
    let policy = RedisPolicy::builder()
        .dimension("user", &limiter, |_: &()| Some("k"))
        .build();
    let mut admitted = 0;
    for _ in 0..4 {
        let verdict = policy.check(&()).await.unwrap();
        assert_eq!(verdict.source, Source::Redis, "{verdict:?}");
        admitted += u64::from(verdict.decision.is_admitted());
    }
    assert_eq!(admitted, 4);

    // The outage: the share (the whole quota, one live node) admits from empty counts.
    proxy.silence();
    let outage = Instant::now();
    let mut local = 0;
    while outage.elapsed() < Duration::from_secs(1) {
        let verdict = policy.check(&()).await.unwrap();
        if verdict.decision.is_admitted() {
            assert_eq!(verdict.source, Source::LocalShare, "{verdict:?}");
            local += 1;
        }
    }
    assert_eq!(local, 10, "the share admits its quota once");

    // Redis back: it decides again, and has no room for the outage's admissions.
    proxy.release_new();
    let back = Instant::now();
    let mut after = 0;
    let mut from_redis = 0;
    while back.elapsed() < Duration::from_secs(3) && from_redis < 20 {
        let verdict = policy.check(&()).await.unwrap();
        if verdict.source == Source::Redis {
            from_redis += 1;
        }
        after += u64::from(verdict.decision.is_admitted());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(from_redis > 0, "Redis never decided after the outage");
    let total = admitted + local + after;
    eprintln!("admitted {admitted} before, {local} locally, {after} after the outage");
    // The limit (10) plus what Redis had admitted at the switch (4); a second burst would
    // add the 6 Redis still had room for.
    assert!(
        total <= 14,
        "admitted {total}: a second burst when Redis came back"
    );
}
