//! The test harness itself (`tests/support`): real `redis-server` processes start, answer,
//! die, come back empty, pause and resume; a real Redis Cluster starts, serves keys, fails
//! over to a replica when a master dies, takes the old master back; nothing is left behind;
//! and without `redis-server` a test says SKIPPED (or fails, in CI).

use std::process::Command;
use std::time::{Duration, Instant};

use redis::Value;
use support::{RedisCluster, RedisServer};

use crate::support;

/// Whether process `pid` exists and is a `redis-server` (a reused pid would be another
/// program).
fn redis_process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim_end().starts_with("redis-server"))
}

#[test]
fn server_starts_answers_ping_set_and_get() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    assert_eq!(
        server.url(),
        format!("redis://127.0.0.1:{}/", server.port())
    );
    assert!(redis_process_alive(server.pid()), "pid {}", server.pid());
    assert_eq!(server.query::<String>(&["PING"]), "PONG");
    assert_eq!(server.command(&["SET", "k", "v"]), Value::Okay);
    assert_eq!(server.query::<String>(&["GET", "k"]), "v");
    // Through the redis crate's own client too, with the URL.
    let mut connection = server
        .client()
        .get_connection()
        .expect("connecting with the URL");
    let got: Option<String> = redis::cmd("GET")
        .arg("k")
        .query(&mut connection)
        .expect("GET");
    assert_eq!(got.as_deref(), Some("v"));
    // No persistence.
    assert_eq!(
        server.query::<Vec<String>>(&["CONFIG", "GET", "save"]),
        ["save", ""]
    );
    assert_eq!(
        server.query::<Vec<String>>(&["CONFIG", "GET", "appendonly"]),
        ["appendonly", "no"]
    );
}

#[test]
fn kill_fails_connections_and_restart_comes_back_empty_on_the_same_port() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let (port, pid) = (server.port(), server.pid());
    server.command(&["SET", "k", "v"]);
    let mut open = server.connection();

    server.kill();
    assert!(!server.is_running());
    assert!(!redis_process_alive(pid), "pid {pid} survived kill()");
    let error = server
        .try_command(&["PING"], Duration::from_millis(500))
        .expect_err("a killed server answered PING");
    assert!(error.is_connection_refusal(), "{error:?}");
    redis::cmd("PING")
        .query::<String>(&mut open)
        .expect_err("a connection to the killed server still works");

    server.restart();
    assert!(server.is_running());
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), pid);
    assert_eq!(server.query::<String>(&["PING"]), "PONG");
    assert_eq!(server.command(&["GET", "k"]), Value::Nil, "data survived");
    assert_eq!(server.query::<i64>(&["DBSIZE"]), 0);

    // restart() on a running server kills it first.
    server.command(&["SET", "k", "v"]);
    let pid = server.pid();
    server.restart();
    assert!(!redis_process_alive(pid));
    assert_eq!(server.query::<i64>(&["DBSIZE"]), 0);
}

#[test]
fn pause_times_commands_out_and_resume_answers_them() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut open = server.connection();
    open.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("set_read_timeout");
    assert_eq!(
        redis::cmd("PING").query::<String>(&mut open).unwrap(),
        "PONG"
    );

    server.pause();
    let started = Instant::now();
    let error = redis::cmd("PING")
        .query::<String>(&mut open)
        .expect_err("a paused server answered");
    let waited = started.elapsed();
    assert!(error.is_timeout(), "{error:?}");
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(2),
        "timed out after {waited:?}, not about 200 ms"
    );
    // A new connection: the kernel accepts it, nobody answers the handshake.
    let error = server
        .try_command(&["PING"], Duration::from_millis(200))
        .expect_err("a paused server answered a new connection");
    assert!(error.is_timeout(), "{error:?}");

    server.resume();
    assert_eq!(
        server
            .try_query::<String>(&["PING"], Duration::from_millis(200))
            .expect("PING after resume"),
        "PONG"
    );
    assert_eq!(server.query::<String>(&["PING"]), "PONG");
}

#[test]
fn drop_kills_reaps_and_removes_the_directory() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let Some(paused) = RedisServer::start() else {
        return;
    };
    paused.pause(); // a stopped process dies too
    let killed_pid = server.pid();
    server.kill();
    server.restart(); // the restarted process is the one to go
    let pids = [killed_pid, server.pid(), paused.pid()];
    let dirs = [server.dir().to_owned(), paused.dir().to_owned()];
    assert!(dirs.iter().all(|dir| dir.join("redis.log").is_file()));
    drop(server);
    drop(paused);
    for pid in pids {
        // Reaped too: a zombie would still be a `redis-server` in /proc.
        assert!(!redis_process_alive(pid), "pid {pid} survived drop");
    }
    for dir in dirs {
        assert!(!dir.exists(), "{} survived drop", dir.display());
    }
}

#[test]
fn servers_started_in_parallel_get_their_own_ports() {
    let servers: Vec<Option<RedisServer>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                // Named for a SKIPPED line (it names the thread).
                std::thread::Builder::new()
                    .name(format!(
                        "servers_started_in_parallel_get_their_own_ports#{i}"
                    ))
                    .spawn_scoped(scope, RedisServer::start)
                    .expect("spawning a thread")
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let Some(servers) = servers.into_iter().collect::<Option<Vec<_>>>() else {
        return;
    };
    let mut ports: Vec<u16> = servers.iter().map(RedisServer::port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), servers.len(), "a port was handed out twice");
    for (i, server) in servers.iter().enumerate() {
        let key = format!("k{i}");
        server.command(&["SET", &key, "v"]);
        assert_eq!(server.query::<Vec<String>>(&["KEYS", "*"]), [key]);
    }
}

#[test]
fn cluster_serves_keys_fails_over_and_takes_the_old_master_back() {
    let started = Instant::now();
    let Some(mut cluster) = RedisCluster::start() else {
        return;
    };
    let start_time = started.elapsed();
    assert_eq!(cluster.len(), 6);
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3, "masters {masters:?}");
    for &master in &masters {
        let replica = cluster.replica_of(master).expect("a replica per master");
        assert!(!masters.contains(&replica));
    }

    // Keys on every master, through the redis crate's cluster client.
    let keys: Vec<String> = (0..30).map(|i| format!("harness:{i}")).collect();
    let mut connection = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    for key in &keys {
        redis::cmd("SET")
            .arg(key)
            .arg(format!("value of {key}"))
            .query::<()>(&mut connection)
            .expect("SET");
    }
    for key in &keys {
        let got: String = redis::cmd("GET")
            .arg(key)
            .query(&mut connection)
            .expect("GET");
        assert_eq!(got, format!("value of {key}"));
    }
    let served: std::collections::BTreeSet<usize> =
        keys.iter().map(|key| cluster.master_for_key(key)).collect();
    assert_eq!(served.len(), 3, "30 keys on only {served:?}");

    // The master of keys[0] dies; its replica, holding the key, takes over.
    let key = &keys[0];
    let victim = cluster.master_for_key(key);
    let heir = cluster.replica_of(victim).expect("a replica");
    let direct: String = cluster.node(victim).query(&["GET", key]);
    assert_eq!(direct, format!("value of {key}"));
    // WAIT on the connections that wrote (a new connection's WAIT waits for nothing): the
    // cluster client sends it to every master and reports the fewest acknowledgements.
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut connection)
        .expect("WAIT");
    assert_eq!(acked, 1, "a replica did not acknowledge the writes");
    let victim_pid = cluster.node(victim).pid();
    cluster.kill_node(victim);
    assert!(!redis_process_alive(victim_pid));
    assert!(!cluster.urls().contains(&cluster.node(victim).url()));
    let failover = cluster.wait_ok(Duration::from_secs(30));
    assert_eq!(
        cluster.master_for_key(key),
        heir,
        "the replica was not promoted"
    );
    assert_eq!(cluster.masters().len(), 3);
    let mut connection = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    for key in &keys {
        let got: String = redis::cmd("GET")
            .arg(key)
            .query(&mut connection)
            .unwrap_or_else(|error| {
                panic!(
                    "GET {key} after the failover: {error}; direct on heir {heir}: {:?}; \
                     heir's CLUSTER NODES:\n{}\n{}",
                    cluster.node(heir).command(&["GET", key]),
                    cluster.node(heir).query::<String>(&["CLUSTER", "NODES"]),
                    cluster.log_tails(40)
                )
            });
        assert_eq!(got, format!("value of {key}"));
    }

    // The old master comes back as the new one's replica.
    cluster.restart_node(victim);
    let rejoin = cluster.wait_ok(Duration::from_secs(30));
    assert_eq!(cluster.replica_of(heir), Some(victim));
    let role: String = cluster.node(victim).query(&["INFO", "replication"]);
    assert!(role.contains("role:slave"), "{role}");
    assert_eq!(cluster.master_for_key(key), heir);
    eprintln!(
        "cluster: start {start_time:?}, failover {failover:?}, rejoin {rejoin:?}, \
         total {:?}",
        started.elapsed()
    );

    let pids = cluster.pids();
    let dirs: Vec<_> = (0..cluster.len())
        .map(|i| cluster.node(i).dir().to_owned())
        .collect();
    assert!(pids.iter().all(|&pid| redis_process_alive(pid)));
    drop(cluster);
    for pid in pids {
        assert!(!redis_process_alive(pid), "pid {pid} survived drop");
    }
    assert!(dirs.iter().all(|dir| !dir.exists()));
}

/// Run by [`without_redis_server_a_test_says_skipped_or_fails_in_ci`] in a child process
/// whose `PATH` has no `redis-server`.
#[test]
#[ignore = "run by without_redis_server_a_test_says_skipped_or_fails_in_ci, without redis-server"]
fn start_without_redis_server() {
    if RedisServer::start().is_some() || RedisCluster::start().is_some() {
        panic!("started without redis-server on PATH");
    }
}

#[test]
fn without_redis_server_a_test_says_skipped_or_fails_in_ci() {
    let skip_log =
        std::env::temp_dir().join(format!("ringlimit-redis-skip-log-{}", std::process::id()));
    let run = |ci: &str| {
        let _ = std::fs::remove_file(&skip_log);
        Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--ignored",
                "--exact",
                "harness::start_without_redis_server",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("PATH", "/nonexistent")
            .env("CI", ci)
            .env("RINGLIMIT_SKIP_LOG", &skip_log)
            .output()
            .expect("running the test binary")
    };

    let out = run("");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    let logged = std::fs::read_to_string(&skip_log).expect("the skip log");
    let expected = [
        "SKIPPED: harness::start_without_redis_server (RedisServer::start): redis-server not found \
         (apt-get install redis-server)",
        "SKIPPED: harness::start_without_redis_server (RedisCluster::start): redis-server not found \
         (apt-get install redis-server)",
    ];
    assert_eq!(logged.lines().collect::<Vec<_>>(), expected);
    for line in expected {
        assert!(stderr.contains(line), "{stderr}");
    }

    let out = run("true");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "passed in CI without redis-server");
    assert!(
        stderr.contains("redis-server not found (apt-get install redis-server); CI must have it"),
        "{stderr}"
    );
    assert!(!stderr.contains("SKIPPED"), "{stderr}");
    let _ = std::fs::remove_file(&skip_log);
}
