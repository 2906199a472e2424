//! Fixed-window and approximate-window cells sharing one configuration (`ringlimit::cell`)
//! against the sequential specs: every cell decides exactly as its own spec would if every limit change were applied
//! to it at once, under random readings (backwards ones and far jumps included).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::Compact;
use ringlimit::cell::{ApproxWindowCell, FixedWindowCell, WindowConfig};
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::spec::{ApproxSlidingWindowSpec, FixedWindowSpec, Spec};
use ringlimit::WindowQuota;

use crate::common;

use common::cells::against_specs;

const WINDOW: u64 = 1_000;

#[test]
fn cells_decide_exactly_as_their_specs() {
    for seed in 1..=60 {
        let config =
            WindowConfig::new(WindowQuota::per(4, Duration::from_nanos(WINDOW)).unwrap()).unwrap();
        let cells: Vec<FixedWindowCell<Compact>> = (0..3).map(|_| FixedWindowCell::new()).collect();
        let mut specs: Vec<FixedWindowSpec> = (0..3)
            .map(|_| FixedWindowSpec::new(4, Duration::from_nanos(WINDOW)).unwrap())
            .collect();
        against_specs(
            seed, WINDOW, WINDOW, &config, &cells, &mut specs, 2000, "fixed",
        );
    }
}

#[test]
fn an_unlimited_configuration_admits_everything() {
    let clock = ManualClock::new();
    let config = WindowConfig::new(WindowQuota::unlimited()).unwrap();
    let cell = FixedWindowCell::<Compact>::new();
    assert!((0..10_000).all(|_| cell.try_acquire(&config, &clock)));
    assert_eq!(
        cell.try_acquire_n(&config, &clock, u64::MAX),
        Ok(Decision::Admitted {
            remaining: u64::MAX
        })
    );
    assert_eq!(cell.available(&config, &clock), u64::MAX);
    assert!(config.set_limit(3).is_err());
}

#[test]
fn a_budget_cell_is_the_budget_spec() {
    let clock = ManualClock::new();
    let config = WindowConfig::new(WindowQuota::budget(2).unwrap()).unwrap();
    let mut spec = FixedWindowSpec::from_quota(WindowQuota::budget(2).unwrap()).unwrap();
    let cell = FixedWindowCell::<Compact>::new();
    for (now, n) in [
        (0, 2),
        (1, 1),
        (365 * 24 * 3600 * 1_000_000_000, 1),
        (u64::MAX, 1),
    ] {
        clock.set_nanos(now);
        assert_eq!(
            cell.try_acquire_n(&config, &clock, n),
            spec.decide(now, n),
            "at {now}"
        );
        assert_eq!(
            cell.available(&config, &clock),
            spec.available(now),
            "at {now}"
        );
    }
    // Ten years on, still spent.
    clock.set_nanos(10 * 365 * 24 * 3600 * 1_000_000_000);
    let fresh = FixedWindowCell::<Compact>::new();
    assert!(fresh
        .try_acquire_n(&config, &clock, 2)
        .unwrap()
        .is_admitted());
    assert!(!fresh.try_acquire(&config, &clock));
}

/// Threads admit on three cells of one configuration while another thread moves the limit
/// between 2 and 8 within one window (the clock stands still). Whatever the interleaving,
/// no cell admits more than the largest limit; once the limit settles at 2, every cell
/// refuses, and each reports exactly what its own admissions left (nothing lost or added).
#[test]
fn racing_limit_changes_never_let_a_cell_exceed_the_limit_in_force() {
    let clock = ManualClock::new();
    let config = Arc::new(WindowConfig::new(WindowQuota::per_second(8).unwrap()).unwrap());
    let cells: Arc<Vec<FixedWindowCell<Compact>>> =
        Arc::new((0..3).map(|_| FixedWindowCell::new()).collect());
    let admitted: Arc<Vec<AtomicU64>> = Arc::new((0..3).map(|_| AtomicU64::new(0)).collect());
    let workers: Vec<_> = (0..3)
        .map(|t| {
            let (config, cells, admitted, clock) = (
                config.clone(),
                cells.clone(),
                admitted.clone(),
                clock.clone(),
            );
            std::thread::spawn(move || {
                for i in 0..20_000 {
                    let cell = (t + i) % 3;
                    if cells[cell].try_acquire(&config, &clock) {
                        admitted[cell].fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for round in 0..2_000 {
        config
            .set_limit(if round % 2 == 0 { 2 } else { 8 })
            .unwrap();
    }
    config.set_limit(2).unwrap();
    workers.into_iter().for_each(|w| w.join().unwrap());
    for (cell, count) in admitted.iter().enumerate() {
        let count = count.load(Ordering::Relaxed);
        assert!(
            count <= 8,
            "cell {cell}: {count} admitted in one window of limit <= 8"
        );
        assert!(!cells[cell].try_acquire(&config, &clock));
        assert_eq!(
            cells[cell].available(&config, &clock),
            2_u64.saturating_sub(count)
        );
    }
}

#[test]
fn approximate_cells_decide_exactly_as_their_specs() {
    for seed in 1..=60 {
        let config =
            WindowConfig::new(WindowQuota::per(4, Duration::from_nanos(WINDOW)).unwrap()).unwrap();
        let cells: Vec<ApproxWindowCell<Compact>> =
            (0..3).map(|_| ApproxWindowCell::new()).collect();
        let mut specs: Vec<ApproxSlidingWindowSpec> = (0..3)
            .map(|_| ApproxSlidingWindowSpec::new(4, Duration::from_nanos(WINDOW)).unwrap())
            .collect();
        let seed = seed ^ 0xa99;
        against_specs(
            seed,
            WINDOW,
            WINDOW,
            &config,
            &cells,
            &mut specs,
            2000,
            "approximate",
        );
    }
}
