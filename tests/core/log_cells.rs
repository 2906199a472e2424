//! Sliding-log cells sharing one configuration (`ringlimit::cell::SlidingLogCell`) against
//! the sequential spec: every cell decides exactly as its own spec would if every limit
//! change were applied to it at once, under random readings (backwards ones and far jumps
//! included); a cell left untouched across more changes than its label counts still decides
//! exactly; and under threads, no window ever holds more than the largest limit in force.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ringlimit::cell::{Compact, Padded};
use ringlimit::cell::{LogConfig, SlidingLogCell};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::SlidingLogSpec;
use ringlimit::{ConfigError, WindowQuota};

use crate::common;

use common::cells::against_specs;

fn quota(limit: u64, window: u64) -> WindowQuota {
    WindowQuota::per(limit, Duration::from_nanos(window)).unwrap()
}

/// Random steps on three cells over `window` ns (room for limits up to 7: the driver sets
/// 1..=6 and asks for one more than the limit) against three specs.
fn against_spec(seed: u64, window: u64) {
    let config = LogConfig::with_max_limit(quota(4, window), 7).unwrap();
    let cells: Vec<SlidingLogCell<Compact>> =
        (0..3).map(|_| SlidingLogCell::new(&config)).collect();
    let mut specs: Vec<SlidingLogSpec> = (0..3)
        .map(|_| SlidingLogSpec::new(4, Duration::from_nanos(window)).unwrap())
        .collect();
    let width = (window / 10).max(1);
    let context = format!("window {window} ns");
    against_specs(
        seed, window, width, &config, &cells, &mut specs, 2000, &context,
    );
}

#[test]
fn cells_decide_exactly_as_the_spec() {
    for seed in 1..=60 {
        for window in [1, 3, 10, 1_000] {
            against_spec(seed, window);
        }
    }
}

/// The label is 20 bits; a cell untouched across 2^20 + 3 changes sees its own label again
/// but still decides under the limit in force (the limit is read fresh at every decision,
/// and a log needs no conversion).
#[test]
fn a_cell_untouched_across_more_changes_than_labels_decides_exactly() {
    let clock = ManualClock::new();
    let config = LogConfig::with_max_limit(quota(3, 100), 5).unwrap();
    let (idle, busy) = (
        SlidingLogCell::<Compact>::new(&config),
        SlidingLogCell::<Compact>::new(&config),
    );
    assert!(idle
        .try_acquire_n(&config, &clock, 2)
        .unwrap()
        .is_admitted());
    for i in 0..(1u64 << 20) + 3 {
        config.set_limit(if i % 2 == 0 { 5 } else { 1 }).unwrap();
        if i % 100_000 == 0 {
            assert!(busy.available(&config, &clock) <= 5);
        }
    }
    // The last change set 5 (i = 2^20 + 2 is even).
    assert_eq!(config.limit(), 5);
    assert_eq!(idle.available(&config, &clock), 3);
    assert_eq!(
        idle.try_acquire_n(&config, &clock, 3),
        Ok(Decision::Admitted { remaining: 0 })
    );
    assert!(!idle.try_acquire(&config, &clock));
    config.set_limit(1).unwrap();
    assert_eq!(idle.available(&config, &clock), 0);
}

#[test]
fn sizes_and_rings() {
    let config = LogConfig::new(quota(100, 1_000)).unwrap();
    let cell = SlidingLogCell::<Compact>::new(&config);
    assert_eq!(std::mem::size_of::<SlidingLogCell<Compact>>(), 24);
    assert_eq!(cell.footprint(), 24 + 8 * 128);
    assert_eq!(std::mem::size_of::<SlidingLogCell<Padded>>() % 64, 0);
    // The smallest ring has 4 slots; a limit of 3 needs exactly that.
    let three = LogConfig::new(quota(3, 10)).unwrap();
    assert_eq!(SlidingLogCell::<Compact>::new(&three).footprint(), 24 + 32);
    assert_eq!(config.footprint(), 32);
}

#[test]
fn configuration_errors_are_typed() {
    let config = LogConfig::with_max_limit(quota(3, 10), 8).unwrap();
    assert_eq!(config.max_limit(), 8);
    assert_eq!(
        config.set_limit(9),
        Err(ConfigError::LimitTooLarge { limit: 9, max: 8 })
    );
    assert_eq!(config.set_limit(0), Err(ConfigError::ZeroLimit));
    assert!(config.set_limit(8).is_ok());
    // max_limit is raised to the limit and capped at the largest ring.
    assert_eq!(
        LogConfig::with_max_limit(quota(3, 10), 1)
            .unwrap()
            .max_limit(),
        3
    );
    let huge = LogConfig::with_max_limit(quota(3, 10), u64::MAX).unwrap();
    assert_eq!(huge.max_limit(), ringlimit::SlidingLog::MAX_LIMIT);
}

/// A cell made for a smaller `max_limit` than the configuration it is used with decides with
/// at most its own capacity (the power of two above its `max_limit`, less one): never more
/// than its ring can count.
#[test]
fn a_cell_under_a_larger_configuration_keeps_to_its_ring() {
    let clock = ManualClock::new();
    let small = LogConfig::new(quota(3, 1_000)).unwrap();
    let large = LogConfig::new(quota(100, 1_000)).unwrap();
    let cell = SlidingLogCell::<Compact>::new(&small);
    assert_eq!(cell.available(&large, &clock), 3);
    assert_eq!(
        (0..10).filter(|_| cell.try_acquire(&large, &clock)).count(),
        3
    );
}

#[test]
fn an_unlimited_configuration_admits_everything() {
    let clock = ManualClock::new();
    let config = LogConfig::new(WindowQuota::unlimited()).unwrap();
    let cell = SlidingLogCell::<Compact>::new(&config);
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

/// Threads take 1 or 2 permits on one cell while a driver moves the clock and another
/// thread moves the limit between 3 and 6. Each admission is recorded with the readings just
/// before and just after the call: the log stamped it between the two (or later, joining
/// the newest entry). Every interval of one window must hold at most 6 admissions known to
/// lie inside it (the largest limit ever in force).
#[test]
fn racing_threads_never_overfill_a_window() {
    const WINDOW: u64 = 100;
    let step = 10;
    let clock = ManualClock::new();
    let config = Arc::new(LogConfig::with_max_limit(quota(6, WINDOW), 6).unwrap());
    let cell = Arc::new(SlidingLogCell::<Compact>::new(&config));
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
                    let before = clock.now_nanos();
                    let n = 1 + (t as u64 % 2);
                    if let Ok(Decision::Admitted { .. }) = cell.try_acquire_n(&config, &clock, n) {
                        mine.push((before, clock.now_nanos(), n));
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
        clock.advance_nanos(step);
    }
    stop.store(true, Ordering::Relaxed);
    workers.into_iter().for_each(|w| w.join().unwrap());
    changer.join().unwrap();
    let log = log.lock().unwrap();
    assert!(log.len() > 100, "only {} admissions", log.len());
    let last = clock.now_nanos();
    for end in (0..=last).step_by(step as usize) {
        let inside: u64 = log
            .iter()
            .filter(|(before, after, _)| before + WINDOW > end && *after <= end)
            .map(|(_, _, n)| n)
            .sum();
        assert!(
            inside <= 6,
            "({}, {end}] holds {inside} admissions",
            end.saturating_sub(WINDOW)
        );
    }
}
