//! Limiters on a real local Redis Cluster (3 masters, a replica each): every algorithm
//! works, its keys spread over every master and the log's two keys share a slot; the limits
//! are exact under concurrency from several cluster connections; and a master killed
//! mid-run: the failure policy decides while its slots are down, its replica takes over,
//! Redis decides again and the limits hold. Each test prints what it measured (`cargo test
//! -p ringlimit-redis --test faults cluster:: -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use ringlimit::{BucketQuota, Rate, WindowQuota};
use ringlimit_redis::{Algorithm, Connection, OnFailure, RedisLimiter, Source};
use support::proxy::Proxy;
use support::RedisCluster;

use crate::checks::{self, blocking, hammer, summary, until_redis, within, Call, HANG};
use crate::support;

/// What a call may take, at most, whatever the cluster does.
const CALL_BOUND: Duration = Duration::from_millis(300);

fn algorithms() -> [(&'static str, Algorithm); 4] {
    let window = WindowQuota::per(20, Duration::from_millis(500)).unwrap();
    let bucket = BucketQuota::new(Rate::every(Duration::from_millis(25)).unwrap(), 10).unwrap();
    [
        ("fixed", Algorithm::FixedWindow(window)),
        (
            "sliding",
            Algorithm::SlidingWindow(window.buckets(5).unwrap()),
        ),
        ("log", Algorithm::SlidingLog(window)),
        ("gcra", Algorithm::TokenBucket(bucket)),
    ]
}

/// The same algorithms with minute-long spans, so that a key's state outlives the checks
/// that look for it on its master (a bucket of 25 ms expires 25 ms after one admission).
fn long_algorithms() -> [(&'static str, Algorithm); 4] {
    let window = WindowQuota::per(20, Duration::from_secs(60)).unwrap();
    let bucket = BucketQuota::new(Rate::every(Duration::from_secs(6)).unwrap(), 10).unwrap();
    [
        ("fixed", Algorithm::FixedWindow(window)),
        (
            "sliding",
            Algorithm::SlidingWindow(window.buckets(5).unwrap()),
        ),
        ("log", Algorithm::SlidingLog(window)),
        ("gcra", Algorithm::TokenBucket(bucket)),
    ]
}

fn text(key: &[u8]) -> String {
    String::from_utf8(key.to_vec()).expect("ASCII keys")
}

/// Every algorithm on the cluster: keys of 32 users land on all three masters (by slot,
/// and the state is on that master), the log's two keys share a slot (no CROSSSLOT); then
/// three cluster connections hammer two keys per algorithm and the limits are exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_algorithm_on_the_cluster_spread_over_masters_and_exact() {
    let Some(cluster) = blocking(RedisCluster::start) else {
        return;
    };
    let masters: BTreeSet<usize> = blocking(|| cluster.masters()).into_iter().collect();
    assert_eq!(masters.len(), 3);
    // Generous timeouts: this test is about answers, not speed (a busy 2-core machine runs
    // six servers here).
    let mut connections = Vec::new();
    for _ in 0..3 {
        let connection = within(
            "Connection::cluster",
            HANG,
            Connection::cluster(cluster.urls()),
        )
        .await
        .expect("cluster connection")
        .timeout(Duration::from_millis(500));
        assert!(connection.is_cluster());
        connections.push(connection);
    }
    for (name, algorithm) in long_algorithms() {
        let limiter = RedisLimiter::builder(&connections[0], name, algorithm)
            .build()
            .unwrap();
        let mut owners = BTreeMap::new();
        for user in 0..32 {
            let key = format!("user{user}");
            let verdict = within("check", HANG, limiter.check(&key, 1))
                .await
                .unwrap_or_else(|error| panic!("{name} {key}: {error}"));
            assert_eq!(verdict.source, Source::Redis, "{name} {key}");
            assert!(verdict.decision.is_admitted(), "{name} {key}");
            let redis_keys: Vec<String> = limiter
                .redis_keys(&key)
                .unwrap()
                .iter()
                .map(|k| text(k))
                .collect();
            let slots: BTreeSet<u16> =
                blocking(|| redis_keys.iter().map(|k| cluster.slot_for_key(k)).collect());
            assert_eq!(slots.len(), 1, "{name}: {redis_keys:?} in slots {slots:?}");
            let slot = *slots.first().unwrap();
            let master = blocking(|| cluster.master_for_slot(slot));
            for k in &redis_keys {
                let exists: u64 = blocking(|| cluster.node(master).query(&["EXISTS", k]));
                assert_eq!(
                    exists, 1,
                    "{name}: {k} is not on node {master}, its slot's master"
                );
            }
            *owners.entry(master).or_insert(0) += 1;
        }
        println!("{name}: 32 keys on masters {owners:?}");
        assert_eq!(
            owners.keys().copied().collect::<BTreeSet<_>>(),
            masters,
            "{name}: keys not on every master"
        );
    }

    let epoch = Instant::now();
    let keys: Vec<String> = (0..2).map(|k| format!("hot{k}")).collect();
    let mut hammers = Vec::new();
    for (node, connection) in connections.iter().enumerate() {
        for (a, (name, algorithm)) in algorithms().into_iter().enumerate() {
            let limiter = RedisLimiter::builder(connection, name, algorithm)
                .prefix("exact")
                .build()
                .unwrap();
            let h = hammer(&limiter, node, &keys, 2, epoch, Duration::from_millis(1));
            hammers.push((a, limiter, h));
        }
    }
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let mut by_algorithm: Vec<Vec<Call>> = vec![Vec::new(); 4];
    for (a, limiter, h) in hammers {
        by_algorithm[a].extend(h.stop().await);
        assert_eq!(limiter.fallbacks(), 0, "{}: fallbacks", limiter.name());
    }
    for (a, (name, algorithm)) in algorithms().into_iter().enumerate() {
        let calls = &mut by_algorithm[a];
        calls.sort_by_key(|c| c.start);
        let refs: Vec<&Call> = calls.iter().collect();
        println!(
            "{name} on the cluster, 3 connections x 2 tasks: {}",
            summary(&refs)
        );
        assert!(calls.iter().all(Call::is_redis), "{name}: a fallback");
        checks::assert_exact(name, algorithm, calls, keys.len(), true);
    }
}

/// The master owning a hot key killed mid-run (SIGKILL): while its slots are down the
/// policy of each limiter decides within the timeout (a fail-closed fixed window, a
/// fail-open token bucket); its replica is promoted; Redis decides again; the limits hold.
///
/// What a failover may lose: Redis replicates asynchronously, so writes the master made
/// just before it died may not have reached the replica, and after the promotion those
/// admissions are forgotten (at most the admissions of the last replication delay, on
/// loopback well under a millisecond; nothing here when the key was quiet for a while
/// before the kill, which the 10-second log below checks). The hammered limits here have
/// windows (500 ms) and a bucket (250 ms) shorter than the outage (the node timeout of 1 s
/// plus the election), so no window or bucket holds admissions of both masters: each
/// window is checked against the limit exactly, before and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_killed_mid_run_policy_applies_then_replica_takes_over() {
    let Some(mut cluster) = blocking(RedisCluster::start) else {
        return;
    };
    // With the default `cluster-require-full-coverage yes`, once the dead master is marked
    // failed (about a node timeout after the kill) every master answers CLUSTERDOWN for
    // every key until the replica is promoted: then every limiter's policy decides, rightly
    // (measured: a key on a healthy master fell back from 1.3 s after the kill until the
    // promotion at 2.1 s). Served partially instead, the other masters go on deciding
    // their keys, which shows that one master's failure is not taken for the cluster's.
    for node in 0..cluster.len() {
        let ok: String = blocking(|| {
            cluster
                .node(node)
                .query(&["CONFIG", "SET", "cluster-require-full-coverage", "no"])
        });
        assert_eq!(ok, "OK");
    }
    let connection = within(
        "Connection::cluster",
        HANG,
        Connection::cluster(cluster.urls()),
    )
    .await
    .expect("cluster connection")
    .timeout(Duration::from_millis(50));
    let [(_, fixed), _, _, (_, gcra)] = algorithms();
    let closed = RedisLimiter::builder(&connection, "closed", fixed)
        .on_failure(OnFailure::Closed)
        .build()
        .unwrap();
    let open = RedisLimiter::builder(&connection, "open", gcra)
        .on_failure(OnFailure::Open)
        .build()
        .unwrap();
    let other = RedisLimiter::builder(&connection, "other", fixed)
        .on_failure(OnFailure::Closed)
        .build()
        .unwrap();
    // `{hot}`: a hash tag, so both limiters' state for it lives in the slot of `hot`.
    let hot = "{hot}".to_owned();
    let hot_slot = blocking(|| cluster.slot_for_key("hot"));
    for limiter in [&closed, &open] {
        let keys = limiter.redis_keys(&hot).unwrap();
        assert_eq!(blocking(|| cluster.slot_for_key(&text(&keys[0]))), hot_slot);
    }
    let master = blocking(|| cluster.master_for_slot(hot_slot));
    let replica = blocking(|| cluster.replica_of(master)).expect("the master has a replica");
    // A key on another master.
    let cold = (0..)
        .map(|i| format!("{{cold{i}}}"))
        .find(|k| blocking(|| cluster.master_for_key(k)) != master)
        .unwrap();

    // A long log filled before the kill, then left quiet: its state must survive.
    let log_quota = WindowQuota::per(10, Duration::from_secs(20)).unwrap();
    let log = RedisLimiter::builder(&connection, "log", Algorithm::SlidingLog(log_quota))
        .build()
        .unwrap();
    for _ in 0..10 {
        let verdict = within("log", HANG, log.check(&hot, 1)).await.unwrap();
        assert!(verdict.decision.is_admitted() && verdict.source == Source::Redis);
    }

    let epoch = Instant::now();
    let keys = [hot.clone()];
    let pace = Duration::from_millis(2);
    let hammers = [
        hammer(&closed, 0, &keys, 3, epoch, pace),
        hammer(&open, 1, &keys, 3, epoch, pace),
        hammer(&other, 2, std::slice::from_ref(&cold), 2, epoch, pace),
    ];
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let kill_begin = epoch.elapsed();
    blocking(|| cluster.kill_node(master));
    let killed = epoch.elapsed();
    let waited = blocking(|| cluster.wait_ok(Duration::from_secs(30)));
    let promoted = epoch.elapsed();
    assert_eq!(
        blocking(|| cluster.master_for_slot(hot_slot)),
        replica,
        "the replica took over"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut all = Vec::new();
    for h in hammers {
        all.push(h.stop().await);
    }
    let [closed_calls, open_calls, cold_calls] = <[Vec<Call>; 3]>::try_from(all).unwrap();
    println!(
        "killed node {master} (the master of slot {hot_slot}) at {kill_begin:?}..{killed:?}; \
         its replica {replica} promoted and the cluster ok {waited:?} later"
    );
    let mut first_backs = Vec::new();
    for (limiter, calls, source) in [
        (&closed, &closed_calls, Source::FailClosed),
        (&open, &open_calls, Source::FailOpen),
    ] {
        let name = limiter.name();
        let slowest = calls.iter().max_by_key(|c| c.took()).unwrap();
        assert!(
            slowest.took() < CALL_BOUND,
            "{name}: a call took {:?}: {slowest:?}",
            slowest.took()
        );
        let before: Vec<&Call> = calls.iter().filter(|c| c.end < kill_begin).collect();
        let first_fallback = calls
            .iter()
            .find(|c| c.start >= killed && !c.is_redis())
            .unwrap_or_else(|| panic!("{name}: no fallback with its master dead"));
        let first_back = calls
            .iter()
            .find(|c| c.start > first_fallback.end && c.is_redis())
            .unwrap_or_else(|| panic!("{name}: Redis never decided again"));
        // The outage as the limiter saw it: from its first fallback to Redis deciding again.
        let during: Vec<&Call> = calls
            .iter()
            .filter(|c| c.start >= killed && c.end < first_back.start)
            .collect();
        let after: Vec<&Call> = calls.iter().filter(|c| c.start >= promoted).collect();
        println!("{name} before: {}", summary(&before));
        println!("{name} during: {}", summary(&during));
        println!("{name} after:  {}", summary(&after));
        println!(
            "{name}: fell back {:?} after the kill (that call took {:?}); Redis decided again \
             {:?} after the kill, {:?} after the cluster was ok; slowest call {:?}",
            first_fallback.end.saturating_sub(killed),
            first_fallback.took(),
            first_back.end.saturating_sub(killed),
            first_back.end.saturating_sub(promoted),
            slowest.took()
        );
        checks::assert_mostly_redis(&format!("{name} before the kill"), &before);
        assert!(
            first_fallback.end < killed + CALL_BOUND,
            "{name}: the policy took over only {:?} after the kill",
            first_fallback.end.saturating_sub(killed)
        );
        assert!(
            during.iter().all(|c| c.verdict.source == source),
            "{name}: not all decided by {source:?} while the slot was down: {}",
            summary(&during)
        );
        assert_eq!(
            limiter.fallbacks(),
            calls.iter().filter(|c| !c.is_redis()).count() as u64,
            "{name}: fallbacks()"
        );
        assert!(
            first_back.end < promoted + Duration::from_secs(2),
            "{name}: Redis decided again only {:?} after the cluster was ok",
            first_back.end.saturating_sub(promoted)
        );
        let late: Vec<&Call> = after
            .iter()
            .copied()
            .filter(|c| c.start >= first_back.end.max(promoted) + Duration::from_secs(1))
            .collect();
        checks::assert_mostly_redis(&format!("{name} a second after it was back"), &late);
        first_backs.push(first_back.end);
        // The limits, on the server's times, across the failover (see above: no window
        // or bucket holds admissions of both masters).
        checks::assert_exact(name, limiter.algorithm(), calls, 1, false);
    }
    let refs: Vec<&Call> = cold_calls.iter().collect();
    println!("other (a key on another master): {}", summary(&refs));
    // A key on another master: Redis goes on deciding it while the hot key's master is
    // dead. Not always every call: a Cluster connection now and then holds every request
    // while it refreshes its slots, and a call that times out is decided by the policy.
    // With one presumed-down flag for the whole connection (before 316e5a1 here, 91d8ffd on
    // main), every failure of the dead master's slots made it fall back too: 86% of its
    // calls while the slot was down.
    let hot_down = (killed, first_backs.iter().min().copied().unwrap());
    let other_during: Vec<&Call> = cold_calls
        .iter()
        .filter(|c| c.start >= hot_down.0 && c.end < hot_down.1)
        .collect();
    let redis = other_during.iter().filter(|c| c.is_redis()).count();
    println!(
        "other, while the hot slot was down: {} ({:.0}% from Redis)",
        summary(&other_during),
        checks::percent(redis, other_during.len())
    );
    assert!(
        other_during.len() > 100 && redis * 10 >= other_during.len() * 8,
        "other: the failure policy decided a key whose master is up: {}",
        summary(&other_during)
    );
    let slowest = cold_calls.iter().map(Call::took).max().unwrap();
    assert!(slowest < CALL_BOUND, "other: a call took {slowest:?}");
    assert_eq!(
        other.fallbacks(),
        cold_calls.iter().filter(|c| !c.is_redis()).count() as u64
    );
    checks::assert_exact("other", other.algorithm(), &cold_calls, 1, false);

    // The log filled 20 s long before the kill, quiet since: the replica had every write,
    // so the promoted master still refuses the key (nothing lost, no over-admission).
    let survivor: u64 = blocking(|| {
        cluster
            .node(replica)
            .query(&["ZCARD", &text(&log.redis_keys(&hot).unwrap()[0])])
    });
    let verdict = within("log after the failover", HANG, log.check(&hot, 1))
        .await
        .unwrap();
    println!("the 20 s log on the promoted master: {survivor} of 10 admissions kept; {verdict:?}");
    assert_eq!(
        survivor, 10,
        "the replica lost writes made well before the kill"
    );
    assert_eq!(verdict.source, Source::Redis);
    assert!(
        !verdict.decision.is_admitted(),
        "the log forgot its admissions in the failover"
    );
}

/// A master's connection that goes silent (open, carrying nothing) while new connections
/// to it work is replaced: Redis decides that master's keys again within a few seconds,
/// where the connection would otherwise stay, and every call on those keys fall back, for
/// as long as it stays open. The master is reached through a proxy: it announces the
/// proxy's port to the cluster, and the client is given the other nodes only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_master_connection_is_replaced() {
    let Some(cluster) = blocking(RedisCluster::start) else {
        return;
    };
    let master = blocking(|| cluster.masters())[0];
    let key = (0..)
        .map(|i| format!("k{i}"))
        .find(|key| {
            let redis_key = format!("{{ringlimit:silent:{key}}}");
            blocking(|| cluster.master_for_key(&redis_key)) == master
        })
        .unwrap();
    let node = cluster.node(master);
    let proxy = Proxy::start(node.port());
    let bus_port = (node.port() + 10_000).to_string();
    let proxy_port = proxy.port().to_string();
    blocking(|| {
        node.query::<()>(&["CONFIG", "SET", "cluster-announce-bus-port", &bus_port]);
        node.query::<()>(&["CONFIG", "SET", "cluster-announce-port", &proxy_port]);
    });
    let others: Vec<usize> = (0..cluster.len()).filter(|&i| i != master).collect();
    let announced = format!(":{proxy_port}@");
    let deadline = Instant::now() + Duration::from_secs(10);
    while others.iter().any(|&i| {
        !blocking(|| cluster.node(i).query::<String>(&["CLUSTER", "NODES"])).contains(&announced)
    }) {
        assert!(
            Instant::now() < deadline,
            "the cluster never learned the proxy's port"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let urls: Vec<String> = others.iter().map(|&i| cluster.node(i).url()).collect();
    let connection = within("Connection::cluster", HANG, Connection::cluster(urls))
        .await
        .expect("cluster connection");
    let limiter = RedisLimiter::builder(
        &connection,
        "silent",
        Algorithm::FixedWindow(WindowQuota::per_minute(1_000_000).unwrap()),
    )
    .on_failure(OnFailure::Closed)
    .build()
    .unwrap();
    assert!(
        until_redis(&limiter, &key, Duration::from_secs(5))
            .await
            .is_some(),
        "Redis never decided"
    );
    assert!(
        proxy.accepted() > 0,
        "the master is not reached through the proxy"
    );

    // The open connection carries nothing from now on; new ones work.
    proxy.silence();
    proxy.release_new();
    let back = until_redis(&limiter, &key, Duration::from_secs(10)).await;
    println!(
        "silent master connection: Redis decided again after {back:?} ({} fallbacks)",
        limiter.fallbacks()
    );
    assert!(limiter.fallbacks() > 0, "the silence was never seen");
    let back = back.expect("the silent connection was never replaced");
    assert!(
        back < Duration::from_secs(5),
        "replaced only after {back:?}"
    );
}
