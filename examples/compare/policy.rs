//! Policy rows: the service path, one request checked against four limits at once.
//!
//! A check asks one permit of four dimensions: a global token bucket (10^9/s, burst 10^6),
//! an API sliding window, a per-IP fixed window and a per-user sliding window (each 10^6
//! per ms). The quotas are far above what the threads reach, so nearly every check is
//! admitted and does all four admissions (the rows report the admitted fraction: a key
//! that the bounded table could not place is refused, every time it is drawn). Each
//! thread draws the request's user and IP at random from [`USERS`] users and [`IPS`] IPs
//! with the keyed rows' cheap draw ([`crate::keyed::Draw`]).
//!
//! Implementations:
//! - `lock_free`: a [`ringlimit::policy::Policy`] of the four, built as `benches/policy.rs`
//!   builds it, the keyed dimensions bounded (`.max_keys`) at their key sets, so their cells
//!   are in the fixed table, as a service builds them;
//! - `parking_lot`: the same four dimensions over `parking_lot` mutexes, as
//!   `benches/policy.rs` has them: each dimension's spec (the keyed ones per key in a
//!   `HashMap`) behind its own mutex, checked in the same order, earlier grants refunded
//!   when one refuses;
//! - `governor`: four governor limiters of the equivalent quotas (windows as GCRA: one
//!   permit per W/N with burst N), two of them keyed (`RateLimiter::keyed`, per IP and per
//!   user), checked one after the other without refunds.
//!
//! Every map hashes with std's `RandomState` (SipHash). Each implementation is built once
//! and every key of both sets asked once before timing, so the timed checks find their keys;
//! then, per thread count, the samples are interleaved across the implementations (first of
//! each, then second of each) and the median reported, each sample timed as the keyed rows
//! are ([`crate::keyed::timed`]). `ns_per_check` is wall ns per check per thread:
//! threads / (checks per second of all threads together).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use ringlimit::cell::{SlidingConfig, WindowConfig};
use ringlimit::clock::{Clock, TscClock};
use ringlimit::keyed::{FixedWindows, Keyed, SlidingWindows};
use ringlimit::outcome::Admission;
use ringlimit::policy::Policy;
use ringlimit::spec::{FixedWindowSpec, SlidingWindowSpec, Spec, TokenBucketSpec};
use ringlimit::{BucketQuota, Rate, SlidingWindow, TokenBucket, WindowQuota};

use crate::cli::Options;
use crate::keyed::Draw;
use crate::limiters::Implementation;

/// The rows' `limiter` name, which `--only` matches.
pub const NAME: &str = "policy";

/// The implementations, in column order.
pub const IMPLEMENTATIONS: [Implementation; 3] = [
    Implementation::LockFree,
    Implementation::ParkingLot,
    Implementation::Governor,
];

/// Users and IPs the requests are drawn from (each dimension's `max_keys` for lock_free).
pub const USERS: u64 = 10_000;
pub const IPS: u64 = 10_000;

/// The windows' quota: N per W.
const WINDOW_LIMIT: u64 = 1_000_000;
const WINDOW: Duration = Duration::from_millis(1);
/// The global token bucket: a rate per second and a burst.
const GLOBAL_RATE: u64 = 1_000_000_000;
const GLOBAL_BURST: u64 = 1_000_000;

/// What the output says one check is.
pub const DESCRIBE: &str = "one check = global token bucket (1e9/s, burst 1e6) + API sliding \
     window + per-IP fixed window + per-user sliding window (each 1e6 per ms, 10 buckets for \
     the sliding ones), users and IPs drawn at random from 10000 each";

/// One request: its user and its IP.
pub struct Request {
    user: u64,
    ip: u32,
}

/// One implementation of the four-dimension check.
trait Checker: Send + Sync + 'static {
    /// Whether every dimension admitted the request.
    fn check(&self, request: &Request) -> bool;
}

impl Checker for Policy<Request> {
    #[inline(always)]
    fn check(&self, request: &Request) -> bool {
        Policy::check(self, request).is_ok_and(|d| d.is_admitted())
    }
}

fn window_quota() -> WindowQuota {
    WindowQuota::per(WINDOW_LIMIT, WINDOW).expect("a valid quota")
}

/// The lock-free policy, as `benches/policy.rs` builds it, keyed dimensions bounded.
fn lock_free() -> Policy<Request> {
    let quota = window_quota();
    let users = Arc::new(
        Keyed::<u64, SlidingWindows>::with_config(
            SlidingConfig::new(quota).expect("10 buckets"),
            TscClock::new(),
        )
        .max_keys(USERS as usize),
    );
    let ips = Arc::new(
        Keyed::<u32, FixedWindows>::with_config(
            WindowConfig::new(quota).expect("a valid window"),
            TscClock::new(),
        )
        .max_keys(IPS as usize),
    );
    let api = Arc::new(SlidingWindow::new(quota));
    let global = Arc::new(TokenBucket::new(
        BucketQuota::per_second(GLOBAL_RATE)
            .and_then(|q| q.burst(GLOBAL_BURST))
            .expect("a valid quota"),
    ));
    Policy::builder()
        .shared("global", global)
        .shared("api", api)
        .per_key("ip", ips, |r: &Request| Some(r.ip))
        .per_key("user", users, |r: &Request| Some(r.user))
        .build()
}

/// The same four dimensions over `parking_lot` mutexes (`benches/policy.rs`'s): each
/// dimension's sequential spec (per key in a `HashMap`) behind its own lock, checked in the
/// same order, earlier grants refunded when one refuses.
struct MutexPolicy {
    clock: TscClock,
    global: Mutex<TokenBucketSpec>,
    api: Mutex<SlidingWindowSpec>,
    ips: Mutex<HashMap<u32, FixedWindowSpec>>,
    users: Mutex<HashMap<u64, SlidingWindowSpec>>,
}

impl MutexPolicy {
    fn new() -> Self {
        Self {
            clock: TscClock::new(),
            global: Mutex::new(
                TokenBucketSpec::new(
                    Rate::per_second(GLOBAL_RATE).expect("a valid rate"),
                    GLOBAL_BURST,
                )
                .expect("a valid bucket"),
            ),
            api: Mutex::new(window_spec()),
            ips: Mutex::new(HashMap::new()),
            users: Mutex::new(HashMap::new()),
        }
    }
}

fn window_spec() -> SlidingWindowSpec {
    SlidingWindowSpec::new(WINDOW_LIMIT, WINDOW, 10).expect("a valid window")
}

fn grant(
    admission: Result<Admission, ringlimit::ExceedsLimit>,
) -> Option<ringlimit::outcome::Grant> {
    admission.ok().and_then(Admission::into_grant)
}

impl Checker for MutexPolicy {
    fn check(&self, request: &Request) -> bool {
        let now = self.clock.now_nanos();
        let Some(global) = grant(self.global.lock().try_grant(now, 1)) else {
            return false;
        };
        let Some(api) = grant(self.api.lock().try_grant(now, 1)) else {
            self.global.lock().refund(now, global.ticket());
            return false;
        };
        let ip = grant(
            self.ips
                .lock()
                .entry(request.ip)
                .or_insert_with(|| {
                    FixedWindowSpec::new(WINDOW_LIMIT, WINDOW).expect("a valid window")
                })
                .try_grant(now, 1),
        );
        let Some(ip) = ip else {
            self.api.lock().refund(now, api.ticket());
            self.global.lock().refund(now, global.ticket());
            return false;
        };
        let user = grant(
            self.users
                .lock()
                .entry(request.user)
                .or_insert_with(window_spec)
                .try_grant(now, 1),
        );
        if user.is_none() {
            if let Some(spec) = self.ips.lock().get_mut(&request.ip) {
                spec.refund(now, ip.ticket());
            }
            self.api.lock().refund(now, api.ticket());
            self.global.lock().refund(now, global.ticket());
            return false;
        }
        true
    }
}

/// Four governor limiters of the equivalent quotas, checked one after the other (no
/// refunds: governor has none).
struct GovernorPolicy {
    global: governor::DefaultDirectRateLimiter,
    api: governor::DefaultDirectRateLimiter,
    ips: governor::DefaultKeyedRateLimiter<u32>,
    users: governor::DefaultKeyedRateLimiter<u64>,
}

impl GovernorPolicy {
    fn new() -> Self {
        let nonzero =
            |n: u64| std::num::NonZeroU32::new(u32::try_from(n).expect("fits")).expect("nonzero");
        // A window of N per W as a GCRA: one permit every W/N (whole ns, at least 1) with
        // burst N.
        let per_window = Duration::from_nanos((WINDOW.as_nanos() as u64 / WINDOW_LIMIT).max(1));
        let window = governor::Quota::with_period(per_window)
            .expect("a nonzero period")
            .allow_burst(nonzero(WINDOW_LIMIT));
        Self {
            global: governor::RateLimiter::direct(
                governor::Quota::per_second(nonzero(GLOBAL_RATE))
                    .allow_burst(nonzero(GLOBAL_BURST)),
            ),
            api: governor::RateLimiter::direct(window),
            ips: governor::RateLimiter::keyed(window),
            users: governor::RateLimiter::keyed(window),
        }
    }
}

impl Checker for GovernorPolicy {
    #[inline(always)]
    fn check(&self, request: &Request) -> bool {
        self.global.check().is_ok()
            && self.api.check().is_ok()
            && self.ips.check_key(&request.ip).is_ok()
            && self.users.check_key(&request.user).is_ok()
    }
}

/// Builds `implementation` and asks every user and IP once.
fn build(implementation: Implementation) -> Arc<dyn Checker> {
    let checker: Arc<dyn Checker> = match implementation {
        Implementation::LockFree => Arc::new(lock_free()),
        Implementation::ParkingLot => Arc::new(MutexPolicy::new()),
        _ => Arc::new(GovernorPolicy::new()),
    };
    for i in 0..USERS.max(IPS) {
        checker.check(&Request {
            user: i % USERS,
            ip: (i % IPS) as u32,
        });
    }
    checker
}

/// One timed sample: `threads` threads check random requests for `duration`. Returns
/// (all threads' checks per µs, checks, admitted).
fn sample(checker: &Arc<dyn Checker>, threads: usize, duration: Duration) -> (f64, u64, u64) {
    let checker = checker.clone();
    crate::keyed::timed(threads, duration, move |draw: &mut Draw| {
        checker.check(&Request {
            user: draw.below(USERS),
            ip: draw.below(IPS) as u32,
        })
    })
}

/// One policy row.
pub struct PolicyRow {
    pub implementation: Implementation,
    pub threads: usize,
    pub oversubscribed: bool,
    /// Median of the samples' checks per µs, all threads together.
    pub mops: f64,
    /// Checks and admissions of all the samples.
    pub checks: u64,
    pub admitted: u64,
}

impl PolicyRow {
    /// Wall ns per check per thread: threads / (checks per ns of all threads).
    pub fn ns_per_check(&self) -> f64 {
        if self.mops > 0.0 {
            self.threads as f64 * 1e3 / self.mops
        } else {
            f64::INFINITY
        }
    }

    pub fn admitted_fraction(&self) -> f64 {
        self.admitted as f64 / self.checks.max(1) as f64
    }
}

/// Measures the implementations `keep` keeps at every thread count, prints the table (or
/// JSON lines) and returns the rows.
pub fn run(
    options: &Options,
    keep: impl Fn(Implementation) -> bool,
    cores: usize,
) -> Vec<PolicyRow> {
    let implementations: Vec<Implementation> =
        IMPLEMENTATIONS.into_iter().filter(|&i| keep(i)).collect();
    if implementations.is_empty() {
        return Vec::new();
    }
    let note = format!(
        "policy rows: {DESCRIBE}; lock_free: ringlimit::policy::Policy (keyed dimensions \
         with .max_keys: the table); parking_lot: each dimension's spec behind its own \
         parking_lot::Mutex (keyed: a HashMap), grants refunded on a refusal; governor: four \
         governor limiters (IP and user keyed), checked in turn, no refunds. Each built once, \
         every user and IP asked once, then per thread count {} sample(s) of {} ms \
         interleaved across the implementations (median reported; timed as the keyed rows); \
         ns/check = wall ns per check per thread (threads / checks per ns); speedup = the \
         other's ns / lock_free's",
        options.samples,
        options.duration.as_millis()
    );
    if options.json {
        eprintln!("{note}");
    } else {
        println!("{note}\n");
    }
    let built: Vec<Arc<dyn Checker>> = implementations.iter().map(|&i| build(i)).collect();
    let mut rows = Vec::new();
    for &threads in &options.threads {
        let mut runs: Vec<Vec<(f64, u64, u64)>> = vec![Vec::new(); built.len()];
        for _ in 0..options.samples {
            for (checker, runs) in built.iter().zip(runs.iter_mut()) {
                runs.push(sample(checker, threads, options.duration));
            }
        }
        for (&implementation, runs) in implementations.iter().zip(runs) {
            let mut mops: Vec<f64> = runs.iter().map(|r| r.0).collect();
            let row = PolicyRow {
                implementation,
                threads,
                oversubscribed: threads > cores,
                mops: crate::median(&mut mops),
                checks: runs.iter().map(|r| r.1).sum(),
                admitted: runs.iter().map(|r| r.2).sum(),
            };
            if options.json {
                println!("{}", json(&row));
            }
            rows.push(row);
        }
    }
    if !options.json {
        println!("{}", table(&rows, &options.threads));
    }
    rows
}

/// `base`'s ns per check over `row`'s: how many times faster `row` is.
fn speedup(row: Option<&PolicyRow>, base: Option<&PolicyRow>) -> String {
    match (row, base) {
        (Some(row), Some(base)) if row.mops > 0.0 && base.mops > 0.0 => {
            format!("{:.2}x", base.ns_per_check() / row.ns_per_check())
        }
        _ => "-".to_owned(),
    }
}

/// One line per thread count: the three ns per check, lock_free's speedups, the admitted
/// fractions.
pub fn table(rows: &[PolicyRow], threads: &[usize]) -> String {
    let mut out = format!("== {NAME}: four dimensions per check\n");
    out += "| threads | lock_free ns/check | parking_lot ns/check | governor ns/check | \
            lock_free vs parking_lot | lock_free vs governor | admitted lock_free / \
            parking_lot / governor |\n|---|---|---|---|---|---|---|\n";
    for &t in threads {
        let row = |i: Implementation| {
            rows.iter()
                .find(|r| r.threads == t && r.implementation == i)
        };
        if IMPLEMENTATIONS.iter().all(|&i| row(i).is_none()) {
            continue;
        }
        let star = if rows.iter().any(|r| r.threads == t && r.oversubscribed) {
            "*"
        } else {
            ""
        };
        out += &format!("| {t}{star} |");
        for i in IMPLEMENTATIONS {
            out += &row(i).map_or(" - |".to_owned(), |r| format!(" {:.1} |", r.ns_per_check()));
        }
        let lock_free = row(Implementation::LockFree);
        out += &format!(
            " {} | {} |",
            speedup(lock_free, row(Implementation::ParkingLot)),
            speedup(lock_free, row(Implementation::Governor))
        );
        let admitted: Vec<String> = IMPLEMENTATIONS
            .iter()
            .map(|&i| row(i).map_or("-".to_owned(), |r| format!("{:.4}", r.admitted_fraction())))
            .collect();
        out += &format!(" {} |\n", admitted.join(" / "));
    }
    out
}

/// One JSON line of a policy row: `mops` and `ns_per_check` from the median sample,
/// `checks` and `admitted` summed over the samples.
pub fn json(row: &PolicyRow) -> String {
    format!(
        "{{\"limiter\":\"{NAME}\",\"implementation\":\"{}\",\"scenario\":\"four_dimensions\",\"threads\":{},\"oversubscribed\":{},\"ns_per_check\":{:.2},\"mops\":{:.4},\"checks\":{},\"admitted\":{},\"admitted_fraction\":{:.6},\"users\":{USERS},\"ips\":{IPS}}}",
        row.implementation.name(),
        row.threads,
        row.oversubscribed,
        row.ns_per_check(),
        row.mops,
        row.checks,
        row.admitted,
        row.admitted_fraction(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every implementation admits the requests (the quotas are far above the calls).
    #[test]
    fn every_implementation_admits() {
        for implementation in IMPLEMENTATIONS {
            let checker = build(implementation);
            let mut draw = Draw::for_thread(0);
            let admitted = (0..10_000)
                .filter(|_| {
                    checker.check(&Request {
                        user: draw.below(USERS),
                        ip: draw.below(IPS) as u32,
                    })
                })
                .count();
            // lock_free: a bounded table filled to its bound may have refused a few keys
            // (no free slot in their probe run), each drawn about once per 10 000 checks.
            assert!(admitted >= 9_900, "{implementation:?}: {admitted}");
        }
    }

    /// A short timed sample on two threads, and the row's figures.
    #[test]
    fn sample_and_row() {
        let checker = build(Implementation::LockFree);
        let (mops, checks, admitted) = sample(&checker, 2, Duration::from_millis(5));
        assert!(checks >= 2 * 1024 && mops > 0.0);
        assert!(
            admitted as f64 >= 0.99 * checks as f64,
            "{admitted} of {checks}"
        );
        let row = PolicyRow {
            implementation: Implementation::LockFree,
            threads: 2,
            oversubscribed: false,
            mops: 4.0,
            checks: 10,
            admitted: 9,
        };
        assert_eq!(row.ns_per_check(), 500.0);
        assert_eq!(row.admitted_fraction(), 0.9);
        let line = json(&row);
        assert!(
            line.starts_with(
                "{\"limiter\":\"policy\",\"implementation\":\"lock_free\",\
                 \"scenario\":\"four_dimensions\",\"threads\":2,\"oversubscribed\":false,\
                 \"ns_per_check\":500.00,"
            ),
            "{line}"
        );
        let slower = PolicyRow {
            implementation: Implementation::ParkingLot,
            mops: 1.0,
            ..row
        };
        assert_eq!(speedup(Some(&row), Some(&slower)), "4.00x");
        assert!(table(&[row, slower], &[2]).contains("| 2 | 500.0 | 2000.0 | - | 4.00x | - |"));
    }
}
