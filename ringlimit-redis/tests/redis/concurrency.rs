//! The concurrency limit on a real Redis: never more in flight than the limit across
//! connections; a holder that never releases gives its permits back when its lease expires;
//! a renewed lease does not expire.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringlimit_redis::{LeaseDecision, RedisConcurrency, Source};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_in_flight_than_the_limit() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    const MAX: u64 = 5;
    let in_flight = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let granted = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for task in 0..24 {
        let limiter = RedisConcurrency::new(
            &support::connection(&server),
            "jobs",
            MAX,
            Duration::from_secs(30),
        );
        let (in_flight, peak, granted) = (
            Arc::clone(&in_flight),
            Arc::clone(&peak),
            Arc::clone(&granted),
        );
        tasks.push(tokio::spawn(async move {
            for call in 0..40u64 {
                let n = 1 + (task + call) % 2;
                match limiter.acquire("tenant", n).await.unwrap() {
                    LeaseDecision::Granted(lease) => {
                        assert_eq!(lease.source(), Source::Redis);
                        let now = in_flight.fetch_add(n, Ordering::SeqCst) + n;
                        peak.fetch_max(now, Ordering::SeqCst);
                        assert!(now <= MAX, "{now} in flight, limit {MAX}");
                        granted.fetch_add(1, Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        // Leave the count before the release: the server may hand the
                        // permits out again the moment it has them.
                        in_flight.fetch_sub(n, Ordering::SeqCst);
                        assert!(lease.release().await.unwrap());
                    }
                    LeaseDecision::Refused { available, .. } => assert!(available < n),
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert!(
        peak.load(Ordering::SeqCst) >= MAX - 1,
        "the limit was never approached"
    );
    assert!(granted.load(Ordering::SeqCst) > 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_lease_expires_and_a_renewed_one_does_not() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisConcurrency::new(
        &support::connection(&server),
        "exports",
        2,
        Duration::from_millis(300),
    );
    let LeaseDecision::Granted(crashed) = limiter.acquire("k", 1).await.unwrap() else {
        panic!("free")
    };
    let LeaseDecision::Granted(working) = limiter.acquire("k", 1).await.unwrap() else {
        panic!("free")
    };
    // A holder that crashes never releases.
    std::mem::forget(crashed);
    match limiter.acquire("k", 1).await.unwrap() {
        LeaseDecision::Refused {
            available: 0,
            retry_after,
            ..
        } => {
            assert!(retry_after <= Duration::from_millis(300), "{retry_after:?}");
        }
        other => panic!("{other:?}"),
    }
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(working.renew().await.unwrap(), "a renewed lease stays");
    }
    // 600 ms on: the crashed lease is gone, the renewed one holds.
    let LeaseDecision::Granted(next) = limiter.acquire("k", 1).await.unwrap() else {
        panic!("the crashed lease came back")
    };
    assert!(matches!(
        limiter.acquire("k", 1).await.unwrap(),
        LeaseDecision::Refused { .. }
    ));
    // The limiter's key for `k`: `ringlimit:<name>:<key>` in a hash tag.
    let ttl: i64 = server.query(&["PTTL", "{ringlimit:exports:k}"]);
    assert!(ttl > 0, "no state under the expected key");
    assert!(ttl <= 301, "the key outlives its last lease: {ttl} ms");
    assert!(working.release().await.unwrap());
    assert!(next.release().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_dropped_inside_a_runtime_is_released() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisConcurrency::new(
        &support::connection(&server),
        "dropped",
        1,
        Duration::from_secs(60),
    );
    let LeaseDecision::Granted(lease) = limiter.acquire("k", 1).await.unwrap() else {
        panic!("free")
    };
    drop(lease);
    let mut released = false;
    for _ in 0..50 {
        if let LeaseDecision::Granted(lease) = limiter.acquire("k", 1).await.unwrap() {
            lease.release().await.unwrap();
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(released, "the dropped lease was not given back");
}

#[tokio::test]
async fn a_lease_set_written_by_another_program_is_a_typed_error_and_left_as_it_was() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let limiter = RedisConcurrency::new(
        &support::connection(&server),
        "foreign",
        3,
        Duration::from_secs(60),
    );
    // The limiter's own key for "k", found by taking and giving back one lease.
    let LeaseDecision::Granted(lease) = limiter.acquire("k", 1).await.unwrap() else {
        panic!("free")
    };
    let keys: Vec<String> = server.query(&["KEYS", "*"]);
    assert!(lease.release().await.unwrap());
    let [key] = keys.as_slice() else {
        panic!("one key: {keys:?}")
    };
    // Members that are not `id|n`, scores that are not whole times (an expired one among
    // them, which a decision would otherwise remove): another program's set.
    for (score, member) in [
        ("99999999999999999", "no count"),
        ("+inf", "x|1"),
        ("1e300", "x|1"),
        ("-5", "x|1"),
    ] {
        let _: () = server.query(&["DEL", key]);
        let _: () = server.query(&["ZADD", key, "1", "expired|1", score, member]);
        let before: Vec<String> = server.query(&["ZRANGE", key, "0", "-1", "WITHSCORES"]);
        match limiter.acquire("k", 1).await {
            Err(ringlimit_redis::Error::WrongType { .. }) => {}
            other => panic!("{score} {member}: {other:?}"),
        }
        let after: Vec<String> = server.query(&["ZRANGE", key, "0", "-1", "WITHSCORES"]);
        assert_eq!(after, before, "{score} {member}");
    }
}
