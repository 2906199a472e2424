//! Decisions per second and per-decision latency of the Redis limiters against a real
//! server: one script call per decision (`per_call`: one task awaiting one `check` at a
//! time; `pipelined`: many tasks sharing the one multiplexed `Connection`, whose concurrent
//! requests redis-rs pipelines on the socket by itself), and the leased mode (`leased`:
//! permits leased from Redis in batches, decided in process).
//!
//! ```text
//! cargo run --release -p ringlimit-redis --example redis_bench -- \
//!     [--url redis://127.0.0.1:PORT/] [--json] [--duration-ms N] [--quick] \
//!     [--tasks N] [--connections N] [--only ALGORITHM] [--no-anchors] [--current-thread]
//!     [--max-batch N]
//! ```
//!
//! Without `--url` it starts its own `redis-server` on a free loopback port (persistence
//! off, a temporary directory) and stops it at exit. Without `redis-server` on `PATH` it
//! prints SKIPPED and exits 0 (1 when `CI` is set).
//!
//! Each row runs for `--duration-ms` (2000 unless set; `--quick`: 200) after a warm-up, and
//! records every decision's latency (the time between a task's consecutive decisions, one
//! `Instant::now()` per decision) in a log-linear histogram (1.6 % resolution). Script rows
//! draw keys at random from 10 000 keys of 1000/s each, so nearly every call is admitted;
//! the leased rows share one key of 10^6 per 10 ms (10^8 per second), `max_batch` 1000, so leasing never
//! runs dry. With `redis-benchmark` on `PATH` the same server is also measured with the
//! crate's own GCRA and sliding-log scripts (`EVALSHA`, 50 clients), the issue's anchors.
//!
//! `--tasks` and `--connections` set the pipelined rows' tasks (64) and the connections
//! they spread over (1); `--current-thread` runs everything on one thread (a tokio
//! current-thread runtime) instead of a worker per core; `--max-batch` the leased rows'
//! batch (1000).
//!
//! `--json`: one JSON object per row on stdout (`algorithm`, `mode`, `tasks`,
//! `decisions_per_s`, `p50_us`, `p99_us`, `admitted`, `redis_calls`, and more), the table
//! on stderr.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ringlimit::{BucketQuota, WindowQuota};
use ringlimit_redis::{Algorithm, Connection, LeasedWindow, RedisLimiter, Source};

const KEYS: usize = 10_000;
const PER_KEY_PER_SECOND: u64 = 1_000;
/// The leased rows' quota: `LEASED_LIMIT` per `LEASED_WINDOW` (10^8 per second; a window
/// holds at most 2^20 - 1).
const LEASED_LIMIT: u64 = 1_000_000;
const LEASED_WINDOW: Duration = Duration::from_millis(10);
/// The leased rows' `max_batch` unless `--max-batch` sets it.
const LEASED_MAX_BATCH: u64 = 1_000;
/// A leased task yields to the scheduler once in this many decisions (a decision from the
/// pool never awaits, so without it one task would keep a worker to itself).
const LEASED_YIELD_EVERY: u64 = 1_024;

// The crate's scripts, assembled as `src/script.rs` does, for the `redis-benchmark` anchors.
const PRELUDE: &str = include_str!("../src/lua/prelude.lua");
const GCRA: &str = include_str!("../src/lua/gcra.lua");
const LOG: &str = include_str!("../src/lua/sliding_log.lua");
const DECIDE: &str = include_str!("../src/lua/decide.lua");

#[derive(Debug, Clone)]
struct Options {
    url: Option<String>,
    json: bool,
    duration: Duration,
    quick: bool,
    tasks: usize,
    connections: usize,
    only: Option<String>,
    anchors: bool,
    current_thread: bool,
    max_batch: u64,
}

fn usage() -> ! {
    eprintln!(
        "usage: redis_bench [--url redis://127.0.0.1:PORT/] [--json] [--duration-ms N] [--quick] \
         [--tasks N] [--connections N] [--only token_bucket|sliding_window|sliding_log|fixed_window|leased] \
         [--no-anchors] [--current-thread] [--max-batch N]"
    );
    std::process::exit(2);
}

fn parse_options() -> Options {
    let mut options = Options {
        url: None,
        json: false,
        duration: Duration::from_millis(2_000),
        quick: false,
        tasks: 64,
        connections: 1,
        only: None,
        anchors: true,
        current_thread: false,
        max_batch: LEASED_MAX_BATCH,
    };
    let mut duration_set = false;
    let mut args = std::env::args().skip(1);
    let number = |value: Option<String>| -> u64 {
        value
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| usage())
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--url" => options.url = Some(args.next().unwrap_or_else(|| usage())),
            "--json" => options.json = true,
            "--duration-ms" => {
                options.duration = Duration::from_millis(number(args.next()));
                duration_set = true;
            }
            "--quick" => options.quick = true,
            "--tasks" => options.tasks = number(args.next()) as usize,
            "--connections" => options.connections = number(args.next()) as usize,
            "--only" => options.only = Some(args.next().unwrap_or_else(|| usage())),
            "--no-anchors" => options.anchors = false,
            "--current-thread" => options.current_thread = true,
            "--max-batch" => options.max_batch = number(args.next()),
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    if options.quick && !duration_set {
        options.duration = Duration::from_millis(200);
    }
    options
}

// ---------------------------------------------------------------------------------------
// The server, when the bench starts its own.

/// A `redis-server` child on a loopback port, killed and its directory removed on drop
/// (also when the bench panics or is interrupted).
struct OwnServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl OwnServer {
    fn start() -> Result<Self, String> {
        let mut last = String::new();
        for attempt in 0..3 {
            let port = free_port().map_err(|e| format!("no free port: {e}"))?;
            let dir = std::env::temp_dir().join(format!(
                "redis_bench-{}-{port}-{attempt}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&dir)
                .args(["--daemonize", "no", "--logfile", "redis.log"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("redis-server: {e}"))?;
            let server = OwnServer { child, port, dir };
            let until = Instant::now() + Duration::from_secs(5);
            while Instant::now() < until {
                if ping(port) {
                    return Ok(server);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            last = format!("redis-server on port {port} did not answer PING within 5 s");
            drop(server);
        }
        Err(last)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

// ---------------------------------------------------------------------------------------
// A latency histogram: exact below 128 ns, then 64 buckets per power of two.

const SUB_BITS: u32 = 6;
const EXACT: u64 = 128;
const BUCKETS: usize = EXACT as usize + (64 - 7) * (1 << SUB_BITS);

struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            total: 0,
            max: 0,
        }
    }

    fn index(ns: u64) -> usize {
        if ns < EXACT {
            return ns as usize;
        }
        let e = 63 - ns.leading_zeros();
        let sub = (ns >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        EXACT as usize + ((e - 7) as usize) * (1 << SUB_BITS) + sub as usize
    }

    /// The middle of bucket `i`, in ns.
    fn value(i: usize) -> f64 {
        if (i as u64) < EXACT {
            return i as f64;
        }
        let j = i - EXACT as usize;
        let e = (j >> SUB_BITS) as u32 + 7;
        let sub = (j & ((1 << SUB_BITS) - 1)) as u64;
        let low = ((1 << SUB_BITS) + sub) << (e - SUB_BITS);
        let width = 1u64 << (e - SUB_BITS);
        low as f64 + width as f64 / 2.0
    }

    fn record(&mut self, ns: u64) {
        self.counts[Self::index(ns)] += 1;
        self.total += 1;
        self.max = self.max.max(ns);
    }

    fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }

    /// The `q` quantile in µs.
    fn quantile_us(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value(i).min(self.max as f64) / 1_000.0;
            }
        }
        self.max as f64 / 1_000.0
    }
}

// ---------------------------------------------------------------------------------------
// Server statistics, with a plain redis-rs connection.

#[derive(Debug, Default, Clone, Copy)]
struct ServerStats {
    script_calls: u64,
    script_usec: u64,
    cpu_s: f64,
}

fn server_connection(url: &str) -> Option<redis::Connection> {
    redis::Client::open(url).ok()?.get_connection().ok()
}

fn info(con: &mut redis::Connection, section: &str) -> String {
    redis::cmd("INFO")
        .arg(section)
        .query::<String>(con)
        .unwrap_or_default()
}

fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix(':'))
}

fn reset_stats(con: &mut redis::Connection) {
    let _ = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query::<redis::Value>(con);
}

fn server_stats(con: &mut redis::Connection) -> ServerStats {
    let mut stats = ServerStats::default();
    let commands = info(con, "commandstats");
    for name in ["cmdstat_evalsha", "cmdstat_eval"] {
        if let Some(line) = field(&commands, name) {
            for part in line.split(',') {
                match part.split_once('=') {
                    Some(("calls", v)) => stats.script_calls += v.parse::<u64>().unwrap_or(0),
                    Some(("usec", v)) => stats.script_usec += v.parse::<u64>().unwrap_or(0),
                    _ => {}
                }
            }
        }
    }
    let cpu = info(con, "cpu");
    for name in ["used_cpu_sys", "used_cpu_user"] {
        stats.cpu_s += field(&cpu, name)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
    }
    stats
}

/// This process's CPU time (user + system), in seconds.
fn own_cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses): utime is the 12th, stime
    // the 13th; in clock ticks of 1/100 s (USER_HZ).
    let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn cpu_model() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                Some(
                    l.strip_prefix("model name")?
                        .split_once(':')?
                        .1
                        .trim()
                        .to_owned(),
                )
            })
        })
        .unwrap_or_else(|| "?".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores available")
}

// ---------------------------------------------------------------------------------------
// The rows.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    TokenBucket,
    SlidingWindow,
    SlidingLog,
    FixedWindow,
    Leased,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::TokenBucket => "token_bucket",
            Self::SlidingWindow => "sliding_window",
            Self::SlidingLog => "sliding_log",
            Self::FixedWindow => "fixed_window",
            Self::Leased => "leased",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::TokenBucket => "token_bucket (GCRA)",
            Self::Leased => "leased (LeasedWindow)",
            other => other.name(),
        }
    }

    fn algorithm(self) -> Algorithm {
        let window = || WindowQuota::per_second(PER_KEY_PER_SECOND).expect("quota");
        match self {
            Self::TokenBucket => {
                Algorithm::TokenBucket(BucketQuota::per_second(PER_KEY_PER_SECOND).expect("quota"))
            }
            Self::SlidingWindow => Algorithm::SlidingWindow(window().buckets(10).expect("quota")),
            Self::SlidingLog => Algorithm::SlidingLog(window()),
            Self::FixedWindow | Self::Leased => Algorithm::FixedWindow(window()),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct RowSpec {
    kind: Kind,
    mode: &'static str,
    tasks: usize,
    connections: usize,
}

#[derive(Clone)]
enum Limiter {
    Script(RedisLimiter),
    Leased(LeasedWindow),
}

struct TaskResult {
    histogram: Histogram,
    admitted: u64,
    refused: u64,
    fallbacks: u64,
    errors: u64,
    first_error: Option<String>,
}

struct RowResult {
    spec: RowSpec,
    decisions: u64,
    elapsed: Duration,
    histogram: Histogram,
    admitted: u64,
    refused: u64,
    fallbacks: u64,
    errors: u64,
    first_error: Option<String>,
    redis_calls: u64,
    server_usec_per_call: Option<f64>,
    server_cpu_pct: Option<f64>,
    client_cpu_pct: f64,
    load: String,
}

impl RowResult {
    fn decisions_per_s(&self) -> f64 {
        self.decisions as f64 / self.elapsed.as_secs_f64()
    }
}

/// xorshift64*: the keys' order, different for each task.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

async fn task(
    limiter: Limiter,
    keys: Arc<Vec<Vec<u8>>>,
    seed: u64,
    deadline: Instant,
) -> TaskResult {
    let mut result = TaskResult {
        histogram: Histogram::new(),
        admitted: 0,
        refused: 0,
        fallbacks: 0,
        errors: 0,
        first_error: None,
    };
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut previous = Instant::now();
    let mut i = 0u64;
    while previous < deadline {
        let verdict = match &limiter {
            Limiter::Script(l) => {
                let key = &keys[(rng.next() % keys.len() as u64) as usize];
                l.check(key, 1).await
            }
            Limiter::Leased(l) => l.check(1).await,
        };
        let now = Instant::now();
        result
            .histogram
            .record(u64::try_from((now - previous).as_nanos()).unwrap_or(u64::MAX));
        previous = now;
        match verdict {
            Ok(v) => {
                if !matches!(v.source, Source::Redis | Source::Leased) {
                    result.fallbacks += 1;
                }
                if v.decision.is_admitted() {
                    result.admitted += 1;
                } else {
                    result.refused += 1;
                }
            }
            Err(error) => {
                result.errors += 1;
                if result.first_error.is_none() {
                    result.first_error = Some(error.to_string());
                }
            }
        }
        i += 1;
        if matches!(limiter, Limiter::Leased(_)) && i.is_multiple_of(LEASED_YIELD_EVERY) {
            tokio::task::yield_now().await;
            previous = Instant::now();
        }
    }
    result
}

/// Runs `tasks` tasks for `duration`; the merged results and the time they took.
async fn phase(
    limiters: &[Limiter],
    tasks: usize,
    keys: &Arc<Vec<Vec<u8>>>,
    duration: Duration,
    seed: u64,
) -> (Vec<TaskResult>, Duration) {
    let start = Instant::now();
    let deadline = start + duration;
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            tokio::spawn(task(
                limiters[t % limiters.len()].clone(),
                Arc::clone(keys),
                seed + t as u64,
                deadline,
            ))
        })
        .collect();
    let mut results = Vec::with_capacity(tasks);
    for handle in handles {
        results.push(handle.await.expect("a bench task panicked"));
    }
    (results, start.elapsed())
}

async fn run_row(
    spec: RowSpec,
    url: &str,
    keys: &Arc<Vec<Vec<u8>>>,
    options: &Options,
    row: usize,
) -> RowResult {
    let name = format!("bench{row}_{}", spec.kind.name());
    let limiters: Vec<Limiter> = (0..spec.connections)
        .map(|_| {
            let connection = Connection::open(url).expect("a valid URL");
            match spec.kind {
                Kind::Leased => Limiter::Leased(
                    LeasedWindow::builder(
                        &connection,
                        &name,
                        WindowQuota::per(LEASED_LIMIT, LEASED_WINDOW).expect("quota"),
                    )
                    .max_batch(options.max_batch)
                    .build()
                    .expect("leased limiter"),
                ),
                kind => Limiter::Script(
                    RedisLimiter::builder(&connection, &name, kind.algorithm())
                        .build()
                        .expect("limiter"),
                ),
            }
        })
        .collect();
    // Warm-up: connects, loads the script (NOSCRIPT, then SCRIPT LOAD), fills caches.
    let warm_up =
        (options.duration / 4).clamp(Duration::from_millis(50), Duration::from_millis(300));
    let _ = phase(&limiters, spec.tasks, keys, warm_up, 1_000).await;

    let mut stats = server_connection(url);
    if let Some(con) = stats.as_mut() {
        reset_stats(con);
    }
    let server_before = stats.as_mut().map(server_stats);
    let cpu_before = own_cpu_s();
    let leases_before = leases(&limiters);
    let (results, elapsed) = phase(&limiters, spec.tasks, keys, options.duration, 7).await;
    let cpu_after = own_cpu_s();
    let leases_after = leases(&limiters);
    let server_after = stats.as_mut().map(server_stats);
    let load = load_average();

    let mut histogram = Histogram::new();
    let (mut admitted, mut refused, mut fallbacks, mut errors) = (0, 0, 0, 0);
    let mut first_error = None;
    for r in &results {
        histogram.merge(&r.histogram);
        admitted += r.admitted;
        refused += r.refused;
        fallbacks += r.fallbacks;
        errors += r.errors;
        if first_error.is_none() {
            first_error.clone_from(&r.first_error);
        }
    }
    let decisions = histogram.total;
    let (redis_calls, server_usec_per_call, server_cpu_pct) = match (server_before, server_after) {
        (Some(before), Some(after)) => {
            // The statistics were reset before the row: `after` is the row's.
            let (calls, usec) = (after.script_calls, after.script_usec);
            let cpu = (after.cpu_s - before.cpu_s).max(0.0);
            (
                if spec.kind == Kind::Leased {
                    leases_after - leases_before
                } else {
                    calls
                },
                (calls > 0).then(|| usec as f64 / calls as f64),
                Some(100.0 * cpu / elapsed.as_secs_f64()),
            )
        }
        _ => (
            if spec.kind == Kind::Leased {
                leases_after - leases_before
            } else {
                decisions
            },
            None,
            None,
        ),
    };
    RowResult {
        spec,
        decisions,
        elapsed,
        histogram,
        admitted,
        refused,
        fallbacks,
        errors,
        first_error,
        redis_calls,
        server_usec_per_call,
        server_cpu_pct,
        client_cpu_pct: 100.0 * (cpu_after - cpu_before) / elapsed.as_secs_f64(),
        load,
    }
}

fn leases(limiters: &[Limiter]) -> u64 {
    limiters
        .iter()
        .map(|l| match l {
            Limiter::Leased(l) => l.leases(),
            Limiter::Script(_) => 0,
        })
        .sum()
}

// ---------------------------------------------------------------------------------------
// Output.

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A finite number for JSON (`null` otherwise).
fn json_number(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "null".into()
    }
}

fn json_row(r: &RowResult) -> String {
    let mut s = String::from("{");
    let _ = write!(
        s,
        "\"algorithm\":{},\"mode\":{},\"tasks\":{},\"connections\":{},\"decisions_per_s\":{},\
         \"p50_us\":{},\"p99_us\":{},\"p999_us\":{},\"max_us\":{},\"decisions\":{},\
         \"admitted\":{},\"refused\":{},\"fallbacks\":{},\"errors\":{},\"redis_calls\":{},\
         \"server_usec_per_call\":{},\"server_cpu_pct\":{},\"client_cpu_pct\":{},\
         \"duration_ms\":{},\"load_avg\":{}",
        json_string(r.spec.kind.name()),
        json_string(r.spec.mode),
        r.spec.tasks,
        r.spec.connections,
        json_number(r.decisions_per_s(), 0),
        json_number(r.histogram.quantile_us(0.50), 2),
        json_number(r.histogram.quantile_us(0.99), 2),
        json_number(r.histogram.quantile_us(0.999), 2),
        json_number(r.histogram.max as f64 / 1_000.0, 2),
        r.decisions,
        r.admitted,
        r.refused,
        r.fallbacks,
        r.errors,
        r.redis_calls,
        r.server_usec_per_call
            .map_or("null".into(), |x| json_number(x, 2)),
        r.server_cpu_pct
            .map_or("null".into(), |x| json_number(x, 1)),
        json_number(r.client_cpu_pct, 1),
        r.elapsed.as_millis(),
        json_string(&r.load),
    );
    s.push('}');
    s
}

fn table_header() -> String {
    format!(
        "{:<22} {:<9} {:>5} {:>13} {:>8} {:>8} {:>8} {:>9} {:>11} {:>8} {:>8} {:>8}  {}",
        "algorithm",
        "mode",
        "tasks",
        "decisions/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "admitted",
        "redis calls",
        "srv µs/c",
        "srv cpu",
        "cli cpu",
        "load avg"
    )
}

fn table_row(r: &RowResult) -> String {
    let admitted = if r.decisions == 0 {
        0.0
    } else {
        100.0 * r.admitted as f64 / r.decisions as f64
    };
    let tasks = if r.spec.connections > 1 {
        format!("{}/{}c", r.spec.tasks, r.spec.connections)
    } else {
        r.spec.tasks.to_string()
    };
    let mut line = format!(
        "{:<22} {:<9} {:>5} {:>13.0} {:>8.1} {:>8.1} {:>8.1} {:>8.2}% {:>11} {:>8} {:>8} {:>7.0}%  {}",
        r.spec.kind.label(),
        r.spec.mode,
        tasks,
        r.decisions_per_s(),
        r.histogram.quantile_us(0.50),
        r.histogram.quantile_us(0.99),
        r.histogram.quantile_us(0.999),
        admitted,
        r.redis_calls,
        r.server_usec_per_call
            .map_or("-".into(), |x| format!("{x:.2}")),
        r.server_cpu_pct.map_or("-".into(), |x| format!("{x:.0}%")),
        r.client_cpu_pct,
        r.load,
    );
    if r.fallbacks > 0 || r.errors > 0 {
        let _ = write!(
            line,
            "  [fallbacks {}, errors {}{}]",
            r.fallbacks,
            r.errors,
            r.first_error
                .as_deref()
                .map_or(String::new(), |e| format!(": {e}"))
        );
    }
    line
}

// ---------------------------------------------------------------------------------------
// The anchors: the crate's scripts under `redis-benchmark`.

fn anchors(url: &str, options: &Options, out: &mut dyn FnMut(String)) {
    if !on_path("redis-benchmark") {
        out("anchors: redis-benchmark not on PATH, skipped".into());
        return;
    }
    let Ok(info) = redis::IntoConnectionInfo::into_connection_info(url) else {
        return;
    };
    let (host, port) = match info.addr() {
        redis::ConnectionAddr::Tcp(host, port) => (host.clone(), *port),
        _ => {
            out("anchors: not a TCP URL, skipped".into());
            return;
        }
    };
    let Some(mut con) = server_connection(url) else {
        out("anchors: no connection, skipped".into());
        return;
    };
    let load = |con: &mut redis::Connection, parts: &[&str]| -> Option<String> {
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(parts.join("\n"))
            .query::<String>(con)
            .ok()
    };
    let (Some(gcra), Some(log)) = (
        load(&mut con, &[PRELUDE, GCRA, DECIDE]),
        load(&mut con, &[PRELUDE, LOG, DECIDE]),
    ) else {
        out("anchors: SCRIPT LOAD failed, skipped".into());
        return;
    };
    let requests = if options.quick { "20000" } else { "200000" };
    // decide.lua: commit, dimensions, then code, n, p1, p2, p3.
    let per_key = PER_KEY_PER_SECOND.to_string();
    let period = (1_000_000 / PER_KEY_PER_SECOND).to_string();
    let gcra_args = vec![
        gcra.clone(),
        "1".into(),
        "anchor:tb:__rand_int__".into(),
        "1".into(),
        "1".into(),
        "4".into(),
        "1".into(),
        period,
        per_key.clone(),
        "0".into(),
    ];
    let log_args = vec![
        log,
        "2".into(),
        "anchor:log:__rand_int__".into(),
        "anchor:log:__rand_int__:seq".into(),
        "1".into(),
        "1".into(),
        "3".into(),
        "1".into(),
        per_key,
        "1000000".into(),
        "1000000".into(),
    ];
    let runs: [(&str, &str, &str, &Vec<String>); 4] = [
        ("GCRA script, 1 client", "1", "1", &gcra_args),
        ("GCRA script, 50 clients", "50", "1", &gcra_args),
        (
            "GCRA script, 50 clients, pipelines of 16",
            "50",
            "16",
            &gcra_args,
        ),
        ("sliding-log script, 50 clients", "50", "1", &log_args),
    ];
    out(format!(
        "anchors: redis-benchmark -n {requests} -r {KEYS}, EVALSHA of the crate's own scripts (load avg {})",
        load_average()
    ));
    for (label, clients, pipeline, args) in runs {
        let output = Command::new("redis-benchmark")
            .args(["-h", &host, "-p", &port.to_string()])
            .args(["-c", clients, "-P", pipeline, "-n", requests])
            .args(["-r", &KEYS.to_string(), "-q", "EVALSHA"])
            .args(args.iter())
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        let text = match output {
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
            Err(e) => format!("failed: {e}"),
        };
        // `-q` prints `EVALSHA …: N requests per second, p50=… msec` after progress lines
        // ending in `\r`.
        let summary = text
            .split(['\r', '\n'])
            .rfind(|l| l.contains("requests per second"))
            .map(|l| l.split_once(": ").map_or(l, |(_, r)| r).trim().to_owned())
            .unwrap_or_else(|| text.trim().to_owned());
        out(format!(
            "  {label:<42} {summary}   (load avg {})",
            load_average()
        ));
    }
}

// ---------------------------------------------------------------------------------------

fn main() -> ExitCode {
    let options = parse_options();
    let server = match &options.url {
        Some(_) => None,
        None => {
            if !on_path("redis-server") {
                println!(
                    "SKIPPED: redis_bench: redis-server not found (apt-get install redis-server)"
                );
                return if std::env::var_os("CI").is_some() {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                };
            }
            match OwnServer::start() {
                Ok(server) => Some(server),
                Err(error) => {
                    eprintln!("redis_bench: {error}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let url = options
        .url
        .clone()
        .unwrap_or_else(|| server.as_ref().map(OwnServer::url).unwrap_or_default());
    let runtime = if options.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()
    .expect("a tokio runtime");
    let code = runtime.block_on(async {
        tokio::select! {
            code = bench(&url, &options, server.is_some()) => code,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("redis_bench: interrupted, stopping");
                ExitCode::from(130)
            }
        }
    });
    // Stops the tasks (and their connections) before the server.
    runtime.shutdown_timeout(Duration::from_secs(1));
    drop(server);
    code
}

async fn bench(url: &str, options: &Options, own: bool) -> ExitCode {
    let json = options.json;
    // The table goes to stdout, or to stderr when stdout carries JSON.
    let mut out = |line: String| {
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let Some(mut con) = server_connection(url) else {
        eprintln!("redis_bench: cannot connect to {url}");
        return ExitCode::FAILURE;
    };
    let version = field(&info(&mut con, "server"), "redis_version")
        .unwrap_or("?")
        .to_owned();
    // Earlier runs' keys would skew the first rows (and the log's sorted sets).
    if own {
        let _ = redis::cmd("FLUSHALL").query::<redis::Value>(&mut con);
    }
    drop(con);
    let runtime_workers = tokio::runtime::Handle::current().metrics().num_workers();
    out(format!(
        "redis_bench: Redis {version} at {url} ({}), {} ms per row after a warm-up",
        if own {
            "own server, persistence off"
        } else {
            "given by --url"
        },
        options.duration.as_millis()
    ));
    out(format!(
        "CPU: {}; tokio workers {runtime_workers}; load avg at start {}",
        cpu_model(),
        load_average()
    ));
    out(format!(
        "script rows: keys drawn at random from {KEYS}, {PER_KEY_PER_SECOND}/s each; \
         leased: one key, {LEASED_LIMIT} per {LEASED_WINDOW:?} (10^8/s), max_batch {}",
        options.max_batch
    ));
    out(format!(
        "per_call: 1 task awaiting one check at a time. pipelined: {} tasks each awaiting one check \
         at a time on {} shared multiplexed Connection{} (redis-rs pipelines their concurrent \
         requests on the socket by itself: this is the pipelined mode). leased: tasks taking \
         from the local pool, one lease call per batch.",
        options.tasks,
        options.connections,
        if options.connections == 1 { "" } else { "s" }
    ));
    out(
        "latency: time between a task's consecutive decisions; srv µs/c: the server's \
         usec_per_call of EVALSHA (INFO commandstats); cpu: % of one core over the row"
            .into(),
    );
    let keys: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..KEYS)
            .map(|i| format!("user:{i}").into_bytes())
            .collect(),
    );
    let mut specs = Vec::new();
    for kind in [
        Kind::TokenBucket,
        Kind::SlidingWindow,
        Kind::SlidingLog,
        Kind::FixedWindow,
    ] {
        specs.push(RowSpec {
            kind,
            mode: "per_call",
            tasks: 1,
            connections: 1,
        });
        specs.push(RowSpec {
            kind,
            mode: "pipelined",
            tasks: options.tasks,
            connections: options.connections,
        });
    }
    for tasks in [1, options.tasks] {
        specs.push(RowSpec {
            kind: Kind::Leased,
            mode: "leased",
            tasks,
            connections: 1,
        });
    }
    if let Some(only) = &options.only {
        specs.retain(|s| s.kind.name() == only);
        if specs.is_empty() {
            usage();
        }
    }
    out(String::new());
    out(table_header());
    let mut results = Vec::new();
    for (row, spec) in specs.into_iter().enumerate() {
        let result = run_row(spec, url, &keys, options, row).await;
        out(table_row(&result));
        if json {
            println!("{}", json_row(&result));
        }
        results.push(result);
    }
    out(String::new());
    goals(&results, &mut out);
    if options.anchors {
        out(String::new());
        let url = url.to_owned();
        let options = options.clone();
        let mut lines = Vec::new();
        let _ = tokio::task::spawn_blocking(move || {
            anchors(&url, &options, &mut |l| lines.push(l));
            lines
        })
        .await
        .map(|lines| lines.into_iter().for_each(&mut out));
    }
    out(format!("load avg at end {}", load_average()));
    ExitCode::SUCCESS
}

fn goals(results: &[RowResult], out: &mut dyn FnMut(String)) {
    let find = |kind: Kind, mode: &str, tasks: Option<usize>| {
        results.iter().find(|r| {
            r.spec.kind == kind && r.spec.mode == mode && tasks.is_none_or(|t| r.spec.tasks == t)
        })
    };
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    // A row where the failure policy decided (a call outlasted the timeout, and Redis was
    // then skipped for a while) counts decisions nobody asked Redis for: it measures nothing.
    let judged = |rows: &[&RowResult], ok: bool| match rows
        .iter()
        .map(|r| r.fallbacks + r.errors)
        .sum::<u64>()
    {
        0 => verdict(ok).to_owned(),
        n => format!("NOT MEASURED ({n} decisions by the failure policy or errors)"),
    };
    if let Some(r) = find(Kind::TokenBucket, "pipelined", None) {
        let rate = r.decisions_per_s();
        out(format!(
            "goal: exact GCRA >= 100000 decisions/s from one process: {rate:.0}/s with {} tasks: {}",
            r.spec.tasks,
            judged(&[r], rate >= 100_000.0)
        ));
    }
    for (leased_tasks, base) in [
        (1, find(Kind::TokenBucket, "per_call", Some(1))),
        (
            results
                .iter()
                .filter(|r| r.spec.kind == Kind::Leased)
                .map(|r| r.spec.tasks)
                .max()
                .unwrap_or(1),
            find(Kind::TokenBucket, "pipelined", None),
        ),
    ] {
        if let (Some(leased), Some(base)) = (find(Kind::Leased, "leased", Some(leased_tasks)), base)
        {
            let ratio = leased.decisions_per_s() / base.decisions_per_s();
            // The goal compares with the per-call mode; the pipelined comparison is printed
            // for scale, without a verdict (pipelining already gathers many decisions into
            // one call).
            let (head, tail) = if base.spec.mode == "per_call" {
                (
                    "goal: leased >= 100x per-call",
                    format!(": {}", judged(&[leased, base], ratio >= 100.0)),
                )
            } else {
                ("for scale (not a goal)", String::new())
            };
            out(format!(
                "{head}: leased {} task(s) {:.0}/s vs GCRA {} {} task(s) {:.0}/s = {ratio:.0}x{tail}",
                leased.spec.tasks,
                leased.decisions_per_s(),
                base.spec.mode,
                base.spec.tasks,
                base.decisions_per_s(),
            ));
        }
    }
    for r in results.iter().filter(|r| r.spec.tasks == 1) {
        let p99 = r.histogram.quantile_us(0.99);
        out(format!(
            "goal: p99 < 300 µs for one task: {} {}: {p99:.1} µs: {}",
            r.spec.kind.name(),
            r.spec.mode,
            judged(&[r], p99 < 300.0)
        ));
    }
}
