//! Multi-threaded stress tests of the window limiters against their guarantees.
//!
//! * Lock-step: threads admit between barriers while the clock stands still, so every
//!   step's outcome is checked exactly: never more than the spec had available, and no
//!   refusal of `n` while `n` permits were still available at the end of the step (within a
//!   step availability only falls, so such a refusal would be spurious).
//! * Free-running: a thread moves the clock forward continuously across thousands of
//!   rollovers while four threads admit; each admission is logged with the epochs read
//!   before and after the call (it was decided in an epoch between the two), and afterwards
//!   no B consecutive epochs may hold more than the limit.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::stress::{free_running, lockstep, WIDTH};
use ringlimit::clock::ManualClock;
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec};
use ringlimit::{FixedWindow, SlidingWindow, WindowQuota};

#[test]
fn sliding_window_lockstep_is_exact() {
    for (limit, buckets) in [(7, 4), (100, 10), (1, 3)] {
        let clock = ManualClock::new();
        let window = Duration::from_nanos(WIDTH * buckets);
        let limiter = SlidingWindow::builder(
            WindowQuota::per(limit, window)
                .unwrap()
                .buckets(buckets)
                .unwrap(),
        )
        .clock(clock.clone())
        .build();
        let mut spec = SlidingWindowSpec::new(limit, window, buckets).unwrap();
        let (calls, _) = lockstep(&Arc::new(limiter), &mut spec, &clock, 1500, 40);
        eprintln!("sliding lockstep limit {limit} B {buckets}: {calls} calls");
    }
}

#[test]
fn fixed_window_lockstep_is_exact() {
    let clock = ManualClock::new();
    let window = Duration::from_nanos(WIDTH);
    let limiter = FixedWindow::builder(WindowQuota::per(50, window).unwrap())
        .clock(clock.clone())
        .build();
    let mut spec = FixedWindowSpec::new(50, window).unwrap();
    let (calls, _) = lockstep(&Arc::new(limiter), &mut spec, &clock, 2000, 40);
    eprintln!("fixed lockstep: {calls} calls");
}

#[test]
fn compact_sliding_window_lockstep_is_exact() {
    let clock = ManualClock::new();
    let window = Duration::from_nanos(WIDTH * 5);
    let limiter = SlidingWindow::builder(WindowQuota::per(20, window).unwrap().buckets(5).unwrap())
        .clock(clock.clone())
        .compact()
        .build();
    let mut spec = SlidingWindowSpec::new(20, window, 5).unwrap();
    let (calls, _) = lockstep(&Arc::new(limiter), &mut spec, &clock, 1500, 40);
    eprintln!("compact sliding lockstep: {calls} calls");
}

#[test]
fn sliding_window_free_running_never_over_admits() {
    let (limit, buckets) = (40, 8);
    let clock = ManualClock::new();
    let limiter = SlidingWindow::builder(
        WindowQuota::per(limit, Duration::from_nanos(WIDTH * buckets))
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .build();
    let (calls, admitted, epochs) = free_running(limiter, clock, limit, buckets, 5_000);
    eprintln!("sliding free-running: {calls} calls, {admitted} admissions over {epochs} epochs");
    assert!(
        calls > 1_000_000,
        "too few calls to stress anything: {calls}"
    );
}

#[test]
fn fixed_window_free_running_never_over_admits() {
    let clock = ManualClock::new();
    let limiter = FixedWindow::builder(WindowQuota::per(30, Duration::from_nanos(WIDTH)).unwrap())
        .clock(clock.clone())
        .build();
    let (calls, admitted, epochs) = free_running(limiter, clock, 30, 1, 5_000);
    eprintln!("fixed free-running: {calls} calls, {admitted} admissions over {epochs} epochs");
    assert!(
        calls > 1_000_000,
        "too few calls to stress anything: {calls}"
    );
}
