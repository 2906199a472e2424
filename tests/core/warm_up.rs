//! `WarmUp`: Guava's documented schedule, the trapezoid integral, random traces against the
//! spec, a 4-thread stress with a spec replay, the edges, and the
//! corners (cancels across 8+ reconfigurations, cold factors that lose the warm-up, rescaled
//! permits above max).

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use proptest::prelude::*;
use ringlimit::baseline::ParkingLotLocked;
use ringlimit::clock::{Clock, ManualClock};
use ringlimit::outcome::Decision;
use ringlimit::spec::Attempt;
use ringlimit::spec::{Spec, Step, WarmUpSpec};
use ringlimit::{ConfigError, ExceedsLimit, Rate, RateLimiter, Reserve, WaitError, WarmUp};
use ringlimit::{Wait, WarmUpQuota};

const MS: u64 = 1_000_000;

fn limiter(rate: Rate, warm_up: Duration, cold_factor: f64) -> (WarmUp<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let limiter = WarmUp::builder(
        WarmUpQuota::new(rate, warm_up)
            .unwrap()
            .cold_factor(cold_factor)
            .unwrap(),
    )
    .clock(clock.clone())
    .build();
    (limiter, clock)
}

/// Guava's `RateLimiterTest.testWarmUp`, on a manual clock whose `sleep` advances it, so
/// every `acquire()` returns its exact wait. All the values are exact in `f64` (powers of two
/// times small integers), so they are compared to the nanosecond.
fn guava_test_warm_up(limiter: &impl RateLimiter, clock: &ManualClock) {
    let cold = [0, 1375, 1125, 875, 625, 500, 500, 500].map(|ms| ms * MS);
    let acquire_8 = || -> Vec<u64> {
        (0..8)
            .map(|_| limiter.acquire().as_nanos() as u64)
            .collect()
    };
    assert_eq!(acquire_8(), cold, "#1");
    clock.sleep(Duration::from_millis(500)); // #2: to repay for the last acquire
    clock.sleep(Duration::from_millis(4000)); // #3: becomes cold again
    assert_eq!(acquire_8(), cold, "#4");
    clock.sleep(Duration::from_millis(500)); // #5: to repay for the last acquire
    clock.sleep(Duration::from_millis(2000)); // #6: didn't get cold! 2 more seconds to go
    let mut half_warm = [500 * MS; 8];
    half_warm[0] = 0;
    assert_eq!(acquire_8(), half_warm, "#7");
}

#[test]
fn guavas_test_warm_up_lock_free() {
    let (limiter, clock) = limiter(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0);
    guava_test_warm_up(&limiter, &clock);
}

#[test]
fn guavas_test_warm_up_mutex_spec() {
    let clock = ManualClock::new();
    let spec = WarmUpSpec::new(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0).unwrap();
    let limiter = ParkingLotLocked::with_clock(spec, clock.clone());
    guava_test_warm_up(&limiter, &clock);
}

/// The integral of the warm-up curve's interval over stored permits `lo..hi`, from the
/// definitions (not from the code under test): `T` up to the threshold, then rising
/// linearly to `C` at `max`.
fn integral(t: f64, c: f64, w: f64, lo: f64, hi: f64) -> f64 {
    let threshold = 0.5 * w / t;
    let max = threshold + 2.0 * w / (t + c);
    let interval = |x: f64| t + (x - threshold).max(0.0) * (c - t) / (max - threshold);
    let below = (hi.min(threshold) - lo.min(threshold)).max(0.0) * t;
    let (a, b) = (lo.max(threshold), hi.max(threshold));
    // A trapezoid: the interval is linear above the threshold.
    let above = (b - a) * (interval(a) + interval(b)) / 2.0;
    below + above
}

/// From cold, the first k acquisitions spend the stored permits `max - k .. max` and the
/// (k + 1)-th waits for all of them: the sum of the first k + 1 waits is the integral over
/// them, to within 2 ns per acquisition (each cost is truncated to whole ns in up to two
/// parts) and `f64` rounding.
#[test]
fn waits_from_cold_sum_to_the_trapezoid_integral() {
    let mut checked = 0;
    for (permits, per, warm_up_ms, factor) in [
        (2, 1000, 4000, 3.0),
        (3, 1000, 1000, 2.5),
        (10, 1000, 5000, 7.0),
        (7, 60_000, 90_000, 1.0),
        (1, 1, 10_000, 4.0),
        (1000, 1000, 250, 3.0),
    ] {
        let rate = Rate::new(permits, Duration::from_millis(per)).unwrap();
        let warm_up = Duration::from_millis(warm_up_ms);
        let (t, w) = (rate.period_nanos() as f64, warm_up.as_nanos() as f64);
        let c = t * factor;
        let max = 0.5 * w / t + 2.0 * w / (t + c);
        let (limiter, _clock) = limiter(rate, warm_up, factor);
        assert_eq!(limiter.stored_permits(), max);
        let mut sum = 0u64;
        for k in 0..=(max.floor() as u64) {
            let reservation = limiter.reserve(1).unwrap();
            // The (k + 1)-th reservation's delay is the sum of the first k + 1 waits.
            sum = reservation.delay().as_nanos() as u64;
            let want = integral(t, c, w, max - k as f64, max);
            let error = (sum as f64 - want).abs();
            assert!(
                error <= 2.0 * k as f64 + want * 1e-12,
                "{rate:?} W={warm_up:?} factor {factor} k={k}: {sum} ns, integral {want}"
            );
            checked += 1;
        }
        // Every stored permit spent: from here each costs exactly T.
        assert!(sum > 0);
        let before = limiter.reserve(1).unwrap().delay();
        let after = limiter.reserve(1).unwrap().delay();
        assert_eq!((after - before).as_nanos(), u128::from(rate.period_nanos()));
    }
    assert!(checked > 600, "{checked}");
}

/// One step of a random trace.
#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    Rewind(u64),
    One,
    Many(u64),
    Available,
    Stored,
    SetLimit(u64),
    SetRate(u64),
    /// `attempt(n, max_wait)`, keeping a granted reservation.
    Attempt(u64, u64),
    /// Cancels the i-th kept reservation (mod their number).
    Cancel(usize),
}

fn op(period: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..period * 3).prop_map(Op::Advance),
        1 => (0..period * 200).prop_map(Op::Advance),
        1 => prop_oneof![Just(1u64 << 32), Just(1u64 << 40), Just(u64::MAX / 2)].prop_map(Op::Advance),
        1 => (0..period * 5).prop_map(Op::Rewind),
        6 => Just(Op::One),
        3 => (0..12u64).prop_map(Op::Many),
        1 => Just(Op::Available),
        1 => Just(Op::Stored),
        1 => (0..14u64).prop_map(Op::SetLimit),
        1 => (1..period * 4).prop_map(Op::SetRate),
        4 => ((0..6u64), prop_oneof![Just(0), 0..period * 8, Just(u64::MAX)])
            .prop_map(|(n, w)| Op::Attempt(n, w)),
        2 => (0..8usize).prop_map(Op::Cancel),
    ]
}

fn case() -> impl Strategy<Value = (u64, u64, f64, Vec<Op>)> {
    (
        prop_oneof![Just(1u64), Just(7), Just(1000), 2..400_000u64],
        1..60u64,
        prop_oneof![Just(1.0), Just(3.0), Just(1.25), 1.0..20.0f64],
    )
        .prop_flat_map(|(period, warm_up_periods, factor)| {
            (
                Just(period),
                Just(period * warm_up_periods),
                // At 1 ns a factor below 3 stores more than a permit per ns of idle time:
                // refused (`ConfigError::CoolDownBelowOneNanosecond`).
                Just(if period == 1 { factor.max(3.0) } else { factor }),
                proptest::collection::vec(op(period), 1..150),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every result of the lock-free limiter equals the spec's, bit for bit, through clock
    /// jumps and reversals, reconfigurations, reservations and cancels.
    #[test]
    fn random_traces_match_the_spec((period, warm_up, factor, ops) in case()) {
        let rate = Rate::every(Duration::from_nanos(period)).unwrap();
        let warm_up = Duration::from_nanos(warm_up);
        let (limiter, clock) = limiter(rate, warm_up, factor);
        let mut spec = WarmUpSpec::new(rate, warm_up, factor).unwrap();
        let mut kept = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let now = clock.now_nanos();
            match *op {
                Op::Advance(dt) => clock.advance_nanos(dt),
                Op::Rewind(dt) => clock.set_nanos(now.saturating_sub(dt)),
                Op::One => {
                    let want = spec.decide(now, 1).unwrap().is_admitted();
                    prop_assert_eq!(limiter.try_acquire(), want, "step {}", i);
                }
                Op::Many(n) => prop_assert_eq!(limiter.try_acquire_n(n), spec.decide(now, n), "step {}", i),
                Op::Available => prop_assert_eq!(limiter.available(), spec.available(now)),
                Op::Stored => prop_assert_eq!(
                    limiter.stored_permits().to_bits(),
                    spec.stored_permits(now).to_bits()
                ),
                Op::SetLimit(l) => {
                    prop_assert_eq!(limiter.set_limit(l), spec.set_limit(now, l));
                    prop_assert_eq!(limiter.limit(), spec.limit());
                }
                Op::SetRate(p) => {
                    let rate = Rate::every(Duration::from_nanos(p)).unwrap();
                    prop_assert_eq!(limiter.set_rate(rate), spec.set_rate(now, rate));
                    prop_assert_eq!(limiter.rate(), spec.rate());
                    prop_assert_eq!(limiter.limit(), spec.limit());
                }
                Op::Attempt(n, w) => {
                    let max_wait = Duration::from_nanos(w);
                    let want = spec.attempt(now, n, max_wait);
                    match (limiter.attempt(n, max_wait), want) {
                        (Ok(Attempt::Granted(got)), Ok(Step::Granted(ticket))) => {
                            prop_assert_eq!(*got.ticket(), ticket, "step {}", i);
                            kept.push((got, ticket));
                        }
                        (Ok(Attempt::RetryAfter(got)), Ok(Step::RetryAfter(want))) => {
                            prop_assert_eq!(got, want)
                        }
                        (Err(got), Err(want)) => prop_assert_eq!(got, want),
                        (got, want) => prop_assert!(false, "step {}: {:?} vs {:?}", i, got, want),
                    }
                }
                Op::Cancel(k) => {
                    if !kept.is_empty() {
                        let (reservation, ticket) = kept.remove(k % kept.len());
                        reservation.cancel();
                        spec.refund(now, &ticket);
                    }
                }
            }
            let now = clock.now_nanos();
            prop_assert_eq!(
                limiter.stored_permits().to_bits(),
                spec.stored_permits(now).to_bits(),
                "after step {} {:?}", i, op
            );
            prop_assert_eq!(limiter.available(), spec.available(now));
        }
    }
}

/// The spec's next free time (when the next call may go), read from a copy.
fn next_free(spec: &WarmUpSpec) -> u64 {
    match spec.clone().attempt(0, 1, Duration::ZERO) {
        Err(WaitError::Timeout { retry_after, .. }) => retry_after.as_nanos() as u64,
        _ => 0,
    }
}

/// A grant seen by a stress thread: the clock reading, the permits and the moment granted.
#[derive(Debug, Clone, Copy)]
struct Granted {
    now: u64,
    n: u64,
    moment: u64,
}

thread_local! {
    /// The last reading this thread took of a [`Recording`] clock.
    static LAST_READING: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A shared manual clock that remembers, per thread, the reading the limiter last took: each
/// call reads the clock once, so after the call this is the time it was decided at.
#[derive(Clone)]
struct Recording(ManualClock);

impl Clock for Recording {
    fn now_nanos(&self) -> u64 {
        let now = self.0.now_nanos();
        LAST_READING.with(|last| last.set(now));
        now
    }
}

fn last_reading() -> u64 {
    LAST_READING.with(|last| last.get())
}

/// 4 threads admit, reserve and move a shared clock. Afterwards: every grant's moment is
/// distinct, consecutive moments are at least `n × T - 2` ns apart (a permit never costs less
/// than T, less up to two truncations to whole ns), replaying the grants in moment order
/// (their CAS order: each moment is at least the previous one plus its cost) through the spec
/// gives the same moments and final state, and every refusal's and timeout's retry time is a
/// next free time the replay went through.
#[test]
fn four_threads_match_a_spec_replay() {
    const T: u64 = 10_000;
    let rate = Rate::every(Duration::from_nanos(T)).unwrap();
    let warm_up = Duration::from_nanos(40 * T);
    let clock = ManualClock::new();
    let limiter = WarmUp::builder(WarmUpQuota::new(rate, warm_up).unwrap())
        .clock(Recording(clock.clone()))
        .build();
    let limiter = Arc::new(limiter);
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4u64)
        .map(|id| {
            let (limiter, clock, barrier) = (limiter.clone(), clock.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15 ^ (id + 1).wrapping_mul(0x2545_f491);
                let mut next = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                let (mut grants, mut retry_ats) = (Vec::new(), Vec::new());
                barrier.wait();
                for _ in 0..3000 {
                    let r = next();
                    let n = 1 + r % 3;
                    match r % 8 {
                        0..=1 => clock.advance_nanos(next() % (3 * T)),
                        2..=5 => match limiter.try_acquire_n(n).unwrap() {
                            // A free limiter's admission goes at the caller's reading.
                            Decision::Admitted { .. } => grants.push(Granted {
                                now: last_reading(),
                                n,
                                moment: last_reading(),
                            }),
                            Decision::Refused { retry_after, .. } => {
                                retry_ats.push(last_reading() + retry_after.as_nanos() as u64)
                            }
                        },
                        _ => {
                            let max_wait = Duration::from_nanos(next() % (20 * T));
                            match limiter.reserve_within(n, max_wait) {
                                Ok(reservation) => {
                                    let ticket = *reservation.ticket();
                                    grants.push(Granted {
                                        now: ticket.made_at(),
                                        n,
                                        moment: ticket.act_at(),
                                    });
                                }
                                Err(WaitError::Timeout { retry_after, .. }) => {
                                    assert!(retry_after > max_wait);
                                    retry_ats.push(last_reading() + retry_after.as_nanos() as u64);
                                }
                                Err(other) => panic!("{other}"),
                            }
                        }
                    }
                }
                (grants, retry_ats)
            })
        })
        .collect();
    let (mut grants, mut retry_ats) = (Vec::new(), Vec::new());
    for handle in handles {
        let (g, r) = handle.join().unwrap();
        grants.extend(g);
        retry_ats.extend(r);
    }
    grants.sort_by_key(|g| g.moment);
    assert!(grants.len() > 1000, "{}", grants.len());
    assert!(retry_ats.len() > 1000, "{}", retry_ats.len());
    for pair in grants.windows(2) {
        assert!(
            pair[1].moment + 2 >= pair[0].moment + pair[0].n * T,
            "{pair:?}"
        );
    }
    let mut spec = WarmUpSpec::new(rate, warm_up, 3.0).unwrap();
    let mut next_frees = HashSet::from([0]);
    for (i, g) in grants.iter().enumerate() {
        match spec.attempt(g.now, g.n, Duration::MAX).unwrap() {
            Step::Granted(ticket) => assert_eq!(ticket.act_at(), g.moment, "grant {i} {g:?}"),
            Step::RetryAfter(after) => panic!("grant {i} {g:?}: retry after {after:?}"),
        }
        next_frees.insert(next_free(&spec));
    }
    let now = clock.now_nanos();
    assert_eq!(
        limiter.stored_permits().to_bits(),
        spec.stored_permits(now).to_bits()
    );
    for retry_at in retry_ats {
        assert!(next_frees.contains(&retry_at), "refused until {retry_at}");
    }
}

#[test]
fn bad_configurations_are_errors() {
    let rate = Rate::per_second(2).unwrap();
    let second = Duration::from_secs(1);
    for factor in [0.0, 0.999, -3.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            WarmUpQuota::new(rate, second)
                .and_then(|q| q.cold_factor(factor))
                .unwrap_err(),
            ConfigError::InvalidColdFactor
        );
        assert!(WarmUpSpec::new(rate, second, factor).is_err());
    }
    assert_eq!(
        WarmUpQuota::new(rate, Duration::ZERO).unwrap_err(),
        ConfigError::ZeroWarmUp
    );
    assert!(matches!(
        WarmUpQuota::new(rate, Duration::MAX),
        Err(ConfigError::SpanTooLong { .. })
    ));
    let slowest = Rate::every(Duration::from_nanos(ringlimit::Rate::MAX_PERIOD_NANOS)).unwrap();
    assert!(matches!(
        WarmUpQuota::new(slowest, second).and_then(|q| q.cold_factor(5.0)),
        Err(ConfigError::SpanTooLong { .. })
    ));
    assert!(WarmUpQuota::new(slowest, second)
        .and_then(|q| q.cold_factor(4.0))
        .is_ok());
    let (limiter, _) = limiter(rate, second, 5.0);
    assert!(matches!(
        limiter.set_rate(slowest),
        Err(ConfigError::SpanTooLong { .. })
    ));
    assert_eq!(limiter.rate(), rate);
    assert_eq!(limiter.set_limit(0), Err(ConfigError::ZeroLimit));
    assert!(matches!(
        limiter.set_limit(u64::MAX),
        Err(ConfigError::LimitTooLarge { .. })
    ));
    assert!(ConfigError::ZeroWarmUp.to_string().contains("warm-up"));
}

#[test]
fn requests_above_the_bound_are_errors_everywhere() {
    let (limiter, _clock) = limiter(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0);
    // 2^58 ns / 1.5 s.
    let bound = ((1u64 << 58) as f64 / 1.5e9) as u64;
    assert_eq!(limiter.limit(), bound);
    limiter.set_limit(5).unwrap();
    let exceeds = ExceedsLimit {
        requested: 6,
        limit: 5,
    };
    let waits = WaitError::ExceedsLimit(ExceedsLimit {
        requested: 6,
        limit: 5,
    });
    assert_eq!(limiter.try_acquire_n(6), Err(exceeds));
    assert_eq!(limiter.acquire_n(6), Err(exceeds.into()));
    assert_eq!(
        limiter.try_acquire_for(6, Duration::ZERO),
        Err(waits.clone())
    );
    assert_eq!(
        limiter.try_acquire_for(6, Duration::MAX),
        Err(waits.clone())
    );
    assert_eq!(limiter.reserve(6).unwrap_err(), waits);
    assert_eq!(
        limiter.reserve_within(6, Duration::ZERO).unwrap_err(),
        waits
    );
    // Nothing was taken.
    assert_eq!(limiter.stored_permits(), 8.0);
    assert_eq!(limiter.available(), 5);
    // The largest call goes, and the next waits for its whole cost.
    assert_eq!(limiter.acquire_n(5), Ok(Duration::ZERO));
    assert_eq!(limiter.acquire_n(0), Ok(Duration::ZERO));
    // 4 permits above the threshold (4 s) and 1 below (0.5 s).
    assert_eq!(limiter.acquire(), Duration::from_millis(4500));
}

#[test]
fn timeouts_of_zero_and_forever() {
    let (limiter, clock) = limiter(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0);
    assert_eq!(
        limiter.try_acquire_for(1, Duration::ZERO),
        Ok(Duration::ZERO)
    );
    // Busy for 1.375 s: a zero timeout fails at once, taking nothing.
    assert_eq!(
        limiter.try_acquire_for(1, Duration::ZERO),
        Err(WaitError::Timeout {
            retry_after: Duration::from_millis(1375),
            timeout: Duration::ZERO
        })
    );
    assert_eq!(
        limiter
            .try_acquire_for(1, Duration::from_millis(1374))
            .unwrap_err(),
        WaitError::Timeout {
            retry_after: Duration::from_millis(1375),
            timeout: Duration::from_millis(1374)
        }
    );
    assert_eq!(clock.now_nanos(), 0);
    assert_eq!(limiter.stored_permits(), 7.0);
    // A timeout of exactly the wait succeeds; forever waits as long as it takes.
    assert_eq!(
        limiter.try_acquire_for(1, Duration::from_millis(1375)),
        Ok(Duration::from_millis(1375))
    );
    assert_eq!(
        limiter.try_acquire_for(2, Duration::MAX),
        Ok(Duration::from_millis(1125))
    );
    assert_eq!(
        limiter.try_acquire_for(1, Duration::MAX),
        Ok(Duration::from_millis(875 + 625))
    );
}

#[test]
fn a_clock_near_u64_max_stands_still_at_2_pow_60() {
    let rate = Rate::per_second(2).unwrap();
    let warm_up = Duration::from_secs(4);
    // Built at 0: a reading near u64::MAX is past 2^60 ns after the origin, where the
    // limiter's time stands still.
    let clock = ManualClock::new();
    let limiter = WarmUp::builder(WarmUpQuota::new(rate, warm_up).unwrap())
        .clock(clock.clone())
        .build();
    let mut spec = WarmUpSpec::new(rate, warm_up, 3.0).unwrap();
    clock.set_nanos(u64::MAX - 5);
    for n in [1, 1, 3, 0, 1] {
        let now = clock.now_nanos();
        assert_eq!(limiter.try_acquire_n(n), spec.decide(now, n));
        clock.advance_nanos(1);
    }
    // The first call went; time stands still at 2^60 ns, so the rest are refused for ever:
    // the limiter is busy until 2^60 ns + 1.375 s, which its time never reaches.
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::MAX
    );
    assert_eq!(limiter.stored_permits(), 7.0);
    // The largest call still fits the schedule at the end of time; nothing can queue behind
    // it.
    let fresh = WarmUp::builder(WarmUpQuota::new(rate, warm_up).unwrap())
        .clock(ManualClock::new())
        .build();
    fresh.clock().set_nanos(u64::MAX - 5);
    assert!(fresh.try_acquire_n(fresh.limit()).unwrap().is_admitted());
    assert!(matches!(
        fresh.reserve(1),
        Err(WaitError::Timeout {
            retry_after: Duration::MAX,
            ..
        })
    ));
}

/// Readings saturate 2^60 ns after the origin and the limiter's time then stands still, while
/// the clock goes on. A reservation for a later moment would never come in the limiter's
/// time, yet the clock, already past it, would let it go at once. So in saturated time the
/// waits grant only what `try_acquire` admits (the limiter free at the reading) and refuse
/// every other for ever, as the bucket and window families refuse past their end.
#[test]
fn waits_in_saturated_time_refuse_for_ever_as_try_acquire_does() {
    // Built at 0 and read at 2^61 ns, or 100 µs after readings saturate.
    for reading in [1u64 << 61, (1 << 60) + 100_000] {
        let (limiter, clock) = limiter(
            Rate::per_second(1_000_000).unwrap(),
            Duration::from_secs(1),
            3.0,
        );
        clock.set_nanos(reading);
        assert_eq!(limiter.acquire_n(1), Ok(Duration::ZERO), "{reading}");
        let granted = (0..100_000)
            .filter(|_| limiter.acquire_n(1).is_ok())
            .count();
        assert_eq!(granted, 0, "{reading}");
        assert_eq!(
            limiter.acquire_n(1),
            Err(WaitError::TimeExhausted),
            "{reading}"
        );
        assert!(
            matches!(
                limiter.reserve(1),
                Err(WaitError::Timeout {
                    retry_after: Duration::MAX,
                    ..
                })
            ),
            "{reading}"
        );
        assert_eq!(
            limiter.try_acquire_for(1, Duration::from_secs(3600)),
            Err(WaitError::Timeout {
                retry_after: Duration::MAX,
                timeout: Duration::from_secs(3600)
            }),
            "{reading}"
        );
        assert!(!limiter.try_acquire(), "{reading}");
        assert_eq!(
            limiter.try_acquire_n(1).unwrap().retry_after(),
            Duration::MAX,
            "{reading}"
        );
        // Nothing slept: every refusal was known at once.
        assert_eq!(clock.now_nanos(), reading);
    }
}

/// No reservation is made for a moment past 2^60 ns, the last reading the limiter's time
/// reaches; one for that moment exactly is.
#[test]
fn reservations_end_at_the_last_reading() {
    let (limiter, clock) = limiter(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0);
    // Cold, the first permit costs 1.375 s: the second may go at 2^60 ns exactly.
    clock.set_nanos((1 << 60) - 1_375_000_000);
    assert_eq!(limiter.reserve(1).unwrap().delay(), Duration::ZERO);
    let last = limiter.reserve(1).unwrap();
    assert_eq!(last.ticket().act_at(), 1 << 60);
    // The third would go at 2^60 ns + 1.125 s, which the limiter's time never reaches.
    assert!(matches!(
        limiter.reserve(1),
        Err(WaitError::Timeout {
            retry_after: Duration::MAX,
            ..
        })
    ));
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::MAX
    );
    drop(last);
    assert_eq!(limiter.acquire_n(1), Err(WaitError::TimeExhausted));
}

#[test]
fn built_near_u64_max_the_schedule_ends_with_the_clock() {
    let rate = Rate::per_second(2).unwrap();
    let warm_up = Duration::from_secs(4);
    // Built 5 ns before the clock's end: no permit's cost fits the 5 ns of schedule left,
    // and the refusal says so ("never") instead of "retry now".
    let origin = u64::MAX - 5;
    let clock = ManualClock::starting_at(origin);
    let limiter = WarmUp::builder(WarmUpQuota::new(rate, warm_up).unwrap())
        .clock(clock.clone())
        .build();
    let mut spec = WarmUpSpec::new(rate, warm_up, 3.0)
        .unwrap()
        .starting_at(origin);
    for n in [1, 0, 2] {
        let now = clock.now_nanos();
        let decision = limiter.try_acquire_n(n);
        assert_eq!(decision, spec.decide(now, n));
        if n > 0 {
            assert_eq!(decision.unwrap().retry_after(), Duration::MAX);
        }
        clock.advance_nanos(1);
    }
    assert_eq!(
        limiter.try_acquire_for(1, Duration::from_secs(1)),
        Err(WaitError::Timeout {
            retry_after: Duration::MAX,
            timeout: Duration::from_secs(1)
        })
    );
}

#[test]
fn a_backwards_clock_stores_nothing_and_waits_longer() {
    let (limiter, clock) = limiter(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0);
    clock.set_nanos(10_000 * MS);
    assert!(limiter.try_acquire_n(8).unwrap().is_admitted());
    assert_eq!(limiter.stored_permits(), 0.0);
    // The 8 cost 6 s; a reading from 5 s earlier waits 11 s and stores nothing.
    clock.set_nanos(5_000 * MS);
    assert_eq!(
        limiter.try_acquire_n(1).unwrap(),
        Decision::Refused {
            available: 0,
            retry_after: Duration::from_secs(11)
        }
    );
    assert_eq!(limiter.stored_permits(), 0.0);
    assert_eq!(limiter.available(), 0);
    clock.set_nanos(17_000 * MS);
    // 1 s idle after 16 s: 2 permits stored (cool-down 0.5 s), both below the threshold.
    assert_eq!(limiter.stored_permits(), 2.0);
    assert!(limiter.try_acquire_n(3).unwrap().is_admitted());
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_millis(1500)
    );
}

#[test]
fn cancelled_reservations_give_their_permits_back() {
    let (limiter, clock) = limiter(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0);
    let first = limiter.reserve(1).unwrap();
    let second = limiter.reserve(2).unwrap();
    assert_eq!(second.delay(), Duration::from_millis(1375));
    // Not the last: nothing to give back yet.
    first.cancel();
    assert_eq!(limiter.stored_permits(), 5.0);
    second.cancel();
    assert_eq!(limiter.stored_permits(), 7.0);
    // A refund is the holder's word that the permits were not used: an untouched
    // reservation comes back even once its time has come.
    let third = limiter.reserve(1).unwrap();
    clock.advance(third.delay() + Duration::from_nanos(1));
    assert_eq!(third.cancel(), 1);
    let stored = limiter.stored_permits();
    assert!(stored >= 7.0, "{stored}");
    // Not one made before a reconfiguration.
    let fourth = limiter.reserve(1).unwrap();
    limiter.set_limit(100).unwrap();
    assert_eq!(fourth.cancel(), 0);
    assert!(limiter.stored_permits() < stored);
}

#[test]
fn set_rate_scales_stored_permits_like_guava() {
    let (limiter, clock) = limiter(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0);
    assert!(limiter.try_acquire_n(6).unwrap().is_admitted());
    // 6 permits: 4 above the threshold (4 s) and 2 below (1 s).
    clock.set_nanos(5_000 * MS);
    assert_eq!(limiter.stored_permits(), 2.0);
    limiter.set_rate(Rate::per_second(4).unwrap()).unwrap();
    // max goes from 8 to 16: the 2 become 4.
    assert_eq!(limiter.stored_permits(), 4.0);
    assert_eq!(limiter.available(), limiter.limit());
    assert!(limiter.try_acquire_n(5).unwrap().is_admitted());
    // 4 stored below the new threshold (8) and 1 fresh, all at 0.25 s.
    assert_eq!(
        limiter.try_acquire_n(1).unwrap().retry_after(),
        Duration::from_millis(1250)
    );
}

/// Guava's example (2/s, 4 s warm-up, cold factor 3): the limiter, its clock and the spec.
fn guava() -> (WarmUp<ManualClock>, ManualClock, WarmUpSpec) {
    let (rate, warm_up) = (Rate::per_second(2).unwrap(), Duration::from_secs(4));
    let (limiter, clock) = limiter(rate, warm_up, 3.0);
    (limiter, clock, WarmUpSpec::new(rate, warm_up, 3.0).unwrap())
}

/// The state word's generation is 3 bits and `set_limit` leaves the other
/// bits alone, so after 8 `set_limit`s the word was bit for bit what a reservation left and
/// its cancel went through. Reservations made before any reconfiguration stay uncancellable
/// after 1 to 20 of them, here and in the spec.
#[test]
fn cancels_stay_refused_after_eight_set_limits() {
    for reconfigurations in 1..=20 {
        let (limiter, _clock, mut spec) = guava();
        let _first = limiter.reserve(1).unwrap();
        let second = limiter.reserve(3).unwrap();
        spec.attempt(0, 1, Duration::MAX).unwrap();
        let Step::Granted(ticket) = spec.attempt(0, 3, Duration::MAX).unwrap() else {
            unreachable!()
        };
        assert_eq!(*second.ticket(), ticket);
        assert_eq!(limiter.stored_permits(), 4.0);
        for _ in 0..reconfigurations {
            limiter.set_limit(100).unwrap();
            spec.set_limit(0, 100).unwrap();
        }
        second.cancel();
        spec.refund(0, &ticket);
        assert_eq!(limiter.stored_permits(), 4.0, "after {reconfigurations}");
        assert_eq!(spec.stored_permits(0), 4.0, "after {reconfigurations}");
        // A reservation made after them cancels as usual.
        let third = limiter.reserve(1).unwrap();
        third.cancel();
        assert_eq!(limiter.stored_permits(), 4.0, "after {reconfigurations}");
    }
}

/// The same with `set_rate` behind a queue (0.0 stored permits scale to
/// 0.0): after 8 the cancel put back 7 permits of the old curve, unscaled, under the new
/// one. Now nothing is given back, by the limiter and by the spec alike.
#[test]
fn cancels_stay_refused_after_eight_set_rates() {
    let (limiter, _clock, mut spec) = guava();
    let _first = limiter.reserve(1).unwrap();
    // Spends all 7 stored permits: the word after it holds 0.0, invariant under rescaling.
    let second = limiter.reserve(7).unwrap();
    for _ in 0..8 {
        limiter.set_rate(Rate::per_second(4).unwrap()).unwrap();
    }
    second.cancel();
    let lock_free = limiter.stored_permits();

    spec.attempt(0, 1, Duration::MAX).unwrap();
    let Step::Granted(ticket) = spec.attempt(0, 7, Duration::MAX).unwrap() else {
        unreachable!()
    };
    for _ in 0..8 {
        spec.set_rate(0, Rate::per_second(4).unwrap()).unwrap();
    }
    spec.refund(0, &ticket);
    assert_eq!(spec.stored_permits(0).to_bits(), lock_free.to_bits());
    assert_eq!(lock_free, 0.0, "the cancel went through after 8 set_rates");
}

/// The cold start of a cold factor, from the second reservation's delay (the first
/// permit's cost), or the error building it.
fn cold_start(period: u64, warm_up: u64, factor: f64) -> Result<u64, ConfigError> {
    let limiter = WarmUp::builder(
        WarmUpQuota::new(
            Rate::every(Duration::from_nanos(period)).unwrap(),
            Duration::from_nanos(warm_up),
        )?
        .cold_factor(factor)?,
    )
    .clock(ManualClock::new())
    .build();
    let _ = limiter.reserve(1).unwrap();
    Ok(limiter.reserve(1).unwrap().delay().as_nanos() as u64)
}

/// With T = 1 ns and W = 2^20 ns a cold factor of 2^55 made `2 W / (T + C)`
/// vanish next to the threshold (max == threshold, slope +inf): no warm-up at all, a faster
/// cold start than with 2^54. Such factors are refused now (at build, by the spec and by
/// `set_rate`), and every factor accepted from 2^50 to 2^56 keeps a cold start within
/// [W / 2, 2 W] (the warm-up part is a few ulps of the threshold there, so rounding moves
/// its area by up to a factor 2).
#[test]
fn a_cold_factor_that_loses_the_warm_up_is_refused() {
    const W: u64 = 1 << 20;
    let huge = (1u64 << 55) as f64;
    assert!(cold_start(1, W, (1u64 << 54) as f64).unwrap() >= W / 2);
    assert_eq!(cold_start(1, W, huge), Err(ConfigError::ColdFactorTooLarge));
    let one_ns = Rate::every(Duration::from_nanos(1)).unwrap();
    assert_eq!(
        WarmUpSpec::new(one_ns, Duration::from_nanos(W), huge).unwrap_err(),
        ConfigError::ColdFactorTooLarge
    );
    assert!(ConfigError::ColdFactorTooLarge
        .to_string()
        .contains("cold factor"));
    // With T = 3 ns the same factor keeps its warm-up; moving to T = 1 ns is refused and
    // changes nothing.
    let three_ns = Rate::every(Duration::from_nanos(3)).unwrap();
    let limiter = WarmUp::builder(
        WarmUpQuota::new(three_ns, Duration::from_nanos(W))
            .unwrap()
            .cold_factor(huge)
            .unwrap(),
    )
    .clock(ManualClock::new())
    .build();
    let mut spec = WarmUpSpec::new(three_ns, Duration::from_nanos(W), huge).unwrap();
    let stored = limiter.stored_permits();
    assert_eq!(
        limiter.set_rate(one_ns),
        Err(ConfigError::ColdFactorTooLarge)
    );
    assert_eq!(
        spec.set_rate(0, one_ns),
        Err(ConfigError::ColdFactorTooLarge)
    );
    assert_eq!((limiter.rate(), spec.rate()), (three_ns, three_ns));
    assert_eq!(limiter.stored_permits(), stored);
    let (mut accepted, mut refused) = (0, 0);
    for period in [1, 3] {
        for k in 0..=96 {
            let factor = (1u64 << 50) as f64 * 2f64.powf(f64::from(k) / 16.0);
            match cold_start(period, W, factor) {
                Ok(delay) => {
                    assert!(
                        (W / 2..=2 * W).contains(&delay),
                        "{period} {factor}: {delay}"
                    );
                    accepted += 1;
                }
                Err(error) => {
                    assert_eq!(error, ConfigError::ColdFactorTooLarge);
                    assert!(factor >= (1u64 << 54) as f64, "{period} {factor}");
                    refused += 1;
                }
            }
        }
    }
    assert!(accepted > 150 && refused > 10, "{accepted} {refused}");
}

/// `set_rate`'s rescale `stored × new max / old max` can round past the new
/// max (3/s to 3/s at t = 0); then `stored_permits()` reported more than max and the cancel
/// of a reservation made right after was refused. The rescale is capped at the new max.
#[test]
fn set_rate_caps_rescaled_permits_at_max() {
    let (limiter, _clock) = limiter(Rate::per_second(3).unwrap(), Duration::from_secs(4), 3.0);
    let mut spec =
        WarmUpSpec::new(Rate::per_second(3).unwrap(), Duration::from_secs(4), 3.0).unwrap();
    let max = limiter.stored_permits();
    // Uncapped, the product rounds up an ulp.
    assert!(max * max / max > max);
    limiter.set_rate(Rate::per_second(3).unwrap()).unwrap();
    spec.set_rate(0, Rate::per_second(3).unwrap()).unwrap();
    assert_eq!(limiter.stored_permits(), max);
    assert_eq!(spec.stored_permits(0), max);
    let reservation = limiter.reserve(1).unwrap();
    assert_eq!(reservation.delay(), Duration::ZERO);
    reservation.cancel();
    assert_eq!(limiter.stored_permits(), max, "cancel refused");
}

/// A reading older than a `set_rate`'s is decided at its own reading: the change converts
/// nothing (the state holds the cooling that stored the permits, which no rate changes), so
/// the reading it was made at does not matter, in the limiter as in the spec. (Before the
/// cell, `set_rate` resynced the word at its reading and such a call waited 1 ns for it.)
#[test]
fn a_reading_older_than_set_rate_is_decided_at_its_own() {
    let (limiter, clock, _) = guava();
    let mut spec =
        WarmUpSpec::new(Rate::per_second(2).unwrap(), Duration::from_secs(4), 3.0).unwrap();
    clock.set_nanos(10_000_000_000);
    limiter.set_rate(Rate::per_second(2).unwrap()).unwrap();
    spec.set_rate(10_000_000_000, Rate::per_second(2).unwrap())
        .unwrap();
    clock.set_nanos(9_999_999_999);
    let decision = limiter.try_acquire_n(1).unwrap();
    assert!(decision.is_admitted());
    assert_eq!(Ok(decision), spec.decide(9_999_999_999, 1));
}
