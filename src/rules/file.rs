//! The rules file as the formats read it ([`Format`]): serde structures rejecting unknown
//! fields, and the parse that locates an error in its rule and field.

use std::path::Path;

use serde::Deserialize;

use super::error::RulesError;
use super::request::KeySource;
use super::units::{Count, Limit, RuleRate, Span};

/// The format of a rules file.
///
/// ```
/// use std::path::Path;
/// use ringlimit::rules::Format;
/// assert_eq!(Format::of_path(Path::new("limits.yml")), Some(Format::Yaml));
/// assert_eq!(Format::of_path(Path::new("limits.toml")), Some(Format::Toml));
/// assert_eq!(Format::of_path(Path::new("limits.json")), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// TOML: `[[rules]]` tables.
    Toml,
    /// YAML: a `rules:` sequence of mappings.
    Yaml,
}

impl Format {
    /// The format a path's extension names: `.toml`, or `.yaml` / `.yml`.
    ///
    /// ```
    /// use std::path::Path;
    /// use ringlimit::rules::Format;
    /// assert_eq!(Format::of_path(Path::new("/etc/app/rules.YAML")), Some(Format::Yaml));
    /// ```
    pub fn of_path(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "toml" => Some(Self::Toml),
            "yaml" | "yml" => Some(Self::Yaml),
            _ => None,
        }
    }
}

/// The algorithm of a rule: the file's `algorithm` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Algorithm {
    FixedWindow,
    SlidingWindow,
    SlidingLog,
    TokenBucket,
}

impl Algorithm {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::FixedWindow => "fixed_window",
            Self::SlidingWindow => "sliding_window",
            Self::SlidingLog => "sliding_log",
            Self::TokenBucket => "token_bucket",
        }
    }
}

impl<'de> Deserialize<'de> for KeySource {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileText {
    pub(crate) rules: Vec<RuleText>,
}

/// One rule as written (values parsed, combinations not yet checked).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleText {
    pub(crate) name: String,
    pub(crate) resource: Option<String>,
    pub(crate) key: KeySource,
    pub(crate) algorithm: Algorithm,
    pub(crate) rate: Option<RuleRate>,
    pub(crate) limit: Option<Limit>,
    pub(crate) window: Option<Span>,
    pub(crate) burst: Option<Count>,
    pub(crate) max_keys: Option<Count>,
}

/// Only the rules' names, read leniently: what an error in a rule is reported under.
#[derive(Deserialize)]
struct NamesText {
    rules: Vec<NameText>,
}

#[derive(Deserialize)]
struct NameText {
    name: Option<String>,
}

/// Where an error was, as the formats report it.
struct Located {
    /// `rules[3].window`, as serde_path_to_error spells the path.
    path: String,
    /// The field, when the format names it apart from the path (YAML's duplicate key: the
    /// path ends in `?` there, its key not yet read as a field).
    field: Option<String>,
    position: Option<(usize, usize)>,
    message: String,
}

/// Parses `text` as `format`.
pub(crate) fn parse(format: Format, text: &str) -> Result<FileText, RulesError> {
    let located = match format {
        Format::Toml => parse_toml(text),
        Format::Yaml => parse_yaml(text),
    };
    located.map_err(|located| {
        let mut error = RulesError::new(located.message);
        if let Some((line, column)) = located.position {
            error = error.at(line, column);
        }
        let (rule, field) = rule_and_field(&located.path);
        // A field the path cannot name (a missing one: the path stops at its rule; a
        // duplicated one: the path names `?`) is named by the format or serde's message.
        let field = (located.field)
            .or(field.filter(|field| field != "?"))
            .or_else(|| quoted_field(error.reason()));
        if let Some(index) = rule {
            let name = names(format, text).and_then(|names| names.get(index).cloned().flatten());
            error = error.in_rule(name.unwrap_or_else(|| format!("rules[{index}]")));
        }
        if let Some(field) = field {
            error = error.at_field(field);
        }
        error
    })
}

fn parse_toml(text: &str) -> Result<FileText, Located> {
    let located = |error: toml::de::Error, path: String| Located {
        path,
        field: None,
        position: error.span().map(|span| line_and_column(text, span.start)),
        message: error.message().trim().to_owned(),
    };
    let deserializer = toml::Deserializer::parse(text).map_err(|error| {
        let path = duplicate_toml_key(text, &error).unwrap_or_default();
        located(error, path)
    })?;
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        located(error.into_inner(), path)
    })
}

fn parse_yaml(text: &str) -> Result<FileText, Located> {
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    let mut path = String::new();
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |deserializer| {
        serde_path_to_error::deserialize(deserializer).map_err(|error| {
            path = error.path().to_string();
            error.into_inner()
        })
    })
    .map_err(|error| {
        let position = error
            .location()
            .map(|at| (at.line() as usize, at.column() as usize));
        let field = match &error {
            serde_saphyr::Error::DuplicateMappingKey { key, .. } => key.clone(),
            _ => None,
        };
        let message = match &field {
            // Not serde_saphyr's advice to set its options.
            Some(key) => format!("`{key}` is given twice"),
            None => error.to_string(),
        };
        // The message ends with its position, which the error reports apart.
        let message = match message.rfind(" at line ") {
            Some(at) if position.is_some() => message[..at].to_owned(),
            _ => message,
        };
        Located {
            path,
            field,
            position,
            message,
        }
    })
}

/// The path of a key TOML's parser found given twice in a `[[rules]]` table (its document
/// parse reports no path): `rules[i].key`, `i` counted by the table headers above it.
fn duplicate_toml_key(text: &str, error: &toml::de::Error) -> Option<String> {
    let span = error.span()?;
    if error.message().trim() != "duplicate key" {
        return None;
    }
    let key = text.get(span)?.trim().trim_matches(['"', '\'']);
    let before = text.get(..error.span()?.start)?;
    let tables = before
        .lines()
        .filter(|line| line.trim() == "[[rules]]")
        .count();
    let index = tables.checked_sub(1)?;
    Some(format!("rules[{index}].{key}"))
}

/// The field serde's messages about a field that is missing or given twice name: `missing
/// field `algorithm``, `duplicate field `key``.
fn quoted_field(message: &str) -> Option<String> {
    let rest = ["missing field `", "duplicate field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))?;
    let (field, _) = rest.split_once('`')?;
    Some(field.to_owned())
}

/// The rule's index and the field in a path such as `rules[3].window` (`.` alone, or a
/// path outside `rules`, names neither).
fn rule_and_field(path: &str) -> (Option<usize>, Option<String>) {
    let Some(rest) = path.strip_prefix("rules[") else {
        return (None, None);
    };
    let Some((index, rest)) = rest.split_once(']') else {
        return (None, None);
    };
    let field = rest
        .strip_prefix('.')
        .map(|field| field.split(['.', '[']).next().unwrap_or(field).to_owned())
        .filter(|field| !field.is_empty());
    (index.parse().ok(), field)
}

/// The rules' names, if the file reads as a list of rules at all (a YAML key given twice
/// read as its first value: the error may be that very key).
fn names(format: Format, text: &str) -> Option<Vec<Option<String>>> {
    let names: NamesText = match format {
        Format::Toml => toml::from_str(text).ok()?,
        Format::Yaml => {
            let mut options = serde_saphyr::Options::default();
            options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::FirstWins;
            serde_saphyr::from_str_with_options(text, options).ok()?
        }
    };
    Some(names.rules.into_iter().map(|rule| rule.name).collect())
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_rule_and_the_field() {
        assert_eq!(
            rule_and_field("rules[3].window"),
            (Some(3), Some("window".into()))
        );
        assert_eq!(rule_and_field("rules[0]"), (Some(0), None));
        assert_eq!(rule_and_field("."), (None, None));
        assert_eq!(rule_and_field("rule"), (None, None));
    }

    #[test]
    fn messages_name_missing_and_duplicate_fields() {
        assert_eq!(
            quoted_field("missing field `algorithm`"),
            Some("algorithm".into())
        );
        assert_eq!(quoted_field("duplicate field `key`"), Some("key".into()));
        assert_eq!(quoted_field("unknown field `burts`, expected one of"), None);
    }

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(line_and_column("a\nbé c", 5), (2, 3));
        assert_eq!(line_and_column("a\nbé c", 4), (2, 2)); // inside `é`: up to the line
        assert_eq!(line_and_column("abc", 0), (1, 1));
        assert_eq!(line_and_column("abc", 99), (1, 4));
    }
}
