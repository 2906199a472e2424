//! [`AnyEngine`]: the window engine in the width its limits need, chosen when it is built.

use crate::error::ExceedsLimit;
use crate::layout::Layout;
use crate::limiter::{Admission, Decision, Grant};

use super::engine::{Engine, Lease};
use super::word::{Word128, Word64, Words, MAX_BUCKETS};

/// A window engine in 64-bit words (limits up to 2^20 - 1, the fast path one 64-bit CAS)
/// or in 128-bit words (limits up to 2^40 - 1, the CAS a `cmpxchg16b`). The width is fixed at build: every call dispatches on it (one predictable
/// branch) to the same algorithm.
///
/// The wide engine is boxed so that the enum needs no tag of its own: a tag beside a
/// cache-padded engine would cost a whole padded line (128 bytes) in every narrow window.
/// With the box beside it, the narrow engine (the larger variant) keeps a niche (its ring's
/// non-null pointer) that tells the variants apart; a test checks the sizes. A wide window
/// then holds the enum (a narrow engine's bytes) and the boxed wide engine.
pub(crate) enum AnyEngine<L: Layout> {
    Narrow(Engine<L, Word64>),
    Wide(Box<Engine<L, Word128>>),
}

/// Calls `$call` on the engine inside `$engine`, whatever its width.
macro_rules! each {
    ($engine:expr, $e:ident => $call:expr) => {
        match $engine {
            AnyEngine::Narrow($e) => $call,
            AnyEngine::Wide($e) => $call,
        }
    };
}

impl<L: Layout> AnyEngine<L> {
    /// An engine of `limit` (`1..=ceiling`) permits per `buckets` buckets (`1..=MAX_BUCKETS`)
    /// of `width >= 1` ns, in 64-bit words if `ceiling` (the largest limit it may be set to)
    /// fits them, else in 128-bit words. `ceiling` must be at most the wide engine's.
    pub(crate) fn new(limit: u64, ceiling: u64, width: u64, buckets: u64) -> Self {
        debug_assert!(limit <= ceiling && ceiling <= Word128::MAX_LIMIT);
        debug_assert!((1..=MAX_BUCKETS).contains(&buckets));
        if ceiling <= Word64::MAX_LIMIT {
            Self::Narrow(Engine::new(limit, width, buckets))
        } else {
            Self::Wide(Box::new(Engine::new(limit, width, buckets)))
        }
    }

    /// The largest limit [`set_limit`](Self::set_limit) accepts: the width's.
    pub(crate) fn max_limit(&self) -> u64 {
        match self {
            Self::Narrow(_) => Word64::MAX_LIMIT,
            Self::Wide(_) => Word128::MAX_LIMIT,
        }
    }

    pub(crate) fn footprint(&self) -> usize {
        match self {
            Self::Narrow(e) => e.footprint(),
            // The enum's bytes, and the boxed engine's.
            Self::Wide(e) => std::mem::size_of::<Self>() + e.footprint(),
        }
    }

    pub(crate) fn width(&self) -> u64 {
        each!(self, e => e.width())
    }

    pub(crate) fn buckets(&self) -> u64 {
        each!(self, e => e.buckets())
    }

    /// The hot path: the narrow engine's inlined into the caller, the wide one's called (so
    /// that its CAS loop does not keep the narrow one from inlining).
    #[inline]
    pub(crate) fn try_acquire(&self, now: u64) -> bool {
        match self {
            Self::Narrow(e) => e.try_acquire(now),
            Self::Wide(e) => Self::wide_try_acquire(e, now),
        }
    }

    #[inline(never)]
    fn wide_try_acquire(engine: &Engine<L, Word128>, now: u64) -> bool {
        engine.try_acquire(now)
    }

    pub(crate) fn try_acquire_n(&self, now: u64, n: u64) -> Result<Decision, ExceedsLimit> {
        each!(self, e => e.try_acquire_n(now, n))
    }

    pub(crate) fn lease(&self, now: u64, size: impl Fn(u64) -> u64) -> Lease {
        each!(self, e => e.lease(now, size))
    }

    pub(crate) fn try_grant(&self, now: u64, n: u64) -> Result<Admission, ExceedsLimit> {
        each!(self, e => e.try_grant(now, n))
    }

    pub(crate) fn refund_grant(&self, grant: Grant, now: u64) -> u64 {
        each!(self, e => e.refund_grant(grant, now))
    }

    pub(crate) fn refund(&self, epoch: u64, n: u64, now: Option<u64>) -> u64 {
        each!(self, e => e.refund(epoch, n, now))
    }

    #[inline]
    pub(crate) fn covers(&self, epoch: u64, now: u64) -> bool {
        each!(self, e => e.covers(epoch, now))
    }

    #[inline]
    pub(crate) fn is_current(&self, epoch: u64) -> bool {
        each!(self, e => e.is_current(epoch))
    }

    #[inline]
    pub(crate) fn has_room(&self, now: u64) -> bool {
        each!(self, e => e.has_room(now))
    }

    pub(crate) fn available(&self, now: u64) -> u64 {
        each!(self, e => e.available(now))
    }

    pub(crate) fn limit(&self) -> u64 {
        each!(self, e => e.limit())
    }

    /// `limit` must be in `1..=`[`max_limit`](Self::max_limit).
    pub(crate) fn set_limit(&self, limit: u64) {
        each!(self, e => e.set_limit(limit))
    }
}

impl<L: Layout> std::fmt::Debug for AnyEngine<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        each!(self, e => e.fmt(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{Compact, Padded};

    #[test]
    fn the_narrow_engine_costs_no_tag() {
        assert_eq!(
            std::mem::size_of::<AnyEngine<Padded>>(),
            std::mem::size_of::<Engine<Padded, Word64>>()
        );
        assert_eq!(
            std::mem::size_of::<AnyEngine<Compact>>(),
            std::mem::size_of::<Engine<Compact, Word64>>()
        );
    }
}
