//! `SlidingLog`'s views: a view re-reads the head after reading its slot, so a stale head
//! never claims over the next lap's entry and a stale pending view neither moves a stamp
//! back nor livelocks; the limits word is read with Acquire, so a limit read never mixes
//! two changes.
//!
//! Run: `bash loom-tests/run sliding_log_views::`

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use ringlimit::clock::ManualClock;
use ringlimit::{RateLimiter, SlidingLog, WindowQuota};

fn n_admitted(l: &SlidingLog<ManualClock>, n: u64) -> u64 {
    if l.try_acquire_n(n).unwrap().is_admitted() {
        n
    } else {
        0
    }
}

// 1. Over-admission, single monotone clock, one preemption, against a `view()` that reads
// the head (seq 0) and only then slot 0, never re-reading the head. If C + 1 = 5 seqs are claimed in between, slot 0 holds seq 4's
// entry, whose lap parity (1) differs from seq 0's, so it classifies as Free. A then
// decides from slots 3 and 1 (seqs 3 and 1 of the *next* lap), finds room, and its CAS on
// slot 0 succeeds: it overwrites seq 4's in-window entry. Every time is 0 or 10 with a
// window of 10, so at most 3 + 3 = 6 permits can ever be admitted here (that view admits 7).
#[test]
fn a_stale_head_view_never_claims_over_the_next_lap_entry() {
    loom::model(|| {
        let clock = ManualClock::new();
        // limit 3, max 3: ring of C = 4 slots.
        let log = Arc::new(
            SlidingLog::with_clock(
                WindowQuota::per(3, Duration::from_nanos(10)).unwrap(),
                clock.clone(),
            )
            .unwrap(),
        );
        let a = {
            let l = log.clone();
            thread::spawn(move || u64::from(l.try_acquire()))
        };
        let b = {
            let (l, c) = (log.clone(), clock.clone());
            thread::spawn(move || {
                let mut n = n_admitted(&l, 3); // seqs 0..=2 at 0
                c.set_nanos(10);
                n += n_admitted(&l, 2); // seqs 3, 4 at 10
                n
            })
        };
        let mut total = a.join().unwrap() + b.join().unwrap();
        clock.set_nanos(10);
        total += u64::from(log.try_acquire());
        assert!(total <= 6, "admitted {total} permits, at most 6 fit");
    });
}

// 2. Livelock (every later call spins forever), no laps needed. H reads the head
// (seq 0, change 0, pending) and is preempted before reading slot 0. S's first set_limit
// stamps slot 0 with Stamp{change 0} and switches the head to change 1; its second stamps
// Stamp{change 1} and switches to change 2. H resumes, reads Stamp{1}, classifies it Free,
// and since its (stale) head says pending, `help_change` CASes Stamp{1} -> Stamp{0}: that
// CAS succeeds. Now the head shows change 2 and slot 0 a stamp of change 0: `stale()` is
// true for every view forever, `settled()` never returns, and nobody can repair the slot.
// Loom reports it as "Model exceeded maximum number of branches".
#[test]
fn a_stale_pending_view_never_moves_a_stamp_back() {
    loom::model(|| {
        let log = Arc::new(
            SlidingLog::with_max_limit(
                WindowQuota::per(1, Duration::from_nanos(10)).unwrap(),
                2,
                ManualClock::new(),
            )
            .unwrap(),
        );
        let s = {
            let l = log.clone();
            thread::spawn(move || {
                l.set_limit(2).unwrap();
                l.set_limit(1).unwrap();
            })
        };
        let h = {
            let l = log.clone();
            thread::spawn(move || l.try_acquire())
        };
        s.join().unwrap();
        h.join().unwrap();
        // Afterwards the limiter must still answer.
        let _ = log.try_acquire();
    });
}

// 4. `limit_of` loading the limits word Relaxed: a reader whose head view still shows change 0
// can read the limits word as rewritten for change 2 (same half), and nothing makes its
// `unchanged()` re-read see the stamps that came before that store, so it returns the limit
// of change 2 under the view of change 0. Here S sets 2 -> 3 -> 1 and T reads the limit
// twice: T sees 1 and then 3, an order no sequential run shows.
#[test]
fn a_limit_read_never_mixes_two_changes() {
    loom::model(|| {
        let log = Arc::new(
            SlidingLog::with_max_limit(
                WindowQuota::per(2, Duration::from_nanos(10)).unwrap(),
                3,
                ManualClock::new(),
            )
            .unwrap(),
        );
        let s = {
            let l = log.clone();
            thread::spawn(move || {
                l.set_limit(3).unwrap();
                l.set_limit(1).unwrap();
            })
        };
        let t = {
            let l = log.clone();
            thread::spawn(move || (l.limit(), l.limit()))
        };
        s.join().unwrap();
        let (first, second) = t.join().unwrap();
        assert!(
            !(first == 1 && second == 3),
            "limit() read 1 then 3 (set 2 -> 3 -> 1)"
        );
    });
}
