//! Stored values of the right type and syntax that this limiter could not have written
//! (numbers out of range: a far-future window or bucket, a sequence near 2^53, a lease count
//! beyond any limit, a GCRA time at 2^53 - 1) are typed errors that leave the key as it was;
//! and a policy whose later dimension holds such a value charges none of them.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use ringlimit::WindowQuota;
use ringlimit_redis::{Algorithm, Error, RedisConcurrency, RedisLimiter, RedisPolicy};

use crate::support;

async fn write(raw: &mut MultiplexedConnection, key: &[u8], args: &[&str]) {
    let mut command = redis::cmd(args[0]);
    command.arg(key);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    let _: () = command.query_async(raw).await.unwrap();
}

async fn ttl(raw: &mut MultiplexedConnection, key: &[u8]) -> i64 {
    redis::cmd("PTTL").arg(key).query_async(raw).await.unwrap()
}

#[tokio::test]
async fn numbers_out_of_range_are_typed_errors_and_left_as_they_were() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    let [fixed, sliding, log, gcra] = support::algorithms(10);
    // (algorithm, which of its keys, the value): whole numbers below 2^53 that break the
    // scripts' arithmetic or admit beyond the limit.
    let cases: [(Algorithm, usize, &[&str]); 7] = [
        (fixed, 0, &["HSET", "w", "9007199254740000", "c", "0"]),
        (fixed, 0, &["HSET", "w", "0", "c", "9007199254740000"]),
        (sliding, 0, &["HSET", "9007199254740000", "1"]),
        (sliding, 0, &["HSET", "1", "9007199254740000"]),
        (log, 1, &["SET", "9007199254740000"]),
        (log, 0, &["ZADD", "9007199254740000", "x"]),
        (gcra, 0, &["SET", "9007199254740991"]),
    ];
    for (a, (algorithm, k, value)) in cases.into_iter().enumerate() {
        let limiter = RedisLimiter::builder(&connection, &format!("range{a}"), algorithm)
            .build()
            .unwrap();
        let key = limiter.redis_keys("victim").unwrap().remove(k);
        write(&mut raw, &key, value).await;
        let before = support::dump(&mut raw, &key).await;
        let context = format!("{algorithm:?}, {value:?}");
        for n in [1, 3] {
            let outcome = limiter.check("victim", n).await;
            assert!(
                matches!(outcome, Err(Error::WrongType { .. })),
                "{context}: check gave {outcome:?}"
            );
        }
        assert_eq!(support::dump(&mut raw, &key).await, before, "{context}");
        let _: () = redis::cmd("FLUSHALL").query_async(&mut raw).await.unwrap();
    }
    // A GCRA key at 2^53 - 1 with no TTL would refuse for ever: it is an error instead, and
    // stays the owner's to remove.
    let limiter = RedisLimiter::builder(&connection, "forever", gcra)
        .build()
        .unwrap();
    let key = limiter.redis_keys("k").unwrap().remove(0);
    write(&mut raw, &key, &["SET", "9007199254740991"]).await;
    assert!(matches!(
        limiter.check("k", 1).await,
        Err(Error::WrongType { .. })
    ));
    assert_eq!(ttl(&mut raw, &key).await, -1);
}

#[tokio::test]
async fn a_lease_count_beyond_any_limit_is_a_typed_error() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    let exports = RedisConcurrency::new(&connection, "exports", 4, Duration::from_secs(30));
    // Finds the key by a lease of its own, then replaces it with a foreign one.
    let _held = exports.acquire("victim", 1).await.unwrap();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut raw)
        .await
        .unwrap();
    let key = keys.into_iter().next().expect("the lease's key");
    let _: () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut raw)
        .await
        .unwrap();
    // A live lease (expiring in 30 s, server time) of more permits than any limit.
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut raw).await.unwrap();
    let expiry = (secs * 1_000_000 + micros + 30_000_000).to_string();
    write(&mut raw, &key, &["ZADD", &expiry, "a|99999999999999999999"]).await;
    let before = support::dump(&mut raw, &key).await;
    for _ in 0..3 {
        let outcome = exports.acquire("victim", 1).await;
        assert!(
            matches!(outcome, Err(Error::WrongType { .. })),
            "acquire gave {outcome:?}"
        );
    }
    assert_eq!(support::dump(&mut raw, &key).await, before);
}

#[tokio::test]
async fn a_policy_whose_later_dimension_is_foreign_charges_none() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    let window = WindowQuota::per_minute(5).unwrap();
    let first = RedisLimiter::builder(&connection, "first", Algorithm::FixedWindow(window))
        .build()
        .unwrap();
    let second = RedisLimiter::builder(&connection, "second", Algorithm::SlidingLog(window))
        .build()
        .unwrap();
    let policy = RedisPolicy::builder()
        .dimension("first", &first, |_: &()| Some("{t}"))
        .dimension("second", &second, |_: &()| Some("{t}"))
        .build();
    // The log's sequence key holds another type.
    let sequence = second.redis_keys("{t}").unwrap().remove(1);
    let _: () = redis::cmd("RPUSH")
        .arg(&sequence)
        .arg("x")
        .query_async(&mut raw)
        .await
        .unwrap();
    for _ in 0..3 {
        let outcome = policy.check(&()).await;
        assert!(outcome.is_err(), "{outcome:?}");
    }
    assert_eq!(
        first.available("{t}").await.unwrap(),
        5,
        "the first dimension was charged"
    );
    let charged: Vec<Vec<u8>> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(charged, vec![sequence]);
}
