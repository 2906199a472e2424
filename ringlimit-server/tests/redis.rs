//! The Redis backend against a real `redis-server` started by the test (SKIPPED without
//! one): the compatibility verdicts that need no clock, all or nothing across descriptors
//! in one script, shadow mode, and counts shared by two servers.

mod support;

use ringlimit_server::backend::Backend;
use ringlimit_server::proto::rls::rate_limit_response::Code;
use support::{call, code, data, is_over, request, start, Redis};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_counts_on_redis_all_or_nothing() {
    let Some(redis) = Redis::start("tests/redis.rs") else {
        return;
    };
    let backend = || Backend::Redis(ringlimit_redis::Connection::open(&redis.url()).unwrap());
    let (_one, mut first) = start(&data("envoy"), backend()).await;
    let (_two, mut second) = start(&data("envoy"), backend()).await;

    // Example 2 across two servers: 5 marketing messages a day to one number.
    let marketing: &[(&str, &str)] = &[("message_type", "marketing"), ("to_number", "2063333333")];
    let number: &[(&str, &str)] = &[("to_number", "2063333333")];
    for sent in 0..5 {
        let client = if sent % 2 == 0 {
            &mut first
        } else {
            &mut second
        };
        assert!(!is_over(
            &call(client, request("messaging", &[marketing, number], 1)).await
        ));
    }
    let refused = call(&mut second, request("messaging", &[marketing, number], 1)).await;
    assert!(is_over(&refused));
    assert_eq!(code(&refused.statuses[0]), Code::OverLimit);
    // All or nothing: the number's count is still 5.
    let plain = call(&mut first, request("messaging", &[number], 1)).await;
    assert_eq!(plain.statuses[0].limit_remaining, 94);

    // Example 3's listed address gets nothing; example 5's ldap is unlimited.
    assert!(is_over(
        &call(
            &mut first,
            request("edge_proxy_per_ip", &[&[("remote_address", "50.0.0.5")]], 1)
        )
        .await
    ));
    let ldap = call(&mut first, request("internal", &[&[("ldap", "x")]], 1000)).await;
    assert_eq!(ldap.statuses[0].limit_remaining, u32::MAX);

    // Example 6's shadow mode never refuses.
    let user_a: &[(&str, &str)] = &[("service", "s"), ("user", "user-a")];
    assert!(!is_over(
        &call(&mut first, request("example6", &[user_a], 50)).await
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_is_unavailable_so_that_envoys_failure_mode_decides() {
    // Nothing listens on port 1: the call times out, and the failure policy's decision is
    // not passed off as Redis's.
    let connection = ringlimit_redis::Connection::open("redis://127.0.0.1:1/")
        .unwrap()
        .timeout(std::time::Duration::from_millis(50));
    let (_server, mut client) = start(&data("envoy"), Backend::Redis(connection)).await;
    let status = client
        .should_rate_limit(request("internal", &[&[("azure", "x")]], 1))
        .await
        .expect_err("no Redis, no decision");
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(
        status.message().contains("Redis did not answer"),
        "{status:?}"
    );
}
