//! Keyed rows: one limiter per key, keys drawn at random from a set held before timing.
//!
//! Each (limiter, implementation, key count) runs in a child process of its own (this
//! program again, with `--keyed-child`), so that the resident memory it grows while
//! inserting its keys is its own: `bytes_per_key` is that growth over the keys. The child
//! then times every thread count on the filled map and prints one line per row; the parent
//! prints the tables (or JSON lines). The attack row, in a child too, sends distinct keys
//! through a limiter bounded at a tenth of them, with a few hot keys among them whose
//! admissions must stay within their exact limit; it reports the peak resident memory.
//!
//! Implementations: `lock_free` (`ringlimit::keyed::Keyed`), `governor` (its keyed limiter,
//! a DashMap of GCRA states, token bucket only) and `std_mutex` (a `std::sync::Mutex` over
//! a `HashMap` of the same state, decided as the spec does).

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use ringlimit::clock::{Clock, TscClock};
use ringlimit::keyed::{Buckets, Keyed, KeyedError, SlidingWindows};
use ringlimit::spec::{SlidingWindowSpec, Spec};
use ringlimit::{BucketQuota, WindowQuota};

use crate::cli::Options;
use crate::limiters::Implementation;

/// The keyed limiters, by the name `--only` matches (`keyed` matches them all).
/// `keyed_token_bucket_foldhash` is the token bucket with both maps (ringlimit's and
/// governor's) hashing with foldhash instead of std's SipHash (`Keyed::with_hasher`,
/// governor's `dashmap_with_hasher`): what a faster hasher buys, for keys an attacker does
/// not choose.
pub const LIMITERS: [&str; 3] = [
    "keyed_token_bucket",
    "keyed_token_bucket_foldhash",
    "keyed_sliding_window",
];

/// Per key: 100 permits a second with a burst of 10 (token bucket), or 100 a second in
/// 10 buckets (sliding window). Random keys over a million or more at a few million calls a
/// second hit each key a few times a second: every call is admitted, as for most keys of a
/// real service, so the rows measure the map and the cell.
const RATE_PER_SECOND: u64 = 100;
const BURST: u64 = 10;

/// The key counts of the throughput rows, and of the attack (distinct keys, bound).
fn key_counts(quick: bool) -> [u64; 2] {
    if quick {
        [10_000, 100_000]
    } else {
        [1_000_000, 10_000_000]
    }
}

fn attack_size(quick: bool) -> (u64, usize) {
    if quick {
        (100_000, 10_000)
    } else {
        (10_000_000, 1_000_000)
    }
}

/// The implementations a keyed limiter offers.
fn implementations(limiter: &str) -> &'static [Implementation] {
    match limiter {
        "keyed_token_bucket" => &[
            Implementation::LockFree,
            Implementation::Governor,
            Implementation::StdMutex,
        ],
        "keyed_token_bucket_foldhash" => &[Implementation::LockFree, Implementation::Governor],
        _ => &[Implementation::LockFree, Implementation::StdMutex],
    }
}

/// One keyed limiter under test.
trait KeyedContender: Send + Sync + 'static {
    fn try_acquire(&self, key: u64) -> bool;
}

impl KeyedContender for Keyed<u64, Buckets> {
    fn try_acquire(&self, key: u64) -> bool {
        Keyed::try_acquire(self, &key)
    }
}

impl<const B: usize> KeyedContender for Keyed<u64, SlidingWindows<B>> {
    fn try_acquire(&self, key: u64) -> bool {
        Keyed::try_acquire(self, &key)
    }
}

impl KeyedContender for Keyed<u64, Buckets, TscClock, Fold> {
    fn try_acquire(&self, key: u64) -> bool {
        Keyed::try_acquire(self, &key)
    }
}

impl<S: std::hash::BuildHasher + Clone + Send + Sync + 'static> KeyedContender
    for governor::RateLimiter<
        u64,
        governor::state::keyed::DashMapStateStore<u64, S>,
        governor::clock::DefaultClock,
    >
{
    fn try_acquire(&self, key: u64) -> bool {
        self.check_key(&key).is_ok()
    }
}

/// foldhash's hasher, randomly seeded.
type Fold = foldhash::fast::RandomState;

/// A GCRA per key under one `std::sync::Mutex`: the theoretical arrival time of each key.
struct MutexBuckets {
    states: Mutex<HashMap<u64, u64>>,
    clock: TscClock,
    period: u64,
    tolerance: u64,
}

impl KeyedContender for MutexBuckets {
    fn try_acquire(&self, key: u64) -> bool {
        let now = self.clock.now_nanos();
        let mut states = self.states.lock().unwrap();
        let tat = states.entry(key).or_insert(0);
        let start = (*tat).max(now);
        if start + self.period - now > self.tolerance + self.period {
            return false;
        }
        *tat = start + self.period;
        true
    }
}

/// The sliding window's spec per key under one `std::sync::Mutex`.
struct MutexWindows {
    states: Mutex<HashMap<u64, SlidingWindowSpec>>,
    clock: TscClock,
}

impl KeyedContender for MutexWindows {
    fn try_acquire(&self, key: u64) -> bool {
        let now = self.clock.now_nanos();
        let mut states = self.states.lock().unwrap();
        let spec = states.entry(key).or_insert_with(|| {
            SlidingWindowSpec::new(RATE_PER_SECOND, Duration::from_secs(1), 10).unwrap()
        });
        spec.decide(now, 1).is_ok_and(|d| d.is_admitted())
    }
}

fn bucket_quota() -> BucketQuota {
    BucketQuota::per_second(RATE_PER_SECOND)
        .and_then(|q| q.burst(BURST))
        .expect("a valid quota")
}

fn governor_quota() -> governor::Quota {
    governor::Quota::per_second(nonzero(RATE_PER_SECOND)).allow_burst(nonzero(BURST))
}

fn build(limiter: &str, implementation: Implementation) -> Box<dyn KeyedContender> {
    let period = 1_000_000_000 / RATE_PER_SECOND;
    match (limiter, implementation) {
        ("keyed_token_bucket", Implementation::LockFree) => {
            Box::new(Keyed::<u64, Buckets>::new(bucket_quota()))
        }
        ("keyed_token_bucket", Implementation::Governor) => {
            Box::new(governor::RateLimiter::keyed(governor_quota()))
        }
        ("keyed_token_bucket_foldhash", Implementation::LockFree) => {
            let clock = TscClock::new();
            let config = ringlimit::cell::BucketConfig::token(bucket_quota(), &clock);
            Box::new(Keyed::<u64, Buckets, _, Fold>::with_hasher(
                config,
                clock,
                Fold::default(),
            ))
        }
        ("keyed_token_bucket_foldhash", _) => Box::new(governor::RateLimiter::dashmap_with_hasher(
            governor_quota(),
            Fold::default(),
        )),
        ("keyed_token_bucket", _) => Box::new(MutexBuckets {
            states: Mutex::new(HashMap::new()),
            clock: TscClock::new(),
            period,
            tolerance: period * (BURST - 1),
        }),
        (_, Implementation::LockFree) => {
            let quota = WindowQuota::per_second(RATE_PER_SECOND).expect("a valid quota");
            let config = ringlimit::cell::SlidingConfig::<10>::new(quota).expect("10 buckets");
            Box::new(Keyed::<u64, SlidingWindows<10>>::with_config(
                config,
                TscClock::new(),
            ))
        }
        _ => Box::new(MutexWindows {
            states: Mutex::new(HashMap::new()),
            clock: TscClock::new(),
        }),
    }
}

fn nonzero(n: u64) -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(u32::try_from(n).expect("small")).expect("nonzero")
}

/// A small deterministic generator (xorshift64*), one per thread.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// This process's resident memory and its peak, in bytes (Linux; 0 elsewhere).
fn resident() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// One timed sample: `threads` threads draw keys in `0..keys` for `duration`.
fn sample(
    limiter: &Arc<dyn KeyedContender>,
    keys: u64,
    threads: usize,
    duration: Duration,
) -> (f64, u64, u64) {
    let start = Arc::new(Barrier::new(threads + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, admitted) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (limiter, start, stop) = (limiter.clone(), start.clone(), stop.clone());
            let (calls, admitted) = (calls.clone(), admitted.clone());
            std::thread::spawn(move || {
                let mut draw = Draw(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1) << 32);
                let (mut mine, mut taken) = (0u64, 0u64);
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1024 {
                        taken += u64::from(limiter.try_acquire(draw.below(keys)));
                    }
                    mine += 1024;
                }
                calls.fetch_add(mine, Ordering::Relaxed);
                admitted.fetch_add(taken, Ordering::Relaxed);
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    workers.into_iter().for_each(|w| w.join().unwrap());
    let elapsed = began.elapsed().as_secs_f64();
    let calls = calls.load(Ordering::Relaxed);
    (
        calls as f64 / elapsed / 1e6,
        calls,
        admitted.load(Ordering::Relaxed),
    )
}

/// The child's work for one (limiter, implementation, keys): prints `mem BYTES` and one
/// `row THREADS MOPS CALLS ADMITTED` per thread count.
pub fn child(args: &[String]) -> Result<(), String> {
    let [limiter, implementation, keys, threads, duration_ms, samples] = args else {
        return Err(format!("--keyed-child: six arguments, got {args:?}"));
    };
    if limiter == "attack" {
        return attack(keys, threads);
    }
    let implementation = Implementation::ALL
        .into_iter()
        .find(|i| i.name() == implementation)
        .ok_or("--keyed-child: unknown implementation")?;
    let number = |s: &String| s.parse::<u64>().map_err(|e| e.to_string());
    let keys = number(keys)?;
    let duration = Duration::from_millis(number(duration_ms)?);
    let samples = number(samples)?;
    let before = resident().0;
    let built: Arc<dyn KeyedContender> = Arc::from(build(limiter, implementation));
    for key in 0..keys {
        built.try_acquire(key);
    }
    let grown = resident().0.saturating_sub(before);
    println!("mem {grown}");
    for threads in threads.split(',') {
        let threads: usize = threads.parse().map_err(|_| "bad thread count")?;
        let mut runs: Vec<(f64, u64, u64)> = (0..samples)
            .map(|_| sample(&built, keys, threads, duration))
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mops, calls, admitted) = runs[runs.len() / 2];
        println!("row {threads} {mops} {calls} {admitted}");
    }
    Ok(())
}

/// The attack: `distinct` keys, each asked once, through a `Keyed` token bucket bounded at
/// `bound`, with 4 hot keys asked every 16th call. Prints `attack PEAK_RSS HELD FULL` and
/// `hot KEY ADMITTED ALLOWED` per hot key (ALLOWED: the GCRA's most over the run).
fn attack(distinct: &str, bound: &str) -> Result<(), String> {
    let distinct: u64 = distinct.parse().map_err(|_| "bad key count")?;
    let bound: usize = bound.parse().map_err(|_| "bad bound")?;
    let clock = TscClock::new();
    let limits: Keyed<u64, Buckets> =
        Keyed::with_clock(bucket_quota(), clock.clone()).max_keys(bound);
    let hot = [u64::MAX - 3, u64::MAX - 2, u64::MAX - 1, u64::MAX];
    let mut hot_admitted = [0u64; 4];
    let mut full = 0u64;
    let first = clock.now_nanos();
    for i in 0..distinct {
        if i % 16 == 0 {
            let h = (i / 16 % 4) as usize;
            hot_admitted[h] += u64::from(limits.try_acquire(&hot[h]));
        }
        if let Err(KeyedError::Full { .. }) = limits.try_acquire_n(&i, 1) {
            full += 1;
        }
    }
    let span = clock.now_nanos() - first;
    let peak = resident().1;
    println!("attack {peak} {} {full}", limits.len());
    let period = 1_000_000_000 / RATE_PER_SECOND;
    for (h, admitted) in hot_admitted.iter().enumerate() {
        // A full burst at the first call, then one permit per period of the span.
        println!("hot {} {admitted} {}", hot[h], BURST + span / period);
    }
    Ok(())
}

/// One keyed row, as the parent collects it.
pub struct KeyedRow {
    pub limiter: &'static str,
    pub implementation: Implementation,
    pub keys: u64,
    pub threads: usize,
    pub oversubscribed: bool,
    pub mops: f64,
    pub calls: u64,
    pub admitted: u64,
    pub bytes_per_key: f64,
}

/// Runs a child for each (limiter, implementation, key count) the filter keeps, then the
/// attack; prints the tables or JSON lines. `Err` if a child failed or the attack's hot
/// keys were over-admitted.
pub fn run(
    options: &Options,
    keep: impl Fn(&str, Implementation) -> bool,
    cores: usize,
) -> Result<Vec<KeyedRow>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let threads: Vec<String> = options.threads.iter().map(|t| t.to_string()).collect();
    let note = format!(
        "keyed rows: each (limiter, implementation, key count) in a child process: it \
         inserts keys 0..K (one call each) and reports the resident memory grown divided by \
         K (bytes per key, the map included), then times {} sample(s) of {} ms per thread \
         count, each thread calling try_acquire on keys drawn at random from 0..K (median \
         reported); governor: its keyed limiter (DashMap), the same rate and burst; \
         std_mutex: one std::sync::Mutex over a HashMap of the same state; every map on \
         std's RandomState (SipHash) but keyed_token_bucket_foldhash's (ringlimit's and \
         governor's on foldhash)",
        options.samples,
        options.duration.as_millis()
    );
    if options.json {
        eprintln!("{note}");
    } else {
        println!("{note}\n");
    }
    let mut rows = Vec::new();
    for limiter in LIMITERS {
        for keys in key_counts(options.quick) {
            let mut block = Vec::new();
            for &implementation in implementations(limiter) {
                if !keep(limiter, implementation) {
                    continue;
                }
                let output = Command::new(&exe)
                    .arg("--keyed-child")
                    .args([limiter, implementation.name(), &keys.to_string()])
                    .arg(threads.join(","))
                    .arg(options.duration.as_millis().max(1).to_string())
                    .arg(options.samples.to_string())
                    .output()
                    .map_err(|e| e.to_string())?;
                let text = String::from_utf8_lossy(&output.stdout);
                if !output.status.success() {
                    return Err(format!(
                        "{limiter} / {}: {}",
                        implementation.name(),
                        String::from_utf8_lossy(&output.stderr)
                    ));
                }
                let mut grown = 0.0;
                for line in text.lines() {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    match fields.as_slice() {
                        ["mem", bytes] => grown = bytes.parse::<f64>().unwrap_or(0.0),
                        ["row", t, mops, calls, admitted] => {
                            let threads: usize = t.parse().unwrap_or(0);
                            block.push(KeyedRow {
                                limiter,
                                implementation,
                                keys,
                                threads,
                                oversubscribed: threads > cores,
                                mops: mops.parse().unwrap_or(0.0),
                                calls: calls.parse().unwrap_or(0),
                                admitted: admitted.parse().unwrap_or(0),
                                bytes_per_key: grown / keys as f64,
                            });
                        }
                        _ => {}
                    }
                }
            }
            if options.json {
                for row in &block {
                    println!("{}", json(row));
                }
            } else if !block.is_empty() {
                println!("{}", table(limiter, keys, &block, &options.threads));
            }
            rows.extend(block);
        }
    }
    if keep("keyed_token_bucket", Implementation::LockFree) {
        attack_row(options, &exe)?;
    }
    Ok(rows)
}

fn attack_row(options: &Options, exe: &std::path::Path) -> Result<(), String> {
    let (distinct, bound) = attack_size(options.quick);
    let output = Command::new(exe)
        .arg("--keyed-child")
        .args([
            "attack",
            "-",
            &distinct.to_string(),
            &bound.to_string(),
            "-",
            "-",
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "attack: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut over = Vec::new();
    let mut hot = Vec::new();
    let mut summary = (0u64, 0u64, 0u64);
    for line in text.lines() {
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        match (line.split_whitespace().next(), fields.as_slice()) {
            (Some("attack"), [peak, held, full]) => summary = (*peak, *held, *full),
            (Some("hot"), [key, admitted, allowed]) => {
                if admitted > allowed {
                    over.push(format!("hot key {key}: {admitted} > {allowed}"));
                }
                hot.push(format!("{admitted}/{allowed}"));
            }
            _ => {}
        }
    }
    let (peak, held, full) = summary;
    if options.json {
        println!(
            "{{\"limiter\":\"keyed_token_bucket\",\"implementation\":\"lock_free\",\"scenario\":\"attack\",\"distinct_keys\":{distinct},\"max_keys\":{bound},\"peak_rss_bytes\":{peak},\"keys_held\":{held},\"refused_full\":{full},\"hot_admitted_of_allowed\":[{}]}}",
            hot.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(",")
        );
    } else {
        println!(
            "== keyed_token_bucket / attack: {distinct} distinct keys through max_keys {bound}, 4 hot keys every 16th call\n\
             peak resident {:.1} MiB, {held} keys held at the end, {full} calls refused Full; \
             hot keys admitted/allowed: {}\n",
            peak as f64 / (1 << 20) as f64,
            hot.join(", ")
        );
    }
    if over.is_empty() {
        Ok(())
    } else {
        Err(format!("attack over-admitted: {}", over.join("; ")))
    }
}

fn table(limiter: &str, keys: u64, rows: &[KeyedRow], threads: &[usize]) -> String {
    let mut out = format!(
        "== {limiter} ({RATE_PER_SECOND}/s per key{}): random keys of {keys}\n",
        if limiter.starts_with("keyed_token_bucket") {
            format!(", burst {BURST}")
        } else {
            ", 10 buckets".to_owned()
        }
    );
    let implementations: Vec<Implementation> = implementations(limiter)
        .iter()
        .copied()
        .filter(|i| rows.iter().any(|r| r.implementation == *i))
        .collect();
    out += "| threads |";
    for i in &implementations {
        out += &format!(" {} Mops/s |", i.name());
    }
    out += " lock_free / governor |\n|---|";
    out += &"---|".repeat(implementations.len() + 1);
    out += "\n";
    for &t in threads {
        let star = if rows.iter().any(|r| r.threads == t && r.oversubscribed) {
            "*"
        } else {
            ""
        };
        out += &format!("| {t}{star} |");
        let mops = |i: Implementation| {
            rows.iter()
                .find(|r| r.threads == t && r.implementation == i)
                .map(|r| r.mops)
        };
        for &i in &implementations {
            out += &mops(i).map_or(" - |".to_owned(), |m| format!(" {m:.2} |"));
        }
        out += &match (
            mops(Implementation::LockFree),
            mops(Implementation::Governor),
        ) {
            (Some(a), Some(b)) if b > 0.0 => format!(" {:.2}x |\n", a / b),
            _ => " n/a |\n".to_owned(),
        };
    }
    out += "| bytes per key |";
    for &i in &implementations {
        let bytes = rows
            .iter()
            .find(|r| r.implementation == i)
            .map_or(0.0, |r| r.bytes_per_key);
        out += &format!(" {bytes:.1} |");
    }
    out += " |\n";
    out
}

fn json(row: &KeyedRow) -> String {
    format!(
        "{{\"limiter\":\"{}\",\"implementation\":\"{}\",\"scenario\":\"random_keys\",\"keys\":{},\"threads\":{},\"oversubscribed\":{},\"mops\":{:.4},\"calls\":{},\"admitted\":{},\"bytes_per_key\":{:.1}}}",
        row.limiter,
        row.implementation.name(),
        row.keys,
        row.threads,
        row.oversubscribed,
        row.mops,
        row.calls,
        row.admitted,
        row.bytes_per_key
    )
}
