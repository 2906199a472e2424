//! Single-thread hot path of each limiter next to its mutex versions, plus the clocks.
//!
//! Run: `cargo bench --bench hot_path` (CI runs `cargo bench -- --test`, one pass each).
//!
//! * `allow`: the limit is never reached (100 000 per ms), so every call is admitted; the
//!   windows roll over every millisecond, which the figure includes.
//! * `deny`: the limit (1 per hour) is exhausted before measuring; every call is refused.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use ringlimit::clock::{Clock, RecentClock, StdClock, TscClock};
use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, SlidingLogSpec, SlidingWindowSpec, Spec,
};
use ringlimit::{
    ApproxSlidingWindow, FixedWindow, ParkingLotLocked, RateLimiter, SlidingLog, SlidingWindow,
    StdLocked,
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
            SlidingWindow::new(limit, window, 10).unwrap(),
            SlidingWindowSpec::new(limit, window, 10).unwrap(),
            prefill,
        );
        compare(
            c,
            format!("fixed_window/{path}"),
            FixedWindow::new(limit, window).unwrap(),
            FixedWindowSpec::new(limit, window).unwrap(),
            prefill,
        );
        compare(
            c,
            format!("sliding_log/{path}"),
            SlidingLog::new(limit, window).unwrap(),
            SlidingLogSpec::new(limit, window).unwrap(),
            prefill,
        );
        compare(
            c,
            format!("approx_window/{path}"),
            ApproxSlidingWindow::new(limit, window).unwrap(),
            ApproxSlidingWindowSpec::new(limit, window).unwrap(),
            prefill,
        );
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
    targets = windows, clocks
}
criterion_main!(benches);
