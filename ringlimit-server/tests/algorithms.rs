//! ringlimit's own fields, which envoyproxy/ratelimit's format cannot say: each algorithm
//! (`fixed_window`, `sliding_window`, `sliding_log`, `token_bucket` with `burst`) decides
//! through a real gRPC client, in process and on a real `redis-server` (SKIPPED without
//! one); a request refused by one algorithm's limit leaves the others' counts untouched;
//! a field of another algorithm is an error naming the file, the line and the field; limits
//! whose names read alike count apart; a refused request holds no permit of the limits after
//! the refusing one, even briefly.

mod support;

use ringlimit_server::backend::Backend;
use ringlimit_server::config::DomainConfig;
use ringlimit_server::proto::rls::rate_limit_response::Code;
use ringlimit_server::proto::rls::rate_limit_service_client::RateLimitServiceClient;
use ringlimit_server::proto::rls::RateLimitResponse;
use support::{call, code, is_over, request, start, Redis};
use tonic::transport::Channel;

/// Three an hour for each key, in each algorithm; the bucket holds three and refills one an
/// hour, so it is `burst`, not `requests_per_unit`, that lets the first three pass.
const LIMITS: &str = "\
domain: algorithms
descriptors:
  - key: fixed
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: sliding
    rate_limit: {unit: hour, requests_per_unit: 3, algorithm: sliding_window, buckets: 6}
  - key: log
    rate_limit: {unit: hour, requests_per_unit: 3, algorithm: sliding_log}
  - key: bucket
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: token_bucket, burst: 3}
";

const KEYS: [&str; 4] = ["fixed", "sliding", "log", "bucket"];

/// A directory holding one file of `limits`.
fn limits_dir(limits: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("limits.yaml"), limits).expect("the limits file");
    dir
}

/// The first status's remaining count and limit.
fn first(reply: &RateLimitResponse) -> (u32, Option<u32>) {
    let status = &reply.statuses[0];
    let limit = status.current_limit.as_ref().map(|l| l.requests_per_unit);
    (status.limit_remaining, limit)
}

/// The verdicts every backend must give for `LIMITS`.
async fn decide_each_algorithm(client: &mut RateLimitServiceClient<Channel>) {
    for key in KEYS {
        let one: &[(&str, &str)] = &[(key, "alice")];
        for remaining in [2, 1, 0] {
            let reply = call(client, request("algorithms", &[one], 1)).await;
            assert!(!is_over(&reply), "{key}: {reply:?}");
            let per_unit = if key == "bucket" { 1 } else { 3 };
            assert_eq!(first(&reply), (remaining, Some(per_unit)), "{key}");
        }
        let refused = call(client, request("algorithms", &[one], 1)).await;
        assert!(is_over(&refused), "{key}: {refused:?}");
        assert_eq!(code(&refused.statuses[0]), Code::OverLimit, "{key}");
        let reset = refused.statuses[0]
            .duration_until_reset
            .expect("a time until reset");
        assert!(
            reset.seconds > 0 && reset.seconds <= 3_600,
            "{key}: {reset:?}"
        );
    }

    // All or nothing across algorithms: each exhausted limit refuses a request that also
    // names a fresh key of every other algorithm, and those keys stay whole.
    for (at, exhausted) in KEYS.iter().enumerate() {
        let bob = format!("bob{at}");
        let full: Vec<(&str, &str)> = KEYS.iter().map(|key| (*key, bob.as_str())).collect();
        let mut descriptors: Vec<&[(&str, &str)]> = full.iter().map(std::slice::from_ref).collect();
        let drained: &[(&str, &str)] = &[(exhausted, "alice")];
        descriptors.push(drained);
        let refused = call(client, request("algorithms", &descriptors, 1)).await;
        assert!(is_over(&refused), "{exhausted}: {refused:?}");
        for entry in &full {
            let alone = call(
                client,
                request("algorithms", &[std::slice::from_ref(entry)], 1),
            )
            .await;
            assert!(!is_over(&alone), "{entry:?}");
            assert_eq!(
                alone.statuses[0].limit_remaining, 2,
                "{entry:?} was counted by a request refused by {exhausted}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_algorithm_decides_in_process() {
    let dir = limits_dir(LIMITS);
    let (_server, mut client) = start(dir.path(), Backend::local()).await;
    decide_each_algorithm(&mut client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_algorithm_decides_on_redis() {
    let Some(redis) = Redis::start("tests/algorithms.rs") else {
        return;
    };
    let dir = limits_dir(LIMITS);
    let backend = Backend::Redis(ringlimit_redis::Connection::open(&redis.url()).unwrap());
    let (_server, mut client) = start(dir.path(), backend).await;
    decide_each_algorithm(&mut client).await;
}

#[test]
fn a_field_of_another_algorithm_is_an_error_naming_file_line_and_field() {
    let burst = "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_log, burst: 9}\n";
    let shown = DomainConfig::parse("limits/d.yaml", burst)
        .unwrap_err()
        .to_string();
    assert!(shown.starts_with("limits/d.yaml:5:"), "{shown}");
    assert!(shown.contains("descriptors[1].rate_limit.burst"), "{shown}");
    assert!(
        shown.contains("token_bucket") && shown.contains("sliding_log"),
        "{shown}"
    );

    let buckets = "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 5, buckets: 4}\n";
    let shown = DomainConfig::parse("b.yaml", buckets)
        .unwrap_err()
        .to_string();
    assert!(
        shown.contains("rate_limit.buckets") && shown.contains("fixed_window"),
        "{shown}"
    );

    // In their own algorithm, both load.
    let fine = "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: 9}\n  - key: s\n    rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window, buckets: 4}\n";
    DomainConfig::parse("c.yaml", fine).expect("loads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_whose_names_read_alike_count_apart() {
    // `key: a_b` (any value) and `key: a, value: b` are both named `d.a_b` in metrics; each
    // keeps its own limiter and counters.
    let dir = limits_dir("domain: d\ndescriptors:\n  - key: a_b\n    rate_limit: {unit: hour, requests_per_unit: 1}\n  - key: a\n    value: b\n    rate_limit: {unit: hour, requests_per_unit: 5}\n");
    let (server, mut client) = start(dir.path(), Backend::local()).await;
    assert_eq!(server.limits().rule_count(), 2);
    let fixed: &[(&str, &str)] = &[("a", "b")];
    assert_eq!(
        first(&call(&mut client, request("d", &[fixed], 1)).await),
        (4, Some(5))
    );
    let any: &[(&str, &str)] = &[("a_b", "")];
    assert_eq!(
        first(&call(&mut client, request("d", &[any], 1)).await),
        (0, Some(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_never_holds_a_permit_of_the_limits_after_the_refusal() {
    // One client's requests are refused by a closed limit before they reach `hot`; another's
    // reach `hot` first (taken, then given back when the closed limit refuses). `hot` has
    // one permit: if the first client's requests took it even briefly, the second would
    // sometimes find it gone.
    let dir = limits_dir("domain: d\ndescriptors:\n  - key: closed\n    rate_limit: {unit: hour, requests_per_unit: 0}\n  - key: hot\n    rate_limit: {unit: hour, requests_per_unit: 1}\n");
    let (server, mut first) = start(dir.path(), Backend::local()).await;
    const CLOSED: &[(&str, &str)] = &[("closed", "x")];
    const HOT: &[(&str, &str)] = &[("hot", "x")];
    let calls = 2_000;
    let refused_first = tokio::spawn(async move {
        for _ in 0..calls {
            let reply = call(&mut first, request("d", &[CLOSED, HOT], 1)).await;
            assert!(is_over(&reply));
        }
    });
    let mut client = RateLimitServiceClient::connect(format!("http://{}", server.grpc_addr()))
        .await
        .unwrap();
    let mut hot_gone = 0;
    for _ in 0..calls {
        let reply = call(&mut client, request("d", &[HOT, CLOSED], 1)).await;
        hot_gone += usize::from(code(&reply.statuses[0]) == Code::OverLimit);
    }
    refused_first.await.unwrap();
    assert_eq!(
        hot_gone, 0,
        "of {calls} requests, {hot_gone} found hot's permit held"
    );
}
