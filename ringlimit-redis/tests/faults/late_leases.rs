//! A lease whose reply comes after the call's timeout is counted on Redis and never reaches
//! the pool: it is given back to its window, so that the permits counted on Redis and not
//! admitted stay within the documented `nodes × batch`.

use std::time::{Duration, Instant};

use ringlimit::WindowQuota;
use ringlimit_redis::{LeasedWindow, OnFailure, Source};

use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_leases_are_given_back() {
    let Some((server, proxy, connection)) = support::proxied() else {
        return;
    };
    // About two weeks: no window ends during the test.
    let quota = WindowQuota::per(1_000_000, Duration::from_secs(1_200_000)).unwrap();
    let leased = LeasedWindow::builder(&connection, "late", quota)
        .max_batch(64)
        .on_failure(OnFailure::Closed)
        .build()
        .unwrap();
    let mut admitted = 0u64;
    let decide = async |admitted: &mut u64| {
        let verdict = leased.check(1).await.unwrap();
        if verdict.decision.is_admitted()
            && matches!(verdict.source, Source::Leased | Source::Redis)
        {
            *admitted += 1;
        }
    };
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(500) {
        decide(&mut admitted).await;
    }
    // Every lease's reply now comes 80 ms after its request, past the 50 ms timeout.
    proxy.set_delay(Duration::from_millis(40));
    let slow = Instant::now();
    while slow.elapsed() < Duration::from_secs(2) {
        decide(&mut admitted).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    proxy.set_delay(Duration::ZERO);
    // Late replies still on their way are given back when they come.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut raw = server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let counted: u64 = redis::cmd("HGET")
        .arg(&keys[0])
        .arg("c")
        .query_async(&mut raw)
        .await
        .unwrap();
    let lost = counted - admitted;
    eprintln!(
        "counted on Redis {counted}, admitted {admitted}, lost {lost}, leases {}",
        leased.leases()
    );
    // What is left of the one lease in the pool: at most a batch.
    assert!(
        lost <= 64,
        "{lost} permits counted on Redis and never admitted"
    );
}
