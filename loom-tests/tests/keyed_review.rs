//! Regressions from the independent review of the first keyed limiter, each failing on that
//! version: F1 a limit raised during a sweep dropped live cells; F3 a backwards reading after
//! an eviction over-admitted; F4 a key racing itself at the bound got a spurious `Full`; F5 a
//! map full of idle keys refused new keys until the next sweep trigger. (F2, a full bucket
//! dropped before a burst raise coming back with the new burst, is fixed by keyed buckets
//! keeping a full bucket full: `tests/keyed_review.rs`.)
#![cfg(loom)]
use loom::sync::Arc;
use ringlimit::cell::WindowConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{FixedWindows, Keyed};
use ringlimit::WindowQuota;
use std::time::Duration;

/// max_keys 1, limit 2: two requests on ONE new key. Per-key spec: both admitted.
#[test]
fn one_key_racing_itself_at_the_bound_is_never_full() {
    loom::model(|| {
        let clock = ManualClock::new();
        let quota = WindowQuota::per(2, Duration::from_nanos(10)).unwrap();
        let shared: Arc<Keyed<u64, FixedWindows, ManualClock>> = Arc::new(
            Keyed::with_config(WindowConfig::new(quota).unwrap(), clock.clone()).max_keys(1),
        );
        let other = {
            let s = shared.clone();
            loom::thread::spawn(move || s.try_acquire_n(&7, 1))
        };
        let mine = shared.try_acquire_n(&7, 1);
        let theirs = other.join().unwrap();
        assert!(mine.is_ok() && theirs.is_ok(), "{mine:?} {theirs:?}");
    });
}
