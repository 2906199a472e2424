//! Precision on adversarial traces: for each algorithm, the most admissions seen inside any
//! interval of length W. Prints the README's table (run with `--nocapture`).
//!
//! `cargo test --test core precision:: -- --nocapture`

use std::time::Duration;

use ringlimit::clock::ManualClock;
use ringlimit::{
    ApproxSlidingWindow, FixedWindow, RateLimiter, SlidingLog, SlidingWindow, WindowQuota,
};

const N: u64 = 100;
const W: u64 = 1_000_000_000; // 1 s

/// A trace: request times in ns, nondecreasing, each one permit.
struct Trace {
    name: &'static str,
    times: Vec<u64>,
}

fn traces() -> Vec<Trace> {
    let burst = |at: u64, count: u64| std::iter::repeat_n(at, count as usize);
    let bucket = W / 10;
    vec![
        Trace {
            name: "100 at 0.99 s, 100 at 1.00 s",
            times: burst(990_000_000, N).chain(burst(W, N)).collect(),
        },
        Trace {
            name: "100 at 0.1 s - 1 ns, 100 at 1.0 s",
            times: burst(bucket - 1, N).chain(burst(W, N)).collect(),
        },
        Trace {
            name: "end of each window, then start of the next",
            times: (0..4)
                .flat_map(|k| burst(k * W + W - 1, N).chain(burst(k * W + W, N)))
                .collect(),
        },
        Trace {
            name: "100 at 0.999 s, then one every 1 ms for 1 s",
            times: burst(999_000_000, N)
                .chain((0..1000).map(|i| W + i * 1_000_000))
                .collect(),
        },
        Trace {
            name: "steady 4x overload (one request every W/400)",
            times: (0..4 * 400).map(|i| i * W / 400).collect(),
        },
    ]
}

/// The most admissions inside any half-open interval of length W.
fn max_in_any_window(admitted: &[u64]) -> u64 {
    let mut best = 0;
    let mut first = 0;
    for last in 0..admitted.len() {
        while admitted[last] - admitted[first] >= W {
            first += 1;
        }
        best = best.max(last - first + 1);
    }
    best as u64
}

fn run(limiter: &impl RateLimiter, clock: &ManualClock, trace: &Trace) -> u64 {
    let mut admitted = Vec::new();
    for &t in &trace.times {
        clock.set_nanos(t);
        if limiter.try_acquire() {
            admitted.push(t);
        }
    }
    max_in_any_window(&admitted)
}

type Make = fn(&ManualClock) -> Box<dyn RateLimiter>;

fn algorithms() -> Vec<(&'static str, Make, u64)> {
    // (name, constructor, the most its guarantee allows in any W)
    vec![
        (
            "fixed window",
            |c| {
                Box::new(
                    FixedWindow::builder(WindowQuota::per(N, Duration::from_nanos(W)).unwrap())
                        .clock(c.clone())
                        .build(),
                )
            },
            2 * N,
        ),
        (
            "sliding window, 10 buckets",
            |c| {
                Box::new(
                    SlidingWindow::builder(
                        WindowQuota::per(N, Duration::from_nanos(W))
                            .unwrap()
                            .buckets(10)
                            .unwrap(),
                    )
                    .clock(c.clone())
                    .build(),
                )
            },
            2 * N,
        ),
        (
            "sliding window, 100 buckets",
            |c| {
                Box::new(
                    SlidingWindow::builder(
                        WindowQuota::per(N, Duration::from_nanos(W))
                            .unwrap()
                            .buckets(100)
                            .unwrap(),
                    )
                    .clock(c.clone())
                    .build(),
                )
            },
            2 * N,
        ),
        (
            "sliding log (exact)",
            |c| {
                Box::new(
                    SlidingLog::with_clock(
                        WindowQuota::per(N, Duration::from_nanos(W)).unwrap(),
                        c.clone(),
                    )
                    .unwrap(),
                )
            },
            N,
        ),
        (
            "approximate sliding window",
            |c| {
                Box::new(
                    ApproxSlidingWindow::with_clock(
                        WindowQuota::per(N, Duration::from_nanos(W)).unwrap(),
                        c.clone(),
                    )
                    .unwrap(),
                )
            },
            2 * N,
        ),
    ]
}

#[test]
fn most_admitted_in_any_window() {
    let traces = traces();
    let mut table = String::from("| algorithm |");
    for t in &traces {
        table += &format!(" {} |", t.name);
    }
    table += "\n|---|";
    table += &"---|".repeat(traces.len());
    let mut results = Vec::new();
    for (name, make, bound) in algorithms() {
        table += &format!("\n| {name} |");
        for trace in &traces {
            let clock = ManualClock::new();
            let limiter = make(&clock);
            let worst = run(&limiter, &clock, trace);
            assert!(
                worst <= bound,
                "{name} on {}: {worst} > {bound}",
                trace.name
            );
            table += &format!(" {worst} |");
            results.push((name, trace.name, worst));
        }
    }
    println!("most admissions inside any interval of length W (limit N = {N}):\n{table}");
    let get = |algo: &str, trace: &str| {
        results
            .iter()
            .find(|r| r.0 == algo && r.1 == trace)
            .unwrap()
            .2
    };
    // The classic boundary burst: the fixed window lets 2N through in 10 ms.
    assert_eq!(get("fixed window", "100 at 0.99 s, 100 at 1.00 s"), 2 * N);
    assert_eq!(
        get("sliding window, 10 buckets", "100 at 0.99 s, 100 at 1.00 s"),
        N
    );
    // The exact log never lets more than N into any window.
    for trace in &traces {
        assert_eq!(get("sliding log (exact)", trace.name), N, "{}", trace.name);
    }
    // Uneven traffic in the previous window: the approximation lets half as much again in.
    assert!(
        get(
            "approximate sliding window",
            "100 at 0.999 s, then one every 1 ms for 1 s"
        ) > N
    );
    // Bursts at the far edges of the bucketed window: 2N inside W - w + 1 ns.
    assert_eq!(
        get(
            "sliding window, 10 buckets",
            "100 at 0.1 s - 1 ns, 100 at 1.0 s"
        ),
        2 * N
    );
}
