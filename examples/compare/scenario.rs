//! The three load scenarios, configured per limiter family, and the calibration of the
//! at-limit one.

use std::time::Duration;

use ringlimit::SlidingLog;

use crate::harness::Plan;
use crate::limiters::{Config, Family, Implementation, Limiter};

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

/// The allow scenario's limit: the largest every window-shaped limiter holds (the sliding
/// log's, the approximate window's and the 64-bit window words': 2^20 − 1), per millisecond
/// (about 10^9 per second, beyond what any thread count here can offer). The tool checks it
/// is never reached.
const ALLOW: Config = Config {
    limit: SlidingLog::MAX_LIMIT,
    window: Duration::from_millis(1),
};

/// The deny scenario's limit: one per hour, taken before the timed region starts.
const DENY: Config = Config {
    limit: 1,
    window: Duration::from_secs(3600),
};

/// The at-limit scenario's window.
const AT_LIMIT_WINDOW: Duration = Duration::from_millis(1);

/// The bucket family's allow scenario: one permit per ns (the fastest [`ringlimit::Rate`]),
/// a burst of 1000; no thread count here reaches 10^9 calls per second.
const BUCKET_ALLOW: Config = Config::bucket(1, 1000);

/// The burst-less limiters' allow scenario: one permit per 4 ns. The warm-up limiter's bound
/// needs T > 3 ns (see `bounds::warm_up_spacing`); the shaper takes the same. Refusals still
/// happen with several threads: a call whose clock reading is older than another thread's
/// last admission plus T finds its slot taken (the spec refuses it too).
const PACED_ALLOW: Config = Config::bucket(4, 1);

/// The bucket family's deny scenario: one permit per hour, burst 1, taken before timing.
const BUCKET_DENY: Config = Config::bucket(3_600_000_000_000, 1);

/// The token bucket's and meter's burst in the at-limit scenario: small, so refusals are
/// frequent.
const AT_LIMIT_BURST: u64 = 4;

/// The concurrency limiter's C: allow, never all held (at most one permit per thread);
/// deny, all held before timing; at limit, one, so any two threads contend.
const CONCURRENCY_ALLOW: u64 = 1000;
const CONCURRENCY_DENY: u64 = 1;
const CONCURRENCY_AT_LIMIT: u64 = 1;

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

    /// A limiter of `family`'s configuration; `at_limit` is the calibrated rate, in
    /// permits per 1 ms.
    pub fn config(self, family: Family, at_limit: u64) -> Config {
        // The calibrated rate as a period: whole ns, rounded up (so at most `at_limit`).
        let period = 1_000_000u64.div_ceil(at_limit.max(1));
        match (family, self) {
            (Family::Window, Self::Allow) => ALLOW,
            (Family::Window, Self::Deny) => DENY,
            (Family::Window, Self::AtLimit) => Config {
                limit: at_limit,
                window: AT_LIMIT_WINDOW,
            },
            (Family::Bucket, Self::Allow) => BUCKET_ALLOW,
            (Family::Paced, Self::Allow) => PACED_ALLOW,
            (Family::Bucket | Family::Paced, Self::Deny) => BUCKET_DENY,
            (Family::Bucket, Self::AtLimit) => Config::bucket(period, AT_LIMIT_BURST),
            // At least PACED_ALLOW's period, for the warm-up bound.
            (Family::Paced, Self::AtLimit) => {
                Config::bucket(period.max(PACED_ALLOW.period_nanos()), 1)
            }
            (Family::Concurrency, Self::Allow) => Config {
                limit: CONCURRENCY_ALLOW,
                window: Duration::ZERO,
            },
            (Family::Concurrency, Self::Deny) => Config {
                limit: CONCURRENCY_DENY,
                window: Duration::ZERO,
            },
            (Family::Concurrency, Self::AtLimit) => Config {
                limit: CONCURRENCY_AT_LIMIT,
                window: Duration::ZERO,
            },
        }
    }

    /// What the scenario does, for the block heading.
    pub fn describe(self, family: Family, config: Config) -> String {
        let measured = "half parking_lot's single-thread rate, measured now";
        match family {
            Family::Window => {
                let per = format_duration(config.window);
                match self {
                    Self::Allow => format!("limit {} per {per}, never reached", config.limit),
                    Self::Deny => {
                        format!("limit {} per {per}, exhausted before timing", config.limit)
                    }
                    Self::AtLimit => format!(
                        "limit {} per {per} ({measured}): refusals and rollovers every \
                         millisecond",
                        config.limit
                    ),
                }
            }
            Family::Bucket | Family::Paced => {
                let bucket = format!(
                    "one permit per {}, burst {}",
                    format_duration(config.gcra_period()),
                    config.limit
                );
                match self {
                    Self::Allow if family == Family::Paced => {
                        format!("{bucket}, faster than any thread asks")
                    }
                    Self::Allow => format!("{bucket}, never empty"),
                    Self::Deny => format!("{bucket}, used up before timing"),
                    Self::AtLimit => format!("{bucket} ({measured}): frequent refusals"),
                }
            }
            Family::Concurrency => match self {
                Self::Allow => format!("C = {}, never all held", config.limit),
                Self::Deny => format!("C = {}, all held before timing", config.limit),
                Self::AtLimit => format!("C = {}: every thread beyond one contends", config.limit),
            },
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
    let allow = Scenario::Allow.config(limiter.family, 1);
    let per_ms = match (limiter.run)(Implementation::ParkingLot, allow, &plan) {
        Ok(Some(sample)) => {
            (sample.calls as f64 / sample.elapsed.as_secs_f64().max(1e-9) / 1000.0) as u64
        }
        // No mutex version: a rate any implementation reaches on this machine.
        _ => 10_000,
    };
    (per_ms / 2).clamp(1, SlidingLog::MAX_LIMIT)
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
