//! The limiter families one by one and side by side: each cell and engine against its spec,
//! refunds, waits, the sharded mode, edges and precision.

#[path = "../common/mod.rs"]
mod common;

mod bucket_common;

mod approx_window;
#[cfg(feature = "tokio")]
mod async_buckets;
mod bucket_cells;
mod concurrency;
mod contended;
mod edges;
mod exceeds_limit;
mod gcra_reconfig;
mod leaky_bucket;
mod log_cells;
mod narrow_limits;
mod precision;
mod quotas;
mod refund;
mod refund_bounds;
mod sharded;
mod sharded_bucket;
mod sliding_cells;
mod sliding_log;
mod timed_waits;
mod token_bucket;
mod unix_origin;
mod waiting;
mod warm_up;
mod warm_up_cells;
mod warm_up_exact;
mod warm_up_small_periods;
mod wide_window;
mod window_cells;
mod window_vs_spec;
