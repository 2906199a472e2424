//! Review (review-gcra) models of `TokenBucket` reconfiguration.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p loom-tests --release --test token_bucket_review`
#![cfg(loom)]

mod bucket_model;

use bucket_model::{admitted, every, Model, Op};
use ringlimit::clock::ManualClock;
use ringlimit::spec::TokenBucketSpec;
use ringlimit::TokenBucket;

/// One permit every 100 ns, burst 1.
const T: u64 = 100;

fn bucket(clock: ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(every(T), 1)
        .clock(clock)
        .build()
        .unwrap()
}

fn spec() -> TokenBucketSpec {
    TokenBucketSpec::new(every(T), 1).unwrap()
}

/// `set_rate` (to 1 per ns, burst still 1) races a caller that moves the clock to 1000 and
/// takes two permits. With burst 1 in both configurations, two permits at the one instant
/// 1000 exceed `b + r·Δt = 1` under any real-time order. FAILS: the reconfiguration reads
/// the clock (0) before loading the word, an admission at 1000 lands in between (tat 1100),
/// and the conversion at the stale reading re-rates [0, 1000] at the new rate (tat 11), so
/// the second `try_acquire` at 1000 is admitted. (The harness's own linearizability check
/// passes: it lets the reconfiguration's reading go back to 0 after a call at 1000.)
#[test]
fn set_rate_with_stale_reading_mints() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: bucket,
        spec,
        start: 0,
        setup: &[],
        threads: &[&[Op::SetRate(1)], &[Op::SetClock(1000), Op::One, Op::One]],
        probes: &[],
    };
    MODEL.check(|seen| assert!(admitted(seen) <= 1, "over-admission: {seen:?}"));
}

/// The documented ABA residual says an admitter stalled across eight reconfigurations that
/// left the time field in place decides "under a configuration at most eight changes old".
/// It can in fact decide under a *torn* slot that was never in force: the three slot fields
/// are loaded separately, stored Relaxed, and the stale word confirms nothing about them.
/// Setup: burst 8 at T = 10 (slot 0 = (10, 80, 8)); seven `set_limit`s (7..=1) and a
/// `set_rate(5)` that rewrites slot 0 = (5, 5, 1), all at clock 0 with the bucket full, so
/// the word returns to exactly (time 0, gen 0). Any configuration actually in force admits
/// `try_acquire_n(1)` with `remaining <= 7`; a torn (5, 80, ·) gives `remaining = 15`, a
/// torn (10, 5, ·) refuses (spuriously). FAILS under loom.
#[test]
fn aba_reader_can_decide_under_a_torn_slot() {
    use loom::sync::Arc;
    use ringlimit::{Decision, RateLimiter};
    loom::model(|| {
        let clock = ManualClock::new();
        let bucket = Arc::new(
            TokenBucket::builder(every(10), 8)
                .clock(clock)
                .build()
                .unwrap(),
        );
        let reader = {
            let bucket = bucket.clone();
            loom::thread::spawn(move || bucket.try_acquire_n(1))
        };
        for limit in (1..=7).rev() {
            bucket.set_limit(limit).unwrap();
        }
        bucket.set_rate(every(5)).unwrap();
        let decision = reader.join().unwrap();
        assert!(
            matches!(decision, Ok(Decision::Admitted { remaining }) if remaining <= 7),
            "decided under a configuration never in force: {decision:?}"
        );
    });
}
