//! Warm-up fast refusals: a refund or a reservation racing a reconfiguration, then a fast
//! refusal that some order of the spec explains.
//!
//! Run: `bash loom-tests/run warm_up_fast_refusals::`

use std::time::Duration;

use loom::sync::Arc;
use ringlimit::clock::ManualClock;
use ringlimit::{Rate, RateLimiter, WarmUp, WarmUpQuota};

/// T = 1000 ns, W = 4000 ns, cold factor 3: from cold the first permit costs 2500 ns.
fn limiter(clock: &ManualClock) -> WarmUp<ManualClock> {
    WarmUp::builder(
        WarmUpQuota::new(
            Rate::every(Duration::from_nanos(1000)).unwrap(),
            Duration::from_nanos(4000),
        )
        .unwrap(),
    )
    .clock(clock.clone())
    .build()
}

/// A refund (loaded the configuration, then stalled before its CAS) races a `set_limit`
/// followed, in the same thread, by a `try_acquire` that takes the config-free n == 1
/// refusal path. The clock is frozen at 0.
///
/// Sequentially: if the refund returns 1 it took effect while epoch 0 was in force, so before
/// `set_limit`, so before the try; the state is then the one before the grant (free at 0)
/// and the spec admits the try. The fast path, which loads no configuration and does not
/// relabel, can see the pre-refund word after the reconfiguration and refuse, while the
/// refund's CAS still lands on the un-relabelled word afterwards: refund == 1 and a refusal,
/// which no sequential run of the spec explains (a spurious rejection, §2).
#[test]
fn refund_racing_set_limit_then_fast_refusal() {
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(limiter(&clock));
        let grant = limiter
            .try_grant(1)
            .unwrap()
            .into_grant()
            .expect("a cold, free limiter grants");
        assert_eq!(
            limiter.try_acquire_n(1).unwrap().retry_after(),
            Duration::from_nanos(2500)
        );
        let refunder = {
            let limiter = limiter.clone();
            loom::thread::spawn(move || limiter.refund(grant))
        };
        let admin = {
            let limiter = limiter.clone();
            loom::thread::spawn(move || {
                limiter.set_limit(5).unwrap();
                limiter.try_acquire_n(1).unwrap()
            })
        };
        let restored = refunder.join().unwrap();
        let decision = admin.join().unwrap();
        assert!(
            !(restored == 1 && !decision.is_admitted()),
            "refund restored 1 permit (so it took effect before set_limit, before the try), \
             yet the try after set_limit was refused: {decision:?}"
        );
    });
}

/// The same root cause without refunds: a reservation priced under epoch 0's curve (rate
/// 1/1000 ns: it pushes `next_free` from 2500 to 4000; under the new 1/500 ns curve it
/// would push it to 3375) must take effect before `set_rate`, hence before the admin
/// thread's try that follows `set_rate`. The fast path can read the pre-reservation word
/// after `set_rate`, before the reservation's CAS lands on the un-relabelled word, and
/// report `retry_after` = 2500 ns; sequentially it must be 4000 ns.
#[test]
fn reservation_racing_set_rate_then_fast_refusal() {
    use ringlimit::outcome::Decision;
    use ringlimit::spec::Attempt;
    loom::model(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(limiter(&clock));
        assert!(limiter.try_acquire());
        let reserver = {
            let limiter = limiter.clone();
            loom::thread::spawn(move || match limiter.attempt(1, Duration::MAX).unwrap() {
                Attempt::Granted(reservation) => *reservation.ticket(),
                Attempt::RetryAfter(after) => panic!("{after:?}"),
            })
        };
        let admin = {
            let limiter = limiter.clone();
            loom::thread::spawn(move || {
                limiter
                    .set_rate(Rate::every(Duration::from_nanos(500)).unwrap())
                    .unwrap();
                limiter.try_acquire_n(1).unwrap()
            })
        };
        let ticket = reserver.join().unwrap();
        let decision = admin.join().unwrap();
        assert_eq!(ticket.act_at(), 2500);
        let next_free_after = (ticket.mark() >> 64) as u64;
        if next_free_after == 4000 {
            // Priced under the old curve: before `set_rate`, so before the try.
            assert_eq!(
                decision,
                Decision::Refused {
                    available: 0,
                    retry_after: Duration::from_nanos(4000)
                },
                "the try after set_rate missed a reservation decided under the old rate"
            );
        } else {
            assert_eq!(next_free_after, 3375);
        }
    });
}
