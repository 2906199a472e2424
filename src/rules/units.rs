//! The humane values of a rules file: limits (`100`, `-1`, `"unlimited"`), counts (`20`),
//! spans of time (`500ms`, `1m`) and rates (`100/s`, `1000/min`, `5/100ms`), each parsed
//! from whatever scalar the format holds, with an error saying what was expected.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A limit: a positive number of permits, or none at all (`-1` or `"unlimited"`, as the
/// payment-channel rules write it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    Unlimited,
    At(u64),
}

/// A positive count (a burst, a bound on keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count(pub(crate) u64);

/// A span of time with its unit (`500ms`, `2s`, `1m`, `1h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span(pub(crate) Duration);

/// A rate: `permits` per `per` (`100/s`, `1000/min`, `5/100ms`), or none at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleRate {
    Unlimited,
    Per { permits: u64, per: Duration },
}

const LIMIT: &str = "a positive whole number, or -1 or `unlimited` for no limit";
const COUNT: &str = "a positive whole number";
const SPAN: &str = "a span of time with its unit, such as `500ms`, `2s`, `1m` or `1h`";
const RATE: &str =
    "a rate such as `100/s`, `1000/min`, `10/h` or `5/100ms`, or -1 or `unlimited` for no limit";

/// Nanoseconds per unit, by the units' names (the longest first where one is a prefix of
/// another is not needed: a unit is the whole rest of the text).
const UNITS: [(&str, u64); 10] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
    ("day", 86_400_000_000_000),
];

/// A whole number written with optional `_` separators (`10_000`).
fn number(text: &str) -> Option<u64> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || text.starts_with('_') {
        return None;
    }
    digits.parse().ok()
}

fn is_unlimited(text: &str) -> bool {
    text == "-1" || text.eq_ignore_ascii_case("unlimited")
}

impl Limit {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if is_unlimited(text) {
            return Ok(Self::Unlimited);
        }
        match number(text) {
            Some(0) => Err(format!("0 would refuse every request; expected {LIMIT}")),
            Some(n) => Ok(Self::At(n)),
            None => Err(format!("`{text}` is not {LIMIT}")),
        }
    }
}

impl Count {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match number(text) {
            Some(0) | None => Err(format!("`{text}` is not {COUNT}")),
            Some(n) => Ok(Self(n)),
        }
    }
}

impl Span {
    /// `text` as a span: a whole number and a unit, or a unit alone meaning one of it
    /// (`s` is a second: the form a rate's denominator takes).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '_'))
            .unwrap_or(text.len());
        let (count, unit) = text.split_at(split);
        let unit = unit.trim();
        let count = if count.is_empty() {
            Some(1)
        } else {
            number(count)
        };
        let Some(count) = count else {
            return Err(format!("`{text}` is not {SPAN}"));
        };
        if unit.is_empty() {
            return Err(format!("`{text}` has no unit: expected {SPAN}"));
        }
        let Some(&(_, nanos)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(format!(
                "`{unit}` is not a unit of time (ns, us, ms, s, m or min, h, d): expected {SPAN}"
            ));
        };
        count
            .checked_mul(nanos)
            .map(|nanos| Self(Duration::from_nanos(nanos)))
            .ok_or_else(|| format!("`{text}` is longer than 2^64 ns (about 584 years)"))
    }
}

impl RuleRate {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if is_unlimited(text) {
            return Ok(Self::Unlimited);
        }
        let Some((permits, per)) = text.split_once('/') else {
            return Err(format!("`{text}` is not {RATE}"));
        };
        let permits = match number(permits.trim()) {
            Some(0) => return Err(format!("`{text}`: 0 permits would refuse every request")),
            Some(permits) => permits,
            None => return Err(format!("`{text}` is not {RATE}")),
        };
        let per = Span::parse(per).map_err(|error| format!("`{text}`: {error}"))?;
        if per.0.is_zero() {
            return Err(format!("`{text}`: the period is zero"));
        }
        Ok(Self::Per {
            permits,
            per: per.0,
        })
    }
}

impl fmt::Display for RuleRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unlimited => f.write_str("unlimited"),
            Self::Per { permits, per } => write!(f, "{permits}/{per:?}"),
        }
    }
}

/// A scalar of any format, for the values above to parse.
enum Scalar {
    Text(String),
    Integer(i128),
    Other(&'static str),
}

impl Scalar {
    /// The scalar as the text the parsers above read (an integer as its digits), or the
    /// error that it is of the wrong kind.
    fn text<E: de::Error>(self, expected: &str) -> Result<String, E> {
        match self {
            Self::Text(text) => Ok(text),
            Self::Integer(n) => Ok(n.to_string()),
            Self::Other(kind) => Err(E::custom(format!("found {kind}; expected {expected}"))),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;

        impl Visitor<'_> for ScalarVisitor {
            type Value = Scalar;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
                Ok(Scalar::Other("a boolean"))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Scalar, E> {
                Ok(Scalar::Integer(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Scalar, E> {
                Ok(Scalar::Integer(n.into()))
            }
            fn visit_i128<E>(self, n: i128) -> Result<Scalar, E> {
                Ok(Scalar::Integer(n))
            }
            fn visit_u128<E>(self, n: u128) -> Result<Scalar, E> {
                Ok(i128::try_from(n)
                    .map_or(Scalar::Other("a number out of range"), Scalar::Integer))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Scalar, E> {
                Ok(Scalar::Other("a fractional number"))
            }
            fn visit_str<E>(self, text: &str) -> Result<Scalar, E> {
                Ok(Scalar::Text(text.to_owned()))
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Other("nothing (null)"))
            }
        }

        deserializer.deserialize_any(ScalarVisitor)
    }
}

/// `Deserialize` for a value parsed from a scalar's text by `$parse`.
macro_rules! from_scalar {
    ($type:ty, $expected:expr) => {
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = Scalar::deserialize(deserializer)?.text($expected)?;
                Self::parse(&text).map_err(de::Error::custom)
            }
        }
    };
}

from_scalar!(Limit, LIMIT);
from_scalar!(Count, COUNT);
from_scalar!(Span, SPAN);
from_scalar!(RuleRate, RATE);

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn rates_read_like_their_units() {
        let per = |permits, per| RuleRate::Per { permits, per };
        assert_eq!(RuleRate::parse("100/s"), Ok(per(100, secs(1))));
        assert_eq!(RuleRate::parse("1000/min"), Ok(per(1000, secs(60))));
        assert_eq!(RuleRate::parse("1000/m"), Ok(per(1000, secs(60))));
        assert_eq!(RuleRate::parse("10/h"), Ok(per(10, secs(3600))));
        assert_eq!(
            RuleRate::parse("5/100ms"),
            Ok(per(5, Duration::from_millis(100)))
        );
        assert_eq!(RuleRate::parse(" 10_000 / s "), Ok(per(10_000, secs(1))));
        assert_eq!(RuleRate::parse("-1"), Ok(RuleRate::Unlimited));
        assert_eq!(RuleRate::parse("Unlimited"), Ok(RuleRate::Unlimited));
        for bad in [
            "",
            "100",
            "/s",
            "0/s",
            "100/",
            "100/0s",
            "100/fortnight",
            "1.5/s",
            "-2/s",
        ] {
            assert!(RuleRate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn spans_need_a_unit_and_fit_in_64_bits() {
        assert_eq!(Span::parse("1m"), Ok(Span(secs(60))));
        assert_eq!(Span::parse("500ms"), Ok(Span(Duration::from_millis(500))));
        assert_eq!(Span::parse("2s"), Ok(Span(secs(2))));
        assert_eq!(Span::parse("1h"), Ok(Span(secs(3600))));
        assert_eq!(Span::parse("7µs"), Ok(Span(Duration::from_micros(7))));
        assert!(Span::parse("60").unwrap_err().contains("no unit"));
        assert!(Span::parse("1 fortnight").is_err());
        assert!(Span::parse("99999999999d").unwrap_err().contains("longer"));
        assert!(Span::parse("_1s").is_err());
    }

    #[test]
    fn limits_and_counts_are_positive() {
        assert_eq!(Limit::parse("100"), Ok(Limit::At(100)));
        assert_eq!(Limit::parse("-1"), Ok(Limit::Unlimited));
        assert_eq!(Limit::parse("unlimited"), Ok(Limit::Unlimited));
        assert!(Limit::parse("0")
            .unwrap_err()
            .contains("refuse every request"));
        assert!(Limit::parse("-2").is_err());
        assert_eq!(Count::parse("20"), Ok(Count(20)));
        assert!(Count::parse("-1").is_err());
        assert!(Count::parse("0").is_err());
        assert!(Count::parse("99999999999999999999999").is_err());
    }
}
