//! Keyed rows: one limiter per key, keys drawn at random from a set held before timing.
//!
//! Each (limiter, implementation, key count) runs in a child process of its own (this
//! program again, with `--keyed-child`), so that the resident memory it grows while
//! inserting its keys is its own: `bytes_per_key` is that growth, from before the limiter
//! is built, over the keys. The child then times every thread count on the filled limiter
//! and prints one line per row; the parent prints the tables (or JSON lines).
//!
//! Implementations: `lock_free` (`ringlimit::keyed::Keyed` built with `.max_keys(K)`, K the
//! row's key count, as a service builds it: its cells live in the fixed open-addressing
//! table, allocated as the keys arrive), `governor` (its keyed limiter, a DashMap of GCRA
//! states, token bucket only) and `std_mutex` (a `std::sync::Mutex` over a `HashMap` of the
//! same state, decided as the spec does).
//!
//! The keyed floor (rows `keyed_floor`, implementation `floor`), in a child of its own at
//! each key count so that its memory is measured alike: an array of as many 16-byte slots
//! as the table of a keyed token bucket of K keys holds ([`table_slots`]), and per call one
//! slot drawn by the same cheap random draw as the keyed rows, its first word loaded and
//! compare-exchanged +1: no hashing, no clock. It is the least a call on such a table costs
//! (a random line of a large array, one RMW); every keyed row's `floor_ratio` is its Mops/s
//! over the floor's at the same key count and thread count.
//!
//! The attack row, in a child too, sends distinct keys through a limiter bounded at a tenth
//! of them, with a few hot keys among them whose admissions must stay within their exact
//! limit; it reports the peak resident memory.

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

/// The keyed limiters, by the name `--only` matches (`keyed` matches them all, and
/// [`FLOOR`] too).
/// `keyed_token_bucket_foldhash` is the token bucket with both maps (ringlimit's and
/// governor's) hashing with foldhash instead of std's SipHash (`Keyed::with_hasher`,
/// governor's `dashmap_with_hasher`): what a faster hasher buys, for keys an attacker does
/// not choose.
pub const LIMITERS: [&str; 3] = [
    "keyed_token_bucket",
    "keyed_token_bucket_foldhash",
    "keyed_sliding_window",
];

/// The keyed floor's `limiter` name (its implementation is [`Implementation::Floor`]).
pub const FLOOR: &str = "keyed_floor";

/// Slots in the table of a keyed limiter bounded at `keys` keys (`src/keyed/table.rs`): a
/// fifth more than the keys, at least 4, rounded up to whole groups of 4 (one 64-byte
/// line of 16-byte slots for the token bucket's 8-byte cells).
pub fn table_slots(keys: u64) -> u64 {
    (keys + keys.div_ceil(5)).max(4).div_ceil(4) * 4
}

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

/// One keyed limiter under test (or the floor).
trait KeyedContender: Send + Sync + 'static {
    fn try_acquire(&self, key: u64) -> bool;

    /// One timed call: a key drawn in `0..keys`, then its check.
    #[inline(always)]
    fn call(&self, draw: &mut Draw, keys: u64) -> bool {
        self.try_acquire(draw.below(keys))
    }

    /// Before timing (and before the resident memory is read again): every key once.
    fn fill(&self, keys: u64) {
        for key in 0..keys {
            self.try_acquire(key);
        }
    }
}

/// One slot of the floor's array: 16 bytes, aligned as the table's slots are (so never
/// across two cache lines).
#[repr(C, align(16))]
struct FloorSlot([AtomicU64; 2]);

/// The keyed floor: as many slots as the table of a keyed token bucket of K keys.
struct KeyedFloor {
    slots: Box<[FloorSlot]>,
}

impl KeyedFloor {
    fn new(keys: u64) -> Self {
        let slots = usize::try_from(table_slots(keys)).expect("slots fit in memory");
        Self {
            slots: (0..slots)
                .map(|_| FloorSlot([AtomicU64::new(0), AtomicU64::new(0)]))
                .collect(),
        }
    }
}

impl KeyedContender for KeyedFloor {
    /// Slot `slot`'s first word: a load, then a compare-exchange of it +1 (`true` if it
    /// succeeded; under contention another thread's CAS may come between).
    #[inline(always)]
    fn try_acquire(&self, slot: u64) -> bool {
        let word = &self.slots[slot as usize].0[0];
        // Relaxed load, AcqRel CAS: what a cell's own update does (on x86_64 every locked
        // RMW is a full barrier whatever the ordering).
        let seen = word.load(Ordering::Relaxed);
        word.compare_exchange(seen, seen + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// A slot drawn over the whole array (the table's slots, not the keys): no hashing.
    #[inline(always)]
    fn call(&self, draw: &mut Draw, _keys: u64) -> bool {
        self.try_acquire(draw.below(self.slots.len() as u64))
    }

    /// Every slot once (they are resident from their construction already).
    fn fill(&self, _keys: u64) {
        for slot in 0..self.slots.len() as u64 {
            self.try_acquire(slot);
        }
    }
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

/// The contender of a row of `keys` keys. ringlimit's are bounded at `keys` (`max_keys`),
/// so they keep their cells in the table; the others grow their maps.
fn build(limiter: &str, implementation: Implementation, keys: u64) -> Box<dyn KeyedContender> {
    let period = 1_000_000_000 / RATE_PER_SECOND;
    let max_keys = usize::try_from(keys).expect("a key count that fits in memory");
    match (limiter, implementation) {
        (FLOOR, _) => Box::new(KeyedFloor::new(keys)),
        ("keyed_token_bucket", Implementation::LockFree) => {
            Box::new(Keyed::<u64, Buckets>::new(bucket_quota()).max_keys(max_keys))
        }
        ("keyed_token_bucket", Implementation::Governor) => {
            Box::new(governor::RateLimiter::keyed(governor_quota()))
        }
        ("keyed_token_bucket_foldhash", Implementation::LockFree) => {
            let clock = TscClock::new();
            let config = ringlimit::cell::BucketConfig::token(bucket_quota(), &clock);
            Box::new(
                Keyed::<u64, Buckets, _, Fold>::with_hasher(config, clock, Fold::default())
                    .max_keys(max_keys),
            )
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
            Box::new(
                Keyed::<u64, SlidingWindows<10>>::with_config(config, TscClock::new())
                    .max_keys(max_keys),
            )
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

/// A small deterministic generator (xorshift64*), one per thread (the policy rows use it
/// too).
pub struct Draw(pub u64);

impl Draw {
    /// A thread's generator, seeded by its index.
    pub fn for_thread(t: usize) -> Self {
        Self(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1) << 32)
    }

    /// A number in `0..n` (`n > 0`): one xorshift step and a modulo.
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
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
    let limiter = limiter.clone();
    timed(threads, duration, move |draw: &mut Draw| {
        limiter.call(draw, keys)
    })
}

/// Runs `call` on `threads` threads for about `duration`, each thread with its own
/// [`Draw`], and returns (all threads' calls per µs, calls, `true` answers). The threads are
/// spawned first and wait on a barrier; each reads the time when it starts and when it
/// stops (a stop flag checked every 1024 calls), and the sample spans from the first start
/// to the last stop, so that however the threads and the main thread are scheduled (more
/// threads than cores), every timed call lies inside it.
pub fn timed<F>(threads: usize, duration: Duration, call: F) -> (f64, u64, u64)
where
    F: Fn(&mut Draw) -> bool + Send + Sync + 'static,
{
    let call = Arc::new(call);
    let start = Arc::new(Barrier::new(threads + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (call, start, stop) = (call.clone(), start.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut draw = Draw::for_thread(t);
                let (mut calls, mut taken) = (0u64, 0u64);
                start.wait();
                let began = Instant::now();
                // Relaxed: only the flag's own value matters.
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1024 {
                        taken += u64::from(call(&mut draw));
                    }
                    calls += 1024;
                }
                (began, Instant::now(), calls, taken)
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    let runs: Vec<(Instant, Instant, u64, u64)> =
        workers.into_iter().map(|w| w.join().unwrap()).collect();
    let first = runs.iter().map(|r| r.0).min().expect("at least one thread");
    let last = runs.iter().map(|r| r.1).max().expect("at least one thread");
    let calls: u64 = runs.iter().map(|r| r.2).sum();
    let elapsed = last.duration_since(first).as_secs_f64().max(1e-9);
    (
        calls as f64 / elapsed / 1e6,
        calls,
        runs.iter().map(|r| r.3).sum(),
    )
}

/// The child's work for one (limiter or the floor, implementation, keys): prints `mem BYTES`
/// (the resident memory grown from before the limiter was built to after every key was
/// asked once) and one `row THREADS MOPS CALLS ADMITTED` per thread count.
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
    let built: Arc<dyn KeyedContender> = Arc::from(build(limiter, implementation, keys));
    built.fill(keys);
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

/// One keyed row (or keyed floor row), as the parent collects it.
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
    /// `mops` over the keyed floor's at the same key count and thread count (1 for the
    /// floor's own rows); `None` if the floor was not measured.
    pub floor_ratio: Option<f64>,
}

/// Runs the keyed floor's child at each key count (when a keyed row is kept, or `keep`
/// keeps the floor by name: `--only keyed_floor`, `--only floor`), then a child for each
/// (limiter, implementation) the filter keeps at that key count, then the attack; prints
/// the tables (or JSON lines). `Err` if a child failed or the attack's hot keys were
/// over-admitted.
pub fn run(
    options: &Options,
    keep: impl Fn(&str, Implementation) -> bool,
    cores: usize,
) -> Result<Vec<KeyedRow>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let any_row = LIMITERS
        .iter()
        .any(|&l| implementations(l).iter().any(|&i| keep(l, i)));
    let floor = any_row || keep(FLOOR, Implementation::Floor);
    if !floor && !keep("keyed_token_bucket", Implementation::LockFree) {
        return Ok(Vec::new());
    }
    let note = format!(
        "keyed rows: each (limiter, implementation, key count K) in a child process: it \
         builds the limiter, inserts keys 0..K (one call each) and reports the resident \
         memory grown since before the build divided by K (bytes per key, the table or map \
         included), then times {} sample(s) of {} ms per thread count, each thread calling \
         try_acquire on keys drawn at random from 0..K (median reported; a sample spans from \
         the first thread's start to the last one's stop); lock_free: \
         ringlimit's Keyed with .max_keys(K), so its cells are in the fixed open-addressing \
         table (K + ceil(K/4) slots, 16 bytes each for the token bucket); governor: its keyed \
         limiter (DashMap), the same rate and burst; std_mutex: one std::sync::Mutex over a \
         HashMap of the same state; every hasher std's RandomState (SipHash) but \
         keyed_token_bucket_foldhash's (ringlimit's and governor's on foldhash)\n\
         keyed_floor: {}, in a child of its own at each K, timed alike; floor_ratio = a row's \
         Mops/s / keyed_floor's at the same K and thread count",
        options.samples,
        options.duration.as_millis(),
        FLOOR_DESCRIBE,
    );
    if options.json {
        eprintln!("{note}");
    } else {
        println!("{note}\n");
    }
    let child = |limiter: &'static str, implementation: Implementation, keys: u64| {
        let (grown, rows) = run_child(&exe, options, limiter, implementation, keys)?;
        Ok::<_, String>(rows.into_iter().map(move |row| KeyedRow {
            limiter,
            implementation,
            keys,
            threads: row.threads,
            oversubscribed: row.threads > cores,
            mops: row.mops,
            calls: row.calls,
            admitted: row.admitted,
            bytes_per_key: grown / keys as f64,
            floor_ratio: None,
        }))
    };
    let mut rows = Vec::new();
    for keys in key_counts(options.quick) {
        let mut floors = Vec::new();
        if floor {
            floors.extend(child(FLOOR, Implementation::Floor, keys)?);
            for row in &mut floors {
                row.floor_ratio = Some(1.0);
            }
            if options.json {
                for row in &floors {
                    println!("{}", json(row));
                }
            } else {
                println!("{}", floor_table(keys, &floors, &options.threads));
            }
        }
        for limiter in LIMITERS {
            let mut block = Vec::new();
            for &implementation in implementations(limiter) {
                if keep(limiter, implementation) {
                    block.extend(child(limiter, implementation, keys)?);
                }
            }
            for row in &mut block {
                row.floor_ratio = floors
                    .iter()
                    .find(|f| f.threads == row.threads)
                    .filter(|f| f.mops > 0.0)
                    .map(|f| row.mops / f.mops);
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
        rows.extend(floors);
    }
    if keep("keyed_token_bucket", Implementation::LockFree) {
        attack_row(options, &exe)?;
    }
    Ok(rows)
}

/// What one floor call does, for the output.
const FLOOR_DESCRIBE: &str = "one random 16-byte slot (the keyed rows' draw) of an array as \
     large as the table of a keyed token bucket of K keys: a load of its first word and a \
     compare-exchange of it +1 (no hashing, no clock)";

/// One row as a child prints it.
struct ChildRow {
    threads: usize,
    mops: f64,
    calls: u64,
    admitted: u64,
}

/// Runs the child of one (limiter, implementation, keys): the bytes its resident memory
/// grew by, and its rows.
fn run_child(
    exe: &std::path::Path,
    options: &Options,
    limiter: &str,
    implementation: Implementation,
    keys: u64,
) -> Result<(f64, Vec<ChildRow>), String> {
    let threads: Vec<String> = options.threads.iter().map(|t| t.to_string()).collect();
    let output = Command::new(exe)
        .arg("--keyed-child")
        .args([limiter, implementation.name(), &keys.to_string()])
        .arg(threads.join(","))
        .arg(options.duration.as_millis().max(1).to_string())
        .arg(options.samples.to_string())
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "{limiter} / {}: {}",
            implementation.name(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut grown = 0.0;
    let mut rows = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["mem", bytes] => grown = bytes.parse::<f64>().unwrap_or(0.0),
            ["row", t, mops, calls, admitted] => rows.push(ChildRow {
                threads: t.parse().unwrap_or(0),
                mops: mops.parse().unwrap_or(0.0),
                calls: calls.parse().unwrap_or(0),
                admitted: admitted.parse().unwrap_or(0),
            }),
            _ => {}
        }
    }
    Ok((grown, rows))
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
        "== {limiter} ({RATE_PER_SECOND}/s per key{}): random keys of {keys} (lock_free: \
         max_keys {keys})\n",
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
    out += " lock_free / governor |";
    for i in &implementations {
        out += &format!(" {} / floor |", i.name());
    }
    out += "\n|---|";
    out += &"---|".repeat(2 * implementations.len() + 1);
    out += "\n";
    for &t in threads {
        let star = if rows.iter().any(|r| r.threads == t && r.oversubscribed) {
            "*"
        } else {
            ""
        };
        out += &format!("| {t}{star} |");
        let row = |i: Implementation| {
            rows.iter()
                .find(|r| r.threads == t && r.implementation == i)
        };
        let mops = |i: Implementation| row(i).map(|r| r.mops);
        for &i in &implementations {
            out += &mops(i).map_or(" - |".to_owned(), |m| format!(" {m:.2} |"));
        }
        out += &match (
            mops(Implementation::LockFree),
            mops(Implementation::Governor),
        ) {
            (Some(a), Some(b)) if b > 0.0 => format!(" {:.2}x |", a / b),
            _ => " n/a |".to_owned(),
        };
        for &i in &implementations {
            out += &row(i)
                .and_then(|r| r.floor_ratio)
                .map_or(" - |".to_owned(), |f| format!(" {f:.2} |"));
        }
        out += "\n";
    }
    out += "| bytes per key |";
    for &i in &implementations {
        let bytes = rows
            .iter()
            .find(|r| r.implementation == i)
            .map_or(0.0, |r| r.bytes_per_key);
        out += &format!(" {bytes:.1} |");
    }
    out += &" |".repeat(implementations.len() + 1);
    out += "\n";
    out
}

/// The keyed floor's rows at one key count.
fn floor_table(keys: u64, rows: &[KeyedRow], threads: &[usize]) -> String {
    let mut out = format!(
        "== {FLOOR}: {} slots of 16 bytes (the table of a keyed token bucket of {keys} keys); \
         per call one slot drawn at random, a load and a CAS +1 of its first word\n\
         | threads | floor Mops/s | CAS failed |\n|---|---|---|\n",
        table_slots(keys)
    );
    for &t in threads {
        let Some(row) = rows.iter().find(|r| r.threads == t) else {
            continue;
        };
        let star = if row.oversubscribed { "*" } else { "" };
        out += &format!(
            "| {t}{star} | {:.2} | {} |\n",
            row.mops,
            row.calls - row.admitted.min(row.calls)
        );
    }
    let bytes = rows.first().map_or(0.0, |r| r.bytes_per_key);
    out += &format!("| bytes per key | {bytes:.1} | |\n");
    out
}

/// One JSON line of a keyed row: `max_keys` is the lock-free rows' bound (null for the
/// others), `slots` the floor's array (null for the others).
fn json(row: &KeyedRow) -> String {
    let floor = row.implementation == Implementation::Floor;
    format!(
        "{{\"limiter\":\"{}\",\"implementation\":\"{}\",\"scenario\":\"random_keys\",\"keys\":{},\"threads\":{},\"oversubscribed\":{},\"mops\":{:.4},\"floor_ratio\":{},\"calls\":{},\"admitted\":{},\"bytes_per_key\":{:.1},\"max_keys\":{},\"slots\":{}}}",
        row.limiter,
        row.implementation.name(),
        row.keys,
        row.threads,
        row.oversubscribed,
        row.mops,
        row.floor_ratio
            .map_or("null".to_owned(), |f| format!("{f:.4}")),
        row.calls,
        row.admitted,
        row.bytes_per_key,
        if row.implementation == Implementation::LockFree {
            row.keys.to_string()
        } else {
            "null".to_owned()
        },
        if floor {
            table_slots(row.keys).to_string()
        } else {
            "null".to_owned()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The floor's array has the table's slot count: a fifth more than the keys, at
    /// least one group, whole groups of 4.
    #[test]
    fn floor_slots_match_the_table() {
        assert_eq!(table_slots(1), 4);
        assert_eq!(table_slots(4), 8);
        assert_eq!(table_slots(100), 120);
        assert_eq!(table_slots(10_000), 12_000);
        assert_eq!(table_slots(1_000_000), 1_200_000);
        assert_eq!(table_slots(10_000_001), 12_000_004);
        assert_eq!(KeyedFloor::new(100).slots.len(), 120);
        assert_eq!(std::mem::size_of::<FloorSlot>(), 16);
        assert_eq!(std::mem::align_of::<FloorSlot>(), 16);
    }

    /// A floor call loads a slot's first word and CASes it +1; the draw covers the slots.
    #[test]
    fn floor_call_is_one_cas_on_a_drawn_slot() {
        let floor = KeyedFloor::new(10);
        floor.fill(10);
        let mut draw = Draw::for_thread(0);
        assert!((0..1000).all(|_| floor.call(&mut draw, 10)));
        let words: Vec<u64> = floor
            .slots
            .iter()
            .map(|s| s.0[0].load(Ordering::Relaxed))
            .collect();
        assert_eq!(words.iter().sum::<u64>(), 1000 + words.len() as u64);
        assert!(words.iter().all(|&w| w > 1), "every slot drawn: {words:?}");
        assert!(floor
            .slots
            .iter()
            .all(|s| s.0[1].load(Ordering::Relaxed) == 0));
    }

    /// The lock-free contenders are bounded at the row's keys: the fill's keys are held and
    /// admitted (but for the few a table filled to its bound may find no slot for).
    #[test]
    fn lock_free_rows_hold_their_keys() {
        for limiter in LIMITERS {
            let built = build(limiter, Implementation::LockFree, 1000);
            let admitted = (0..1000).filter(|&key| built.try_acquire(key)).count();
            assert!(admitted >= 990, "{limiter}: {admitted}");
        }
    }
}
