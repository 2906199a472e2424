//! # ringlimit-redis
//!
//! ringlimit's limits shared by many machines: each decision is one Lua script on Redis (or
//! Redis Cluster), atomic on the server, on the server's clock, with a failure policy
//! stated per limiter for when Redis does not answer.
//!
//! | algorithm | [`Algorithm`] | state per key on Redis | admits `n` at server time `t` (µs) iff |
//! |---|---|---|---|
//! | fixed window (N, W) | `FixedWindow` | a hash `{w, c}` | `c[t/W] + n <= N` |
//! | sliding window, bucketed (N, W, B) | `SlidingWindow` | a hash of bucket counts | `sum(c[e-B+1..=e]) + n <= N`, `e = t/(W/B)` |
//! | sliding log, exact (N, W) | `SlidingLog` | a sorted set (one member per permit) and a sequence | `#{s in (t-W, t]} + n <= N` |
//! | token bucket, GCRA (period T, burst b) | `TokenBucket` | one integer (`tat`) | `max(tat, t) + n*T - t <= b*T` |
//! | concurrency (C in flight) | [`RedisConcurrency`] | a sorted set of leases scored by expiry | `sum(live leases) + n <= C` |
//! | leased fixed window | [`LeasedWindow`] | as the fixed window | batches leased into a local pool |
//!
//! Each script decides exactly as the in-process sequential spec of its algorithm
//! (`ringlimit::spec`) would at the server's time, windows aligned to the Unix epoch: the
//! tests replay every decision of many concurrent clients through the spec.
//!
//! - **Time** is the server's `TIME`, never a client's (clocks disagree), in whole
//!   microseconds. A window or bucket must be a whole number of µs; a token bucket's period
//!   is rounded up to one (never a faster rate than asked).
//! - **Exact arithmetic.** Every quantity a script computes is an integer below 2^53, exact
//!   in Lua's doubles: times are about 2^51 µs today, and quotas are checked at build
//!   ([`QuotaError`]) to keep spans under 2^50 µs ([`MAX_SPAN_MICROS`], 35 years) and limits
//!   under 2^50 ([`MAX_LIMIT`]).
//! - **Every key has a TTL** that ends when its state is as good as none (the window over,
//!   the bucket full, the last admission out of the log, the last lease expired).
//! - **Scripts** are sent by `EVALSHA` and loaded again on `NOSCRIPT` (after a restart,
//!   `SCRIPT FLUSH` or a Cluster failover: scripts are per node).
//! - **Keys** are `ringlimit:<limiter>:<key>`, wrapped in `{…}` unless the key carries a hash
//!   tag of its own: a limiter's keys (the log's two) always share a slot, and dimensions
//!   keyed by one tag (`{user:42}`) share a slot, so a [`RedisPolicy`] decides them in one
//!   script, all or nothing, atomically; across slots it admits, then refunds.
//! - **Failure policy** ([`OnFailure`]): fail closed (the default), fail open, or decide with
//!   this node's share of the quota in process (quota / live nodes of a [`Fleet`], from
//!   expiring heartbeats). Every call has a timeout ([`DEFAULT_TIMEOUT`], 50 ms); after a
//!   failure, calls skip Redis for [`RETRY_AFTER_FAILURE`] (the failure policy decides at
//!   once), then try again. Every fallback decision is counted
//!   (`ringlimit_redis_fallback_decisions_total`, through the `metrics` facade) and says so
//!   in its [`Verdict::source`].
//! - **Leased mode** ([`LeasedWindow`]): a node leases batches of permits into a lock-free
//!   local pool; most decisions never leave the process; never over-admits; under-admits at
//!   most nodes × batch per window; the batch shrinks as the window runs out.
//!
//! The API is the in-process one, async: `try_acquire`, `try_acquire_n` (a
//! [`ringlimit::outcome::Decision`]), `available`, and [`RedisPolicy::check`] (a
//! [`ringlimit::policy::PolicyDecision`]); [`Blocking`] runs them from synchronous code.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use ringlimit::BucketQuota;
//! use ringlimit_redis::{Algorithm, Connection, OnFailure, RedisLimiter};
//! let connection = Connection::open("redis://127.0.0.1:6379/")?;
//! let per_user = RedisLimiter::builder(&connection, "per_user", Algorithm::TokenBucket(BucketQuota::per_second(10)?))
//!     .on_failure(OnFailure::Closed)
//!     .build()?;
//! if per_user.try_acquire("user:42").await? {
//!     // serve the request
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod algorithm;
mod batch;
mod blocking;
mod cluster;
mod concurrency;
mod connection;
mod error;
mod failure;
mod fleet;
mod health;
mod key;
mod leased;
mod limiter;
mod link;
mod policy;
mod reply;
mod script;
mod verdict;

pub use algorithm::{Algorithm, QuotaError, MAX_LIMIT, MAX_SPAN_MICROS};
pub use blocking::Blocking;
pub use concurrency::{Lease, LeaseDecision, RedisConcurrency};
pub use connection::{Connection, DEFAULT_TIMEOUT};
pub use error::Error;
pub use failure::OnFailure;
pub use fleet::Fleet;
pub use health::RETRY_AFTER_FAILURE;
pub use key::{KeyTooLong, DEFAULT_MAX_KEY_LEN};
pub use leased::{LeasedWindow, LeasedWindowBuilder, MAX_BATCH, MIN_WINDOW};
pub use limiter::{RedisLimiter, RedisLimiterBuilder, DEFAULT_PREFIX};
pub use policy::{PolicyVerdict, RedisPolicy, RedisPolicyBuilder};
pub use verdict::{Source, Verdict};
