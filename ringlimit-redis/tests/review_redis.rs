//! Regression tests for the independent review of the scripts and the leased pool.

mod support;

use std::time::Duration;

use ringlimit::{BucketQuota, WindowQuota};
use ringlimit_redis::{
    Algorithm, Connection, Error, LeasedWindow, RedisLimiter, RedisPolicy, Source,
};

fn connection(server: &support::RedisServer) -> Connection {
    Connection::open(&server.url())
        .unwrap()
        .timeout(Duration::from_secs(2))
}

fn server_micros(server: &support::RedisServer) -> u64 {
    let (secs, micros): (u64, u64) = server.query(&["TIME"]);
    secs * 1_000_000 + micros
}

/// Review finding 1: `check(n)` with `n` above what one lease brought spun forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leased_requests_larger_than_a_batch_are_decided() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let leased = LeasedWindow::builder(
        &connection(&server),
        "big",
        WindowQuota::per_minute(100_000).unwrap(),
    )
    .max_batch(64)
    .build()
    .unwrap();
    for n in [60, 10, 64, 1, 64] {
        let verdict = tokio::time::timeout(Duration::from_secs(2), leased.check(n))
            .await
            .expect("check(n) must return");
        assert!(verdict.unwrap().decision.is_admitted(), "n = {n}");
    }
    // A window with fewer than `n` left refuses `n` at once, and still serves smaller ones.
    let small = LeasedWindow::builder(
        &connection(&server),
        "small",
        WindowQuota::per_minute(10).unwrap(),
    )
    .max_batch(10)
    .build()
    .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(2), small.check(7))
        .await
        .unwrap()
        .unwrap();
    assert!(first.decision.is_admitted());
    let second = tokio::time::timeout(Duration::from_secs(2), small.check(10))
        .await
        .unwrap()
        .unwrap();
    assert!(!second.decision.is_admitted(), "{second:?}");
}

/// Review finding 2: a bucket stored ahead of the server's clock (its clock stepped back)
/// was counted but never retired, and everything was admitted.
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
        &connection(&server),
        "sliding",
        Algorithm::SlidingWindow(quota),
    )
    .build()
    .unwrap();
    let key = &limiter.redis_keys("k").unwrap()[0];
    let ahead = server_micros(&server) / 1_000_000 + 1;
    let key = String::from_utf8(key.clone()).unwrap();
    server.query::<()>(&["HSET", &key, &ahead.to_string(), "10"]);
    for _ in 0..3 {
        assert!(!limiter.try_acquire("k").await.unwrap());
    }
}

/// Review finding 4: a fixed window stored ahead of the clock was overwritten by the older
/// one, which then admitted its limit again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_window_ahead_of_the_clock_is_kept() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &connection(&server),
        "fixed",
        Algorithm::FixedWindow(WindowQuota::per_second(10).unwrap()),
    )
    .build()
    .unwrap();
    let key = String::from_utf8(limiter.redis_keys("k").unwrap()[0].clone()).unwrap();
    let ahead = (server_micros(&server) / 1_000_000 + 5).to_string();
    server.query::<()>(&["HSET", &key, "w", &ahead, "c", "10"]);
    server.query::<()>(&["PEXPIRE", &key, "60000"]);
    assert!(!limiter.try_acquire("k").await.unwrap());
    let stored: String = server.query(&["HGET", &key, "w"]);
    assert_eq!(stored, ahead);
}

/// Review finding 4, the log: an admission stored ahead of the clock keeps counting, and
/// the key's TTL is not cut below it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_ahead_of_the_clock_keeps_its_entries() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &connection(&server),
        "log",
        Algorithm::SlidingLog(WindowQuota::per_second(2).unwrap()),
    )
    .build()
    .unwrap();
    let keys = limiter.redis_keys("k").unwrap();
    let log = String::from_utf8(keys[0].clone()).unwrap();
    let ahead = (server_micros(&server) + 5_000_000).to_string();
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

/// Review finding 10: `n = 0` was refused after the limit was lowered under a fuller state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_permits_are_admitted_under_a_lowered_limit() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = connection(&server);
    let wide = RedisLimiter::builder(
        &connection,
        "lowered",
        Algorithm::FixedWindow(WindowQuota::per_minute(10).unwrap()),
    )
    .build()
    .unwrap();
    let narrow = RedisLimiter::builder(
        &connection,
        "lowered",
        Algorithm::FixedWindow(WindowQuota::per_minute(5).unwrap()),
    )
    .build()
    .unwrap();
    assert!(wide.try_acquire_n("k", 10).await.unwrap().is_admitted());
    assert!(narrow.check("k", 0).await.unwrap().decision.is_admitted());
    assert!(!narrow.try_acquire("k").await.unwrap());
}

/// Review finding 9: one limiter twice with one key in a policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_refuses_two_dimensions_on_one_key() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &connection(&server),
        "twice",
        Algorithm::TokenBucket(BucketQuota::per_second(5).unwrap()),
    )
    .build()
    .unwrap();
    let policy = RedisPolicy::builder()
        .dimension("a", &limiter, |_: &()| Some("k"))
        .dimension("b", &limiter, |_: &()| Some("k"))
        .build();
    assert!(matches!(
        policy.check(&()).await,
        Err(Error::SharedKey { .. })
    ));
}

/// Review finding 3: a refund restores only the part of the grant no later grant stands
/// behind. Two servers make the policy admit on the first and refuse on the second, so
/// the bucket's grant is refunded; right after the grant, the refund restores it whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_right_after_the_grant_restores_it() {
    let Some(first) = support::RedisServer::start() else {
        return;
    };
    let Some(second) = support::RedisServer::start() else {
        return;
    };
    let bucket = RedisLimiter::builder(
        &connection(&first),
        "bucket",
        Algorithm::TokenBucket(BucketQuota::per_minute(10).unwrap()),
    )
    .build()
    .unwrap();
    let spent = RedisLimiter::builder(
        &connection(&second),
        "spent",
        Algorithm::FixedWindow(WindowQuota::per_hour(1).unwrap()),
    )
    .build()
    .unwrap();
    assert!(spent.try_acquire("k").await.unwrap());
    let policy = RedisPolicy::builder()
        .dimension("bucket", &bucket, |_: &()| Some("k"))
        .dimension("spent", &spent, |_: &()| Some("k"))
        .build();
    let verdict = policy.check_n(&(), 1).await.unwrap();
    assert!(!verdict.decision.is_admitted());
    assert_eq!(verdict.source, Source::Redis);
    assert_eq!(bucket.available("k").await.unwrap(), 10);
}
