//! The length of one sweep of a keyed limiter over a full map: 1 M fixed-window keys, none
//! idle, so the sweep visits every key and drops none: `cargo bench --bench keyed_sweep`
//! (`-- --test` for a smoke run).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ringlimit::cell::WindowConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{FixedWindows, Keyed};
use ringlimit::WindowQuota;

const KEYS: u64 = 1_000_000;

fn sweep(c: &mut Criterion) {
    let clock = ManualClock::new();
    let limits: Keyed<u64, FixedWindows, _> = Keyed::with_config(
        WindowConfig::new(WindowQuota::per_hour(5).unwrap()).unwrap(),
        clock,
    )
    .max_keys(KEYS as usize);
    for k in 0..KEYS {
        limits.try_acquire(&k);
    }
    assert_eq!(limits.len() as u64, KEYS);
    c.bench_function("keyed/sweep_1m_fixed_windows_none_idle", |b| {
        b.iter(|| assert_eq!(black_box(limits.evict_idle()), 0))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = sweep
}
criterion_main!(benches);
