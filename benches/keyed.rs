//! Keyed limiters on one thread: a token bucket per key, keys drawn at random from a set
//! held in the map before timing, ringlimit's `Keyed` against governor's keyed limiter
//! (its DashMap) with the same quota (1 per ns, burst 1000: every call admitted).
//!
//! `cargo bench --bench keyed` (`-- --test` for a smoke run). Multi-thread keyed rows belong
//! in the comparison tool.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ringlimit::keyed::{Buckets, Keyed};
use ringlimit::{BucketQuota, Rate};

/// A small deterministic generator (xorshift64*).
struct Keys(u64);

impl Keys {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
    }
}

fn keyed(c: &mut Criterion) {
    let keys: u64 = std::env::var("KEYED_BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut group = c.benchmark_group(format!("keyed_token_bucket/{keys}_keys"));
    let quota = BucketQuota::new(Rate::every(Duration::from_nanos(1)).unwrap(), 1000).unwrap();
    let ours: Keyed<u64, Buckets> = Keyed::new(quota);
    let theirs = governor::RateLimiter::keyed(
        governor::Quota::with_period(Duration::from_nanos(1))
            .unwrap()
            .allow_burst(NonZeroU32::new(1000).unwrap()),
    );
    for key in 0..keys {
        ours.try_acquire(&key);
        let _ = theirs.check_key(&key);
    }
    let mut draw = Keys(0x9e37_79b9_7f4a_7c15);
    group.bench_function("lock_free", |b| {
        b.iter(|| black_box(ours.try_acquire(&draw.next(keys))))
    });
    let mut draw = Keys(0x9e37_79b9_7f4a_7c15);
    group.bench_function("governor", |b| {
        b.iter(|| black_box(theirs.check_key(&draw.next(keys)).is_ok()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = keyed
}
criterion_main!(benches);
