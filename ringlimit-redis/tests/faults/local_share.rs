//! `OnFailure::LocalShare` over an outage: one burst at the switch to the local share (the
//! documented one), and none more when Redis is back: admissions over the whole run stay
//! within the quota's bound plus that one burst.

use std::time::{Duration, Instant};

use ringlimit::BucketQuota;
use ringlimit_redis::{Algorithm, Fleet, OnFailure, RedisLimiter, Source};

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
