//! A four-dimension policy (user, IP, API, global) per check, against the same four limiters
//! checked one after the other with no refunds, and against the same policy over
//! `parking_lot` mutexes (each dimension's spec, keyed ones in a `HashMap`, behind its own
//! mutex; grants refunded on a refusal as the policy does): `cargo bench --bench policy`
//! (`-- --test` for a smoke run). Every check is admitted (large quotas), so all do four
//! admissions. `policy/two_threads` runs each on two threads (time per check of the pair:
//! Mops/s = 1000 / ns).
//!
//! The metrics' cost: `policy/allow` with `--features metrics` against without (no recorder
//! installed: what a library user who installs none pays), and with the feature the
//! `policy/metrics` group: one dimension's recording by handles cached at build (what
//! `Policy` does) against the `counter!`/`gauge!` macros per call, with no recorder and with
//! a Prometheus recorder, and the four-dimension check with a Prometheus recorder.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ringlimit::clock::Clock;
use ringlimit::outcome::Admission;
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec, Spec, TokenBucketSpec};
use ringlimit::Rate;

use criterion::{criterion_group, criterion_main, Criterion};
use ringlimit::cell::{SlidingConfig, WindowConfig};
use ringlimit::clock::TscClock;
use ringlimit::keyed::{FixedWindows, Keyed, SlidingWindows};
use ringlimit::policy::Policy;
use ringlimit::{BucketQuota, RateLimiter, SlidingWindow, TokenBucket, WindowQuota};

struct Request {
    user: u64,
    ip: u32,
}

/// The same four dimensions over `parking_lot` mutexes: each dimension's sequential spec
/// (per key in a `HashMap`) behind its own lock, checked in the same order, earlier grants
/// refunded when one refuses.
struct MutexPolicy {
    clock: TscClock,
    global: Mutex<TokenBucketSpec>,
    api: Mutex<SlidingWindowSpec>,
    ips: Mutex<HashMap<u32, FixedWindowSpec>>,
    users: Mutex<HashMap<u64, SlidingWindowSpec>>,
}

impl MutexPolicy {
    fn new() -> Self {
        Self {
            clock: TscClock::new(),
            global: Mutex::new(
                TokenBucketSpec::new(Rate::per_second(1_000_000_000).unwrap(), 1_000_000).unwrap(),
            ),
            api: Mutex::new(window_spec()),
            ips: Mutex::new(HashMap::new()),
            users: Mutex::new(HashMap::new()),
        }
    }

    fn check(&self, request: &Request) -> bool {
        let now = self.clock.now_nanos();
        let Some(global) = grant(self.global.lock().try_grant(now, 1)) else {
            return false;
        };
        let Some(api) = grant(self.api.lock().try_grant(now, 1)) else {
            self.global.lock().refund(now, global.ticket());
            return false;
        };
        let ip = grant(
            self.ips
                .lock()
                .entry(request.ip)
                .or_insert_with(|| {
                    FixedWindowSpec::new(1_000_000, Duration::from_millis(1)).unwrap()
                })
                .try_grant(now, 1),
        );
        let Some(ip) = ip else {
            self.api.lock().refund(now, api.ticket());
            self.global.lock().refund(now, global.ticket());
            return false;
        };
        let user = grant(
            self.users
                .lock()
                .entry(request.user)
                .or_insert_with(window_spec)
                .try_grant(now, 1),
        );
        if user.is_none() {
            if let Some(spec) = self.ips.lock().get_mut(&request.ip) {
                spec.refund(now, ip.ticket());
            }
            self.api.lock().refund(now, api.ticket());
            self.global.lock().refund(now, global.ticket());
            return false;
        }
        true
    }
}

fn window_spec() -> SlidingWindowSpec {
    SlidingWindowSpec::new(1_000_000, Duration::from_millis(1), 10).unwrap()
}

fn grant(
    admission: Result<Admission, ringlimit::ExceedsLimit>,
) -> Option<ringlimit::outcome::Grant> {
    admission.ok().and_then(Admission::into_grant)
}

/// Criterion's `iters` checks split over two threads; the wall time of the pair.
fn two_threads(iters: u64, check: impl Fn(u64) -> bool + Sync) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let check = &check;
            s.spawn(move || {
                let mut i = t.wrapping_mul(0x5851_f42d);
                for _ in 0..iters / 2 {
                    i = i.wrapping_add(0x9e37_79b9);
                    black_box(check(i));
                }
            });
        }
    });
    start.elapsed()
}

fn policy(c: &mut Criterion) {
    let quota = WindowQuota::per(1_000_000, Duration::from_millis(1)).unwrap();
    // Bounded, as a service bounds them: the cells live in the keyed table.
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
    let api = Arc::new(SlidingWindow::new(quota));
    let global = Arc::new(TokenBucket::new(
        BucketQuota::per_second(1_000_000_000)
            .and_then(|q| q.burst(1_000_000))
            .unwrap(),
    ));
    let policy = Policy::builder()
        .shared("global", global.clone())
        .shared("api", api.clone())
        .per_key("ip", ips.clone(), |r: &Request| Some(r.ip))
        .per_key("user", users.clone(), |r: &Request| Some(r.user))
        .build();
    let one = Policy::<()>::builder()
        .shared("global", global.clone())
        .build();
    let mut group = c.benchmark_group("policy/allow");
    let mut i = 0u64;
    group.bench_function("one_dimension", |b| {
        b.iter(|| black_box(one.check(&()).unwrap().is_admitted()))
    });
    group.bench_function("four_dimensions", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            let request = Request {
                user: i % 1000,
                ip: (i % 997) as u32,
            };
            black_box(policy.check(&request).unwrap().is_admitted())
        })
    });
    group.bench_function("four_plain_checks", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            let (user, ip) = (i % 1000, (i % 997) as u32);
            black_box(
                global.try_acquire()
                    && api.try_acquire()
                    && ips.try_acquire(&ip)
                    && users.try_acquire(&user),
            )
        })
    });
    let mutexes = MutexPolicy::new();
    group.bench_function("four_dimensions_parking_lot", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            let request = Request {
                user: i % 1000,
                ip: (i % 997) as u32,
            };
            black_box(mutexes.check(&request))
        })
    });
    group.bench_function("four_grants_kept", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            let (user, ip) = (i % 1000, (i % 997) as u32);
            black_box((
                global.try_grant(1).unwrap(),
                api.try_grant(1).unwrap(),
                ips.try_grant(&ip, 1).unwrap(),
                users.try_grant(&user, 1).unwrap(),
            ))
        })
    });
    group.finish();
    let mut group = c.benchmark_group("policy/two_threads");
    let request = |i: u64| Request {
        user: i % 1000,
        ip: (i % 997) as u32,
    };
    group.bench_function("four_dimensions", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, |i| policy.check(&request(i)).unwrap().is_admitted())
        })
    });
    group.bench_function("four_plain_checks", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, |i| {
                let (user, ip) = (i % 1000, (i % 997) as u32);
                global.try_acquire()
                    && api.try_acquire()
                    && ips.try_acquire(&ip)
                    && users.try_acquire(&user)
            })
        })
    });
    group.bench_function("four_dimensions_parking_lot", |b| {
        b.iter_custom(|iters| two_threads(iters, |i| mutexes.check(&request(i))))
    });
    group.finish();
    let mut group = c.benchmark_group("policy/parts");
    group.bench_function("global_try_acquire", |b| {
        b.iter(|| black_box(global.try_acquire()))
    });
    group.bench_function("global_try_grant", |b| {
        b.iter(|| black_box(global.try_grant(1).unwrap()))
    });
    group.bench_function("api_try_acquire", |b| {
        b.iter(|| black_box(api.try_acquire()))
    });
    group.bench_function("api_try_grant", |b| {
        b.iter(|| black_box(api.try_grant(1).unwrap()))
    });
    group.bench_function("ips_try_acquire", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            black_box(ips.try_acquire(&((i % 997) as u32)))
        })
    });
    group.bench_function("ips_try_grant", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            black_box(ips.try_grant(&((i % 997) as u32), 1).unwrap())
        })
    });
    group.bench_function("users_try_acquire", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            black_box(users.try_acquire(&(i % 1000)))
        })
    });
    group.bench_function("users_try_grant", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            black_box(users.try_grant(&(i % 1000), 1).unwrap())
        })
    });
    group.finish();
}

/// One dimension's three series per check, recorded as `Policy` does (handles registered
/// once) and by the macros per call (a key built, hashed and looked up each time).
#[cfg(feature = "metrics")]
fn recording(c: &mut Criterion) {
    use metrics::{counter, gauge, Counter, Gauge};
    use ringlimit::policy::metrics::{REQUESTS_TOTAL, UTILIZATION, WINDOW_COUNT};

    let rule: Arc<str> = Arc::from("user");
    let handles = || -> (Counter, Gauge, Gauge) {
        (
            counter!(REQUESTS_TOTAL, "rule" => rule.clone(), "result" => "allowed"),
            gauge!(WINDOW_COUNT, "rule" => rule.clone()),
            gauge!(UTILIZATION, "rule" => rule.clone()),
        )
    };
    let mut count = 0u64;
    let mut cached =
        |b: &mut criterion::Bencher, (allowed, window, utilization): &(Counter, Gauge, Gauge)| {
            b.iter(|| {
                count = count.wrapping_add(1) & 1023;
                allowed.increment(1);
                window.set(black_box(count) as f64);
                utilization.set(black_box(count) as f64 / 1024.0);
            })
        };
    let mut group = c.benchmark_group("policy/metrics");
    let none = handles();
    group.bench_function("cached_handles_no_recorder", |b| cached(b, &none));
    let per_call = |b: &mut criterion::Bencher| {
        let mut count = 0u64;
        b.iter(|| {
            count = count.wrapping_add(1) & 1023;
            counter!(REQUESTS_TOTAL, "rule" => rule.clone(), "result" => "allowed").increment(1);
            gauge!(WINDOW_COUNT, "rule" => rule.clone()).set(black_box(count) as f64);
            gauge!(UTILIZATION, "rule" => rule.clone()).set(black_box(count) as f64 / 1024.0);
        })
    };
    group.bench_function("macros_per_call_no_recorder", per_call);
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let bound = metrics::with_local_recorder(&prometheus, handles);
    group.bench_function("cached_handles_prometheus", |b| cached(b, &bound));
    group.bench_function("macros_per_call_prometheus", |b| {
        metrics::with_local_recorder(&prometheus, || per_call(b))
    });
    group.finish();
}

#[cfg(feature = "metrics")]
fn recorded_policy(c: &mut Criterion) {
    let quota = WindowQuota::per(1_000_000, Duration::from_millis(1)).unwrap();
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let policy = metrics::with_local_recorder(&prometheus, || {
        Policy::builder()
            .shared(
                "global",
                Arc::new(TokenBucket::new(
                    BucketQuota::per_second(1_000_000_000)
                        .and_then(|q| q.burst(1_000_000))
                        .unwrap(),
                )),
            )
            .shared("api", Arc::new(SlidingWindow::new(quota)))
            .per_key(
                "ip",
                Arc::new(Keyed::<u32, FixedWindows>::with_config(
                    WindowConfig::new(quota).unwrap(),
                    TscClock::new(),
                )),
                |r: &Request| Some(r.ip),
            )
            .per_key(
                "user",
                Arc::new(Keyed::<u64, SlidingWindows>::with_config(
                    SlidingConfig::new(quota).unwrap(),
                    TscClock::new(),
                )),
                |r: &Request| Some(r.user),
            )
            .build()
    });
    let mut i = 0u64;
    c.bench_function("policy/metrics/four_dimensions_prometheus", |b| {
        b.iter(|| {
            i = i.wrapping_add(0x9e37_79b9);
            let request = Request {
                user: i % 1000,
                ip: (i % 997) as u32,
            };
            black_box(policy.check(&request).unwrap().is_admitted())
        })
    });
}

#[cfg(not(feature = "metrics"))]
criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = policy
}
#[cfg(feature = "metrics")]
criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = policy, recording, recorded_policy
}
criterion_main!(benches);
