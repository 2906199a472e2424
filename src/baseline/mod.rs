//! The comparison baselines: every spec behind a `std` or `parking_lot` mutex.
//!
//! These are what the lock-free limiters are measured against (`examples/compare`); they
//! implement the same traits and decide exactly as the specs.

mod concurrency;
mod locked;

pub use concurrency::{
    LockedConcurrencyLimiter, ParkingLotConcurrencyLimiter, StdLockedConcurrencyLimiter,
};
pub use locked::{Locked, ParkingLotLocked, SpecMutex, StdLocked};
