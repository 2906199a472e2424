//! The keyed token bucket's 8-byte cell (`BucketCell<Compact, Narrow>`, `[time: 58 | tag:
//! 6]`): its size, the quiet rule that guards the reuse of its tags, its end of time, and
//! exactness against a wide (16-byte) cell across tag reuse.

use crate::common;

use std::time::Duration;

use common::every;
use common::stress::XorShift;
use ringlimit::cell::Compact;
use ringlimit::cell::{BucketCell, BucketConfig};
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{Buckets, Keyed};
use ringlimit::outcome::Decision;
use ringlimit::spec::Narrow;
use ringlimit::{BucketQuota, ConfigError, Rate, ShaperQuota};

/// Keyed token buckets of `quota` (narrow cells) on `clock`.
fn buckets(quota: BucketQuota, clock: &ManualClock) -> Keyed<u64, Buckets, ManualClock> {
    Keyed::with_clock(quota, clock.clone())
}

/// A token-bucket configuration of `burst` at `rate` keeping debt (as a narrow cell needs).
fn keeping_debt(rate: Rate, burst: u64, clock: &ManualClock) -> BucketConfig {
    BucketConfig::token(BucketQuota::new(rate, burst).unwrap(), clock).keeping_debt()
}

/// The wait a reconfiguration refused as too often names; any other outcome fails.
fn retry_after(outcome: Result<(), ConfigError>) -> Duration {
    match outcome {
        Err(ConfigError::ReconfiguredTooOften { retry_after }) => retry_after,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_keyed_bucket_cell_is_eight_bytes() {
    let config = BucketConfig::token(BucketQuota::per_second(5).unwrap(), &ManualClock::new())
        .keeping_debt();
    assert_eq!(std::mem::size_of::<BucketCell<Compact, Narrow>>(), 8);
    assert_eq!(
        BucketCell::<Compact, Narrow>::try_new(&config)
            .unwrap()
            .footprint(),
        8
    );
    assert_eq!(BucketCell::<Compact>::new(&config).footprint(), 16);
}

/// 62 reconfigurations within one burst's refill time of each other pass; the 63rd is
/// refused with the time until the key emptied under epoch 0 is full again; after that
/// time reconfigurations pass again, and the key decides as a wide cell's would.
#[test]
fn rapid_reconfigurations_are_refused_before_a_tag_could_be_misread() {
    let clock = ManualClock::new();
    let quota = BucketQuota::new(every(100), 3).unwrap();
    let limits = buckets(quota, &clock);
    assert!(limits.try_acquire_n(&1, 3).unwrap().is_admitted());
    for i in 0..62 {
        limits
            .config()
            .set_limit(&clock, 3)
            .unwrap_or_else(|e| panic!("reconfiguration {}: {e}", i + 1));
    }
    let refused = limits.config().set_limit(&clock, 3);
    assert_eq!(
        refused,
        Err(ConfigError::ReconfiguredTooOften {
            retry_after: Duration::from_nanos(301)
        })
    );
    assert!(refused.unwrap_err().to_string().contains("retry after"));
    // Nothing changed: key 1 still empty.
    assert_eq!(limits.available(&1), 0);
    clock.advance_nanos(301);
    // Key 1 is 62 epochs behind, more than the 32 the configuration keeps: it converts
    // from the emptiest state it could be in, a whole burst behind (the deviation every
    // bucket cell has), so it is full again one burst later.
    assert_eq!(limits.available(&1), 0);
    clock.advance_nanos(300);
    assert_eq!(limits.available(&1), 3);
    // Quiet again: reconfigurations each a burst's refill time apart pass, reusing every
    // tag, and key 1, looked at every 10 of them, stays full.
    for i in 0..80 {
        limits.config().set_limit(&clock, 3).unwrap();
        clock.advance_nanos(301);
        if i % 10 == 0 {
            assert_eq!(limits.available(&1), 3, "after {} more", i + 1);
        }
    }
    assert!(limits.try_acquire_n(&1, 3).unwrap().is_admitted());
    assert!(!limits.try_acquire(&1));
    // Back to back again: the first is quiet (a refill time after the last), 62 more pass,
    // the 64th is refused.
    for _ in 0..63 {
        limits.config().set_limit(&clock, 3).unwrap();
    }
    retry_after(limits.config().set_limit(&clock, 3));
}

/// A narrow cell and a wide cell under one configuration, driven through the same calls
/// while the configuration changes (rate and burst, quiet and not, 200 times, so every tag
/// is reused three times): every decision and every `available` agree.
#[test]
fn a_narrow_cell_decides_as_a_wide_one_across_reused_tags() {
    let clock = ManualClock::new();
    let config = keeping_debt(every(100), 4, &clock);
    let narrow = BucketCell::<Compact, Narrow>::try_new(&config).unwrap();
    let wide = BucketCell::<Compact>::new(&config);
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut refused = 0;
    let mut reconfigured = |outcome: Result<(), ConfigError>| match outcome {
        Ok(()) => {}
        Err(ConfigError::ReconfiguredTooOften { .. }) => refused += 1,
        Err(e) => panic!("{e}"),
    };
    for step in 0..20_000 {
        match rng.next() % 100 {
            0..=1 => {
                let burst = 1 + rng.next() % 6;
                reconfigured(config.set_limit(&clock, burst));
            }
            2 => {
                let period = 50 + rng.next() % 200;
                reconfigured(config.set_rate(&clock, every(period)));
            }
            3..=40 => clock.advance_nanos(rng.next() % 120),
            41..=50 => assert_eq!(
                narrow.available(&config, &clock),
                wide.available(&config, &clock),
                "step {step}"
            ),
            _ => {
                let n = 1 + rng.next() % 3;
                let (a, b) = (
                    narrow.try_acquire_n(&config, &clock, n),
                    wide.try_acquire_n(&config, &clock, n),
                );
                assert_eq!(a, b, "step {step}");
            }
        }
    }
    // The run did reuse tags (over 64 reconfigurations).
    assert!(config.limit() >= 1);
    let _ = refused;
}

/// The time field's end: 2^58 - 1 ns (about 9.1 years) after the origin. Past it every
/// decision refuses ("never" to retry) and nothing is available; nothing wraps.
#[test]
fn past_the_end_of_its_time_field_a_narrow_cell_refuses_and_never_wraps() {
    let clock = ManualClock::new();
    let quota = BucketQuota::new(every(100), 2).unwrap();
    let limits = buckets(quota, &clock);
    assert!(limits.try_acquire(&1));
    let end = (1_u64 << 58) - 1;
    clock.set_nanos(end - 1_000);
    assert_eq!(limits.available(&1), 2);
    assert!(limits.try_acquire_n(&1, 2).unwrap().is_admitted());
    for jump in [end, end + 1, 1 << 59, 1 << 62, u64::MAX / 2] {
        clock.set_nanos(jump);
        assert_eq!(limits.available(&1), 0, "at {jump}");
        match limits.try_acquire_n(&3, 1).unwrap() {
            Decision::Refused { retry_after, .. } => assert_eq!(retry_after, Duration::MAX),
            admitted => panic!("admitted past the end: {admitted:?}"),
        }
        assert!(!limits.try_acquire(&1));
    }
}

/// Under a configuration keeping permits, a grown burst leaves an
/// untouched full cell short of full, and a reused tag would read it as full (here 100
/// permits where the spec keeps 1). Such a configuration cannot hold a narrow cell.
#[test]
fn a_narrow_meter_cell_needs_a_configuration_keeping_debt() {
    let clock = ManualClock::new();
    let config = BucketConfig::token(
        BucketQuota::new(Rate::per_second(1).unwrap(), 1).unwrap(),
        &clock,
    );
    assert_eq!(
        BucketCell::<Compact, Narrow>::try_new(&config).unwrap_err(),
        ConfigError::NarrowKeepsPermits
    );
    let shaper = BucketConfig::shaper(
        ShaperQuota::new(Rate::per_second(1).unwrap(), Duration::from_secs(1)).unwrap(),
        &clock,
    );
    assert!(BucketCell::<Compact, Narrow>::try_new(&shaper).is_ok());
    assert!(BucketCell::<Compact, Narrow>::try_new(&config.keeping_debt()).is_ok());
}

/// The same sequence under keeping debt: the untouched cell is full before the
/// tag is reused, and full it stays (as the spec and a fresh cell say).
#[test]
fn a_reused_tag_over_a_full_cell_keeping_debt_reads_as_the_spec() {
    let clock = ManualClock::new();
    let config = keeping_debt(Rate::per_second(1).unwrap(), 1, &clock);
    let narrow = BucketCell::<Compact, Narrow>::try_new(&config).unwrap();
    assert!(narrow.try_acquire(&config, &clock));
    clock.advance(Duration::from_secs(2));
    for i in 0..62 {
        config
            .set_limit(&clock, 1)
            .unwrap_or_else(|e| panic!("{i}: {e}"));
    }
    clock.advance(Duration::from_secs(5));
    config.set_limit(&clock, 1).unwrap(); // epoch 63, quiet
    config.set_limit(&clock, 100).unwrap(); // epoch 64: tag 0 reused
    assert_eq!(narrow.available(&config, &clock), 100);
    assert!(narrow
        .try_acquire_n(&config, &clock, 100)
        .unwrap()
        .is_admitted());
    assert!(!narrow.try_acquire(&config, &clock));
}

/// A refused reconfiguration's (never published) burst does not count
/// towards later quiet checks.
#[test]
fn a_refused_reconfiguration_does_not_widen_the_quiet_rule() {
    let clock = ManualClock::new();
    let quota = BucketQuota::new(every(1_000), 1).unwrap(); // 1 µs
    let limits = buckets(quota, &clock);
    assert!(limits.try_acquire(&1));
    for _ in 0..62 {
        limits.config().set_limit(&clock, 1).unwrap();
    }
    // The 63rd, a burst refilling in about 11.6 days: refused, judged by the published
    // bursts (1 µs), not its own.
    let wait = retry_after(limits.config().set_limit(&clock, 1_000_000_000_000));
    assert!(wait <= Duration::from_micros(2), "{wait:?}");
    clock.advance(Duration::from_millis(1));
    limits.config().set_limit(&clock, 1).unwrap();
}

/// A burst published before the configuration held any narrow cell
/// still counts: the quiet rule waits for its refill before a tag can be reused, and the
/// cell then reads as the spec (full).
#[test]
fn a_burst_published_before_the_first_narrow_cell_counts_in_the_quiet_rule() {
    let clock = ManualClock::new();
    let config = keeping_debt(Rate::per_second(1000).unwrap(), 1, &clock);
    config.set_limit(&clock, 10_000).unwrap(); // a 10 s refill, before any narrow cell
    let narrow = BucketCell::<Compact, Narrow>::try_new(&config).unwrap();
    assert!(narrow
        .try_acquire_n(&config, &clock, 10_000)
        .unwrap()
        .is_admitted());
    for i in 0..61 {
        config
            .set_limit(&clock, 1)
            .unwrap_or_else(|e| panic!("{i}: {e}"));
    }
    clock.advance(Duration::from_millis(5)); // past the 1 ms bursts' refill, not 10 s
    let wait = retry_after(config.set_limit(&clock, 1));
    assert!(
        wait > Duration::from_secs(9) && wait <= Duration::from_secs(10),
        "{wait:?}"
    );
    clock.advance(Duration::from_secs(10));
    for _ in 0..3 {
        config.set_limit(&clock, 1).unwrap(); // 63 quiet, then 65 reuses tag 1
    }
    clock.advance(Duration::from_millis(50));
    assert_eq!(narrow.available(&config, &clock), 1);
}

/// A burst whose refill time reaches past the narrow timeline's end
/// (about 9.1 years) leaves no quiet epoch to wait for: the refusal says never.
#[test]
fn a_burst_refilling_past_the_narrow_timeline_refuses_for_good() {
    let clock = ManualClock::new();
    let quota = BucketQuota::new(Rate::per_second(1).unwrap(), 1).unwrap();
    let limits = buckets(quota, &clock);
    limits.config().set_limit(&clock, 1 << 30).unwrap(); // 34 years to refill
    for _ in 0..61 {
        limits.config().set_limit(&clock, 1).unwrap();
    }
    assert_eq!(
        retry_after(limits.config().set_limit(&clock, 1)),
        Duration::MAX
    );
}
