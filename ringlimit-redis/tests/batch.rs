//! Concurrent decisions on one connection are gathered into one script call: each request
//! is still decided on its own (one foreign key fails only its own request), in order, and
//! exactly.

mod support;

use std::sync::Arc;
use std::time::Duration;

use ringlimit::WindowQuota;
use ringlimit_redis::{Algorithm, Connection, Error, RedisLimiter, Source};

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
