//! How exact each algorithm is: the most admissions seen inside any interval of the window,
//! on adversarial traces.
//!
//! The most admissions seen inside any interval of length W, for a limit of N = 100 per
//! W = 1 s, on adversarial traces (`cargo test --all-features --test core precision:: -- --nocapture`, which also
//! asserts these bounds):
//!
//! | algorithm | 100 at 0.99 s, 100 at 1.00 s | 100 at 0.1 s - 1 ns, 100 at 1.0 s | end of each window, then start of the next | 100 at 0.999 s, then one every 1 ms for 1 s | steady 4x overload (one request every W/400) |
//! |---|---|---|---|---|---|
//! | fixed window | 200 | 200 | 200 | 200 | 100 |
//! | sliding window, 10 buckets | 100 | 200 | 100 | 199 | 100 |
//! | sliding window, 100 buckets | 100 | 100 | 100 | 109 | 100 |
//! | sliding log (exact) | 100 | 100 | 100 | 100 | 100 |
//! | approximate sliding window | 100 | 100 | 100 | 200 | 100 |
//!
//! The fixed window lets 2N through across a boundary; the bucketed sliding window holds N in
//! any interval of `W - W/B` but can still pass 2N inside W when bursts sit at the two far
//! bucket edges (more buckets shrink the slack); the sliding log is exact everywhere; the
//! two-counter approximation is only as good as its assumption that the previous window's
//! traffic was uniform.
