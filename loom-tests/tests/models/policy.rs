//! Loom models of policies (`ringlimit::policy`): all-or-nothing checks racing on shared
//! dimensions, each refusal giving its earlier grants back.
//!
//! Run: `bash loom-tests/run policy::`

use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::WindowConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{FixedWindows, Keyed};
use ringlimit::policy::Policy;
use ringlimit::{FixedWindow, RateLimiter, WindowQuota};

fn quota(limit: u64) -> WindowQuota {
    WindowQuota::per(limit, Duration::from_nanos(10)).unwrap()
}

/// Users 1 and 2 (1 permit each) race for a global limit of 1, per user first: exactly one
/// is admitted, the other's user grant is refunded (its user has its permit again), and
/// the global limit is spent once.
#[test]
fn two_checks_racing_for_one_global_permit_admit_one_and_refund_the_other() {
    loom::model(|| {
        let clock = ManualClock::new();
        let users = Arc::new(Keyed::<u64, FixedWindows, _>::with_config(
            WindowConfig::new(quota(1)).unwrap(),
            clock.clone(),
        ));
        let global = Arc::new(FixedWindow::builder(quota(1)).clock(clock).build());
        let policy = Arc::new(
            Policy::builder()
                .per_key("user", users.clone(), |user: &u64| Some(*user))
                .shared("global", global.clone())
                .build(),
        );
        let other = {
            let policy = policy.clone();
            loom::thread::spawn(move || policy.check(&2).unwrap().is_admitted())
        };
        let mine = policy.check(&1).unwrap().is_admitted();
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "admitted: {mine} and {theirs}");
        assert_eq!(global.available(), 0);
        let (winner, loser) = if mine { (1, 2) } else { (2, 1) };
        assert_eq!((users.available(&winner), users.available(&loser)), (0, 1));
    });
}

/// One user (1 permit) checked by two threads against a global limit of 2: the user
/// dimension admits one of them; the other is refused by it, taking no global permit, so
/// exactly one global permit is spent.
#[test]
fn two_checks_of_one_user_spend_one_global_permit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let users = Arc::new(Keyed::<u64, FixedWindows, _>::with_config(
            WindowConfig::new(quota(1)).unwrap(),
            clock.clone(),
        ));
        let global = Arc::new(FixedWindow::builder(quota(2)).clock(clock).build());
        let policy = Arc::new(
            Policy::builder()
                .per_key("user", users.clone(), |user: &u64| Some(*user))
                .shared("global", global.clone())
                .build(),
        );
        let other = {
            let policy = policy.clone();
            loom::thread::spawn(move || policy.check(&1).unwrap().is_admitted())
        };
        let mine = policy.check(&1).unwrap().is_admitted();
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "admitted: {mine} and {theirs}");
        assert_eq!((global.available(), users.available(&1)), (1, 0));
    });
}
