//! [`Timeline`]: where a limiter's times start and end on its clock, for the limiters that
//! store absolute times (the bucket family's schedule, the warm-up's next free time).
//!
//! Every time such a limiter stores or compares is in nanoseconds since `origin`, the
//! clock's reading when the limiter was built, so a clock counting from the Unix epoch
//! (about 2^60.6 ns today) works as well as one counting from the process start. Tickets
//! carry times on the clock itself ([`on_clock`](Timeline::on_clock)).

/// The origin and the last representable time of one limiter. `MAX_END` is the largest time
/// its state word holds; `CLAMP` saturates readings far past the origin (time then stands
/// still, which can only refuse more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeline<const MAX_END: u64, const CLAMP: u64> {
    /// The clock's reading when the limiter was made.
    pub(crate) origin: u64,
    /// The latest state time: `MAX_END`, or less where `origin + MAX_END` would pass
    /// `u64::MAX` on the clock.
    pub(crate) end: u64,
}

impl<const MAX_END: u64, const CLAMP: u64> Timeline<MAX_END, CLAMP> {
    pub(crate) fn new(origin: u64) -> Self {
        Self {
            origin,
            end: MAX_END.min(u64::MAX - origin),
        }
    }

    /// A clock reading as the limiter uses it: ns since the origin (0 below it), saturated
    /// at `CLAMP`.
    ///
    /// Both saturations are branches to a cold function rather than the conditional moves
    /// `saturating_sub(..).min(..)` compiles to: neither is taken in practice, a predicted
    /// branch costs nothing on the dependency chain from the clock's reading to the
    /// admission's CAS, which the conditional moves lengthened (measured in
    /// [the bucket guide](crate::guide::bucket#the-hot-path)).
    #[inline]
    pub(crate) fn since(&self, now_raw: u64) -> u64 {
        let since = now_raw.wrapping_sub(self.origin);
        if now_raw >= self.origin && since <= CLAMP {
            since
        } else {
            self.saturated(now_raw)
        }
    }

    /// [`since`](Self::since) for a reading before the origin or past `CLAMP`.
    #[cold]
    #[inline(never)]
    fn saturated(&self, now_raw: u64) -> u64 {
        now_raw.saturating_sub(self.origin).min(CLAMP)
    }

    /// A limiter time (at most `end`) as a reading of the clock.
    #[inline]
    pub(crate) fn on_clock(&self, time: u64) -> u64 {
        // `time <= end <= u64::MAX - origin`: no overflow; saturating keeps a foreign value
        // panic-free.
        self.origin.saturating_add(time)
    }

    /// A reading of the clock (a ticket's time) as a limiter time; 0 below the origin.
    #[inline]
    pub(crate) fn since_origin(&self, at: u64) -> u64 {
        at.saturating_sub(self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_relative_to_the_origin_and_saturate() {
        let line = Timeline::<100, 50>::new(1_000);
        assert_eq!(
            (line.since(900), line.since(1_010), line.since(u64::MAX)),
            (0, 10, 50)
        );
        assert_eq!((line.on_clock(10), line.since_origin(1_010)), (1_010, 10));
        assert_eq!(Timeline::<100, 50>::new(u64::MAX - 7).end, 7);
    }
}
