//! The free-running stress harness shared by the window stress tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use ringlimit::clock::{Clock, ManualClock};
use ringlimit::spec::Spec;
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

/// Lock-step run: `THREADS` threads make `calls` calls each between two barriers while the
/// clock stands still, `steps` times, every step checked against `spec` (which records the
/// step's admissions); the clock moves between steps. Returns (calls made, permits admitted).
pub fn lockstep<L, S>(
    limiter: &Arc<L>,
    spec: &mut S,
    clock: &ManualClock,
    steps: u64,
    calls: u64,
) -> (u64, u64)
where
    L: RateLimiter + Send + Sync + 'static,
    S: Spec,
{
    let start = Arc::new(Barrier::new(THREADS + 1));
    let end = Arc::new(Barrier::new(THREADS + 1));
    let (tx, rx) = std::sync::mpsc::channel::<(u64, u64, u64)>();
    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let (limiter, start, end, tx) =
                (limiter.clone(), start.clone(), end.clone(), tx.clone());
            thread::spawn(move || {
                let mut rng = XorShift(0x9E37_79B9 + id as u64);
                for _ in 0..steps {
                    start.wait();
                    // (admitted permits, smallest refused n, calls)
                    let (mut admitted, mut refused_min) = (0, u64::MAX);
                    for _ in 0..calls {
                        let n = if rng.next() % 8 == 0 {
                            1 + rng.next() % 3
                        } else {
                            1
                        };
                        let ok = if n == 1 {
                            limiter.try_acquire()
                        } else {
                            limiter
                                .try_acquire_n(n)
                                .map(|d| d.is_admitted())
                                .unwrap_or(false)
                        };
                        if ok {
                            admitted += n;
                        } else {
                            refused_min = refused_min.min(n);
                        }
                    }
                    tx.send((admitted, refused_min, calls)).unwrap();
                    end.wait();
                }
            })
        })
        .collect();
    let mut rng = XorShift(42);
    let (mut total_calls, mut total_admitted) = (0, 0);
    for step in 0..steps {
        // Mostly small moves inside and across buckets, sometimes far jumps.
        let dt = match rng.next() % 16 {
            0 => WIDTH * (1 + rng.next() % 64),
            1..=8 => rng.next() % WIDTH,
            _ => 0,
        };
        clock.advance_nanos(dt);
        let now = clock.now_nanos();
        let limit = spec.limit();
        let before = spec.available(now);
        start.wait();
        end.wait();
        let (mut admitted, mut refused_min) = (0, u64::MAX);
        for (a, r, c) in rx.try_iter() {
            admitted += a;
            refused_min = refused_min.min(r);
            total_calls += c;
        }
        total_admitted += admitted;
        assert!(
            admitted <= before,
            "step {step}: admitted {admitted} of {before} available"
        );
        if admitted > 0 {
            // Record the step's admissions in the spec, in chunks it accepts.
            let mut left = admitted;
            while left > 0 {
                let chunk = left.min(limit);
                assert!(spec.decide(now, chunk).unwrap().is_admitted());
                left -= chunk;
            }
        }
        let after = spec.available(now);
        assert_eq!(
            limiter.available(),
            after,
            "step {step}: availability disagrees"
        );
        assert!(
            refused_min == u64::MAX || after < refused_min,
            "step {step}: refused {refused_min} while {after} remained"
        );
    }
    drop(tx);
    for w in workers {
        w.join().unwrap();
    }
    (total_calls, total_admitted)
}
