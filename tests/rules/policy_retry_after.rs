//! A refusal's `retry_after` against later dimensions: a client told "retry in 1 s" while a
//! later dimension is spent for 60 s. Ignored: the dimensions after the first refusal are
//! not asked (documented on `Policy`), so the first refusing dimension's `retry_after` is
//! reported, not the longest.

use std::sync::Arc;
use std::time::Duration;

use ringlimit::cell::WindowConfig;
use ringlimit::clock::ManualClock;
use ringlimit::keyed::{FixedWindows, Keyed};
use ringlimit::policy::{Policy, PolicyDecision};
use ringlimit::{FixedWindow, RateLimiter, WindowQuota};

#[test]
#[ignore = "documented on Policy: later dimensions are not asked after a refusal"]
fn a_refusal_reports_the_longest_retry_after() {
    let clock = ManualClock::new();
    let per_user = Arc::new(Keyed::<u64, FixedWindows, _>::with_config(
        WindowConfig::new(WindowQuota::per_second(1).unwrap()).unwrap(),
        clock.clone(),
    ));
    let global = Arc::new(
        FixedWindow::builder(WindowQuota::per_minute(1).unwrap())
            .clock(clock.clone())
            .build(),
    );
    let policy = Policy::builder()
        .per_key("user", per_user, |u: &u64| Some(*u))
        .shared("global", global.clone())
        .build();
    assert!(policy.check(&1).unwrap().is_admitted()); // user 1 and global both spent
    let PolicyDecision::Refused {
        dimension,
        retry_after,
        ..
    } = policy.check(&1).unwrap()
    else {
        panic!("admitted")
    };
    // Nothing can be admitted for user 1 before the global window ends, 60 s from now.
    assert!(
        retry_after >= Duration::from_secs(60),
        "refused by `{dimension}` with retry_after {retry_after:?}, though `global` admits nothing for 60 s"
    );
    // Retrying when told is refused again.
    clock.advance(retry_after);
    assert!(
        policy.check(&1).unwrap().is_admitted(),
        "refused again after retry_after"
    );
    let _ = global.available();
}
