//! The source layout's rules, checked on the repository's own code:
//!
//! - no module cycle in any crate: two sibling modules never use each
//!   other, directly or through other siblings (a parent and its own
//!   children may refer to each other; that is how Rust nests modules);
//! - no `formats` module outside `load` imports `load` (data flows one way:
//!   file -> loader -> workload; `inspect` and `synthetic` read `input`'s
//!   types, never the readers). The engine cannot import the readers at
//!   all: it does not depend on `formats`.
//!
//! A reference is any `crate::...` or `super::...` path in a file (`use`
//! lines and paths in code alike, `use crate::{a, b::c}` groups included),
//! resolved to the deepest module file it names. Test modules at the end of
//! a file (`#[cfg(test)] mod tests`) count for the `load` rule but not for
//! cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: [&str; 7] = [
    "engine",
    "formats",
    "sim",
    "backends",
    "cli",
    "proptests",
    "benches",
];

type ModPath = Vec<String>;

/// One source file: its module path and its text, without comments.
struct Source {
    module: ModPath,
    file: PathBuf,
    /// Everything before the first `#[cfg(test)]`.
    code: String,
    /// The whole file.
    all: String,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `[a, b]`; `lib.rs`, `main.rs`
/// and `src/bin/*.rs` are roots of their own.
fn module_path(src: &Path, file: &Path) -> Option<ModPath> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    match last.as_str() {
        "lib.rs" | "main.rs" if parts.is_empty() => {}
        "mod.rs" => {}
        _ => parts.push(last.trim_end_matches(".rs").to_string()),
    }
    Some(parts)
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn sources(krate: &str) -> Vec<Source> {
    let src = repo().join(krate).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|file| {
            let module = module_path(&src, &file)?;
            let all = strip_comments(&std::fs::read_to_string(&file).ok()?);
            let code = match all.find("#[cfg(test)]") {
                Some(at) => all[..at].to_string(),
                None => all.clone(),
            };
            Some(Source {
                module,
                file,
                code,
                all,
            })
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Parses a path (or a `{...}` group of paths) at the start of `text`,
/// pushing every full path onto `out` with `prefix` in front.
fn parse_paths(text: &str, prefix: &ModPath, out: &mut Vec<ModPath>) -> usize {
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut path = prefix.clone();
    loop {
        while i < bytes.len() && bytes[i].is_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == '{' {
            i += 1;
            loop {
                while i < bytes.len() && (bytes[i].is_whitespace() || bytes[i] == ',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == '}' {
                    return i + 1;
                }
                let rest: String = bytes[i..].iter().collect();
                let used = parse_paths(&rest, &path, out);
                if used == 0 {
                    return i;
                }
                i += used;
            }
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        if i == start {
            out.push(path);
            return i;
        }
        path.push(bytes[start..i].iter().collect());
        let rest: String = bytes[i..].iter().take(2).collect();
        if rest == "::" {
            i += 2;
        } else {
            out.push(path);
            return i;
        }
    }
}

/// Every module path a text refers to through `crate::` or `super::`.
fn references(module: &ModPath, text: &str) -> Vec<ModPath> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        parse_paths(&text[at + "crate::".len()..], &Vec::new(), &mut out);
    }
    for (at, _) in text.match_indices("super::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let mut base = module.clone();
        let mut rest = &text[at..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        parse_paths(rest, &base, &mut out);
    }
    out
}

/// The deepest known module a path names.
fn resolve(path: &ModPath, modules: &BTreeSet<ModPath>) -> ModPath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// Edges between sibling modules: `a` uses `b`, both children of the
/// same parent.
fn sibling_edges(krate: &str) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let sources = sources(krate);
    let modules: BTreeSet<ModPath> = sources.iter().map(|s| s.module.clone()).collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for source in &sources {
        for reference in references(&source.module, &source.code) {
            let target = resolve(&reference, &modules);
            let from = &source.module;
            let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == target.len() {
                continue; // a module and its ancestor or descendant
            }
            edges
                .entry(from[..=common].to_vec())
                .or_default()
                .insert(target[..=common].to_vec());
        }
    }
    edges
}

/// One cycle per strongly connected group, found by depth-first search.
fn cycles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    fn visit(
        node: &ModPath,
        edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
        stack: &mut Vec<ModPath>,
        done: &mut BTreeSet<ModPath>,
        found: &mut Vec<Vec<ModPath>>,
    ) {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.clone());
            found.push(cycle);
            return;
        }
        if done.contains(node) {
            return;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, stack, done, found);
        }
        stack.pop();
        done.insert(node.clone());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn show(path: &ModPath) -> String {
    if path.is_empty() {
        "crate".into()
    } else {
        path.join("::")
    }
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut problems = Vec::new();
    for krate in CRATES {
        for cycle in cycles(&sibling_edges(krate)) {
            let names: Vec<String> = cycle.iter().map(show).collect();
            problems.push(format!("{krate}: {}", names.join(" -> ")));
        }
    }
    assert!(
        problems.is_empty(),
        "module cycles:\n{}",
        problems.join("\n")
    );
}

#[test]
fn formats_modules_outside_load_do_not_import_load() {
    let sources = sources("formats");
    let modules: BTreeSet<ModPath> = sources.iter().map(|s| s.module.clone()).collect();
    let mut problems = Vec::new();
    for source in &sources {
        if source.module.first().is_some_and(|m| m == "load") {
            continue;
        }
        let imports_load = references(&source.module, &source.all)
            .iter()
            .any(|r| resolve(r, &modules).first().is_some_and(|m| m == "load"));
        if imports_load {
            problems.push(source.file.display().to_string());
        }
    }
    assert!(problems.is_empty(), "import load: {}", problems.join(", "));
}

#[test]
fn the_checker_finds_a_cycle_and_resolves_groups() {
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    let m = |s: &str| vec![s.to_string()];
    edges.entry(m("a")).or_default().insert(m("b"));
    edges.entry(m("b")).or_default().insert(m("c"));
    edges.entry(m("c")).or_default().insert(m("a"));
    edges.entry(m("d")).or_default().insert(m("a"));
    assert_eq!(cycles(&edges), vec![vec![m("a"), m("b"), m("c"), m("a")]]);
    let refs = references(
        &vec!["x".into(), "y".into()],
        "use crate::{a::B, c::{d, e::F}};\nlet v = super::z::g();",
    );
    let shown: Vec<String> = refs.iter().map(|p| p.join("::")).collect();
    assert_eq!(shown, ["a::B", "c::d", "c::e::F", "x::z::g"]);
}
