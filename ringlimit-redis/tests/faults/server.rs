//! Faults of a real `redis-server` while limiters are in use: the server killed (SIGKILL)
//! and restarted, its scripts flushed (`SCRIPT FLUSH`), the server stalled (SIGSTOP) beyond
//! the call timeout, and, with Redis down, the local shares of a fleet of nodes.
//!
//! What every test asserts: the limiter's failure policy decides within about the call
//! timeout (each call is measured), nothing panics or hangs (every await is guarded), every
//! fallback is counted, Redis decides again within a bounded time after the fault ends, and
//! the limits hold afterwards, checked on the server's times of Redis's decisions. Each test
//! prints what it measured (`cargo test -p ringlimit-redis --test faults server:: -- --nocapture`).

use std::time::{Duration, Instant};

use ringlimit::outcome::Decision;
use ringlimit::{BucketQuota, WindowQuota};
use ringlimit_redis::{
    Algorithm, Connection, Fleet, OnFailure, RedisLimiter, Source, RETRY_AFTER_FAILURE,
};
use support::RedisServer;

use crate::checks::{self, blocking, hammer, local_max_in_window, summary, within, Call, HANG};
use crate::support;

/// The call timeout of every connection here.
const CALL_TIMEOUT: Duration = Duration::from_millis(50);
/// What a call may take, at most, whatever happens to the server: the timeout and then some
/// for a 2-core machine shared with builds.
const CALL_BOUND: Duration = Duration::from_millis(300);
/// How soon after the server is back Redis must decide again: the presumed-down circuit
/// ([`RETRY_AFTER_FAILURE`]) plus a reconnect, with a wide margin.
const RETURN_BOUND: Duration = Duration::from_secs(2);
/// After this long back, Redis decides (nearly) every call: see
/// [`checks::assert_mostly_redis`].
const SETTLED: Duration = Duration::from_secs(1);
/// The fleet's heartbeat period.
const BEAT: Duration = Duration::from_millis(100);

const WINDOW: Duration = Duration::from_millis(500);
const LIMIT: u64 = 20;
/// The token bucket: one permit every 25 ms, 10 at most at once.
const PERIOD: Duration = Duration::from_millis(25);
const BURST: u64 = 10;

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("key{i}")).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// SIGKILL, then a restart (same port, empty: persistence is off).
    Kill,
    /// SIGSTOP, then SIGCONT.
    Pause,
}

/// The three limiters of the outage tests: one per failure policy, one algorithm each.
struct Limiters {
    /// Fixed window, fails closed.
    closed: RedisLimiter,
    /// Token bucket, fails open.
    open: RedisLimiter,
    /// Exact log, falls back to this node's share (a fleet of one: the whole quota).
    local: RedisLimiter,
}

/// Hammers the three limiters, applies `fault` mid-run, ends it, and checks every policy
/// during the outage and the limits before and after.
async fn outage(fault: Fault) {
    let Some(mut server) = blocking(RedisServer::start) else {
        return;
    };
    let epoch = Instant::now();
    let connection = Connection::open(&server.url())
        .expect("connection")
        .timeout(CALL_TIMEOUT);
    let fleet = within(
        "Fleet::join",
        HANG,
        Fleet::join(&connection, "outage", BEAT, 1),
    )
    .await;
    assert_eq!(fleet.live_nodes(), 1);
    let window = WindowQuota::per(LIMIT, WINDOW).unwrap();
    let bucket = BucketQuota::new(ringlimit::Rate::every(PERIOD).unwrap(), BURST).unwrap();
    let limiters = Limiters {
        closed: RedisLimiter::builder(&connection, "closed", Algorithm::FixedWindow(window))
            .on_failure(OnFailure::Closed)
            .build()
            .unwrap(),
        open: RedisLimiter::builder(&connection, "open", Algorithm::TokenBucket(bucket))
            .on_failure(OnFailure::Open)
            .build()
            .unwrap(),
        local: RedisLimiter::builder(&connection, "local", Algorithm::SlidingLog(window))
            .on_failure(OnFailure::LocalShare(fleet.clone()))
            .build()
            .unwrap(),
    };
    let keys = keys(3);
    let pace = Duration::from_millis(2);
    let hammers = [
        hammer(&limiters.closed, 0, &keys, 3, epoch, pace),
        hammer(&limiters.open, 1, &keys, 3, epoch, pace),
        hammer(&limiters.local, 2, &keys, 3, epoch, pace),
    ];

    tokio::time::sleep(Duration::from_millis(1200)).await;
    let fault_begin = epoch.elapsed();
    match fault {
        Fault::Kill => blocking(|| server.kill()),
        Fault::Pause => blocking(|| server.pause()),
    }
    let fault_done = epoch.elapsed();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let recover_begin = epoch.elapsed();
    match fault {
        Fault::Kill => blocking(|| server.restart()),
        Fault::Pause => blocking(|| server.resume()),
    }
    let recovered = epoch.elapsed();
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let mut all = Vec::new();
    for hammer in hammers {
        all.push(hammer.stop().await);
    }
    let [closed, open, local] = <[Vec<Call>; 3]>::try_from(all).unwrap();
    println!(
        "{fault:?}: fault at {fault_begin:?}..{fault_done:?}, recovery at \
         {recover_begin:?}..{recovered:?}"
    );

    for (limiter, calls, source) in [
        (&limiters.closed, &closed, Source::FailClosed),
        (&limiters.open, &open, Source::FailOpen),
        (&limiters.local, &local, Source::LocalShare),
    ] {
        let name = limiter.name();
        // Every call returned within about the timeout, whatever the server did.
        let slowest = calls.iter().max_by_key(|c| c.took()).unwrap();
        assert!(
            slowest.took() < CALL_BOUND,
            "{name}: a call took {:?} (bound {CALL_BOUND:?}): {slowest:?}",
            slowest.took()
        );
        let before: Vec<&Call> = calls.iter().filter(|c| c.end < fault_begin).collect();
        let during: Vec<&Call> = calls
            .iter()
            .filter(|c| c.start >= fault_done && c.end < recover_begin)
            .collect();
        let after: Vec<&Call> = calls.iter().filter(|c| c.start >= recovered).collect();
        println!("{name} before: {}", summary(&before));
        println!("{name} during: {}", summary(&during));
        println!("{name} after:  {}", summary(&after));
        checks::assert_mostly_redis(&format!("{name} before the fault"), &before);
        // During the outage the policy decides, every call of it.
        assert!(during.len() > 20, "{name}: too few calls during the outage");
        assert!(
            during.iter().all(|c| c.verdict.source == source),
            "{name}: not all decided by {source:?} during the outage: {}",
            summary(&during)
        );
        match source {
            Source::FailClosed => assert!(during.iter().all(|c| c.verdict.decision
                == Decision::Refused {
                    available: 0,
                    retry_after: RETRY_AFTER_FAILURE
                })),
            Source::FailOpen => assert!(during.iter().all(|c| c.admitted())),
            _ => assert!(during.iter().any(|c| c.admitted())),
        }
        // Every fallback was counted, and only those.
        let fallbacks = calls.iter().filter(|c| !c.is_redis()).count() as u64;
        assert_eq!(limiter.fallbacks(), fallbacks, "{name}: fallbacks()");
        // How soon the policy took over, and how soon Redis decided again.
        let first_fallback = calls
            .iter()
            .find(|c| c.start >= fault_begin && !c.is_redis())
            .unwrap();
        let first_back = after
            .iter()
            .find(|c| c.is_redis())
            .unwrap_or_else(|| panic!("{name}: Redis never decided again"));
        println!(
            "{name}: fell back {:?} after the fault (that call took {:?}); Redis decided \
             again {:?} after recovery; slowest call {:?}",
            first_fallback.end.saturating_sub(fault_done),
            first_fallback.took(),
            first_back.end - recovered,
            slowest.took()
        );
        assert!(
            first_fallback.end < fault_done + CALL_BOUND,
            "{name}: the policy took over only {:?} after the fault",
            first_fallback.end.saturating_sub(fault_done)
        );
        assert!(
            first_back.end < recovered + RETURN_BOUND,
            "{name}: Redis decided again only {:?} after recovery",
            first_back.end - recovered
        );
        let late: Vec<&Call> = after
            .iter()
            .copied()
            .filter(|c| c.start >= recovered + SETTLED)
            .collect();
        checks::assert_mostly_redis(&format!("{name} {SETTLED:?} after recovery"), &late);
    }

    // The limits, checked on the server's times of Redis's decisions: before the fault, and
    // after it. A restarted server is empty (persistence is off, as for a cache that lost
    // its data): the counts of the window of the kill are lost, so each segment is checked
    // on its own. A resumed server kept its state: then the whole run is checked as one.
    // It also runs, when it resumes, the scripts sent while it was stalled (one call per
    // connection every RETRY_AFTER_FAILURE gets through the presumed-down circuit and times
    // out): the server counts those permits although the policy decided the calls. That
    // is under-admission only (measured on a Cluster master stalled 800 ms: 3 calls sent,
    // 3 permits counted on resume, none twice), and these checks, on the admissions the
    // clients saw, hold with them.
    let segments = |calls: &[Call]| -> Vec<Vec<Call>> {
        let before = calls
            .iter()
            .filter(|c| c.end < fault_begin)
            .copied()
            .collect();
        let after = calls
            .iter()
            .filter(|c| c.start >= recover_begin)
            .copied()
            .collect();
        match fault {
            Fault::Kill => vec![before, after],
            Fault::Pause => vec![before, after, calls.to_vec()],
        }
    };
    // Exact, not only below, before the fault: the tasks ask far more than the limit
    // (unless a stall made the policy decide for a while).
    let full = |s: usize, calls: &[Call]| s == 0 && calls.iter().all(Call::is_redis);
    for (s, calls) in segments(&closed).iter().enumerate() {
        let what = format!("closed (fixed window), segment {s}");
        let algorithm = limiters.closed.algorithm();
        checks::assert_exact(&what, algorithm, calls, keys.len(), full(s, calls));
    }
    for (s, calls) in segments(&open).iter().enumerate() {
        let what = format!("open (token bucket), segment {s}");
        checks::assert_exact(&what, limiters.open.algorithm(), calls, keys.len(), false);
    }
    for (s, calls) in segments(&local).iter().enumerate() {
        let what = format!("local (log), segment {s}");
        let algorithm = limiters.local.algorithm();
        checks::assert_exact(&what, algorithm, calls, keys.len(), full(s, calls));
    }
    // The local share during the outage: a fleet of one holds the whole quota, per key, in
    // every interval of the window (the local exact log), on the client's clock.
    for key in 0..keys.len() {
        let during: Vec<&Call> = local
            .iter()
            .filter(|c| c.key == key && c.verdict.source == Source::LocalShare)
            .collect();
        let most = local_max_in_window(&during, WINDOW);
        println!("local share, key {key}: at most {most} in a window of {WINDOW:?}");
        assert!(
            most <= LIMIT,
            "local share, key {key}: {most} in one window"
        );
    }
}

/// SIGKILL mid-run, restart on the same port: each policy decides within the timeout while
/// the server is gone, Redis decides again soon after the restart, limits hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_and_restart_policies_apply_then_redis_decides_again() {
    outage(Fault::Kill).await;
}

/// SIGSTOP beyond the timeout: calls time out within the timeout and the policy decides;
/// after SIGCONT Redis decides again, with the state it kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_server_times_out_then_redis_decides_after_resume() {
    outage(Fault::Pause).await;
}

/// `SCRIPT FLUSH` over and over while two connections hammer every algorithm: no call
/// fails (redis-rs loads the script again on `NOSCRIPT`), Redis decides every call, and
/// the limits are exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_mid_run_reloads_and_limits_stay_exact() {
    let Some(server) = blocking(RedisServer::start) else {
        return;
    };
    let epoch = Instant::now();
    let window = WindowQuota::per(LIMIT, WINDOW).unwrap();
    let sliding = window.buckets(5).unwrap();
    let bucket = BucketQuota::new(ringlimit::Rate::every(PERIOD).unwrap(), BURST).unwrap();
    let algorithms = [
        ("fixed", Algorithm::FixedWindow(window)),
        ("sliding", Algorithm::SlidingWindow(sliding)),
        ("log", Algorithm::SlidingLog(window)),
        ("gcra", Algorithm::TokenBucket(bucket)),
    ];
    let keys = keys(2);
    let mut hammers = Vec::new();
    // Two client connections (two nodes), each with a limiter per algorithm on shared keys.
    for node in 0..2 {
        // A timeout well above a reload's (NOSCRIPT, SCRIPT LOAD, EVALSHA: three round
        // trips): the point here is that no call fails, not how fast; on a busy 2-core
        // machine a reload now and then exceeds 50 ms and the policy would decide.
        let connection = Connection::open(&server.url())
            .unwrap()
            .timeout(Duration::from_millis(500));
        for (a, (name, algorithm)) in algorithms.iter().enumerate() {
            let limiter = RedisLimiter::builder(&connection, name, *algorithm)
                .build()
                .unwrap();
            hammers.push((
                a,
                limiter.clone(),
                hammer(&limiter, node, &keys, 2, epoch, Duration::from_millis(1)),
            ));
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let flushes = 25;
    blocking(|| {
        for _ in 0..flushes {
            assert_eq!(server.query::<String>(&["SCRIPT", "FLUSH"]), "OK");
            std::thread::sleep(Duration::from_millis(60));
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut by_algorithm: Vec<Vec<Call>> = vec![Vec::new(); algorithms.len()];
    for (a, limiter, hammer) in hammers {
        let calls = hammer.stop().await;
        assert_eq!(limiter.fallbacks(), 0, "{}: fallbacks", limiter.name());
        by_algorithm[a].extend(calls);
    }
    let stats: String = server.query(&["INFO", "commandstats"]);
    let loads = stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_script|load:calls="))
        .and_then(|rest| rest.split(',').next()?.parse::<u64>().ok())
        .unwrap_or(0);
    println!("SCRIPT FLUSH x{flushes}: the scripts were loaded again {loads} times");
    assert!(
        loads >= flushes / 2,
        "only {loads} SCRIPT LOADs after {flushes} flushes: were the scripts flushed?"
    );
    for (a, calls) in by_algorithm.iter_mut().enumerate() {
        calls.sort_by_key(|c| c.start);
        let (name, _) = algorithms[a];
        let refs: Vec<&Call> = calls.iter().collect();
        println!("{name}: {}", summary(&refs));
        assert!(
            calls.iter().all(Call::is_redis),
            "{name}: not every decision from Redis"
        );
        let slowest = calls.iter().map(Call::took).max().unwrap();
        assert!(slowest < CALL_BOUND, "{name}: a call took {slowest:?}");
        checks::assert_exact(name, algorithms[a].1, calls, keys.len(), true);
    }
}

/// A server that is down when the connection is made (the lazy first connection fails):
/// the policy decides within the timeout, a fleet that never reached Redis assumes the
/// deployment's size, and once the server is up Redis decides and the fleet counts itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_at_start_then_up() {
    let Some(mut server) = blocking(RedisServer::start) else {
        return;
    };
    blocking(|| server.kill());
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(CALL_TIMEOUT);
    let fleet = within(
        "Fleet::join",
        HANG,
        Fleet::join(&connection, "down", BEAT, 4),
    )
    .await;
    assert_eq!(fleet.live_nodes(), 4, "assumed until a beat answers");
    let quota = WindowQuota::per(LIMIT, Duration::from_secs(10)).unwrap();
    let local = RedisLimiter::builder(&connection, "local", Algorithm::FixedWindow(quota))
        .on_failure(OnFailure::LocalShare(fleet.clone()))
        .build()
        .unwrap();
    let closed = RedisLimiter::builder(&connection, "closed", Algorithm::FixedWindow(quota))
        .build()
        .unwrap();
    let mut admitted = 0;
    for i in 0..LIMIT {
        let start = Instant::now();
        let verdict = within("local check", HANG, local.check("k", 1))
            .await
            .unwrap();
        assert!(
            start.elapsed() < CALL_BOUND,
            "call {i} took {:?}",
            start.elapsed()
        );
        assert_eq!(verdict.source, Source::LocalShare);
        admitted += u64::from(verdict.decision.is_admitted());
        let verdict = within("closed check", HANG, closed.check("k", 1))
            .await
            .unwrap();
        assert_eq!(verdict.source, Source::FailClosed);
    }
    assert_eq!(
        admitted,
        LIMIT / 4,
        "a quarter of the quota: 4 nodes assumed"
    );
    blocking(|| server.restart());
    let back = Instant::now();
    loop {
        let verdict = within("closed check", HANG, closed.check("k", 1))
            .await
            .unwrap();
        if verdict.source == Source::Redis {
            break;
        }
        assert!(
            back.elapsed() < RETURN_BOUND,
            "Redis does not decide {RETURN_BOUND:?} after it came up"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "down at start: Redis decided {:?} after it came up",
        back.elapsed()
    );
    within("beat", HANG, fleet.beat()).await;
    assert_eq!(
        fleet.live_nodes(),
        1,
        "the fleet counted itself once Redis answered"
    );
}

/// One simulated node of a fleet: its own connection (so its own presumed-down circuit) and
/// its membership.
async fn node(server: &RedisServer, group: &str, assumed: u64) -> (Connection, Fleet) {
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(CALL_TIMEOUT);
    let fleet = within(
        "Fleet::join",
        HANG,
        Fleet::join(&connection, group, BEAT, assumed),
    )
    .await;
    (connection, fleet)
}

/// Polls `done` every 5 ms until it holds; how long that took. Fails after `limit`.
async fn until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    start.elapsed()
}

/// Three fleets (three nodes) in one group: each counts three; one leaving makes the others
/// count two within a beat; one that stops beating (crashed) drops out when its heartbeat
/// expires (three beats after its last) and the others see it at their next beat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_counts_follow_nodes_joining_leaving_and_stopping() {
    let Some(server) = blocking(RedisServer::start) else {
        return;
    };
    let (_c0, a) = node(&server, "members", 1).await;
    let (_c1, b) = node(&server, "members", 1).await;
    let (_c2, c) = node(&server, "members", 1).await;
    let ids = [a.node_id(), b.node_id(), c.node_id()];
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
    let joined = until("all count 3", 3 * BEAT + Duration::from_millis(200), || {
        [&a, &b, &c].iter().all(|f| f.live_nodes() == 3)
    })
    .await;
    within("leave", HANG, c.leave()).await;
    let left = until("2 after a leave", 3 * BEAT, || {
        a.live_nodes() == 2 && b.live_nodes() == 2
    })
    .await;
    // b stops beating without leaving, as a crashed process would: dropping its last
    // handle ends its beat task. Its entry expires 3 beats after its last beat; a reads
    // the count at its next beat: at most 4 beats after b's last beat.
    drop(b);
    let stopped = until(
        "1 after a node stops",
        4 * BEAT + Duration::from_millis(150),
        || a.live_nodes() == 1,
    )
    .await;
    assert!(
        stopped >= 2 * BEAT,
        "the stopped node dropped out after only {stopped:?}: its heartbeat lives 3 beats"
    );
    println!(
        "fleet (beat {BEAT:?}): all counted 3 after {joined:?}; 2 after a leave in {left:?}; \
         1 after a node stopped beating in {stopped:?}"
    );
}

/// Three nodes with a local-share limiter each (the exact log, 30 per second per key:
/// a share of 10 each): with Redis killed, each node admits at most 10 in any second for
/// a key, and the three together at most 30; the count of live nodes is kept while Redis
/// is down; after the restart the nodes count themselves again and Redis decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_shares_split_the_quota_across_live_nodes_while_redis_is_down() {
    let Some(mut server) = blocking(RedisServer::start) else {
        return;
    };
    let quota_limit = 30;
    let window = Duration::from_secs(1);
    let quota = WindowQuota::per(quota_limit, window).unwrap();
    let mut nodes = Vec::new();
    for _ in 0..3 {
        let (connection, fleet) = node(&server, "shares", 3).await;
        let limiter = RedisLimiter::builder(&connection, "shared", Algorithm::SlidingLog(quota))
            .on_failure(OnFailure::LocalShare(fleet.clone()))
            .build()
            .unwrap();
        nodes.push((fleet, limiter));
    }
    until("all count 3", 3 * BEAT + Duration::from_millis(200), || {
        nodes.iter().all(|(f, _)| f.live_nodes() == 3)
    })
    .await;
    blocking(|| server.kill());
    let epoch = Instant::now();
    let keys = keys(2);
    let hammers: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, (_, limiter))| hammer(limiter, i, &keys, 2, epoch, Duration::from_millis(2)))
        .collect();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for (fleet, _) in &nodes {
        assert_eq!(
            fleet.live_nodes(),
            3,
            "the last count is kept while Redis is down"
        );
    }
    let mut all = Vec::new();
    for (i, hammer) in hammers.into_iter().enumerate() {
        let calls = hammer.stop().await;
        let limiter = &nodes[i].1;
        assert!(
            calls.iter().all(|c| c.verdict.source == Source::LocalShare),
            "node {i}: not every decision from the local share"
        );
        assert_eq!(
            limiter.fallbacks(),
            calls.len() as u64,
            "node {i}: fallbacks()"
        );
        all.extend(calls);
    }
    let share = quota_limit / 3;
    for key in 0..keys.len() {
        for n in 0..3 {
            let mine: Vec<&Call> = all.iter().filter(|c| c.key == key && c.node == n).collect();
            let most = local_max_in_window(&mine, window);
            let admitted = mine.iter().filter(|c| c.admitted()).count();
            println!(
                "key {key}, node {n}: {admitted} admitted in 2.5 s, at most {most} in a window"
            );
            assert!(
                most <= share,
                "key {key}, node {n}: {most} in a window (share {share})"
            );
            assert!(
                admitted as u64 >= share,
                "key {key}, node {n}: its share unused"
            );
        }
        let ours: Vec<&Call> = all.iter().filter(|c| c.key == key).collect();
        let most = local_max_in_window(&ours, window);
        println!("key {key}, the three nodes: at most {most} in a window (quota {quota_limit})");
        assert!(
            most <= quota_limit,
            "key {key}: {most} in a window across nodes"
        );
    }
    blocking(|| server.restart());
    // The restarted server is empty; the nodes announce themselves again at their next
    // beats (which also tell their connections Redis is back).
    let back = Instant::now();
    loop {
        let members: u64 = blocking(|| server.query(&["ZCARD", "{ringlimit:nodes:shares}"]));
        if members == 3 {
            break;
        }
        assert!(
            back.elapsed() < RETURN_BOUND,
            "{members} nodes announced after the restart"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let back = back.elapsed();
    for (i, (_, limiter)) in nodes.iter().enumerate() {
        let start = Instant::now();
        loop {
            let verdict = within("check", HANG, limiter.check("after", 1))
                .await
                .unwrap();
            if verdict.source == Source::Redis {
                break;
            }
            assert!(
                start.elapsed() < RETURN_BOUND,
                "node {i}: Redis does not decide again"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    println!("after the restart all 3 nodes had announced themselves again within {back:?}");
}

/// A call timeout longer than the default is the one that applies: a server that answers
/// only after 200 ms (stalled, then resumed) is waited for, and Redis decides, both for the
/// first call (which connects) and for a later one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_longer_than_the_default_is_the_one_that_applies() {
    let Some(server) = blocking(RedisServer::start) else {
        return;
    };
    let server = std::sync::Arc::new(server);
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(Duration::from_secs(2));
    let quota = WindowQuota::per(LIMIT, Duration::from_secs(10)).unwrap();
    let limiter = RedisLimiter::builder(&connection, "slow", Algorithm::FixedWindow(quota))
        .build()
        .unwrap();
    for call in ["the first call (connecting)", "a later call"] {
        blocking(|| server.pause());
        let resume = {
            let server = server.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                server.resume();
            })
        };
        let start = Instant::now();
        let verdict = within(call, HANG, limiter.check("k", 1)).await.unwrap();
        let took = start.elapsed();
        blocking(|| resume.join().expect("resuming the server"));
        println!(
            "{call}, the server stalled 200 ms: {:?} after {took:?}",
            verdict.source
        );
        assert_eq!(
            verdict.source,
            Source::Redis,
            "{call}: the policy decided after {took:?}, within the 2 s timeout"
        );
        assert!(took >= Duration::from_millis(150), "{call}: {took:?}");
    }
    assert_eq!(limiter.fallbacks(), 0);
}
