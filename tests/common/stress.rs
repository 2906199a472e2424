//! The free-running stress harness shared by the window stress tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use ringlimit::clock::{Clock, ManualClock};
use ringlimit::RateLimiter;

/// Admitting threads.
pub const THREADS: usize = 4;
/// The bucket width the harness's epochs are measured in, ns.
pub const WIDTH: u64 = 1_000;

/// A small deterministic generator, so failures reproduce.
pub struct XorShift(pub u64);
impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Free-running run with a ticking clock; returns (calls, admissions logged, epochs crossed).
pub fn free_running<L>(
    limiter: L,
    clock: ManualClock,
    limit: u64,
    buckets: u64,
    epochs: u64,
) -> (u64, usize, u64)
where
    L: RateLimiter + Send + Sync + 'static,
{
    let limiter = Arc::new(limiter);
    let done = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (clock, done) = (clock.clone(), done.clone());
        thread::spawn(move || {
            let mut rng = XorShift(7);
            while clock.now_nanos() / WIDTH < epochs {
                clock.advance_nanos(rng.next() % (WIDTH / 2));
                thread::sleep(Duration::from_micros(10));
            }
            done.store(true, Ordering::Relaxed);
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let (limiter, clock, done) = (limiter.clone(), clock.clone(), done.clone());
            thread::spawn(move || {
                let mut rng = XorShift(0xDEAD_BEEF + id as u64);
                let mut log = Vec::new();
                let mut calls = 0u64;
                while !done.load(Ordering::Relaxed) {
                    calls += 1;
                    let n = if rng.next() % 16 == 0 { 2 } else { 1 };
                    let lo = clock.now_nanos() / WIDTH;
                    let ok = if n == 1 {
                        limiter.try_acquire()
                    } else {
                        limiter.try_acquire_n(n).is_ok_and(|d| d.is_admitted())
                    };
                    let hi = clock.now_nanos() / WIDTH;
                    if ok {
                        log.push((lo, hi, n));
                    }
                }
                (calls, log)
            })
        })
        .collect();
    let mut log = Vec::new();
    let mut calls = 0;
    for worker in workers {
        let (c, l) = worker.join().unwrap();
        calls += c;
        log.extend(l);
    }
    ticker.join().unwrap();
    let last = log.iter().map(|e| e.1).max().unwrap_or(0);
    // in_window[a] = permits whose epoch range lies wholly inside [a, a + B - 1]: a
    // difference array over a in [hi - B + 1, lo].
    let mut diff = vec![0i64; last as usize + 2];
    for &(lo, hi, n) in &log {
        if hi - lo < buckets {
            let first = (hi + 1).saturating_sub(buckets);
            diff[first as usize] += n as i64;
            diff[lo as usize + 1] -= n as i64;
        }
    }
    let mut in_window = 0i64;
    for (a, d) in diff.iter().enumerate() {
        in_window += d;
        assert!(
            in_window <= limit as i64,
            "{in_window} permits inside the window of epochs {a}..{} (limit {limit})",
            a as u64 + buckets - 1
        );
    }
    (calls, log.len(), last)
}
