//! The sharded window (`ShardedWindow`) against its guarantees: never more than the spec
//! (single-threaded replay, lock-step and free-running threads), exactly the spec with one
//! shard and batch 1, and never less than the spec minus the stated under-admission.

use crate::common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::sharded::{drain, replay, Rewinds};
use common::stress::{free_running, XorShift, THREADS, WIDTH};
use common::{check_trace, ops};
use proptest::prelude::*;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec, Spec};
use ringlimit::{ConfigError, FixedWindow, RateLimiter, ShardedWindow, SlidingWindow};
use ringlimit::{Wait, WindowQuota};

const WINDOW: u64 = 1_000;

fn sliding(
    limit: u64,
    buckets: u64,
    shards: u64,
    batch: u64,
    clock: &ManualClock,
) -> ShardedWindow<ManualClock> {
    SlidingWindow::builder(
        WindowQuota::per(limit, Duration::from_nanos(WIDTH * buckets))
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .sharded()
    .shards(shards)
    .batch(batch)
    .build()
}

fn fixed(limit: u64, shards: u64, batch: u64, clock: &ManualClock) -> ShardedWindow<ManualClock> {
    FixedWindow::builder(WindowQuota::per(limit, Duration::from_nanos(WIDTH)).unwrap())
        .clock(clock.clone())
        .sharded()
        .shards(shards)
        .batch(batch)
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // One shard, batch 1: every lease is the caller's own permit, nothing is left over.
    #[test]
    fn one_shard_batch_one_sliding_matches_spec(limit in 1u64..8, buckets in 1u64..6, trace in ops(WINDOW, 8)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WINDOW);
        let limiter = SlidingWindow::builder(WindowQuota::per(limit, window).unwrap().buckets(buckets).unwrap()).clock(clock.clone())
            .sharded().shards(1).batch(1).build();
        let mut spec = SlidingWindowSpec::new(limit, window, buckets).unwrap();
        check_trace(&limiter, &mut spec, &clock, &trace);
    }

    #[test]
    fn one_shard_batch_one_fixed_matches_spec(limit in 1u64..8, trace in ops(WINDOW, 8)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WINDOW);
        let limiter = FixedWindow::builder(WindowQuota::per(limit, window).unwrap()).clock(clock.clone())
            .sharded().shards(1).batch(1).build();
        let mut spec = FixedWindowSpec::new(limit, window).unwrap();
        check_trace(&limiter, &mut spec, &clock, &trace);
    }

    // Several shards and batches: it may admit less than the spec, never more.
    #[test]
    fn sharded_sliding_never_admits_what_the_spec_refuses(
        limit in 1u64..60, buckets in 1u64..6, shards in 1u64..5, batch in 1u64..9,
        trace in ops(WINDOW, 8),
    ) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WINDOW);
        let limiter = SlidingWindow::builder(WindowQuota::per(limit, window).unwrap().buckets(buckets).unwrap()).clock(clock.clone())
            .sharded().shards(shards).batch(batch).build();
        let mut spec = SlidingWindowSpec::new(limit, window, buckets).unwrap();
        replay(&limiter, &mut spec, &clock, &trace, Rewinds::Follow);
    }

    #[test]
    fn sharded_fixed_never_admits_what_the_spec_refuses(
        limit in 1u64..60, shards in 1u64..5, batch in 1u64..9, trace in ops(WINDOW, 8),
    ) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WINDOW);
        let limiter = FixedWindow::builder(WindowQuota::per(limit, window).unwrap()).clock(clock.clone())
            .sharded().shards(shards).batch(batch).build();
        let mut spec = FixedWindowSpec::new(limit, window).unwrap();
        replay(&limiter, &mut spec, &clock, &trace, Rewinds::Follow);
    }
}

/// Lock-step run (threads admit between barriers while the clock stands still): no step
/// admits more than the spec had available, and at the end of every step the permits the
/// spec still has but the shared window does not (leased, unused) are within `waste`.
/// Returns (calls, steps that ended in a refusal).
fn lockstep<S: Spec>(
    limiter: ShardedWindow<ManualClock>,
    mut spec: S,
    clock: ManualClock,
    steps: u64,
    waste: u64,
) -> (u64, u64) {
    const CALLS: u64 = 40;
    let limiter = Arc::new(limiter);
    let start = Arc::new(Barrier::new(THREADS + 1));
    let end = Arc::new(Barrier::new(THREADS + 1));
    let (tx, rx) = std::sync::mpsc::channel::<(u64, bool)>();
    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let (limiter, start, end, tx) =
                (limiter.clone(), start.clone(), end.clone(), tx.clone());
            thread::spawn(move || {
                let mut rng = XorShift(0x51A7_ED00 + id as u64);
                for _ in 0..steps {
                    start.wait();
                    let (mut admitted, mut refused) = (0, false);
                    for _ in 0..CALLS {
                        let n = if rng.next() % 8 == 0 { 2 } else { 1 };
                        let ok = if n == 1 {
                            limiter.try_acquire()
                        } else {
                            limiter.try_acquire_n(n).is_ok_and(|d| d.is_admitted())
                        };
                        if ok {
                            admitted += n;
                        } else {
                            refused |= n == 1;
                        }
                    }
                    tx.send((admitted, refused)).unwrap();
                    end.wait();
                }
            })
        })
        .collect();
    let mut rng = XorShift(42);
    let mut full_steps = 0;
    for step in 0..steps {
        let dt = match rng.next() % 16 {
            0 => WIDTH * (1 + rng.next() % 64),
            1..=6 => rng.next() % WIDTH,
            _ => 0,
        };
        clock.advance_nanos(dt);
        let now = clock.now_nanos();
        let before = spec.available(now);
        start.wait();
        end.wait();
        let (mut admitted, mut refused) = (0, false);
        for (a, r) in rx.try_iter() {
            admitted += a;
            refused |= r;
        }
        assert!(
            admitted <= before,
            "step {step}: admitted {admitted} of {before}"
        );
        let mut left = admitted;
        while left > 0 {
            let chunk = left.min(spec.limit());
            assert!(spec.decide(now, chunk).unwrap().is_admitted());
            left -= chunk;
        }
        let (shared, exact) = (limiter.available(), spec.available(now));
        assert!(
            shared <= exact,
            "step {step}: shared window has {shared} > {exact}"
        );
        assert!(
            exact - shared <= waste,
            "step {step}: {} leased and unused > {waste}",
            exact - shared
        );
        if refused {
            // A single permit is refused only once the shared window is empty.
            assert_eq!(
                shared, 0,
                "step {step}: refused with {shared} in the shared window"
            );
            full_steps += 1;
        }
    }
    drop(tx);
    for w in workers {
        w.join().unwrap();
    }
    (steps * THREADS as u64 * CALLS, full_steps)
}

#[test]
fn fixed_lockstep_within_bounds() {
    // 4 shards, batch 8: at most min(4 × 7, 200 / 2) = 28 unused per bucket.
    let clock = ManualClock::new();
    let limiter = fixed(200, 4, 8, &clock);
    let spec = FixedWindowSpec::new(200, Duration::from_nanos(WIDTH)).unwrap();
    let (calls, full) = lockstep(limiter, spec, clock, 1500, 4 * 7);
    eprintln!("sharded fixed lockstep: {calls} calls, {full} steps ended full");
    assert!(full > 100, "too few steps reached the limit: {full}");
}

#[test]
fn sliding_lockstep_within_bounds() {
    // Each of the B = 4 buckets in the window may carry up to 2 × 3 unused (2 shards, batch 4).
    let clock = ManualClock::new();
    let limiter = sliding(100, 4, 2, 4, &clock);
    let spec = SlidingWindowSpec::new(100, Duration::from_nanos(WIDTH * 4), 4).unwrap();
    let (calls, full) = lockstep(limiter, spec, clock, 1500, 4 * 2 * 3);
    eprintln!("sharded sliding lockstep: {calls} calls, {full} steps ended full");
    assert!(full > 100, "too few steps reached the limit: {full}");
}

#[test]
fn sliding_free_running_never_over_admits() {
    let (limit, buckets) = (40, 8);
    let clock = ManualClock::new();
    let limiter = sliding(limit, buckets, 4, 4, &clock);
    let (calls, admitted, epochs) = free_running(limiter, clock, limit, buckets, 5_000);
    eprintln!(
        "sharded sliding free-running: {calls} calls, {admitted} admissions, {epochs} epochs"
    );
    assert!(
        calls > 1_000_000,
        "too few calls to stress anything: {calls}"
    );
}

#[test]
fn fixed_free_running_never_over_admits() {
    let clock = ManualClock::new();
    let limiter = fixed(30, 4, 8, &clock);
    let (calls, admitted, epochs) = free_running(limiter, clock, 30, 1, 5_000);
    eprintln!("sharded fixed free-running: {calls} calls, {admitted} admissions, {epochs} epochs");
    assert!(
        calls > 1_000_000,
        "too few calls to stress anything: {calls}"
    );
}

#[test]
fn worst_case_under_admission_is_shards_times_batch_minus_one() {
    // Shards 1..=3 each lease a full batch of 8, use one and go idle: 3 × 7 left unused.
    let clock = ManualClock::new();
    let limiter = fixed(1000, 4, 8, &clock);
    for shard in 1..4 {
        assert!(limiter.try_acquire_on(shard));
    }
    let admitted = 3 + drain(&limiter, 0);
    assert_eq!(admitted, 1000 - 3 * 7);
    assert!(admitted >= 1000 - 4 * 7);
    // The next bucket starts afresh: the leftovers expired with their epoch.
    clock.advance_nanos(WIDTH);
    assert_eq!(drain(&limiter, 1) + drain(&limiter, 2), 1000);
}

#[test]
fn batch_shrinks_so_a_nearly_full_window_wastes_little() {
    // Limit 20, 4 shards, batch 8: the first lease is 20 / 8 = 2, later ones 1: the idle
    // shards hold at most half the bucket, here 3 permits.
    let clock = ManualClock::new();
    let limiter = fixed(20, 4, 8, &clock);
    for shard in 1..4 {
        assert!(limiter.try_acquire_on(shard));
    }
    assert_eq!(limiter.available(), 20 - 2 - 2 - 2);
    let admitted = 3 + drain(&limiter, 0);
    assert_eq!(admitted, 20 - 3);
}

#[test]
fn leases_never_survive_epoch_wraparound() {
    for jump in [1u64 << 32, 1 << 40] {
        let clock = ManualClock::new();
        let limiter = fixed(100, 2, 8, &clock);
        // Both shards hold 7 leased permits of epoch 0.
        assert!(limiter.try_acquire_on(0) && limiter.try_acquire_on(1));
        clock.advance_nanos(jump * WIDTH);
        let admitted = drain(&limiter, 0) + drain(&limiter, 1);
        assert_eq!(admitted, 100, "jump of {jump} buckets");
    }
}

#[test]
fn a_lagging_clock_never_spends_a_lease_the_window_has_left() {
    // Sliding, B = 2, limit 10: epoch 0 is full (shard 0 holds one leased permit of it).
    let clock = ManualClock::new();
    let limiter = sliding(10, 2, 2, 2, &clock);
    assert!(limiter.try_acquire_on(0));
    assert!(limiter.try_acquire_n(8).unwrap().is_admitted());
    clock.set_nanos(WIDTH); // epoch 1: nothing left in the window of epochs 0 and 1
    assert!(!limiter.try_acquire_on(1));
    clock.set_nanos(0); // a lagging reading joins epoch 1: the epoch-0 lease is stale
    assert!(!limiter.try_acquire_on(0));
    assert_eq!(limiter.available(), 0);
}

#[test]
fn set_limit_takes_unused_leases_back() {
    let clock = ManualClock::new();
    let limiter = fixed(100, 2, 8, &clock);
    assert!(limiter.try_acquire_on(0) && limiter.try_acquire_on(1));
    assert_eq!(limiter.available(), 100 - 16);
    limiter.set_limit(2).unwrap();
    assert!(!limiter.try_acquire_on(0) && !limiter.try_acquire_on(1));
    assert_eq!((limiter.limit(), limiter.available()), (2, 0));
    limiter.set_limit(20).unwrap();
    assert_eq!(limiter.available(), 18);
    assert_eq!(drain(&limiter, 0) + drain(&limiter, 1), 18);
    assert_eq!(limiter.set_limit(0), Err(ConfigError::ZeroLimit));
}

#[test]
fn waits_and_n_permit_calls_go_to_the_shared_window() {
    let clock = ManualClock::new();
    let limiter = fixed(2, 1, 4, &clock);
    assert_eq!(limiter.acquire(), Duration::ZERO);
    assert_eq!(limiter.acquire_n(1).unwrap(), Duration::ZERO);
    assert_eq!(limiter.acquire(), Duration::from_nanos(WIDTH));
    assert!(limiter.try_acquire_n(3).is_err());
    assert!(limiter.try_acquire_n(0).unwrap().is_admitted());
}

#[test]
fn sharding_out_of_range_is_clamped() {
    let build = |shards, batch| {
        let limiter = SlidingWindow::builder(WindowQuota::per(10, Duration::from_secs(1)).unwrap())
            .sharded()
            .shards(shards)
            .batch(batch)
            .build();
        (limiter.shards(), limiter.max_batch())
    };
    let (max_shards, max_batch) = (ShardedWindow::MAX_SHARDS, ShardedWindow::MAX_BATCH);
    assert_eq!(build(3, 1), (4, 1));
    assert_eq!(
        build(max_shards, max_batch),
        (max_shards as usize, max_batch)
    );
    assert_eq!(build(0, 0), (1, 1));
    assert_eq!(
        build(max_shards + 1, max_batch + 1),
        (max_shards as usize, max_batch)
    );
    assert_eq!(build(u64::MAX, u64::MAX), (max_shards as usize, max_batch));
    assert!(WindowQuota::per(0, Duration::from_secs(1)).is_err());
    let default = FixedWindow::builder(WindowQuota::per(10, Duration::from_secs(1)).unwrap())
        .sharded()
        .build();
    assert!(default.shards().is_power_of_two());
    assert!(format!("{default:?}").contains("ShardedWindow"));
}
