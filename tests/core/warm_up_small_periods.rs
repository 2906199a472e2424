//! Warm-up at the smallest periods: with a period of 1 ns and a cold factor below 3 the
//! cooling per permit would be below 1 ns (spending a permit would give back all its
//! cooling and the limiter would never warm up), so such a cool-down is refused and a
//! saturated limiter warms up; and `WarmUp::footprint` is a padded cell and four
//! configuration slots. (The loom model of a fast refusal that some order of the spec
//! explains is with the other warm-up models in `loom-tests`.)

use std::time::Duration;

use ringlimit::clock::{Clock, ManualClock};
use ringlimit::{ConfigError, Rate, RateLimiter, WarmUp, WarmUpQuota};

fn quota(period: u64, warm_up: u64, factor: f64) -> Result<WarmUpQuota, ConfigError> {
    WarmUpQuota::new(
        Rate::every(Duration::from_nanos(period)).unwrap(),
        Duration::from_nanos(warm_up),
    )?
    .cold_factor(factor)
}

/// Below 1 ns of cooling per permit the curve is refused, at build and at `set_rate`.
#[test]
fn a_cool_down_below_one_nanosecond_is_refused() {
    assert_eq!(
        quota(1, 10_000, 2.9).unwrap_err(),
        ConfigError::CoolDownBelowOneNanosecond
    );
    let limiter = WarmUp::new(quota(10, 10_000, 2.9).unwrap());
    assert_eq!(
        limiter.set_rate(Rate::every(Duration::from_nanos(1)).unwrap()),
        Err(ConfigError::CoolDownBelowOneNanosecond)
    );
    // A cold factor of 3 at 1 ns is exactly 1 ns per permit: accepted.
    assert!(quota(1, 10_000, 3.0).is_ok());
}

/// Saturated (a permit taken whenever the limiter is free), the smallest accepted curves
/// warm up: the stored permits run out and the limiter ends at one permit per period.
#[test]
fn a_saturated_limiter_warms_up() {
    for (period, factor) in [(1, 3.0), (2, 1.2), (2, 2.5), (3, 1.0)] {
        let clock = ManualClock::new();
        let limiter = WarmUp::builder(quota(period, 10_000, factor).unwrap())
            .clock(clock.clone())
            .build();
        let mut admitted = 0u64;
        while admitted < 100_000 {
            let decision = limiter.try_acquire_n(1).unwrap();
            if decision.is_admitted() {
                admitted += 1;
            } else {
                clock.advance(decision.retry_after());
            }
        }
        assert_eq!(limiter.stored_permits(), 0.0, "T {period} c {factor}");
        // The last permits a period apart.
        let before = clock.now_nanos();
        for _ in 0..10 {
            while !limiter.try_acquire() {
                clock.advance_nanos(1);
            }
        }
        assert_eq!(
            clock.now_nanos() - before,
            10 * period,
            "T {period} c {factor}"
        );
    }
}

#[test]
fn footprint_is_a_padded_cell_and_a_configuration_of_four_slots() {
    let limiter = WarmUp::new(quota(100_000_000, 1_000_000_000, 3.0).unwrap());
    // 128 (the padded cell) + the configuration (four slots of eight u64s, its epoch, lock
    // and constants) + owner and clock.
    assert!(
        limiter.footprint() >= 128 + 4 * 64,
        "{}",
        limiter.footprint()
    );
}
