//! Sliding-window cells sharing one configuration (`ringlimit::cell::SlidingWindowCell`)
//! against the sequential spec: every cell decides exactly as its own spec would if every
//! limit change were applied to it at once, under random readings (backwards ones, jumps of
//! a few buckets and far jumps included); and under threads, no window of `B` buckets ever
//! holds more than the limit.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ringlimit::cell::{Compact, Padded};
use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::{SlidingWindowSpec, Spec};
use ringlimit::{ConfigError, WindowQuota};

use crate::common;

use common::cells::against_specs;

const WINDOW: u64 = 1_000;

fn quota(limit: u64, buckets: u64) -> WindowQuota {
    quota_over(limit, WINDOW, buckets)
}

fn quota_over(limit: u64, window: u64, buckets: u64) -> WindowQuota {
    WindowQuota::per(limit, Duration::from_nanos(window))
        .and_then(|q| q.buckets(buckets))
        .unwrap()
}

/// Random steps on three cells of `B` buckets over `window` ns against three specs.
fn against_spec<const B: usize>(seed: u64, window: u64) {
    let config = SlidingConfig::<B>::new(quota_over(4, window, B as u64)).unwrap();
    let cells: Vec<SlidingWindowCell<B, Compact>> =
        (0..3).map(|_| SlidingWindowCell::new()).collect();
    let mut specs: Vec<SlidingWindowSpec> = (0..3)
        .map(|_| SlidingWindowSpec::new(4, Duration::from_nanos(window), B as u64).unwrap())
        .collect();
    let (width, context) = (window / B as u64, format!("B {B}, window {window} ns"));
    against_specs(
        seed, window, width, &config, &cells, &mut specs, 2000, &context,
    );
}

#[test]
fn cells_decide_exactly_as_the_spec() {
    for seed in 1..=50 {
        against_spec::<1>(seed, WINDOW);
        against_spec::<2>(seed, WINDOW);
        against_spec::<4>(seed, WINDOW);
        against_spec::<5>(seed, WINDOW);
        against_spec::<10>(seed, WINDOW);
    }
}

/// 1 ns buckets (epochs reach the saturation at 2^62 buckets), bucket
/// counts that do not divide the window, and many buckets.
#[test]
fn narrow_uneven_and_many_buckets_decide_exactly_as_the_spec() {
    for seed in 1..=40 {
        against_spec::<1>(seed, 1);
        against_spec::<3>(seed, 3);
        against_spec::<7>(seed, 7);
        against_spec::<3>(seed, 1_000);
        against_spec::<13>(seed, 100);
    }
    for seed in 1..=10 {
        against_spec::<64>(seed, 6_400);
    }
}

#[test]
fn sizes_meet_the_target_of_24_plus_8_b() {
    fn compact<const B: usize>() -> usize {
        SlidingWindowCell::<B, Compact>::new().footprint()
    }
    for (buckets, bytes) in [(1, 32), (2, 32), (4, 48), (5, 64), (10, 96), (64, 528)] {
        let size = match buckets {
            1 => compact::<1>(),
            2 => compact::<2>(),
            4 => compact::<4>(),
            5 => compact::<5>(),
            10 => compact::<10>(),
            _ => compact::<64>(),
        };
        assert_eq!(size, bytes, "B = {buckets}");
        assert!(size <= 24 + 8 * buckets, "B = {buckets}: {size} bytes");
    }
    assert_eq!(SlidingWindowCell::<10, Padded>::new().footprint() % 64, 0);
}

#[test]
fn a_quota_of_another_bucket_count_is_refused_with_a_typed_error() {
    let four = quota(5, 4);
    assert_eq!(
        SlidingConfig::<10>::new(four).err(),
        Some(ConfigError::BucketCountMismatch { quota: 4, cell: 10 })
    );
    assert!(SlidingConfig::<4>::new(four).is_ok());
    // A 3 ns window counts 3 buckets by default; 10 would be narrower than 1 ns.
    let short = WindowQuota::per(1, Duration::from_nanos(3)).unwrap();
    assert!(SlidingConfig::<10>::new(short).is_err());
    assert!(SlidingConfig::<3>::new(short).is_ok());
}

#[test]
fn an_unlimited_configuration_admits_everything() {
    let clock = ManualClock::new();
    let config = SlidingConfig::<10>::new(WindowQuota::unlimited()).unwrap();
    let cell = SlidingWindowCell::<10, Compact>::new();
    assert!((0..10_000).all(|_| cell.try_acquire(&config, &clock)));
    assert_eq!(
        cell.try_acquire_n(&config, &clock, u64::MAX),
        Ok(Decision::Admitted {
            remaining: u64::MAX
        })
    );
    assert_eq!(cell.available(&config, &clock), u64::MAX);
    assert_eq!(config.set_limit(3), Err(ConfigError::Unlimited));
}

/// Threads take permits on one cell of 4 buckets while a driver moves the clock one bucket
/// at a time and another thread moves the limit between 3 and 6. Each admission is recorded
/// with the buckets of the readings just before and just after the call: the cell counted it
/// in a bucket between the two. Every window of 4 buckets must hold at most 6 admissions
/// known to lie inside it (the largest limit ever in force).
#[test]
fn racing_threads_never_overfill_a_window() {
    const B: usize = 4;
    let width = WINDOW / B as u64;
    let clock = ManualClock::new();
    let config = Arc::new(SlidingConfig::<B>::new(quota(6, B as u64)).unwrap());
    let cell = Arc::new(SlidingWindowCell::<B, Compact>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..3)
        .map(|t| {
            let (config, cell, clock, stop, log, calls) = (
                config.clone(),
                cell.clone(),
                clock.clone(),
                stop.clone(),
                log.clone(),
                calls.clone(),
            );
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let before = clock.now_nanos() / width;
                    let n = 1 + (t as u64 % 2);
                    if let Ok(Decision::Admitted { .. }) = cell.try_acquire_n(&config, &clock, n) {
                        mine.push((before, clock.now_nanos() / width, n));
                    }
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                log.lock().unwrap().extend(mine);
            })
        })
        .collect();
    let changer = {
        let (config, stop) = (config.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                config
                    .set_limit(if round % 2 == 0 { 3 } else { 6 })
                    .unwrap();
                round += 1;
                std::thread::yield_now();
            }
        })
    };
    for _ in 0..400 {
        let target = calls.load(Ordering::Relaxed) + 50;
        while calls.load(Ordering::Relaxed) < target {
            std::thread::yield_now();
        }
        clock.advance_nanos(width);
    }
    stop.store(true, Ordering::Relaxed);
    workers.into_iter().for_each(|w| w.join().unwrap());
    changer.join().unwrap();
    let log = log.lock().unwrap();
    let last = clock.now_nanos() / width;
    assert!(log.len() > 100, "only {} admissions", log.len());
    for end in 0..=last {
        let first = end.saturating_sub(B as u64 - 1);
        let inside: u64 = log
            .iter()
            .filter(|(before, after, _)| *before >= first && *after <= end)
            .map(|(_, _, n)| n)
            .sum();
        assert!(
            inside <= 6,
            "buckets {first}..={end} hold {inside} admissions"
        );
    }
}

/// Slots carry 44-bit tags, and a rollover leaves a skipped bucket's slot as it is when it
/// already reads as empty for that bucket. A slot holding a count of a bucket exactly 2^44
/// buckets earlier reads as that count for the later bucket: a rollover skipping that bucket
/// (near), or a far jump whose window holds it, must empty it, or the old count is charged
/// to the new window. Each case against the spec, with 1 ns buckets.
#[test]
fn counts_2_pow_44_buckets_old_never_count_in_a_later_window() {
    const TAG_PERIOD: u64 = 1 << 44;
    let config = SlidingConfig::<4>::new(quota_over(8, 4, 4)).unwrap();
    // Far then near: counts in buckets 0..=3; a far jump to 2^44 - 2 (no slot aliases its
    // window), then a near rollover to 2^44 + 1 skipping 2^44 - 1 and 2^44, whose slot holds
    // bucket 0's count. Far alone: counts in buckets 0..=3, a far jump to 2^44 + 2 whose
    // window holds 2^44 + 0 ..= 2^44 + 1, aliasing buckets 0 and 1.
    let cases: [&[u64]; 3] = [
        &[
            TAG_PERIOD - 2,
            TAG_PERIOD + 1,
            TAG_PERIOD + 2,
            TAG_PERIOD + 3,
        ],
        &[
            TAG_PERIOD + 2,
            TAG_PERIOD + 3,
            TAG_PERIOD + 4,
            TAG_PERIOD + 5,
        ],
        &[3 * TAG_PERIOD + 1, 3 * TAG_PERIOD + 2, 3 * TAG_PERIOD + 4],
    ];
    for readings in cases {
        let clock = ManualClock::new();
        let cell = SlidingWindowCell::<4, Compact>::new();
        let mut spec = SlidingWindowSpec::new(8, Duration::from_nanos(4), 4).unwrap();
        for (at, n) in [(0, 2), (1, 2), (2, 2), (3, 1)] {
            clock.set(Duration::from_nanos(at));
            assert!(cell
                .try_acquire_n(&config, &clock, n)
                .unwrap()
                .is_admitted());
            assert!(spec.decide(at, n).unwrap().is_admitted());
        }
        for &at in readings {
            clock.set(Duration::from_nanos(at));
            let context = format!("readings {readings:?}, at {at}");
            assert_eq!(
                cell.try_acquire_n(&config, &clock, 1).unwrap(),
                spec.decide(at, 1).unwrap(),
                "{context}"
            );
            assert_eq!(
                cell.available(&config, &clock),
                spec.available(at),
                "{context}"
            );
        }
    }
}
