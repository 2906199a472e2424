//! Loom models of refunds. Each replays every execution's observed outcomes against the
//! sequential spec (`refund_model`): the grants handed out, every refund's returned count,
//! every admission and refusal, and `available()` probed afterwards at the final clock time
//! and later ones (which read the ring, `prev` or the bucket's time). An outcome no order of
//! the spec explains, each call at a clock reading it could have made, fails the model: a
//! refund is checked against what the spec's refund of that grant restores at its
//! linearization point, never against its own word.
//!
//! A double refund is impossible by type (`Grant` is neither `Copy` nor `Clone` and
//! `refund` takes it by value); the closest race, two grants of one epoch refunded
//! concurrently with an admission, is modelled instead.
//!
//! Run: `bash loom-tests/run refund::`.

use crate::refund_model;

use std::time::Duration;

use refund_model::window::{self, sliding_spec, SlidingModel};
use refund_model::{every, handed, restored, Got, Model, Op, Seen, Tally};
use ringlimit::clock::ManualClock;
use ringlimit::spec::{
    ApproxSlidingWindowSpec, FixedWindowSpec, SlidingWindowSpec, TokenBucketSpec,
};
use ringlimit::{
    ApproxSlidingWindow, BucketQuota, FixedWindow, Rate, SlidingWindow, TokenBucket, WindowQuota,
};

/// Bucket width 1 ns: clock readings are epochs.
fn sliding(limit: u64, buckets: u64, clock: &ManualClock) -> SlidingWindow<ManualClock> {
    SlidingWindow::builder(
        WindowQuota::per(limit, Duration::from_nanos(buckets))
            .unwrap()
            .buckets(buckets)
            .unwrap(),
    )
    .clock(clock.clone())
    .build()
}

fn fixed(limit: u64, clock: &ManualClock) -> FixedWindow<ManualClock> {
    FixedWindow::builder(WindowQuota::per(limit, Duration::from_nanos(1)).unwrap())
        .clock(clock.clone())
        .build()
}

fn fixed_spec(limit: u64) -> FixedWindowSpec {
    FixedWindowSpec::new(limit, Duration::from_nanos(1)).unwrap()
}

/// One permit every 10 ns, burst 2.
fn token(clock: &ManualClock) -> TokenBucket<ManualClock> {
    TokenBucket::builder(
        BucketQuota::new(Rate::new(1, Duration::from_nanos(10)).unwrap(), 2).unwrap(),
    )
    .clock(clock.clone())
    .build()
}

fn token_spec() -> TokenBucketSpec {
    TokenBucketSpec::new(every(10), 2).unwrap()
}

/// Reports how many executions loom explored and how many only the documented deviation
/// explains (visible with `--nocapture`).
fn report(name: &str, tally: &Tally) {
    let load = |n: &std::sync::atomic::AtomicUsize| n.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "{name}: {} executions, {} explained only by the documented deviation",
        load(&tally.executions),
        load(&tally.ghosts)
    );
}

// (1) A refund of the full epoch races two admissions at the limit: `refund_model::window`.
#[test]
fn window_refund_races_two_admissions_at_the_limit() {
    static MODEL: SlidingModel = window::races_two_admissions(|clock| sliding(2, 2, clock));
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, window::races_two_admissions_holds);
    report("window_refund_races_two_admissions_at_the_limit", &TALLY);
}

// (2) A grant of epoch 0 refunded while another thread rolls the window into epoch 1 and
// takes two permits there (the documented deviation allowed): `refund_model::window`.
#[test]
fn sliding_refund_of_a_passing_epoch_races_rollover() {
    static MODEL: SlidingModel = window::passing_epoch_races_rollover(|clock| sliding(2, 2, clock));
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, window::passing_epoch_races_rollover_holds);
    report("sliding_refund_of_a_passing_epoch_races_rollover", &TALLY);
}

// (3) Fixed window (limit 2): a grant of window 0 is refunded while another thread moves
// into window 1 and takes two permits. A refund that loses the race is dropped; one that
// wins restores into window 0, which no later call sees. Exact (no ring): no deviation is
// allowed. A refund that landed in window 1 instead would let a third permit through there.
#[test]
fn fixed_refund_of_a_passing_window_races_rollover() {
    static MODEL: Model<FixedWindow<ManualClock>, FixedWindowSpec> = Model {
        build: |clock| fixed(2, clock),
        spec: || fixed_spec(2),
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(1))],
        start: 0,
        threads: &[&[Op::RefundSetup(0)], &[Op::SetClock(1), Op::One, Op::One]],
        probes: &[2],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |_, seen| {
        // Window 1 is whole whatever the refund did: both permits there.
        assert_eq!(seen[1][1..], [Seen::One(true), Seen::One(true)]);
    });
    report("fixed_refund_of_a_passing_window_races_rollover", &TALLY);
}

// (4) Two grants of window 0 (fixed, limit 2, full) are refunded concurrently with a thread
// that takes a permit, moves into window 1 and takes another. Proves: each refund restores
// what the spec's does at its point (1 while window 0 is current, else 0), the first
// admission goes through iff a refund preceded it, and window 1 holds what the spec says.
#[test]
fn window_two_grants_refunded_concurrently_with_an_admission() {
    static MODEL: Model<FixedWindow<ManualClock>, FixedWindowSpec> = Model {
        build: |clock| fixed(2, clock),
        spec: || fixed_spec(2),
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(1)), (0, Op::Grant(1))],
        start: 0,
        threads: &[
            &[Op::RefundSetup(0)],
            &[Op::RefundSetup(1)],
            &[Op::One, Op::SetClock(1), Op::One],
        ],
        probes: &[],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |_, seen| {
        assert!(seen[2][0].handed() <= restored(&seen[..2]));
    });
    report(
        "window_two_grants_refunded_concurrently_with_an_admission",
        &TALLY,
    );
}

// (5) A refund of a full epoch races `set_limit(1)` and an admission: `refund_model::window`.
#[test]
fn window_refund_races_set_limit_lowering() {
    static MODEL: SlidingModel = window::races_set_limit_lowering(|clock| sliding(2, 2, clock));
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, window::races_set_limit_lowering_holds);
    report("window_refund_races_set_limit_lowering", &TALLY);
}

// (6) A refund of epoch 0's grant (sliding, limit 1, B = 2) races `set_limit(2)` and a
// thread that moves into epoch 1 and takes a permit. Proves: the raise and the refund
// compose as in the spec in every order (the refund is restored only while epoch 0 is the
// head, or dropped), and the ring then holds the spec's counts.
#[test]
fn window_refund_races_set_limit_raising() {
    static MODEL: Model<SlidingWindow<ManualClock>, SlidingWindowSpec> = Model {
        build: |clock| sliding(1, 2, clock),
        spec: || sliding_spec(1, 2),
        width: 1,
        ghost: true,
        setup: &[(0, Op::Grant(1))],
        start: 0,
        threads: &[
            &[Op::RefundSetup(0)],
            &[Op::SetLimit(2)],
            &[Op::SetClock(1), Op::One],
        ],
        probes: &[2, 3],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |setup, seen| {
        assert!(handed(setup, seen) <= 2 + seen[0][0].restored());
    });
    report("window_refund_races_set_limit_raising", &TALLY);
}

// (7) Token bucket (1 per 10 ns, burst 2): a grant emptying the bucket at 0 is refunded
// while another thread takes a permit at 0, then at 10. Proves: the refund restores exactly
// the spec's (golang's) amount: both permits if nothing is scheduled behind the grant, one
// if the admission at 10 already was; and the bucket's time is the spec's (probes).
#[test]
fn token_refund_races_an_admission() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: token,
        spec: token_spec,
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(2))],
        start: 0,
        threads: &[&[Op::RefundSetup(0)], &[Op::One, Op::SetClock(10), Op::One]],
        probes: &[20, 30],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |setup, seen| {
        // At most burst + one refill (10 ns) net of what was truly restored.
        assert!(handed(setup, seen) <= 3 + seen[0][0].restored());
    });
    report("token_refund_races_an_admission", &TALLY);
}

// (8) A refund of a grant with an admission scheduled behind it (setup: 2 at 0, 1 at 10)
// races `set_burst(3)` and a clock move. Proves: the refund restores the spec's amount on
// whichever state it meets (1 before the raise, 0 after it: the raise's new permits refill
// behind the admission), and the conversion keeps the permits available at its reading.
#[test]
fn token_refund_races_set_burst_raising() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: token,
        spec: token_spec,
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(2)), (10, Op::One)],
        start: 10,
        threads: &[
            &[Op::RefundSetup(0)],
            &[Op::SetLimit(3)],
            &[Op::SetClock(15)],
        ],
        probes: &[20, 30, 40],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |_, seen| {
        assert!(
            seen[0][0].restored() <= 1,
            "an admission is scheduled behind it"
        );
    });
    report("token_refund_races_set_burst_raising", &TALLY);
}

// (8b) A refund of a grant emptying the bucket races `set_burst(1)` and an admission at
// 10: never more than the new burst available afterwards, in the spec's terms.
#[test]
fn token_refund_races_set_burst_lowering() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: token,
        spec: token_spec,
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(2))],
        start: 0,
        threads: &[
            &[Op::RefundSetup(0)],
            &[Op::SetLimit(1)],
            &[Op::SetClock(10), Op::One],
        ],
        probes: &[20, 30],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |_, seen| {
        assert!(seen[0][0].restored() <= 2);
    });
    report("token_refund_races_set_burst_lowering", &TALLY);
}

// (9) A refund of a grant with an admission scheduled behind it (setup: 2 at 0, 1 at 10)
// races `set_rate` (slower: 1 per 20 ns) and a clock move. Proves: after the conversion the
// refund restores up to its permits of the new period minus what is scheduled behind,
// exactly as the spec's refund does on the converted state (1 before it, 0 after), and the
// conversion happens at a reading no older than the admissions it converts.
#[test]
fn token_refund_races_set_rate() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: token,
        spec: token_spec,
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(2)), (10, Op::One)],
        start: 10,
        threads: &[
            &[Op::RefundSetup(0)],
            &[Op::SetRate(20)],
            &[Op::SetClock(15)],
        ],
        probes: &[20, 30],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |_, seen| {
        // Never more than the grant's permits (of the new period, after a conversion).
        assert!(seen[0][0].restored() <= 2);
    });
    report("token_refund_races_set_rate", &TALLY);
}

// (9b) Bucket refunds take the admin lock. The same refund (nothing
// behind it) races `set_rate(5)` and an admission
// at 10. The bucket state's time goes 20 -> 30 (the admission at 10) -> 20 (the refund
// gives back the part of the grant not scheduled behind: 1 permit): the same word again.
// A `set_rate` that loaded the word at 20 and read the clock at 0 before both then wins
// its CAS (ABA) and converts at reading 0 a state that holds an admission made at 10,
// re-rating [0, 10] at the faster rate: 2 permits available at 10 where every sequential
// order gives 1 (the admission, then the refund, then the conversion at 10). Refunds are
// the only way the time word moves backwards, so this ABA is new with them; the engine's
// `reconfigure` promises its reading is no older than any admission in the word it
// converts. Bucket refunds now run under the admin lock, so the word only moves forward
// while a reconfiguration holds it: this failed before (available 2 at 10).
#[test]
fn token_refund_and_admission_race_set_rate() {
    static MODEL: Model<TokenBucket<ManualClock>, TokenBucketSpec> = Model {
        build: token,
        spec: token_spec,
        width: 1,
        ghost: false,
        setup: &[(0, Op::Grant(2))],
        start: 0,
        threads: &[
            &[Op::RefundSetup(0)],
            &[Op::SetRate(5)],
            &[Op::SetClock(10), Op::One],
        ],
        probes: &[20, 30],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |_, _| {});
    report("token_refund_and_admission_race_set_rate", &TALLY);
}

// (10) Approximate window (limit 2, W = 2): a grant of window 0 is refunded while another
// thread moves to the start of window 1 and takes a permit. Proves: exact linearizability
// (no deviation): the refund restores into window 0's `cur` iff it precedes the rollover,
// else nothing; probes inside window 1 and in window 2 read `prev`, so a refund that landed
// in window 1's `cur` fails.
#[test]
fn approx_refund_races_rollover() {
    static MODEL: Model<ApproxSlidingWindow<ManualClock>, ApproxSlidingWindowSpec> = Model {
        build: |clock| {
            ApproxSlidingWindow::with_clock(
                WindowQuota::per(2, Duration::from_nanos(2)).unwrap(),
                clock.clone(),
            )
            .unwrap()
        },
        spec: || ApproxSlidingWindowSpec::new(2, Duration::from_nanos(2)).unwrap(),
        width: 2,
        ghost: false,
        setup: &[(0, Op::Grant(1))],
        start: 0,
        threads: &[&[Op::RefundSetup(0)], &[Op::SetClock(2), Op::One, Op::One]],
        probes: &[3, 4, 5],
    };
    static TALLY: Tally = Tally::new();
    MODEL.check(&TALLY, |_, seen| {
        // The second permit in window 1 iff the refund emptied window 0 first.
        assert_eq!(seen[1][2].handed(), seen[0][0].restored());
    });
    report("approx_refund_races_rollover", &TALLY);
}

#[allow(dead_code)]
fn _uses(_: Got) {}
