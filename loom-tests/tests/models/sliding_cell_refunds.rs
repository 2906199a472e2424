//! A keyed sliding window whose refunded bucket is published late (a caller that loaded the
//! count before the refund): the next window's prior stays within its field, and the window
//! within its limit.

use std::time::Duration;

use loom::sync::Arc;
use loom_tests::spawn_with;
use ringlimit::cell::SlidingConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{Keyed, SlidingWindows};
use ringlimit::WindowQuota;

const M: u64 = (1 << 20) - 1;

#[test]
fn a_late_publication_of_a_refunded_count_never_overflows_prior() {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    loom::model(|| {
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let config = SlidingConfig::<3>::new(
            WindowQuota::per(M, Duration::from_nanos(3))
                .and_then(|q| q.buckets(3))
                .unwrap(),
        )
        .unwrap();
        let clock = ManualClock::new();
        clock.set_nanos(1);
        let shared: Arc<Keyed<u64, SlidingWindows<3>, ManualClock>> =
            Arc::new(Keyed::with_config(config, clock.clone()));
        // Bucket 1: M admitted (one grant).
        let grant = shared.try_grant(&7, M).unwrap().into_grant().unwrap();
        clock.set_nanos(2);
        // P: a caller in bucket 2 that publishes bucket 1's count M (and is refused).
        let p = spawn_with(&shared, |shared| shared.try_acquire(&7));
        loom::thread::yield_now();
        // The grant is given back while bucket 1 is the head, then J takes M in bucket 2.
        let restored = shared.refund(&7, grant);
        let j = shared.try_grant(&7, M).unwrap().is_granted();
        let p = p.join().unwrap();
        clock.set_nanos(3);
        // Spec at bucket 3 (window 1..=3): bucket 1 holds 0 (refunded) or M, bucket 2 holds
        // M if J was admitted. Either way, if J was admitted nothing more fits.
        let k1 = shared.try_acquire(&7);
        let k2 = shared.try_acquire(&7);
        assert!(
            !(j && (k1 || k2)),
            "restored {restored}, P {p}, J {j}, then at bucket 3: {k1} {k2}: over the limit"
        );
    });
    eprintln!(
        "explored {} executions",
        RUNS.load(std::sync::atomic::Ordering::Relaxed)
    );
}
