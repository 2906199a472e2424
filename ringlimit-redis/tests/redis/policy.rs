//! Policies on a real Redis: all or nothing across dimensions in one script (nothing to give
//! back), and the failure policy of each dimension.

use std::sync::Arc;
use std::time::Duration;

use ringlimit::policy::PolicyDecision;
use ringlimit::{BucketQuota, WindowQuota};
use ringlimit_redis::{Algorithm, Connection, Error, OnFailure, RedisLimiter, RedisPolicy, Source};

use crate::support;

struct Request {
    user: u32,
}

fn limiter(connection: &Connection, name: &str, algorithm: Algorithm) -> RedisLimiter {
    RedisLimiter::builder(connection, name, algorithm)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_takes_nothing_from_the_other_dimensions() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(Duration::from_secs(2));
    let per_user = limiter(
        &connection,
        "user",
        Algorithm::FixedWindow(WindowQuota::per_minute(2).unwrap()),
    );
    let global = limiter(
        &connection,
        "global",
        Algorithm::SlidingLog(WindowQuota::per_minute(3).unwrap()),
    );
    let policy = RedisPolicy::builder()
        .dimension("user", &per_user, |r: &Request| Some(r.user.to_string()))
        .dimension("global", &global, |_| Some("all"))
        .build();
    let decide = |user| {
        let policy = &policy;
        async move { policy.check(&Request { user }).await.unwrap() }
    };
    assert!(decide(1).await.decision.is_admitted());
    assert!(decide(1).await.decision.is_admitted());
    // User 1 is spent: refused by `user`, and the global log is not charged.
    let refused = decide(1).await;
    assert!(
        matches!(
            refused.decision,
            PolicyDecision::Refused {
                dimension: "user",
                available: 0,
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(refused.source, Source::Redis);
    assert_eq!(global.available("all").await.unwrap(), 1);
    // User 2 takes the last global permit; user 3 is refused by `global`, and keeps its own.
    let admitted = decide(2).await;
    assert!(
        matches!(
            admitted.decision,
            PolicyDecision::Admitted {
                remaining: 0,
                tightest: "global",
                reset_after: Some(_),
            }
        ),
        "{admitted:?}"
    );
    let refused = decide(3).await;
    assert!(
        matches!(
            refused.decision,
            PolicyDecision::Refused {
                dimension: "global",
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(per_user.available("3").await.unwrap(), 2);
    assert_eq!(per_user.available("2").await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_checks_never_exceed_any_dimension() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connections: Vec<Connection> = (0..3)
        .map(|_| {
            Connection::open(&server.url())
                .unwrap()
                .timeout(Duration::from_secs(2))
        })
        .collect();
    // An hour's log: no window boundary inside the test (a fixed window could roll over).
    let global = limiter(
        &connections[0],
        "global",
        Algorithm::SlidingLog(WindowQuota::per_hour(12).unwrap()),
    );
    let policies: Vec<Arc<RedisPolicy<Request>>> = connections
        .iter()
        .map(|connection| {
            // The same limits (same names, so the same state) through each connection.
            let per_user = limiter(
                connection,
                "user",
                Algorithm::TokenBucket(BucketQuota::per_minute(5).unwrap()),
            );
            let global = limiter(
                connection,
                "global",
                Algorithm::SlidingLog(WindowQuota::per_hour(12).unwrap()),
            );
            Arc::new(
                RedisPolicy::builder()
                    .dimension("user", &per_user, |r: &Request| Some(r.user.to_string()))
                    .dimension("global", &global, |_| Some("all"))
                    .build(),
            )
        })
        .collect();
    let mut tasks = Vec::new();
    for task in 0..24u32 {
        let policy = Arc::clone(&policies[task as usize % 3]);
        tasks.push(tokio::spawn(async move {
            let mut admitted = [0u32; 4];
            for call in 0..10u32 {
                let user = (task + call) % 4;
                if policy
                    .check(&Request { user })
                    .await
                    .unwrap()
                    .decision
                    .is_admitted()
                {
                    admitted[user as usize] += 1;
                }
            }
            admitted
        }));
    }
    let mut per_user_admitted = [0u32; 4];
    for task in tasks {
        for (total, admitted) in per_user_admitted.iter_mut().zip(task.await.unwrap()) {
            *total += admitted;
        }
    }
    let total: u32 = per_user_admitted.iter().sum();
    for admitted in per_user_admitted {
        // A bucket of 5 per minute refills one permit every 12 s: none during the test.
        assert!(admitted <= 5, "{per_user_admitted:?}");
    }
    // Demand (240 calls, 60 per user) far exceeds both limits, and a refusal takes nothing
    // from any dimension: the global 12 are all used, no more.
    assert_eq!(total, 12, "{per_user_admitted:?}");
    assert_eq!(global.available("all").await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_dimension_falls_back_by_its_own_policy() {
    let Some(mut server) = support::RedisServer::start() else {
        return;
    };
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(Duration::from_millis(100));
    let open = RedisLimiter::builder(
        &connection,
        "open",
        Algorithm::FixedWindow(WindowQuota::per_minute(5).unwrap()),
    )
    .on_failure(OnFailure::Open)
    .build()
    .unwrap();
    let closed = RedisLimiter::builder(
        &connection,
        "closed",
        Algorithm::FixedWindow(WindowQuota::per_minute(5).unwrap()),
    )
    .on_failure(OnFailure::Closed)
    .build()
    .unwrap();
    let lenient = RedisPolicy::builder()
        .dimension("open", &open, |_: &Request| Some("k"))
        .build();
    let strict = RedisPolicy::builder()
        .dimension("open", &open, |_: &Request| Some("k"))
        .dimension("closed", &closed, |_: &Request| Some("k"))
        .build();
    assert!(lenient
        .check(&Request { user: 0 })
        .await
        .unwrap()
        .decision
        .is_admitted());
    server.kill();
    let started = std::time::Instant::now();
    let verdict = lenient.check(&Request { user: 0 }).await.unwrap();
    assert!(verdict.decision.is_admitted());
    assert_eq!(verdict.source, Source::FailOpen);
    let verdict = strict.check(&Request { user: 0 }).await.unwrap();
    assert!(
        matches!(
            verdict.decision,
            PolicyDecision::Refused {
                dimension: "closed",
                ..
            }
        ),
        "{verdict:?}"
    );
    assert_eq!(verdict.source, Source::FailClosed);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!((open.fallbacks(), closed.fallbacks()), (2, 1));
}

/// One limiter in two dimensions with the same key is `Error::SharedKey`, never a double
/// charge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_limiter_twice_on_one_key_is_a_typed_error() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::builder(
        &support::connection(&server),
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

/// Across servers a policy admits then refunds: a dimension refunded right after its grant
/// (no later grant behind it) gets the grant back whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_right_after_the_grant_restores_it() {
    let Some(first) = support::RedisServer::start() else {
        return;
    };
    let Some(second) = support::RedisServer::start() else {
        return;
    };
    let bucket = RedisLimiter::builder(
        &support::connection(&first),
        "bucket",
        Algorithm::TokenBucket(BucketQuota::per_minute(10).unwrap()),
    )
    .build()
    .unwrap();
    let spent = RedisLimiter::builder(
        &support::connection(&second),
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
