//! Bad input on a real Redis gets typed errors and loses nothing: keys with braces,
//! newlines, NUL and non-UTF-8 bytes, megabyte keys, quotas the scripts cannot hold, more
//! permits than the limit, zero permits, and keys of another type left by another program.
//! And every key a limiter writes has a TTL.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::FromRedisValue;
use ringlimit::outcome::Decision;
use ringlimit::{BucketQuota, Rate, WindowQuota};
use ringlimit_redis::{
    Algorithm, Connection, Error, QuotaError, RedisLimiter, Source, DEFAULT_MAX_KEY_LEN,
};

use crate::support;

fn limiter(connection: &Connection, name: &str, algorithm: Algorithm) -> RedisLimiter {
    RedisLimiter::builder(connection, name, algorithm)
        .build()
        .expect("a quota Redis can hold")
}

/// `command args…` on the plain connection: its reply.
async fn query<T: FromRedisValue>(
    raw: &mut MultiplexedConnection,
    command: &str,
    args: &[&[u8]],
) -> T {
    let mut command_line = redis::cmd(command);
    for arg in args {
        command_line.arg(*arg);
    }
    command_line
        .query_async(raw)
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"))
}

async fn dbsize(raw: &mut MultiplexedConnection) -> u64 {
    query(raw, "DBSIZE", &[]).await
}

/// Every key on the server.
async fn all_keys(raw: &mut MultiplexedConnection) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = query(raw, "KEYS", &[b"*"]).await;
    keys.sort();
    keys
}

/// A key's value, serialized (`DUMP`): equal dumps, equal values.
fn admitted(remaining: u64) -> Decision {
    Decision::Admitted { remaining }
}

#[tokio::test]
async fn keys_with_braces_newlines_nul_and_other_bytes_are_limited_exactly_and_apart() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    let keys: &[&[u8]] = &[
        b"{",
        b"}",
        b"{}",
        b"{a}b}",
        b"{a}",
        b"a{b}c",
        b"}{",
        b"{{}}",
        b"new\nline",
        b"\r\n*1\r\n$4\r\nPING\r\n",
        b"nul\0byte",
        b"\0",
        b"\xff\xfe\x80 not utf-8",
        "ключ ✓".as_bytes(),
        b"",
        b" ",
        b"*",
    ];
    let mut expected_keys = Vec::new();
    for (a, algorithm) in support::algorithms(3).into_iter().enumerate() {
        let limiter = limiter(&connection, &format!("odd{a}"), algorithm);
        for &key in keys {
            let shown = String::from_utf8_lossy(key);
            // Each key starts full (no other key's permits counted) and is limited exactly.
            for remaining in [2, 1, 0] {
                let verdict = limiter.check(key, 1).await.unwrap();
                assert_eq!(verdict.source, Source::Redis);
                assert_eq!(
                    verdict.decision,
                    admitted(remaining),
                    "{algorithm:?} key {shown:?}"
                );
            }
            let refused = limiter.check(key, 1).await.unwrap();
            assert!(
                !refused.decision.is_admitted(),
                "{algorithm:?} key {shown:?}"
            );
            assert_eq!(limiter.available(key).await.unwrap(), 0);
            for redis_key in limiter.redis_keys(key).unwrap() {
                let exists: u64 = query(&mut raw, "EXISTS", &[&redis_key]).await;
                assert_eq!(exists, 1, "{algorithm:?} key {shown:?}");
                expected_keys.push(redis_key);
            }
        }
    }
    // One state per (limiter, key), nothing else, nothing shared.
    expected_keys.sort();
    let before = expected_keys.len();
    expected_keys.dedup();
    assert_eq!(expected_keys.len(), before, "two keys share a Redis key");
    assert_eq!(all_keys(&mut raw).await, expected_keys);
}

#[tokio::test]
async fn a_megabyte_key_is_limited_exactly_when_allowed_and_refused_unwritten_otherwise() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    let mut key: Vec<u8> = (0..1 << 20).map(|i| b"ab{c}\n\0\xff"[i % 8]).collect();
    key[0] = b'}';

    // With the default maximum: a typed error before anything is sent, for every call.
    for (a, algorithm) in support::algorithms(3).into_iter().enumerate() {
        let limiter = limiter(&connection, &format!("long{a}"), algorithm);
        let too_long = Error::KeyTooLong(ringlimit_redis::KeyTooLong {
            len: 1 << 20,
            max: DEFAULT_MAX_KEY_LEN,
        });
        assert_eq!(limiter.check(&key, 1).await, Err(too_long.clone()));
        assert_eq!(limiter.try_acquire(&key).await, Err(too_long.clone()));
        assert_eq!(limiter.available(&key).await, Err(too_long.clone()));
        assert_eq!(limiter.redis_keys(&key), Err(too_long));
        assert!(matches!(
            limiter.check(&key[..DEFAULT_MAX_KEY_LEN + 1], 1).await,
            Err(Error::KeyTooLong(_))
        ));
        assert_eq!(
            dbsize(&mut raw).await,
            0,
            "{algorithm:?}: a refused key was written"
        );
        // The boundary: the maximum itself is accepted.
        let longest = &key[..DEFAULT_MAX_KEY_LEN];
        assert_eq!(
            limiter.check(longest, 1).await.unwrap().decision,
            admitted(2)
        );
        let _: () = query(&mut raw, "FLUSHALL", &[]).await;
    }
    // Allowed: limited exactly, under its own 1 MiB name.
    for (a, algorithm) in support::algorithms(3).into_iter().enumerate() {
        let limiter = RedisLimiter::builder(&connection, &format!("long{a}"), algorithm)
            .max_key_len(2 << 20)
            .build()
            .unwrap();
        assert_eq!(limiter.check(&key, 2).await.unwrap().decision, admitted(1));
        assert_eq!(limiter.available(&key).await.unwrap(), 1);
        // A key one byte shorter is another key.
        assert_eq!(
            limiter.check(&key[1..], 3).await.unwrap().decision,
            admitted(0)
        );
        assert_eq!(limiter.check(&key, 1).await.unwrap().decision, admitted(0));
        assert!(!limiter.check(&key, 1).await.unwrap().decision.is_admitted());
        for redis_key in limiter.redis_keys(&key).unwrap() {
            assert!(redis_key.len() > 1 << 20);
            let exists: u64 = query(&mut raw, "EXISTS", &[&redis_key]).await;
            assert_eq!(exists, 1, "{algorithm:?}");
        }
    }
}

#[tokio::test]
async fn absurd_quotas_are_typed_errors_at_build() {
    // No server needed: nothing is sent.
    let connection = Connection::open("redis://127.0.0.1:1/").unwrap();
    let build = |algorithm: Algorithm| {
        RedisLimiter::builder(&connection, "absurd", algorithm)
            .build()
            .map(|_| ())
    };
    let second = Duration::from_secs(1);
    let cases = [
        // A window of 1.5 µs: Redis's time is in whole µs.
        (
            Algorithm::FixedWindow(WindowQuota::per(5, Duration::from_nanos(1_500)).unwrap()),
            QuotaError::NotWholeMicroseconds {
                span: Duration::from_nanos(1_500),
            },
        ),
        // Three buckets of 333 333.3 µs.
        (
            Algorithm::SlidingWindow(WindowQuota::per(5, second).unwrap().buckets(3).unwrap()),
            QuotaError::NotWholeMicroseconds { span: second / 3 },
        ),
        // A window one µs past 2^50 µs.
        (
            Algorithm::SlidingLog(
                WindowQuota::per(5, Duration::from_micros((1 << 50) + 1)).unwrap(),
            ),
            QuotaError::SpanTooLong {
                span: Duration::from_micros((1 << 50) + 1),
            },
        ),
        // A budget is a window that never ends.
        (
            Algorithm::FixedWindow(WindowQuota::budget(5).unwrap()),
            QuotaError::Budget,
        ),
        (
            Algorithm::SlidingWindow(WindowQuota::budget(5).unwrap()),
            QuotaError::Budget,
        ),
        (
            Algorithm::SlidingLog(WindowQuota::budget(5).unwrap()),
            QuotaError::Budget,
        ),
        // A period of 1 001 ns is 2 µs on Redis: 2^50 of them span 2^51 µs.
        (
            Algorithm::TokenBucket(
                BucketQuota::new(Rate::every(Duration::from_nanos(1_001)).unwrap(), 1 << 50)
                    .unwrap(),
            ),
            QuotaError::SpanTooLong {
                span: Duration::from_micros(1 << 51),
            },
        ),
        // A burst above 2^50.
        (
            Algorithm::TokenBucket(
                BucketQuota::new(Rate::every(Duration::from_nanos(1)).unwrap(), (1 << 50) + 1)
                    .unwrap(),
            ),
            QuotaError::LimitTooLarge {
                limit: (1 << 50) + 1,
            },
        ),
        // An expired key reads as a full bucket.
        (
            Algorithm::TokenBucket(BucketQuota::per_second(5).unwrap().start_empty()),
            QuotaError::StartsEmpty,
        ),
    ];
    for (algorithm, error) in cases {
        assert_eq!(build(algorithm), Err(Error::Quota(error)), "{algorithm:?}");
        assert_eq!(algorithm.capacity(), Err(error));
    }
    // The largest quotas that fit are accepted.
    let fits = [
        Algorithm::SlidingLog(WindowQuota::per(5, Duration::from_micros(1 << 50)).unwrap()),
        Algorithm::TokenBucket(
            BucketQuota::new(Rate::every(Duration::from_nanos(1)).unwrap(), 1 << 50).unwrap(),
        ),
        Algorithm::FixedWindow(WindowQuota::per(5, Duration::from_micros(1)).unwrap()),
    ];
    for algorithm in fits {
        assert_eq!(build(algorithm), Ok(()), "{algorithm:?}");
    }
}

#[tokio::test]
async fn an_unlimited_quota_admits_without_touching_redis() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let mut raw = support::raw(&server).await;
    let unlimited = [
        Algorithm::FixedWindow(WindowQuota::unlimited()),
        Algorithm::SlidingWindow(WindowQuota::unlimited()),
        Algorithm::SlidingLog(WindowQuota::unlimited()),
        Algorithm::TokenBucket(BucketQuota::unlimited()),
    ];
    // Against the real server, and against a port where nothing listens (failing closed,
    // were it asked): both admit, and nobody decided.
    for url in [server.url(), "redis://127.0.0.1:1/".to_owned()] {
        let connection = Connection::open(&url).unwrap();
        for algorithm in unlimited {
            let limiter = limiter(&connection, "unlimited", algorithm);
            for n in [0, 1, 1 << 40, u64::MAX] {
                let verdict = limiter.check("k", n).await.unwrap();
                assert_eq!(verdict.source, Source::Unlimited, "{algorithm:?} {url}");
                assert_eq!(verdict.decision, admitted(u64::MAX));
                assert_eq!(verdict.server_time, None);
            }
            assert_eq!(limiter.available("k").await.unwrap(), u64::MAX);
            assert_eq!(limiter.fallbacks(), 0);
        }
    }
    assert_eq!(dbsize(&mut raw).await, 0);
}

#[tokio::test]
async fn more_than_the_limit_at_once_is_an_error_and_changes_nothing() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    for algorithm in support::algorithms(3) {
        let limiter = limiter(&connection, "over", algorithm);
        let exceeds = |n| Error::ExceedsLimit {
            requested: n,
            limit: 3,
        };
        // On a fresh key: nothing written.
        for n in [4, 1 << 50, u64::MAX] {
            assert_eq!(
                limiter.check("fresh", n).await,
                Err(exceeds(n)),
                "{algorithm:?}"
            );
            assert_eq!(limiter.try_acquire_n("fresh", n).await, Err(exceeds(n)));
        }
        assert_eq!(dbsize(&mut raw).await, 0, "{algorithm:?}");
        // On a key in use: its state unchanged.
        assert_eq!(
            limiter.check("used", 2).await.unwrap().decision,
            admitted(1)
        );
        let keys = limiter.redis_keys("used").unwrap();
        let mut before = Vec::new();
        for key in &keys {
            before.push(support::dump(&mut raw, key).await);
        }
        assert_eq!(limiter.check("used", 4).await, Err(exceeds(4)));
        for (key, before) in keys.iter().zip(&before) {
            assert_eq!(&support::dump(&mut raw, key).await, before, "{algorithm:?}");
        }
        assert_eq!(limiter.available("used").await.unwrap(), 1);
        assert_eq!(
            limiter.check("used", 1).await.unwrap().decision,
            admitted(0)
        );
        let _: () = query(&mut raw, "FLUSHALL", &[]).await;
    }
}

#[tokio::test]
async fn zero_permits_are_admitted_and_write_nothing() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    for algorithm in support::algorithms(3) {
        let limiter = limiter(&connection, "zero", algorithm);
        let verdict = limiter.check("fresh", 0).await.unwrap();
        assert_eq!(verdict.source, Source::Redis, "{algorithm:?}");
        assert_eq!(verdict.decision, admitted(3), "{algorithm:?}");
        assert_eq!(
            limiter.try_acquire_n("fresh", 0).await.unwrap(),
            admitted(3)
        );
        assert_eq!(
            dbsize(&mut raw).await,
            0,
            "{algorithm:?}: n = 0 wrote a key"
        );
        // On a key in use, and on an exhausted one: admitted, the state unchanged.
        assert_eq!(
            limiter.check("used", 2).await.unwrap().decision,
            admitted(1)
        );
        assert_eq!(
            limiter.check("full", 3).await.unwrap().decision,
            admitted(0)
        );
        for (key, left) in [("used", 1), ("full", 0)] {
            let keys = limiter.redis_keys(key).unwrap();
            let mut before = Vec::new();
            for redis_key in &keys {
                before.push(support::dump(&mut raw, redis_key).await);
            }
            assert_eq!(
                limiter.check(key, 0).await.unwrap().decision,
                admitted(left),
                "{algorithm:?}"
            );
            for (redis_key, before) in keys.iter().zip(&before) {
                assert_eq!(
                    &support::dump(&mut raw, redis_key).await,
                    before,
                    "{algorithm:?}"
                );
            }
        }
        let _: () = query(&mut raw, "FLUSHALL", &[]).await;
    }
}

/// A foreign value at one of a limiter's keys: how to write it, and the error expected.
struct Foreign {
    what: &'static str,
    write: &'static [&'static str],
}

const FOREIGN: &[Foreign] = &[
    Foreign {
        what: "a list",
        write: &["RPUSH", "<key>", "one", "two"],
    },
    Foreign {
        what: "a string",
        write: &["SET", "<key>", "not a number"],
    },
    Foreign {
        what: "a set",
        write: &["SADD", "<key>", "member"],
    },
    Foreign {
        what: "a hash",
        write: &["HSET", "<key>", "field", "value"],
    },
    Foreign {
        what: "a sorted set",
        write: &["ZADD", "<key>", "1", "member"],
    },
];

/// Whether `foreign` is the type this key of `algorithm` holds (then its content is foreign,
/// not its type).
fn same_type(algorithm: Algorithm, key_index: usize, foreign: &Foreign) -> bool {
    let ours = match (algorithm, key_index) {
        (Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_), _) => "a hash",
        (Algorithm::SlidingLog(_), 0) => "a sorted set",
        (Algorithm::SlidingLog(_), _) | (Algorithm::TokenBucket(_), _) => "a string",
    };
    ours == foreign.what
}

#[tokio::test]
async fn a_key_of_another_type_is_a_typed_error_and_left_as_it_was() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    for algorithm in support::algorithms(3) {
        let limiter = limiter(&connection, "foreign", algorithm);
        let keys = limiter.redis_keys("victim").unwrap();
        for (k, redis_key) in keys.iter().enumerate() {
            for foreign in FOREIGN {
                if same_type(algorithm, k, foreign) {
                    continue;
                }
                let mut write = redis::cmd(foreign.write[0]);
                for &arg in &foreign.write[1..] {
                    if arg == "<key>" {
                        write.arg(redis_key.as_slice());
                    } else {
                        write.arg(arg);
                    }
                }
                let _: () = write.query_async(&mut raw).await.unwrap();
                let before = support::dump(&mut raw, redis_key).await;
                let context = format!(
                    "{algorithm:?}, {} at {:?}",
                    foreign.what,
                    String::from_utf8_lossy(redis_key)
                );
                for n in [1, 3] {
                    match limiter.check("victim", n).await {
                        Err(Error::WrongType { message }) => {
                            assert!(message.contains("WRONGTYPE"), "{context}: {message}")
                        }
                        other => panic!("{context}: check gave {other:?}"),
                    }
                }
                let available = limiter.available("victim").await;
                if matches!(algorithm, Algorithm::SlidingLog(_)) && k == 1 {
                    // Only taking permits reads the log's sequence.
                    assert_eq!(available, Ok(3), "{context}");
                } else {
                    assert!(
                        matches!(available, Err(Error::WrongType { .. })),
                        "{context}: {available:?}"
                    );
                }
                // The foreign value is as it was, and nothing else was written.
                assert_eq!(
                    support::dump(&mut raw, redis_key).await,
                    before,
                    "{context}"
                );
                assert_eq!(
                    all_keys(&mut raw).await,
                    vec![redis_key.clone()],
                    "{context}"
                );
                // Other keys of the same limiter are unaffected.
                assert_eq!(
                    limiter.check("bystander", 1).await.unwrap().decision,
                    admitted(2),
                    "{context}"
                );
                let _: () = query(&mut raw, "FLUSHALL", &[]).await;
            }
        }
        assert_eq!(limiter.fallbacks(), 0);
    }
}

#[tokio::test]
async fn foreign_content_of_the_right_type_is_a_typed_error_and_left_as_it_was() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    // (algorithm, which of its keys, the foreign value): values of the type the limiter
    // keeps there that it can tell it did not write.
    // Numbers the scripts never write count as foreign too: Lua's `tonumber` reads "nan"
    // (which compares false with everything: a decision on it would admit), "inf",
    // hexadecimal, fractions and negatives.
    let cases: [(Algorithm, usize, &[&str]); 21] = [
        (
            support::algorithms(3)[0],
            0,
            &["HSET", "<key>", "field", "value"],
        ),
        (
            support::algorithms(3)[1],
            0,
            &["HSET", "<key>", "field", "value"],
        ),
        (
            support::algorithms(3)[2],
            1,
            &["SET", "<key>", "not a number"],
        ),
        (
            support::algorithms(3)[3],
            0,
            &["SET", "<key>", "not a number"],
        ),
        (
            support::algorithms(3)[0],
            0,
            &["HSET", "<key>", "w", "nan", "c", "0"],
        ),
        (
            support::algorithms(3)[0],
            0,
            &["HSET", "<key>", "w", "inf", "c", "0"],
        ),
        (
            support::algorithms(3)[0],
            0,
            &["HSET", "<key>", "w", "1", "c", "nan"],
        ),
        (
            support::algorithms(3)[0],
            0,
            &["HSET", "<key>", "w", "1", "c", "-1"],
        ),
        (support::algorithms(3)[1], 0, &["HSET", "<key>", "nan", "1"]),
        (support::algorithms(3)[1], 0, &["HSET", "<key>", "1", "nan"]),
        (
            support::algorithms(3)[1],
            0,
            &["HSET", "<key>", "0x10", "1"],
        ),
        (
            support::algorithms(3)[2],
            0,
            &["ZADD", "<key>", "+inf", "x"],
        ),
        (
            support::algorithms(3)[2],
            0,
            &["ZADD", "<key>", "1e300", "x"],
        ),
        (support::algorithms(3)[2], 0, &["ZADD", "<key>", "-5", "x"]),
        (support::algorithms(3)[3], 0, &["SET", "<key>", "nan"]),
        (support::algorithms(3)[3], 0, &["SET", "<key>", "inf"]),
        (support::algorithms(3)[3], 0, &["SET", "<key>", "-inf"]),
        (support::algorithms(3)[3], 0, &["SET", "<key>", "0x10"]),
        (support::algorithms(3)[3], 0, &["SET", "<key>", "1.5"]),
        (support::algorithms(3)[3], 0, &["SET", "<key>", "-5"]),
        (support::algorithms(3)[3], 0, &["SET", "<key>", "1e300"]),
    ];
    for (a, (algorithm, k, write)) in cases.into_iter().enumerate() {
        let limiter = limiter(&connection, &format!("content{a}"), algorithm);
        let redis_key = limiter.redis_keys("victim").unwrap().remove(k);
        let mut command = redis::cmd(write[0]);
        for &arg in &write[1..] {
            if arg == "<key>" {
                command.arg(redis_key.as_slice());
            } else {
                command.arg(arg);
            }
        }
        let _: () = command.query_async(&mut raw).await.unwrap();
        let before = support::dump(&mut raw, &redis_key).await;
        let context = format!("{algorithm:?}, {write:?}");
        for n in [1, 3] {
            match limiter.check("victim", n).await {
                Err(Error::WrongType { .. }) => {}
                // The log's sequence: INCRBY refuses a string that is not an integer.
                Err(Error::Server { message }) if k == 1 && message.contains("not an integer") => {}
                other => panic!("{context}: check gave {other:?}"),
            }
        }
        let available = limiter.available("victim").await;
        if k == 1 {
            // Only taking permits reads the log's sequence.
            assert_eq!(available, Ok(3), "{context}");
        } else {
            assert!(
                matches!(available, Err(Error::WrongType { .. })),
                "{context}: {available:?}"
            );
        }
        assert_eq!(
            support::dump(&mut raw, &redis_key).await,
            before,
            "{context}"
        );
        assert_eq!(all_keys(&mut raw).await, vec![redis_key], "{context}");
        let _: () = query(&mut raw, "FLUSHALL", &[]).await;
    }
}

#[tokio::test]
async fn every_key_written_has_a_ttl() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
    let mut raw = support::raw(&server).await;
    // 1.2 s (three buckets of 400 ms): long enough that no key expires before it is listed on a loaded
    // machine (at 300 ms one did, under the loom suite), short enough to be a bound.
    let short = WindowQuota::per(5, Duration::from_millis(1200)).unwrap();
    let algorithms = [
        (Algorithm::FixedWindow(short), 1200),
        (Algorithm::SlidingWindow(short.buckets(3).unwrap()), 1200),
        (Algorithm::SlidingLog(short), 1200),
        // 5 per 1.2 s, burst 5: full again 1.2 s after the last admission at the latest.
        (
            Algorithm::TokenBucket(
                BucketQuota::new(Rate::new(5, Duration::from_millis(1200)).unwrap(), 5).unwrap(),
            ),
            1200,
        ),
    ];
    for (a, &(algorithm, longest_ms)) in algorithms.iter().enumerate() {
        let limiter = limiter(&connection, &format!("ttl{a}"), algorithm);
        // Admissions and refusals on several keys, the last one just admitted.
        for key in ["a", "b", "{c}", "d\n"] {
            for n in [1, 2, 3, 1] {
                limiter.check(key, n).await.unwrap();
            }
            limiter.check(key, 0).await.unwrap();
            limiter.available(key).await.unwrap();
        }
        let written = all_keys(&mut raw).await;
        assert!(written.len() >= 4, "{algorithm:?}: {written:?}");
        for key in &written {
            let ttl: i64 = query(&mut raw, "PTTL", &[key]).await;
            // -2: it expired between the listing and the query (a slow moment); -1 (no
            // TTL) or a longer one fails.
            assert!(
                ttl == -2 || (ttl > 0 && ttl <= longest_ms + 1),
                "{algorithm:?}: {:?} has a PTTL of {ttl} ms",
                String::from_utf8_lossy(key)
            );
        }
        // And the state goes away on its own once it is as good as none (EXISTS, not
        // DBSIZE: Redis reclaims expired keys lazily).
        tokio::time::sleep(Duration::from_millis(longest_ms as u64 + 20)).await;
        for key in &written {
            let exists: u64 = query(&mut raw, "EXISTS", &[key]).await;
            assert_eq!(exists, 0, "{algorithm:?}");
        }
        assert_eq!(limiter.available("a").await.unwrap(), 5);
    }
}

/// `n = 0` is admitted even when the limit was lowered under a fuller state, and the next
/// permit is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_permits_are_admitted_under_a_lowered_limit() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = support::connection(&server);
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
