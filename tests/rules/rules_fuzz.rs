//! No input makes rules panic: arbitrary text and bytes, and random mutations of a valid
//! file, in both formats, each either loaded (and then checked) or refused with an error.

use crate::rules_common;

use proptest::prelude::*;
use ringlimit::clock::ManualClock;
use ringlimit::rules::{Format, RuleSet};
use rules_common::{Request, TempDir};

fn example(name: &str) -> String {
    let path = format!("{}/docs/rules/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("the example rules file")
}

/// Loads `text` as `format` into a rule set holding the example's rules, then checks a
/// request whatever happened: no panic either way, and a refused file changes nothing.
fn load(format: Format, text: &str) {
    let rules = RuleSet::with_clock(ManualClock::new());
    rules
        .reload_str(Format::Toml, &example("service.toml"))
        .expect("the example loads");
    let before = rules.names();
    match rules.reload_str(format, text) {
        Ok(report) => {
            let _ = report.to_string();
        }
        Err(error) => {
            let _ = error.to_string();
            assert_eq!(rules.names(), before, "a refused file changes nothing");
        }
    }
    let request = Request {
        headers: vec![("X-User-Id".into(), "1".into())],
        ip: Some("2001:db8::1".parse().unwrap()),
        route: Some("pay/alipay".into()),
        api_key: Some("k".into()),
        user: Some("u".into()),
    };
    for n in [0, 1, 7, u64::MAX] {
        let _ = rules.check_n(&request, n);
    }
}

/// A mutation of a text: what an editor or a bad merge may leave.
#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Replace { at: usize, with: char },
    DuplicateLine(usize),
    SwapLines(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let words = prop::sample::select(vec![
        "-1",
        "0",
        "unlimited",
        "100/s",
        "1m",
        "/",
        ":",
        "=",
        "\"",
        "'",
        "[",
        "]",
        "{",
        "}",
        "\n",
        "  ",
        "-",
        "#",
        "rules",
        "name",
        "key",
        "burst",
        "window",
        "limit",
        "rate",
        "&a",
        "*a",
        "!!str",
        "1e99",
        "99999999999999999999999",
        "client_ip/0",
        "header:",
        "~",
    ]);
    prop_oneof![
        (any::<usize>(), 1..20usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), words).prop_map(|(at, w)| Mutation::Insert { at, text: w.into() }),
        (any::<usize>(), any::<String>()).prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), any::<char>()).prop_map(|(at, with)| Mutation::Replace { at, with }),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// The char boundary at or before `at % (len + 1)`.
fn boundary(text: &str, at: usize) -> usize {
    let mut at = at % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn mutate(text: &str, mutation: &Mutation) -> String {
    let mut text = text.to_owned();
    match mutation {
        Mutation::Delete { at, len } => {
            let start = boundary(&text, *at);
            let end = boundary(&text, (start + len).min(text.len()));
            text.replace_range(start..end.max(start), "");
        }
        Mutation::Insert { at, text: insert } => {
            let at = boundary(&text, *at);
            text.insert_str(at, insert);
        }
        Mutation::Replace { at, with } => {
            let at = boundary(&text, *at);
            if let Some(old) = text[at..].chars().next() {
                text.replace_range(at..at + old.len_utf8(), &with.to_string());
            }
        }
        Mutation::DuplicateLine(i) | Mutation::SwapLines(i, _) | Mutation::Truncate(i)
            if text.is_empty() =>
        {
            let _ = i;
        }
        Mutation::DuplicateLine(i) => {
            let mut lines: Vec<&str> = text.lines().collect();
            let i = i % lines.len();
            lines.insert(i, lines[i]);
            text = lines.join("\n");
        }
        Mutation::SwapLines(a, b) => {
            let mut lines: Vec<&str> = text.lines().collect();
            let (a, b) = (a % lines.len(), b % lines.len());
            lines.swap(a, b);
            text = lines.join("\n");
        }
        Mutation::Truncate(at) => {
            let at = boundary(&text, *at);
            text.truncate(at);
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        load(Format::Toml, &text);
        load(Format::Yaml, &text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        load(Format::Toml, &text);
        load(Format::Yaml, &text);
    }

    #[test]
    fn mutated_files_never_panic(mutations in prop::collection::vec(mutation(), 1..6)) {
        for (format, name) in [(Format::Toml, "service.toml"), (Format::Yaml, "service.yaml")] {
            let text = mutations.iter().fold(example(name), |text, m| mutate(&text, m));
            load(format, &text);
        }
    }
}

/// A file that is not UTF-8 at all is an error naming the file.
#[test]
fn a_file_of_bytes_is_an_error() {
    let dir = TempDir::new("rules-bytes");
    let path = dir.path().join("rules.yaml");
    std::fs::write(&path, [0xff, 0xfe, 0x00, b'r', 0x80]).unwrap();
    let error = RuleSet::new().reload_path(&path).unwrap_err();
    assert_eq!(error.file(), Some(path.as_path()));
}
