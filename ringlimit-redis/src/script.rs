//! The Lua scripts, assembled from `src/lua/`: one per algorithm (the prelude, the
//! algorithm, a one-pass decision), one for policies (every algorithm, so one script can decide
//! several dimensions atomically), and the refund, concurrency, lease and heartbeat
//! scripts. redis-rs sends each by `EVALSHA` and loads it again when a server answers
//! `NOSCRIPT` (after a restart, `SCRIPT FLUSH` or a failover).

use std::sync::LazyLock;

use redis::Script;

use crate::algorithm::Code;

const PRELUDE: &str = include_str!("lua/prelude.lua");
const FIXED: &str = include_str!("lua/fixed_window.lua");
const SLIDING: &str = include_str!("lua/sliding_window.lua");
const LOG: &str = include_str!("lua/sliding_log.lua");
const GCRA: &str = include_str!("lua/gcra.lua");
const DECIDE: &str = include_str!("lua/decide.lua");
const SINGLE: &str = include_str!("lua/single.lua");
const BATCH: &str = include_str!("lua/batch.lua");
const REFUND: &str = include_str!("lua/refund.lua");

fn assemble(parts: &[&str]) -> Script {
    Script::new(&parts.join("\n"))
}

static FIXED_WINDOW: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, FIXED, SINGLE]));
static SLIDING_WINDOW: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, SLIDING, SINGLE]));
static SLIDING_LOG: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, LOG, SINGLE]));
static TOKEN_BUCKET: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, GCRA, SINGLE]));
static POLICY: LazyLock<Script> =
    LazyLock::new(|| assemble(&[PRELUDE, FIXED, SLIDING, LOG, GCRA, DECIDE]));
static BATCH_ANY: LazyLock<Script> =
    LazyLock::new(|| assemble(&[PRELUDE, FIXED, SLIDING, LOG, GCRA, BATCH]));
static BATCH_FIXED: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, FIXED, BATCH]));
static BATCH_SLIDING: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, SLIDING, BATCH]));
static BATCH_LOG: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, LOG, BATCH]));
static BATCH_GCRA: LazyLock<Script> = LazyLock::new(|| assemble(&[PRELUDE, GCRA, BATCH]));
static REFUND_ANY: LazyLock<Script> =
    LazyLock::new(|| assemble(&[PRELUDE, FIXED, SLIDING, LOG, GCRA, REFUND]));
static CONCURRENCY: LazyLock<Script> =
    LazyLock::new(|| assemble(&[PRELUDE, include_str!("lua/concurrency.lua")]));
static LEASE: LazyLock<Script> =
    LazyLock::new(|| assemble(&[PRELUDE, FIXED, include_str!("lua/lease.lua")]));
static HEARTBEAT: LazyLock<Script> =
    LazyLock::new(|| assemble(&[PRELUDE, include_str!("lua/heartbeat.lua")]));

/// The script deciding one dimension of algorithm `code`.
pub(crate) fn decide(code: Code) -> &'static Script {
    match code {
        Code::FixedWindow => &FIXED_WINDOW,
        Code::SlidingWindow => &SLIDING_WINDOW,
        Code::SlidingLog => &SLIDING_LOG,
        Code::TokenBucket => &TOKEN_BUCKET,
    }
}

/// The script deciding several dimensions of any algorithms at once.
pub(crate) fn policy() -> &'static Script {
    &POLICY
}

/// The script deciding several independent one-dimension requests in order: of algorithm
/// `code` only, or of any (`None`). Each call runs its whole script, defining every
/// algorithm it holds (about a quarter of a call's fixed cost for all four).
pub(crate) fn batch(code: Option<Code>) -> &'static Script {
    match code {
        Some(Code::FixedWindow) => &BATCH_FIXED,
        Some(Code::SlidingWindow) => &BATCH_SLIDING,
        Some(Code::SlidingLog) => &BATCH_LOG,
        Some(Code::TokenBucket) => &BATCH_GCRA,
        None => &BATCH_ANY,
    }
}

/// The script giving grants back.
pub(crate) fn refund() -> &'static Script {
    &REFUND_ANY
}

/// The concurrency limit's script (acquire, release, renew).
pub(crate) fn concurrency() -> &'static Script {
    &CONCURRENCY
}

/// The leased mode's script.
pub(crate) fn lease() -> &'static Script {
    &LEASE
}

/// The fleet's heartbeat script.
pub(crate) fn heartbeat() -> &'static Script {
    &HEARTBEAT
}
