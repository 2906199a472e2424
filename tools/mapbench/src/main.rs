//! mapbench: concurrent hash map candidates for a keyed rate limiter.
//!
//! Usage (all via `cargo run --release -- ...`):
//!   tput  <map> <u64|u128> <nkeys> <threads,csv> <ops_per_thread> <runs>
//!   cold  <map> <u64|u128> <nkeys> <threads>       (also reports RSS growth)
//!   mixed <map> <u64|u128> <nkeys> <workers> <ops_per_worker>
//!   apis                                           (compile-checked API smoke test)
//! maps: papaya papaya_blk papaya_ti scc_map scc_index dashmap std_mutex pl_mutex
//! Hasher: foldhash::fast::RandomState for every map.

#[cfg(not(feature = "narrow"))]
use portable_atomic::AtomicU128;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Barrier;
use std::time::{Duration, Instant};

type S = foldhash::fast::RandomState;

// ---------------------------------------------------------------- value cell
/// The cell's word: 16 bytes (`AtomicU128`, the wide bucket cell) by default, 8 bytes
/// (`AtomicU64`, the narrow keyed bucket cell) with `--features narrow`.
#[cfg(not(feature = "narrow"))]
type Word = AtomicU128;
#[cfg(not(feature = "narrow"))]
type Raw = u128;
#[cfg(feature = "narrow")]
type Word = AtomicU64;
#[cfg(feature = "narrow")]
type Raw = u64;

/// Token-bucket-like state; hot op = one CAS loop on the word.
#[cfg_attr(not(feature = "narrow"), repr(align(16)))]
pub struct Cell {
    s: Word,
}
const _: () = assert!(std::mem::size_of::<Cell>() == std::mem::size_of::<Raw>());

impl Cell {
    #[inline]
    fn new() -> Self {
        Cell { s: Word::new(0) }
    }
    #[inline]
    fn op(&self) {
        let mut cur = self.s.load(Relaxed);
        loop {
            match self.s.compare_exchange_weak(cur, cur.wrapping_add(1), AcqRel, Relaxed) {
                Ok(_) => return,
                Err(c) => cur = c,
            }
        }
    }
    #[inline]
    fn count(&self) -> u64 {
        self.s.load(Acquire) as u64
    }
}
impl Clone for Cell {
    fn clone(&self) -> Self {
        Cell { s: Word::new(self.s.load(Acquire)) }
    }
}

// ---------------------------------------------------------------- keys
pub trait Key: Copy + Eq + Hash + Send + Sync + 'static + std::fmt::Debug {
    fn from_idx(i: u64) -> Self;
}
#[inline]
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}
impl Key for u64 {
    #[inline]
    fn from_idx(i: u64) -> Self {
        splitmix(i) // bijection -> distinct keys
    }
}
impl Key for u128 {
    #[inline]
    fn from_idx(i: u64) -> Self {
        // IPv6 /64 prefix: high 64 bits set, low 64 bits zero
        (splitmix(i) as u128) << 64
    }
}

// ---------------------------------------------------------------- map trait
pub trait Bench<K: Key>: Sync + Sized {
    fn new() -> Self;
    /// get-or-insert + one CAS on the cell
    fn op(&self, k: K);
    /// conditional remove "if counter even"; returns the counter seen by the
    /// predicate that decided the removal.
    fn remove_if_even(&self, k: &K) -> Option<u64>;
    fn len(&self) -> usize;
    fn sum(&self) -> u64;
}

/// MODE 0: default builder (ResizeMode::Incremental(64)) + get_or_insert_with
/// MODE 1: ResizeMode::Blocking + get_or_insert_with
/// MODE 2: default (Incremental) + try_insert (eagerly built value; insert path helps resizes)
pub struct Papaya<K, const MODE: u8>(papaya::HashMap<K, Cell, S>);
impl<K: Key, const MODE: u8> Bench<K> for Papaya<K, MODE> {
    fn new() -> Self {
        let b = papaya::HashMap::builder().hasher(S::default());
        let b = if MODE == 1 { b.resize_mode(papaya::ResizeMode::Blocking) } else { b };
        Papaya(b.build())
    }
    #[inline]
    fn op(&self, k: K) {
        let m = self.0.pin();
        match m.get(&k) {
            Some(v) => v.op(),
            None if MODE == 2 => match m.try_insert(k, Cell::new()) {
                Ok(v) => v.op(),
                Err(e) => e.current.op(),
            },
            None => m.get_or_insert_with(k, Cell::new).op(),
        }
    }
    fn remove_if_even(&self, k: &K) -> Option<u64> {
        let mut seen = 0;
        match self.0.pin().remove_if(k, |_, v| {
            seen = v.count();
            seen % 2 == 0
        }) {
            Ok(Some(_)) => Some(seen),
            _ => None,
        }
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn sum(&self) -> u64 {
        self.0.pin().iter().map(|(_, v)| v.count()).sum()
    }
}

pub struct SccMap<K>(scc::HashMap<K, Cell, S>);
impl<K: Key> Bench<K> for SccMap<K> {
    fn new() -> Self {
        SccMap(scc::HashMap::with_hasher(S::default()))
    }
    #[inline]
    fn op(&self, k: K) {
        // read_sync takes a shared bucket lock; entry_sync an exclusive one
        if self.0.read_sync(&k, |_, v| v.op()).is_none() {
            self.0.entry_sync(k).or_insert_with(Cell::new).get().op();
        }
    }
    fn remove_if_even(&self, k: &K) -> Option<u64> {
        self.0.remove_if_sync(k, |v| v.count() % 2 == 0).map(|(_, v)| v.count())
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn sum(&self) -> u64 {
        let mut s = 0;
        self.0.iter_sync(|_, v| {
            s += v.count();
            true
        });
        s
    }
}

pub struct SccIndex<K>(scc::HashIndex<K, Cell, S>);
impl<K: Key> Bench<K> for SccIndex<K> {
    fn new() -> Self {
        SccIndex(scc::HashIndex::with_hasher(S::default()))
    }
    #[inline]
    fn op(&self, k: K) {
        // peek_with is lock-free (epoch based)
        if self.0.peek_with(&k, |_, v| v.op()).is_none() {
            self.0.entry_sync(k).or_insert_with(Cell::new).get().op();
        }
    }
    fn remove_if_even(&self, k: &K) -> Option<u64> {
        let mut seen = 0;
        if self.0.remove_if_sync(k, |v| {
            seen = v.count();
            seen % 2 == 0
        }) {
            Some(seen)
        } else {
            None
        }
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn sum(&self) -> u64 {
        let mut s = 0;
        self.0.iter_sync(|_, v| {
            s += v.count();
            true
        });
        s
    }
}

pub struct Dash<K>(dashmap::DashMap<K, Cell, S>);
impl<K: Key> Bench<K> for Dash<K> {
    fn new() -> Self {
        Dash(dashmap::DashMap::with_hasher(S::default()))
    }
    #[inline]
    fn op(&self, k: K) {
        if let Some(r) = self.0.get(&k) {
            r.op();
        } else {
            self.0.entry(k).or_insert_with(Cell::new).op();
        }
    }
    fn remove_if_even(&self, k: &K) -> Option<u64> {
        self.0.remove_if(k, |_, v| v.count() % 2 == 0).map(|(_, v)| v.count())
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn sum(&self) -> u64 {
        self.0.iter().map(|r| r.value().count()).sum()
    }
}

type HM<K> = std::collections::HashMap<K, Cell, S>;
pub struct StdMutex<K>(std::sync::Mutex<HM<K>>);
impl<K: Key> Bench<K> for StdMutex<K> {
    fn new() -> Self {
        StdMutex(std::sync::Mutex::new(HM::with_hasher(S::default())))
    }
    #[inline]
    fn op(&self, k: K) {
        self.0.lock().unwrap().entry(k).or_insert_with(Cell::new).op();
    }
    fn remove_if_even(&self, k: &K) -> Option<u64> {
        let mut g = self.0.lock().unwrap();
        match g.get(k) {
            Some(v) if v.count() % 2 == 0 => g.remove(k).map(|v| v.count()),
            _ => None,
        }
    }
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn sum(&self) -> u64 {
        self.0.lock().unwrap().values().map(|v| v.count()).sum()
    }
}

pub struct PlMutex<K>(parking_lot::Mutex<HM<K>>);
impl<K: Key> Bench<K> for PlMutex<K> {
    fn new() -> Self {
        PlMutex(parking_lot::Mutex::new(HM::with_hasher(S::default())))
    }
    #[inline]
    fn op(&self, k: K) {
        self.0.lock().entry(k).or_insert_with(Cell::new).op();
    }
    fn remove_if_even(&self, k: &K) -> Option<u64> {
        let mut g = self.0.lock();
        match g.get(k) {
            Some(v) if v.count() % 2 == 0 => g.remove(k).map(|v| v.count()),
            _ => None,
        }
    }
    fn len(&self) -> usize {
        self.0.lock().len()
    }
    fn sum(&self) -> u64 {
        self.0.lock().values().map(|v| v.count()).sum()
    }
}

// ---------------------------------------------------------------- helpers
struct Rng(u64);
impl Rng {
    #[inline]
    fn next(&mut self) -> u64 {
        // wyrand
        self.0 = self.0.wrapping_add(0xa0761d6478bd642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe7037ed1a0b428db) as u128);
        ((t >> 64) ^ t) as u64
    }
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}
fn hwm_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    for l in s.lines() {
        if let Some(r) = l.strip_prefix("VmHWM:") {
            let kb: u64 = r.trim().trim_end_matches("kB").trim().parse().unwrap();
            return kb * 1024;
        }
    }
    0
}

/// Insert keys [0, n) split across `threads` threads (disjoint ranges).
fn populate<K: Key, M: Bench<K>>(m: &M, n: u64, threads: usize) -> Duration {
    let b = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads as u64 {
            let b = &b;
            s.spawn(move || {
                let lo = n * t / threads as u64;
                let hi = n * (t + 1) / threads as u64;
                b.wait();
                for i in lo..hi {
                    m.op(K::from_idx(i));
                }
            });
        }
        b.wait();
        let t0 = Instant::now();
        // scope joins all threads at the end
        t0
    })
    .elapsed()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

// ---------------------------------------------------------------- benches
fn tput<K: Key, M: Bench<K>>(name: &str, key: &str, n: u64, threads: &[usize], ops: u64, runs: usize) {
    let m = M::new();
    let pt = populate::<K, M>(&m, n, 2);
    assert_eq!(m.len() as u64, n);
    for &th in threads {
        let mut res = Vec::new();
        for r in 0..runs {
            let b = Barrier::new(th + 1);
            let el = std::thread::scope(|s| {
                for t in 0..th {
                    let (b, m) = (&b, &m);
                    s.spawn(move || {
                        let mut rng = Rng(0x1234_5678 ^ ((r * 64 + t) as u64).wrapping_mul(0x9E37));
                        b.wait();
                        for _ in 0..ops {
                            m.op(K::from_idx(rng.below(n)));
                        }
                    });
                }
                b.wait();
                Instant::now()
            })
            .elapsed();
            res.push((th as u64 * ops) as f64 / el.as_secs_f64() / 1e6);
        }
        let runs_s: Vec<String> = res.iter().map(|x| format!("{x:.2}")).collect();
        let med = median(&mut res);
        println!(
            "RESULT tput map={name} key={key} nkeys={n} threads={th} median_mops={med:.2} runs=[{}] populate_s={:.2}",
            runs_s.join(","),
            pt.as_secs_f64()
        );
    }
}

fn cold<K: Key, M: Bench<K>>(name: &str, key: &str, n: u64, threads: usize) {
    let m = M::new();
    let rss0 = rss_bytes();
    let el = populate::<K, M>(&m, n, threads);
    let rss1 = rss_bytes();
    let hwm = hwm_bytes();
    let t0 = Instant::now();
    let len = m.len();
    let len_us = t0.elapsed().as_secs_f64() * 1e6;
    assert_eq!(len as u64, n);
    println!(
        "RESULT cold map={name} key={key} nkeys={n} threads={threads} mops={:.2} secs={:.2} rss_delta_b_per_key={:.1} peak_delta_b_per_key={:.1} len_us={len_us:.0}",
        n as f64 / el.as_secs_f64() / 1e6,
        el.as_secs_f64(),
        (rss1 - rss0) as f64 / n as f64,
        (hwm.saturating_sub(rss0)) as f64 / n as f64,
    );
}

fn mixed<K: Key, M: Bench<K>>(name: &str, key: &str, n: u64, workers: usize, ops: u64) {
    let m = M::new();
    populate::<K, M>(&m, n, 2);
    let stop = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    let progress = AtomicU64::new(0);
    let b = Barrier::new(workers + 2);
    let (mut attempts, mut removed, mut removed_sum, mut len_calls, mut len_max_us) = (0u64, 0u64, 0u64, 0u64, 0f64);
    let mut panicked = false;
    let t0;
    let el;
    {
        let (m, stop, done, progress, b) = (&m, &stop, &done, &progress, &b);
        let (elx, t0x) = std::thread::scope(|s| {
            let mut hs = Vec::new();
            for t in 0..workers {
                hs.push(s.spawn(move || {
                    let mut rng = Rng(0xdead_beef ^ (t as u64 + 1).wrapping_mul(0x9E3779B97F4A7C15));
                    b.wait();
                    for i in 0..ops {
                        m.op(K::from_idx(rng.below(n)));
                        if i & 0xffff == 0 {
                            progress.fetch_add(0x10000, Relaxed);
                        }
                    }
                    done.fetch_add(1, Release);
                }));
            }
            let rem = s.spawn(move || {
                let (mut a, mut r, mut rs, mut lc, mut lmax) = (0u64, 0u64, 0u64, 0u64, 0f64);
                b.wait();
                let mut i = 0u64;
                while !stop.load(Relaxed) {
                    a += 1;
                    if let Some(c) = m.remove_if_even(&K::from_idx(i)) {
                        r += 1;
                        rs += c;
                    }
                    i += 1;
                    if i == n {
                        i = 0;
                    }
                    if a % 1_000_000 == 0 {
                        let t = Instant::now();
                        std::hint::black_box(m.len());
                        lc += 1;
                        lmax = f64::max(lmax, t.elapsed().as_secs_f64() * 1e6);
                    }
                }
                (a, r, rs, lc, lmax)
            });
            b.wait();
            let t0 = Instant::now();
            let limit = Duration::from_secs(120);
            while done.load(Acquire) < workers {
                std::thread::sleep(Duration::from_millis(20));
                if t0.elapsed() > limit {
                    println!(
                        "RESULT mixed map={name} key={key} DEADLOCK_OR_TIMEOUT after {:?}, progress={}",
                        t0.elapsed(),
                        progress.load(Relaxed)
                    );
                    std::process::exit(3);
                }
            }
            let el = t0.elapsed();
            stop.store(true, Relaxed);
            for h in hs {
                if h.join().is_err() {
                    panicked = true;
                }
            }
            match rem.join() {
                Ok(x) => (attempts, removed, removed_sum, len_calls, len_max_us) = x,
                Err(_) => panicked = true,
            }
            (el, t0)
        });
        el = elx;
        t0 = t0x;
    }
    let _ = t0;
    let total = workers as u64 * ops;
    let remaining = m.sum();
    // populate() incremented every key once, hence `+ n`.
    let lost = (total + n) as i64 - (remaining + removed_sum) as i64;
    println!(
        "RESULT mixed map={name} key={key} nkeys={n} workers={workers} worker_mops={:.2} remove_attempts_per_s={:.0} removed={removed} final_len={} lost_increments={lost} len_calls={len_calls} len_max_us={len_max_us:.0} panicked={panicked}",
        total as f64 / el.as_secs_f64() / 1e6,
        attempts as f64 / el.as_secs_f64(),
        m.len(),
    );
}

// ---------------------------------------------------------------- dispatch
fn dispatch<K: Key>(cmd: &str, map: &str, key: &str, a: &[String]) {
    macro_rules! go {
        ($M:ty) => {
            match cmd {
                "tput" => {
                    let th: Vec<usize> = a[1].split(',').map(|x| x.parse().unwrap()).collect();
                    tput::<K, $M>(map, key, a[0].parse().unwrap(), &th, a[2].parse().unwrap(), a[3].parse().unwrap())
                }
                "cold" => cold::<K, $M>(map, key, a[0].parse().unwrap(), a[1].parse().unwrap()),
                "mixed" => mixed::<K, $M>(map, key, a[0].parse().unwrap(), a[1].parse().unwrap(), a[2].parse().unwrap()),
                _ => panic!("unknown cmd {cmd}"),
            }
        };
    }
    match map {
        "papaya" => go!(Papaya<K, 0>),
        "papaya_blk" => go!(Papaya<K, 1>),
        "papaya_ti" => go!(Papaya<K, 2>),
        "scc_map" => go!(SccMap<K>),
        "scc_index" => go!(SccIndex<K>),
        "dashmap" => go!(Dash<K>),
        "std_mutex" => go!(StdMutex<K>),
        "pl_mutex" => go!(PlMutex<K>),
        _ => panic!("unknown map {map}"),
    }
}

fn apis() {
    // Compile-checked signatures of conditional-removal / len APIs (see report).
    let p: papaya::HashMap<u64, Cell, S> = papaya::HashMap::builder().hasher(S::default()).build();
    let g = p.pin();
    g.insert(1, Cell::new());
    let r: Result<Option<(&u64, &Cell)>, (&u64, &Cell)> = g.remove_if(&1, |_k, v| v.count() == 0);
    assert!(matches!(r, Ok(Some(_))));
    g.insert(2, Cell::new());
    let c = g.compute(2, |e| match e {
        Some((_, v)) if v.count() == 0 => papaya::Operation::Remove,
        _ => papaya::Operation::Abort(()),
    });
    assert!(matches!(c, papaya::Compute::Removed(_, _)));
    g.retain(|_k, v| v.count() != 0);
    let _: usize = p.len();

    let sm: scc::HashMap<u64, Cell, S> = scc::HashMap::with_hasher(S::default());
    sm.entry_sync(1).or_insert_with(Cell::new);
    let r: Option<(u64, Cell)> = sm.remove_if_sync(&1, |v: &mut Cell| v.count() == 0);
    assert!(r.is_some());
    sm.entry_sync(2).or_insert_with(Cell::new);
    if let scc::hash_map::Entry::Occupied(o) = sm.entry_sync(2) {
        if o.get().count() == 0 {
            let _: Cell = o.remove();
        }
    }
    sm.retain_sync(|_k, v: &mut Cell| v.count() != 0);
    let _: usize = sm.len();

    let si: scc::HashIndex<u64, Cell, S> = scc::HashIndex::with_hasher(S::default());
    si.entry_sync(1).or_insert_with(Cell::new);
    let r: bool = si.remove_if_sync(&1, |v: &Cell| v.count() == 0);
    assert!(r);
    si.retain_sync(|_k, v: &Cell| v.count() != 0);
    let _: usize = si.len();

    let d: dashmap::DashMap<u64, Cell, S> = dashmap::DashMap::with_hasher(S::default());
    d.insert(1, Cell::new());
    let r: Option<(u64, Cell)> = d.remove_if(&1, |_k, v| v.count() == 0);
    assert!(r.is_some());
    d.insert(2, Cell::new());
    let _: Option<(u64, Cell)> = d.remove_if_mut(&2, |_k, v: &mut Cell| v.count() == 0);
    d.retain(|_k, v: &mut Cell| v.count() != 0);
    let _: usize = d.len();
    println!("apis: ok");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(|s| s.as_str()) == Some("apis") {
        return apis();
    }
    if args.len() < 3 {
        eprintln!("usage: tput|cold|mixed <map> <u64|u128> args... | apis");
        std::process::exit(1);
    }
    let (cmd, map, key) = (&args[0], &args[1], &args[2]);
    match key.as_str() {
        "u64" => dispatch::<u64>(cmd, map, key, &args[3..]),
        "u128" => dispatch::<u128>(cmd, map, key, &args[3..]),
        _ => panic!("key must be u64 or u128"),
    }
}
