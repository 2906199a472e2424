//! Perf probe: one hot path called N times in a non-inlined loop, for deterministic
//! instruction counts and profiles (not a benchmark; the machine is shared).
//!
//! ```text
//! RUSTFLAGS="-C debuginfo=1" cargo build --release --example perf_probe
//! perf_probe WHAT [CALLS] [THREADS] [deny]
//!   WHAT: tb (TokenBucket), lm (LeakyBucket meter), aw (ApproxSlidingWindow), wu (WarmUp),
//!         gov (governor check), sw (SlidingWindow), log (SlidingLog),
//!         awpl (ApproxSlidingWindowSpec behind parking_lot),
//!         sww (the same SlidingWindow in 128-bit words), swc (SlidingWindow cell),
//!         fw (FixedWindow), tsc (TscClock),
//!         govclock (governor's QuantaClock), raw (quanta raw TSC), lock (load + CAS),
//!         add (load + fetch_add: the window engine's admission), lock128 (a 128-bit load +
//!         CAS through portable-atomic: what a 128-bit window head would cost), load128 (a
//!         128-bit load alone: a refusal on such a head),
//!         keyed (Keyed<u64, Buckets>), keyedfh (the same on foldhash), kgov (governor's keyed limiter): KEYS keys (default
//!         1 000 000) inserted first, then CALLS calls on keys drawn at random from them
//!         (100 per second per key, burst 10, every call admitted, as the compare tool's
//!         keyed rows), one thread; pol (a Policy of four dimensions, the policy bench's)
//! valgrind --tool=callgrind --toggle-collect='perf_probe::run_*' perf_probe tb 100000
//! valgrind --tool=callgrind --cache-sim=yes --toggle-collect='perf_probe::run_*' \
//!     perf_probe keyed 200000 1 allow 1000000
//! perf record -e cpu-clock perf_probe tb 10000000 2
//! ```
//! allow: TokenBucket/LeakyBucket/governor at 1 per ns, burst 1000; SlidingWindow,
//! FixedWindow, SlidingLog and ApproxSlidingWindow 100 000 per ms.
//! deny: 1 per hour, the burst or window used up first.
use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use ringlimit::baseline::ParkingLotLocked;
use ringlimit::cell::Compact;
use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
use ringlimit::clock::{Clock, TscClock};
use ringlimit::spec::ApproxSlidingWindowSpec;
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, FixedWindow, LeakyBucket, Rate, RateLimiter, SlidingLog,
    SlidingWindow, TokenBucket, WarmUp, WarmUpQuota, WindowQuota,
};

#[inline(never)]
fn run_tb(l: &TokenBucket, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
#[inline(never)]
fn run_lm(l: &LeakyBucket, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
#[inline(never)]
fn run_aw(l: &ApproxSlidingWindow, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
/// The approximate window's spec behind parking_lot (the comparison tool's `parking_lot` row).
#[inline(never)]
fn run_awpl(l: &ParkingLotLocked<ApproxSlidingWindowSpec>, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
#[inline(never)]
fn run_wu(l: &WarmUp, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
#[inline(never)]
fn run_gov(l: &governor::DefaultDirectRateLimiter, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.check().is_ok()) as u64;
    }
    a
}
#[inline(never)]
fn run_sw(l: &SlidingWindow, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
#[inline(never)]
fn run_fw(l: &FixedWindow, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
#[inline(never)]
fn run_log(l: &SlidingLog, n: u64) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(l.try_acquire()) as u64;
    }
    a
}
#[inline(never)]
fn run_swc(
    cell: &SlidingWindowCell<10, Compact>,
    config: &SlidingConfig<10>,
    clock: &TscClock,
    n: u64,
) -> u64 {
    let mut a = 0;
    for _ in 0..n {
        a += black_box(cell.try_acquire(config, clock)) as u64;
    }
    a
}
#[inline(never)]
fn run_tsc(c: &TscClock, n: u64) -> u64 {
    let mut a = 0u64;
    for _ in 0..n {
        a = a.wrapping_add(black_box(c.now_nanos()));
    }
    a
}
#[inline(never)]
fn run_raw(c: &quanta::Clock, n: u64) -> u64 {
    let mut a = 0u64;
    for _ in 0..n {
        a = a.wrapping_add(black_box(c.raw()));
    }
    a
}
#[inline(never)]
fn run_lock(w: &std::sync::atomic::AtomicU64, n: u64) -> u64 {
    let mut a = 0u64;
    for _ in 0..n {
        let v = w.load(std::sync::atomic::Ordering::Acquire);
        a = a.wrapping_add(
            w.compare_exchange(
                v,
                v + 8,
                std::sync::atomic::Ordering::Release,
                std::sync::atomic::Ordering::Acquire,
            )
            .is_ok() as u64,
        );
    }
    a
}
#[inline(never)]
fn run_add(w: &std::sync::atomic::AtomicU64, n: u64) -> u64 {
    use std::sync::atomic::Ordering::Relaxed;
    let mut a = 0u64;
    for _ in 0..n {
        // The engine's admission, in its cheapest form: a load, a check, one fetch_add.
        let v = w.load(Relaxed);
        if v & 1 == 0 {
            a = a.wrapping_add(w.fetch_add(2, Relaxed) >> 1);
        }
    }
    a
}
#[inline(never)]
fn run_lock128(w: &portable_atomic::AtomicU128, n: u64) -> u64 {
    use std::sync::atomic::Ordering::Relaxed;
    let mut a = 0u64;
    for _ in 0..n {
        let v = w.load(Relaxed);
        a = a.wrapping_add(w.compare_exchange(v, v + 2, Relaxed, Relaxed).is_ok() as u64);
    }
    a
}
#[inline(never)]
fn run_load128(w: &portable_atomic::AtomicU128, n: u64) -> u64 {
    let mut a = 0u64;
    for _ in 0..n {
        a = a.wrapping_add(w.load(std::sync::atomic::Ordering::Relaxed) as u64);
    }
    a
}
#[inline(never)]
fn run_quanta(c: &quanta::Clock, n: u64) -> u64 {
    let mut a = 0u64;
    for _ in 0..n {
        a = a.wrapping_add(
            black_box(c.now())
                .duration_since(quanta::Instant::recent())
                .as_nanos() as u64,
        );
    }
    a
}
#[inline(never)]
fn run_govclock(c: &governor::clock::QuantaClock, n: u64) -> u64 {
    use governor::clock::{Clock as _, Reference as _};
    let mut a = 0u64;
    let start = c.now();
    for _ in 0..n {
        a = a.wrapping_add(black_box(c.now()).duration_since(start).as_u64());
    }
    a
}

/// The keyed token bucket on hasher `S` (SipHash for `keyed`, foldhash for `keyedfh`).
#[cfg(feature = "keyed")]
#[inline(never)]
fn run_keyed<S: std::hash::BuildHasher>(
    l: &ringlimit::keyed::Keyed<u64, ringlimit::keyed::Buckets, TscClock, S>,
    keys: &[u64],
) -> u64 {
    let mut a = 0;
    for key in keys {
        a += black_box(l.try_acquire(key)) as u64;
    }
    a
}
#[cfg(feature = "keyed")]
#[inline(never)]
fn run_kgov(l: &governor::DefaultKeyedRateLimiter<u64>, keys: &[u64]) -> u64 {
    let mut a = 0;
    for key in keys {
        a += black_box(l.check_key(key).is_ok()) as u64;
    }
    a
}

/// The keyed probes: `keys` keys inserted, then `n` calls on keys drawn from them.
#[cfg(feature = "keyed")]
fn keyed_probe(what: &str, n: u64, keys: u64) {
    // xorshift: the same keys for both limiters, run after run.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let drawn: Vec<u64> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % keys
        })
        .collect();
    let t0 = std::time::Instant::now();
    let admitted = match what {
        "keyed" => {
            let quota = BucketQuota::per_second(100).unwrap().burst(10).unwrap();
            let limits = ringlimit::keyed::Keyed::<u64, ringlimit::keyed::Buckets>::new(quota)
                .max_keys(keys as usize);
            for key in 0..keys {
                limits.try_acquire(&key);
            }
            let t1 = std::time::Instant::now();
            let a = run_keyed(&limits, &drawn);
            eprintln!(
                "  calls: {:.1} ns each",
                t1.elapsed().as_nanos() as f64 / n as f64
            );
            a
        }
        "keyedfh" => {
            let quota = BucketQuota::per_second(100).unwrap().burst(10).unwrap();
            let clock = TscClock::new();
            let config = ringlimit::cell::BucketConfig::token(quota, &clock);
            let limits = ringlimit::keyed::Keyed::with_hasher(
                config,
                clock,
                foldhash::fast::RandomState::default(),
            )
            .max_keys(keys as usize);
            for key in 0..keys {
                limits.try_acquire(&key);
            }
            run_keyed(&limits, &drawn)
        }
        _ => {
            let quota = governor::Quota::per_second(NonZeroU32::new(100).unwrap())
                .allow_burst(NonZeroU32::new(10).unwrap());
            let limits = governor::RateLimiter::keyed(quota);
            for key in 0..keys {
                let _ = limits.check_key(&key);
            }
            let t1 = std::time::Instant::now();
            let a = run_kgov(&limits, &drawn);
            eprintln!(
                "  calls: {:.1} ns each",
                t1.elapsed().as_nanos() as f64 / n as f64
            );
            a
        }
    };
    eprintln!(
        "{what} keys={keys} calls={n} admitted={admitted} {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// A request of the policy probe.
#[cfg(feature = "keyed")]
struct Request {
    user: u64,
    ip: u32,
}

#[cfg(feature = "keyed")]
#[inline(never)]
fn run_policy(policy: &ringlimit::policy::Policy<Request>, n: u64) -> u64 {
    let mut a = 0;
    let mut i = 0u64;
    for _ in 0..n {
        i = i.wrapping_add(0x9e37_79b9);
        let request = Request {
            user: i % 1000,
            ip: (i % 997) as u32,
        };
        a += u64::from(policy.check(&request).is_ok_and(|d| d.is_admitted()));
    }
    a
}

/// The policy probe (`pol`): global token bucket, API sliding window, per-IP keyed fixed
/// window, per-user keyed sliding window (the policy bench's), `n` checks.
#[cfg(feature = "keyed")]
fn policy_probe(n: u64) {
    use ringlimit::cell::WindowConfig;
    use ringlimit::keyed::{FixedWindows, Keyed, SlidingWindows};
    use std::sync::Arc;
    let quota = WindowQuota::per(1_000_000, Duration::from_millis(1)).unwrap();
    let users = Arc::new(
        Keyed::<u64, SlidingWindows>::with_config(
            SlidingConfig::new(quota).unwrap(),
            TscClock::new(),
        )
        .max_keys(100_000),
    );
    let ips = Arc::new(
        Keyed::<u32, FixedWindows>::with_config(WindowConfig::new(quota).unwrap(), TscClock::new())
            .max_keys(100_000),
    );
    let policy = ringlimit::policy::Policy::builder()
        .shared(
            "global",
            Arc::new(TokenBucket::new(
                BucketQuota::per_second(1_000_000_000)
                    .and_then(|q| q.burst(1_000_000))
                    .unwrap(),
            )),
        )
        .shared("api", Arc::new(SlidingWindow::new(quota)))
        .per_key("ip", ips, |r: &Request| Some(r.ip))
        .per_key("user", users, |r: &Request| Some(r.user))
        .build();
    let t0 = std::time::Instant::now();
    let admitted = run_policy(&policy, n);
    eprintln!(
        "pol calls={n} admitted={admitted} {:.1} ns each",
        t0.elapsed().as_nanos() as f64 / n as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map(String::as_str).unwrap_or("tb");
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    #[cfg(feature = "keyed")]
    if what == "keyed" || what == "keyedfh" || what == "kgov" {
        let keys = args
            .get(5)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000);
        return keyed_probe(what, n, keys);
    }
    #[cfg(feature = "keyed")]
    if what == "pol" {
        return policy_probe(n);
    }
    let threads: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let deny = args.get(4).map(String::as_str) == Some("deny");
    let tb = if deny {
        TokenBucket::new(BucketQuota::new(Rate::per_hour(1).unwrap(), 1).unwrap())
    } else {
        TokenBucket::new(
            BucketQuota::new(Rate::every(Duration::from_nanos(1)).unwrap(), 1000).unwrap(),
        )
    };
    let quota = if deny {
        governor::Quota::per_hour(NonZeroU32::new(1).unwrap())
    } else {
        governor::Quota::with_period(Duration::from_nanos(1)).unwrap()
    }
    .allow_burst(NonZeroU32::new(if deny { 1 } else { 1000 }).unwrap());
    let gov = governor::RateLimiter::direct(quota);
    let sw = if deny {
        SlidingWindow::new(
            WindowQuota::per(1, Duration::from_secs(3600))
                .unwrap()
                .buckets(10)
                .unwrap(),
        )
    } else {
        SlidingWindow::new(
            WindowQuota::per(100_000, Duration::from_millis(1))
                .unwrap()
                .buckets(10)
                .unwrap(),
        )
    };
    let swc_quota = if deny {
        WindowQuota::per(1, Duration::from_secs(3600))
    } else {
        WindowQuota::per(100_000, Duration::from_millis(1))
    };
    let log = SlidingLog::new(swc_quota.clone().unwrap()).unwrap();
    let fw = FixedWindow::new(swc_quota.clone().unwrap());
    let aw = ApproxSlidingWindow::new(swc_quota.clone().unwrap()).unwrap();
    let (limit, window) = if deny {
        (1, Duration::from_secs(3600))
    } else {
        (100_000, Duration::from_millis(1))
    };
    let awpl = ParkingLotLocked::new(ApproxSlidingWindowSpec::new(limit, window).unwrap());
    let lm = if deny {
        LeakyBucket::meter(BucketQuota::new(Rate::per_hour(1).unwrap(), 1).unwrap())
    } else {
        LeakyBucket::meter(
            BucketQuota::new(Rate::every(Duration::from_nanos(1)).unwrap(), 1000).unwrap(),
        )
    };
    let swc_config = SlidingConfig::<10>::new(swc_quota.unwrap()).unwrap();
    let swc = SlidingWindowCell::<10, Compact>::new();
    let tsc = TscClock::new();
    if deny {
        swc.try_acquire(&swc_config, &tsc);
        tb.try_acquire();
        let _ = gov.check();
        sw.try_acquire();
        fw.try_acquire();
        log.try_acquire();
        aw.try_acquire();
        awpl.try_acquire();
        lm.try_acquire();
    }
    // Allow: one permit per ns, so a call (tens of ns apart) finds the limiter free; deny:
    // one per hour, spent.
    let wu = WarmUp::new(
        WarmUpQuota::new(
            Rate::every(Duration::from_nanos(if deny {
                3_600_000_000_000
            } else {
                1
            }))
            .unwrap(),
            Duration::from_nanos(if deny { 3_600_000_000_000 } else { 100 }),
        )
        .unwrap(),
    );
    if deny {
        wu.try_acquire();
    }
    let qc = quanta::Clock::new();
    let gc = governor::clock::QuantaClock::default();
    let word = std::sync::atomic::AtomicU64::new(0);
    let word128 = portable_atomic::AtomicU128::new(0);
    let t0 = std::time::Instant::now();
    // The same window in the 128-bit words (`sww`).
    let sww = SlidingWindow::builder(if deny {
        WindowQuota::per(1, Duration::from_secs(3600))
            .unwrap()
            .buckets(10)
            .unwrap()
    } else {
        WindowQuota::per(100_000, Duration::from_millis(1))
            .unwrap()
            .buckets(10)
            .unwrap()
    })
    .wide()
    .build();
    let admitted: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| match what {
                    "tb" => run_tb(&tb, n),
                    "wu" => run_wu(&wu, n),
                    "lm" => run_lm(&lm, n),
                    "aw" => run_aw(&aw, n),
                    "awpl" => run_awpl(&awpl, n),
                    "gov" => run_gov(&gov, n),
                    "sw" => run_sw(&sw, n),
                    "sww" => run_sw(&sww, n),
                    "log" => run_log(&log, n),
                    "fw" => run_fw(&fw, n),
                    "swc" => run_swc(&swc, &swc_config, &tsc, n),
                    "tsc" => run_tsc(&tsc, n),
                    "quanta" => run_quanta(&qc, n),
                    "raw" => run_raw(&qc, n),
                    "lock" => run_lock(&word, n),
                    "add" => run_add(&word, n),
                    "lock128" => run_lock128(&word128, n),
                    "load128" => run_load128(&word128, n),
                    "govclock" => run_govclock(&gc, n),
                    _ => panic!("what?"),
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let el = t0.elapsed();
    eprintln!(
        "{what} threads={threads} calls={} admitted={admitted} {:.1} Mops/s",
        n * threads as u64,
        (n * threads as u64) as f64 / el.as_secs_f64() / 1e6
    );
}
