//! Requests a gateway should never send, and some it may: each is answered with a clear
//! gRPC status (or the reference service's verdict), never a crash, and the server serves
//! the next call.

mod support;

use ringlimit_server::backend::Backend;
use ringlimit_server::config::DomainConfig;
use ringlimit_server::proto::rls::RateLimitRequest;
use support::{call, data, is_over, request, start};
use tonic::Code;

async fn status_of(
    client: &mut ringlimit_server::proto::rls::rate_limit_service_client::RateLimitServiceClient<
        tonic::transport::Channel,
    >,
    request: RateLimitRequest,
) -> tonic::Status {
    client
        .should_rate_limit(request)
        .await
        .expect_err("refused as malformed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_invalid_argument_and_the_server_keeps_serving() {
    let (_server, mut client) = start(&data("envoy"), Backend::local()).await;
    let azure: &[(&str, &str)] = &[("azure", "x")];

    let empty_domain = status_of(&mut client, request("", &[azure], 1)).await;
    assert_eq!(empty_domain.code(), Code::InvalidArgument);
    assert!(
        empty_domain.message().contains("domain"),
        "{empty_domain:?}"
    );

    let none = status_of(&mut client, request("internal", &[], 1)).await;
    assert_eq!(none.code(), Code::InvalidArgument);

    let empty_descriptor = status_of(&mut client, request("internal", &[&[]], 1)).await;
    assert_eq!(empty_descriptor.code(), Code::InvalidArgument);

    let many: Vec<&[(&str, &str)]> = vec![azure; 5_000];
    let thousands = status_of(&mut client, request("internal", &many, 1)).await;
    assert_eq!(thousands.code(), Code::InvalidArgument);
    assert!(
        thousands.message().contains("5000 descriptors"),
        "{thousands:?}"
    );

    let long = "v".repeat(4_096);
    let huge_value = status_of(&mut client, request("internal", &[&[("azure", &long)]], 1)).await;
    assert_eq!(huge_value.code(), Code::InvalidArgument);

    // Beyond the gRPC message limit (4 MiB): tonic refuses it before the service.
    let enormous = "v".repeat(5 << 20);
    let too_big = status_of(
        &mut client,
        request("internal", &[&[("azure", &enormous)]], 1),
    )
    .await;
    assert_ne!(too_big.code(), Code::Ok);

    // Still serving, and none of the above was counted.
    let reply = call(&mut client, request("internal", &[azure], 1)).await;
    assert_eq!(reply.statuses[0].limit_remaining, 99);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_domains_and_descriptors_are_not_limited_as_the_reference_service_does() {
    let (_server, mut client) = start(&data("envoy"), Backend::local()).await;
    let unknown_domain = call(&mut client, request("nobody", &[&[("a", "b")]], 1)).await;
    assert!(!is_over(&unknown_domain));
    assert!(unknown_domain.statuses[0].current_limit.is_none());
    let unknown_key = call(
        &mut client,
        request("internal", &[&[("nothing", "here")]], 1),
    )
    .await;
    assert!(!is_over(&unknown_key));
    assert_eq!(unknown_key.statuses.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_hits_addend_is_over_limit_and_counts_nothing() {
    let (_server, mut client) = start(&data("envoy"), Backend::local()).await;
    let azure: &[(&str, &str)] = &[("azure", "huge")];
    let ldap: &[(&str, &str)] = &[("ldap", "huge")];
    let huge = call(&mut client, request("internal", &[azure, ldap], u32::MAX)).await;
    assert!(is_over(&huge));
    let reply = call(&mut client, request("internal", &[azure], 0)).await; // 0 adds 1
    assert!(!is_over(&reply));
    assert_eq!(reply.statuses[0].limit_remaining, 99);
}

#[test]
fn unknown_fields_are_errors_naming_file_line_and_field() {
    let text = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n      requests_per_units: 6\n";
    let error = DomainConfig::parse("limits/d.yaml", text).unwrap_err();
    let shown = error.to_string();
    assert!(shown.starts_with("limits/d.yaml:7:"), "{shown}");
    assert!(shown.contains("requests_per_units"), "{shown}");
    assert!(shown.contains("descriptors[0].rate_limit"), "{shown}");
    let wrong_unit = DomainConfig::parse("u.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n").unwrap_err();
    assert!(wrong_unit.to_string().contains("fortnight"), "{wrong_unit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_that_does_not_load_stops_the_start_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "domain: d\ndescriptors:\n  - key: k\n    colour: red\n",
    )
    .unwrap();
    let error = ringlimit_server::Server::start(ringlimit_server::Options::new(dir.path()))
        .await
        .err()
        .expect("refused");
    let shown = error.to_string();
    assert!(
        shown.contains("bad.yaml:4") && shown.contains("colour"),
        "{shown}"
    );
}
