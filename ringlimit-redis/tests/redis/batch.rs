//! Concurrent decisions on one connection are gathered into one script call: each request
//! is still decided on its own (one foreign key fails only its own request), in order, and
//! exactly.

use std::sync::Arc;
use std::time::Duration;

use ringlimit::WindowQuota;
use ringlimit_redis::{Algorithm, Connection, Error, RedisLimiter, Source};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_key_fails_only_its_own_request() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(Duration::from_secs(2));
    let limiter = Arc::new(
        RedisLimiter::builder(
            &connection,
            "batch",
            Algorithm::FixedWindow(WindowQuota::per_hour(1_000).unwrap()),
        )
        .build()
        .unwrap(),
    );
    let foreign = String::from_utf8(limiter.redis_keys("foreign").unwrap()[0].clone()).unwrap();
    server.query::<()>(&["RPUSH", &foreign, "another program's list"]);
    // Many tasks at once on one connection: their requests travel together.
    let mut tasks = Vec::new();
    for task in 0..64u32 {
        let limiter = Arc::clone(&limiter);
        tasks.push(tokio::spawn(async move {
            let key = if task % 8 == 0 {
                "foreign".to_owned()
            } else {
                format!("k{}", task % 5)
            };
            (key.clone(), limiter.check(&key, 1).await)
        }));
    }
    let mut admitted = [0u64; 5];
    for task in tasks {
        let (key, outcome) = task.await.unwrap();
        if key == "foreign" {
            assert!(
                matches!(outcome, Err(Error::WrongType { .. })),
                "{outcome:?}"
            );
        } else {
            let verdict = outcome.unwrap();
            assert_eq!(verdict.source, Source::Redis);
            assert!(verdict.decision.is_admitted());
            admitted[key[1..].parse::<usize>().unwrap()] += 1;
        }
    }
    // Every admission was counted once, on its own key.
    for (k, count) in admitted.iter().enumerate() {
        assert_eq!(
            limiter.available(format!("k{k}")).await.unwrap(),
            1_000 - count
        );
    }
    let list: Vec<String> = server.query(&["LRANGE", &foreign, "0", "-1"]);
    assert_eq!(list, ["another program's list"]);
}

/// A gathered request's own error that means "cannot decide now" (READONLY: the server
/// became a replica) goes to the failure policy, as for a call of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_goes_to_the_failure_policy_in_a_batch_too() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &support::connection(&server),
        "ro",
        Algorithm::FixedWindow(WindowQuota::per_hour(10).unwrap()),
    )
    .build()
    .unwrap();
    server.query::<()>(&["REPLICAOF", "127.0.0.1", "1"]);
    let verdict = limiter.check("k", 1).await.unwrap();
    assert_eq!(verdict.source, Source::FailClosed, "{verdict:?}");
}

/// The gathering task lives on the runtime of the call that started it: when that runtime
/// is gone, a call from another runtime starts another, and Redis decides again.
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
            &support::connection(&server),
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

/// Each caller in a batch keeps its own timeout, not that of the clone that started the
/// gathering.
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

/// Requests whose callers stopped waiting are not sent: they take no permits.
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
