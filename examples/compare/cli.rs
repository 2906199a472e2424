//! The command line: a small hand-written parser (no clap: compile time on 2 cores).

use std::path::PathBuf;
use std::time::Duration;

/// What to run and how to print it.
#[derive(Debug, Clone)]
pub struct Options {
    /// Thread counts, in the order given.
    pub threads: Vec<usize>,
    /// Names (limiter, implementation or scenario) a row must match; empty: everything.
    pub only: Vec<String>,
    /// One JSON object per row on stdout instead of the tables.
    pub json: bool,
    /// Where to write the SVG chart, if anywhere.
    pub svg: Option<PathBuf>,
    /// The timed length of one sample.
    pub duration: Duration,
    /// Samples per cell; the cell reports their median throughput.
    pub samples: usize,
    /// `--quick` was given (recorded in the output).
    pub quick: bool,
}

/// The usage text, printed by `--help` and after a bad argument.
pub const USAGE: &str = "\
usage: cargo run --release --example compare -- [options]

  --quick            short cells (seconds in all), for CI
  --json             one JSON object per row on stdout (progress and notes on stderr)
  --threads LIST     thread counts, comma-separated (default 1,2,4,8)
  --only LIST        keep rows whose limiter, implementation or scenario is named
                     (comma-separated; names of one kind are alternatives, kinds combine;
                     `keyed` names every keyed limiter: keyed_token_bucket,
                     keyed_token_bucket_foldhash, keyed_sliding_window, and the keyed
                     floor, keyed_floor; `policy`: the policy rows; a scenario named
                     leaves the keyed and policy rows out; `floor` alone: only the floor
                     rows, keyed_floor's too; `keyed_floor` alone: only those)
  --svg FILE         write a chart of throughput against threads per implementation
  --duration-ms MS   timed length of one sample (default 30, quick 15)
  --samples K        samples per cell, the median is reported (default 3, quick 1)
  --help             this text

Every run that measures a limiter row also measures, at each of its thread counts, the
floor (rows `floor / allow`, implementation `floor`): one read of the limiters' clock plus
one fetch_add on one cache-padded AtomicU64 shared by all threads, timed like every row.
On 1 thread it is the uncontended cost of a call; on N, one shared line's RMW rate. JSON
rows carry `floor_ratio`, their Mops/s over the floor's at the same thread count; the text
output ends with a summary of the allow rows' ratios to it.

Keyed rows (the service path): per limiter, implementation and key count K (1 M and 10 M;
quick 10 k and 100 k), a child process inserts keys 0..K, reports the resident memory grown
per key (bytes_per_key) and times random keys at each thread count. ringlimit's lock_free
rows are built with .max_keys(K), so their cells live in the fixed open-addressing table.
The keyed floor (rows `keyed_floor`, implementation `floor`), in a child of its own at each
K: one random 16-byte slot of an array as large as a keyed token bucket's table of K keys
(K + ceil(K/4) slots), its first word loaded and CASed +1, no hashing, no clock; every keyed
row's `floor_ratio` is its Mops/s over keyed_floor's at the same K and thread count. Then the
attack row: 10 M distinct keys (quick 100 k) through max_keys 1 M (quick 10 k), hot keys
checked exact, with the peak resident memory.

Policy rows: one request checked against four limits (global token bucket, API sliding
window, per-IP fixed window, per-user sliding window; users and IPs drawn at random from
10 000 each, quotas large enough that nearly every check is admitted), implementations
lock_free (ringlimit::policy::Policy, keyed dimensions with max_keys), parking_lot (each
dimension's spec behind a parking_lot mutex) and governor (four governor limiters, IP and
user keyed, checked in turn); `ns_per_check` = wall ns per check per thread (threads /
checks per ns), the admitted fraction, and lock_free's speedup over each.

The exit status is 1 when a ringlimit row admitted more than its algorithm allows.";

/// Default sample length and count, and the `--quick` ones. 9 limiters × 3 scenarios × up
/// to 6 implementations × 4 thread counts make 564 cells (and 4 of the floor), plus about
/// 170 untimed audit samples; on the 2-core machine each sample also costs 10–20 ms of
/// thread start and stop at 4 and 8 threads. So the default keeps three samples (a
/// median) of 30 ms, about a minute of limiter rows (the keyed rows, each in a child process
/// inserting up to 10 M keys, add another; the policy rows, 3 implementations × 4 thread
/// counts, a few seconds), and `--quick` one sample of 15 ms.
const DEFAULT: (u64, usize) = (30, 3);
const QUICK: (u64, usize) = (15, 1);

/// Parses the arguments after the program name. `Err` carries the message to print.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let mut threads = vec![1, 2, 4, 8];
    let mut only = Vec::new();
    let (mut json, mut quick, mut svg) = (false, false, None);
    let (mut duration_ms, mut samples) = (None, None);
    while let Some(arg) = args.next() {
        // `--name=value` and `--name value` are both accepted.
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (arg, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "--quick" => quick = true,
            "--json" => json = true,
            "--threads" => threads = list(&value()?, "--threads")?,
            "--only" => only = value()?.split(',').map(str::to_owned).collect(),
            "--svg" => svg = Some(PathBuf::from(value()?)),
            "--duration-ms" => duration_ms = Some(number(&value()?, "--duration-ms")?),
            "--samples" => samples = Some(number(&value()?, "--samples")?),
            "--help" | "-h" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
        }
    }
    let (default_ms, default_samples) = if quick { QUICK } else { DEFAULT };
    let samples = samples.unwrap_or(default_samples as u64);
    if threads.is_empty() || threads.contains(&0) || samples == 0 {
        return Err("thread counts and --samples must be at least 1".to_owned());
    }
    Ok(Options {
        threads,
        only,
        json,
        svg,
        duration: Duration::from_millis(duration_ms.unwrap_or(default_ms).max(1)),
        samples: usize::try_from(samples).map_err(|_| "--samples is too large".to_owned())?,
        quick,
    })
}

fn number(text: &str, option: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{option}: `{text}` is not a whole number"))
}

fn list(text: &str, option: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(|item| {
            let n = number(item, option)?;
            usize::try_from(n)
                .ok()
                .filter(|&n| n <= 1024)
                .ok_or_else(|| format!("{option}: {n} threads is too many"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Options, String> {
        parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn defaults_and_options() {
        let options = args("").unwrap();
        assert_eq!(options.threads, [1, 2, 4, 8]);
        assert_eq!(options.samples, 3);
        let options = args("--quick --threads 1,2 --only=sliding_window --svg /tmp/x.svg").unwrap();
        assert_eq!(options.threads, [1, 2]);
        assert_eq!(options.only, ["sliding_window"]);
        assert_eq!(options.duration, Duration::from_millis(15));
        assert!(options.svg.is_some());
        assert!(args("--threads 0").is_err());
        assert!(args("--threads x").is_err());
        assert!(args("--samples").is_err());
        assert!(args("--bogus").is_err());
    }
}
