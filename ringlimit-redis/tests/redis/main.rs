//! ringlimit-redis against a healthy real `redis-server`: each module pins one behaviour
//! of the limiters (exactness against the core's specs, bad input, foreign state, batches,
//! policies, leases, concurrency) or of the test servers themselves (`harness`). Each test
//! starts its own server (`tests/support`), so the tests of this crate run in parallel.
//! Faults of the server, the network and a Cluster are the `faults` test crate's.

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod batch;
mod clock_ahead;
mod concurrency;
mod exact;
mod foreign_state;
mod harness;
mod leased;
mod policy;
