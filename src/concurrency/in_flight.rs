//! The in-flight rule: acquire `n` iff `in_flight + n <= limit`, the one transition the
//! spec, the lock-free [`ConcurrencyLimiter`](crate::ConcurrencyLimiter) and the
//! [`ConcurrencyCell`](crate::cell::ConcurrencyCell) all apply.

use crate::error::ExceedsLimit;

use super::word::State;

/// The outcome of [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Admit: the state becomes `next` (unchanged for `n = 0`), leaving `remaining`.
    Admit { next: State, remaining: u64 },
    /// Refuse, nothing changes; `available` permits are free (fewer than asked for).
    Refuse { available: u64 },
}

/// Permits free in `state`: `limit - in_flight`, 0 while a lowered limit is over-subscribed.
pub(crate) fn available(state: State) -> u64 {
    state.limit.saturating_sub(state.in_flight)
}

/// Decides `n` permits in `state`: the one transition the spec and the lock-free limiter
/// both apply.
pub(crate) fn decide(state: State, n: u64) -> Result<Verdict, ExceedsLimit> {
    if n > state.limit {
        return Err(ExceedsLimit {
            requested: n,
            limit: state.limit,
        });
    }
    let free = available(state);
    Ok(if n <= free {
        Verdict::Admit {
            next: State {
                // `n <= free` so this is at most `limit`: no overflow, no carry.
                in_flight: state.in_flight + n,
                ..state
            },
            remaining: free - n,
        }
    } else {
        Verdict::Refuse { available: free }
    })
}
