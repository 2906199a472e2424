//! Multi-thread comparison of every limiter in the crate:
//! `cargo run --release --example compare` (a few minutes with the keyed and policy rows;
//! `-- --quick` for CI, `-- --help`).
//!
//! For each limiter, scenario (allow, deny, at-limit) and thread count it measures
//! `try_acquire` throughput of the lock-free limiter (and the windows' sharded form), its
//! spec under `parking_lot::Mutex` and `std::sync::Mutex`, `governor` (the reference crate,
//! a GCRA with the equivalent quota) and a naive check-then-add version, and counts
//! admissions against the most the algorithm allows in the run. It exits with status 1 if a
//! ringlimit row admitted more.
//!
//! In the same run, at every thread count it measures, it measures the floor (rows
//! `floor / allow`, implementation `floor`): one read of the same clock plus one `fetch_add`
//! on one cache-padded atomic shared by all threads, timed like every row. On one thread it
//! is the uncontended cost of a call; on N, one shared line's RMW rate. Every JSON row
//! carries its throughput over the floor's at its thread count (`floor_ratio`), and the
//! text output ends with the allow rows' ratios to it.
//!
//! Then the service path: the keyed rows ([`keyed`]: a limiter per key over a million keys
//! and more, ringlimit's bounded with `max_keys` so its cells are in the fixed table, each
//! row over the keyed floor, a random slot's CAS in an array of the table's size, at the
//! same key count and thread count; and the attack row) and the policy rows ([`policy`]:
//! one request checked against four limits, two of them keyed, in ns per check).
//!
//! Modules: [`cli`] (arguments), [`scenario`] (the three loads), [`limiters`] (the table of
//! limiter × implementation), [`bounds`] (each algorithm's bound), [`harness`] (one timed
//! sample), [`floor`] (the floor), [`in_flight`] (the concurrency limiter's calls and
//! audit), [`naive`] (the check-then-add versions), [`report`] (tables, JSON), [`chart`]
//! (SVG), [`keyed`] (the keyed rows, the keyed floor and the attack row) and [`policy`]
//! (the policy rows).

mod bounds;
mod chart;
mod cli;
mod floor;
mod harness;
mod in_flight;
mod keyed;
mod limiters;
mod naive;
mod policy;
mod report;
mod scenario;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bounds::gcra_max;
use harness::Plan;
use limiters::{Audit, Config, Family, Implementation, Limiter, LIMITERS};
use report::Row;
use scenario::Scenario;

/// The clock every limiter here decides on, named in the output.
const CLOCK: &str =
    "ringlimit::clock::TscClock (the TSC via quanta; governor: its default quanta clock)";

/// The longest calibration of the at-limit scenario, per limiter.
const CALIBRATION: Duration = Duration::from_millis(50);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--keyed-child") {
        return match keyed::child(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("{message}");
                ExitCode::FAILURE
            }
        };
    }
    let options = match cli::parse(args) {
        Ok(options) => options,
        Err(message) if message == cli::USAGE => {
            println!("{message}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let filter = match Filter::new(&options.only) {
        Ok(filter) => filter,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let say = |text: &str| {
        if options.json {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    };
    say(&header(&options, &filter, cores));

    let started = Instant::now();
    // The floor first, at every thread count, so every ratio to it comes from this run.
    let mut rows: Vec<Row> = Vec::new();
    if filter.measures_floor() {
        // A process's first samples run slow (on the 2-core machine the first floor samples
        // of a run came out 20-30% below the later ones), which would flatter every ratio
        // to the floor; so one untimed floor sample per thread count goes first, as the
        // limiter rows come after others.
        for &threads in &options.threads {
            floor::measure(threads, false, options.duration, 1);
        }
        for &threads in &options.threads {
            let oversubscribed = threads > cores;
            rows.push(floor::measure(
                threads,
                oversubscribed,
                options.duration,
                options.samples,
            ));
        }
        if options.json {
            for row in &rows {
                println!("{}", report::json(row, Some(row.mops), CLOCK));
            }
        } else {
            let heading = format!("== {} / allow: {}", floor::NAME, floor::DESCRIBE);
            println!("{}", report::table(&heading, &rows));
        }
    }
    for limiter in LIMITERS.iter().filter(|l| filter.limiter(l.name)) {
        let calibrated = limiter.family != Family::Concurrency;
        let at_limit = if calibrated && filter.scenario(Scenario::AtLimit) {
            scenario::calibrate(limiter, options.duration.min(CALIBRATION))
        } else {
            1
        };
        for scenario in Scenario::ALL.into_iter().filter(|&s| filter.scenario(s)) {
            let config = scenario.config(limiter.family, at_limit);
            let mut block = Vec::new();
            for &threads in &options.threads {
                let cells: Vec<Cell> = Implementation::ALL
                    .into_iter()
                    .filter(|&i| filter.implementation(i) && limiter.offers(i))
                    .map(|implementation| Cell {
                        limiter,
                        implementation,
                        scenario,
                        config,
                        threads,
                        oversubscribed: threads > cores,
                    })
                    .collect();
                block.extend(measure_interleaved(&cells, &options));
            }
            if options.json {
                for row in &block {
                    let floor = report::floor(&rows, row.threads);
                    println!("{}", report::json(row, floor, CLOCK));
                }
            } else {
                let heading = format!(
                    "== {}{} / {}: {}",
                    limiter.name,
                    if limiter.shape.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", limiter.shape)
                    },
                    scenario.name(),
                    scenario.describe(limiter.family, config)
                );
                println!("{}", report::table(&heading, &block));
            }
            rows.extend(block);
        }
    }
    if !options.json && !rows.is_empty() {
        println!("{}", report::summary(&rows, &options.threads));
        println!("{}", report::floor_summary(&rows, &options.threads));
    }
    let mut keyed_failed = false;
    if filter.scenarios.is_empty() {
        let keep = |name: &str, i: Implementation| filter.limiter(name) && filter.implementation(i);
        if let Err(message) = keyed::run(&options, keep, cores) {
            eprintln!("FAILURE: keyed: {message}");
            keyed_failed = true;
        }
        if filter.limiter(policy::NAME) {
            policy::run(&options, |i| filter.implementation(i), cores);
        }
    }
    say(&format!(
        "wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    ));

    if let Some(path) = &options.svg {
        let title = format!("ringlimit compare: Mops/s against threads ({cores} cores)");
        match chart::write(path, &title, &rows, cores) {
            Ok(()) => say(&format!("chart written to {}", path.display())),
            Err(error) => {
                eprintln!("chart: {error}");
                return ExitCode::FAILURE;
            }
        }
    }

    let failures: Vec<&Row> = rows.iter().filter(|r| r.fails()).collect();
    for row in &failures {
        let what = format!(
            "FAILURE: {} / {} / {} at {} threads",
            row.limiter,
            row.implementation.name(),
            row.scenario.name(),
            row.threads
        );
        if row.family == Family::Concurrency {
            eprintln!(
                "{what} held {} permits at once (C = {})",
                row.admitted, row.allowed_max
            );
        } else {
            eprintln!(
                "{what} admitted {} (allowed_max {}), {} in its worst window (max {})",
                row.admitted,
                row.allowed_max,
                row.worst.map_or("-".to_owned(), |w| w.to_string()),
                row.worst_max,
            );
        }
    }
    if failures.is_empty() && !keyed_failed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One cell of the comparison, before measuring.
struct Cell {
    limiter: &'static Limiter,
    implementation: Implementation,
    scenario: Scenario,
    config: Config,
    threads: usize,
    oversubscribed: bool,
}

/// Measures the cells of one (limiter, scenario, thread count) with their samples
/// interleaved (the first sample of each implementation, then the second of each, ...), so
/// that a slow moment of the shared machine falls on every implementation alike rather than
/// on all the samples of one: the ratios between them are the figures that matter. A cell
/// whose limiter lacks the implementation, or cannot be built, gives no row (the second with
/// a message).
fn measure_interleaved(cells: &[Cell], options: &cli::Options) -> Vec<Row> {
    let mut measuring: Vec<Option<Measuring>> =
        cells.iter().map(|cell| Some(cell.start(options))).collect();
    for _ in 0..options.samples {
        for (cell, state) in cells.iter().zip(measuring.iter_mut()) {
            let Some(m) = state else { continue };
            match cell.sample(m) {
                Ok(true) => {}
                Ok(false) => *state = None,
                Err(error) => {
                    cell.not_built(&error);
                    *state = None;
                }
            }
        }
    }
    cells
        .iter()
        .zip(measuring)
        .filter_map(|(cell, state)| match cell.finish(state?) {
            Ok(row) => Some(row),
            Err(error) => {
                cell.not_built(&error);
                None
            }
        })
        .collect()
}

/// A cell's samples so far.
struct Measuring {
    plan: Plan,
    mops: Vec<f64>,
    row: Row,
}

impl Cell {
    fn not_built(&self, error: &ringlimit::ConfigError) {
        eprintln!(
            "{} / {} / {}: not built: {error}",
            self.limiter.name,
            self.implementation.name(),
            self.scenario.name()
        );
    }

    /// A cell before its first sample.
    fn start(&self, options: &cli::Options) -> Measuring {
        let plan = Plan {
            threads: self.threads,
            duration: options.duration,
            exhaust: self.scenario.exhausts(),
            audit: false,
        };
        let row = Row {
            limiter: self.limiter.name,
            family: self.limiter.family,
            implementation: self.implementation,
            scenario: self.scenario,
            config: self.config,
            threads: self.threads,
            oversubscribed: self.oversubscribed,
            mops: 0.0,
            calls: 0,
            acquired: 0,
            admitted: 0,
            allowed_max: 0,
            excess: 0,
            worst: None,
            worst_max: self.config.limit,
        };
        Measuring {
            plan,
            mops: Vec::with_capacity(options.samples),
            row,
        }
    }

    /// One timed sample into `m`; `Ok(false)` when the limiter has no such implementation.
    fn sample(&self, m: &mut Measuring) -> Result<bool, ringlimit::ConfigError> {
        let Some(sample) = (self.limiter.run)(self.implementation, self.config, &m.plan)? else {
            return Ok(false);
        };
        let row = &mut m.row;
        row.calls += sample.calls;
        row.acquired += sample.admitted;
        m.mops.push(sample.mops());
        if let Audit::Count { allowed_max, .. } = self.limiter.audit {
            let governor = self.implementation == Implementation::Governor;
            let bound = if governor { gcra_max } else { allowed_max };
            // The bound covers prefill and run together; the prefill's admissions are used.
            let allowed = bound(self.config, sample.span).saturating_sub(sample.prefilled);
            row.admitted += sample.admitted;
            row.allowed_max = row.allowed_max.saturating_add(allowed);
            row.excess += sample.admitted.saturating_sub(allowed);
        }
        Ok(true)
    }

    /// The row of a cell whose samples are done: their median, then the audit sample.
    fn finish(&self, m: Measuring) -> Result<Row, ringlimit::ConfigError> {
        let Measuring {
            mut plan,
            mut mops,
            mut row,
        } = m;
        let governor = self.implementation == Implementation::Governor;
        row.mops = median(&mut mops);
        // The audit: one more sample, untimed. At limit, it logs each admission's readings
        // to find the worst window however idle the others were (governor: not audited);
        // for the concurrency limiter, in every scenario, it tracks the permits held at once.
        plan.audit = true;
        let grid = self
            .limiter
            .grid()
            .filter(|_| self.scenario == Scenario::AtLimit && !governor);
        if let Some(grid) = grid {
            if let Some(sample) = (self.limiter.run)(self.implementation, self.config, &plan)? {
                let grid = grid(self.config);
                row.worst = Some(grid.worst(&sample.admissions));
                row.worst_max = grid.max;
            }
        }
        if let Audit::InFlight = self.limiter.audit {
            if let Some(sample) = (self.limiter.run)(self.implementation, self.config, &plan)? {
                let held = sample.held.unwrap_or(0);
                row.admitted = held;
                row.allowed_max = self.config.limit;
                row.excess = held.saturating_sub(self.config.limit);
            }
        }
        Ok(row)
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// `--only`: the names given, by kind. A kind with no names given keeps everything.
struct Filter {
    limiters: Vec<String>,
    implementations: Vec<Implementation>,
    scenarios: Vec<Scenario>,
}

impl Filter {
    fn new(names: &[String]) -> Result<Self, String> {
        let mut filter = Self {
            limiters: Vec::new(),
            implementations: Vec::new(),
            scenarios: Vec::new(),
        };
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            if name == "keyed" {
                filter.limiters.extend(
                    keyed::LIMITERS
                        .iter()
                        .chain([&keyed::FLOOR])
                        .map(|&l| l.to_owned()),
                );
            } else if LIMITERS.iter().any(|l| l.name == name)
                || keyed::LIMITERS.contains(&name)
                || [keyed::FLOOR, policy::NAME].contains(&name)
            {
                filter.limiters.push(name.to_owned());
            } else if let Some(i) = Implementation::ALL.into_iter().find(|i| i.name() == name) {
                filter.implementations.push(i);
            } else if let Some(s) = Scenario::ALL.into_iter().find(|s| s.name() == name) {
                filter.scenarios.push(s);
            } else {
                let known: Vec<&str> = LIMITERS
                    .iter()
                    .map(|l| l.name)
                    .chain(["keyed"])
                    .chain(keyed::LIMITERS)
                    .chain([keyed::FLOOR, policy::NAME])
                    .chain(Implementation::ALL.map(Implementation::name))
                    .chain(Scenario::ALL.map(Scenario::name))
                    .collect();
                return Err(format!(
                    "--only: unknown name `{name}`; known: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(filter)
    }

    fn limiter(&self, name: &str) -> bool {
        self.limiters.is_empty() || self.limiters.iter().any(|l| l == name)
    }

    fn implementation(&self, implementation: Implementation) -> bool {
        self.implementations.is_empty() || self.implementations.contains(&implementation)
    }

    fn scenario(&self, scenario: Scenario) -> bool {
        self.scenarios.is_empty() || self.scenarios.contains(&scenario)
    }

    /// Limiter × implementation × scenario cells kept, per thread count (the floor's not
    /// counted).
    fn cells(&self) -> usize {
        let implementations: usize = LIMITERS
            .iter()
            .filter(|l| self.limiter(l.name))
            .map(|l| {
                Implementation::ALL
                    .iter()
                    .filter(|&&i| self.implementation(i) && l.offers(i))
                    .count()
            })
            .sum();
        implementations * Scenario::ALL.iter().filter(|&&s| self.scenario(s)).count()
    }

    /// Whether the floor is measured: whenever a limiter row is (so its ratio to the floor
    /// comes from the same run), or `--only floor` names it. Not for keyed rows alone.
    fn measures_floor(&self) -> bool {
        self.cells() > 0 || self.implementations.contains(&Implementation::Floor)
    }
}

/// The machine, the method and the legend.
fn header(options: &cli::Options, filter: &Filter, cores: usize) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let threads: Vec<String> = options
        .threads
        .iter()
        .map(|&t| format!("{t}{}", if t > cores { "*" } else { "" }))
        .collect();
    let cells = (filter.cells() + usize::from(filter.measures_floor())) * options.threads.len();
    let per_cell = options.duration * options.samples as u32;
    let mut out = String::from("ringlimit compare: try_acquire throughput on several threads\n");
    if cells == 0 {
        // Keyed and policy rows only: they describe their own method.
        out.push_str(&format!(
            "machine: {cpu}, {cores} cores (std::thread::available_parallelism)\nclock: {CLOCK}\nthreads: {}",
            threads.join(", ")
        ));
        return out;
    }
    if cfg!(debug_assertions) {
        out.push_str("WARNING: debug build; run with --release for meaningful numbers\n");
    }
    out.push_str(&format!(
        "machine: {cpu}, {cores} cores (std::thread::available_parallelism)\n\
         clock: {CLOCK}\n\
         cells: {cells} x {} sample(s) of {} ms (median reported{}), ~{:.0} s of timed runs\n\
         method: the limiter is rebuilt per sample; threads are spawned first and wait on a \
         barrier; the timed region runs from its release to the last thread's stop (a stop \
         flag checked every {} calls); the samples of one limiter, scenario and thread count \
         are interleaved across its implementations (first of each, then second of each), so \
         a slow moment of the machine falls on all of them alike\n\
         threads: {}{}\n\
         columns: Mops/s = all threads' calls per microsecond; /parking_lot, /governor = \
         throughput ratio to that row; admitted and allowed_max are summed over the samples\n\
         governor: a GCRA. Windows: each limit N per W is given to it as the equivalent \
         quota, one permit every W/N (whole ns, at least 1 ns) with burst N. Buckets: the same \
         rate and burst (the same algorithm); shaper and warm-up: the same rate, burst 1. Its \
         allowed_max is burst + floor(span / period) + 1. n/a for the concurrency limiter\n\
         sharded: the window and bucket builders' `.sharded()` with the default shards (the \
         cores, rounded up to a power of two) and batch (windows {}, buckets {}): per-core \
         leases, audited like lock_free (it may under-admit, never over-admit); \
         sliding_window, fixed_window, token_bucket and leaky_meter only\n\
         naive: check-then-add written in the example (sum the buckets, then increment; reset \
         stale buckets in place; GCRA: load tat, decide, plain store; in-flight: load, check, \
         fetch_add): expected to over-admit under contention, flagged, not a failure \
         (none for warm_up)\n\
         floor: not a limiter, never audited: {}, timed like every row at each thread \
         count (Relaxed fetch_add: the cheapest RMW that always succeeds; a CAS costs the \
         same when it succeeds). 1 thread: the uncontended cost of a call; N threads: one \
         shared line's RMW rate, which caps any limiter writing one shared line per call \
         (sharded rows can pass it). floor_ratio (JSON) = a row's Mops/s / the floor's at \
         its thread count\n\
         allowed_max: the most the algorithm can admit while its clock reads within the \
         sample's span (prefill included, prefill's admissions subtracted); windows in which \
         no thread ran (a shared machine) make it loose, so at_limit also runs an audit: one \
         more sample, untimed, reading the clock around every call; worst/max = the most \
         admissions certainly inside one window of the algorithm's guarantee, and that \
         window's bound. concurrency: a call is try_acquire + drop of the permit; \
         admitted/allowed_max = the most permits held at once / C, from an untimed audit \
         sample in every scenario with a side counter incremented after acquiring and \
         decremented before releasing (so it never over-reports):",
        options.samples,
        options.duration.as_millis(),
        if options.quick { ", --quick" } else { "" },
        (per_cell * cells as u32).as_secs_f64(),
        harness::BATCH,
        threads.join(", "),
        if options.threads.iter().any(|&t| t > cores) {
            format!("   (* oversubscribed: more threads than the {cores} cores)")
        } else {
            String::new()
        },
        ringlimit::ShardedWindow::DEFAULT_BATCH,
        ringlimit::ShardedBucket::DEFAULT_BATCH,
        floor::DESCRIBE,
    ));
    for limiter in LIMITERS.iter().filter(|l| filter.limiter(l.name)) {
        out.push_str(&format!("\n  {:<15} {}", limiter.name, limiter.bound));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn only_sorts_names_by_kind() {
        let names = ["sliding_window", "naive", "deny"].map(str::to_owned);
        let filter = Filter::new(&names).unwrap();
        assert!(filter.limiter("sliding_window") && !filter.limiter("fixed_window"));
        assert!(filter.implementation(Implementation::Naive));
        assert!(!filter.implementation(Implementation::LockFree));
        assert!(filter.scenario(Scenario::Deny) && !filter.scenario(Scenario::Allow));
        assert!(Filter::new(&["nope".to_owned()]).is_err());
        let keyed = Filter::new(&["keyed".to_owned()]).unwrap();
        assert!(keyed.limiter("keyed_token_bucket") && !keyed.limiter("token_bucket"));
        assert!(keyed.limiter(keyed::FLOOR) && !keyed.limiter(policy::NAME));
        let floor = Filter::new(&[keyed::FLOOR.to_owned()]).unwrap();
        assert!(floor.limiter(keyed::FLOOR) && !floor.limiter("keyed_sliding_window"));
        assert_eq!(floor.cells(), 0);
        let policy = Filter::new(&[policy::NAME.to_owned()]).unwrap();
        assert!(policy.limiter(policy::NAME) && !policy.limiter(keyed::FLOOR));
        assert!(!policy.measures_floor());
    }

    /// The floor is measured whenever a limiter row is, whatever the filter, or when named;
    /// not for the keyed rows alone.
    #[test]
    fn floor_is_measured_with_any_limiter_row() {
        let filter = |names: &str| {
            Filter::new(&names.split(',').map(str::to_owned).collect::<Vec<_>>()).unwrap()
        };
        for names in [
            "",
            "token_bucket",
            "lock_free,deny",
            "concurrency,naive",
            "floor",
        ] {
            assert!(filter(names).measures_floor(), "{names}");
        }
        assert_eq!(filter("floor").cells(), 0);
        // lock_free, sharded, parking_lot, std_mutex, governor, naive.
        assert_eq!(filter("token_bucket,allow").cells(), 6);
        assert!(!filter("keyed").measures_floor());
        assert!(!filter("concurrency,governor").measures_floor());
    }

    /// A lock-free limiter's sample: threads ran, time passed, the bound held.
    #[test]
    fn one_sample_end_to_end() {
        let plan = Plan {
            threads: 2,
            duration: Duration::from_millis(5),
            exhaust: true,
            audit: false,
        };
        let config = Scenario::Deny.config(Family::Window, 1);
        let fixed = LIMITERS.iter().find(|l| l.name == "fixed_window").unwrap();
        for implementation in Implementation::ALL {
            if implementation == Implementation::Floor {
                assert!(!fixed.offers(implementation));
                assert!((fixed.run)(implementation, config, &plan)
                    .unwrap()
                    .is_none());
                continue;
            }
            assert!(fixed.offers(implementation));
            let sample = (fixed.run)(implementation, config, &plan).unwrap().unwrap();
            assert_eq!(sample.prefilled, 1, "{implementation:?}");
            assert!(sample.calls >= 2 * harness::BATCH);
            assert_eq!(sample.admitted, 0);
            assert!(sample.elapsed >= plan.duration);
        }
    }
}
