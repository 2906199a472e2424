//! A four-dimension policy (user, IP, API, global) per check, against the same four limiters
//! checked one after the other with no refunds: `cargo bench --bench policy`
//! (`-- --test` for a smoke run). Every check is admitted (large quotas), so both do four
//! admissions; the policy adds its grants' bookkeeping.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ringlimit::cell::SlidingConfig;
use ringlimit::clock::TscClock;
use ringlimit::keyed::{FixedWindows, Keyed, SlidingWindows};
use ringlimit::policy::Policy;
use ringlimit::{BucketQuota, RateLimiter, SlidingWindow, TokenBucket, WindowQuota};

struct Request {
    user: u64,
    ip: u32,
}

fn policy(c: &mut Criterion) {
    let quota = WindowQuota::per(1_000_000, Duration::from_millis(1)).unwrap();
    let users = Arc::new(Keyed::<u64, SlidingWindows>::with_config(
        SlidingConfig::new(quota).unwrap(),
        TscClock::new(),
    ));
    let ips = Arc::new(Keyed::<u32, FixedWindows>::new(quota));
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
    let mut group = c.benchmark_group("policy/allow");
    let mut i = 0u64;
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
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = policy
}
criterion_main!(benches);
