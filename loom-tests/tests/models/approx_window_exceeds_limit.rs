//! `ApproxSlidingWindow`: a call ending in `ExceedsLimit` after a rollover moves the window
//! as the spec does.
//!
//! Run: `bash loom-tests/run approx_window_exceeds_limit::`

use crate::exceeds_model;

use std::time::Duration;

use ringlimit::spec::ApproxSlidingWindowSpec;
use ringlimit::{ApproxSlidingWindow, WindowQuota};

// An `ExceedsLimit` outcome moved the window: B rolled from window 0 to window 2 (which
// weighs nothing of window 0) under limit 2, then read limit 1 and failed; at 8 ns the
// limiter admitted where the spec (window 0, full) refused. Every request for permits now
// moves time to its reading, in the spec too.
#[test]
fn exceeds_limit_after_rollover_agrees_with_the_spec() {
    let scenario = exceeds_model::Scenario {
        first: 5,
        race: 45,
        back: 8,
    };
    scenario.check(
        |clock| {
            ApproxSlidingWindow::with_clock(
                WindowQuota::per(2, Duration::from_nanos(20)).unwrap(),
                clock.clone(),
            )
            .unwrap()
        },
        || ApproxSlidingWindowSpec::new(2, Duration::from_nanos(20)).unwrap(),
    );
}
