//! Every limiter on a clock counting from the Unix epoch (about 2^60.6 ns today), where a
//! limiter that clamped raw readings at 2^60 ns would stand still and over-admit: each
//! admits exactly its limit or burst, refuses the next, reports delays that `ready_in`
//! agrees with, and its blocking waits move the manual clock by exactly what they report.

use std::time::Duration;

use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::Attempt;
use ringlimit::spec::{Spec, Step, TokenBucketSpec, WarmUpSpec};
use ringlimit::{
    ApproxSlidingWindow, FixedWindow, LeakyBucket, Rate, RateLimiter, Reserve, SlidingLog,
    SlidingWindow, TokenBucket, WaitError, WarmUp,
};
use ringlimit::{BucketQuota, ShaperQuota, Wait, WarmUpQuota, WindowQuota};

/// 2025-11-24 in ns since the Unix epoch: a whole number of seconds, above 2^60.
const UNIX: u64 = 1_764_000_000_000_000_000;
const SEC: Duration = Duration::from_secs(1);

/// A counting limiter of `limit` per `window` at the Unix origin: admits `limit`, refuses
/// the next with a retry time within the window, a zero-timeout wait is one refused attempt
/// with the same retry time, and `acquire` sleeps exactly that long on the manual clock.
fn check_counting(
    name: &str,
    limiter: &dyn RateLimiter,
    clock: &ManualClock,
    limit: u64,
    window: Duration,
) {
    assert_eq!(clock.now_nanos(), UNIX);
    for i in 0..limit {
        assert!(limiter.try_acquire(), "{name}: permit {i} of {limit}");
    }
    let refused = limiter.try_acquire_n(1).unwrap();
    assert!(!refused.is_admitted(), "{name}: one past the limit");
    let retry = refused.retry_after();
    // Within two windows (the approximate window may need a nanosecond into the next).
    assert!(
        retry > Duration::ZERO && retry <= 2 * window,
        "{name}: retry {retry:?}"
    );
    assert_eq!(
        limiter.try_acquire_for(1, Duration::ZERO),
        Err(WaitError::Timeout {
            retry_after: retry,
            timeout: Duration::ZERO
        }),
        "{name}"
    );
    match limiter.attempt(1, Duration::MAX) {
        Ok(Attempt::RetryAfter(after)) => assert_eq!(after, retry, "{name}"),
        Ok(Attempt::Granted(_)) => panic!("{name}: granted past the limit"),
        Err(error) => panic!("{name}: {error}"),
    }
    assert_eq!(clock.now_nanos(), UNIX, "{name}: nothing slept yet");
    assert_eq!(limiter.acquire(), retry, "{name}");
    assert_eq!(clock.now_nanos(), UNIX + retry.as_nanos() as u64, "{name}");
}

#[test]
fn fixed_window() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter = FixedWindow::builder(WindowQuota::per(5, SEC).unwrap())
        .clock(clock.clone())
        .build();
    check_counting("fixed window", &limiter, &clock, 5, SEC);
}

#[test]
fn sliding_window() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter = SlidingWindow::builder(WindowQuota::per(5, SEC).unwrap())
        .clock(clock.clone())
        .build();
    check_counting("sliding window", &limiter, &clock, 5, SEC);
}

#[test]
fn sharded_window() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter = SlidingWindow::builder(WindowQuota::per(5, SEC).unwrap())
        .clock(clock.clone())
        .sharded()
        .build();
    check_counting("sharded window", &limiter, &clock, 5, SEC);
}

#[test]
fn sliding_log() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter = SlidingLog::with_clock(WindowQuota::per(5, SEC).unwrap(), clock.clone()).unwrap();
    check_counting("sliding log", &limiter, &clock, 5, SEC);
}

#[test]
fn approx_sliding_window() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter =
        ApproxSlidingWindow::with_clock(WindowQuota::per(5, SEC).unwrap(), clock.clone()).unwrap();
    check_counting("approx sliding window", &limiter, &clock, 5, SEC);
}

#[test]
fn token_bucket_follows_its_spec() {
    let rate = Rate::per_second(100).unwrap();
    let clock = ManualClock::starting_at(UNIX);
    let limiter = TokenBucket::builder(BucketQuota::new(rate, 5).unwrap())
        .clock(clock.clone())
        .build();
    let mut spec = TokenBucketSpec::new(rate, 5).unwrap().starting_at(UNIX);
    for n in [1, 2, 2, 1, 1] {
        assert_eq!(limiter.try_acquire_n(n), spec.decide(UNIX, n));
    }
    check_bucket("token bucket", &limiter, &clock, Duration::from_millis(10));
}

#[test]
fn leaky_bucket_meter() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter =
        LeakyBucket::meter_builder(BucketQuota::new(Rate::per_second(100).unwrap(), 5).unwrap())
            .clock(clock.clone())
            .build();
    for i in 0..5 {
        assert!(limiter.try_acquire(), "permit {i}");
    }
    check_bucket("leaky meter", &limiter, &clock, Duration::from_millis(10));
}

#[test]
fn leaky_bucket_shaper() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter =
        LeakyBucket::shaper_builder(ShaperQuota::new(Rate::per_second(100).unwrap(), SEC).unwrap())
            .clock(clock.clone())
            .build();
    // The first goes at once; each next one is scheduled 10 ms after the one before.
    assert!(limiter.try_acquire());
    check_bucket("leaky shaper", &limiter, &clock, Duration::from_millis(10));
}

/// A bucket that is empty at `UNIX`: refuses now with `period`, reserves for `period` with
/// `ready_in` agreeing, and `acquire` sleeps exactly `period` on the manual clock.
fn check_bucket<L: RateLimiter + Reserve>(
    name: &str,
    limiter: &L,
    clock: &ManualClock,
    period: Duration,
) {
    assert_eq!(clock.now_nanos(), UNIX);
    let refused = limiter.try_acquire_n(1).unwrap();
    assert!(!refused.is_admitted(), "{name}");
    assert_eq!(refused.retry_after(), period, "{name}");
    let reservation = limiter.reserve(1).unwrap();
    assert_eq!(reservation.delay(), period, "{name}");
    assert_eq!(reservation.ready_in(), period, "{name}");
    assert_eq!(
        reservation.ticket().act_at(),
        UNIX + period.as_nanos() as u64,
        "{name}"
    );
    reservation.cancel();
    assert_eq!(limiter.acquire(), period, "{name}");
    assert_eq!(clock.now_nanos(), UNIX + period.as_nanos() as u64, "{name}");
}

fn warm_up(clock: &ManualClock) -> WarmUp<ManualClock> {
    WarmUp::builder(WarmUpQuota::new(Rate::per_second(100).unwrap(), SEC).unwrap())
        .clock(clock.clone())
        .build()
}

/// The reproduction: on today's clock, `acquire` waited zero for every call and the clock
/// never moved; now each wait is the spec's, and the clock moves by it.
#[test]
fn warm_up_acquire_waits_as_the_spec_says() {
    let clock = ManualClock::starting_at(UNIX);
    let limiter = warm_up(&clock);
    let mut spec = WarmUpSpec::new(Rate::per_second(100).unwrap(), SEC, 3.0)
        .unwrap()
        .starting_at(UNIX);
    let mut total = Duration::ZERO;
    for i in 0..200 {
        let now = clock.now_nanos();
        let Step::Granted(ticket) = spec.attempt(now, 1, Duration::MAX).unwrap() else {
            unreachable!()
        };
        let waited = limiter.acquire();
        assert_eq!(waited, ticket.delay(), "call {i}");
        assert_eq!(clock.now_nanos(), ticket.act_at(), "call {i}");
        total += waited;
    }
    // Cold start: 200 permits at 100/s take well over a second (the first is free).
    assert!(total > Duration::from_millis(1990), "{total:?}");
}

#[test]
fn warm_up_follows_its_spec_and_its_tickets_are_on_the_clock() {
    let rate = Rate::per_second(100).unwrap();
    let clock = ManualClock::starting_at(UNIX);
    let limiter = warm_up(&clock);
    let mut spec = WarmUpSpec::new(rate, SEC, 3.0).unwrap().starting_at(UNIX);
    assert_eq!(
        limiter.stored_permits().to_bits(),
        spec.stored_permits(UNIX).to_bits()
    );
    // Free: the first call goes, the next pays its cost (the cold interval, 30 ms).
    assert_eq!(limiter.try_acquire_n(1), spec.decide(UNIX, 1));
    let refused = limiter.try_acquire_n(1).unwrap();
    assert_eq!(Ok(refused), spec.decide(UNIX, 1));
    assert!(!refused.is_admitted());
    let cost = refused.retry_after();
    assert!(
        cost > Duration::from_millis(20) && cost <= Duration::from_millis(30),
        "{cost:?}"
    );
    let reservation = limiter.reserve(1).unwrap();
    assert_eq!(reservation.delay(), cost);
    assert_eq!(reservation.ready_in(), cost);
    assert_eq!(reservation.ticket().made_at(), UNIX);
    assert_eq!(reservation.ticket().act_at(), UNIX + cost.as_nanos() as u64);
    // Cancelled before its time, it gives its permit back, as the spec's refund does.
    let ticket = *reservation.ticket();
    assert_eq!(reservation.cancel(), 1);
    if let Step::Granted(mirror) = spec.attempt(UNIX, 1, Duration::MAX).unwrap() {
        assert_eq!(mirror, ticket);
        spec.refund(UNIX, &mirror);
    }
    assert_eq!(
        limiter.stored_permits().to_bits(),
        spec.stored_permits(UNIX).to_bits()
    );
    // `try_acquire` admits again once the cost has passed, not a second later.
    clock.advance(cost);
    assert!(limiter.try_acquire());
    assert!(spec
        .decide(UNIX + cost.as_nanos() as u64, 1)
        .unwrap()
        .is_admitted());
    for step in 1..50u64 {
        let now = UNIX + cost.as_nanos() as u64 + step * 7_000_000;
        clock.set_nanos(now);
        assert_eq!(
            limiter.try_acquire_n(1 + step % 3),
            spec.decide(now, 1 + step % 3),
            "{step}"
        );
    }
}
