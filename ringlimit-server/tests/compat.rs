//! The example configurations of envoyproxy/ratelimit's README (tests/data/envoy, see the
//! README there) load unchanged and give the verdicts that README states, through a real
//! gRPC client against the server on a loopback port.

// One-second limits: the in-process windows start with the server, and each test runs
// well within its first second.
mod support;

use ringlimit_server::backend::Backend;
use ringlimit_server::proto::rls::rate_limit_response::Code;
use support::{call, code, data, is_over, request, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_loads_and_decides_as_documented() {
    let (server, mut client) = start(&data("envoy"), Backend::local()).await;
    assert_eq!(server.limits().rule_count(), 21);

    // Example 1: ("database", "users") gets 500 a second.
    let users: &[(&str, &str)] = &[("database", "users")];
    let ok = call(&mut client, request("mongo_cps", &[users], 500)).await;
    assert!(!is_over(&ok));
    assert_eq!(
        ok.statuses[0]
            .current_limit
            .as_ref()
            .unwrap()
            .requests_per_unit,
        500
    );
    assert_eq!(ok.statuses[0].limit_remaining, 0);
    assert!(is_over(
        &call(&mut client, request("mongo_cps", &[users], 1)).await
    ));
    // ("database", "default") is counted apart.
    assert!(!is_over(
        &call(
            &mut client,
            request("mongo_cps", &[&[("database", "default")]], 1)
        )
        .await
    ));

    // Example 2: 5 marketing messages a day to one number, 100 messages to any number.
    let marketing: &[(&str, &str)] = &[("message_type", "marketing"), ("to_number", "2061111111")];
    let number: &[(&str, &str)] = &[("to_number", "2061111111")];
    for sent in 1..=5 {
        let reply = call(&mut client, request("messaging", &[marketing, number], 1)).await;
        assert!(!is_over(&reply), "message {sent}");
        assert_eq!(reply.statuses[1].limit_remaining, 100 - sent);
    }
    let refused = call(&mut client, request("messaging", &[marketing, number], 1)).await;
    assert!(is_over(&refused));
    assert_eq!(code(&refused.statuses[0]), Code::OverLimit);
    assert_eq!(code(&refused.statuses[1]), Code::Ok);
    // All or nothing: the refused message was not counted against the number's 100.
    let plain = call(&mut client, request("messaging", &[number], 1)).await;
    assert_eq!(plain.statuses[0].limit_remaining, 94);
    // Another number has its own 5.
    let other: &[(&str, &str)] = &[("message_type", "marketing"), ("to_number", "2062222222")];
    assert!(!is_over(
        &call(&mut client, request("messaging", &[other], 1)).await
    ));

    // Example 3: 10 a second per address; 50.0.0.5 gets none (the most specific match).
    let address: &[(&str, &str)] = &[("remote_address", "50.0.0.1")];
    assert!(!is_over(
        &call(&mut client, request("edge_proxy_per_ip", &[address], 10)).await
    ));
    assert!(is_over(
        &call(&mut client, request("edge_proxy_per_ip", &[address], 1)).await
    ));
    let listed = call(
        &mut client,
        request("edge_proxy_per_ip", &[&[("remote_address", "50.0.0.5")]], 1),
    )
    .await;
    assert!(is_over(&listed));
    assert_eq!(
        listed.statuses[0]
            .current_limit
            .as_ref()
            .unwrap()
            .requests_per_unit,
        0
    );

    // Example 4 (first configuration): two entries do not match a one-level limit.
    let deep: &[(&str, &str)] = &[("key", "value"), ("subkey", "subvalue")];
    let unmatched = call(&mut client, request("example4", &[deep], 1000)).await;
    assert!(!is_over(&unmatched));
    assert!(unmatched.statuses[0].current_limit.is_none());

    // Example 5: unlimited descriptors answer OK with u32::MAX remaining.
    let ldap = call(
        &mut client,
        request("internal", &[&[("ldap", "x")]], 1_000_000),
    )
    .await;
    assert!(!is_over(&ldap));
    assert_eq!(ldap.statuses[0].limit_remaining, u32::MAX);
    let azure = call(&mut client, request("internal", &[&[("azure", "x")]], 1)).await;
    assert_eq!(azure.statuses[0].limit_remaining, 99);

    // Example 6: user-a is in shadow mode (never refused); user-b gets 20 a second.
    let user_a: &[(&str, &str)] = &[("service", "auth-service"), ("user", "user-a")];
    for _ in 0..11 {
        assert!(!is_over(
            &call(&mut client, request("example6", &[user_a], 1)).await
        ));
    }
    let user_b: &[(&str, &str)] = &[("service", "auth-service"), ("user", "user-b")];
    assert!(!is_over(
        &call(&mut client, request("example6", &[user_b], 20)).await
    ));
    assert!(is_over(
        &call(&mut client, request("example6", &[user_b], 1)).await
    ));

    // Example 7: with both descriptors, only the replacing 10 a second applies, and the
    // replaced 5 a second is not counted.
    let first: &[(&str, &str)] = &[("key_1", "value_1"), ("user", "bkthomps")];
    let second: &[(&str, &str)] = &[("key_2", "value_2"), ("user", "bkthomps")];
    let both = call(&mut client, request("example7", &[first, second], 6)).await;
    assert!(!is_over(&both));
    assert!(both.statuses[0].current_limit.is_none());
    assert_eq!(both.statuses[1].limit_remaining, 4);
    let alone = call(&mut client, request("example7", &[first], 1)).await;
    assert_eq!(alone.statuses[0].limit_remaining, 4);

    // Example 8: unlisted values get 10 a minute each, value1 20.
    for value in ["unspecified_value", "unspecified_value2"] {
        let reply = call(&mut client, request("example8", &[&[("key1", value)]], 10)).await;
        assert!(!is_over(&reply));
        assert!(is_over(
            &call(&mut client, request("example8", &[&[("key1", value)]], 1)).await
        ));
    }
    assert!(!is_over(
        &call(
            &mut client,
            request("example8", &[&[("key1", "value1")]], 20)
        )
        .await
    ));

    // Example 9: wildcards, trailing, in the middle, and several.
    for (key, value, matches) in [
        ("key1", "valueXYZ", true),
        ("key1", "other", false),
        ("path", "/api/123/action", true),
        ("path", "/api/123/other", false),
        ("route", "/api/v1/resource/123/action", true),
    ] {
        let reply = call(&mut client, request("example9", &[&[(key, value)]], 1)).await;
        assert_eq!(
            reply.statuses[0].current_limit.is_some(),
            matches,
            "{key}={value}"
        );
    }

    // Example 10: three levels, per value counters.
    let subject: &[(&str, &str)] = &[
        ("route", "api"),
        ("http_method", "GET"),
        ("subject_id", "123"),
    ];
    assert!(!is_over(
        &call(&mut client, request("example10", &[subject], 60)).await
    ));
    assert!(is_over(
        &call(&mut client, request("example10", &[subject], 1)).await
    ));

    // Example 11: files/* share one threshold; files_no_share/* do not.
    for (file, hits) in [("files/a.pdf", 5), ("files/b.csv", 5)] {
        assert!(!is_over(
            &call(
                &mut client,
                request("example11", &[&[("files", file)]], hits)
            )
            .await
        ));
    }
    assert!(is_over(
        &call(
            &mut client,
            request("example11", &[&[("files", "files/c.txt")]], 1)
        )
        .await
    ));
    let isolated = |file| [("files_no_share", file)];
    assert!(!is_over(
        &call(
            &mut client,
            request("example11", &[&isolated("files_no_share/a.pdf")], 10)
        )
        .await
    ));
    assert!(!is_over(
        &call(
            &mut client,
            request("example11", &[&isolated("files_no_share/b.csv")], 10)
        )
        .await
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_4_matches_a_nested_limit() {
    let (_server, mut client) = start(&data("example4-matching"), Backend::local()).await;
    let deep: &[(&str, &str)] = &[("key", "value"), ("subkey", "subvalue")];
    let reply = call(&mut client, request("example4", &[deep], 300)).await;
    assert!(!is_over(&reply));
    assert_eq!(
        reply.statuses[0]
            .current_limit
            .as_ref()
            .unwrap()
            .requests_per_unit,
        300
    );
    assert!(is_over(
        &call(&mut client, request("example4", &[deep], 1)).await
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_carry_the_ietf_headers_of_the_tightest_limit() {
    let (_server, mut client) = start(&data("envoy"), Backend::local()).await;
    let reply = call(&mut client, request("internal", &[&[("azure", "h")]], 40)).await;
    let headers: Vec<(&str, &str)> = reply
        .response_headers_to_add
        .iter()
        .map(|h| (h.key.as_str(), h.value.as_str()))
        .collect();
    assert_eq!(headers[0], ("RateLimit-Policy", "\"default\";q=100;w=60"));
    assert!(
        headers[1].1.starts_with("\"default\";r=60;t="),
        "{headers:?}"
    );

    // A shadow-mode limit, even over, adds none: it never changes the answer.
    let user_a: &[(&str, &str)] = &[("service", "auth-service"), ("user", "user-a")];
    let shadow = call(&mut client, request("example6", &[user_a], 11)).await;
    assert!(!is_over(&shadow));
    assert!(shadow.response_headers_to_add.is_empty(), "{shadow:?}");
}
