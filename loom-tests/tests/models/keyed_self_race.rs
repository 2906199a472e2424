//! A key racing itself at the `max_keys` bound is never refused as `Full`. (Eviction against
//! raises, backward readings and idle maps is in the root crate's `tests/keyed/eviction.rs`.)
//!
//! Run: `bash loom-tests/run keyed_self_race::`
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
