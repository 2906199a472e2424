//! Exactness on a real Redis: many tasks on several connections hammer one key, and every
//! decision the scripts made is replayed, in the order of the server's times, through the
//! core's sequential spec of the same algorithm (`ringlimit::spec`). Every decision must
//! be the spec's, `remaining` and `available` and `retry_after` included, and its
//! `reset_after` the time until the spec counts nothing (not a microsecond less); `available(key)`
//! calls must read what the spec had at some point while they ran; and the headline
//! guarantee of each algorithm is checked on the admissions directly.
//!
//! Redis runs one script at a time, so the scripts' `TIME` readings are non-decreasing in
//! the order they ran; two scripts can read the same microsecond, and then any order within
//! such a tie that the spec agrees with is accepted. The specs are fed the server's absolute
//! time (µs since the Unix epoch × 1000, in ns), so their windows are aligned to the epoch
//! as the scripts' are.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ringlimit::outcome::Decision;
use ringlimit::spec::{FixedWindowSpec, SlidingLogSpec, SlidingWindowSpec, Spec, TokenBucketSpec};
use ringlimit::{BucketQuota, Rate, WindowQuota};
use ringlimit_redis::{Algorithm, Connection, RedisLimiter, Source};

use crate::support;

/// Separate multiplexed connections (each `Connection::open` is its own).
const CONNECTIONS: usize = 4;
/// Tasks calling at once, spread over the connections.
const TASKS: usize = 32;
/// How long the tasks hammer the key.
const RUN: Duration = Duration::from_millis(1_000);
/// One in this many calls is an `available(key)` instead of a `check`.
const AVAILABLE_EVERY: u64 = 8;
/// Runs tried before giving up on getting one without a fallback decision (a call past the
/// connection's timeout on a machine busy with other work: its outcome is unknown).
const ATTEMPTS: usize = 3;

/// A small xorshift: the test needs no statistical quality, only variety.
struct Xorshift(u64);

impl Xorshift {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One call of one task, in the task's order.
#[derive(Debug, Clone, Copy)]
enum Call {
    /// `check(key, n)`, decided by the script at the server's `at_us`.
    Check {
        at_us: u64,
        n: u64,
        decision: Decision,
        reset_us: u64,
    },
    /// `available(key)` (no server time in its answer).
    Available { value: u64 },
}

/// A check, for the replay.
#[derive(Debug, Clone, Copy)]
struct Check {
    task: usize,
    at_us: u64,
    n: u64,
    decision: Decision,
    /// The verdict's `reset_after`, in µs.
    reset_us: u64,
}

/// One run: every task's calls, or why the run cannot be judged.
async fn hammer(
    url: &str,
    algorithm: Algorithm,
    name: &str,
    key: &str,
) -> Result<Vec<Vec<Call>>, String> {
    let limiters: Vec<RedisLimiter> = (0..CONNECTIONS)
        .map(|_| {
            let connection = Connection::open(url)
                .expect("url")
                .timeout(Duration::from_secs(2));
            RedisLimiter::builder(&connection, name, algorithm)
                .build()
                .expect("quota fits Redis")
        })
        .collect();
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as u64;
    let deadline = Instant::now() + RUN;
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let limiter = limiters[task % CONNECTIONS].clone();
        let key = key.to_owned();
        let mut rng = Xorshift::new(seed ^ (task as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        tasks.push(tokio::spawn(async move {
            let mut calls = Vec::new();
            // Every task ends with a check, so every `available` has a check after it.
            loop {
                let r = rng.next();
                if r.is_multiple_of(AVAILABLE_EVERY) {
                    let value = limiter.available(&key).await.expect("available");
                    calls.push(Call::Available { value });
                }
                let n = 1 + (r >> 8) % 3;
                let verdict = limiter.check(&key, n).await.expect("check");
                if verdict.source != Source::Redis {
                    return Err(format!(
                        "task {task}: a {:?} decision (Redis did not answer in time)",
                        verdict.source
                    ));
                }
                let at = verdict.server_time.expect("Redis decided: a server time");
                calls.push(Call::Check {
                    at_us: u64::try_from(at.as_micros()).expect("µs fit"),
                    n,
                    decision: verdict.decision,
                    reset_us: u64::try_from(verdict.reset_after.as_micros()).expect("µs fit"),
                });
                if Instant::now() >= deadline {
                    return Ok(calls);
                }
            }
        }));
    }
    let mut all = Vec::new();
    let mut failure = None;
    for task in tasks {
        match task.await.expect("task panicked") {
            Ok(calls) => all.push(calls),
            Err(why) => failure = Some(why),
        }
    }
    if limiters.iter().any(|l| l.fallbacks() > 0) || failure.is_some() {
        return Err(failure.unwrap_or_else(|| "a fallback decision".into()));
    }
    Ok(all)
}

/// Whether `check` is what `spec` decides at its time, and its `reset_after` the time until
/// nothing is counted (the spec, left alone, is full then and not a microsecond earlier);
/// `spec` moves on either way.
fn agrees<S: Spec>(spec: &mut S, check: &Check) -> bool {
    let now = check.at_us * 1_000;
    if spec.decide(now, check.n) != Ok(check.decision) {
        return false;
    }
    let full = spec.limit();
    let reset = now + check.reset_us * 1_000;
    spec.available(reset) == full && (check.reset_us == 0 || spec.available(reset - 1_000) < full)
}

/// The µs from `now` (ns) until `spec` (left alone) counts nothing: its `available` only
/// grows with time, so a search finds it.
fn full_after_us<S: Spec>(spec: &S, now: u64) -> u64 {
    let full = |us: u64| spec.available(now + us * 1_000) == spec.limit();
    let mut high = 1;
    while !full(high) {
        high *= 2;
    }
    let mut low = 0;
    if full(low) {
        return 0;
    }
    // full(high) and not full(low).
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if full(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}

/// Orders `group` (checks at one microsecond) so that the spec agrees with each in turn,
/// starting from `spec`; interchangeable checks (same `n` and decision) are tried once.
fn order_tie<S: Spec + Clone>(
    spec: &S,
    checks: &[Check],
    group: &[usize],
) -> Option<(S, Vec<usize>)> {
    if group.is_empty() {
        return Some((spec.clone(), Vec::new()));
    }
    let mut tried: Vec<(u64, Decision)> = Vec::new();
    for (i, &c) in group.iter().enumerate() {
        let check = &checks[c];
        if tried.contains(&(check.n, check.decision)) {
            continue;
        }
        tried.push((check.n, check.decision));
        let mut next = spec.clone();
        if !agrees(&mut next, check) {
            continue;
        }
        let rest: Vec<usize> = group
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, &c)| c)
            .collect();
        if let Some((end, mut order)) = order_tie(&next, checks, &rest) {
            order.insert(0, c);
            return Some((end, order));
        }
    }
    None
}

/// Replays `checks` in server-time order through `spec`; the order found (indices into
/// `checks`) or a description of the first decision the spec disagrees with.
fn replay<S: Spec + Clone>(mut spec: S, checks: &[Check]) -> Result<Vec<usize>, String> {
    let mut sorted: Vec<usize> = (0..checks.len()).collect();
    sorted.sort_by_key(|&c| checks[c].at_us);
    let mut order = Vec::with_capacity(checks.len());
    let mut start = 0;
    while start < sorted.len() {
        let at = checks[sorted[start]].at_us;
        let end = start
            + sorted[start..]
                .iter()
                .take_while(|&&c| checks[c].at_us == at)
                .count();
        let group = &sorted[start..end];
        let Some((next, tie_order)) = order_tie(&spec, checks, group) else {
            let mut why = format!(
                "no order of the {} decision(s) at server time {at} µs agrees with the spec\n",
                group.len()
            );
            for &c in group {
                let check = &checks[c];
                let mut after = spec.clone();
                let said = after.decide(check.at_us * 1_000, check.n);
                why += &format!(
                    "  task {} check(n = {}): Redis {:?}, reset after {} µs; spec (first in the tie) {:?}, reset after {} µs\n",
                    check.task,
                    check.n,
                    check.decision,
                    check.reset_us,
                    said,
                    full_after_us(&after, check.at_us * 1_000)
                );
            }
            why += "  the decisions before it, newest last:\n";
            for &c in &order[order.len().saturating_sub(12)..] {
                let check: &Check = &checks[c];
                why += &format!(
                    "    {} µs n = {} {:?}\n",
                    check.at_us, check.n, check.decision
                );
            }
            return Err(why);
        };
        spec = next;
        order.extend(tie_order);
        start = end;
    }
    Ok(order)
}

/// Each `available(key)` ran after its task's previous check and before its next one, on
/// some state of the replay between them, at a time between their server times. With the
/// state fixed, every spec's `available` only grows with time, so the value must lie within
/// `[available(t_i), available(t_i+1)]` of one state `i` in that range.
fn check_available<S: Spec + Clone>(
    initial: &S,
    checks: &[Check],
    order: &[usize],
    calls: &[Vec<Call>],
) -> usize {
    // Position in the replay of each check, by (task, index among the task's checks).
    let mut first_check = vec![0usize; calls.len()];
    for task in 1..calls.len() {
        first_check[task] = first_check[task - 1]
            + calls[task - 1]
                .iter()
                .filter(|c| matches!(c, Call::Check { .. }))
                .count();
    }
    let mut position = vec![0usize; checks.len()];
    for (p, &c) in order.iter().enumerate() {
        position[c] = p;
    }
    // For each available: the value and the range of states (-1: the initial one, as 0).
    let mut reads: Vec<(usize, usize, u64, usize)> = Vec::new(); // (first state, last state, value, task)
    for (task, task_calls) in calls.iter().enumerate() {
        let mut seen = 0;
        for call in task_calls {
            match *call {
                Call::Check { .. } => seen += 1,
                Call::Available { value } => {
                    // States are numbered 0 = initial, p + 1 = after the check at position p.
                    let first = if seen == 0 {
                        0
                    } else {
                        position[first_check[task] + seen - 1] + 1
                    };
                    let last = position[first_check[task] + seen];
                    reads.push((first, last, value, task));
                }
            }
        }
    }
    let time_of = |state: usize| -> u64 {
        if state == 0 {
            0
        } else {
            checks[order[state - 1]].at_us * 1_000
        }
    };
    let mut starting: Vec<Vec<usize>> = vec![Vec::new(); order.len() + 1];
    for (r, &(first, ..)) in reads.iter().enumerate() {
        starting[first].push(r);
    }
    let mut active: Vec<usize> = Vec::new();
    let mut spec = initial.clone();
    for state in 0..order.len() {
        if state > 0 {
            let check = &checks[order[state - 1]];
            spec.decide(check.at_us * 1_000, check.n)
                .expect("replayed before");
        }
        active.extend(&starting[state]);
        let (from, to) = (time_of(state), time_of(state + 1));
        active.retain(|&r| {
            let (_, last, value, task) = reads[r];
            if spec.available(from) <= value && value <= spec.available(to) {
                return false;
            }
            assert!(
                state < last,
                "task {task}: available(key) = {value} matches no state of the spec up to replay position {last}"
            );
            true
        });
    }
    assert!(active.is_empty(), "reads left unmatched");
    reads.len()
}

/// Runs the algorithm under load, replays it, and returns the admissions `(µs, n)` in server
/// order for the algorithm's own invariant.
async fn exact<S: Spec + Clone>(name: &str, algorithm: Algorithm, spec: S) -> Vec<(u64, u64)> {
    let Some(server) = support::RedisServer::start() else {
        return Vec::new();
    };
    let url = server.url();
    let started = Instant::now();
    for attempt in 1..=ATTEMPTS {
        let key = format!("hammered:{attempt}");
        let calls = match hammer(&url, algorithm, name, &key).await {
            Ok(calls) => calls,
            Err(why) if attempt < ATTEMPTS => {
                eprintln!("{name}: run {attempt} cannot be judged ({why}); again on a fresh key");
                continue;
            }
            Err(why) => panic!("{name}: {ATTEMPTS} runs cannot be judged, the last because {why}"),
        };
        let checks: Vec<Check> = calls
            .iter()
            .enumerate()
            .flat_map(|(task, calls)| {
                calls.iter().filter_map(move |call| match *call {
                    Call::Check {
                        at_us,
                        n,
                        decision,
                        reset_us,
                    } => Some(Check {
                        task,
                        at_us,
                        n,
                        decision,
                        reset_us,
                    }),
                    Call::Available { .. } => None,
                })
            })
            .collect();
        let order = replay(spec.clone(), &checks).unwrap_or_else(|why| panic!("{name}: {why}"));
        let reads = check_available(&spec, &checks, &order, &calls);
        let admitted: Vec<(u64, u64)> = order
            .iter()
            .map(|&c| &checks[c])
            .filter(|c| c.decision.is_admitted())
            .map(|c| (c.at_us, c.n))
            .collect();
        let refused = checks.len() - admitted.len();
        let mut ties = 0;
        for pair in order.windows(2) {
            ties += usize::from(checks[pair[0]].at_us == checks[pair[1]].at_us);
        }
        let span_ms = (checks[order[order.len() - 1]].at_us - checks[order[0]].at_us) / 1_000;
        eprintln!(
            "{name}: {} checks ({} admitted, {refused} refused, {ties} sharing a µs) and {reads} available reads over {span_ms} ms of server time agree with the spec ({:?})",
            checks.len(),
            admitted.len(),
            started.elapsed()
        );
        assert!(
            !admitted.is_empty() && refused > 0,
            "{name}: the run never reached the limit"
        );
        return admitted;
    }
    unreachable!()
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fixed_window_is_its_spec_on_server_time() {
    let quota = WindowQuota::per(50, Duration::from_millis(100)).unwrap();
    let admitted = exact(
        "fixed",
        Algorithm::FixedWindow(quota),
        FixedWindowSpec::from_quota(quota).unwrap(),
    )
    .await;
    // At most the limit in every aligned window (aligned to the Unix epoch).
    let window = micros(quota.window_length());
    let mut per_window = std::collections::BTreeMap::new();
    for &(at, n) in &admitted {
        *per_window.entry(at / window).or_insert(0) += n;
    }
    for (w, &count) in &per_window {
        assert!(count <= quota.limit(), "{count} admitted in window {w}");
    }
    assert!(
        admitted.is_empty() || per_window.len() >= 5,
        "the run crossed too few windows"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sliding_window_is_its_spec_on_server_time() {
    let quota = WindowQuota::per(40, Duration::from_millis(200))
        .unwrap()
        .buckets(4)
        .unwrap();
    let admitted = exact(
        "sliding",
        Algorithm::SlidingWindow(quota),
        SlidingWindowSpec::from_quota(quota).unwrap(),
    )
    .await;
    // At most the limit in any run of `buckets` consecutive buckets.
    let bucket = micros(quota.window_length()) / quota.bucket_count();
    let mut per_bucket = std::collections::BTreeMap::new();
    for &(at, n) in &admitted {
        *per_bucket.entry(at / bucket).or_insert(0u64) += n;
    }
    for &b in per_bucket.keys() {
        let sum: u64 = per_bucket
            .range(b..b + quota.bucket_count())
            .map(|(_, &c)| c)
            .sum();
        assert!(
            sum <= quota.limit(),
            "{sum} admitted in the {} buckets from {b}",
            quota.bucket_count()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sliding_log_is_its_spec_on_server_time() {
    let quota = WindowQuota::per(40, Duration::from_millis(150)).unwrap();
    let admitted = exact(
        "log",
        Algorithm::SlidingLog(quota),
        SlidingLogSpec::from_quota(quota).unwrap(),
    )
    .await;
    // At most the limit in every interval (t - W, t]: the admissions in the window ending
    // at each admission.
    let window = micros(quota.window_length());
    let (mut oldest, mut sum) = (0, 0);
    for &(at, n) in &admitted {
        sum += n;
        while admitted[oldest].0 + window <= at {
            sum -= admitted[oldest].1;
            oldest += 1;
        }
        assert!(
            sum <= quota.limit(),
            "{sum} admitted in ({} µs, {at} µs]",
            at - window
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn token_bucket_is_its_spec_on_server_time() {
    // 300/s: a period of 3 333 333.3 ns, which the scripts round up to 3 334 µs.
    let quota = BucketQuota::per_second(300).unwrap().burst(20).unwrap();
    let period_us = quota.rate().period_nanos().div_ceil(1_000);
    assert_eq!(period_us, 3_334);
    let spec = TokenBucketSpec::new(
        Rate::every(Duration::from_micros(period_us)).unwrap(),
        quota.burst_size(),
    )
    .unwrap();
    let admitted = exact("gcra", Algorithm::TokenBucket(quota), spec).await;
    // At most burst + Δ/period in every closed interval of length Δ.
    let mut prefix = vec![0u64];
    for &(_, n) in &admitted {
        prefix.push(prefix.last().unwrap() + n);
    }
    for i in 0..admitted.len() {
        for j in i..admitted.len() {
            let delta = admitted[j].0 - admitted[i].0;
            let count = prefix[j + 1] - prefix[i];
            assert!(
                count <= quota.burst_size() + delta / period_us,
                "{count} admitted within {delta} µs"
            );
        }
    }
}

/// The replay itself, without Redis: ties are put in an order the spec agrees with, and a
/// decision the spec would not make is found.
#[test]
fn replay_orders_ties_and_finds_wrong_decisions() {
    let spec = FixedWindowSpec::new(3, Duration::from_millis(100)).unwrap();
    // Every check below leaves something counted in its window: nothing is counted once
    // the window (100 ms, aligned) ends.
    let check = |task, at_us: u64, n, decision| Check {
        task,
        at_us,
        n,
        decision,
        reset_us: 100_000 - at_us % 100_000,
    };
    let admitted = |remaining| Decision::Admitted { remaining };
    let refused = |available, retry_ms| Decision::Refused {
        available,
        retry_after: Duration::from_millis(retry_ms),
    };
    // Three at one microsecond, listed in an order the spec refuses (2 then 2 then 1):
    // only 1, 2 (admitted, 0 left) then 2 (refused) agrees.
    let checks = [
        check(0, 1_000, 2, admitted(0)),
        check(1, 1_000, 2, refused(0, 99)),
        check(2, 1_000, 1, admitted(2)),
        check(3, 150_000, 3, admitted(0)),
    ];
    assert_eq!(replay(spec.clone(), &checks).unwrap(), [2, 0, 1, 3]);
    // One admission too many in the first window.
    let over = [
        check(0, 1_000, 2, admitted(1)),
        check(1, 2_000, 2, admitted(0)),
    ];
    let why = replay(spec.clone(), &over).unwrap_err();
    assert!(why.contains("server time 2000 µs"), "{why}");
    // A refusal the spec would not make (no spurious rejection).
    let spurious = [check(0, 1_000, 3, refused(3, 99))];
    assert!(replay(spec.clone(), &spurious).is_err());
    // A reset_after a microsecond off.
    let mut late = check(0, 1_000, 1, admitted(2));
    late.reset_us += 1;
    assert!(replay(spec, &[late]).is_err());
}

/// Requests of thousands of permits at once are counted exactly (the log adds its members
/// in batches).
#[tokio::test]
async fn large_requests_are_counted_exactly() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let connection = Connection::open(&server.url())
        .unwrap()
        .timeout(Duration::from_secs(5));
    // Long spans: nothing refills or rolls over during the test.
    let window = WindowQuota::per(5_000, Duration::from_secs(1_200_000)).unwrap();
    let algorithms = [
        Algorithm::FixedWindow(window),
        Algorithm::SlidingWindow(window.buckets(4).unwrap()),
        Algorithm::SlidingLog(window),
        Algorithm::TokenBucket(
            BucketQuota::new(Rate::every(Duration::from_secs(3_600)).unwrap(), 5_000).unwrap(),
        ),
    ];
    let mut raw = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for (a, algorithm) in algorithms.into_iter().enumerate() {
        let limiter = RedisLimiter::builder(&connection, &format!("large{a}"), algorithm)
            .build()
            .unwrap();
        let steps = [
            (1_999, Decision::Admitted { remaining: 3_001 }),
            (
                3_002,
                Decision::Refused {
                    available: 3_001,
                    retry_after: Duration::ZERO,
                },
            ),
            (3_001, Decision::Admitted { remaining: 0 }),
            (
                1,
                Decision::Refused {
                    available: 0,
                    retry_after: Duration::ZERO,
                },
            ),
        ];
        for (n, expected) in steps {
            let decision = limiter.check("k", n).await.unwrap().decision;
            // Compared without retry_after (hours to weeks here, checked by the replays).
            let same = match (decision, expected) {
                (Decision::Refused { available, .. }, Decision::Refused { available: e, .. }) => {
                    available == e
                }
                _ => decision == expected,
            };
            assert!(
                same,
                "{algorithm:?}: check(k, {n}) = {decision:?}, not {expected:?}"
            );
        }
        assert_eq!(limiter.available("k").await.unwrap(), 0);
        if let Algorithm::SlidingLog(_) = algorithm {
            let log = &limiter.redis_keys("k").unwrap()[0];
            let members: u64 = redis::cmd("ZCARD")
                .arg(log.as_slice())
                .query_async(&mut raw)
                .await
                .unwrap();
            assert_eq!(members, 5_000, "one member per permit, all distinct");
        }
    }
}
