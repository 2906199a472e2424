//! `WindowQuota` accepts limits up to 2^40 − 1, but its other consumers (the window cells,
//! the sliding log, the approximate window) pack the limit in 20 bits. Each of them, built
//! from a quota just above 2^20 − 1, refuses it with a typed error when built: no truncated
//! limit, no panic, no over-admission.

use std::time::Duration;

use ringlimit::cell::{FixedWindowCell, WindowConfig};
use ringlimit::clock::ManualClock;
use ringlimit::{ApproxSlidingWindow, ConfigError, RateLimiter, SlidingLog, WindowQuota};

const NARROW: u64 = (1 << 20) - 1;

/// The keyed windows' configuration packed the limit in 20 bits (release: 2^20 became 0 and
/// the cell refused everything): it now refuses such a quota, naming its own bound.
#[test]
fn window_config_refuses_a_quota_limit_past_2_pow_20() {
    let quota = WindowQuota::per_second(NARROW + 1).unwrap();
    assert_eq!(
        WindowConfig::new(quota).err(),
        Some(ConfigError::LimitTooLarge {
            limit: NARROW + 1,
            max: NARROW
        })
    );
    let config = WindowConfig::new(WindowQuota::per_second(NARROW).unwrap()).unwrap();
    let cell: FixedWindowCell = FixedWindowCell::new();
    assert!(cell.try_acquire(&config, &ManualClock::new()));
}

/// `LogConfig::with_max_limit` clamped `max_limit.clamp(quota.limit(), 2^20 - 1)`, which
/// panicked (min > max) on a quota limit above the ceiling: now a typed refusal.
#[test]
fn sliding_log_refuses_a_quota_past_2_pow_20_without_panicking() {
    let quota = WindowQuota::per_second(NARROW + 1).unwrap();
    let result =
        std::panic::catch_unwind(|| SlidingLog::with_clock(quota, ManualClock::new()).err());
    assert_eq!(
        result.expect("SlidingLog::with_clock panicked on a valid WindowQuota"),
        Some(ConfigError::LimitTooLarge {
            limit: NARROW + 1,
            max: NARROW
        })
    );
}

/// The approximate window's `cur` counter is 20 bits; a quota of 2^21 − 1 let `cur` carry
/// into `prev` (release: 4 194 304 admitted against 2 097 151): now refused when built.
#[test]
fn approx_window_refuses_a_quota_past_2_pow_20() {
    let limit = (1 << 21) - 1;
    let quota = WindowQuota::per_second(limit).unwrap();
    assert_eq!(
        ApproxSlidingWindow::with_clock(quota, ManualClock::new()).err(),
        Some(ConfigError::LimitTooLarge { limit, max: NARROW })
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
