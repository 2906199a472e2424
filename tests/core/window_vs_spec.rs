//! The lock-free window limiters against their specs on random single-threaded traces.

use crate::common;

use std::time::Duration;

use common::{check_trace, ops, Op};
use proptest::prelude::*;
use ringlimit::clock::ManualClock;
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec};
use ringlimit::{FixedWindow, SlidingWindow, WindowQuota};

const WINDOW: u64 = 1_000;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sliding_window_matches_spec(limit in 1u64..8, buckets in 1u64..6, trace in ops(WINDOW, 8)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WINDOW);
        let limiter = SlidingWindow::builder(WindowQuota::per(limit, window).unwrap().buckets(buckets).unwrap()).clock(clock.clone()).build();
        let mut spec = SlidingWindowSpec::new(limit, window, buckets).unwrap();
        check_trace(&limiter, &mut spec, &clock, &trace);
    }

    #[test]
    fn compact_sliding_window_matches_spec(limit in 1u64..8, buckets in 1u64..6, trace in ops(WINDOW, 8)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WINDOW);
        let limiter = SlidingWindow::builder(WindowQuota::per(limit, window).unwrap().buckets(buckets).unwrap()).clock(clock.clone()).compact().build();
        let mut spec = SlidingWindowSpec::new(limit, window, buckets).unwrap();
        check_trace(&limiter, &mut spec, &clock, &trace);
    }

    #[test]
    fn fixed_window_matches_spec(limit in 1u64..8, trace in ops(WINDOW, 8)) {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WINDOW);
        let limiter = FixedWindow::builder(WindowQuota::per(limit, window).unwrap()).clock(clock.clone()).build();
        let mut spec = FixedWindowSpec::new(limit, window).unwrap();
        check_trace(&limiter, &mut spec, &clock, &trace);
    }
}

#[test]
fn sliding_window_fills_drains_and_reports_retry_after() {
    let clock = ManualClock::new();
    let window = Duration::from_nanos(400);
    let limiter = SlidingWindow::builder(WindowQuota::per(4, window).unwrap().buckets(4).unwrap())
        .clock(clock.clone())
        .build();
    let mut spec = SlidingWindowSpec::new(4, window, 4).unwrap();
    let trace = [
        Op::Many(2),
        Op::Advance(100),
        Op::One,
        Op::Advance(150),
        Op::One,
        Op::Many(1),
        Op::Many(2),
        Op::Available,
        Op::Advance(150),
        Op::Many(3),
        Op::Available,
        Op::SetLimit(1),
        Op::One,
        Op::Advance(1000),
        Op::Available,
        Op::SetLimit(6),
        Op::Many(6),
        Op::Rewind(500),
        Op::One,
        Op::Available,
    ];
    check_trace(&limiter, &mut spec, &clock, &trace);
}
