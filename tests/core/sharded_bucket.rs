//! The sharded bucket (`ShardedBucket`): exact with one shard and batch 1; with many shards
//! and threads never more than `burst + ⌊Δt/T⌋` in any interval (manual and real clocks);
//! under-admission within `S × (b − 1)`; drains on refund and reconfiguration.

use crate::common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::sharded::{drain, replay, Rewinds};
use common::stress::XorShift;
use common::{check_trace, every, ops};
use proptest::prelude::*;
use ringlimit::clock::{Clock, ManualClock, StdClock};
use ringlimit::outcome::Admission;
use ringlimit::spec::{LeakyBucketSpec, TokenBucketSpec};
use ringlimit::{BucketQuota, LeakyBucket, Rate, RateLimiter, ShardedBucket, TokenBucket};

/// The period used throughout, ns.
const T: u64 = 10;

fn rate() -> Rate {
    every(T)
}

fn token(burst: u64, shards: u64, batch: u64, clock: &ManualClock) -> ShardedBucket<ManualClock> {
    TokenBucket::builder(BucketQuota::new(rate(), burst).unwrap())
        .clock(clock.clone())
        .sharded()
        .shards(shards)
        .batch(batch)
        .build()
}

fn meter(burst: u64, shards: u64, batch: u64, clock: &ManualClock) -> ShardedBucket<ManualClock> {
    LeakyBucket::meter_builder(BucketQuota::new(rate(), burst).unwrap())
        .clock(clock.clone())
        .sharded()
        .shards(shards)
        .batch(batch)
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// One shard, batch 1: every call is one engine decision, exactly the spec's.
    #[test]
    fn one_shard_batch_one_token_matches_spec(burst in 1u64..8, trace in ops(T * 8, 8)) {
        let clock = ManualClock::new();
        let limiter = token(burst, 1, 1, &clock);
        let mut spec = TokenBucketSpec::new(rate(), burst).unwrap();
        check_trace(&limiter, &mut spec, &clock, &trace);
    }

    #[test]
    fn one_shard_batch_one_meter_matches_spec(burst in 1u64..8, trace in ops(T * 8, 8)) {
        let clock = ManualClock::new();
        let limiter = meter(burst, 1, 1, &clock);
        let mut spec = LeakyBucketSpec::meter(burst, rate()).unwrap();
        check_trace(&limiter, &mut spec, &clock, &trace);
    }

    /// Many shards, large batches: whatever it admits, the spec fed only those admissions
    /// admits too (GCRA accepts exactly the sequences within its bound).
    #[test]
    fn sharded_token_never_admits_what_the_spec_refuses(
        burst in 1u64..40,
        shards in 1u64..5,
        batch in 1u64..16,
        trace in ops(T * 8, 8),
    ) {
        let clock = ManualClock::new();
        let limiter = token(burst, shards, batch, &clock);
        let mut spec = TokenBucketSpec::new(rate(), burst).unwrap();
        replay(&limiter, &mut spec, &clock, &trace, Rewinds::Skip);
    }

    #[test]
    fn sharded_meter_never_admits_what_the_spec_refuses(
        burst in 1u64..40,
        shards in 1u64..5,
        batch in 1u64..16,
        trace in ops(T * 8, 8),
    ) {
        let clock = ManualClock::new();
        let limiter = meter(burst, shards, batch, &clock);
        let mut spec = LeakyBucketSpec::meter(burst, rate()).unwrap();
        replay(&limiter, &mut spec, &clock, &trace, Rewinds::Skip);
    }
}

/// Checks that `counts[p]` admissions at times `times[p]` (nondecreasing) never exceed
/// `burst + ⌊(t_q − t_p) / period⌋` over any run of phases `p..=q`.
fn assert_within_bound(times: &[u64], counts: &[u64], burst: u64, period: u64) {
    for p in 0..times.len() {
        let mut sum = 0;
        for q in p..times.len() {
            sum += counts[q];
            let allowed = burst + (times[q] - times[p]) / period;
            assert!(
                sum <= allowed,
                "phases {p}..={q} ({}..={} ns): {sum} admitted, {allowed} allowed",
                times[p],
                times[q]
            );
        }
    }
}

/// Threads hammer the limiter at a fixed reading per phase, the clock moving between
/// phases: the admissions per phase are exact, so the bound is checked exactly.
fn lockstep(limiter: ShardedBucket<ManualClock>, clock: ManualClock, burst: u64, phases: usize) {
    const THREADS: usize = 4;
    let limiter = Arc::new(limiter);
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (limiter, barrier) = (limiter.clone(), barrier.clone());
            thread::spawn(move || {
                let mut counts = Vec::with_capacity(phases);
                for _ in 0..phases {
                    barrier.wait();
                    counts.push((0..200).filter(|_| limiter.try_acquire()).count() as u64);
                    barrier.wait();
                }
                counts
            })
        })
        .collect();
    let mut rng = XorShift(11);
    let mut times = Vec::with_capacity(phases);
    for _ in 0..phases {
        times.push(clock.now_nanos());
        barrier.wait();
        barrier.wait();
        // Mostly less than a period, sometimes a refill of the whole bucket.
        let dt = match rng.next() % 8 {
            0 => burst * T,
            1..=3 => rng.next() % (3 * T),
            _ => rng.next() % T,
        };
        clock.advance_nanos(dt);
    }
    let per_thread: Vec<Vec<u64>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let counts: Vec<u64> = (0..phases)
        .map(|p| per_thread.iter().map(|c| c[p]).sum())
        .collect();
    let total: u64 = counts.iter().sum();
    let ideal = burst + (times[phases - 1] - times[0]) / T;
    eprintln!("lockstep: {total} admitted of at most {ideal}");
    assert_within_bound(&times, &counts, burst, T);
    // Callers always want more than the bucket has: it admits most of what it may.
    assert!(total * 2 >= ideal, "{total} of {ideal}");
}

#[test]
fn token_lockstep_never_over_admits() {
    let clock = ManualClock::new();
    lockstep(token(64, 4, 16, &clock), clock, 64, 600);
}

#[test]
fn meter_lockstep_never_over_admits() {
    let clock = ManualClock::new();
    lockstep(meter(32, 2, 64, &clock), clock, 32, 600);
}

/// Free-running on a real clock: each admission's reading lies in `[lo, hi]` (taken around
/// the call); every run of admissions whose readings lie in `[x, y]` must be within
/// `burst + ⌊(y − x)/T⌋`. Checked for runs starting at every admission, up to `span` long,
/// and for every run from the first admission.
#[test]
fn real_clock_free_running_never_over_admits() {
    const THREADS: usize = 8;
    const PERIOD: u64 = 2_000;
    const BURST: u64 = 50;
    let limiter = Arc::new(
        TokenBucket::builder(BucketQuota::new(every(PERIOD), BURST).unwrap())
            .clock(StdClock::new())
            .sharded()
            .shards(4)
            .batch(16)
            .build(),
    );
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let limiter = limiter.clone();
            thread::spawn(move || {
                let clock = limiter.clock();
                let start = clock.now_nanos();
                let mut log = Vec::new();
                while clock.now_nanos() - start < 150_000_000 {
                    let lo = clock.now_nanos();
                    if limiter.try_acquire() {
                        log.push((lo, clock.now_nanos()));
                    }
                }
                log
            })
        })
        .collect();
    let mut log: Vec<(u64, u64)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    log.sort_unstable();
    let span = 4 * BURST as usize;
    let check = |i: usize, j_end: usize| {
        let mut max_hi = 0;
        for (k, &(_, hi)) in log.iter().enumerate().take(j_end).skip(i) {
            max_hi = max_hi.max(hi);
            let count = (k - i + 1) as u64;
            let allowed = BURST + (max_hi - log[i].0) / PERIOD;
            assert!(
                count <= allowed,
                "admissions {i}..={k}: {count} > {allowed}"
            );
        }
    };
    for i in 0..log.len() {
        check(i, (i + span).min(log.len()));
    }
    check(0, log.len());
    eprintln!("real clock: {} admissions", log.len());
    assert!(log.len() as u64 > BURST);
}

#[test]
fn worst_case_under_admission_is_shards_times_batch_minus_one() {
    let clock = ManualClock::new();
    let (shards, batch) = (4, 8);
    let limiter = token(1_000, shards, batch, &clock);
    for shard in 0..shards as usize {
        assert!(limiter.try_acquire_on(shard));
    }
    // Each shard holds batch − 1 unused permits, which the engine counts as taken.
    assert_eq!(limiter.available(), 1_000 - shards * batch);
    // They are all usable at this reading: nothing is lost while they are used in time.
    let from_leases: u64 = (0..shards as usize)
        .map(|shard| {
            (0..batch - 1)
                .filter(|_| limiter.try_acquire_on(shard))
                .count() as u64
        })
        .sum();
    assert_eq!(from_leases, shards * (batch - 1));
    assert_eq!(limiter.available(), 1_000 - shards * batch);
}

#[test]
fn batch_shrinks_so_the_last_permits_go_one_by_one() {
    let clock = ManualClock::new();
    let limiter = token(40, 2, 64, &clock);
    // A single shard takes everything: 40 permits, leased in shrinking batches.
    assert_eq!(drain(&limiter, 0), 40);
    assert_eq!(limiter.available(), 0);
    // The other shard has nothing leased: exact.
    assert!(!limiter.try_acquire_on(1));
    clock.advance_nanos(T);
    assert!(limiter.try_acquire_on(1));
    assert!(!limiter.try_acquire_on(0));
}

#[test]
fn a_full_bucket_loses_nothing_to_lapsed_slots() {
    let clock = ManualClock::new();
    let limiter = token(100, 1, 16, &clock);
    assert!(limiter.try_acquire_on(0)); // leases 16 (100 / 2, capped), uses one
                                        // Long after: every slot of the lease has begun, the bucket is full again.
    clock.advance_nanos(1_000 * T);
    assert_eq!(drain(&limiter, 0), 100);
    assert_eq!(limiter.available(), 0);
}

#[test]
fn a_lease_expires_one_permit_per_period() {
    let clock = ManualClock::new();
    let limiter = token(100, 1, 16, &clock);
    assert!(limiter.try_acquire_on(0)); // slots 0..16 periods; fast permits from slot 1
    clock.advance_nanos(5 * T); // slots 1..=4 have begun: permits 5..=15 remain usable
    let before = limiter.available();
    assert_eq!((0..11).filter(|_| limiter.try_acquire_on(0)).count(), 11);
    assert_eq!(
        limiter.available(),
        before,
        "all eleven came from the lease"
    );
}

#[test]
fn set_limit_and_set_rate_drain_the_shards() {
    let clock = ManualClock::new();
    let limiter = token(100, 2, 8, &clock);
    assert!(limiter.try_acquire_on(0) && limiter.try_acquire_on(1));
    assert_eq!(limiter.available(), 84);
    limiter.set_limit(50).unwrap();
    assert_eq!(limiter.limit(), 50);
    // The dropped leases stay counted: 16 taken of the old 100, then the burst shrank.
    assert_eq!(limiter.available(), 50);
    assert_eq!(drain(&limiter, 0), 50);
    limiter.set_rate(every(2 * T)).unwrap();
    assert_eq!(limiter.rate(), every(2 * T));
    assert!(!limiter.try_acquire_on(1));
    clock.advance_nanos(2 * T);
    assert!(limiter.try_acquire_on(1));
}

#[test]
fn a_refund_drains_the_shards_and_never_mints() {
    let clock = ManualClock::new();
    let limiter = token(20, 2, 8, &clock);
    let Admission::Granted(grant) = limiter.try_grant(10).unwrap() else {
        panic!("a full bucket grants 10");
    };
    assert!(limiter.try_acquire_on(0)); // leases 10 / 4 = 2 behind the grant
                                        // The refund gives back what no later admission is scheduled behind: 10 − 2.
    assert_eq!(limiter.refund(grant), 8);
    // The shard's lease is gone (one permit used, one dropped): 20 − 2 − 2.
    assert_eq!(limiter.available(), 16);
    let total = drain(&limiter, 0) + drain(&limiter, 1);
    assert_eq!(total, 16);
}

#[test]
fn a_shaper_leases_one_permit_at_a_time() {
    let clock = ManualClock::new();
    let shaper = LeakyBucket::shaper_builder(
        ringlimit::ShaperQuota::new(rate(), Duration::from_nanos(5 * T)).unwrap(),
    )
    .clock(clock.clone())
    .sharded()
    .build();
    assert_eq!(shaper.max_batch(), 1);
    assert!(shaper.try_acquire_on(0));
    assert!(!shaper.try_acquire_on(1));
    clock.advance_nanos(T);
    assert!(shaper.try_acquire_on(1));
}

#[test]
fn unlimited_admits_everything() {
    let limiter = TokenBucket::builder(BucketQuota::unlimited())
        .sharded()
        .build();
    assert!((0..1_000).all(|_| limiter.try_acquire()));
    assert_eq!(limiter.available(), u64::MAX);
    assert!(limiter.set_limit(3).is_err());
}

/// After `set_rate` to a faster rate the old lease's slots (256 of 1 ms) bound the new
/// leases: a new lease keeps the fast permits whose slots begin on or above the old line
/// (here about 10, 10 ms after the change), rather than none until a new lease's last slot
/// passes the old one's (about 256 ms). The bucket is full again 10 ms after the change.
#[test]
fn a_faster_rate_gets_batches_again_once_the_bucket_is_full() {
    let clock = ManualClock::new();
    let limiter = TokenBucket::builder(
        BucketQuota::new(Rate::every(Duration::from_millis(1)).unwrap(), 1_000).unwrap(),
    )
    .clock(clock.clone())
    .sharded()
    .shards(1)
    .batch(256)
    .build();
    assert!(limiter.try_acquire_on(0)); // leases 256 slots of 1 ms
    assert_eq!(limiter.available(), 1_000 - 256);
    limiter
        .set_rate(Rate::every(Duration::from_micros(1)).unwrap())
        .unwrap();
    clock.advance(Duration::from_millis(10)); // τ' = 1 ms: full again
    assert_eq!(limiter.available(), 1_000);
    assert!(limiter.try_acquire_on(0));
    assert!(
        limiter.available() < 999,
        "no batch leased 10 ms (10 000 new periods) after the change: available {}",
        limiter.available()
    );
}

/// A refund that restores nothing (here no permits) and a reconfiguration refused as
/// invalid leave the shards' leases alone: no drain.
#[test]
fn refunds_that_restore_nothing_and_refused_changes_do_not_drain() {
    let clock = ManualClock::new();
    let limiter =
        TokenBucket::builder(BucketQuota::new(Rate::per_second(1_000).unwrap(), 100).unwrap())
            .clock(clock.clone())
            .sharded()
            .shards(2)
            .batch(8)
            .build();
    let Admission::Granted(empty) = limiter.try_grant(0).unwrap() else {
        panic!("a grant of 0 is granted");
    };
    assert!(limiter.try_acquire_on(0)); // leases 8: 7 held
    assert_eq!(limiter.available(), 92);
    assert_eq!(limiter.refund(empty), 0);
    assert!(limiter.set_limit(0).is_err());
    // The 7 held permits are still the shard's: using them takes nothing from the schedule.
    assert_eq!((0..7).filter(|_| limiter.try_acquire_on(0)).count(), 7);
    assert_eq!(limiter.available(), 92);
}
