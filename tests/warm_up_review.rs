//! Review of `WarmUp` (branch review-warmup): demonstrations of the findings. Each test asserts
//! the behaviour the rustdoc/spec documents; the ones that fail show a deviation.

use std::time::Duration;

use ringlimit::clock::ManualClock;
use ringlimit::spec::{Spec, Step, WarmUpSpec};
use ringlimit::{Rate, RateLimiter, Reserve, WarmUp};

fn guava(clock: &ManualClock) -> WarmUp<ManualClock> {
    WarmUp::builder(Rate::per_second(2).unwrap(), Duration::from_secs(4))
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Finding 1. `set_limit`/`set_rate` document "Reservations made before it can no longer be
/// cancelled", but the generation is 3 bits: after 8 reconfigurations that leave the state
/// bits alone (`set_limit` never touches them; `set_rate` with a queue ahead only rescales
/// the stored permits, and 0.0 stays 0.0), the word is bit for bit the reservation's `after`
/// and the cancel goes through.
#[test]
fn eight_set_limits_revive_cancellation_review() {
    let clock = ManualClock::new();
    let limiter = guava(&clock);
    let _first = limiter.reserve(1).unwrap();
    let second = limiter.reserve(3).unwrap();
    assert_eq!(limiter.stored_permits(), 4.0);
    for _ in 0..8 {
        limiter.set_limit(100).unwrap();
    }
    second.cancel();
    // Documented: made before a reconfiguration, so nothing is given back (4.0).
    assert_eq!(limiter.stored_permits(), 4.0, "cancel went through after 8 set_limits");
}

/// Same with `set_rate`, ending at another rate: the state put back holds the stored permits
/// in the *old* curve's units (7 of max 8) under the new curve (max 16), unscaled; the run
/// where the reservation never happened would hold 14, the documented run 0.
#[test]
fn eight_set_rates_restore_an_unscaled_state_review() {
    let clock = ManualClock::new();
    let limiter = guava(&clock);
    let _first = limiter.reserve(1).unwrap();
    // Spends all 7 stored permits: `after.stored` is 0.0, invariant under rescaling.
    let second = limiter.reserve(7).unwrap();
    for _ in 0..8 {
        limiter.set_rate(Rate::per_second(4).unwrap()).unwrap();
    }
    second.cancel();
    let lock_free = limiter.stored_permits();

    // The spec does the same (it compares the packed state, gen mod 8 included).
    let mut spec =
        WarmUpSpec::new(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0).unwrap();
    spec.attempt(0, 1, Duration::MAX).unwrap();
    let Step::Granted(ticket) = spec.attempt(0, 7, Duration::MAX).unwrap() else {
        unreachable!()
    };
    for _ in 0..8 {
        spec.set_rate(0, Rate::per_second(4).unwrap()).unwrap();
    }
    spec.cancel(0, &ticket);
    assert_eq!(spec.stored_permits(0), lock_free, "spec and lock-free agree");

    // Documented: the cancel does nothing (0.0); it gives back 7.0.
    assert_eq!(lock_free, 0.0, "cancel went through after 8 set_rates");
}

/// Finding 2. A cold factor so large that `2 W / (T + C)` is below half an ulp of the
/// threshold makes `max == threshold` (slope +inf): the warm-up region vanishes and a cold
/// limiter is at once at the stable rate, while a smaller factor gives a cold start costing
/// about W. The configuration is accepted (C = 2^55 ns <= 2^58).
#[test]
fn a_huge_cold_factor_loses_the_warm_up_review() {
    let second_delay = |factor: f64| {
        let clock = ManualClock::new();
        let limiter = WarmUp::builder(
            Rate::every(Duration::from_nanos(1)).unwrap(),
            Duration::from_nanos(1 << 20),
        )
        .cold_factor(factor)
        .clock(clock)
        .build()
        .unwrap();
        let _ = limiter.reserve(1).unwrap();
        limiter.reserve(1).unwrap().delay()
    };
    let smaller = second_delay((1u64 << 54) as f64);
    let larger = second_delay((1u64 << 55) as f64);
    // About W = 2^20 ns with 2^54.
    assert!(smaller >= Duration::from_nanos(1 << 19), "{smaller:?}");
    // A colder factor must not make the cold start faster.
    assert!(larger >= smaller, "cold factor 2^55: {larger:?} vs 2^54: {smaller:?}");
}

/// Finding 3 (edge). `set_rate` scales `stored * new_max / old_max` without capping; with
/// `stored == old max` the rounding can leave `stored > new max` (here 3/s to 3/s on a
/// fresh limiter at t = 0). `cancel`'s plausibility check (`stored <= max`) then refuses to
/// give back a reservation made at that instant.
#[test]
fn rescaled_stored_above_max_blocks_cancel_review() {
    let clock = ManualClock::new();
    let limiter = WarmUp::builder(Rate::per_second(3).unwrap(), Duration::from_secs(4))
        .clock(clock.clone())
        .build()
        .unwrap();
    let max = limiter.stored_permits();
    limiter.set_rate(Rate::per_second(3).unwrap()).unwrap();
    let stored = limiter.stored_permits();
    assert!(stored > max, "rounding did not exceed max here: {stored} vs {max}");
    let reservation = limiter.reserve(1).unwrap();
    assert_eq!(reservation.delay(), Duration::ZERO);
    reservation.cancel();
    // Documented: at now <= act_at with nothing after it, the cancel puts the state back.
    assert_eq!(limiter.stored_permits(), stored, "cancel refused");
}

/// Checked correct (passes): a reading older than a racing `set_rate`'s is refused with a
/// tiny retry time although the limiter was free throughout; allowed by the contract as the
/// loom harness reads it (a step may be decided at any time shown so far), stated here.
#[test]
fn stale_reading_after_set_rate_is_refused_review() {
    let clock = ManualClock::new();
    let limiter = guava(&clock);
    clock.set_nanos(10_000_000_000);
    limiter.set_rate(Rate::per_second(2).unwrap()).unwrap();
    clock.set_nanos(9_999_999_999); // a reading taken before set_rate's
    let decision = limiter.try_acquire_n(1).unwrap();
    assert_eq!(decision.retry_after(), Duration::from_nanos(1));
}
