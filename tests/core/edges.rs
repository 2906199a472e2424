//! Wraparound, overflow and bad input: nothing over-admits, nothing panics.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{check_trace, Op};
use ringlimit::clock::ManualClock;
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec};
use ringlimit::Wait;
use ringlimit::{ConfigError, ExceedsLimit, FixedWindow, RateLimiter, SlidingWindow, WindowQuota};

const MS: u64 = 1_000_000;

fn sliding(
    limit: u64,
    window: Duration,
    buckets: u64,
    clock: &ManualClock,
) -> SlidingWindow<ManualClock> {
    SlidingWindow::builder(
        WindowQuota::per(limit, window)
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .build()
}

/// Fills the window, jumps the clock by `jump` bucket widths, and checks the limiter
/// against its spec on both sides of the jump.
fn jump_trace(jump_buckets: u64) {
    let clock = ManualClock::new();
    let window = Duration::from_millis(4);
    let limiter = sliding(3, window, 4, &clock);
    let mut spec = SlidingWindowSpec::new(3, window, 4).unwrap();
    let trace = [
        Op::Many(2),
        Op::Advance(MS),
        Op::One,
        Op::One,
        Op::Advance(jump_buckets.saturating_mul(MS)),
        Op::Available,
        Op::One,
        Op::Advance(MS),
        Op::Many(2),
        Op::One,
        Op::Available,
        Op::Advance(3 * MS),
        Op::Available,
        Op::Many(3),
    ];
    check_trace(&limiter, &mut spec, &clock, &trace);
}

#[test]
fn clock_jumps_of_2_pow_32_and_2_pow_40_buckets() {
    for jump in [
        1 << 32,
        (1 << 32) + 1,
        1 << 40,
        (1 << 40) - 1,
        1 << 44,
        1 << 22,
        1 << 14,
        3 << 14,
        2,
        3,
        4,
        5,
    ] {
        jump_trace(jump);
    }
}

#[test]
fn stale_buckets_never_count_after_an_exact_multiple_of_the_tag_period() {
    // 2^14 buckets (the head tag's period) and 2^40 (the slot tag's period) later, the old
    // window's counts must be gone: a fresh window admits the whole limit.
    for jump in [1u64 << 14, 1 << 22, 1 << 40, 1 << 44] {
        let clock = ManualClock::new();
        let limiter = sliding(4, Duration::from_millis(4), 4, &clock);
        for _ in 0..3 {
            assert!(limiter.try_acquire());
            clock.advance_nanos(MS);
        }
        clock.advance_nanos(jump * MS - 3 * MS);
        assert_eq!(limiter.available(), 4, "jump {jump}");
        for _ in 0..4 {
            assert!(limiter.try_acquire(), "jump {jump}");
            clock.advance_nanos(MS / 2);
        }
        assert!(!limiter.try_acquire());
    }
}

#[test]
fn idle_for_years_then_busy() {
    let clock = ManualClock::new();
    let limiter = sliding(10, Duration::from_secs(1), 10, &clock);
    assert!(limiter.try_acquire_n(10).unwrap().is_admitted());
    clock.advance(Duration::from_secs(5 * 365 * 24 * 3600));
    assert_eq!(limiter.available(), 10);
    assert!(limiter.try_acquire_n(10).unwrap().is_admitted());
    assert!(!limiter.try_acquire());
}

#[test]
fn clock_at_the_end_of_time_saturates() {
    let clock = ManualClock::starting_at(u64::MAX - 5);
    let limiter = sliding(2, Duration::from_nanos(4), 4, &clock);
    let mut spec = SlidingWindowSpec::new(2, Duration::from_nanos(4), 4).unwrap();
    let trace = [
        Op::One,
        Op::Advance(100),
        Op::One,
        Op::One,
        Op::Available,
        Op::Many(2),
    ];
    check_trace(&limiter, &mut spec, &clock, &trace);
    let fixed = FixedWindow::builder(WindowQuota::per(1, Duration::from_nanos(1)).unwrap())
        .clock(clock.clone())
        .build();
    let mut spec = FixedWindowSpec::new(1, Duration::from_nanos(1)).unwrap();
    check_trace(&fixed, &mut spec, &clock, &trace);
}

#[test]
fn clock_going_backwards_never_reopens_a_window() {
    let clock = ManualClock::new();
    let limiter = FixedWindow::builder(WindowQuota::per(2, Duration::from_secs(1)).unwrap())
        .clock(clock.clone())
        .build();
    clock.set(Duration::from_secs(10));
    assert!(limiter.try_acquire_n(2).unwrap().is_admitted());
    clock.set(Duration::from_secs(3)); // an older window: joins window 10, which is full
    assert!(!limiter.try_acquire());
    assert_eq!(limiter.available(), 0);
    clock.set(Duration::from_secs(11));
    assert!(limiter.try_acquire());
}

#[test]
fn huge_limits_are_config_errors_not_panics() {
    let window = Duration::from_secs(1);
    assert_eq!(
        WindowQuota::per(u64::MAX, window)
            .and_then(|q| q.buckets(4))
            .unwrap_err(),
        ConfigError::LimitTooLarge {
            limit: u64::MAX,
            max: WindowQuota::MAX_LIMIT
        }
    );
    assert!(matches!(
        WindowQuota::per(WindowQuota::MAX_LIMIT + 1, window),
        Err(ConfigError::LimitTooLarge { .. })
    ));
    assert!(SlidingWindowSpec::new(u64::MAX, window, 4).is_err());
    let limiter = SlidingWindow::new(
        WindowQuota::per(SlidingWindow::MAX_LIMIT, window)
            .unwrap()
            .buckets(4)
            .unwrap(),
    );
    assert!(matches!(
        limiter.set_limit(u64::MAX),
        Err(ConfigError::LimitTooLarge { .. })
    ));
    assert_eq!(limiter.set_limit(0), Err(ConfigError::ZeroLimit));
    assert_eq!(limiter.limit(), SlidingWindow::MAX_LIMIT);
    assert_eq!(
        limiter.try_acquire_n(u64::MAX),
        Err(ExceedsLimit {
            requested: u64::MAX,
            limit: SlidingWindow::MAX_LIMIT
        })
    );
}

#[test]
fn bad_configurations_are_specific_errors() {
    let s = Duration::from_secs(1);
    assert_eq!(
        WindowQuota::per(0, s)
            .and_then(|q| q.buckets(4))
            .unwrap_err(),
        ConfigError::ZeroLimit
    );
    assert_eq!(
        WindowQuota::per(1, Duration::ZERO)
            .and_then(|q| q.buckets(4))
            .unwrap_err(),
        ConfigError::ZeroWindow
    );
    assert_eq!(
        WindowQuota::per(1, s)
            .and_then(|q| q.buckets(0))
            .unwrap_err(),
        ConfigError::ZeroBuckets
    );
    assert!(matches!(
        WindowQuota::per(1, Duration::from_nanos(3)).and_then(|q| q.buckets(4)),
        Err(ConfigError::BucketTooNarrow {
            window_nanos: 3,
            buckets: 4
        })
    ));
    assert!(matches!(
        WindowQuota::per(1, s).and_then(|q| q.buckets(5000)),
        Err(ConfigError::TooManyBuckets { .. })
    ));
    assert!(matches!(
        WindowQuota::per(1, Duration::from_secs(u64::MAX)),
        Err(ConfigError::WindowTooLong { .. })
    ));
    for err in [
        ConfigError::ZeroLimit,
        ConfigError::ZeroWindow,
        ConfigError::ZeroBuckets,
    ] {
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn counts_at_the_field_maximum_under_contention() {
    // The limit at its maximum, one permit left, four threads hammering: exactly one more
    // admission, and refusals never carry into the cap or the tag.
    let clock = ManualClock::new();
    let limiter = Arc::new(sliding(
        SlidingWindow::MAX_LIMIT,
        Duration::from_secs(1),
        2,
        &clock,
    ));
    assert!(limiter
        .try_acquire_n(SlidingWindow::MAX_LIMIT - 1)
        .unwrap()
        .is_admitted());
    let admitted: u64 = (0..4)
        .map(|_| {
            let limiter = limiter.clone();
            std::thread::spawn(move || {
                (0..200_000).filter(|_| limiter.try_acquire()).count() as u64
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .sum();
    assert_eq!(admitted, 1);
    assert_eq!(limiter.available(), 0);
    assert_eq!(limiter.limit(), SlidingWindow::MAX_LIMIT);
    // The next bucket still sees the whole window as used; two buckets later it is free.
    clock.advance(Duration::from_millis(500));
    assert_eq!(limiter.available(), 0);
    clock.advance(Duration::from_millis(500));
    assert_eq!(limiter.available(), SlidingWindow::MAX_LIMIT);
}

#[test]
fn zero_permits_are_admitted_without_effect() {
    let limiter = SlidingWindow::new(
        WindowQuota::per(1, Duration::from_secs(1))
            .unwrap()
            .buckets(1)
            .unwrap(),
    );
    assert_eq!(
        limiter.try_acquire_n(0),
        Ok(ringlimit::outcome::Decision::Admitted { remaining: 1 })
    );
    assert!(limiter.try_acquire());
    assert_eq!(
        limiter.try_acquire_n(0),
        Ok(ringlimit::outcome::Decision::Admitted { remaining: 0 })
    );
}

#[test]
fn footprints_are_as_documented() {
    let padded = SlidingWindow::new(
        WindowQuota::per(10, Duration::from_secs(1))
            .unwrap()
            .buckets(10)
            .unwrap(),
    );
    let compact = SlidingWindow::builder(
        WindowQuota::per(10, Duration::from_secs(1))
            .unwrap()
            .buckets(10)
            .unwrap(),
    )
    .compact()
    .build();
    let fixed = FixedWindow::builder(WindowQuota::per(10, Duration::from_secs(1)).unwrap())
        .compact()
        .build();
    eprintln!(
        "footprint: padded B=10 {} bytes, compact B=10 {} bytes, compact fixed {} bytes",
        padded.footprint(),
        compact.footprint(),
        fixed.footprint()
    );
    // CachePadded is 128 bytes on x86_64 (and aarch64), less elsewhere.
    #[cfg(target_arch = "x86_64")]
    assert_eq!(padded.footprint(), 384 + 10 * 128);
    // Compact: 72 bytes of engine plus the 8-byte owner id grants are stamped with.
    assert_eq!(compact.footprint(), 80 + 10 * 8);
    assert_eq!(fixed.footprint(), 80);
}

/// Runs `f` on a thread and fails (instead of hanging CI) if it has not returned within
/// 10 s: a wait that spins on a refusal that can never end fails here.
fn within_10s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    result
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what} did not return within 10 s: it spins"))
}

/// Limiters whose time stands still, each having admitted its only permit: FixedWindow(1,
/// 1 ns) at 2^62 + 1 ns (epochs saturate at 2^62), SlidingLog(1, 100 ns) past 2^61 ns, and a
/// WarmUp (1000/s, cold: its first permit costs 3 ms) built at 0 and read at 2^61 ns
/// (readings saturate at 2^60 ns).
fn saturated() -> Vec<(&'static str, Arc<dyn RateLimiter + Send + Sync>)> {
    let fixed = FixedWindow::builder(WindowQuota::per(1, Duration::from_nanos(1)).unwrap())
        .clock(ManualClock::starting_at((1 << 62) + 1))
        .build();
    let log = ringlimit::SlidingLog::with_clock(
        WindowQuota::per(1, Duration::from_nanos(100)).unwrap(),
        ManualClock::starting_at((1 << 61) + 50),
    )
    .unwrap();
    let warm_up = ringlimit::WarmUp::builder(
        ringlimit::WarmUpQuota::new(
            ringlimit::Rate::per_second(1000).unwrap(),
            Duration::from_secs(1),
        )
        .unwrap(),
    )
    .clock(ManualClock::new())
    .build();
    warm_up.clock().set_nanos(1 << 61);
    let all: Vec<(&'static str, Arc<dyn RateLimiter + Send + Sync>)> = vec![
        ("fixed window", Arc::new(fixed)),
        ("sliding log", Arc::new(log)),
        ("warm-up", Arc::new(warm_up)),
    ];
    for (name, limiter) in &all {
        assert!(limiter.try_acquire(), "{name}");
    }
    all
}

#[test]
fn refusals_in_saturated_time_never_say_retry_now() {
    for (name, limiter) in saturated() {
        let refused = limiter.try_acquire_n(1).unwrap();
        assert!(!refused.is_admitted(), "{name}");
        // The same call at the same time would be refused again: never "retry after 0".
        assert_eq!(refused.retry_after(), Duration::MAX, "{name}");
    }
}

#[test]
fn a_zero_timeout_in_saturated_time_is_one_attempt() {
    for (name, limiter) in saturated() {
        let result = within_10s(name, move || limiter.try_acquire_for(1, Duration::ZERO));
        assert!(
            matches!(result, Err(ringlimit::WaitError::Timeout { timeout, .. }) if timeout.is_zero()),
            "{name}: {result:?}"
        );
    }
}

#[test]
fn timed_waits_in_saturated_time_time_out_at_once() {
    for (name, limiter) in saturated() {
        let clock_before = limiter.clock().now_nanos();
        let probe = Arc::clone(&limiter);
        let result = within_10s(name, move || {
            probe.try_acquire_for(1, Duration::from_secs(1))
        });
        assert!(
            matches!(result, Err(ringlimit::WaitError::Timeout { .. })),
            "{name}: {result:?}"
        );
        // Nothing was slept: the wait knew at once.
        assert_eq!(limiter.clock().now_nanos(), clock_before, "{name}");
    }
}

#[test]
fn unbounded_waits_in_saturated_time_are_errors_not_spins() {
    for (name, limiter) in saturated() {
        let result = within_10s(name, move || limiter.acquire_n(1));
        assert_eq!(result, Err(ringlimit::WaitError::TimeExhausted), "{name}");
    }
}

#[cfg(feature = "tokio")]
#[test]
fn async_waits_in_saturated_time_are_errors_not_spins() {
    for (name, limiter) in saturated() {
        let result = within_10s(name, move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            runtime.block_on(async move { limiter.until_n_ready(1).await })
        });
        assert_eq!(result, Err(ringlimit::WaitError::TimeExhausted), "{name}");
    }
}
