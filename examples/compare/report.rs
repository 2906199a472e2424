//! The output: a table per limiter and scenario, a summary of ratios, or JSON lines.

use std::fmt::Write as _;

use crate::limiters::{Config, Family, Implementation};
use crate::scenario::Scenario;

/// One cell of the comparison: a limiter's implementation under a scenario at a thread count.
#[derive(Debug, Clone)]
pub struct Row {
    pub limiter: &'static str,
    pub family: Family,
    pub implementation: Implementation,
    pub scenario: Scenario,
    pub config: Config,
    pub threads: usize,
    /// More threads than cores.
    pub oversubscribed: bool,
    /// Median throughput of the samples, all threads together.
    pub mops: f64,
    /// Calls and admissions of the timed samples, summed.
    pub calls: u64,
    pub acquired: u64,
    /// Admissions and the algorithm's maximum, summed over the samples; for the
    /// concurrency limiter, the most permits held at once in the audit sample, and C.
    pub admitted: u64,
    pub allowed_max: u64,
    /// Admissions beyond the maximum, summed over the samples that had any (concurrency:
    /// permits held beyond C).
    pub excess: u64,
    /// At-limit audit: the most admissions certainly inside one window of the guarantee,
    /// and the most that window may hold.
    pub worst: Option<u64>,
    pub worst_max: u64,
}

impl Row {
    /// Admissions beyond the algorithm's limit: over the run, or in the audit's worst window.
    pub fn over_admitted(&self) -> u64 {
        let worst = self.worst.unwrap_or(0).saturating_sub(self.worst_max);
        self.excess.max(worst)
    }

    /// Over-admission by a ringlimit type: the run fails.
    pub fn fails(&self) -> bool {
        self.over_admitted() > 0 && self.implementation.is_ringlimit()
    }
}

/// The throughput of `implementation` in the same block and thread count as `row`.
fn peer(rows: &[Row], row: &Row, implementation: Implementation) -> Option<f64> {
    rows.iter()
        .find(|r| {
            r.implementation == implementation
                && r.threads == row.threads
                && r.limiter == row.limiter
                && r.scenario == row.scenario
        })
        .map(|r| r.mops)
}

/// `row`'s throughput over governor's: `n/a` where governor has no such limiter.
fn governor_ratio(rows: &[Row], row: &Row) -> String {
    if row.family.has_governor() {
        ratio(row.mops, peer(rows, row, Implementation::Governor))
    } else {
        "n/a".to_owned()
    }
}

fn ratio(mops: f64, base: Option<f64>) -> String {
    match base {
        Some(base) if base > 0.0 => format!("{:.2}x", mops / base),
        _ => "-".to_owned(),
    }
}

/// The thread count, starred when oversubscribed.
fn threads_label(row: &Row) -> String {
    format!(
        "{}{}",
        row.threads,
        if row.oversubscribed { "*" } else { "" }
    )
}

/// One limiter × scenario block (`rows` all belong to it).
pub fn table(heading: &str, rows: &[Row]) -> String {
    let mut out = format!("\n{heading}\n");
    let _ = writeln!(
        out,
        "{:>7}  {:<12} {:>8}  {:>12}  {:>9}  {:>10}  {:>11}  {:>13}  note",
        "threads",
        "impl",
        "Mops/s",
        "/parking_lot",
        "/governor",
        "admitted",
        "allowed_max",
        "worst/max"
    );
    let mut last_threads = None;
    for row in rows {
        if last_threads.is_some_and(|t| t != row.threads) {
            out.push('\n');
        }
        last_threads = Some(row.threads);
        let _ = writeln!(
            out,
            "{:>7}  {:<12} {:>8.2}  {:>12}  {:>9}  {:>10}  {:>11}  {:>13}  {}",
            threads_label(row),
            row.implementation.name(),
            row.mops,
            ratio(row.mops, peer(rows, row, Implementation::ParkingLot)),
            governor_ratio(rows, row),
            row.admitted,
            row.allowed_max,
            row.worst
                .map_or("-".to_owned(), |w| format!("{w}/{}", row.worst_max)),
            note(row),
        );
    }
    out
}

fn note(row: &Row) -> String {
    let mut notes = Vec::new();
    let over = row.over_admitted();
    if over > 0 {
        notes.push(match row.implementation {
            Implementation::Naive => format!("OVER-ADMITTED +{over} (check-then-add)"),
            implementation if implementation.is_ringlimit() => {
                format!("OVER-ADMITTED +{over}  <-- FAILURE")
            }
            _ => format!("over the bound +{over}"),
        });
    }
    if row.family == Family::Concurrency {
        notes.push(format!(
            "held at once / C; {:.1}% of calls acquired",
            100.0 * row.acquired as f64 / row.calls.max(1) as f64
        ));
    } else if row.scenario == Scenario::Allow && row.acquired < row.calls {
        let refused = row.calls - row.acquired;
        notes.push(match row.family {
            // Burst 1: a reading older than another thread's last admission + T is refused,
            // by the spec too.
            Family::Paced => format!("{refused} refused (burst 1: stale readings)"),
            // A thread descheduled between its clock reading and its decision decides at
            // that old reading, which the bucket, refilled since by others, refuses: the
            // spec does the same at that reading.
            Family::Bucket => format!("{refused} refused (readings older than the burst)"),
            _ => format!("{refused} refused below the limit"),
        });
    }
    notes.join("; ")
}

/// Lock-free throughput over parking_lot's and governor's, per block and thread count.
pub fn summary(rows: &[Row], threads: &[usize]) -> String {
    let mut out = String::from(
        "\nsummary: lock_free throughput / parking_lot's | / governor's, per thread count\n",
    );
    let _ = write!(out, "{:<16} {:<9}", "limiter", "scenario");
    for &t in threads {
        let star = rows.iter().any(|r| r.threads == t && r.oversubscribed);
        let _ = write!(
            out,
            " {:>15}",
            format!("{t}{}", if star { "*" } else { "" })
        );
    }
    out.push('\n');
    let lock_free = rows
        .iter()
        .filter(|r| r.implementation == Implementation::LockFree);
    let mut blocks: Vec<(&str, Scenario)> = Vec::new();
    for row in lock_free.clone() {
        if !blocks.contains(&(row.limiter, row.scenario)) {
            blocks.push((row.limiter, row.scenario));
        }
    }
    for (limiter, scenario) in blocks {
        let _ = write!(out, "{limiter:<16} {:<9}", scenario.name());
        for &t in threads {
            let cell = lock_free
                .clone()
                .find(|r| r.limiter == limiter && r.scenario == scenario && r.threads == t)
                .map(|row| {
                    format!(
                        "{} | {}",
                        ratio(row.mops, peer(rows, row, Implementation::ParkingLot)),
                        governor_ratio(rows, row)
                    )
                })
                .unwrap_or_else(|| "-".to_owned());
            let _ = write!(out, " {cell:>15}");
        }
        out.push('\n');
    }
    out
}

/// One JSON object (one line) for a row. `period_ns` is the bucket family's T (and
/// governor's period for the windows); `audited` says what `admitted` and `allowed_max`
/// count: admissions, or (concurrency) the most permits held at once and C.
pub fn json(row: &Row, clock: &str) -> String {
    format!(
        "{{\"limiter\":{},\"implementation\":{},\"scenario\":{},\"threads\":{},\
         \"oversubscribed\":{},\"mops\":{:.3},\"calls\":{},\"acquired\":{},\"audited\":{},\
         \"admitted\":{},\"allowed_max\":{},\"worst_window\":{},\"worst_max\":{},\
         \"over_admitted\":{},\"limit\":{},\"window_ns\":{},\"period_ns\":{},\"clock\":{}}}",
        string(row.limiter),
        string(row.implementation.name()),
        string(row.scenario.name()),
        row.threads,
        row.oversubscribed,
        row.mops,
        row.calls,
        row.acquired,
        string(if row.family == Family::Concurrency {
            "max_in_flight"
        } else {
            "admissions"
        }),
        row.admitted,
        row.allowed_max,
        row.worst.map_or("null".to_owned(), |w| w.to_string()),
        row.worst
            .map_or("null".to_owned(), |_| row.worst_max.to_string()),
        row.over_admitted(),
        row.config.limit,
        row.config.window.as_nanos(),
        row.config.period_nanos(),
        string(clock),
    )
}

/// A JSON string literal.
fn string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn json_rows_are_flat_objects() {
        let row = Row {
            limiter: "fixed_window",
            family: Family::Window,
            implementation: Implementation::Naive,
            scenario: Scenario::AtLimit,
            config: Config {
                limit: 5,
                window: Duration::from_millis(1),
            },
            threads: 2,
            oversubscribed: false,
            mops: 1.5,
            calls: 10,
            acquired: 7,
            admitted: 7,
            allowed_max: 5,
            excess: 2,
            worst: None,
            worst_max: 5,
        };
        assert_eq!(
            json(&row, "a \"b\""),
            "{\"limiter\":\"fixed_window\",\"implementation\":\"naive\",\"scenario\":\"at_limit\",\
             \"threads\":2,\"oversubscribed\":false,\"mops\":1.500,\"calls\":10,\"acquired\":7,\
             \"audited\":\"admissions\",\"admitted\":7,\"allowed_max\":5,\"worst_window\":null,\
             \"worst_max\":null,\"over_admitted\":2,\"limit\":5,\"window_ns\":1000000,\
             \"period_ns\":200000,\"clock\":\"a \\\"b\\\"\"}"
        );
        assert!(!row.fails());
        assert!(Row {
            implementation: Implementation::LockFree,
            ..row
        }
        .fails());
    }
}
