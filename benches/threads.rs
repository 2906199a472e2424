//! Multi-thread throughput of each limiter, the lock-free one next to its spec under
//! `parking_lot::Mutex` and `std::sync::Mutex` (and `governor` for the token bucket) in one
//! group, so criterion's report plots them together.
//!
//! Run: `cargo bench --bench threads` (a few minutes; CI runs `cargo bench -- --test`, one
//! pass each). Single-thread paths and the clocks are in `hot_path.rs`; the comparison
//! tool (`cargo run --release --example compare`) covers more scenarios and audits the
//! admissions.
//!
//! * Groups `threads/<limiter>/<path>`, benchmark ids `<implementation>/<threads>` for 1,
//!   2 and 4 threads (the sliding and fixed windows also have `sharded/<threads>`, their
//!   `.sharded()` form with the default shards and batch). On the 2-core development machine 4 threads are oversubscribed: the
//!   figure then includes the cost of threads descheduled while holding a lock or between
//!   a load and its CAS.
//! * `allow`: the limit is never reached (windows: the largest limit per 1 ms; buckets: one
//!   permit per ns, burst 1000; the shaper and warm-up limiter: one permit per 4 ns, where
//!   several threads still see some refusals, a reading older than another thread's last
//!   admission plus T; concurrency: C = 1000, acquire and drop).
//! * `deny`: exhausted before measuring (one permit per hour, taken; concurrency: the one
//!   permit held); every call is refused.
//!
//! Method: `iter_custom`. For each measurement the T threads are spawned first (not timed)
//! and wait on a [`Barrier`]; the time runs from the barrier's release to the last join,
//! and each thread makes `iters` calls. One criterion *iteration* is therefore one call on
//! every thread, T calls in all, so the group's throughput is `Throughput::Elements(T)`:
//! criterion's elements/s is then the total calls per second over all threads, and its
//! time per iteration is the wall time of one round of T concurrent calls.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use ringlimit::baseline::{
    ParkingLotConcurrencyLimiter, ParkingLotLocked, StdLocked, StdLockedConcurrencyLimiter,
};
use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, LeakyBucketSpec, SlidingLogSpec, SlidingWindowSpec,
    Spec, TokenBucketSpec, WarmUpSpec,
};
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota,
    FixedWindow, LeakyBucket, Rate, RateLimiter, ShaperQuota, SlidingLog, SlidingWindow,
    TokenBucket, WarmUp, WarmUpQuota, WindowQuota,
};

/// Thread counts of every group (4 is oversubscribed on 2 cores).
const THREADS: [usize; 3] = [1, 2, 4];

const ALLOW_WINDOW: Duration = Duration::from_millis(1);
const DENY_WINDOW: Duration = Duration::from_secs(3600);

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// `threads` threads make `iters` calls each on `limiter`; the time from their release to
/// the last join.
fn contend<L: Sync>(
    limiter: &L,
    threads: usize,
    iters: u64,
    call: &(impl Fn(&L) + Sync),
) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    for _ in 0..iters {
                        call(limiter);
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for worker in workers {
            worker.join().expect("a benchmark thread panicked");
        }
        start.elapsed()
    })
}

/// `id/T` for every thread count, each iteration one `call` per thread.
fn bench<L: Sync>(group: &mut Group<'_>, id: &str, limiter: &L, call: impl Fn(&L) + Sync) {
    for threads in THREADS {
        // One iteration is one call on each of the T threads (see the module docs).
        group.throughput(Throughput::Elements(threads as u64));
        group.bench_with_input(BenchmarkId::new(id, threads), &threads, |b, &threads| {
            b.iter_custom(|iters| contend(limiter, threads, iters, &call))
        });
    }
}

fn try_acquire(limiter: &impl RateLimiter) {
    black_box(limiter.try_acquire());
}

/// One group: the lock-free limiter and its spec under both mutexes, each pre-filled with
/// `prefill` admissions (the extra entries, governor, run after them).
fn compare<S: Spec + Clone + Send + 'static>(
    c: &mut Criterion,
    name: &str,
    lock_free: impl RateLimiter + Sync,
    spec: S,
    prefill: u64,
    extra: impl FnOnce(&mut Group<'_>),
) {
    let mut group = c.benchmark_group(format!("threads/{name}"));
    let parking = ParkingLotLocked::new(spec.clone());
    let std = StdLocked::new(spec);
    for _ in 0..prefill {
        lock_free.try_acquire();
        parking.try_acquire();
        std.try_acquire();
    }
    bench(&mut group, "lock_free", &lock_free, try_acquire);
    bench(&mut group, "parking_lot", &parking, try_acquire);
    bench(&mut group, "std_mutex", &std, try_acquire);
    extra(&mut group);
    group.finish();
}

/// The windows' sharded form, `sharded/T` in their groups, pre-filled the same way.
fn sharded_bench(group: &mut Group<'_>, sharded: &(impl RateLimiter + Sync), prefill: u64) {
    for _ in 0..prefill {
        sharded.try_acquire();
    }
    bench(group, "sharded", sharded, try_acquire);
}

fn windows(c: &mut Criterion) {
    for (path, limit, window, prefill) in [
        // 2^20 − 1: the largest limit of the 64-bit window words.
        ("allow", (1 << 20) - 1, ALLOW_WINDOW, 0),
        ("deny", 1, DENY_WINDOW, 1),
    ] {
        let quota = WindowQuota::per(limit, window)
            .unwrap()
            .buckets(10)
            .unwrap();
        let sliding = SlidingWindow::builder(quota);
        let sharded = sliding.clone().sharded().build();
        compare(
            c,
            &format!("sliding_window/{path}"),
            sliding.build(),
            SlidingWindowSpec::new(limit, window, 10).unwrap(),
            prefill,
            |group| sharded_bench(group, &sharded, prefill),
        );
        let sharded = FixedWindow::builder(WindowQuota::per(limit, window).unwrap())
            .sharded()
            .build();
        compare(
            c,
            &format!("fixed_window/{path}"),
            FixedWindow::new(WindowQuota::per(limit, window).unwrap()),
            FixedWindowSpec::new(limit, window).unwrap(),
            prefill,
            |group| sharded_bench(group, &sharded, prefill),
        );
        compare(
            c,
            &format!("sliding_log/{path}"),
            SlidingLog::new(WindowQuota::per(limit, window).unwrap()).unwrap(),
            SlidingLogSpec::new(limit, window).unwrap(),
            prefill,
            |_| {},
        );
        compare(
            c,
            &format!("approx_window/{path}"),
            ApproxSlidingWindow::new(WindowQuota::per(limit, window).unwrap()).unwrap(),
            ApproxSlidingWindowSpec::new(limit, window).unwrap(),
            prefill,
            |_| {},
        );
    }
}

/// The bucket family: `(path, rate, burst, prefill)`, and the burst-less limiters' rate.
fn buckets(c: &mut Criterion) {
    let per_ns = Rate::every(Duration::from_nanos(1)).unwrap();
    let per_4ns = Rate::every(Duration::from_nanos(4)).unwrap();
    let hourly = Rate::per_hour(1).unwrap();
    for (path, rate, paced, burst, prefill) in [
        ("allow", per_ns, per_4ns, 1000, 0),
        ("deny", hourly, hourly, 1, 1),
    ] {
        // governor's direct limiter with the same rate and burst, pre-filled the same way.
        let period = if path == "allow" {
            Duration::from_nanos(1)
        } else {
            DENY_WINDOW
        };
        let quota = governor::Quota::with_period(period)
            .unwrap()
            .allow_burst(std::num::NonZeroU32::new(burst as u32).unwrap());
        let governor = governor::RateLimiter::direct(quota);
        for _ in 0..prefill {
            let _ = governor.check();
        }
        compare(
            c,
            &format!("token_bucket/{path}"),
            TokenBucket::new(BucketQuota::new(rate, burst).unwrap()),
            TokenBucketSpec::new(rate, burst).unwrap(),
            prefill,
            |group| {
                bench(group, "governor", &governor, |g| {
                    black_box(g.check().is_ok());
                })
            },
        );
        compare(
            c,
            &format!("leaky_meter/{path}"),
            LeakyBucket::meter(BucketQuota::new(rate, burst).unwrap()),
            LeakyBucketSpec::meter(burst, rate).unwrap(),
            prefill,
            |_| {},
        );
        compare(
            c,
            &format!("leaky_shaper/{path}"),
            LeakyBucket::shaper(ShaperQuota::new(paced, Duration::ZERO).unwrap()),
            LeakyBucketSpec::shaper(paced, Duration::ZERO).unwrap(),
            prefill,
            |_| {},
        );
        let warm_up = Duration::from_millis(1);
        compare(
            c,
            &format!("warm_up/{path}"),
            WarmUp::new(WarmUpQuota::new(paced, warm_up).unwrap()),
            WarmUpSpec::new(paced, warm_up, WarmUp::DEFAULT_COLD_FACTOR).unwrap(),
            prefill,
            |_| {},
        );
    }
}

/// The concurrency limiter: `allow` takes a permit and drops it (acquire + release);
/// `deny` is refused because the one permit is held.
fn concurrency(c: &mut Criterion) {
    fn pair<L: ConcurrencyLimit + Sync>(group: &mut Group<'_>, id: &str, limiter: L, held: bool) {
        let _held = held.then(|| limiter.try_acquire());
        bench(group, id, &limiter, |l| {
            black_box(l.try_acquire().is_some());
        });
    }
    for (path, limit, held) in [("allow", 1000, false), ("deny", 1, true)] {
        let mut group = c.benchmark_group(format!("threads/concurrency/{path}"));
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

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = windows, buckets, concurrency
}
criterion_main!(benches);
