//! State stored ahead of the server's clock (the clock stepped back, or a failover to a
//! server whose clock is behind) still limits: what it counts is kept and counted until the
//! clock passes it.

use std::time::Duration;

use ringlimit::WindowQuota;
use ringlimit_redis::{Algorithm, RedisLimiter};

use crate::support;

/// A sliding-window bucket stored ahead of the server's clock still counts until the
/// clock passes it: the window refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sliding_window_ahead_of_the_clock_still_limits() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let quota = WindowQuota::per(10, Duration::from_secs(10))
        .unwrap()
        .buckets(10)
        .unwrap();
    let limiter = RedisLimiter::builder(
        &support::connection(&server),
        "sliding",
        Algorithm::SlidingWindow(quota),
    )
    .build()
    .unwrap();
    let key = &limiter.redis_keys("k").unwrap()[0];
    let ahead = server.micros() / 1_000_000 + 1;
    let key = String::from_utf8(key.clone()).unwrap();
    server.query::<()>(&["HSET", &key, &ahead.to_string(), "10"]);
    for _ in 0..3 {
        assert!(!limiter.try_acquire("k").await.unwrap());
    }
}

/// A fixed window stored ahead of the server's clock is kept and counts: the older window
/// never overwrites it to admit its limit again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_window_ahead_of_the_clock_is_kept() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &support::connection(&server),
        "fixed",
        Algorithm::FixedWindow(WindowQuota::per_second(10).unwrap()),
    )
    .build()
    .unwrap();
    let key = String::from_utf8(limiter.redis_keys("k").unwrap()[0].clone()).unwrap();
    let ahead = (server.micros() / 1_000_000 + 5).to_string();
    server.query::<()>(&["HSET", &key, "w", &ahead, "c", "10"]);
    server.query::<()>(&["PEXPIRE", &key, "60000"]);
    assert!(!limiter.try_acquire("k").await.unwrap());
    let stored: String = server.query(&["HGET", &key, "w"]);
    assert_eq!(stored, ahead);
}

/// A log entry stored ahead of the server's clock keeps counting, and the key's TTL is not
/// cut below it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_ahead_of_the_clock_keeps_its_entries() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &support::connection(&server),
        "log",
        Algorithm::SlidingLog(WindowQuota::per_second(2).unwrap()),
    )
    .build()
    .unwrap();
    let keys = limiter.redis_keys("k").unwrap();
    let log = String::from_utf8(keys[0].clone()).unwrap();
    let ahead = (server.micros() + 5_000_000).to_string();
    server.query::<()>(&["ZADD", &log, &ahead, "x"]);
    server.query::<()>(&["PEXPIRE", &log, "7000"]);
    assert!(limiter.try_acquire("k").await.unwrap());
    assert!(
        !limiter.try_acquire("k").await.unwrap(),
        "the entry ahead counts"
    );
    let ttl: i64 = server.query(&["PTTL", &log]);
    assert!(ttl > 5_000, "ttl {ttl} ms cut below the newest entry");
}
