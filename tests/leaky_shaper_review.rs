//! Review (review-gcra): the shaper's rule vs DESIGN §1, which reads "scheduled at
//! `next = max(next, t) + n*T`; refused if `next - t > max_wait`". The implementation
//! refuses only if `max(next, t) - t > max_wait` (Guava's "pay for the previous call") and
//! lets one call take up to ⌊2^60 ns / T⌋ permits, so an idle shaper with `max_wait = 0`
//! hands out 36 years of output in one call.

use std::time::Duration;

use ringlimit::clock::ManualClock;
use ringlimit::{LeakyBucket, Rate, RateLimiter};

#[test]
fn shaper_refuses_a_call_whose_own_slot_ends_past_max_wait() {
    let shaper = LeakyBucket::shaper_builder(Rate::per_second(1).unwrap(), Duration::ZERO)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    // DESIGN §1: next = 0 + 1e6 s, next - t = 1e6 s > max_wait = 0: refused (or an
    // ExceedsLimit error, since no call of this size can ever be admitted).
    let admitted = shaper
        .try_acquire_n(1_000_000)
        .is_ok_and(|d| d.is_admitted());
    assert_eq!(shaper.available(), 0, "available() after the call");
    assert!(
        !admitted,
        "a 1/s shaper with max_wait 0 admitted a million permits at once (limit {})",
        shaper.limit()
    );
}
