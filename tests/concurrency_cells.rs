//! `ConcurrencyCell`s sharing one `ConcurrencyConfig`: cells decide under the shared limit,
//! convert lazily after a change, keep their permits across any number of changes, and,
//! hammered by threads while another thread keeps changing the limit, never let an
//! acquisition that started after a change completed push a cell over that limit, and never
//! lose a permit.
//!
//! A test crate of its own: the hammer test needs the cores to itself to interleave enough
//! admissions with the reconfigurations.

use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use ringlimit::cell::{Compact, Padded};
use ringlimit::cell::{ConcurrencyCell, ConcurrencyConfig};
use ringlimit::spec::{ConcurrencySpec, Spec};
use ringlimit::{ConcurrencyQuota, ConfigError, ExceedsLimit};

fn config(limit: u64) -> ConcurrencyConfig {
    ConcurrencyConfig::new(ConcurrencyQuota::new(limit).unwrap())
}

#[test]
fn two_cells_share_one_config() {
    let config = config(3);
    let a = ConcurrencyCell::<Compact>::with_layout(&config);
    let b = ConcurrencyCell::<Compact>::with_layout(&config);
    assert!(a.try_acquire(&config, 3).unwrap());
    // Each cell counts its own permits under the one limit.
    assert!(!a.try_acquire(&config, 1).unwrap());
    assert!(b.try_acquire(&config, 2).unwrap());
    assert_eq!((a.available(&config), b.available(&config)), (0, 1));
    // One change, both cells.
    config.set_limit(5).unwrap();
    assert_eq!((a.available(&config), b.available(&config)), (2, 3));
    assert_eq!(
        b.try_acquire(&config, 6),
        Err(ExceedsLimit {
            requested: 6,
            limit: 5
        })
    );
    a.release(&config, 3);
    b.release(&config, 2);
    assert_eq!((a.in_flight(&config), b.in_flight(&config)), (0, 0));
}

#[test]
fn lowering_the_limit_keeps_the_permits_in_flight() {
    let config = config(4);
    let cell = ConcurrencyCell::<Padded>::new(&config);
    let mut spec = ConcurrencySpec::new(4).unwrap();
    assert!(cell.try_acquire(&config, 4).unwrap());
    spec.decide(0, 4).unwrap();
    config.set_limit(2).unwrap();
    spec.set_limit(0, 2).unwrap();
    // Still out, nothing admitted until enough are released, exactly as the spec.
    for step in 0..4 {
        assert_eq!(cell.in_flight(&config), spec.in_flight(), "step {step}");
        assert_eq!(cell.available(&config), spec.available(0), "step {step}");
        assert_eq!(
            cell.try_acquire(&config, 1).unwrap(),
            spec.decide(0, 1).unwrap().is_admitted(),
            "step {step}"
        );
        cell.release(&config, 1);
        spec.release(1);
    }
    assert_eq!(config.set_limit(0), Err(ConfigError::ZeroLimit));
    assert_eq!(config.limit(), 2);
}

#[test]
fn a_cell_untouched_across_many_reconfigurations_keeps_its_permits() {
    let config = config(10);
    let cell = ConcurrencyCell::<Compact>::with_layout(&config);
    let touched = ConcurrencyCell::<Compact>::with_layout(&config);
    assert!(cell.try_acquire(&config, 7).unwrap());
    for i in 0..100_000u64 {
        // Through every limit from 1 to 10, and back to the starting one many times.
        config.set_limit(1 + i % 10).unwrap();
        if i % 1000 == 0 {
            // A neighbour converts often; the untouched cell is not disturbed by it.
            assert!(touched.try_acquire(&config, 0).unwrap());
        }
    }
    config.set_limit(8).unwrap();
    assert_eq!(cell.in_flight(&config), 7);
    assert_eq!(cell.available(&config), 1);
    assert!(cell.try_acquire(&config, 1).unwrap());
    assert!(!cell.try_acquire(&config, 1).unwrap());
    cell.release(&config, 8);
    assert_eq!(cell.available(&config), 8);
}

/// The limits the controller cycles through, after the initial one.
const LIMITS: [u64; 4] = [3, 1, 4, 2];
const INITIAL: u64 = 4;

/// The limit in force after `k` changes.
fn limit_after(k: u64) -> u64 {
    match k {
        0 => INITIAL,
        k => LIMITS[((k - 1) % LIMITS.len() as u64) as usize],
    }
}

/// Workers acquire and release on several cells while a controller keeps changing the shared
/// limit. The check that can fail: a worker reads `completed` (changes done) before its
/// acquisition; if admitted, it reads the cell's `in_flight` and then (after a `SeqCst` fence)
/// `started` (changes begun). If no change began in between, every admission that can land
/// on the cell from the worker's admission to its read was decided under `limit_after(k)`
/// (an acquisition decided under an older limit fails once any operation has converted the
/// cell, and the worker's own did), so the count read must be within it. A stale
/// acquisition landing after the change (the ABA of a plain `fetch_sub` release) pushes it
/// over. At the end, every cell is back to 0: no release is lost, none counted twice.
#[test]
fn cells_hammered_across_reconfigurations_stay_within_the_limit_in_force() {
    const CELLS: usize = 3;
    const WORKERS: usize = 4;
    const CHANGES: u64 = 3_000;
    let config = Arc::new(config(INITIAL));
    let cells: Arc<Vec<ConcurrencyCell<Compact>>> = Arc::new(
        (0..CELLS)
            .map(|_| ConcurrencyCell::with_layout(&config))
            .collect(),
    );
    let started = Arc::new(AtomicU64::new(0));
    let completed = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(WORKERS + 1));
    let controller = {
        let (config, started, completed, done, barrier) = (
            config.clone(),
            started.clone(),
            completed.clone(),
            done.clone(),
            barrier.clone(),
        );
        thread::spawn(move || {
            barrier.wait();
            for k in 1..=CHANGES {
                started.fetch_add(1, Ordering::SeqCst);
                config.set_limit(limit_after(k)).unwrap();
                completed.fetch_add(1, Ordering::SeqCst);
                thread::yield_now();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let workers: Vec<_> = (0..WORKERS as u64)
        .map(|w| {
            let (config, cells, started, completed, done, checked, barrier) = (
                config.clone(),
                cells.clone(),
                started.clone(),
                completed.clone(),
                done.clone(),
                checked.clone(),
                barrier.clone(),
            );
            thread::spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15_u64 ^ (w + 1);
                barrier.wait();
                while !done.load(Ordering::Relaxed) {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let cell = &cells[(rng % CELLS as u64) as usize];
                    let n = 1 + (rng >> 8) % 2;
                    let k = completed.load(Ordering::SeqCst);
                    if cell.try_acquire(&config, n) == Ok(true) {
                        let in_flight = cell.in_flight(&config);
                        // SeqCst fence: if this read saw an admission decided under a
                        // change not yet counted in `started`, `started` below sees it.
                        fence(Ordering::SeqCst);
                        if started.load(Ordering::SeqCst) == k {
                            let limit = limit_after(k);
                            assert!(
                                in_flight <= limit,
                                "{in_flight} in flight after an admission under limit {limit} (change {k})"
                            );
                            checked.fetch_add(1, Ordering::Relaxed);
                        }
                        if rng & 0x100 != 0 {
                            thread::yield_now();
                        }
                        cell.release(&config, n);
                    }
                }
            })
        })
        .collect();
    controller.join().unwrap();
    for worker in workers {
        worker.join().unwrap();
    }
    for (i, cell) in cells.iter().enumerate() {
        assert_eq!(cell.in_flight(&config), 0, "cell {i}");
    }
    let checked = checked.load(Ordering::Relaxed);
    assert!(checked > 1000, "only {checked} admissions checked");
}
