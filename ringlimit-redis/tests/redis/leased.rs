//! Leased mode on a real Redis: several nodes lease batches from one fixed window; the
//! fleet never admits more than the limit in a server window, and under-admits at most
//! nodes × batch while demand lasts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ringlimit::WindowQuota;
use ringlimit_redis::{Connection, Error, LeasedWindow, Source};

use crate::support;

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// The server's clock minus this process's wall clock, in µs, from `TIME` (within a
/// round trip: the midpoint).
fn server_offset_us(url: &str) -> i64 {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_connection().unwrap();
    let before = now_us();
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(&mut connection).unwrap();
    let after = now_us();
    secs * 1_000_000 + micros - (before + after) / 2
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_never_exceed_the_window_and_waste_at_most_their_batches() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    const LIMIT: u64 = 400;
    const WINDOW_MS: u64 = 250;
    const NODES: usize = 3;
    const BATCH: u64 = 16;
    let offset = server_offset_us(&server.url());
    // Each admission as the local wall-clock interval (µs) of the call that made it.
    let admissions = Arc::new(Mutex::new(Vec::<(i64, i64)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    let mut nodes = Vec::new();
    for _ in 0..NODES {
        let connection = Connection::open(&server.url())
            .unwrap()
            .timeout(Duration::from_secs(2));
        let quota = WindowQuota::per(LIMIT, Duration::from_millis(WINDOW_MS)).unwrap();
        let node = LeasedWindow::builder(&connection, "search", quota)
            .max_batch(BATCH)
            .build()
            .unwrap();
        nodes.push(node.clone());
        for _ in 0..4 {
            let (node, admissions, stop) =
                (node.clone(), Arc::clone(&admissions), Arc::clone(&stop));
            tasks.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                let window_us = (WINDOW_MS * 1000) as i64;
                while !stop.load(Ordering::Relaxed) {
                    // Odd server windows: light demand (about 300 calls over the first 60%,
                    // none after), so pools still hold leased permits when they end; even
                    // windows: as much demand as the tasks can make. A pool whose permits
                    // outlived their window would show as an even window above the limit.
                    let server = now_us() + offset;
                    if server.div_euclid(window_us) % 2 == 1 {
                        if server.rem_euclid(window_us) >= window_us * 6 / 10 {
                            let to_next = window_us - server.rem_euclid(window_us);
                            tokio::time::sleep(Duration::from_micros(to_next as u64)).await;
                            continue;
                        }
                        tokio::time::sleep(Duration::from_millis(6)).await;
                    }
                    let start = now_us();
                    let verdict = node.check(1).await.unwrap();
                    assert_eq!(verdict.source, Source::Leased);
                    if verdict.decision.is_admitted() {
                        mine.push((start, now_us()));
                    }
                    tokio::task::yield_now().await;
                }
                admissions.lock().unwrap().extend(mine);
            }));
        }
    }
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(WINDOW_MS * 10)).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed();
    let window_us = (WINDOW_MS * 1000) as i64;
    let mut per_window = std::collections::BTreeMap::<i64, u64>::new();
    let mut ambiguous = 0;
    for &(start, end) in admissions.lock().unwrap().iter() {
        // The admission happened within the call; in server time within a millisecond more
        // (the offset is measured within half a round trip). A call spanning a boundary
        // cannot be attributed.
        let (first, last) = (
            (start + offset - 1_000).div_euclid(window_us),
            (end + offset + 1_000).div_euclid(window_us),
        );
        if first != last {
            ambiguous += 1;
            continue;
        }
        *per_window.entry(first).or_default() += 1;
    }
    let windows: Vec<u64> = per_window.values().copied().collect();
    let saturated: Vec<u64> = per_window
        .iter()
        .filter(|(w, _)| *w % 2 == 0)
        .map(|(_, &c)| c)
        .collect();
    let total = admissions.lock().unwrap().len();
    let leases: Vec<u64> = nodes.iter().map(LeasedWindow::leases).collect();
    assert!(windows.len() >= 6, "{windows:?} over {elapsed:?}, {total} admissions, {ambiguous} ambiguous, offset {offset} µs, leases {leases:?}");
    for &count in &windows {
        assert!(
            count <= LIMIT,
            "a window admitted {count} > {LIMIT}: {windows:?}"
        );
    }
    // Saturated windows in the middle: at most nodes × batch unused, and
    // the ambiguous admissions near the boundaries may belong to either side.
    for &count in &saturated[1..saturated.len() - 1] {
        assert!(
            count + NODES as u64 * BATCH + ambiguous >= LIMIT,
            "a window admitted only {count} (batch {BATCH}, {NODES} nodes, {ambiguous} ambiguous): {windows:?}"
        );
    }
    let leases: u64 = nodes.iter().map(LeasedWindow::leases).sum();
    let admitted: u64 = windows.iter().sum();
    assert!(
        leases * 4 < admitted,
        "{leases} leases for {admitted} admissions"
    );
}

/// `check(n)` with `n` above what one lease brings is decided (leasing as often as it
/// takes), and a window with fewer than `n` left refuses `n` at once and still serves
/// smaller requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_larger_than_a_batch_are_decided() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let leased = LeasedWindow::builder(
        &support::connection(&server),
        "big",
        WindowQuota::per_minute(100_000).unwrap(),
    )
    .max_batch(64)
    .build()
    .unwrap();
    for n in [60, 10, 64, 1, 64] {
        let verdict = tokio::time::timeout(Duration::from_secs(2), leased.check(n))
            .await
            .expect("check(n) must return");
        assert!(verdict.unwrap().decision.is_admitted(), "n = {n}");
    }
    // A window with fewer than `n` left refuses `n` at once, and still serves smaller ones.
    let small = LeasedWindow::builder(
        &support::connection(&server),
        "small",
        WindowQuota::per_minute(10).unwrap(),
    )
    .max_batch(10)
    .build()
    .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(2), small.check(7))
        .await
        .unwrap()
        .unwrap();
    assert!(first.decision.is_admitted());
    let second = tokio::time::timeout(Duration::from_secs(2), small.check(10))
        .await
        .unwrap()
        .unwrap();
    assert!(!second.decision.is_admitted(), "{second:?}");
}

/// A window too short for leases is a typed error at build; near a window's end `check`
/// neither leases again and again nor wastes the window's permits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_near_the_end_of_a_window_neither_spin_nor_waste() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let too_short = LeasedWindow::builder(
        &support::connection(&server),
        "tiny",
        WindowQuota::per(1000, Duration::from_millis(1)).unwrap(),
    )
    .build();
    assert!(matches!(
        too_short,
        Err(Error::Quota(
            ringlimit_redis::QuotaError::WindowTooShortForLeases { .. }
        ))
    ));
    let leased = LeasedWindow::builder(
        &support::connection(&server),
        "short",
        WindowQuota::per(1000, Duration::from_millis(20)).unwrap(),
    )
    .max_batch(64)
    .build()
    .unwrap();
    let started = std::time::Instant::now();
    let mut calls = 0u64;
    while started.elapsed() < Duration::from_millis(300) {
        tokio::time::timeout(Duration::from_millis(200), leased.check(1))
            .await
            .expect("check must return")
            .unwrap();
        calls += 1;
    }
    // Per 20 ms window: batches of 64 until fewer than 128 are left, then halving (1000 / 64
    // + 8 leases), and in the last ~2 ms one call per request (a round trip each, a few
    // dozen); a spinning lease made thousands.
    let windows = 300 / 20 + 2;
    assert!(
        leased.leases() <= windows * 100,
        "{} leases in {windows} windows ({calls} calls)",
        leased.leases()
    );
}

/// An unlimited leased window admits every call without a lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlimited_leased_window_admits() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let leased = LeasedWindow::builder(
        &support::connection(&server),
        "free",
        WindowQuota::unlimited(),
    )
    .build()
    .unwrap();
    let verdict = leased.check(5).await.unwrap();
    assert!(verdict.decision.is_admitted());
    assert_eq!(verdict.source, Source::Unlimited);
}
