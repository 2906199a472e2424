//! Loom models of ringlimit's lock-free limiters, one module per family or mechanism, and
//! the models several of them share (`*_model`). Built only under `--cfg loom`:
//! `bash loom-tests/run` runs them all; `bash loom-tests/run window_epochs::` runs one
//! module (any test-name filter works).
#![cfg(loom)]

mod bucket_model;
mod exceeds_model;
mod refund_model;
mod sharded_model;
mod warm_up_model;

mod approx_window;
mod approx_window_exceeds_limit;
mod bucket_cells;
mod concurrency;
mod concurrency_cells;
mod gcra_reconfig;
mod keyed;
mod keyed_narrow;
mod keyed_self_race;
mod keyed_sweep_raise;
mod keyed_table;
mod leaky_bucket;
mod log_cells;
mod policy;
mod refund;
mod sharded;
mod sharded_bucket;
mod sharded_leases;
mod sliding_cell_refunds;
mod sliding_cells;
mod sliding_log;
mod sliding_log_views;
mod token_bucket;
mod warm_up;
mod warm_up_cells;
mod warm_up_fast_refusals;
mod warm_up_seqlock;
mod wide_refunds_and_shards;
mod window;
mod window_cells;
mod window_epochs;
mod window_wide;
