//! The timeout set with `Connection::timeout` is the one in force: a slow answer within it
//! is Redis's decision, and the failure policy decides only once it has passed.

use std::time::{Duration, Instant};

use ringlimit::WindowQuota;
use ringlimit_redis::{Algorithm, Connection, RedisLimiter, Source};

use crate::support;

/// Keeps the server busy in one script for `busy` (other clients wait, with no error, for
/// up to the server's 5 s busy threshold).
async fn keep_busy(url: &str, busy: Duration) -> tokio::task::JoinHandle<()> {
    let client = redis::Client::open(url).expect("url");
    let mut connection = client
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .expect("connect");
    let script =
        "local function us() local t = redis.call('TIME') return t[1] * 1000000 + t[2] end \
                  local start = us() while us() - start < tonumber(ARGV[1]) do end return 1";
    let handle = tokio::spawn(async move {
        let _: i64 = redis::cmd("EVAL")
            .arg(script)
            .arg(0)
            .arg(busy.as_micros() as u64)
            .query_async(&mut connection)
            .await
            .expect("the busy script");
    });
    // Let the busy script start first.
    tokio::time::sleep(Duration::from_millis(30)).await;
    handle
}

#[tokio::test]
async fn a_slow_answer_within_the_timeout_is_redis_decision() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let quota = WindowQuota::per_second(5).unwrap();
    for timeout in [Duration::from_secs(1), Duration::from_secs(2)] {
        let connection = Connection::open(&server.url()).unwrap().timeout(timeout);
        let limiter = RedisLimiter::builder(&connection, "slow", Algorithm::FixedWindow(quota))
            .build()
            .unwrap();
        // Connected, and the script loaded.
        assert_eq!(limiter.check("k", 1).await.unwrap().source, Source::Redis);
        let busy = keep_busy(&server.url(), Duration::from_millis(400)).await;
        let started = Instant::now();
        let verdict = limiter.check("k", 1).await.unwrap();
        let waited = started.elapsed();
        busy.await.unwrap();
        assert_eq!(
            verdict.source,
            Source::Redis,
            "timeout {timeout:?}: the failure policy decided after {waited:?}, with the answer due within the timeout"
        );
        // The server was busy well past the 50 ms that used to cut calls short.
        assert!(waited >= Duration::from_millis(100), "{waited:?}");
        assert_eq!(limiter.fallbacks(), 0);
    }
}

#[tokio::test]
async fn past_the_timeout_the_failure_policy_decides() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let quota = WindowQuota::per_second(5).unwrap();
    let timeout = Duration::from_millis(100);
    let connection = Connection::open(&server.url()).unwrap().timeout(timeout);
    let limiter = RedisLimiter::builder(&connection, "slow", Algorithm::FixedWindow(quota))
        .build()
        .unwrap();
    assert_eq!(limiter.check("k", 1).await.unwrap().source, Source::Redis);
    let busy = keep_busy(&server.url(), Duration::from_millis(600)).await;
    let started = Instant::now();
    let verdict = limiter.check("k", 1).await.unwrap();
    let waited = started.elapsed();
    busy.await.unwrap();
    assert_eq!(verdict.source, Source::FailClosed);
    assert!(!verdict.decision.is_admitted());
    assert!(
        waited >= timeout && waited < timeout + Duration::from_millis(400),
        "decided after {waited:?} with a timeout of {timeout:?}"
    );
    assert_eq!(limiter.fallbacks(), 1);
}
