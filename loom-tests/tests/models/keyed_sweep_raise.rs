//! A sweep racing a rate raise mints no permits: the sweep's fixed reading never becomes the
//! raise's reading, so a key in debt never refills at the new rate over time that passed
//! before the raise was called.
//!
//! Run: `bash loom-tests/run keyed_sweep_raise::`
use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{Buckets, Keyed};
use ringlimit::{BucketQuota, Rate};

/// Burst 4 at 1/s, key 7 exhausted at 0 (tat 4 s). A sweep runs while the clock moves to
/// 2 s and the rate is raised to 2/s. Spec (raise at 2 s): debt 2 s becomes 1 s, tat 3 s,
/// 2 permits available at 2 s. If the sweep fixes the raise's reading at its own 0: debt
/// 4 s becomes 2 s, tat 2 s, 4 available.
#[test]
fn a_sweep_racing_a_rate_raise_never_mints_permits() {
    loom::model(|| {
        let clock = ManualClock::new();
        let quota = BucketQuota::new(Rate::per_second(1).unwrap(), 4).unwrap();
        let shared: Arc<Keyed<u64, Buckets, ManualClock>> =
            Arc::new(Keyed::with_clock(quota, clock.clone()).max_keys(4));
        assert!(shared.try_acquire_n(&7, 4).unwrap().is_admitted());
        let sweeper = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.evict_idle())
        };
        clock.advance(Duration::from_secs(2));
        shared
            .config()
            .set_rate(&clock, Rate::per_second(2).unwrap())
            .unwrap();
        assert_eq!(sweeper.join().unwrap(), 0);
        assert_eq!(
            shared.available(&7),
            2,
            "permits minted by the sweep's reading"
        );
    });
}
