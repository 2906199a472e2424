//! Loom models of the bucket engine's reconfiguration: the conversion's clock reading against racing admissions, and the ABA
//! residual of the eight configuration slots.
//!
//! Run (a few seconds):
//! `bash loom-tests/run gcra_reconfig::`

use crate::bucket_model;

use std::time::Duration;

use bucket_model::{admitted, every, Model, Op};
use loom::sync::Arc;
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::spec::{LeakyBucketSpec, TokenBucketSpec};
use ringlimit::{BucketQuota, LeakyBucket, RateLimiter, ShaperQuota, TokenBucket};

/// One permit every 100 ns, burst 1.
const T: u64 = 100;

fn bucket(clock: ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(BucketQuota::new(every(T), 1).unwrap())
        .clock(clock)
        .build()
}

fn spec() -> TokenBucketSpec {
    TokenBucketSpec::new(every(T), 1).unwrap()
}

/// `set_rate` (to 1 per ns, burst still 1) races a caller that moves the clock to 1000 and
/// takes two permits. With burst 1 in both configurations, two permits at the one instant
/// 1000 exceed `b + r·Δt = 1` under any order. The engine once read the clock (0) before
/// loading the word: an admission at 1000 landing in between (tat 1100) was converted at 0
/// (tat 11), and the second `try_acquire` at 1000 was admitted. Now the reading comes after
/// the load (and after every failed CAS), and the admission's CAS is Release, so the
/// conversion's reading is at least 1000; the harness checks that (a reconfiguration reads
/// no older than any call before it that wrote), and the bound is exact.
#[test]
fn set_rate_never_converts_at_a_reading_older_than_an_admission() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket,
        spec,
        start: 0,
        setup: &[],
        threads: &[&[Op::SetRate(1)], &[Op::SetClock(1000), Op::One, Op::One]],
        probes: &[1001],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1, "{seen:?}"));
}

/// The same race with a reservation queued a burst ahead (tat 1200 at 1000): the faster rate
/// starts where the queue ends, never ahead of it, whenever the conversion lands.
#[test]
fn set_rate_races_a_queued_reservation() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket,
        spec,
        start: 0,
        setup: &[],
        threads: &[
            &[Op::SetRate(1)],
            &[Op::SetClock(1000), Op::One, Op::Reserve(1, u64::MAX)],
        ],
        probes: &[1100, 1101],
    };
    MODEL.check(|seen| assert_eq!(admitted(seen), 1, "{seen:?}"));
}

/// A shaper's `set_max_wait` races a call: the per-call limit follows the wait (`max(1,
/// ⌊max_wait / T⌋)`), and the call is decided wholly under one of the two.
#[test]
fn set_max_wait_races_a_large_call() {
    fn shaper(clock: ManualClock) -> LeakyBucket<ManualClock> {
        LeakyBucket::shaper_builder(ShaperQuota::new(every(10), Duration::from_nanos(30)).unwrap())
            .clock(clock)
            .build()
    }
    fn shaper_spec() -> LeakyBucketSpec {
        LeakyBucketSpec::shaper(every(10), Duration::from_nanos(30)).unwrap()
    }
    static MODEL: Model<LeakyBucket<ManualClock>, LeakyBucketSpec> = Model {
        build: shaper,
        spec: shaper_spec,
        start: 0,
        setup: &[],
        threads: &[&[Op::SetMaxWait(0)], &[Op::Acquire(3)]],
        probes: &[10, 30],
    };
    MODEL.check(|_| {});
}

/// The ABA residual stated in the docs of `TokenBucket`: a reader stalled between its load
/// of the word and its CAS across a multiple of eight reconfigurations that left the time
/// where it was reads slot fields stored by two configurations, and may decide under a mix
/// of them (never a value outside them, and never overflowing). Setup: burst 8 at T = 10
/// (slot 0 = (10, 80, 8)); seven `set_limit`s (7..=1) and a `set_rate(5)` that rewrites
/// slot 0 = (5, 5, 1), all at clock 0 with the bucket full, so the word returns to exactly
/// (time 0, gen 0). A configuration in force admits `try_acquire_n(1)` with `remaining <=
/// 7`; the mix (5, 80, ·) gives `remaining = 15`, the mix (10, 5, ·) refuses, 5 ns early.
#[test]
fn aba_reader_decides_under_at_most_a_mix_of_two_configurations() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bucket = Arc::new(
            TokenBucket::builder(BucketQuota::new(every(10), 8).unwrap())
                .clock(clock)
                .build(),
        );
        let reader = {
            let bucket = bucket.clone();
            loom::thread::spawn(move || bucket.try_acquire_n(1))
        };
        for limit in (1..=7).rev() {
            bucket.set_limit(limit).unwrap();
        }
        bucket.set_rate(every(5)).unwrap();
        let decision = reader.join().unwrap();
        let mixed = [
            Ok(Decision::Admitted { remaining: 15 }),
            Ok(Decision::Refused {
                available: 0,
                retry_after: Duration::from_nanos(5),
            }),
        ];
        assert!(
            matches!(decision, Ok(Decision::Admitted { remaining }) if remaining <= 7)
                || mixed.contains(&decision),
            "decided under values never stored in the slot: {decision:?}"
        );
    });
}
