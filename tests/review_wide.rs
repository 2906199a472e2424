//! Review of the wide window change: `WindowQuota` now accepts limits up to 2^40 − 1, but
//! the other consumers of a `WindowQuota` (the window cells, the sliding log, the
//! approximate window) still pack the limit in 20 bits. Each test builds one of them from a
//! quota just above 2^20 − 1, which `WindowQuota` validated, and expects the limit to hold.
//! Before the change such a quota was a `ConfigError::LimitTooLarge`.

use std::time::Duration;

use ringlimit::cell::{FixedWindowCell, WindowConfig};
use ringlimit::clock::ManualClock;
use ringlimit::{ApproxSlidingWindow, RateLimiter, SlidingLog, WindowQuota};

const NARROW: u64 = (1 << 20) - 1;

/// The keyed windows' configuration truncates the limit to its low 20 bits (release: 2^20
/// becomes 0 and the cell refuses everything; debug: `Setting::pack`'s assertion panics).
#[test]
fn window_config_keeps_a_quota_limit_past_2_pow_20() {
    let quota = WindowQuota::per_second(NARROW + 1).unwrap();
    let config = WindowConfig::new(quota);
    assert_eq!(config.limit(), NARROW + 1);
    let clock = ManualClock::new();
    let cell: FixedWindowCell = FixedWindowCell::new();
    assert!(cell.try_acquire(&config, &clock));
}

/// `LogConfig::with_max_limit` clamps `max_limit.clamp(quota.limit(), 2^20 - 1)`: with a
/// quota limit above the ceiling `clamp` panics (min > max), in every build.
#[test]
fn sliding_log_from_a_valid_quota_past_2_pow_20_does_not_panic() {
    let quota = WindowQuota::per_second(NARROW + 1).unwrap();
    let result = std::panic::catch_unwind(|| {
        let log = SlidingLog::with_clock(quota, ManualClock::new());
        log.try_acquire()
    });
    assert!(
        result.is_ok(),
        "SlidingLog::with_clock panicked on a valid WindowQuota"
    );
}

/// The approximate window's `cur` counter is 20 bits; a quota of 2^21 − 1 lets `cur` carry
/// into `prev` (release: over-admission; debug: `Head::pack`'s assertion panics).
#[test]
fn approx_window_never_admits_more_than_its_quota_past_2_pow_20() {
    let limit = (1 << 21) - 1;
    let quota = WindowQuota::per_second(limit).unwrap();
    let limiter = ApproxSlidingWindow::with_clock(quota, ManualClock::new());
    let mut admitted = 0;
    for _ in 0..8 {
        if let Ok(decision) = limiter.try_acquire_n(1 << 19) {
            if decision.is_admitted() {
                admitted += 1 << 19;
            }
        }
    }
    assert!(
        admitted <= limit,
        "admitted {admitted} of {limit} in one window"
    );
}

/// The narrow window refuses `set_limit` above 2^20 − 1 with an error (no panic, no
/// truncation), and its decisions stay those of its limit.
#[test]
fn narrow_window_refuses_a_wide_set_limit() {
    let limiter =
        ringlimit::FixedWindow::builder(WindowQuota::per(3, Duration::from_secs(1)).unwrap())
            .clock(ManualClock::new())
            .build();
    assert_eq!(limiter.max_limit(), NARROW);
    assert!(matches!(
        limiter.set_limit(NARROW + 1),
        Err(ringlimit::ConfigError::LimitTooLarge { .. })
    ));
    assert_eq!(limiter.limit(), 3);
}
