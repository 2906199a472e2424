//! A reconfiguration of the bucket engine converts the state at a reading no older than that
//! of any admission it follows: an engine reading the clock *before* loading the word would
//! re-rate an admission with a later reading landing in between backwards in time, and
//! `set_rate` to a faster rate would mint permits (clock-reversal minting). Deterministic: a clock whose reading is "preempted" by a hook.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{Spec, TokenBucketSpec};
use ringlimit::{BucketQuota, Rate, RateLimiter, TokenBucket};

type Hook = Box<dyn FnOnce() + Send>;

/// A manual clock; if a hook is armed, the next reading returns the time *then* runs the
/// hook before returning, exactly as if the reader were preempted right after its read.
#[derive(Clone)]
struct PreemptedClock {
    inner: ManualClock,
    hook: Arc<Mutex<Option<Hook>>>,
}

impl Clock for PreemptedClock {
    fn now_nanos(&self) -> u64 {
        let t = self.inner.now_nanos();
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        t
    }
}

fn every(nanos: u64) -> Rate {
    Rate::every(Duration::from_nanos(nanos)).unwrap()
}

/// A bucket of `burst` at one permit per 100 ns, full at 0, whose `set_rate(1 ns)` is
/// preempted right after its first clock reading (0): meanwhile the clock moves to 1000 and
/// another caller takes one permit (returned). The engine reads the clock after loading the
/// word and again after a failed CAS, so the conversion takes place at 1000.
fn set_rate_racing_an_admission(burst: u64) -> (Arc<TokenBucket<PreemptedClock>>, bool) {
    let inner = ManualClock::new();
    let clock = PreemptedClock {
        inner: inner.clone(),
        hook: Arc::default(),
    };
    let bucket = Arc::new(
        TokenBucket::builder(BucketQuota::new(every(100), burst).unwrap())
            .clock(clock.clone())
            .build(),
    );
    let cell: Arc<OnceLock<Arc<TokenBucket<PreemptedClock>>>> = Arc::default();
    cell.set(bucket.clone()).ok().unwrap();
    let first = Arc::new(Mutex::new(None));
    {
        let (cell, first, inner) = (cell.clone(), first.clone(), inner.clone());
        *clock.hook.lock().unwrap() = Some(Box::new(move || {
            inner.set_nanos(1000);
            *first.lock().unwrap() = Some(cell.get().unwrap().try_acquire());
        }));
    }
    bucket.set_rate(every(1)).unwrap();
    let first = first.lock().unwrap().take();
    (bucket, first == Some(true))
}

#[test]
fn set_rate_with_a_stale_reading_mints_no_permit() {
    let (bucket, first) = set_rate_racing_an_admission(1);
    assert!(first);
    // Still at 1000: under either configuration, with burst 1, at most one permit may be
    // admitted at a single instant; any real-time order of the three calls refuses this:
    for order in [0, 1] {
        let mut spec = TokenBucketSpec::new(every(100), 1).unwrap();
        if order == 0 {
            spec.set_rate(0, every(1)).unwrap();
            assert!(spec.decide(1000, 1).unwrap().is_admitted());
        } else {
            assert!(spec.decide(1000, 1).unwrap().is_admitted());
            spec.set_rate(1000, every(1)).unwrap();
        }
        assert!(!spec.decide(1000, 1).unwrap().is_admitted());
    }
    assert!(
        !bucket.try_acquire(),
        "a second permit at t=1000 with burst 1: set_rate converted tat=1100 at the stale \
         reading 0 (debt 1100 -> 1 + ceil(1000/100) = 11 ns), minting the permit"
    );
}

/// Burst 4: one permit taken at 1000 leaves three, in either order of the calls. The clamp
/// to `tat - τ` alone would not save a stale reading here (it converts as at 700, a full
/// bucket at the new rate by 1000): only reading the clock after the word does.
#[test]
fn set_rate_with_a_stale_reading_keeps_exactly_the_permits_left() {
    let (bucket, first) = set_rate_racing_an_admission(4);
    assert!(first);
    assert_eq!(bucket.available(), 3);
    assert!(!bucket.try_acquire_n(4).unwrap().is_admitted());
    assert!(bucket.try_acquire_n(3).unwrap().is_admitted());
}

/// The same with no concurrency at all: a clock reading that goes backwards (TSC across
/// cores) reaches the conversion, which, unlike an admission, is not made stricter
/// by an old reading; the conversion clamps its reading to `tat - τ` (spec and engine
/// alike), which here is the true reading 1000.
#[test]
fn set_rate_at_a_reversed_reading_mints_no_permit() {
    let clock = ManualClock::new();
    let bucket = TokenBucket::builder(BucketQuota::new(every(100), 1).unwrap())
        .clock(clock.clone())
        .build();
    clock.set_nanos(1000);
    assert!(bucket.try_acquire());
    clock.set_nanos(0); // one stale reading
    bucket.set_rate(every(1)).unwrap();
    clock.set_nanos(1000);
    assert!(
        !bucket.try_acquire(),
        "two permits at t=1000 with burst 1 in both configurations"
    );
}

/// The spec converts at a reversed reading as the engine does: the clamp is in the shared
/// transition.
#[test]
fn the_spec_clamps_a_reversed_reading_too() {
    let mut spec = TokenBucketSpec::new(every(100), 1).unwrap();
    assert!(spec.decide(1000, 1).unwrap().is_admitted());
    spec.set_rate(0, every(1)).unwrap();
    assert!(!spec.decide(1000, 1).unwrap().is_admitted());
    assert!(spec.decide(1001, 1).unwrap().is_admitted());
}
