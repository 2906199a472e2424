//! Loom models of sliding-window cells sharing one configuration
//! (`ringlimit::cell::SlidingWindowCell`): rollovers to different buckets racing each other,
//! and limit changes racing rollovers and decisions.
//!
//! Run (about four minutes on 2 cores):
//! `bash loom-tests/run sliding_cells::`

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::cell::Compact;
use ringlimit::cell::{SlidingConfig, SlidingWindowCell};
use ringlimit::clock::ManualClock;
use ringlimit::outcome::Decision;
use ringlimit::spec::{SlidingWindowSpec, Spec};
use ringlimit::WindowQuota;

/// A configuration of `limit` per `B` ns in `B` buckets of 1 ns, and one cell.
fn setup<const B: usize>(limit: u64) -> Arc<(SlidingConfig<B>, SlidingWindowCell<B, Compact>)> {
    let quota = WindowQuota::per(limit, Duration::from_nanos(B as u64))
        .and_then(|q| q.buckets(B as u64))
        .unwrap();
    Arc::new((SlidingConfig::new(quota).unwrap(), SlidingWindowCell::new()))
}

/// A clock standing at `nanos` (each thread reads its own, so readings differ on purpose).
fn at(nanos: u64) -> ManualClock {
    let clock = ManualClock::new();
    clock.set_nanos(nanos);
    clock
}

/// Limit 3 over 3 buckets; 2 admitted in bucket 3 and 1 in bucket 4. One caller reads bucket
/// 5 (a near rollover: the window 3..=5 is full, so it is refused unless it joins a later
/// bucket), another bucket 7 (a far one: nothing of the window survives). Linearizable
/// outcomes: the far caller is admitted; the near one is admitted only after it (joining
/// bucket 7, with 1 of 3 used), and then bucket 7 holds 2. Rollovers to different targets
/// race publishing, sealing, emptying skipped buckets and installing: a helper that emptied
/// the buckets its own reading skips, rather than those the sealed head fixes, erased bucket
/// 3 under a rollover to bucket 5 (as when the seal did not carry the distance).
#[test]
fn near_and_far_rollovers_racing_agree_with_one_order() {
    loom::model(|| {
        let shared = setup::<3>(3);
        assert!(shared
            .1
            .try_acquire_n(&shared.0, &at(3), 2)
            .unwrap()
            .is_admitted());
        assert!(shared.1.try_acquire(&shared.0, &at(4)));
        let near = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire(&shared.0, &at(5)))
        };
        // Lets the near caller seal first without spending a preemption: the erasing race
        // then needs only two (the near caller's install overtaking the far helper's).
        loom::thread::yield_now();
        let far = shared.1.try_acquire(&shared.0, &at(7));
        let near = near.join().unwrap();
        assert!(far, "the far caller sees an empty window");
        let left = shared.1.available(&shared.0, &at(7));
        assert_eq!(left, if near { 1 } else { 2 }, "near admitted: {near}");
        // Bucket 8's window (6..=8) still holds a permit the near caller took by joining
        // bucket 7; one counted in bucket 5 (admitted on a window that lost bucket 3's
        // permits to a helper emptying the buckets of another target) has left it.
        let later = shared.1.available(&shared.0, &at(8));
        assert_eq!(later, if near { 1 } else { 2 }, "near admitted: {near}");
    });
}

/// Whether some order of `calls` (reading, admitted?) run on the spec (after `before`)
/// gives the same outcomes and leaves `left` available at `check`. A call may take effect at
/// a later reading than its own, one another racing call took (the contract: "at a time the
/// clock could have shown inside the call"), as a caller joining the bucket a racing caller
/// rolled the window to does, even when that caller decides after it.
fn explained(before: &[u64], calls: &[(u64, bool)], check: u64, left: u64) -> bool {
    let orders: &[&[usize]] = &[
        &[0, 1, 2],
        &[0, 2, 1],
        &[1, 0, 2],
        &[1, 2, 0],
        &[2, 0, 1],
        &[2, 1, 0],
    ];
    let readings: Vec<u64> = calls.iter().map(|&(now, _)| now).collect();
    orders.iter().any(|order| {
        // Each call's time: its own reading or a later one of another call.
        let mut choices: Vec<Vec<u64>> = vec![Vec::new()];
        for &i in order.iter() {
            let own = readings[i];
            let options: Vec<u64> = std::iter::once(own)
                .chain(readings.iter().copied().filter(|&r| r > own))
                .collect();
            choices = choices
                .into_iter()
                .flat_map(|times| {
                    options.iter().map(move |&t| {
                        let mut times = times.clone();
                        times.push(t);
                        times
                    })
                })
                .collect();
        }
        choices.iter().any(|times| {
            let mut spec = SlidingWindowSpec::new(2, Duration::from_nanos(2), 2).unwrap();
            for &now in before {
                spec.decide(now, 1).unwrap();
            }
            order
                .iter()
                .zip(times)
                .all(|(&i, &t)| spec.decide(t, 1).unwrap().is_admitted() == calls[i].1)
                && spec.available(check) == left
        })
    })
}

/// Limit 2 over 2 buckets; 1 admitted in bucket 0. Two callers in bucket 1 take 1 each while
/// a third, in bucket 2, takes 1: publishing bucket 1, sealing and installing race the
/// bucket-1 admissions. Some order of the three calls on the spec must give the same
/// outcomes and leave the same count at bucket 2 (nothing lost, nothing counted twice).
#[test]
fn rollovers_by_several_callers_never_lose_or_double_a_bucket() {
    loom::model(|| {
        let shared = setup::<2>(2);
        assert!(shared.1.try_acquire(&shared.0, &at(0)));
        let callers: Vec<_> = [1, 1]
            .into_iter()
            .map(|nanos| {
                let shared = shared.clone();
                loom::thread::spawn(move || shared.1.try_acquire(&shared.0, &at(nanos)))
            })
            .collect();
        let late = shared.1.try_acquire(&shared.0, &at(2));
        let early: Vec<bool> = callers.into_iter().map(|c| c.join().unwrap()).collect();
        let left = shared.1.available(&shared.0, &at(2));
        let calls = [(1, early[0]), (1, early[1]), (2, late)];
        assert!(
            explained(&[0], &calls, 2, left),
            "no order explains {calls:?} leaving {left}"
        );
    });
}

/// The limit is cut from 2 to 1 while a caller takes 2 permits of an empty cell; then a
/// checker reads `available`. Admitted under 2 before the cut (the checker sees 0), or
/// `ExceedsLimit` under 1 (the checker sees 1). Every call that sees the new limit relabels
/// the head before deciding, so a call still deciding under the old limit fails its CAS and
/// decides again; a stale admission landing after the checker's read would give "admitted"
/// and 1.
#[test]
fn a_stale_call_never_lands_after_a_newer_snapshot() {
    loom::model(|| {
        let shared = setup::<2>(2);
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &at(0), 2))
        };
        shared.0.set_limit(1).unwrap();
        let seen = shared.1.available(&shared.0, &at(0));
        match caller.join().unwrap() {
            Ok(decision) => {
                assert!(decision.is_admitted(), "{decision:?}");
                assert_eq!(seen, 0, "admitted under limit 2, yet the cut left 1");
            }
            Err(exceeds) => {
                assert_eq!(exceeds.limit, 1);
                assert_eq!(seen, 1);
            }
        }
    });
}

/// The limit is cut from 2 to 1 while a caller in bucket 1 takes 1 beside bucket 0's
/// permit (a rollover under the old label racing the change); then a checker reads
/// `available`. Admitted under 2 before the cut (the checker sees 0), or refused under 1
/// (the checker sees 0 too, bucket 0's permit still counting) - never a count that lost the
/// rolled bucket, and never an admission the checker's later snapshot does not see.
#[test]
fn a_limit_change_racing_a_rollover_is_one_instant() {
    loom::model(|| {
        let shared = setup::<2>(2);
        assert!(shared.1.try_acquire(&shared.0, &at(0)));
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &at(1), 1))
        };
        shared.0.set_limit(1).unwrap();
        let seen = shared.1.available(&shared.0, &at(1));
        let outcome = caller.join().unwrap().unwrap();
        assert_eq!(seen, 0, "{outcome:?}");
        match outcome {
            Decision::Admitted { remaining } => assert_eq!(remaining, 0),
            Decision::Refused { available, .. } => assert_eq!(available, 0),
        }
        // Bucket 2's window (1..=2) holds the caller's permit if it was admitted.
        let later = shared.1.available(&shared.0, &at(2));
        assert_eq!(later, if outcome.is_admitted() { 0 } else { 1 });
    });
}

/// The first defect of issue 8 on the cell: limit 2 over 20 ns in 2 buckets; 2 admitted at
/// 5 ns; at 25 ns the limit is cut to 1 while a caller asks for 2. Either the caller is
/// admitted under 2 (the window 10..30 ns then holds 2, nothing left at 8 ns), or it gets
/// `ExceedsLimit` under 1 having moved the window to bucket 2 first, as the spec does, so
/// that 8 ns (joining bucket 2) sees the 5 ns permits gone: 1 left.
#[test]
fn exceeds_limit_moves_the_window_as_the_spec_does() {
    loom::model(|| {
        let quota = WindowQuota::per(2, Duration::from_nanos(20))
            .and_then(|q| q.buckets(2))
            .unwrap();
        let shared = Arc::new((
            SlidingConfig::<2>::new(quota).unwrap(),
            SlidingWindowCell::<2, Compact>::new(),
        ));
        assert!(shared
            .1
            .try_acquire_n(&shared.0, &at(5), 2)
            .unwrap()
            .is_admitted());
        let caller = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire_n(&shared.0, &at(25), 2))
        };
        shared.0.set_limit(1).unwrap();
        let outcome = caller.join().unwrap();
        let left = shared.1.available(&shared.0, &at(8));
        match outcome {
            Ok(decision) => {
                assert!(decision.is_admitted(), "{decision:?}");
                assert_eq!(left, 0);
            }
            Err(exceeds) => {
                assert_eq!(exceeds.limit, 1);
                assert_eq!(left, 1, "ExceedsLimit without moving the window");
            }
        }
    });
}

/// A far seal carries its target, which every helper installs (not `max(helper's reading,
/// f + B)`, a bucket no call had read). Limit 2, 4 buckets of 1 ns, fresh cell: S (reading
/// 100) seals bucket 0 as a far jump; H (reading 1) helps; K1 (reading 7, n = 2) and K2
/// (reading 8, n = 2). With H admitted in bucket 4, K1 would see H's permit and be refused
/// while K2 and S were admitted: no order of the four calls at readings any of them took
/// gives that.
#[test]
fn a_far_install_lands_on_the_sealing_callers_bucket() {
    loom::model(|| {
        let shared = setup::<4>(2);
        let sealer = {
            let shared = shared.clone();
            loom::thread::spawn(move || shared.1.try_acquire(&shared.0, &at(100)))
        };
        let (config, cell) = (&shared.0, &shared.1);
        let helper = cell.try_acquire(config, &at(1));
        let k1 = cell.try_acquire_n(config, &at(7), 2).unwrap();
        let k2 = cell.try_acquire_n(config, &at(8), 2).unwrap();
        let sealed = sealer.join().unwrap();
        assert!(
            !(helper && !k1.is_admitted() && k2.is_admitted() && sealed),
            "helper {helper}, K1 {k1:?}, K2 {k2:?}, sealer {sealed}"
        );
    });
}
