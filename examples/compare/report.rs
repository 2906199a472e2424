//! The output: a table per limiter and scenario, summaries of ratios (to parking_lot and
//! governor, and to the floor), or JSON lines.

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

/// The floor's throughput at `threads` threads in this run, if it was measured.
pub fn floor(rows: &[Row], threads: usize) -> Option<f64> {
    rows.iter()
        .find(|r| r.implementation == Implementation::Floor && r.threads == threads)
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
    if row.implementation == Implementation::Floor {
        return "not a limiter: the floor, never audited".to_owned();
    }
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

/// Allow throughput of the lock-free (and sharded) rows over the floor's, per limiter and
/// thread count, under the floor's own Mops/s.
pub fn floor_summary(rows: &[Row], threads: &[usize]) -> String {
    let mut out = format!(
        "\nfloor: allow throughput / the floor's ({}), per thread count\n",
        crate::floor::DESCRIBE
    );
    let _ = write!(out, "{:<16} {:<10}", "limiter", "impl");
    for &t in threads {
        let star = rows.iter().any(|r| r.threads == t && r.oversubscribed);
        let _ = write!(out, " {:>7}", format!("{t}{}", if star { "*" } else { "" }));
    }
    out.push('\n');
    let _ = write!(out, "{:<16} {:<10}", "floor (Mops/s)", "floor");
    for &t in threads {
        let mops = floor(rows, t).map_or("-".to_owned(), |m| format!("{m:.2}"));
        let _ = write!(out, " {mops:>7}");
    }
    out.push('\n');
    let shown = |r: &&Row| {
        r.scenario == Scenario::Allow
            && matches!(
                r.implementation,
                Implementation::LockFree | Implementation::Sharded
            )
    };
    let mut lines: Vec<(&str, Implementation)> = Vec::new();
    for row in rows.iter().filter(shown) {
        if !lines.contains(&(row.limiter, row.implementation)) {
            lines.push((row.limiter, row.implementation));
        }
    }
    for (limiter, implementation) in lines {
        let _ = write!(out, "{limiter:<16} {:<10}", implementation.name());
        for &t in threads {
            let cell = rows
                .iter()
                .filter(shown)
                .find(|r| {
                    r.limiter == limiter && r.implementation == implementation && r.threads == t
                })
                .and_then(|r| Some(r.mops / floor(rows, t).filter(|&f| f > 0.0)?))
                .map_or("-".to_owned(), |ratio| format!("{ratio:.2}"));
            let _ = write!(out, " {cell:>7}");
        }
        out.push('\n');
    }
    out
}

/// One JSON object (one line) for a row. `floor` is the floor's throughput at the row's
/// thread count, if measured: `floor_ratio` is the row's over it (1 for the floor's row;
/// null without a floor). `period_ns` is the bucket family's T (and governor's period for
/// the windows); `audited` says what `admitted` and `allowed_max` count: admissions, or
/// (concurrency) the most permits held at once and C; for the floor, `none`, and its
/// `limit`, `window_ns` and `period_ns` are null.
pub fn json(row: &Row, floor: Option<f64>, clock: &str) -> String {
    let is_floor = row.implementation == Implementation::Floor;
    let quota = |value: u128| {
        if is_floor {
            "null".to_owned()
        } else {
            value.to_string()
        }
    };
    format!(
        "{{\"limiter\":{},\"implementation\":{},\"scenario\":{},\"threads\":{},\
         \"oversubscribed\":{},\"mops\":{:.3},\"floor_ratio\":{},\"calls\":{},\"acquired\":{},\
         \"audited\":{},\"admitted\":{},\"allowed_max\":{},\"worst_window\":{},\
         \"worst_max\":{},\"over_admitted\":{},\"limit\":{},\"window_ns\":{},\"period_ns\":{},\
         \"clock\":{}}}",
        string(row.limiter),
        string(row.implementation.name()),
        string(row.scenario.name()),
        row.threads,
        row.oversubscribed,
        row.mops,
        floor
            .filter(|&f| f > 0.0)
            .map_or("null".to_owned(), |f| format!("{:.4}", row.mops / f)),
        row.calls,
        row.acquired,
        string(if is_floor {
            "none"
        } else if row.family == Family::Concurrency {
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
        quota(row.config.limit.into()),
        quota(row.config.window.as_nanos()),
        quota(row.config.period_nanos().into()),
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

    fn fixed_window() -> Row {
        Row {
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
        }
    }

    /// The floor's row at `threads` threads, measuring `mops`.
    fn floor_row(threads: usize, mops: f64) -> Row {
        Row {
            mops,
            ..crate::floor::measure(threads, false, Duration::from_millis(1), 1)
        }
    }

    #[test]
    fn json_rows_are_flat_objects() {
        let row = fixed_window();
        assert_eq!(
            json(&row, Some(3.0), "a \"b\""),
            "{\"limiter\":\"fixed_window\",\"implementation\":\"naive\",\"scenario\":\"at_limit\",\
             \"threads\":2,\"oversubscribed\":false,\"mops\":1.500,\"floor_ratio\":0.5000,\
             \"calls\":10,\"acquired\":7,\"audited\":\"admissions\",\"admitted\":7,\"allowed_max\":5,\"worst_window\":null,\
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

    /// `floor_ratio`: over the floor at the row's own thread count; 1 for the floor's row,
    /// whose quota fields are null; null when no floor was measured.
    #[test]
    fn json_floor_ratio() {
        let rows = [floor_row(1, 4.0), floor_row(2, 3.0), fixed_window()];
        assert_eq!(floor(&rows, 2), Some(3.0));
        assert_eq!(floor(&rows, 4), None);
        let line = json(&rows[2], floor(&rows, rows[2].threads), "c");
        assert!(line.contains("\"floor_ratio\":0.5000,"), "{line}");
        assert!(json(&rows[2], None, "c").contains("\"floor_ratio\":null,"));
        let line = json(&rows[0], floor(&rows, 1), "c");
        assert!(
            line.starts_with(
                "{\"limiter\":\"floor\",\"implementation\":\"floor\",\
             \"scenario\":\"allow\",\"threads\":1,\"oversubscribed\":false,\"mops\":4.000,\
             \"floor_ratio\":1.0000,"
            ),
            "{line}"
        );
        assert!(line.contains("\"audited\":\"none\","), "{line}");
        assert!(
            line.contains(
                "\"over_admitted\":0,\"limit\":null,\"window_ns\":null,\
             \"period_ns\":null,"
            ),
            "{line}"
        );
    }

    /// The floor summary: the floor's Mops/s, then lock-free and sharded allow rows over it.
    #[test]
    fn floor_summary_lines() {
        let allow = |implementation, threads, mops| Row {
            limiter: "sliding_window",
            implementation,
            scenario: Scenario::Allow,
            threads,
            mops,
            ..fixed_window()
        };
        let rows = [
            floor_row(1, 4.0),
            floor_row(2, 2.0),
            allow(Implementation::LockFree, 1, 3.0),
            allow(Implementation::Sharded, 1, 2.0),
            allow(Implementation::LockFree, 2, 1.0),
            allow(Implementation::Sharded, 2, 5.0),
            allow(Implementation::ParkingLot, 2, 1.0),
            fixed_window(),
        ];
        let text = floor_summary(&rows, &[1, 2]);
        let lines: Vec<Vec<&str>> = text
            .lines()
            .skip(3)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            lines,
            [
                vec!["floor", "(Mops/s)", "floor", "4.00", "2.00"],
                vec!["sliding_window", "lock_free", "0.75", "0.50"],
                vec!["sliding_window", "sharded", "0.50", "2.50"],
            ]
        );
    }
}
