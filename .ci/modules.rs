//! Fails when the modules of a library crate depend on each other in a circle.
//!
//! `rustc --edition 2021 .ci/modules.rs -o target/ci-modules && target/ci-modules CRATE_DIR...`
//!
//! One node per module file, from `src/lib.rs` down its `mod name;` declarations (an inline
//! `mod tests { .. }` belongs to its file). An edge `a -> b` for each path in `a` that names
//! `b` or an item defined in `b`: `use crate::..`, `use super::..`, `use self::..` (groups
//! expanded) and the same paths written in code. A path through a `use` of another module
//! (a facade's `pub use`, a parent's import) is followed to where the item is defined, so a
//! re-export hub is not a dependency of the modules it re-exports. Comments and doc links
//! do not count. The circles are the strongly connected components of more than one
//! module; each is printed with the lines that make its edges. Only the standard library is
//! used, so that CI needs nothing but the toolchain.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A module's path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

struct Module {
    file: PathBuf,
    children: BTreeSet<String>,
    /// Each name a `use` brings in (or its alias), with the path it names, from the module.
    imports: BTreeMap<String, Vec<String>>,
    /// Each `crate`/`super`/`self` path the module names: (line, inline depth, segments).
    paths: Vec<(usize, usize, Vec<String>)>,
}

fn main() -> ExitCode {
    let crates: Vec<String> = std::env::args().skip(1).collect();
    if crates.is_empty() {
        eprintln!("usage: ci-modules CRATE_DIR...");
        return ExitCode::from(2);
    }
    let mut circles = 0;
    for dir in &crates {
        let mut modules = BTreeMap::new();
        let root = Path::new(dir).join("src/lib.rs");
        if let Err(error) = load(&root, Vec::new(), &mut modules) {
            eprintln!("{}: {error}", root.display());
            return ExitCode::from(2);
        }
        let edges = edges(&modules);
        let components = circles_of(&modules, &edges);
        for component in &components {
            circles += 1;
            println!("{dir}: modules in a circle: {}", names(component));
            for (from, to, file, line) in edges.iter().filter(|(from, to, ..)| {
                component.contains(from) && component.contains(to)
            }) {
                println!("  {} -> {}  ({}:{line})", name(from), name(to), file.display());
            }
        }
        println!("{dir}: {} modules, {} circles", modules.len(), components.len());
    }
    if circles > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn name(path: &ModPath) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

fn names(component: &BTreeSet<ModPath>) -> String {
    component.iter().map(name).collect::<Vec<_>>().join(", ")
}

/// Reads the module in `file` at `path` and its file children.
fn load(file: &Path, path: ModPath, modules: &mut BTreeMap<ModPath, Module>) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let mut module = Module {
        file: file.to_owned(),
        children: BTreeSet::new(),
        imports: BTreeMap::new(),
        paths: Vec::new(),
    };
    // Where a child's file is: beside `lib.rs`/`mod.rs`, else in a folder named for the file.
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let folder = match stem {
        "lib" | "mod" | "main" => file.parent().unwrap_or(Path::new(".")).to_owned(),
        _ => file.with_extension(""),
    };
    let mut depth = 0i64;
    // The brace depths at which inline modules opened.
    let mut inline: Vec<i64> = Vec::new();
    let mut statement: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let code = strip(raw);
        let trimmed = code.trim();
        let words: Vec<&str> = trimmed
            .split(|c: char| c.is_whitespace() || c == ';' || c == '{')
            .filter(|w| !w.is_empty())
            .collect();
        let at = words
            .iter()
            .position(|w| !(w.starts_with("pub") || w.starts_with("#[")))
            .unwrap_or(words.len());
        if words.get(at) == Some(&"mod") && inline.is_empty() {
            if let Some(child) = words.get(at + 1) {
                if trimmed.ends_with(';') {
                    module.children.insert((*child).to_owned());
                    let mut child_path = path.clone();
                    child_path.push((*child).to_owned());
                    let flat = folder.join(format!("{child}.rs"));
                    let nested = folder.join(child).join("mod.rs");
                    let child_file = if flat.exists() { flat } else { nested };
                    load(&child_file, child_path, modules)?;
                } else if trimmed.contains('{') {
                    inline.push(depth);
                }
            }
        }
        // A `use` statement, possibly over several lines.
        if statement.is_none() && words.get(at) == Some(&"use") {
            statement = Some((line_no, String::new()));
        }
        if let Some((start, text)) = &mut statement {
            text.push_str(trimmed);
            text.push(' ');
            if trimmed.contains(';') {
                let body = text.split(';').next().unwrap_or_default().trim();
                let body = body[body.find("use ").map_or(0, |i| i + 4)..].trim();
                for (alias, segments) in expand(body) {
                    if inline.is_empty() {
                        module.imports.insert(alias, segments.clone());
                    }
                    module.paths.push((*start, inline.len(), segments));
                }
                statement = None;
            }
        } else {
            for segments in code_paths(&code) {
                module.paths.push((line_no, inline.len(), segments));
            }
        }
        for c in code.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if inline.last() == Some(&depth) {
                        inline.pop();
                    }
                }
                _ => {}
            }
        }
    }
    modules.insert(path, module);
    Ok(())
}

/// A line without its comment, string literals and char literals.
fn strip(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            '\'' => {
                // A char literal ('x', '\n', '{'), or a lifetime ('a), which is kept.
                let rest: String = chars.clone().take(3).collect();
                let mut it = rest.chars();
                match (it.next(), it.next(), it.next()) {
                    (Some('\\'), ..) => {
                        for c in chars.by_ref() {
                            if c == '\'' {
                                break;
                            }
                        }
                    }
                    (Some(_), Some('\''), _) => {
                        chars.next();
                        chars.next();
                    }
                    _ => out.push(c),
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The paths of a `use` tree (`crate::{a::B, c as d}`), each with the name it brings in.
fn expand(tree: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    expand_into(&[], tree.trim(), &mut out);
    out
}

fn expand_into(prefix: &[String], tree: &str, out: &mut Vec<(String, Vec<String>)>) {
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = segments(&tree[..open]);
        let close = tree.rfind('}').filter(|&close| close > open).unwrap_or(tree.len());
        let inner = &tree[open + 1..close];
        let mut full = prefix.to_vec();
        full.extend(head);
        // Split at the commas of this level.
        let (mut level, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => level += 1,
                '}' => level -= 1,
                ',' if level == 0 => {
                    expand_into(&full, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_into(&full, &inner[start..], out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias.trim().to_owned())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    full.extend(segments(path));
    if full.is_empty() {
        return;
    }
    let name = alias.unwrap_or_else(|| full.last().cloned().unwrap_or_default());
    if full.last().map(String::as_str) == Some("self") {
        full.pop();
    }
    out.push((name, full));
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `crate::`, `super::` and `self::` paths written in a line of code.
fn code_paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|head| code[i..].starts_with(head));
        if starts && (i == 0 || !ident(bytes[i - 1])) {
            let mut end = i;
            while end < bytes.len() && (ident(bytes[end]) || code[end..].starts_with("::")) {
                end += if bytes[end] == b':' { 2 } else { 1 };
            }
            out.push(segments(&code[i..end]));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Every edge: (from, to, file, line).
fn edges(modules: &BTreeMap<ModPath, Module>) -> Vec<(ModPath, ModPath, PathBuf, usize)> {
    let mut out = Vec::new();
    for (from, module) in modules {
        for (line, inline, segments) in &module.paths {
            if let Some(to) = resolve(modules, from, *inline, segments, 0) {
                if &to != from {
                    out.push((from.clone(), to, module.file.clone(), *line));
                }
            }
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    out
}

/// The module defining what `segments`, written in module `at` (inside `inline` inline
/// modules), names; `None` for paths outside the crate.
fn resolve(
    modules: &BTreeMap<ModPath, Module>,
    at: &ModPath,
    inline: usize,
    segments: &[String],
    hops: usize,
) -> Option<ModPath> {
    let mut current = at.clone();
    let mut rest = segments;
    let mut supers: usize = 0;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            current.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                supers += 1;
                rest = &rest[1..];
            }
            // Inside an inline module, its first `super`s stay in the file's module.
            for _ in 0..supers.saturating_sub(inline) {
                current.pop()?;
            }
        }
        Some("self") => rest = &rest[1..],
        // A plain path in a `use`: an external crate, or an item of this module.
        _ => return None,
    }
    while let Some(segment) = rest.first() {
        let module = modules.get(&current)?;
        if module.children.contains(segment) {
            current.push(segment.clone());
            rest = &rest[1..];
            continue;
        }
        // An item brought in by a `use` of that module: where it is defined.
        if let Some(target) = module.imports.get(segment) {
            if hops < 8 && target.as_slice() != segments {
                let mut followed = target.clone();
                followed.extend(rest[1..].iter().cloned());
                if let Some(found) = resolve(modules, &current, 0, &followed, hops + 1) {
                    return Some(found);
                }
                // Imported from outside the crate: not a dependency.
                if !matches!(target[0].as_str(), "crate" | "super" | "self") {
                    return None;
                }
            }
        }
        break;
    }
    Some(current)
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn circles_of(
    modules: &BTreeMap<ModPath, Module>,
    edges: &[(ModPath, ModPath, PathBuf, usize)],
) -> Vec<BTreeSet<ModPath>> {
    let nodes: Vec<&ModPath> = modules.keys().collect();
    let index_of: BTreeMap<&ModPath, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (from, to, ..) in edges {
        if let (Some(&a), Some(&b)) = (index_of.get(from), index_of.get(to)) {
            next[a].push(b);
        }
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, next: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &next[v] {
            match s.index[w] {
                None => {
                    visit(w, next, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = nodes.len();
    let mut state = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(v, &next, &mut state);
        }
    }
    state
        .out
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.into_iter().map(|i| nodes[i].clone()).collect())
        .collect()
}
