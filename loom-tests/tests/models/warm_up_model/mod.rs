//! The shared harness of the warm-up cell loom models: a cell and its configuration, a look
//! at the cell that changes nothing, and a caller taking one permit.
#![allow(dead_code)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread::{self, JoinHandle};
use ringlimit::cell::Compact;
use ringlimit::cell::{WarmUpCell, WarmUpConfig};
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::{Rate, WarmUpQuota};

/// A configuration and one cell under it.
pub type Shared = (WarmUpConfig, WarmUpCell<Compact>);

/// Guava's example: 2 permits/s, 4 s warm-up, cold factor 3.
pub fn setup(clock: &ManualClock) -> Shared {
    let quota = WarmUpQuota::new(Rate::per_second(2).unwrap(), Duration::from_secs(4)).unwrap();
    let config = WarmUpConfig::new(quota, clock);
    let cell = WarmUpCell::new(&config);
    (config, cell)
}

/// What the cell shows without changing anything: the wait before its next admission and
/// its stored permits (bits), under the configuration in force.
pub fn look(shared: &Shared, clock: &ManualClock) -> (Duration, u64) {
    let (config, cell) = shared;
    let retry_after = match cell.try_acquire_n(config, clock, 1).unwrap() {
        Decision::Refused { retry_after, .. } => retry_after,
        admitted => panic!("a look must not admit: {admitted:?}"),
    };
    (retry_after, cell.stored_permits(config, clock).to_bits())
}

/// A thread taking one permit from the cell: admitted.
pub fn caller(shared: &Arc<Shared>, clock: &ManualClock) -> JoinHandle<bool> {
    let (shared, clock) = (shared.clone(), clock.clone());
    thread::spawn(move || shared.1.try_acquire(&shared.0, &clock))
}
