//! Design notes: how the lock-free limiters work, why they are exact, and what they cost.
//! The words they coin are defined in the [`glossary`].
//!
//! Each page starts with a summary, gives the protocol and the proof, shows a behaviour in a
//! doc-tested example (usually on a [`ManualClock`](crate::clock::ManualClock)), and ends
//! with its residual assumptions and bounds stated plainly.
//!
//! | page | what it covers |
//! |---|---|
//! | [`glossary`] | the words the guide and the code coin (word, gen, head, claim, install, label, tag, epoch, lease, ...), each in one meaning |
//! | [`tour`] | the API with examples: which limiter to use, the traits, quotas, grants, keyed limiters, waits, clocks, policies, rules, metrics, the integrations |
//! | [`engines`] | how the lock-free limiters work, in one page: the words each family decides on |
//! | [`precision`] | how exact each algorithm is, on adversarial traces |
//! | [`contract`] | linearizable with respect to a sequential spec: no over-admission, no spurious refusal |
//! | [`window`] | the window engine of [`SlidingWindow`](crate::SlidingWindow) and [`FixedWindow`](crate::FixedWindow): fast path, rollover (claim, publish, install), far jumps, `set_limit`, the ABA bound; fixed-window cells sharing one configuration |
//! | [`sharded`] | [`ShardedWindow`](crate::ShardedWindow): leases per core, why it never over-admits, what it under-admits |
//! | [`sharded_bucket`] | [`ShardedBucket`](crate::ShardedBucket): GCRA leases per core, the slot rule, why it never over-admits, what it under-admits |
//! | [`bucket`] | the GCRA engine of [`TokenBucket`](crate::TokenBucket) and [`LeakyBucket`](crate::LeakyBucket) (meter and shaper), reconfiguration order, cells sharing one configuration (lazy conversion and its proof), time and overflow, the ABA residual |
//! | [`approx`] | [`ApproxSlidingWindow`](crate::ApproxSlidingWindow): two counters, claim and install, full-width claims; its cell sharing a configuration |
//! | [`log`] | [`SlidingLog`](crate::SlidingLog): a ring indexed by sequence number, groups, limit stamps |
//! | [`warm_up`] | [`WarmUp`](crate::WarmUp): Guava's curve on one 128-bit word, reconfiguration and cancellation |
//! | [`concurrency`] | [`ConcurrencyLimiter`](crate::ConcurrencyLimiter): one word, no ABA |
//! | `keyed_table` | the table a bounded [`Keyed`](crate::keyed::Keyed) limiter keeps its cells in: slots, lookup, insertion, sweeps and grace periods, the collision bound (feature `keyed`) |
//! | [`refunds`] | [`Grant`](crate::outcome::Grant)s and [`RateLimiter::refund`](crate::RateLimiter::refund): what a refund restores, per limiter, and why it never over-admits |
//! | [`waiting`] | [`Wait`](crate::Wait) and [`Reserve`](crate::Reserve): one step, two loops; no lost wake-up |
//! | [`clocks`] | time never moves backwards; clocks that disagree |
//! | [`layouts`] | [`Padded`](crate::cell::Padded) vs [`Compact`](crate::cell::Compact), in bytes |

pub mod approx;
pub mod bucket;
pub mod clocks;
pub mod concurrency;
pub mod contract;
pub mod engines;
pub mod glossary;
#[cfg(feature = "keyed")]
pub mod keyed_table;
pub mod layouts;
pub mod log;
pub mod precision;
pub mod refunds;
pub mod sharded;
pub mod sharded_bucket;
pub mod tour;
pub mod waiting;
pub mod warm_up;
pub mod window;
