//! Loom models of the sharded bucket (`ShardedBucket`): callers placed on shards explicitly
//! (`try_acquire_on`), at the bucket's last permits, against a lease whose slots begin while
//! it is used (the slot rule), with one shard (exact), against the drains of a refund and
//! of `set_rate` (their clock readings, the held permits they drop), and against a caller
//! holding slots older than its shard's lease (the bound).
//!
//! Each model states what it allows: never more than `burst + ⌊Δt/T⌋` admissions over the
//! readings it uses (no over-admission), and the exact under-admission its state permits.

use crate::sharded_model;

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use loom_tests::spawn_with;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Admission;
use ringlimit::{BucketQuota, Rate, RateLimiter, ShardedBucket, TokenBucket};
use sharded_model::{mover, moving_user, race, user};

/// The period of the models that refill, ns.
const T: u64 = 10;

/// A sharded token bucket of `burst`, one permit per `period` ns.
fn bucket(
    burst: u64,
    period: u64,
    shards: u64,
    batch: u64,
    clock: &ManualClock,
) -> ShardedBucket<ManualClock> {
    let rate = Rate::every(Duration::from_nanos(period)).unwrap();
    TokenBucket::builder(BucketQuota::new(rate, burst).unwrap())
        .clock(clock.clone())
        .sharded()
        .shards(shards)
        .batch(batch)
        .build()
}

// Burst 8, no refill within the model; two shards, batch 2. Shard 0 holds one leased
// permit and the shared schedule has one left. Three callers, two on shard 0 and one on
// shard 1: exactly 2 admitted. More would be over-admission; fewer is impossible because
// the schedule's last permits are leased one at a time.
#[test]
fn two_shards_at_the_last_permits() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(8, 3_600_000_000_000, 2, 2, &clock));
        assert!(limiter.try_acquire_on(0)); // leases 8 / 4 = 2: one used, one left
        assert!(limiter.try_acquire_n(5).unwrap().is_admitted());
        assert_eq!(limiter.available(), 1);
        assert_eq!(race(&limiter, &[0, 0, 1]), 2);
        assert_eq!(limiter.available(), 0);
        assert!(!limiter.try_acquire_on(1) && !limiter.try_acquire_on(0));
    });
}

// Burst 4, T = 10 ns, one shard, batch 2: at reading 0 shard 0 leases 2 (slots [0, 10) and
// [10, 20)) and holds the second. One caller moves the clock to 100 (the bucket is full
// again there) and takes a permit; another takes one at whatever reading it sees. The held
// permit's slot has begun by 100: it may serve only a caller still reading 0. Then the main
// thread takes all it can at 100. At reading 100 at most the burst, 4, is admitted (a
// permit used past its slot would make it 5), and, nothing being held or lost there, at
// least 4 in all at 100 counting both racers.
#[test]
fn a_lease_whose_slots_begin_while_it_is_used() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(4, T, 1, 2, &clock));
        assert!(limiter.try_acquire_on(0));
        let mover = moving_user(&limiter, &clock, 100);
        let stayer = {
            let (limiter, clock) = (limiter.clone(), clock.clone());
            thread::spawn(move || {
                let before = clock.now_nanos();
                let admitted = limiter.try_acquire_on(0);
                // The reading it decided at, if nothing moved meanwhile.
                (before, clock.now_nanos(), admitted)
            })
        };
        let moved = u64::from(mover.join().unwrap());
        let (before, after, stayed) = stayer.join().unwrap();
        let mut at_100 = moved;
        if stayed && before == 100 {
            at_100 += 1;
        }
        // Drain at 100 through the shard and the schedule.
        at_100 += (0..8).filter(|_| limiter.try_acquire_on(0)).count() as u64;
        assert!(at_100 <= 4, "{at_100} admitted at reading 100, burst 4");
        // Under-admission: none here. Counting the stayer wherever it read, at least the
        // burst was admitted after the lease (a permit it took at reading 0 from a lease
        // of 100 is one of the slots 100 would have had).
        let stayer_elsewhere = u64::from(stayed && before != 100);
        assert!(
            at_100 + stayer_elsewhere >= 4,
            "{at_100} + {stayer_elsewhere} < 4 (moved {moved}, stayer {before}..{after}: {stayed}, {limiter:?})"
        );
    });
}

// One shard, batch 1: every call is one engine decision. Burst 2, no refill: three callers
// race, exactly two admitted, and nothing is left.
#[test]
fn one_shard_batch_one_is_exact() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(2, 3_600_000_000_000, 1, 1, &clock));
        assert_eq!(race(&limiter, &[0, 0, 0]), 2);
        assert_eq!(limiter.available(), 0);
    });
}

// A refund (a drain: freeze every shard, refund, reopen) must read the clock after every
// fast-path use it drains: the use's add is Release and the freeze's CAS Acquire. Without
// that order (a Relaxed add) this model over-admits. It also fails with the drain removed. Burst 16, T = 10 ns, one shard, batch 4. At reading 0 a grant of 8 moves
// the schedule to 80 (mark 80); shard 0 leases 4 (slots [80, 120)), uses [80, 90) and holds
// three, the latest slot [110, 120) first. The main thread moves the clock to 110 while a
// user takes a permit on shard 0 and another thread refunds the grant. If the user read 110
// it used the held permit of slot [110, 120) (deadline 110) through the fast path's add. Had
// the refund's clock read returned 0 after its freeze saw that add, it would restore
// min(80 - (120 - 80), 80 - 0) = 40 ns, four permits, although the schedule ahead of 110
// holds the user's slot: the bucket full again at 110 (16), and with the user's permit 17
// admitted at one reading, burst 16.
#[test]
fn a_refund_reads_the_clock_after_the_fast_uses_it_drains() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(16, T, 1, 4, &clock));
        let Admission::Granted(grant) = limiter.try_grant(8).unwrap() else {
            panic!("a full bucket grants 8");
        };
        assert!(limiter.try_acquire_on(0)); // leases 8 / 2 = 4: one used, three held
        let user = user(&limiter, &clock);
        let refunder = spawn_with(&limiter, move |limiter| limiter.refund(grant));
        clock.set_nanos(110);
        let (before, used) = user.join().unwrap();
        let restored = refunder.join().unwrap();
        let drained = (0..20).filter(|_| limiter.try_acquire_on(0)).count() as u64;
        let at_110 = u64::from(used && before == 110) + drained;
        assert!(
            at_110 <= 16,
            "{at_110} admitted at reading 110, burst 16 (refund restored {restored})"
        );
    });
}

// `set_rate` must convert at a clock reading no older than that of any fast-path use it
// drains (as the refund above); it also fails with the drain removed (the held permit used
// at 10 after a conversion that kept the schedule's permits). Burst 4, T = 10 ns, one shard, batch 2: at reading 0 shard 0
// leases [0, 20), uses [0, 10) and holds [10, 20) (deadline 10). The main thread moves the
// clock to 10 while a user takes a permit on shard 0 and another thread doubles the rate
// (T' = 5, burst 4). If the user read 10 and used the held permit and the conversion, after
// a freeze that saw that use, still read 0, it would keep 2 permits at 0 (time 20 → 10): at
// 10 the schedule then has 4, and with the user's permit 5 admitted at reading 10.
// Converting at 10 leaves 3 (time 15): 4 in all.
#[test]
fn set_rate_reads_the_clock_after_the_fast_uses_it_drains() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(4, T, 1, 2, &clock));
        assert!(limiter.try_acquire_on(0)); // leases 2: one used, one held
        let user = user(&limiter, &clock);
        let changer = spawn_with(&limiter, |limiter| {
            limiter
                .set_rate(Rate::every(Duration::from_nanos(T / 2)).unwrap())
                .unwrap()
        });
        clock.set_nanos(T);
        let (before, used) = user.join().unwrap();
        changer.join().unwrap();
        let drained = (0..10).filter(|_| limiter.try_acquire_on(0)).count() as u64;
        let at_10 = u64::from(used && before == T) + drained;
        assert!(at_10 <= 4, "{at_10} admitted at reading 10, burst 4");
    });
}

// A refund that restores drops the leases taken after the grant: fails with the drain
// removed (it replaces a model whose refund restored nothing, so passed without it). Burst 16, T = 10 ns, two
// shards, batch 2: a grant of 8 at 0 (mark 80), then shard 0 leases [80, 100) and holds
// [90, 100) (deadline 90). A refund at reading 0 restores at least 50 ns (time 100 or 110 →
// 50 or 60) racing a user on shard 1 (which goes to the engine). At reading 60 the bucket
// is full again: 16 may pass, and a held permit that survived the refund (deadline 90)
// would make 17.
#[test]
fn a_refund_that_restores_drains_the_held_permit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(16, T, 2, 2, &clock));
        let Admission::Granted(grant) = limiter.try_grant(8).unwrap() else {
            panic!("a full bucket grants 8");
        };
        assert!(limiter.try_acquire_on(0)); // leases 8 / 4 = 2: one used, one held
        let refunder = spawn_with(&limiter, move |limiter| limiter.refund(grant));
        // 6 left: straight to the engine.
        let user = spawn_with(&limiter, |limiter| limiter.try_acquire_on(1));
        let restored = refunder.join().unwrap();
        let _ = user.join().unwrap();
        clock.set_nanos(60);
        let at_60 = (0..20).filter(|_| limiter.try_acquire_on(0)).count() as u64;
        assert!(
            at_60 <= 16,
            "{at_60} admitted at reading 60, burst 16 (restored {restored})"
        );
    });
}

// The shard's bound on its stored slots: a caller that loads the stored slots of a lease the
// refund dropped and lands its add on a later lease whose slots begin earlier. Burst 16,
// T = 10 ns, one shard, batch 2: a grant of 8 at 0 (mark 80); shard 0 leases [80, 100) and
// holds [90, 100) (deadline 90, stored `first` 90). A refund at reading 0 restores 60 ns
// (time 100 → 40) and drains; the main thread refills the shard at reading 0: [40, 50) for
// itself, [50, 60) held. A caller reading 60 whose `first` load still returns 90 (its word
// load is Relaxed) checks 60 <= 90 and takes the permit of slot [50, 60), begun at 50: with
// the 16 the full bucket has at 60, 17 at one reading. The bound (the old slots, `first` 90)
// leaves such a lease no fast permit (its `first` 50 < 90): the main thread's call goes to
// the engine directly, or its lease is its single permit, so no fast permit exists to take.
#[test]
fn a_stale_caller_on_a_lease_whose_slots_begin_earlier() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(16, T, 1, 2, &clock));
        let Admission::Granted(grant) = limiter.try_grant(8).unwrap() else {
            panic!("a full bucket grants 8");
        };
        assert!(limiter.try_acquire_on(0)); // leases 2: one used, one held
        let refunder = spawn_with(&limiter, move |limiter| limiter.refund(grant));
        let mover = mover(&clock, 60);
        let user = user(&limiter, &clock);
        let before_main = clock.now_nanos();
        let main_ok = limiter.try_acquire_on(0);
        refunder.join().unwrap();
        mover.join().unwrap();
        let (before, used) = user.join().unwrap();
        clock.set_nanos(60);
        let drained = (0..20).filter(|_| limiter.try_acquire_on(0)).count() as u64;
        let at_60 =
            u64::from(used && before == 60) + u64::from(main_ok && before_main == 60) + drained;
        assert!(at_60 <= 16, "{at_60} admitted at reading 60, burst 16");
    });
}

// A caller holding the first lease's slots (fast slots 10, 20, 30 at
// T = 10) races `set_rate` to T' = 1 ns, the changer's own call (which, at reading 0,
// leases under the new rate: start 4, fast slots 5, 6, 7, all below the old line), and the
// clock moving to 25. A caller that paired the old slots with that lease would pass its
// deadline check (30 >= 25) on a slot that began at 7. Burst 16 (τ' = 16 ns: full again at
// 25): at most 16 admitted at reading 25.
#[test]
fn a_stale_caller_across_a_faster_rate() {
    let mut model = loom::model::Builder::new();
    model.max_branches = 100_000; // the final drain's calls load the engine word often
    model.check(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(bucket(16, T, 1, 4, &clock));
        assert!(limiter.try_acquire_on(0)); // leases 4: fast slots 10, 20, 30
        let changer = spawn_with(&limiter, |limiter| {
            limiter
                .set_rate(Rate::every(Duration::from_nanos(1)).unwrap())
                .unwrap();
            let before = limiter.clock().now_nanos();
            (before, limiter.try_acquire_on(0))
        });
        let mover = mover(&clock, 25);
        let user = user(&limiter, &clock);
        let (cb, cok) = changer.join().unwrap();
        mover.join().unwrap();
        let (ub, uok) = user.join().unwrap();
        clock.set_nanos(25);
        let drained = (0..20).filter(|_| limiter.try_acquire_on(0)).count() as u64;
        let at_25 = u64::from(uok && ub == 25) + u64::from(cok && cb == 25) + drained;
        assert!(at_25 <= 16, "{at_25} admitted at reading 25, burst 16");
    });
}
