//! Fixed-window and approximate-window cells sharing one configuration (`ringlimit::cell`)
//! against the sequential specs: every cell decides exactly as its own spec would if every limit change were applied
//! to it at once, under random readings (backwards ones and far jumps included).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::{ApproxWindowCell, FixedWindowCell, WindowConfig};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{ApproxSlidingWindowSpec, FixedWindowSpec, Spec};
use ringlimit::{Compact, Decision, WindowQuota};

/// A small deterministic generator (xorshift64*), so failures replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WINDOW: u64 = 1_000;

#[test]
fn cells_decide_exactly_as_their_specs() {
    for seed in 1..=60 {
        let mut rng = Rng(seed);
        let clock = ManualClock::new();
        let config = WindowConfig::new(WindowQuota::per(4, Duration::from_nanos(WINDOW)).unwrap());
        let cells: Vec<FixedWindowCell<Compact>> = (0..3).map(|_| FixedWindowCell::new()).collect();
        let mut specs: Vec<FixedWindowSpec> = (0..3)
            .map(|_| FixedWindowSpec::new(4, Duration::from_nanos(WINDOW)).unwrap())
            .collect();
        for step in 0..2000 {
            match rng.below(20) {
                // Backwards, a little.
                0 => clock.set_nanos(clock.now_nanos().saturating_sub(rng.below(2 * WINDOW))),
                // Far jumps: 2^32 and 2^40 windows.
                1 => clock.advance_nanos(WINDOW << (32 + 8 * rng.below(2))),
                _ => clock.advance_nanos(rng.below(WINDOW / 2)),
            }
            let now = clock.now_nanos();
            if rng.below(10) == 0 {
                let limit = 1 + rng.below(6);
                config.set_limit(limit).unwrap();
                specs
                    .iter_mut()
                    .for_each(|s| s.set_limit(now, limit).unwrap());
                continue;
            }
            let cell = rng.below(3) as usize;
            let limit = config.limit();
            let n = [0, 1, 2, limit, limit + 1, u64::MAX][rng.below(6) as usize];
            if rng.below(5) == 0 {
                assert_eq!(
                    cells[cell].available(&config, &clock),
                    specs[cell].available(now),
                    "seed {seed} step {step} cell {cell}: available at {now}"
                );
                continue;
            }
            if n == 1 && rng.below(2) == 0 {
                assert_eq!(
                    cells[cell].try_acquire(&config, &clock),
                    specs[cell].decide(now, 1).unwrap().is_admitted(),
                    "seed {seed} step {step} cell {cell}: try_acquire at {now}"
                );
                continue;
            }
            assert_eq!(
                cells[cell].try_acquire_n(&config, &clock, n),
                specs[cell].decide(now, n),
                "seed {seed} step {step} cell {cell}: n = {n} at {now}"
            );
        }
    }
}

#[test]
fn an_unlimited_configuration_admits_everything() {
    let clock = ManualClock::new();
    let config = WindowConfig::new(WindowQuota::unlimited());
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
    let config = WindowConfig::new(WindowQuota::budget(2).unwrap());
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
    let config = Arc::new(WindowConfig::new(WindowQuota::per_second(8).unwrap()));
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
        let mut rng = Rng(seed ^ 0xa99);
        let clock = ManualClock::new();
        let config = WindowConfig::new(WindowQuota::per(4, Duration::from_nanos(WINDOW)).unwrap());
        let cells: Vec<ApproxWindowCell<Compact>> =
            (0..3).map(|_| ApproxWindowCell::new()).collect();
        let mut specs: Vec<ApproxSlidingWindowSpec> = (0..3)
            .map(|_| ApproxSlidingWindowSpec::new(4, Duration::from_nanos(WINDOW)).unwrap())
            .collect();
        for step in 0..2000 {
            match rng.below(20) {
                0 => clock.set_nanos(clock.now_nanos().saturating_sub(rng.below(2 * WINDOW))),
                1 => clock.advance_nanos(WINDOW << (32 + 8 * rng.below(2))),
                2 => clock.set_nanos(u64::MAX - rng.below(3 * WINDOW)),
                _ => clock.advance_nanos(rng.below(WINDOW / 2)),
            }
            let now = clock.now_nanos();
            if rng.below(10) == 0 {
                let limit = 1 + rng.below(6);
                config.set_limit(limit).unwrap();
                specs
                    .iter_mut()
                    .for_each(|s| s.set_limit(now, limit).unwrap());
                continue;
            }
            let cell = rng.below(3) as usize;
            let limit = config.limit();
            let n = [0, 1, 2, limit, limit + 1, u64::MAX][rng.below(6) as usize];
            if rng.below(5) == 0 {
                assert_eq!(
                    cells[cell].available(&config, &clock),
                    specs[cell].available(now),
                    "seed {seed} step {step} cell {cell}: available at {now}"
                );
                continue;
            }
            assert_eq!(
                cells[cell].try_acquire_n(&config, &clock, n),
                specs[cell].decide(now, n),
                "seed {seed} step {step} cell {cell}: n = {n} at {now}"
            );
        }
    }
}
