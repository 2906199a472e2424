//! Quotas: building from one cannot fail (or, for the limiters that hold smaller limits
//! than a window quota, fails only on the limit, with a typed error), and the unlimited,
//! empty-start and budget quotas behave as documented, against the specs where there is one.

use std::time::Duration;

use ringlimit::cell::Compact;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::{FixedWindowSpec, SlidingLogSpec, SlidingWindowSpec, Spec};
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, ConcurrencyLimit, ConcurrencyLimiter, ConcurrencyQuota,
    ConfigError, FixedWindow, LeakyBucket, Rate, RateLimiter, ShaperQuota, ShardedWindow,
    SlidingLog, SlidingWindow, TokenBucket, Wait, WarmUp, WarmUpQuota, WindowQuota,
};

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Every limiter but the log and the approximate window is built from its quota with no
/// `Result` in sight: the annotations would not compile if any of these returned one.
#[test]
fn building_from_a_quota_cannot_fail() {
    let window = WindowQuota::per_second(10).unwrap();
    let bucket = BucketQuota::per_second(10).unwrap();
    let shaper = ShaperQuota::per_second(10).unwrap();
    let warm = WarmUpQuota::new(Rate::per_second(10).unwrap(), Duration::from_secs(1)).unwrap();
    let concurrency = ConcurrencyQuota::new(3).unwrap();
    let _: SlidingWindow = SlidingWindow::new(window);
    let _: SlidingWindow<ManualClock, Compact> = SlidingWindow::builder(window)
        .clock(ManualClock::new())
        .compact()
        .build();
    let _: FixedWindow = FixedWindow::new(window);
    let _: ShardedWindow = SlidingWindow::builder(window).sharded().shards(2).build();
    let _: ShardedWindow = FixedWindow::builder(window).sharded().batch(0).build();
    let _: Result<SlidingLog, ConfigError> = SlidingLog::new(window);
    let _: Result<ApproxSlidingWindow, ConfigError> = ApproxSlidingWindow::new(window);
    let _: TokenBucket = TokenBucket::new(bucket);
    let _: LeakyBucket = LeakyBucket::meter(bucket);
    let _: LeakyBucket = LeakyBucket::shaper(shaper);
    let _: WarmUp = WarmUp::new(warm);
    let _: ConcurrencyLimiter = ConcurrencyLimiter::new(concurrency);
    // The same quota, copied, builds as many limiters as wanted (a keyed map's insert).
    let many: Vec<SlidingWindow<ManualClock, Compact>> = (0..100)
        .map(|_| {
            SlidingWindow::builder(window)
                .clock(ManualClock::new())
                .compact()
                .build()
        })
        .collect();
    assert!(many.iter().all(|limiter| limiter.limit() == 10));
}

/// The log and the approximate window hold smaller limits than a window quota: a quota
/// beyond theirs is refused with their bound named, one within it builds, and an unlimited
/// quota is no limit to hold.
#[test]
fn limiters_of_smaller_bounds_refuse_larger_quotas() {
    let clock = ManualClock::new();
    let hourly = WindowQuota::per_hour(10_000_000).unwrap();
    let refused = |max| {
        Some(ConfigError::LimitTooLarge {
            limit: 10_000_000,
            max,
        })
    };
    assert_eq!(
        SlidingLog::new(hourly).err(),
        refused(SlidingLog::MAX_LIMIT)
    );
    assert_eq!(
        SlidingLog::with_clock(hourly, clock.clone()).err(),
        refused(SlidingLog::MAX_LIMIT)
    );
    assert_eq!(
        ApproxSlidingWindow::new(hourly).err(),
        refused(ApproxSlidingWindow::MAX_LIMIT)
    );
    assert_eq!(
        ApproxSlidingWindow::with_clock(hourly, clock.clone()).err(),
        refused(ApproxSlidingWindow::MAX_LIMIT)
    );
    let largest = WindowQuota::per_hour(SlidingLog::MAX_LIMIT).unwrap();
    let log = SlidingLog::with_clock(largest, clock.clone()).unwrap();
    assert_eq!(log.limit(), SlidingLog::MAX_LIMIT);
    let largest = WindowQuota::per_hour(ApproxSlidingWindow::MAX_LIMIT).unwrap();
    let approx = ApproxSlidingWindow::with_clock(largest, clock.clone()).unwrap();
    assert_eq!(approx.limit(), ApproxSlidingWindow::MAX_LIMIT);
    assert!(SlidingLog::new(WindowQuota::unlimited()).is_ok());
    assert!(ApproxSlidingWindow::new(WindowQuota::unlimited()).is_ok());
}

/// The extremes a quota accepts build limiters that work (the bucketed windows' extremes:
/// their engine's largest limit).
#[test]
fn extreme_quotas_build_working_limiters() {
    let clock = ManualClock::new();
    let widest = WindowQuota::per(
        SlidingWindow::MAX_LIMIT,
        Duration::from_nanos(WindowQuota::MAX_WINDOW_NANOS),
    )
    .unwrap()
    .buckets(WindowQuota::MAX_BUCKETS)
    .unwrap();
    let sliding = SlidingWindow::builder(widest).clock(clock.clone()).build();
    assert!(sliding
        .try_acquire_n(SlidingWindow::MAX_LIMIT)
        .unwrap()
        .is_admitted());
    let narrowest = WindowQuota::per(1, Duration::from_nanos(1)).unwrap();
    let fixed = FixedWindow::builder(narrowest).clock(clock.clone()).build();
    assert!(fixed.try_acquire());
    assert!(!fixed.try_acquire());
    clock.advance(Duration::from_nanos(1));
    assert!(fixed.try_acquire());
}

fn assert_unlimited(limiter: &dyn RateLimiter) {
    for n in [
        0,
        1,
        SlidingWindow::MAX_LIMIT + 1,
        WindowQuota::MAX_LIMIT + 1,
        u64::MAX,
    ] {
        assert_eq!(
            limiter.try_acquire_n(n),
            Ok(Decision::Admitted {
                remaining: u64::MAX
            }),
            "n = {n}"
        );
    }
    for _ in 0..3_000 {
        assert!(limiter.try_acquire());
    }
    assert_eq!(limiter.available(), u64::MAX);
    assert_eq!(limiter.limit(), u64::MAX);
    assert_eq!(limiter.set_limit(10), Err(ConfigError::Unlimited));
    assert_eq!(limiter.limit(), u64::MAX);
}

/// Unlimited window-family limiters admit every call of any size, for ever.
#[test]
fn unlimited_windows_admit_everything() {
    let clock = ManualClock::new();
    // A short window, so that the engines roll over while the test runs.
    let quota = WindowQuota::unlimited()
        .window(Duration::from_micros(1))
        .unwrap();
    let limiters: Vec<Box<dyn RateLimiter>> = vec![
        Box::new(SlidingWindow::builder(quota).clock(clock.clone()).build()),
        Box::new(FixedWindow::builder(quota).clock(clock.clone()).build()),
        Box::new(
            SlidingWindow::builder(quota)
                .clock(clock.clone())
                .sharded()
                .shards(2)
                .build(),
        ),
        Box::new(
            FixedWindow::builder(quota)
                .clock(clock.clone())
                .sharded()
                .build(),
        ),
        Box::new(SlidingLog::with_clock(quota, clock.clone()).unwrap()),
        Box::new(ApproxSlidingWindow::with_clock(quota, clock.clone()).unwrap()),
    ];
    for limiter in &limiters {
        assert_unlimited(limiter.as_ref());
        clock.advance(Duration::from_nanos(333));
        assert_eq!(limiter.acquire_n(u64::MAX), Ok(Duration::ZERO));
    }
    // The default TSC clock, many threads: nothing is ever refused.
    let shared = std::sync::Arc::new(SlidingWindow::new(WindowQuota::unlimited()));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let shared = shared.clone();
            std::thread::spawn(move || (0..(1 << 21)).all(|_| shared.try_acquire()))
        })
        .collect();
    assert!(workers.into_iter().all(|w| w.join().unwrap()));
}

/// A window budget is `limit` permits for 2^60 ns: never renewed by any realistic clock, on
/// every window-shaped limiter, exactly as the specs of the same quota decide.
#[test]
fn a_budget_is_never_renewed() {
    let budget = WindowQuota::budget(3).unwrap();
    let clock = ManualClock::new();
    let fixed = FixedWindow::builder(budget).clock(clock.clone()).build();
    let sliding = SlidingWindow::builder(budget).clock(clock.clone()).build();
    let log = SlidingLog::with_max_limit(budget, 4, clock.clone()).unwrap();
    let approx = ApproxSlidingWindow::with_clock(budget, clock.clone()).unwrap();
    let mut fixed_spec = FixedWindowSpec::from_quota(budget).unwrap();
    let mut sliding_spec = SlidingWindowSpec::from_quota(budget).unwrap();
    let mut log_spec = SlidingLogSpec::from_quota(budget).unwrap();
    let limiters: [&dyn RateLimiter; 4] = [&fixed, &sliding, &log, &approx];
    for step in 0..6u64 {
        let now = clock.now_nanos();
        let expected = fixed_spec.decide(now, 1).unwrap();
        assert_eq!(sliding_spec.decide(now, 1).unwrap(), expected);
        assert_eq!(
            log_spec.decide(now, 1).unwrap().is_admitted(),
            expected.is_admitted()
        );
        assert_eq!(expected.is_admitted(), step < 3);
        for limiter in limiters {
            assert_eq!(limiter.try_acquire(), step < 3);
        }
        clock.advance(5 * YEAR);
    }
    // set_limit raises what is left of the budget.
    for limiter in limiters {
        limiter.set_limit(4).unwrap();
        assert!(limiter.try_acquire());
        assert!(!limiter.try_acquire());
    }
}

/// Window quotas are shared by value: a copy builds the same limiter.
#[test]
fn window_quotas_are_values() {
    let quota = WindowQuota::per_minute(60).unwrap().buckets(6).unwrap();
    let copy = quota;
    assert_eq!(quota, copy);
    let a = SlidingWindow::builder(quota)
        .clock(ManualClock::new())
        .build();
    let b = SlidingWindow::builder(copy)
        .clock(ManualClock::new())
        .build();
    assert_eq!(
        (a.buckets(), a.bucket_width()),
        (b.buckets(), b.bucket_width())
    );
    assert_eq!(a.bucket_width(), Duration::from_secs(10));
    // The fixed window ignores the buckets; the log and the approximate window too.
    let fixed = FixedWindow::builder(quota)
        .clock(ManualClock::new())
        .build();
    assert!(fixed.try_acquire_n(60).unwrap().is_admitted());
}

/// The unlimited concurrency quota is the largest limit.
#[test]
fn unlimited_concurrency_is_the_largest_limit() {
    let limiter = ConcurrencyLimiter::new(ConcurrencyQuota::unlimited());
    assert_eq!(
        ConcurrencyLimit::limit(&limiter),
        ConcurrencyQuota::MAX_LIMIT
    );
    let held = limiter
        .try_acquire_n(ConcurrencyQuota::MAX_LIMIT - 1)
        .unwrap();
    assert!(limiter.try_acquire().is_some());
    drop(held);
    assert_eq!(
        ConcurrencyLimit::available(&limiter),
        ConcurrencyQuota::MAX_LIMIT
    );
}
