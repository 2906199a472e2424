//! Bucket cells sharing one configuration (`ringlimit::cell`) against the sequential specs:
//! every cell decides as its own spec would if every reconfiguration were applied to it at
//! once, except a cell left behind by more than seven reconfigurations, which may only
//! refuse more.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::{BucketCell, BucketConfig};
use ringlimit::cell::{Compact, Padded};
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::{LeakyBucketSpec, Spec, TokenBucketSpec};
use ringlimit::{BucketQuota, Rate, ShaperQuota};

use crate::common;

use common::cells::Rng;

/// Reconfigurations a shared configuration keeps: a cell that missed fewer converts exactly.
const KEPT: u64 = 32;

const MS: u64 = 1_000_000;

fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

/// Cells of one shared token-bucket configuration step by step against one spec per cell,
/// with random rates, bursts, clock steps and call sizes. `max_gap` bounds how many
/// reconfigurations a cell may miss before it is touched again.
fn token_differential(seed: u64, max_gap: u64) {
    let mut rng = Rng(seed);
    let clock = ManualClock::new();
    let config = BucketConfig::token(BucketQuota::new(every(100), 4).unwrap(), &clock);
    let cells: Vec<BucketCell<Compact>> = (0..3).map(|_| BucketCell::new(&config)).collect();
    let mut specs: Vec<TokenBucketSpec> = (0..3)
        .map(|_| TokenBucketSpec::new(every(100), 4).unwrap())
        .collect();
    // Reconfigurations each cell has missed since its last access.
    let mut missed = [0_u64; 3];
    for step in 0..3000 {
        clock.advance_nanos(rng.below(300));
        let now = clock.now_nanos();
        match rng.below(10) {
            0 => {
                let rate = every(1 + rng.below(400));
                config.set_rate(&clock, rate).unwrap();
                for spec in &mut specs {
                    spec.set_rate(now, rate).unwrap();
                }
                missed.iter_mut().for_each(|m| *m += 1);
            }
            1 => {
                let burst = 1 + rng.below(6);
                config.set_limit(&clock, burst).unwrap();
                for spec in &mut specs {
                    spec.set_burst(now, burst).unwrap();
                }
                missed.iter_mut().for_each(|m| *m += 1);
            }
            _ => {
                // Touch a cell that must be touched, or any.
                let cell = missed
                    .iter()
                    .position(|&m| m >= max_gap)
                    .unwrap_or_else(|| rng.below(3) as usize);
                let n = rng.below(4);
                let exact = missed[cell] < KEPT;
                missed[cell] = 0;
                if rng.below(4) == 0 {
                    let got = cells[cell].available(&config, &clock);
                    let want = specs[cell].available(now);
                    if exact {
                        assert_eq!(got, want, "seed {seed} step {step} cell {cell}: available");
                    } else {
                        assert!(
                            got <= want,
                            "seed {seed} step {step} cell {cell}: {got} > {want}"
                        );
                        // From here on the cell may hold less than its spec: stop comparing.
                        return;
                    }
                    continue;
                }
                if exact && n == 1 && rng.below(2) == 0 {
                    let want = specs[cell].decide(now, 1).unwrap().is_admitted();
                    let got = cells[cell].try_acquire(&config, &clock);
                    assert_eq!(
                        got, want,
                        "seed {seed} step {step} cell {cell}: try_acquire"
                    );
                    continue;
                }
                let got = cells[cell].try_acquire_n(&config, &clock, n);
                if exact {
                    let want = specs[cell].decide(now, n);
                    assert_eq!(got, want, "seed {seed} step {step} cell {cell}: n = {n}");
                } else {
                    assert!(
                        !got.is_ok_and(|d| d.is_admitted()) || specs[cell].available(now) >= n,
                        "seed {seed} step {step} cell {cell}: admitted {n} where the spec has fewer"
                    );
                    // From here on the cell may hold less than its spec: stop comparing it.
                    return;
                }
            }
        }
    }
}

#[test]
fn cells_touched_within_the_ring_decide_exactly_as_their_specs() {
    for seed in 1..=40 {
        token_differential(seed, KEPT - 1);
    }
}

#[test]
fn cells_left_behind_longer_never_admit_more_than_their_specs() {
    for seed in 100..=140 {
        token_differential(seed, 3 * KEPT);
    }
}

#[test]
fn a_cell_untouched_across_many_reconfigurations_converts_conservatively() {
    let clock = ManualClock::new();
    let config = BucketConfig::token(BucketQuota::new(every(10), 5).unwrap(), &clock);
    let cell = BucketCell::<Compact>::new(&config);
    assert_eq!(
        cell.try_acquire_n(&config, &clock, 5),
        Ok(Decision::Admitted { remaining: 0 })
    );
    for i in 0..1000 {
        config.set_limit(&clock, 5 + i % 2).unwrap();
    }
    // Its own spec is empty now and full after one burst's worth (60 ns). The cell, whose
    // history is gone, starts a burst behind the later of its time (50) and the oldest kept
    // reconfiguration's reading (0), then replays the last seven: empty now, one permit at
    // 60 ns where its spec has six (it only refuses more), full a burst later.
    assert_eq!(cell.available(&config, &clock), 0);
    clock.advance_nanos(60);
    assert_eq!(cell.available(&config, &clock), 1);
    clock.advance_nanos(50);
    assert_eq!(cell.available(&config, &clock), config.limit());
    // A fresh cell made now is full.
    assert_eq!(
        BucketCell::<Padded>::new(&config).available(&config, &clock),
        config.limit()
    );
}

#[test]
fn shaper_cells_keep_their_schedules_across_reconfigurations() {
    let clock = ManualClock::new();
    let quota = ShaperQuota::new(every(10), Duration::from_nanos(30)).unwrap();
    let config = BucketConfig::shaper(quota, &clock);
    let cells: Vec<BucketCell<Compact>> = (0..2).map(|_| BucketCell::new(&config)).collect();
    let mut specs: Vec<LeakyBucketSpec> = (0..2)
        .map(|_| LeakyBucketSpec::shaper(every(10), Duration::from_nanos(30)).unwrap())
        .collect();
    let mut rng = Rng(7);
    for step in 0..2000 {
        clock.advance_nanos(rng.below(25));
        let now = clock.now_nanos();
        if rng.below(8) == 0 {
            let rate = every(1 + rng.below(20));
            config.set_rate(&clock, rate).unwrap();
            specs
                .iter_mut()
                .for_each(|s| s.set_rate(now, rate).unwrap());
            continue;
        }
        let cell = rng.below(2) as usize;
        let n = rng.below(3);
        let got = cells[cell].try_acquire_n(&config, &clock, n);
        assert_eq!(
            got,
            specs[cell].decide(now, n),
            "step {step} cell {cell} n {n}"
        );
    }
}

#[test]
fn an_unlimited_configuration_admits_everything_and_cannot_change() {
    let clock = ManualClock::new();
    let config = BucketConfig::token(BucketQuota::unlimited(), &clock);
    let cell = BucketCell::<Compact>::new(&config);
    assert!((0..1000).all(|_| cell.try_acquire(&config, &clock)));
    assert_eq!(
        cell.try_acquire_n(&config, &clock, u64::MAX),
        Ok(Decision::Admitted {
            remaining: u64::MAX
        })
    );
    assert_eq!(cell.available(&config, &clock), u64::MAX);
    assert_eq!(config.limit(), u64::MAX);
    assert!(config.set_limit(&clock, 3).is_err());
    assert!(config.set_rate(&clock, every(5)).is_err());
}

/// Threads admit on four cells of one configuration while another thread alternates the
/// burst and rate. Whatever the interleaving, each cell admits at most the largest burst
/// plus the fastest rate times the time elapsed (the GCRA bound under any configuration
/// history), and every cell ends in a configuration in force.
#[test]
fn racing_reconfigurations_never_let_a_cell_exceed_the_loosest_bound() {
    let clock = ManualClock::new();
    let config = Arc::new(BucketConfig::token(
        BucketQuota::new(every(1000), 8).unwrap(),
        &clock,
    ));
    let cells: Arc<Vec<BucketCell<Compact>>> =
        Arc::new((0..4).map(|_| BucketCell::new(&config)).collect());
    let admitted: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..3)
        .map(|t| {
            let (config, cells, admitted, clock, stop) = (
                config.clone(),
                cells.clone(),
                admitted.clone(),
                clock.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let mut i = t;
                while stop.load(Ordering::Relaxed) == 0 {
                    let cell = i % 4;
                    if cells[cell].try_acquire(&config, &clock) {
                        admitted[cell].fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            })
        })
        .collect();
    // Fastest period 500 ns, largest burst 8.
    for round in 0..2000_u64 {
        clock.advance_nanos(50);
        match round % 4 {
            0 => config.set_rate(&clock, every(500)).unwrap(),
            1 => config.set_limit(&clock, 3).unwrap(),
            2 => config.set_rate(&clock, every(1000)).unwrap(),
            _ => config.set_limit(&clock, 8).unwrap(),
        }
    }
    stop.store(1, Ordering::Relaxed);
    workers.into_iter().for_each(|w| w.join().unwrap());
    let elapsed = clock.now_nanos();
    for (cell, count) in admitted.iter().enumerate() {
        let count = count.load(Ordering::Relaxed);
        assert!(
            count <= 8 + elapsed / 500,
            "cell {cell}: {count} admitted in {elapsed} ns"
        );
    }
}

/// A cell left behind across a reconfiguration whose slot is gone, with the
/// clock set back before the later ones, once restarted from the later (older) readings and
/// admitted 100 where its spec admits 1. The conservative start now takes the latest
/// reading of any epoch.
#[test]
fn a_clock_set_back_never_lets_a_conservative_conversion_admit_more() {
    for later in [KEPT - 1, KEPT, KEPT + 5] {
        let clock = ManualClock::new();
        let rate = every(MS); // T = 1 ms
        let config = BucketConfig::token(BucketQuota::new(rate, 1).unwrap(), &clock);
        let cell = BucketCell::<Compact>::new(&config);
        let mut spec = TokenBucketSpec::new(rate, 1).unwrap();
        clock.set_nanos(100 * MS);
        config.set_limit(&clock, 100).unwrap();
        spec.set_burst(100 * MS, 100).unwrap();
        clock.set_nanos(0);
        for _ in 0..later {
            config.set_limit(&clock, 100).unwrap();
            spec.set_burst(0, 100).unwrap();
        }
        clock.set_nanos(100 * MS);
        let cell_n = (0..200)
            .filter(|_| cell.try_acquire(&config, &clock))
            .count();
        let spec_n = (0..200)
            .filter(|_| spec.decide(100 * MS, 1).unwrap().is_admitted())
            .count();
        assert!(
            cell_n <= spec_n,
            "1 + {later} reconfigurations: {cell_n} > {spec_n}"
        );
    }
}

/// A cell used with a configuration it was not made under (its epoch ahead
/// of that configuration's) panicked in debug builds and spun without overflow checks. It
/// belongs to its configuration; misused, it now starts from its emptiest state.
#[test]
fn a_cell_used_with_another_configuration_neither_panics_nor_spins() {
    let clock = ManualClock::new();
    let quota = BucketQuota::new(every(10), 2).unwrap();
    let made_under = BucketConfig::token(quota, &clock);
    for _ in 0..3 {
        made_under.set_limit(&clock, 2).unwrap();
    }
    let cell = BucketCell::<Compact>::new(&made_under);
    let other = BucketConfig::token(quota, &clock);
    assert_eq!(cell.available(&other, &clock), 0);
    clock.advance_nanos(20);
    assert_eq!(cell.available(&other, &clock), 2);
    assert!(cell.try_acquire(&other, &clock));
}
