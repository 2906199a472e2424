//! Configuration files in envoyproxy/ratelimit's YAML format, with ringlimit's own fields
//! for what that format cannot say (`algorithm`, `burst`, `buckets`), loaded from a
//! directory: every `*.yaml` / `*.yml` file is one domain.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// One file: a domain and its descriptor tree.
///
/// ```
/// use ringlimit_server::config::DomainConfig;
/// let domain = DomainConfig::parse("inline", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 5}\n")?;
/// assert_eq!(domain.domain, "d");
/// # Ok::<(), ringlimit_server::config::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainConfig {
    /// The domain requests name.
    pub domain: String,
    /// The top-level descriptors.
    #[serde(default)]
    pub descriptors: Vec<DescriptorConfig>,
}

/// One entry of a descriptor list, with its nested list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DescriptorConfig {
    /// The entry's key.
    pub key: String,
    /// The value matched (absent: any value, one counter per value; `*` matches any run of
    /// characters).
    #[serde(default)]
    pub value: Option<String>,
    /// The limit applied where a request's descriptor ends here.
    #[serde(default)]
    pub rate_limit: Option<RateLimitConfig>,
    /// Counts, but never refuses.
    #[serde(default)]
    pub shadow_mode: bool,
    /// Metrics per value for values not listed (accepted; metrics here are per key only).
    #[serde(default)]
    pub detailed_metric: bool,
    /// Metrics with the request's value (accepted; metrics here are per key only).
    #[serde(default)]
    pub value_to_metric: bool,
    /// Values matching a wildcard share one counter.
    #[serde(default)]
    pub share_threshold: bool,
    /// Entries matched by the next entry of a request's descriptor.
    #[serde(default)]
    pub descriptors: Vec<DescriptorConfig>,
}

/// A `rate_limit` block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// The limit's name, which `replaces` of another limit may name.
    #[serde(default)]
    pub name: Option<String>,
    /// Limits this one replaces when both match a request.
    #[serde(default)]
    pub replaces: Vec<Replaces>,
    /// `second`, `minute`, `hour`, `day`, `week`, `month` (30 days) or `year` (365 days).
    #[serde(default)]
    pub unit: Option<Unit>,
    /// Requests per unit.
    #[serde(default)]
    pub requests_per_unit: Option<u64>,
    /// Never counted, never refused.
    #[serde(default)]
    pub unlimited: bool,
    /// ringlimit's: how the limit counts (default `fixed_window`, as envoyproxy/ratelimit).
    #[serde(default)]
    pub algorithm: Algorithm,
    /// ringlimit's: a token bucket's burst (default: `requests_per_unit`).
    #[serde(default)]
    pub burst: Option<u64>,
    /// ringlimit's: a sliding window's buckets on Redis (in process: 10).
    #[serde(default)]
    pub buckets: Option<u64>,
}

/// An entry of `replaces`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replaces {
    /// The replaced limit's name.
    pub name: String,
}

/// A limit's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Unit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    /// The unit's length.
    ///
    /// ```
    /// use ringlimit_server::config::Unit;
    /// assert_eq!(Unit::Minute.duration().as_secs(), 60);
    /// ```
    pub fn duration(self) -> Duration {
        let day = 86_400;
        Duration::from_secs(match self {
            Self::Second => 1,
            Self::Minute => 60,
            Self::Hour => 3_600,
            Self::Day => day,
            Self::Week => 7 * day,
            Self::Month => 30 * day,
            Self::Year => 365 * day,
        })
    }

    /// The name envoyproxy/ratelimit's files and responses use.
    ///
    /// ```
    /// assert_eq!(ringlimit_server::config::Unit::Hour.name(), "hour");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::Year => "year",
        }
    }
}

/// How a limit counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Windows aligned to the clock (envoyproxy/ratelimit's only kind).
    #[default]
    FixedWindow,
    /// A sliding window of buckets.
    SlidingWindow,
    /// An exact sliding log.
    SlidingLog,
    /// A token bucket refilled at `requests_per_unit` per unit, holding `burst`.
    TokenBucket,
}

impl Algorithm {
    /// The name the files use.
    ///
    /// ```
    /// use ringlimit_server::config::Algorithm;
    /// assert_eq!(Algorithm::TokenBucket.name(), "token_bucket");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::FixedWindow => "fixed_window",
            Self::SlidingWindow => "sliding_window",
            Self::SlidingLog => "sliding_log",
            Self::TokenBucket => "token_bucket",
        }
    }
}

/// A file that does not load: which file, where, and why.
///
/// ```
/// use ringlimit_server::config::DomainConfig;
/// let error = DomainConfig::parse("a.yaml", "domain: d\ndescriptors:\n  - key: k\n    colour: red\n").unwrap_err();
/// assert_eq!(error.line, Some(4));
/// assert!(error.to_string().starts_with("a.yaml:4:"), "{error}");
/// assert!(error.to_string().contains("colour"), "{error}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The 1-based line, where known.
    pub line: Option<usize>,
    /// The field's path (`descriptors[0].rate_limit`), where known.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if !self.field.is_empty() && self.field != "." {
            write!(f, "at `{}`: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl DomainConfig {
    /// Parses one file's text (`file` names it in errors) and checks its limits.
    ///
    /// ```
    /// use ringlimit_server::config::DomainConfig;
    /// let error = DomainConfig::parse("b.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second}\n").unwrap_err();
    /// assert!(error.message.contains("requests_per_unit"), "{error}");
    /// ```
    pub fn parse(file: impl AsRef<Path>, text: &str) -> Result<Self, ConfigError> {
        let file = file.as_ref().to_path_buf();
        let mut options = serde_saphyr::Options::default();
        options.with_snippet = false;
        let mut field = String::new();
        let parsed: Result<Self, _> =
            serde_saphyr::with_deserializer_from_str_with_options(text, options, |deserializer| {
                serde_path_to_error::deserialize(deserializer).map_err(|error| {
                    field = error.path().to_string();
                    error.into_inner()
                })
            });
        let domain = parsed.map_err(|error| {
            let line = error.location().map(|at| at.line() as usize);
            let message = error.to_string();
            let message = match message.rfind(" at line ") {
                Some(at) if line.is_some() => message[..at].to_owned(),
                _ => message,
            };
            ConfigError {
                file: file.clone(),
                line,
                field: field.clone(),
                message,
            }
        })?;
        domain.check(&file, text)?;
        Ok(domain)
    }

    /// Every limit has what it needs: a unit and a count, or `unlimited`.
    fn check(&self, file: &Path, text: &str) -> Result<(), ConfigError> {
        let fail = |field: String, key: &str, message: String| ConfigError {
            file: file.to_path_buf(),
            // The first line that names the entry's key: a good enough pointer for a
            // semantic error, which the parser's positions do not reach.
            line: text
                .lines()
                .position(|line| line.contains(&format!("key: {key}")))
                .map(|at| at + 1),
            field,
            message,
        };
        if self.domain.is_empty() {
            return Err(fail("domain".into(), "", "the domain is empty".into()));
        }
        fn walk(
            list: &[DescriptorConfig],
            path: &str,
            fail: &dyn Fn(String, &str, String) -> ConfigError,
        ) -> Result<(), ConfigError> {
            for (at, entry) in list.iter().enumerate() {
                let here = format!("{path}descriptors[{at}]");
                if entry.key.is_empty() {
                    return Err(fail(here, "", "the key is empty".into()));
                }
                if let Some(limit) = &entry.rate_limit {
                    if !limit.unlimited
                        && (limit.unit.is_none() || limit.requests_per_unit.is_none())
                    {
                        return Err(fail(
                            format!("{here}.rate_limit"),
                            &entry.key,
                            "a rate_limit needs `unit` and `requests_per_unit` (or `unlimited: true`)".into(),
                        ));
                    }
                    // A field of another algorithm would be silently ignored: say so instead.
                    let misplaced = [
                        ("burst", limit.burst.is_some(), Algorithm::TokenBucket),
                        ("buckets", limit.buckets.is_some(), Algorithm::SlidingWindow),
                    ];
                    for (field, given, algorithm) in misplaced {
                        if given && limit.algorithm != algorithm {
                            return Err(fail(
                                format!("{here}.rate_limit.{field}"),
                                &entry.key,
                                format!(
                                    "`{field}` applies to `algorithm: {}` only, not `{}`",
                                    algorithm.name(),
                                    limit.algorithm.name()
                                ),
                            ));
                        }
                    }
                }
                walk(&entry.descriptors, &format!("{here}."), fail)?;
            }
            Ok(())
        }
        walk(&self.descriptors, "", &fail)
    }
}

/// Loads every `*.yaml` and `*.yml` file of `dir` (not its subdirectories), in name order;
/// two files of one domain are an error.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("ringlimit-server-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("a.yaml"), "domain: a\ndescriptors: []\n")?;
/// let domains = ringlimit_server::config::load_dir(&dir)?;
/// assert_eq!(domains[0].domain, "a");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_dir(dir: &Path) -> Result<Vec<DomainConfig>, ConfigError> {
    let io = |error: std::io::Error, file: &Path| ConfigError {
        file: file.to_path_buf(),
        line: None,
        field: String::new(),
        message: error.to_string(),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(e, dir))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.is_file()
                && matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml")
                )
        })
        .collect();
    files.sort();
    let mut domains: Vec<DomainConfig> = Vec::with_capacity(files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| io(e, &file))?;
        let domain = DomainConfig::parse(&file, &text)?;
        if domains.iter().any(|d| d.domain == domain.domain) {
            return Err(ConfigError {
                file,
                line: None,
                field: "domain".into(),
                message: format!("domain `{}` is also in another file", domain.domain),
            });
        }
        domains.push(domain);
    }
    Ok(domains)
}
