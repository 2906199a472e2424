//! [`RulesError`]: why a rules file was not loaded.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a rules file was not loaded (the rules in force stay in force): the file, the rule
/// (its name, or its place in the file when it has no readable name), the field, the line
/// and column where the format's parser gives them, and what is wrong.
///
/// ```
/// use ringlimit::rules::{Format, RuleSet};
/// let rules = RuleSet::new();
/// let error = rules
///     .reload_str(Format::Toml, r#"
/// [[rules]]
/// name = "per-user"
/// key = "user"
/// algorithm = "fixed_window"
/// rate = "100/fortnight"
/// "#)
///     .unwrap_err();
/// assert_eq!(error.rule(), Some("per-user"));
/// assert_eq!(error.field(), Some("rate"));
/// assert_eq!(error.line(), Some(6));
/// assert!(error.to_string().contains("fortnight"), "{error}");
/// ```
#[derive(Debug)]
pub struct RulesError(Box<Details>);

/// A [`RulesError`]'s parts, boxed: an error stays one pointer wide on the success path.
#[derive(Debug)]
struct Details {
    file: Option<PathBuf>,
    rule: Option<String>,
    field: Option<String>,
    position: Option<(usize, usize)>,
    reason: String,
    source: Option<std::io::Error>,
}

impl RulesError {
    /// An error about the rules as a whole (no rule, no field).
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Self(Box::new(Details {
            file: None,
            rule: None,
            field: None,
            position: None,
            reason: reason.into(),
            source: None,
        }))
    }

    /// An error reading `path`.
    pub(crate) fn io(path: &Path, error: std::io::Error) -> Self {
        let mut this = Self::new(format!("cannot read the rules file: {error}")).in_file(path);
        this.0.source = Some(error);
        this
    }

    /// An error about `field` of `rule`.
    pub(crate) fn of_field(rule: &str, field: &str, reason: impl Into<String>) -> Self {
        Self::new(reason).in_rule(rule).at_field(field)
    }

    pub(crate) fn in_rule(mut self, rule: impl Into<String>) -> Self {
        self.0.rule = Some(rule.into());
        self
    }

    pub(crate) fn at_field(mut self, field: impl Into<String>) -> Self {
        self.0.field = Some(field.into());
        self
    }

    /// At 1-based `line` and `column`.
    pub(crate) fn at(mut self, line: usize, column: usize) -> Self {
        self.0.position = Some((line, column));
        self
    }

    pub(crate) fn in_file(mut self, path: &Path) -> Self {
        self.0.file = Some(path.to_owned());
        self
    }

    /// The file, when the rules came from one.
    ///
    /// ```
    /// use std::path::Path;
    /// use ringlimit::rules::RuleSet;
    /// let error = RuleSet::new().reload_path("/nonexistent/rules.toml").unwrap_err();
    /// assert_eq!(error.file(), Some(Path::new("/nonexistent/rules.toml")));
    /// ```
    pub fn file(&self) -> Option<&Path> {
        self.0.file.as_deref()
    }

    /// The rule at fault: its name, or `rules[i]` (0-based) when its name is missing or
    /// unreadable. `None` for an error about the whole file (its syntax, its extension).
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleSet};
    /// let error = RuleSet::new()
    ///     .reload_str(Format::Yaml, "rules:\n  - key: user\n")
    ///     .unwrap_err();
    /// assert_eq!(error.rule(), Some("rules[0]"));
    /// assert!(error.to_string().contains("name"), "{error}");
    /// ```
    pub fn rule(&self) -> Option<&str> {
        self.0.rule.as_deref()
    }

    /// The field at fault, as the file spells it.
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleSet};
    /// let error = RuleSet::new()
    ///     .reload_str(
    ///         Format::Yaml,
    ///         "rules:\n  - name: api\n    key: route\n    algorithm: token_bucket\n    rate: 10/s\n    burts: 20\n",
    ///     )
    ///     .unwrap_err();
    /// assert_eq!((error.rule(), error.field()), (Some("api"), Some("burts")));
    /// ```
    pub fn field(&self) -> Option<&str> {
        self.0.field.as_deref()
    }

    /// The 1-based line, where the format's parser gives it.
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleSet};
    /// let error = RuleSet::new().reload_str(Format::Toml, "rules = [\n\n").unwrap_err();
    /// assert!(error.line().is_some());
    /// ```
    pub fn line(&self) -> Option<usize> {
        self.0.position.map(|(line, _)| line)
    }

    /// The 1-based column, where the format's parser gives it.
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleSet};
    /// let error = RuleSet::new().reload_str(Format::Toml, "rules = 7").unwrap_err();
    /// assert_eq!((error.line(), error.column()), (Some(1), Some(9)));
    /// ```
    pub fn column(&self) -> Option<usize> {
        self.0.position.map(|(_, column)| column)
    }

    /// What is wrong, without the file, rule, field or position.
    ///
    /// ```
    /// use ringlimit::rules::{Format, RuleSet};
    /// let error = RuleSet::new().reload_str(Format::Toml, "rule = []").unwrap_err();
    /// assert!(error.reason().contains("rule"), "{error}");
    /// ```
    pub fn reason(&self) -> &str {
        &self.0.reason
    }
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.0.file {
            write!(f, "{}", file.display())?;
            if let Some((line, column)) = self.0.position {
                write!(f, ":{line}:{column}")?;
            }
            f.write_str(": ")?;
        } else if let Some((line, column)) = self.0.position {
            write!(f, "line {line}, column {column}: ")?;
        }
        if let Some(rule) = &self.0.rule {
            write!(f, "rule `{rule}`: ")?;
        }
        if let Some(field) = &self.0.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.0.reason)
    }
}

impl std::error::Error for RulesError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_ref()
            .map(|error| error as &(dyn std::error::Error + 'static))
    }
}
