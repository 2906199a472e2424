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
    TokenBucket::builder(every(T), 1).clock(clock).build().unwrap()
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
