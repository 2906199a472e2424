//! The three load scenarios, and the calibration of the at-limit one.

use std::time::Duration;

use ringlimit::MAX_LIMIT;

use crate::harness::Plan;
use crate::limiters::{Config, Implementation, Limiter};

/// A load scenario: what limit the limiter is configured with, and its state at the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// The limit is never reached: every call is admitted.
    Allow,
    /// The limit is exhausted before timing: every call is refused.
    Deny,
    /// Offered load near the limit, with 1 ms windows rolling over often.
    AtLimit,
}

/// The allow scenario's limit: the largest a window can count, per millisecond (about 10^9
/// per second, beyond what any thread count here can offer). The tool checks it is never
/// reached.
const ALLOW: Config = Config {
    limit: MAX_LIMIT,
    window: Duration::from_millis(1),
};

/// The deny scenario's limit: one per hour, taken before the timed region starts.
const DENY: Config = Config {
    limit: 1,
    window: Duration::from_secs(3600),
};

/// The at-limit scenario's window.
const AT_LIMIT_WINDOW: Duration = Duration::from_millis(1);

impl Scenario {
    /// All of them, in output order.
    pub const ALL: [Self; 3] = [Self::Allow, Self::Deny, Self::AtLimit];

    /// The name the output shows and `--only` matches.
    pub fn name(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::AtLimit => "at_limit",
        }
    }

    /// The limiter's configuration; `at_limit` is the calibrated limit per 1 ms.
    pub fn config(self, at_limit: u64) -> Config {
        match self {
            Self::Allow => ALLOW,
            Self::Deny => DENY,
            Self::AtLimit => Config {
                limit: at_limit,
                window: AT_LIMIT_WINDOW,
            },
        }
    }

    /// What the scenario does, for the block heading.
    pub fn describe(self, config: Config) -> String {
        let per = format_duration(config.window);
        match self {
            Self::Allow => format!("limit {} per {per}, never reached", config.limit),
            Self::Deny => format!("limit {} per {per}, exhausted before timing", config.limit),
            Self::AtLimit => format!(
                "limit {} per {per} (half parking_lot's single-thread rate, measured now): \
                 refusals and rollovers every millisecond",
                config.limit
            ),
        }
    }

    /// Whether the limiter is exhausted before timing.
    pub fn exhausts(self) -> bool {
        self == Self::Deny
    }
}

/// The at-limit limit of `limiter`: half the calls per millisecond its spec under
/// `parking_lot::Mutex` makes on one thread when nothing is refused, so even one thread of
/// the slowest implementation on a busy machine fills every window, and more threads offer
/// more.
pub fn calibrate(limiter: &Limiter, duration: Duration) -> u64 {
    let plan = Plan {
        threads: 1,
        duration,
        exhaust: false,
        audit: false,
    };
    let per_ms = match (limiter.run)(Implementation::ParkingLot, ALLOW, &plan) {
        Ok(Some(sample)) => {
            (sample.calls as f64 / sample.elapsed.as_secs_f64().max(1e-9) / 1000.0) as u64
        }
        // No mutex version: a rate any implementation reaches on this machine.
        _ => 10_000,
    };
    (per_ms / 2).clamp(1, MAX_LIMIT)
}

/// `1 ms`, `1 h`, or plain ns.
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    match nanos {
        n if n % 3_600_000_000_000 == 0 => format!("{} h", n / 3_600_000_000_000),
        n if n % 1_000_000_000 == 0 => format!("{} s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{} ms", n / 1_000_000),
        n => format!("{n} ns"),
    }
}
