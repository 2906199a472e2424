//! Single-thread hot path of each limiter next to its mutex versions, plus the clocks.
//!
//! Run: `cargo bench --bench hot_path` (CI runs `cargo bench -- --test`, one pass each).
//!
//! * `allow`: the limit is never reached (100 000 per ms), so every call is admitted; the
//!   windows roll over every millisecond, which the figure includes.
//! * `deny`: the limit (1 per hour) is exhausted before measuring; every call is refused.
//!
//! The bucket family runs the same two paths: `allow` at one permit per nanosecond (faster
//! than one thread can ask), `deny` at one per hour with the burst used up. The token
//! bucket's group also holds `governor`'s direct limiter (`check()`), the reference crate,
//! configured identically.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use ringlimit::baseline::{
    ParkingLotConcurrencyLimiter, ParkingLotLocked, StdLocked, StdLockedConcurrencyLimiter,
};
use ringlimit::cell::Compact;
use ringlimit::cell::{
    BucketCell, BucketConfig, ConcurrencyCell, ConcurrencyConfig, FixedWindowCell, LogConfig,
    SlidingConfig, SlidingLogCell, SlidingWindowCell, WarmUpCell, WarmUpConfig, WindowConfig,
};
use ringlimit::clock::{Clock, RecentClock, StdClock, TscClock};
use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, LeakyBucketSpec, SlidingLogSpec, SlidingWindowSpec,
    Spec, TokenBucketSpec, WarmUpSpec,
};
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota,
    FixedWindow, LeakyBucket, Rate, RateLimiter, ShaperQuota, SlidingLog, SlidingWindow,
    TokenBucket, WarmUp, WarmUpQuota, WindowQuota,
};

/// Far more than a single thread can take in one window.
const ALLOW_LIMIT: u64 = 100_000;
const ALLOW_WINDOW: Duration = Duration::from_millis(1);
const DENY_WINDOW: Duration = Duration::from_secs(3600);

fn bench_limiter(group: &mut Group<'_>, name: &str, limiter: impl RateLimiter) {
    group.bench_function(name, |b| b.iter(|| black_box(limiter.try_acquire())));
}

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// One group: the lock-free limiter and its spec under both mutexes, each pre-filled with
/// `prefill` admissions.
fn compare<S: Spec + Clone + 'static>(
    c: &mut Criterion,
    name: String,
    lock_free: impl RateLimiter,
    spec: S,
    prefill: u64,
) {
    let mut group = c.benchmark_group(name);
    let parking = ParkingLotLocked::new(spec.clone());
    let std = StdLocked::new(spec);
    for _ in 0..prefill {
        lock_free.try_acquire();
        parking.try_acquire();
        std.try_acquire();
    }
    bench_limiter(&mut group, "lock_free", lock_free);
    bench_limiter(&mut group, "parking_lot", parking);
    bench_limiter(&mut group, "std_mutex", std);
    group.finish();
}

fn windows(c: &mut Criterion) {
    for (path, limit, window, prefill) in [
        ("allow", ALLOW_LIMIT, ALLOW_WINDOW, 0),
        ("deny", 1, DENY_WINDOW, 1),
    ] {
        compare(
            c,
            format!("sliding_window/{path}"),
            SlidingWindow::new(
                WindowQuota::per(limit, window)
                    .unwrap()
                    .buckets(10)
                    .unwrap(),
            ),
            SlidingWindowSpec::new(limit, window, 10).unwrap(),
            prefill,
        );
        compare(
            c,
            format!("fixed_window/{path}"),
            FixedWindow::new(WindowQuota::per(limit, window).unwrap()),
            FixedWindowSpec::new(limit, window).unwrap(),
            prefill,
        );
        compare(
            c,
            format!("sliding_log/{path}"),
            SlidingLog::new(WindowQuota::per(limit, window).unwrap()).unwrap(),
            SlidingLogSpec::new(limit, window).unwrap(),
            prefill,
        );
        compare(
            c,
            format!("approx_window/{path}"),
            ApproxSlidingWindow::new(WindowQuota::per(limit, window).unwrap()).unwrap(),
            ApproxSlidingWindowSpec::new(limit, window).unwrap(),
            prefill,
        );
    }
}

/// The bucket family: rate, burst (capacity), and the permits taken before measuring.
fn buckets(c: &mut Criterion) {
    let fast = Rate::per_second(1_000_000_000).unwrap();
    let slow = Rate::per_hour(1).unwrap();
    for (path, rate, burst, prefill) in [("allow", fast, 1000, 0), ("deny", slow, 1, 1)] {
        let mut group = c.benchmark_group(format!("token_bucket/{path}"));
        let lock_free = TokenBucket::new(BucketQuota::new(rate, burst).unwrap());
        let parking = ParkingLotLocked::new(TokenBucketSpec::new(rate, burst).unwrap());
        let std = StdLocked::new(TokenBucketSpec::new(rate, burst).unwrap());
        let governor = governor::RateLimiter::direct(governor_quota(path, burst));
        for _ in 0..prefill {
            lock_free.try_acquire();
            parking.try_acquire();
            std.try_acquire();
            let _ = governor.check();
        }
        bench_limiter(&mut group, "lock_free", lock_free);
        bench_limiter(&mut group, "parking_lot", parking);
        bench_limiter(&mut group, "std_mutex", std);
        group.bench_function("governor", |b| {
            b.iter(|| black_box(governor.check().is_ok()))
        });
        group.finish();

        compare(
            c,
            format!("leaky_meter/{path}"),
            LeakyBucket::meter(BucketQuota::new(rate, burst).unwrap()),
            LeakyBucketSpec::meter(burst, rate).unwrap(),
            prefill,
        );
        let max_wait = Duration::ZERO;
        compare(
            c,
            format!("leaky_shaper/{path}"),
            LeakyBucket::shaper(ShaperQuota::new(rate, max_wait).unwrap()),
            LeakyBucketSpec::shaper(rate, max_wait).unwrap(),
            prefill,
        );
        let warm_up = Duration::from_secs(if path == "allow" { 1 } else { 3600 });
        compare(
            c,
            format!("warm_up/{path}"),
            WarmUp::new(WarmUpQuota::new(rate, warm_up).unwrap()),
            WarmUpSpec::new(rate, warm_up, 3.0).unwrap(),
            prefill,
        );
    }
}

/// governor's quota for the same path: 10^9 per second is above its `u32` per-second
/// constructor, so the allow path uses one cell per nanosecond directly.
fn governor_quota(path: &str, burst: u64) -> governor::Quota {
    let burst = std::num::NonZeroU32::new(burst as u32).unwrap();
    let quota = if path == "allow" {
        governor::Quota::with_period(Duration::from_nanos(1)).unwrap()
    } else {
        governor::Quota::per_hour(std::num::NonZeroU32::new(1).unwrap())
    };
    quota.allow_burst(burst)
}

/// The concurrency limiter: `allow` takes a permit and drops it (acquire + release, the
/// whole cost of one guarded call); `deny` is refused because the one permit is held.
fn concurrency(c: &mut Criterion) {
    fn pair<L: ConcurrencyLimit>(group: &mut Group<'_>, name: &str, limiter: L, held: bool) {
        let _held = held.then(|| limiter.try_acquire());
        group.bench_function(name, |b| {
            b.iter(|| black_box(limiter.try_acquire().is_some()))
        });
    }
    for (path, limit, held) in [("allow", 1000, false), ("deny", 1, true)] {
        let mut group = c.benchmark_group(format!("concurrency/{path}"));
        pair(
            &mut group,
            "lock_free",
            ConcurrencyLimiter::new(ConcurrencyQuota::new(limit).unwrap()),
            held,
        );
        pair(
            &mut group,
            "parking_lot",
            ParkingLotConcurrencyLimiter::new(limit).unwrap(),
            held,
        );
        pair(
            &mut group,
            "std_mutex",
            StdLockedConcurrencyLimiter::new(limit).unwrap(),
            held,
        );
        group.finish();
    }
}

/// The clockless cells (`ringlimit::cell`, compact: 16 or 8 bytes, 96 for 10 buckets, 24 and a
/// ring for the log) on the same paths as the
/// limiters above, each beside the limiter of its algorithm: what a keyed limiter pays per
/// key for a 128-bit word (`cmpxchg16b`) where the limiters keep 64-bit engines.
fn cells(c: &mut Criterion) {
    let fast = Rate::per_second(1_000_000_000).unwrap();
    let slow = Rate::per_hour(1).unwrap();
    let clock = TscClock::new();
    for (path, rate, burst, window, prefill) in [
        ("allow", fast, 1000, ALLOW_WINDOW, 0),
        ("deny", slow, 1, DENY_WINDOW, 1),
    ] {
        let mut group = c.benchmark_group(format!("cells/{path}"));
        let config = BucketConfig::token(BucketQuota::new(rate, burst).unwrap(), &clock);
        let cell = BucketCell::<Compact>::new(&config);
        let bucket = TokenBucket::builder(BucketQuota::new(rate, burst).unwrap())
            .compact()
            .build();
        let limit = if path == "allow" { ALLOW_LIMIT } else { 1 };
        let windows = WindowConfig::new(WindowQuota::per(limit, window).unwrap()).unwrap();
        let fixed_cell = FixedWindowCell::<Compact>::new();
        let fixed = FixedWindow::builder(WindowQuota::per(limit, window).unwrap())
            .compact()
            .build();
        let sliding_config =
            SlidingConfig::<10>::new(WindowQuota::per(limit, window).unwrap()).unwrap();
        let sliding_cell = SlidingWindowCell::<10, Compact>::new();
        let sliding = SlidingWindow::builder(WindowQuota::per(limit, window).unwrap())
            .compact()
            .build();
        let log_config = LogConfig::new(WindowQuota::per(limit, window).unwrap()).unwrap();
        let log_cell = SlidingLogCell::<Compact>::new(&log_config);
        for _ in 0..prefill {
            log_cell.try_acquire(&log_config, &clock);
            sliding_cell.try_acquire(&sliding_config, &clock);
            sliding.try_acquire();
            cell.try_acquire(&config, &clock);
            bucket.try_acquire();
            fixed_cell.try_acquire(&windows, &clock);
            fixed.try_acquire();
        }
        group.bench_function("token_bucket_cell", |b| {
            b.iter(|| black_box(cell.try_acquire(&config, &clock)))
        });
        bench_limiter(&mut group, "token_bucket", bucket);
        group.bench_function("fixed_window_cell", |b| {
            b.iter(|| black_box(fixed_cell.try_acquire(&windows, &clock)))
        });
        bench_limiter(&mut group, "fixed_window", fixed);
        group.bench_function("sliding_window_cell", |b| {
            b.iter(|| black_box(sliding_cell.try_acquire(&sliding_config, &clock)))
        });
        bench_limiter(&mut group, "sliding_window", sliding);
        group.bench_function("sliding_log_cell", |b| {
            b.iter(|| black_box(log_cell.try_acquire(&log_config, &clock)))
        });
        let warm_quota = WarmUpQuota::new(rate, Duration::from_secs(1)).unwrap();
        let warm_config = WarmUpConfig::new(warm_quota, &clock);
        let warm_cell = WarmUpCell::<Compact>::new(&warm_config);
        let warm = WarmUp::new(warm_quota);
        for _ in 0..prefill {
            warm_cell.try_acquire(&warm_config, &clock);
            warm.try_acquire();
        }
        group.bench_function("warm_up_cell", |b| {
            b.iter(|| black_box(warm_cell.try_acquire(&warm_config, &clock)))
        });
        bench_limiter(&mut group, "warm_up", warm);
        let in_flight = ConcurrencyConfig::new(ConcurrencyQuota::new(1000).unwrap());
        let concurrency = ConcurrencyCell::<Compact>::with_layout(&in_flight);
        if path == "allow" {
            group.bench_function("concurrency_cell_acquire_release", |b| {
                b.iter(|| {
                    let taken = concurrency.try_acquire(&in_flight, 1).unwrap();
                    concurrency.release(&in_flight, u64::from(taken));
                    black_box(taken)
                })
            });
        }
        group.finish();
    }
}

fn clocks(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock");
    let tsc = TscClock::new();
    group.bench_function("tsc", |b| b.iter(|| black_box(tsc.now_nanos())));
    let recent = RecentClock::new().expect("quanta upkeep thread");
    group.bench_function("recent", |b| b.iter(|| black_box(recent.now_nanos())));
    let std = StdClock::new();
    group.bench_function("std_instant", |b| b.iter(|| black_box(std.now_nanos())));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = windows, buckets, concurrency, cells, clocks
}
criterion_main!(benches);
