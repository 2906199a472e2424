//! Real Redis servers for the integration tests: [`RedisServer`] (one `redis-server`) and
//! [`RedisCluster`] (a local Redis Cluster of 3 masters with 1 replica each). Every test file
//! shares this module through `mod support;`.
//!
//! Each server is its own `redis-server` process on a free loopback port (`127.0.0.1`), with
//! persistence off (`--save ""`, `--appendonly no`), its own temporary directory (`--dir`)
//! and its output in `redis.log` there. Dropping a server (also while a test panics, on
//! unwind) kills it with SIGKILL, reaps it and removes its directory, so no process is left
//! behind. Ports are probed by binding port 0, never handed out twice within a process, and
//! a start that loses its port to another process is retried on a new one.
//!
//! # SKIPPED
//!
//! Without `redis-server` on `PATH` (or `redis-cli`, for a cluster) `start()` returns `None`
//! and the test returns early:
//!
//! ```ignore
//! let Some(server) = support::RedisServer::start() else { return };
//! ```
//!
//! It first says so, in capitals: `SKIPPED: <test> (<what>): redis-server not found
//! (apt-get install redis-server)`, with `eprintln!` (which `cargo test` shows only for
//! failing tests or with `--nocapture`) and, when the environment variable
//! `RINGLIMIT_SKIP_LOG` names a file, as one line appended to that file: CI sets it, and
//! fails if the file is not empty afterwards. When the environment variable `CI` is set (not
//! empty, `0` or `false`), a missing tool is a failure instead: `start()` panics.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread::sleep;
use std::time::{Duration, Instant};

pub mod proxy;

use redis::cluster::ClusterClient;
use redis::{Connection, FromRedisValue, RedisResult, Value};

/// How long a server may take to answer PING after it was spawned.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many fresh ports a start tries when the one it probed is taken meanwhile.
const START_ATTEMPTS: usize = 20;
/// Connect, read and write timeout of the helper commands ([`RedisServer::command`]).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a cluster may take to be created and to have every replica attached.
const CLUSTER_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines of a server's log in a panic message.
const LOG_TAIL_LINES: usize = 30;
/// The cluster bus listens on the client port + this.
const BUS_OFFSET: u16 = 10000;
/// All the slots of a Redis Cluster.
const SLOTS: u32 = 16384;

/// Arguments of every server: loopback only, no persistence, the harness reaps it.
/// `--repl-diskless-sync-delay 0`: a replica's first sync starts at once (the default waits
/// 5 s for more replicas).
const BASE_ARGS: &[&str] = &[
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--daemonize",
    "no",
    "--repl-diskless-sync-delay",
    "0",
];

/// Arguments of a cluster node. A replica validity factor of 0: a replica always tries to
/// take over from its failed master, however long its link was down.
const CLUSTER_ARGS: &[&str] = &[
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-node-timeout",
    "1000",
    "--cluster-replica-validity-factor",
    "0",
];

// --- SKIPPED ------------------------------------------------------------------------------

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0")
}

/// Whether `tool --version` runs (`false` only when there is no such program).
fn on_path(tool: &str) -> bool {
    match Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => true,
        Err(error) if error.kind() == ErrorKind::NotFound => false,
        Err(error) => panic!("running `{tool} --version`: {error}"),
    }
}

/// `true` if `tool` is on `PATH`; otherwise panics in CI, or reports SKIPPED and returns
/// `false`.
fn require(tool: &str, package: &str, what: &str) -> bool {
    static FOUND: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());
    let found = {
        let mut found = FOUND.lock().unwrap_or_else(PoisonError::into_inner);
        match found.iter().find(|(name, _)| name == tool) {
            Some(&(_, on)) => on,
            None => {
                let on = on_path(tool);
                found.push((tool.to_owned(), on));
                on
            }
        }
    };
    if found {
        return true;
    }
    let reason = format!("{tool} not found (apt-get install {package})");
    assert!(
        !in_ci(),
        "{what}: {reason}; CI must have it (`CI` is set; .ci/run installs it)"
    );
    let test = std::thread::current()
        .name()
        .unwrap_or("<unnamed thread>")
        .to_owned();
    let line = format!("SKIPPED: {test} ({what}): {reason}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("RINGLIMIT_SKIP_LOG").filter(|log| !log.is_empty()) {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut file| writeln!(file, "{line}"))
            .unwrap_or_else(|error| {
                panic!("appending to RINGLIMIT_SKIP_LOG={}: {error}", log.display())
            });
    }
    false
}

// --- ports and directories ----------------------------------------------------------------

/// Every port handed out in this process (and, for cluster nodes, its bus port): never
/// handed out again, so two servers of one test binary never race for one port.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port that was free a moment ago (and, with `bus`, port + 10000 too).
fn free_port(bus: bool) -> u16 {
    for _ in 0..1000 {
        let port = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .unwrap_or_else(|error| panic!("binding 127.0.0.1:0 to probe a free port: {error}"))
            .port();
        let bus_port = port.checked_add(BUS_OFFSET);
        if bus {
            match bus_port {
                Some(bus_port) if TcpListener::bind(("127.0.0.1", bus_port)).is_ok() => {}
                _ => continue,
            }
        }
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
        // A plain server's port may be a later cluster node's bus port: that node checks.
        if handed_out.contains(&port) || bus_port.is_some_and(|b| handed_out.contains(&b)) {
            continue;
        }
        handed_out.insert(port);
        if bus {
            handed_out.extend(bus_port);
        }
        return port;
    }
    panic!("no free loopback port (with bus port: {bus}) in 1000 probes");
}

/// A new, empty directory under the system's temporary directory.
fn new_dir(port: u16) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ringlimit-redis-{}-{}-{port}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    // Left over from a process of the same id that was killed: not ours any more.
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)
        .unwrap_or_else(|error| panic!("creating the server directory {}: {error}", dir.display()));
    dir
}

fn cmd(args: &[&str]) -> redis::Cmd {
    let (name, rest) = args
        .split_first()
        .expect("a Redis command needs at least its name");
    let mut cmd = redis::cmd(name);
    for arg in rest {
        cmd.arg(*arg);
    }
    cmd
}

/// The value of `field:` in an `INFO` or `CLUSTER INFO` reply.
fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        line.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

/// The state letter of a process (`T` when stopped), from `/proc`; `None` without one.
fn process_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

// --- RedisServer --------------------------------------------------------------------------

/// One `redis-server` process of this test; see the [module docs](self).
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    /// Arguments after [`BASE_ARGS`] (a cluster node's).
    args: Vec<String>,
    /// `None` once killed (or exited).
    child: Option<Child>,
    /// The pid of the current process, or of the last one once killed.
    pid: u32,
}

/// A start that lost its port to another process.
struct PortTaken;

impl RedisServer {
    /// Starts a server on a free port and waits until it answers PING; `None` (after saying
    /// SKIPPED) without `redis-server` on `PATH` outside CI. Panics if it cannot start.
    pub fn start() -> Option<Self> {
        Self::start_with_args(&[])
    }

    /// [`start`](Self::start) with more `redis-server` arguments, e.g.
    /// `&["--maxmemory", "10mb"]`.
    pub fn start_with_args(args: &[&str]) -> Option<Self> {
        if !require("redis-server", "redis-server", "RedisServer::start") {
            return None;
        }
        Some(Self::spawn_new(args, false))
    }

    /// A running server on a fresh port (with its bus port free too, for a cluster node).
    fn spawn_new(args: &[&str], bus: bool) -> Self {
        let mut last_log = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port(bus);
            let mut server = RedisServer {
                port,
                dir: new_dir(port),
                args: args.iter().map(|&arg| arg.to_owned()).collect(),
                child: None,
                pid: 0,
            };
            match server.launch() {
                Ok(()) => return server,
                // Dropping `server` removes its directory; try another port.
                Err(PortTaken) => last_log = server.log_tail(),
            }
        }
        panic!(
            "redis-server did not start in {START_ATTEMPTS} attempts: each lost its port to \
             another process; last log:\n{last_log}"
        );
    }

    /// Spawns the process on `self.port` and waits until it answers PING.
    fn launch(&mut self) -> Result<(), PortTaken> {
        assert!(self.child.is_none(), "launch: already running");
        let log_path = self.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap_or_else(|error| panic!("opening {}: {error}", log_path.display()));
        let _ = writeln!(log, "=== harness: starting on port {}", self.port);
        let port = self.port.to_string();
        let child = Command::new("redis-server")
            .args(["--port", &port, "--dir"])
            .arg(&self.dir)
            .args(BASE_ARGS)
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(
                log.try_clone()
                    .unwrap_or_else(|error| panic!("{}: {error}", log_path.display())),
            )
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| panic!("spawning redis-server on port {port}: {error}"));
        self.pid = child.id();
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), PortTaken> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let child = self.child.as_mut().expect("wait_ready: not running");
            match child.try_wait() {
                Ok(None) => {}
                Ok(Some(status)) => {
                    self.child = None;
                    let log = self.log_tail();
                    if log.contains("Address already in use") {
                        return Err(PortTaken);
                    }
                    panic!(
                        "redis-server on port {} exited while starting ({status}); {}:\n{log}",
                        self.port,
                        self.log_path().display()
                    );
                }
                Err(error) => self.fail(&format!("waiting for redis-server: {error}")),
            }
            // Our PING may reach another process's server on this port, if it was quicker:
            // then ours fails to bind (and is killed here).
            let pid = self
                .try_query::<String>(&["INFO", "server"], Duration::from_millis(500))
                .ok()
                .and_then(|info| info_field(&info, "process_id")?.parse::<u32>().ok());
            match pid {
                Some(pid) if pid == self.pid => {
                    let pong = self.try_query::<String>(&["PING"], Duration::from_millis(500));
                    if matches!(pong.as_deref(), Ok("PONG")) {
                        return Ok(());
                    }
                }
                Some(_) => {
                    self.kill();
                    return Err(PortTaken);
                }
                None => {}
            }
            if Instant::now() > deadline {
                let message = format!(
                    "redis-server (pid {}) did not answer PING on port {} within {READY_TIMEOUT:?}",
                    self.pid, self.port
                );
                let log = self.log_tail();
                self.kill();
                panic!("{message}; {}:\n{log}", self.log_path().display());
            }
            sleep(Duration::from_millis(20));
        }
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on (the same after [`restart`](Self::restart)).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id: of the running process, or of the last one once killed.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether its process runs (not killed; a paused one runs).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Its directory (`--dir`, with `redis.log`; removed on drop).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its log file, `redis.log` in [`dir`](Self::dir).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        tail(&self.log_path(), LOG_TAIL_LINES)
    }

    /// Panics with `message` and the tail of its log.
    #[track_caller]
    fn fail(&self, message: &str) -> ! {
        panic!(
            "redis-server on port {} (pid {}): {message}; {}:\n{}",
            self.port,
            self.pid,
            self.log_path().display(),
            self.log_tail()
        )
    }

    /// Kills the process with SIGKILL (also a paused one) and reaps it. Connections fail
    /// until [`restart`](Self::restart). Does nothing if it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // An error here means it has exited already; `wait` reaps it either way.
            let _ = child.kill();
            if let Err(error) = child.wait() {
                panic!("reaping redis-server (pid {}): {error}", self.pid);
            }
        }
    }

    /// Starts it again on the same port and in the same directory (killing it first if it
    /// runs), and waits until it answers PING. Its data is empty (no persistence); a cluster
    /// node keeps its `nodes.conf`, so it rejoins its cluster.
    pub fn restart(&mut self) {
        self.kill();
        for leftover in ["dump.rdb", "appendonlydir"] {
            let path = self.dir.join(leftover);
            let _ = fs::remove_file(&path);
            let _ = fs::remove_dir_all(&path);
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        while self.launch().is_err() {
            if Instant::now() > deadline {
                self.fail(&format!(
                    "restart: port {} stays taken by another process",
                    self.port
                ));
            }
            sleep(Duration::from_millis(100));
        }
    }

    /// Stops the process with SIGSTOP: connections still open (the kernel accepts them) but
    /// nothing is answered until [`resume`](Self::resume).
    pub fn pause(&self) {
        self.signal("STOP");
        self.wait_state(|state| state == 'T', "stopped");
    }

    /// Continues a [`pause`](Self::pause)d process with SIGCONT.
    pub fn resume(&self) {
        self.signal("CONT");
        self.wait_state(|state| state != 'T', "running");
    }

    fn signal(&self, signal: &str) {
        if self.child.is_none() {
            self.fail(&format!("SIG{signal}: the server is not running (killed)"));
        }
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid.to_string()])
            .status()
            .unwrap_or_else(|error| self.fail(&format!("running `kill -{signal}`: {error}")));
        if !status.success() {
            self.fail(&format!("`kill -{signal} {}`: {status}", self.pid));
        }
    }

    /// Waits until `/proc` shows the signal took effect (where there is a `/proc`).
    fn wait_state(&self, wanted: impl Fn(char) -> bool, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while let Some(state) = process_state(self.pid) {
            if wanted(state) {
                return;
            }
            if Instant::now() > deadline {
                self.fail(&format!("not {what} after 5 s (state {state})"));
            }
            sleep(Duration::from_millis(2));
        }
    }

    /// A [`redis::Client`] for [`url`](Self::url).
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap_or_else(|error| self.fail(&error.to_string()))
    }

    /// A new sync connection whose connect, read and write timeouts are `timeout`.
    pub fn try_connection(&self, timeout: Duration) -> RedisResult<Connection> {
        let connection = redis::Client::open(self.url())?.get_connection_with_timeout(timeout)?;
        connection.set_read_timeout(Some(timeout))?;
        connection.set_write_timeout(Some(timeout))?;
        Ok(connection)
    }

    /// A new sync connection with 5 s timeouts; panics if it cannot connect.
    pub fn connection(&self) -> Connection {
        self.try_connection(COMMAND_TIMEOUT)
            .unwrap_or_else(|error| self.fail(&format!("connecting: {error}")))
    }

    /// Runs one command on a new connection whose timeouts are `timeout`.
    pub fn try_query<T: FromRedisValue>(&self, args: &[&str], timeout: Duration) -> RedisResult<T> {
        cmd(args).query(&mut self.try_connection(timeout)?)
    }

    /// Runs one command (on a new connection, 5 s timeouts) and converts its reply, e.g.
    /// `let n: i64 = server.query(&["DBSIZE"]);`; panics on any error.
    #[track_caller]
    pub fn query<T: FromRedisValue>(&self, args: &[&str]) -> T {
        self.try_query(args, COMMAND_TIMEOUT)
            .unwrap_or_else(|error| self.fail(&format!("{args:?}: {error}")))
    }

    /// Runs one command (on a new connection, 5 s timeouts); panics on any error.
    #[track_caller]
    pub fn command(&self, args: &[&str]) -> Value {
        self.query(args)
    }

    /// Runs one command on a new connection whose timeouts are `timeout`.
    pub fn try_command(&self, args: &[&str], timeout: Duration) -> RedisResult<Value> {
        self.try_query(args, timeout)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The last `lines` lines of the file at `path` (or why it cannot be read).
fn tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(cannot read {}: {error})", path.display()),
    }
}

// --- RedisCluster -------------------------------------------------------------------------

/// A local Redis Cluster: 6 `redis-server` nodes, 3 masters with 1 replica each, node timeout
/// 1 s; see the [module docs](self). Nodes are numbered `0..6` in start order; which are
/// masters is up to `redis-cli --cluster create` (and later failovers): ask
/// [`masters`](Self::masters), [`master_for_key`](Self::master_for_key),
/// [`replica_of`](Self::replica_of).
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

/// Who serves which slots: `(first slot, last slot, port)`, sorted.
type SlotMap = Vec<(u16, u16, u16)>;

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
struct NodeLine {
    id: String,
    port: u16,
    flags: Vec<String>,
    /// The master's id, for a replica.
    master: Option<String>,
    slots: Vec<(u16, u16)>,
}

impl NodeLine {
    fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    fn failed(&self) -> bool {
        self.has("fail") || self.has("fail?") || self.has("noaddr") || self.has("handshake")
    }
}

fn parse_nodes(text: &str) -> Vec<NodeLine> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 8 {
                return None;
            }
            // 127.0.0.1:30001@40001[,hostname]
            let address = fields[1].split(['@', ',']).next()?;
            let port = address.rsplit_once(':')?.1.parse().ok()?;
            let slots = fields[8..]
                .iter()
                .filter(|slot| !slot.starts_with('[')) // importing / migrating
                .filter_map(|slot| match slot.split_once('-') {
                    Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                    None => slot.parse().ok().map(|s| (s, s)),
                })
                .collect();
            Some(NodeLine {
                id: fields[0].to_owned(),
                port,
                flags: fields[2].split(',').map(str::to_owned).collect(),
                master: (fields[3] != "-").then(|| fields[3].to_owned()),
                slots,
            })
        })
        .collect()
}

impl RedisCluster {
    /// Masters, and a replica of each.
    const MASTERS: usize = 3;

    /// Starts 6 nodes, creates the cluster with `redis-cli --cluster create
    /// --cluster-replicas 1` and waits until every node says `cluster_state:ok`, agrees on
    /// who serves which slots, and every replica is attached. `None` (after saying SKIPPED)
    /// without `redis-server` or `redis-cli` on `PATH` outside CI.
    pub fn start() -> Option<Self> {
        if !require("redis-server", "redis-server", "RedisCluster::start")
            || !require("redis-cli", "redis-tools", "RedisCluster::start")
        {
            return None;
        }
        // A panic in here drops the nodes started so far: nothing is left behind.
        let cluster = RedisCluster {
            nodes: (0..2 * Self::MASTERS)
                .map(|_| RedisServer::spawn_new(CLUSTER_ARGS, true))
                .collect(),
        };
        cluster.create();
        cluster.wait(CLUSTER_READY_TIMEOUT, true);
        Some(cluster)
    }

    /// `redis-cli --cluster create`, output in node 0's directory, killed after 30 s.
    fn create(&self) {
        let out_path = self.nodes[0].dir().join("cluster-create.log");
        let out = File::create(&out_path)
            .unwrap_or_else(|error| self.fail(&format!("{}: {error}", out_path.display())));
        let mut child = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("cloning a file handle"))
            .stderr(out)
            .spawn()
            .unwrap_or_else(|error| self.fail(&format!("spawning redis-cli: {error}")));
        let deadline = Instant::now() + CLUSTER_READY_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    self.fail(&format!(
                        "`redis-cli --cluster create` did not finish within \
                         {CLUSTER_READY_TIMEOUT:?}; its output:\n{}",
                        tail(&out_path, 40)
                    ));
                }
                Ok(None) => sleep(Duration::from_millis(20)),
                Err(error) => self.fail(&format!("waiting for redis-cli: {error}")),
            }
        };
        let output = tail(&out_path, 40);
        if !status.success() || output.contains("[ERR]") {
            self.fail(&format!(
                "`redis-cli --cluster create` failed ({status}); its output:\n{output}"
            ));
        }
    }

    /// Panics with `message` and the tail of every node's log.
    #[track_caller]
    fn fail(&self, message: &str) -> ! {
        panic!("Redis Cluster: {message}\n{}", self.log_tails(12));
    }

    /// The last `lines` lines of every node's log, each under a header naming the node, for
    /// a test's own panic message.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut logs = String::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let _ = write!(
                logs,
                "--- node {i}, port {}, pid {}{}, {}:\n{}\n",
                node.port(),
                node.pid(),
                if node.is_running() { "" } else { " (killed)" },
                node.log_path().display(),
                tail(&node.log_path(), lines)
            );
        }
        logs
    }

    /// How many nodes (6, killed ones included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Node `i` (`0..6`), e.g. for [`RedisServer::command`], [`RedisServer::pause`].
    pub fn node(&self, i: usize) -> &RedisServer {
        &self.nodes[i]
    }

    /// The URLs of the running nodes, for `redis::cluster::ClusterClient::new` (any of them
    /// is enough to find the others; killed nodes are left out).
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|node| node.is_running())
            .map(RedisServer::url)
            .collect()
    }

    /// A sync `ClusterClient` of the running nodes, 2 s connect and 5 s response timeouts.
    pub fn client(&self) -> ClusterClient {
        ClusterClient::builder(self.urls())
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(COMMAND_TIMEOUT)
            .build()
            .unwrap_or_else(|error| self.fail(&format!("building a ClusterClient: {error}")))
    }

    /// The pids of the nodes' processes (the last one, for a killed node).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(RedisServer::pid).collect()
    }

    fn index_of_port(&self, port: u16) -> Option<usize> {
        self.nodes.iter().position(|node| node.port() == port)
    }

    /// `CLUSTER NODES` as the first running node sees it (after [`wait_ok`](Self::wait_ok),
    /// all agree).
    fn view(&self) -> Vec<NodeLine> {
        let node = self
            .nodes
            .iter()
            .find(|node| node.is_running())
            .unwrap_or_else(|| self.fail("no node is running"));
        parse_nodes(&node.query::<String>(&["CLUSTER", "NODES"]))
    }

    /// The nodes that serve slots now, in slot order.
    pub fn masters(&self) -> Vec<usize> {
        let mut masters: Vec<(u16, usize)> = self
            .view()
            .iter()
            .filter(|line| line.has("master") && !line.failed() && !line.slots.is_empty())
            .filter_map(|line| Some((line.slots[0].0, self.index_of_port(line.port)?)))
            .collect();
        masters.sort_unstable();
        masters.into_iter().map(|(_, i)| i).collect()
    }

    /// The node that serves `slot` now.
    pub fn master_for_slot(&self, slot: u16) -> usize {
        let view = self.view();
        view.iter()
            .filter(|line| line.has("master") && !line.failed())
            .find(|line| line.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
            .and_then(|line| self.index_of_port(line.port))
            .unwrap_or_else(|| self.fail(&format!("no running master serves slot {slot}")))
    }

    /// The slot of `key` (`CLUSTER KEYSLOT`, hash tags included).
    pub fn slot_for_key(&self, key: &str) -> u16 {
        let node = self
            .nodes
            .iter()
            .find(|node| node.is_running())
            .unwrap_or_else(|| self.fail("no node is running"));
        node.query(&["CLUSTER", "KEYSLOT", key])
    }

    /// The node that serves `key` now.
    pub fn master_for_key(&self, key: &str) -> usize {
        self.master_for_slot(self.slot_for_key(key))
    }

    /// A running replica of node `master`, if it has one.
    pub fn replica_of(&self, master: usize) -> Option<usize> {
        let view = self.view();
        let id = &view
            .iter()
            .find(|line| line.port == self.nodes[master].port())?
            .id;
        view.iter()
            .filter(|line| line.has("slave") && !line.failed())
            .filter(|line| line.master.as_ref() == Some(id))
            .filter_map(|line| self.index_of_port(line.port))
            .find(|&i| self.nodes[i].is_running())
    }

    /// Kills node `i` (SIGKILL). If it was a master, its replica takes over after the node
    /// timeout (1 s) and an election: [`wait_ok`](Self::wait_ok) waits for that.
    pub fn kill_node(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// Starts node `i` again, same port and directory: with its `nodes.conf` it rejoins the
    /// cluster (a former master whose replica took over comes back as that one's replica).
    /// Waits for PING only; [`wait_ok`](Self::wait_ok) waits until it has rejoined.
    pub fn restart_node(&mut self, i: usize) {
        self.nodes[i].restart();
    }

    /// Waits until every running node says `cluster_state:ok`, all see the same running,
    /// non-failed masters serving all 16384 slots, all see every running node as healthy and
    /// either a master serving slots or a replica, and every running replica's link to its
    /// master is up (on both ends: the master has it `state=online`); returns how long that took. Panics (with every node's log tail) after
    /// `timeout`.
    pub fn wait_ok(&self, timeout: Duration) -> Duration {
        self.wait(timeout, false)
    }

    fn wait(&self, timeout: Duration, every_master_replicated: bool) -> Duration {
        let start = Instant::now();
        loop {
            match self.check(every_master_replicated) {
                Ok(()) => return start.elapsed(),
                Err(why) if start.elapsed() > timeout => {
                    self.fail(&format!("not ok after {timeout:?}: {why}"));
                }
                Err(_) => sleep(Duration::from_millis(50)),
            }
        }
    }

    /// `Ok` if the cluster is as [`wait_ok`](Self::wait_ok) wants it (and, with
    /// `every_master_replicated`, each master has a running replica); otherwise why not.
    fn check(&self, every_master_replicated: bool) -> Result<(), String> {
        let timeout = Duration::from_secs(1);
        let mut agreed: Option<(usize, SlotMap)> = None;
        for (i, node) in self.nodes.iter().enumerate() {
            if !node.is_running() {
                continue;
            }
            let port = node.port();
            let query = |args: &[&str]| {
                node.try_query::<String>(args, timeout)
                    .map_err(|error| format!("node {i} (port {port}) {args:?}: {error}"))
            };
            let info = query(&["CLUSTER", "INFO"])?;
            let state = info_field(&info, "cluster_state");
            if state != Some("ok") {
                return Err(format!("node {i} (port {port}): cluster_state {state:?}"));
            }
            let replication = query(&["INFO", "replication"])?;
            if info_field(&replication, "role") == Some("slave") {
                let link = info_field(&replication, "master_link_status");
                if link != Some("up") {
                    return Err(format!(
                        "node {i} (port {port}), a replica: master_link_status {link:?}"
                    ));
                }
            } else if let Some(replica) = replication.lines().find(|line| {
                // slave0:ip=127.0.0.1,port=46135,state=online,offset=42,lag=0
                let numbered = line
                    .strip_prefix("slave")
                    .and_then(|rest| rest.split_once(':'))
                    .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                numbered && !line.contains("state=online")
            }) {
                // Until the master puts it online, writes reach the replica only later.
                return Err(format!(
                    "node {i} (port {port}), a master: replica not online yet: {replica}"
                ));
            }
            let view = parse_nodes(&query(&["CLUSTER", "NODES"])?);
            // Every running node is seen, healthy, and settled: a master serving slots (a
            // restarted master may still claim its old slots, or none) or a replica.
            for other in self.nodes.iter().filter(|other| other.is_running()) {
                let settled = view
                    .iter()
                    .find(|line| line.port == other.port())
                    .filter(|line| !line.failed() && (line.has("slave") || !line.slots.is_empty()));
                if settled.is_none() {
                    return Err(format!(
                        "node {i} (port {port}) sees the running node on port {} as {:?}",
                        other.port(),
                        view.iter().find(|line| line.port == other.port())
                    ));
                }
            }
            let mut slots = Vec::new();
            for line in view.iter().filter(|line| !line.slots.is_empty()) {
                let live = self
                    .index_of_port(line.port)
                    .is_some_and(|j| self.nodes[j].is_running());
                if !line.has("master") || line.failed() || !live {
                    return Err(format!(
                        "node {i} (port {port}) sees slots on port {} (flags {}, running: {live})",
                        line.port,
                        line.flags.join(",")
                    ));
                }
                if every_master_replicated
                    && !view.iter().any(|replica| {
                        replica.master.as_ref() == Some(&line.id) && !replica.failed()
                    })
                {
                    return Err(format!(
                        "node {i} (port {port}) sees no replica of the master on port {}",
                        line.port
                    ));
                }
                slots.extend(line.slots.iter().map(|&(a, b)| (a, b, line.port)));
            }
            slots.sort_unstable();
            let covered: u32 = slots.iter().map(|&(a, b, _)| u32::from(b - a) + 1).sum();
            if covered != SLOTS {
                return Err(format!(
                    "node {i} (port {port}) sees {covered} of {SLOTS} slots served"
                ));
            }
            match &agreed {
                None => agreed = Some((i, slots)),
                Some((first, theirs)) if *theirs != slots => {
                    return Err(format!(
                        "nodes {first} and {i} disagree on who serves which slots: \
                         {theirs:?} vs {slots:?}"
                    ));
                }
                Some(_) => {}
            }
        }
        if agreed.is_none() {
            return Err("no node is running".to_owned());
        }
        Ok(())
    }
}

// --- What the limiter tests share ---------------------------------------------------------

/// A limiters' connection to `server` with a 2 s timeout per call: only a stopped or
/// unreachable server makes the failure policy decide.
pub fn connection(server: &RedisServer) -> ringlimit_redis::Connection {
    ringlimit_redis::Connection::open(&server.url())
        .expect("a loopback URL")
        .timeout(Duration::from_secs(2))
}

/// The four script algorithms, each with a limit (or burst) of `limit` that does not renew
/// during a test: windows of about two weeks (aligned to the epoch, so none ends during a
/// test), a bucket refilling one permit per 20 s.
pub fn algorithms(limit: u64) -> [ringlimit_redis::Algorithm; 4] {
    use ringlimit_redis::Algorithm;
    let window = ringlimit::WindowQuota::per(limit, Duration::from_secs(1_200_000)).unwrap();
    let period = ringlimit::Rate::every(Duration::from_secs(20)).unwrap();
    [
        Algorithm::FixedWindow(window),
        Algorithm::SlidingWindow(window.buckets(6).unwrap()),
        Algorithm::SlidingLog(window),
        Algorithm::TokenBucket(ringlimit::BucketQuota::new(period, limit).unwrap()),
    ]
}

/// A server reached through a fault-injecting [`proxy::Proxy`], and a limiters' connection
/// (default timeout) through that proxy. `None` (after saying SKIPPED) as [`RedisServer::start`].
pub fn proxied() -> Option<(RedisServer, proxy::Proxy, ringlimit_redis::Connection)> {
    let server = RedisServer::start()?;
    let proxy = proxy::Proxy::start(server.port());
    let connection = ringlimit_redis::Connection::open(&proxy.url()).expect("a loopback URL");
    Some((server, proxy, connection))
}

/// A plain async connection to `server` for writing and reading keys behind the limiters'
/// backs, without a response timeout (a megabyte key takes its time).
pub async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .expect("a loopback URL")
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .expect("connect")
}

/// `DUMP key`: the key's serialized value, to compare before and after (`None`: no key).
pub async fn dump(raw: &mut redis::aio::MultiplexedConnection, key: &[u8]) -> Option<Vec<u8>> {
    redis::cmd("DUMP")
        .arg(key)
        .query_async(raw)
        .await
        .expect("DUMP")
}

impl RedisServer {
    /// The server's clock (`TIME`), in µs since the Unix epoch.
    pub fn micros(&self) -> u64 {
        let (secs, micros): (u64, u64) = self.query(&["TIME"]);
        secs * 1_000_000 + micros
    }
}
