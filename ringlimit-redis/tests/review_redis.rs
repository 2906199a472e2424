//! Regression tests for the independent review of the scripts and the leased pool.

mod support;

use std::sync::Arc;
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

// The second review: the gathered batches and the leases near a window's end.

/// Finding 1: a window ending within the deadline's margin made `check` lease again and
/// again (the batch expired as it was stored), and wasted the window's permits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_near_the_end_of_a_window_neither_spin_nor_waste() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let too_short = LeasedWindow::builder(
        &connection(&server),
        "tiny",
        WindowQuota::per(1000, Duration::from_millis(1)).unwrap(),
    )
    .build();
    assert!(matches!(
        too_short,
        Err(Error::Quota(
            ringlimit_redis::QuotaError::WindowTooShortForLeases { .. }
        ))
    ));
    let leased = LeasedWindow::builder(
        &connection(&server),
        "short",
        WindowQuota::per(1000, Duration::from_millis(20)).unwrap(),
    )
    .max_batch(64)
    .build()
    .unwrap();
    let started = std::time::Instant::now();
    let mut calls = 0u64;
    while started.elapsed() < Duration::from_millis(300) {
        tokio::time::timeout(Duration::from_millis(200), leased.check(1))
            .await
            .expect("check must return")
            .unwrap();
        calls += 1;
    }
    // Per 20 ms window: batches of 64 until fewer than 128 are left, then halving (1000 / 64
    // + 8 leases), and in the last ~2 ms one call per request (a round trip each, a few
    // dozen); a spinning lease made thousands.
    let windows = 300 / 20 + 2;
    assert!(
        leased.leases() <= windows * 100,
        "{} leases in {windows} windows ({calls} calls)",
        leased.leases()
    );
}

/// Finding 2: a caught error of a gathered request (here READONLY, the server being a
/// replica) was returned as an error instead of going to the failure policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_falls_back_in_a_batch_too() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &connection(&server),
        "ro",
        Algorithm::FixedWindow(WindowQuota::per_hour(10).unwrap()),
    )
    .build()
    .unwrap();
    server.query::<()>(&["REPLICAOF", "127.0.0.1", "1"]);
    let verdict = limiter.check("k", 1).await.unwrap();
    assert_eq!(verdict.source, Source::FailClosed, "{verdict:?}");
}

/// Finding 3: the gathering task died with the runtime that started it, and batched
/// decisions failed closed for good.
#[test]
fn a_connection_outlives_the_runtime_that_first_used_it() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let first = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let limiter = first.block_on(async {
        let limiter = RedisLimiter::builder(
            &connection(&server),
            "rt",
            Algorithm::FixedWindow(WindowQuota::per_hour(10).unwrap()),
        )
        .build()
        .unwrap();
        assert_eq!(limiter.check("k", 1).await.unwrap().source, Source::Redis);
        limiter
    });
    drop(first);
    let second = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    second.block_on(async {
        // The first call may find the old runtime's connection gone (then Redis is skipped
        // for a moment, and the connection is made again): Redis decides again soon.
        let mut sources = Vec::new();
        for _ in 0..10 {
            sources.push(limiter.check("k", 1).await.unwrap().source);
            if sources.last() == Some(&Source::Redis) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert_eq!(sources.last(), Some(&Source::Redis), "{sources:?}");
    });
}

/// Finding 4: a batch timed out at the timeout of whichever clone started the gathering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_keeps_its_own_timeout_in_a_batch() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let base = Connection::open(&server.url()).unwrap();
    let quick = base.clone().timeout(Duration::from_millis(30));
    let patient = base.clone().timeout(Duration::from_secs(5));
    let quota = Algorithm::FixedWindow(WindowQuota::per_hour(10).unwrap());
    let first = RedisLimiter::builder(&quick, "t", quota).build().unwrap();
    let second = RedisLimiter::builder(&patient, "t", quota).build().unwrap();
    assert_eq!(first.check("k", 1).await.unwrap().source, Source::Redis);
    server.pause();
    let waiting = tokio::spawn(async move { second.check("k", 1).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.resume();
    assert_eq!(waiting.await.unwrap().source, Source::Redis);
}

/// Finding 5: requests whose callers had stopped waiting were still sent, and took permits
/// for nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_nobody_waits_for_are_not_sent() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(Duration::from_millis(30));
    let limiter = Arc::new(
        RedisLimiter::builder(
            &connection,
            "gone",
            Algorithm::FixedWindow(WindowQuota::per_hour(1000).unwrap()),
        )
        .build()
        .unwrap(),
    );
    assert!(limiter.try_acquire("k").await.unwrap());
    server.pause();
    let mut tasks = Vec::new();
    for _ in 0..300 {
        let limiter = Arc::clone(&limiter);
        tasks.push(tokio::spawn(
            async move { limiter.check("k", 1).await.unwrap() },
        ));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().source, Source::FailClosed);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.resume();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let patient = RedisLimiter::builder(
        &Connection::open(&server.url())
            .unwrap()
            .timeout(Duration::from_secs(2)),
        "gone",
        Algorithm::FixedWindow(WindowQuota::per_hour(1000).unwrap()),
    )
    .build()
    .unwrap();
    // At most the requests already on the wire when the server stalled (two batches) took
    // permits; the others were dropped unsent.
    let available = patient.available("k").await.unwrap();
    assert!(
        available >= 999 - 2 * 64,
        "{available} left: abandoned requests took permits"
    );
}

/// Finding 6: an unlimited leased window failed on every call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlimited_leased_window_admits() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let leased = LeasedWindow::builder(&connection(&server), "free", WindowQuota::unlimited())
        .build()
        .unwrap();
    let verdict = leased.check(5).await.unwrap();
    assert!(verdict.decision.is_admitted());
    assert_eq!(verdict.source, Source::Unlimited);
}
