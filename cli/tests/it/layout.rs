//! The source layout's rules, checked on the repository's own code. The
//! crates are the workspace members the root `Cargo.toml` lists
//! (`members = [...]`, a `dir/*` pattern expanded), read each time, so a
//! crate is covered the day it is added.
//!
//! - no module cycle in any crate: two sibling modules never use each
//!   other, directly or through other siblings (a parent and its own
//!   children may refer to each other; that is how Rust nests modules);
//! - no crate cycle: the members' `[dependencies]`, `[dev-dependencies]`
//!   and `[build-dependencies]` on each other (target tables included)
//!   form no cycle, dev-dependencies included (cargo allows that one; we
//!   do not);
//! - no hidden crate edge: a `.rs` file of a member that names another
//!   member (`arbor_xxx::`) is in a member whose `Cargo.toml` lists it;
//! - `cli` uses only [`CLI_MAY_USE`] (the facade `arbor`, the console and
//!   argument crates) and std, in `cli/src` and in its `[dependencies]`,
//!   plus what [`STILL_TO_MOVE`] lists while the domain moves out of the
//!   binary; an entry of that list that `cli` no longer uses fails too,
//!   so the list only shrinks;
//! - in a crate with a `load` module (the trace readers), no module
//!   outside `load` imports `load` (data flows one way: file -> loader ->
//!   workload).
//!
//! Files are read whole, with comments, string and char literals blanked
//! out. A module reference is any `crate::...` or `super::...` path (`use`
//! lines and paths in code alike, `use crate::{a, b::c}` groups included),
//! from the module it is written in (inline `mod x { ... }` included),
//! resolved to the deepest module file it names. Test modules
//! (`#[cfg(test)] mod NAME { ... }`, found by matching braces, and the
//! files of `#[cfg(test)] mod NAME;`) count for the `load` rule, the crate
//! edges and the `cli` rule, but not for module cycles; a `#[cfg(test)]` on
//! any other item hides nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What `cli` may use once the reshaping is done: the facade, the console
/// and argument crates (std, core and alloc go without saying).
const CLI_MAY_USE: &[&str] = &["arbor", "clap", "indicatif", "comfy-table", "crossterm"];

/// What `cli` still uses (in `cli/src` or `cli/Cargo.toml`'s
/// `[dependencies]`) and will not once its domain code has moved to the
/// library crates, with the reason it is still there. Later work removes
/// entries; the test fails when one is no longer used.
const STILL_TO_MOVE: &[(&str, &str)] = &[];

/// Crates every crate has without a manifest entry.
const BUILTIN: &[&str] = &["std", "core", "alloc"];

/// The dependency tables of a manifest (`[target.'...'.dependencies]`
/// alike).
const DEP_KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];

type ModPath = Vec<String>;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

// ---------------------------------------------------------------------
// Rust text: comments and literals blanked, test modules found by braces.

/// `text` with every comment (nested block comments included), string
/// literal (raw, byte and C strings included) and char literal replaced by
/// spaces, newlines kept, so that no brace, quote or path in them is taken
/// for code. Lifetimes and labels (`'a`) stay.
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let end = if c[i] == '/' && at(i + 1) == '/' {
            (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len())
        } else if c[i] == '/' && at(i + 1) == '*' {
            let (mut j, mut depth) = (i, 0usize);
            while j < c.len() {
                if c[j] == '/' && at(j + 1) == '*' {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && at(j + 1) == '/' {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j.min(c.len())
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(c.len())
        } else if c[i] == 'r' && raw_string_may_start(&c, i) {
            let hashes = (i + 1..c.len()).take_while(|&j| c[j] == '#').count();
            if at(i + 1 + hashes) != '"' {
                out.push(c[i]); // an identifier, or `r#ident`
                i += 1;
                continue;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = i + 2 + hashes;
            (body..c.len())
                .find(|&j| c[j..].starts_with(&close))
                .map_or(c.len(), |j| j + close.len())
        } else if c[i] == '\'' && at(i + 1) == '\\' {
            (i + 3..c.len())
                .find(|&j| c[j] == '\'')
                .map_or(c.len(), |j| j + 1)
        } else if c[i] == '\'' && at(i + 2) == '\'' && at(i + 1) != '\'' {
            i + 3
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        for &ch in &c[i..end] {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
        i = end;
    }
    out
}

/// Whether the `r` at `i` starts a raw string (`r"`, `r#"`, `br"`, `cr"`)
/// rather than ending an identifier.
fn raw_string_may_start(c: &[char], i: usize) -> bool {
    match i.checked_sub(1).map(|p| c[p]) {
        None => true,
        Some('b' | 'c') => i < 2 || !is_ident(c[i - 2]),
        Some(p) => !is_ident(p),
    }
}

/// The index just after the bracket closing the one at `open`.
fn matching(b: &[u8], open: usize) -> usize {
    let (up, down) = match b[open] {
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        _ => (b'(', b')'),
    };
    let mut depth = 0usize;
    for (j, &ch) in b.iter().enumerate().skip(open) {
        if ch == up {
            depth += 1;
        } else if ch == down {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
    }
    b.len()
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Whether the word `word` stands at `i` (no identifier character on
/// either side).
fn word_at(b: &[u8], i: usize, word: &str) -> bool {
    b[i..].starts_with(word.as_bytes())
        && (i == 0 || !ident_byte(b[i - 1]))
        && b.get(i + word.len()).is_none_or(|&c| !ident_byte(c))
}

fn ident_from(b: &[u8], i: usize) -> (String, usize) {
    let end = (i..b.len()).find(|&j| !ident_byte(b[j])).unwrap_or(b.len());
    (String::from_utf8_lossy(&b[i..end]).into_owned(), end)
}

/// After the item's attributes and visibility at `i`, a `mod NAME`: the
/// name and the index of the `{` or `;` that follows it.
fn module_item(b: &[u8], mut i: usize) -> Option<(String, usize)> {
    loop {
        i = skip_space(b, i);
        if b[i..].starts_with(b"#[") {
            i = matching(b, i + 1);
        } else {
            break;
        }
    }
    if word_at(b, i, "pub") {
        i = skip_space(b, i + 3);
        if b.get(i) == Some(&b'(') {
            i = matching(b, i);
        }
        i = skip_space(b, i);
    }
    if !word_at(b, i, "mod") {
        return None;
    }
    let (name, end) = ident_from(b, skip_space(b, i + 3));
    let next = skip_space(b, end);
    (!name.is_empty() && matches!(b.get(next), Some(b'{' | b';'))).then_some((name, next))
}

/// Blanked code without its test modules: each `#[cfg(test)] mod NAME {
/// ... }` blanked up to its matching brace, and the names of the file
/// modules `#[cfg(test)] mod NAME;` declares. A `#[cfg(test)]` on any
/// other item is left alone; a file under `#![cfg(test)]` is all test.
fn without_tests(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    if code.contains("#![cfg(test)]") {
        return (String::new(), Vec::new());
    }
    let b = code.as_bytes();
    let mut out = b.to_vec();
    let mut files = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(ATTR) {
        let at = from + found;
        from = at + ATTR.len();
        let Some((name, next)) = module_item(b, from) else {
            continue;
        };
        if b[next] == b';' {
            files.push(name);
            from = next + 1;
        } else {
            let end = matching(b, next);
            for ch in &mut out[at..end] {
                if *ch != b'\n' {
                    *ch = b' ';
                }
            }
            from = end;
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), files)
}

/// The inline modules of blanked code: name and body span, outer first.
fn inline_modules(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    for (at, _) in code.match_indices("mod") {
        if !word_at(b, at, "mod") {
            continue;
        }
        let (name, end) = ident_from(b, skip_space(b, at + 3));
        let open = skip_space(b, end);
        if !name.is_empty() && b.get(open) == Some(&b'{') {
            found.push((name, open, matching(b, open)));
        }
    }
    found
}

// ---------------------------------------------------------------------
// Module references within a crate.

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

/// Every module path a blanked text refers to through `crate::` or
/// `super::`, `super` taken from the inline module it is written in.
fn references(module: &ModPath, text: &str) -> Vec<ModPath> {
    let inline = inline_modules(text);
    let within = |at: usize| {
        let mut m = module.clone();
        m.extend(
            inline
                .iter()
                .filter(|(_, open, close)| *open < at && at < *close)
                .map(|(name, _, _)| name.clone()),
        );
        m
    };
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
        let mut base = within(at);
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

/// One source file of a crate's `src/`.
struct Source {
    module: ModPath,
    file: PathBuf,
    /// The blanked file without its test modules (empty for a test module
    /// file).
    code: String,
    /// The whole blanked file.
    all: String,
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

fn sources(crate_dir: &Path) -> Vec<Source> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut test_files: BTreeSet<ModPath> = BTreeSet::new();
    let mut out: Vec<Source> = files
        .into_iter()
        .filter_map(|file| {
            let module = module_path(&src, &file)?;
            let all = blank(&std::fs::read_to_string(&file).ok()?);
            let (code, tests) = without_tests(&all);
            for name in tests {
                let mut m = module.clone();
                m.push(name);
                test_files.insert(m);
            }
            Some(Source {
                module,
                file,
                code,
                all,
            })
        })
        .collect();
    for source in &mut out {
        if test_files.iter().any(|t| source.module.starts_with(t)) {
            source.code.clear();
        }
    }
    out
}

/// Edges between sibling modules: `a` uses `b`, both children of the
/// same parent.
fn sibling_edges(sources: &[(ModPath, String)]) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let modules: BTreeSet<ModPath> = sources.iter().map(|(m, _)| m.clone()).collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (module, code) in sources {
        for reference in references(module, code) {
            let target = resolve(&reference, &modules);
            // A reference from an inline module counts as its file's.
            let from = module;
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
fn cycles<T: Ord + Clone>(edges: &BTreeMap<T, BTreeSet<T>>) -> Vec<Vec<T>> {
    fn visit<T: Ord + Clone>(
        node: &T,
        edges: &BTreeMap<T, BTreeSet<T>>,
        stack: &mut Vec<T>,
        done: &mut BTreeSet<T>,
        found: &mut Vec<Vec<T>>,
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

// ---------------------------------------------------------------------
// Manifests, read as plain text.

/// A manifest's logical lines: comments dropped, a value spread over
/// several lines (an array) joined into one.
fn toml_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = String::new();
    let mut depth = 0i32;
    for raw in text.lines() {
        let mut quote: Option<char> = None;
        let mut escaped = false;
        for ch in raw.chars() {
            match quote {
                Some(q) => {
                    if escaped {
                        escaped = false;
                    } else if ch == '\\' && q == '"' {
                        escaped = true;
                    } else if ch == q {
                        quote = None;
                    }
                }
                None if ch == '#' => break,
                None if ch == '"' || ch == '\'' => quote = Some(ch),
                None if ch == '[' || ch == '{' => depth += 1,
                None if ch == ']' || ch == '}' => depth -= 1,
                None => {}
            }
            line.push(ch);
        }
        line.push(' ');
        if depth <= 0 {
            let done = line.trim().to_string();
            if !done.is_empty() {
                out.push(done);
            }
            line.clear();
            depth = 0;
        }
    }
    out
}

/// `text` cut at each `sep` that is outside quotes and brackets.
fn split_outside(text: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    for ch in text.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if ch == '"' || ch == '\'' => quote = Some(ch),
            None if ch == '[' || ch == '{' => depth += 1,
            None if ch == ']' || ch == '}' => depth -= 1,
            None if ch == sep && depth == 0 => {
                parts.push(String::new());
                continue;
            }
            None => {}
        }
        if let Some(last) = parts.last_mut() {
            last.push(ch);
        }
    }
    parts
}

fn unquote(text: &str) -> String {
    let t = text.trim();
    t.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .or_else(|| t.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')))
        .unwrap_or(t)
        .to_string()
}

/// A dotted key or table name, each part unquoted.
fn dotted(text: &str) -> Vec<String> {
    split_outside(text, '.')
        .iter()
        .map(|p| unquote(p))
        .collect()
}

/// The quoted strings of an array value.
fn strings(value: &str) -> Vec<String> {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    split_outside(inner, ',')
        .iter()
        .map(|s| unquote(s))
        .filter(|s| !s.is_empty())
        .collect()
}

/// The value of `name` in an inline table `{ a = "x", b = true }`.
fn field(value: &str, name: &str) -> Option<String> {
    let inner = value.trim().strip_prefix('{')?.strip_suffix('}')?;
    split_outside(inner, ',').iter().find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (dotted(key) == [name]).then(|| unquote(value))
    })
}

/// One dependency entry of a manifest.
#[derive(Debug, Clone, PartialEq)]
struct Dep {
    /// `dependencies`, `dev-dependencies`, `build-dependencies`, or
    /// `workspace` for the root's `[workspace.dependencies]`.
    kind: String,
    /// The name it is declared (and named in code) by.
    key: String,
    package: Option<String>,
    path: Option<String>,
    workspace: bool,
}

#[derive(Debug, Default)]
struct Manifest {
    package: Option<String>,
    lib: Option<String>,
    members: Vec<String>,
    exclude: Vec<String>,
    deps: Vec<Dep>,
}

/// The dependency kind a table holds, and the dependency it is about when
/// the table is `[dependencies.NAME]`.
fn dep_table(table: &[String]) -> Option<(String, Option<String>)> {
    let t: Vec<String> = match table {
        [target, _, rest @ ..] if target == "target" => rest.to_vec(),
        _ => table.to_vec(),
    };
    let t: Vec<String> = t.iter().map(|s| s.replace('_', "-")).collect();
    let (kind, rest) = match t.as_slice() {
        [w, d, rest @ ..] if w == "workspace" && d == "dependencies" => ("workspace".into(), rest),
        [k, rest @ ..] if DEP_KINDS.contains(&k.as_str()) => (k.clone(), rest),
        _ => return None,
    };
    match rest {
        [] => Some((kind, None)),
        [name] => {
            // The name as written (its `_` kept).
            let written = table.last().cloned().unwrap_or_else(|| name.clone());
            Some((kind, Some(written)))
        }
        _ => None,
    }
}

fn manifest(text: &str) -> Manifest {
    let mut m = Manifest::default();
    let mut table: Vec<String> = Vec::new();
    for line in toml_lines(text) {
        if line.starts_with('[') {
            table = dotted(line.trim_matches(|c| c == '[' || c == ']'));
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (dotted(key), value.trim());
        let here: Vec<&str> = table.iter().map(String::as_str).collect();
        let keys: Vec<&str> = key.iter().map(String::as_str).collect();
        match (here.as_slice(), keys.as_slice()) {
            (["package"], ["name"]) => m.package = Some(unquote(value)),
            (["lib"], ["name"]) => m.lib = Some(unquote(value)),
            (["workspace"], ["members"]) => m.members = strings(value),
            (["workspace"], ["exclude"]) => m.exclude = strings(value),
            _ => {}
        }
        let Some((kind, named)) = dep_table(&table) else {
            continue;
        };
        let (name, attr) = match named {
            Some(name) => (name, key.clone()),
            None => (key[0].clone(), key[1..].to_vec()),
        };
        let at = match m.deps.iter().position(|d| d.kind == kind && d.key == name) {
            Some(at) => at,
            None => {
                m.deps.push(Dep {
                    kind,
                    key: name,
                    package: None,
                    path: None,
                    workspace: false,
                });
                m.deps.len() - 1
            }
        };
        let dep = &mut m.deps[at];
        match attr.first().map(String::as_str) {
            None => {
                dep.package = field(value, "package");
                dep.path = field(value, "path");
                dep.workspace = field(value, "workspace").as_deref() == Some("true");
            }
            Some("package") => dep.package = Some(unquote(value)),
            Some("path") => dep.path = Some(unquote(value)),
            Some("workspace") => dep.workspace = value == "true",
            Some(_) => {}
        }
    }
    m
}

/// `rel` taken from the directory `base`, both relative to the root,
/// `.` and `..` resolved.
fn normalize(base: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(rel.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// A workspace member.
#[derive(Debug)]
struct Member {
    /// Its directory, relative to the root.
    dir: String,
    package: String,
    /// The name code uses for its library (`[lib] name`, else the package
    /// name with `_` for `-`).
    krate: String,
    manifest: Manifest,
}

#[derive(Debug)]
struct Workspace {
    root: Manifest,
    members: Vec<Member>,
    /// Members listed but not readable.
    problems: Vec<String>,
}

impl Workspace {
    /// From the root manifest's text and each member's directory and
    /// manifest text (`None`: no manifest).
    fn new(root: &str, manifests: Vec<(String, Option<String>)>) -> Workspace {
        let root = manifest(root);
        let mut members = Vec::new();
        let mut problems = Vec::new();
        for (dir, text) in manifests {
            let Some(text) = text else {
                problems.push(format!("member `{dir}` has no readable {dir}/Cargo.toml"));
                continue;
            };
            let manifest = manifest(&text);
            let Some(package) = manifest.package.clone() else {
                problems.push(format!("{dir}/Cargo.toml has no [package] name"));
                continue;
            };
            let krate = manifest
                .lib
                .clone()
                .unwrap_or_else(|| package.replace('-', "_"));
            members.push(Member {
                dir: normalize("", &dir),
                package,
                krate,
                manifest,
            });
        }
        Workspace {
            root,
            members,
            problems,
        }
    }

    /// The repository's workspace: the root `Cargo.toml`'s members.
    fn read(repo: &Path) -> Workspace {
        let root = std::fs::read_to_string(repo.join("Cargo.toml")).expect("the root Cargo.toml");
        let listed = manifest(&root);
        let excluded: BTreeSet<String> = listed.exclude.iter().map(|e| normalize("", e)).collect();
        let mut dirs = Vec::new();
        for pattern in &listed.members {
            match pattern.strip_suffix("/*") {
                Some(parent) => {
                    let mut found: Vec<String> = std::fs::read_dir(repo.join(parent))
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter(|e| e.path().join("Cargo.toml").is_file())
                        .map(|e| format!("{parent}/{}", e.file_name().to_string_lossy()))
                        .collect();
                    found.sort();
                    dirs.extend(found);
                }
                None => dirs.push(pattern.clone()),
            }
        }
        let manifests = dirs
            .into_iter()
            .filter(|d| !excluded.contains(&normalize("", d)))
            .map(|d| {
                let text = std::fs::read_to_string(repo.join(&d).join("Cargo.toml")).ok();
                (d, text)
            })
            .collect();
        Workspace::new(&root, manifests)
    }

    fn by_package(&self, package: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.package == package)
    }

    fn by_dir(&self, dir: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.dir == dir)
    }

    /// The member a dependency of `from` names, if any.
    fn target(&self, from: &Member, dep: &Dep) -> Option<&Member> {
        if let Some(path) = &dep.path {
            return self.by_dir(&normalize(&from.dir, path));
        }
        let mut package = dep.package.clone().unwrap_or_else(|| dep.key.clone());
        if dep.workspace {
            let root = self
                .root
                .deps
                .iter()
                .find(|d| d.kind == "workspace" && d.key == dep.key);
            if let Some(root) = root {
                if let Some(path) = &root.path {
                    return self.by_dir(&normalize("", path));
                }
                package = root.package.clone().unwrap_or_else(|| root.key.clone());
            }
        }
        self.by_package(&package)
    }

    /// Member to member, with the kinds of the entries that make the edge.
    fn edges(&self) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
        let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for member in &self.members {
            let out = edges.entry(member.package.clone()).or_default();
            for dep in &member.manifest.deps {
                if let Some(to) = self.target(member, dep) {
                    out.entry(to.package.clone())
                        .or_default()
                        .insert(dep.kind.clone());
                }
            }
        }
        edges
    }
}

// ---------------------------------------------------------------------
// Crate names in code.

/// Whether a path starts at byte `at` of blanked code: nothing of an
/// identifier or path before it, save a leading `::`.
fn path_starts(code: &str, at: usize) -> bool {
    let before = &code[..at];
    match before.strip_suffix("::") {
        Some(b) => b
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident(c) && c != '>'),
        None => before
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident(c) && c != ':'),
    }
}

/// The paths of every `use` item of blanked code, and the names the items
/// bring into scope other than their roots (later segments and `as`
/// renames), which may shadow a crate's name.
fn use_items(code: &str) -> (Vec<ModPath>, BTreeSet<String>) {
    let b = code.as_bytes();
    let mut paths = Vec::new();
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("use") {
        if !word_at(b, at, "use") {
            continue;
        }
        let mut start = skip_space(b, at + 3);
        if b[start..].starts_with(b"::") {
            start += 2;
        }
        let end = code[start..].find(';').map_or(code.len(), |e| start + e);
        let mut found = Vec::new();
        parse_paths(&code[start..end], &Vec::new(), &mut found);
        for path in &found {
            names.extend(path.iter().skip(1).cloned());
        }
        let item = code[start..end].replace(['{', '}', ','], " ");
        let words: Vec<&str> = item.split_whitespace().collect();
        for pair in words.windows(2) {
            if pair[0] == "as" {
                names.insert(pair[1].to_string());
            }
        }
        paths.extend(found);
    }
    (paths, names)
}

/// Every inline and file module name of a crate.
fn module_names(sources: &[Source]) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = sources.iter().flat_map(|s| s.module.clone()).collect();
    for source in sources {
        names.extend(inline_modules(&source.all).into_iter().map(|(n, _, _)| n));
        // `mod NAME;` of a file placed elsewhere (`#[path]`) or missing.
        let b = source.all.as_bytes();
        for (at, _) in source.all.match_indices("mod") {
            if word_at(b, at, "mod") {
                let (name, _) = ident_from(b, skip_space(b, at + 3));
                if !name.is_empty() {
                    names.insert(name);
                }
            }
        }
    }
    names
}

/// The crates blanked code names: the roots of its `use` items that are
/// not local (`crate`, `self`, `super`, a module of its own, a name a `use`
/// brought in, a type: a capital), `extern crate` names, and each of
/// `known` that starts a path. `locals`: the crate's module names.
fn crates_named(
    code: &str,
    known: &BTreeSet<String>,
    locals: &BTreeSet<String>,
) -> BTreeSet<String> {
    let (paths, shadow) = use_items(code);
    let local = |name: &str| locals.contains(name) || shadow.contains(name);
    let mut out = BTreeSet::new();
    for root in paths.iter().filter_map(|p| p.first()) {
        let keyword = ["crate", "self", "super", "as"].contains(&root.as_str());
        let lower = root.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
        if !keyword && lower && !local(root) {
            out.insert(root.clone());
        }
    }
    let b = code.as_bytes();
    for (at, _) in code.match_indices("extern crate") {
        if word_at(b, at, "extern") {
            let (name, _) = ident_from(b, skip_space(b, at + "extern crate".len()));
            out.insert(name);
        }
    }
    for name in known {
        let pattern = format!("{name}::");
        let named = code
            .match_indices(&pattern)
            .any(|(at, _)| path_starts(code, at));
        if named && !local(name) {
            out.insert(name.clone());
        }
    }
    out
}

fn code_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Every `.rs` file of a member (src, tests, benches, examples, build.rs),
/// not those of a package nested in its directory.
fn member_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            let nested = path.join("Cargo.toml").is_file();
            if !nested && !path.ends_with("target") {
                member_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

// ---------------------------------------------------------------------
// The rules, as functions of what they read.

/// Module cycles of one crate, from its modules' test-free code.
fn module_cycles(krate: &str, sources: &[(ModPath, String)]) -> Vec<String> {
    cycles(&sibling_edges(sources))
        .iter()
        .map(|cycle| {
            let names: Vec<String> = cycle.iter().map(show).collect();
            format!("{krate}: {}", names.join(" -> "))
        })
        .collect()
}

/// Cycles between members, each edge with the tables that make it.
fn crate_cycles(workspace: &Workspace) -> Vec<String> {
    let edges = workspace.edges();
    let plain: BTreeMap<String, BTreeSet<String>> = edges
        .iter()
        .map(|(from, to)| (from.clone(), to.keys().cloned().collect()))
        .collect();
    cycles(&plain)
        .iter()
        .map(|cycle| {
            let mut text = cycle[0].clone();
            for pair in cycle.windows(2) {
                let kinds: Vec<&str> = edges[&pair[0]][&pair[1]]
                    .iter()
                    .map(String::as_str)
                    .collect();
                text.push_str(&format!(" -> {} ({})", pair[1], kinds.join(", ")));
            }
            text
        })
        .collect()
}

/// Files (name, blanked code) of `member` that name a member its manifest
/// does not list. `locals`: its module names.
fn unlisted_crates(
    workspace: &Workspace,
    member: &Member,
    files: &[(String, String)],
    locals: &BTreeSet<String>,
) -> Vec<String> {
    let listed: BTreeSet<&str> = member
        .manifest
        .deps
        .iter()
        .filter_map(|d| workspace.target(member, d))
        .map(|m| m.package.as_str())
        .collect();
    let others: BTreeMap<String, &Member> = workspace
        .members
        .iter()
        .filter(|m| m.package != member.package)
        .map(|m| (m.krate.clone(), m))
        .collect();
    let known: BTreeSet<String> = others.keys().cloned().collect();
    let mut problems = Vec::new();
    for (file, code) in files {
        for name in crates_named(code, &known, locals) {
            let Some(other) = others.get(&name) else {
                continue;
            };
            if !listed.contains(other.package.as_str()) {
                problems.push(format!(
                    "{file} names `{name}::`, but {}/Cargo.toml lists no dependency on {}",
                    member.dir, other.package
                ));
            }
        }
    }
    problems
}

/// The `cli` rule: every crate cli's `[dependencies]` (`deps`, as
/// declared) and source files (name, blanked code) use is in `may_use`,
/// std, or `still`; every entry of `still` is used.
fn cli_problems(
    deps: &[String],
    files: &[(String, String)],
    known: &BTreeSet<String>,
    locals: &BTreeSet<String>,
    may_use: &[&str],
    still: &[(&str, &str)],
) -> Vec<String> {
    let mut used: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for dep in deps {
        used.entry(code_name(dep))
            .or_default()
            .insert("cli/Cargo.toml [dependencies]".into());
    }
    for (file, code) in files {
        for name in crates_named(code, known, locals) {
            used.entry(name).or_default().insert(file.clone());
        }
    }
    let target: BTreeSet<String> = may_use
        .iter()
        .chain(BUILTIN)
        .map(|c| code_name(c))
        .collect();
    let moving: BTreeSet<String> = still.iter().map(|(c, _)| code_name(c)).collect();
    let mut problems = Vec::new();
    for (name, places) in &used {
        if !target.contains(name) && !moving.contains(name) {
            let mut shown: Vec<&str> = places.iter().take(3).map(String::as_str).collect();
            let more = format!("and {} more", places.len().saturating_sub(3));
            if places.len() > 3 {
                shown.push(&more);
            }
            problems.push(format!(
                "cli uses `{name}` ({}): cli may use only the facade `arbor`, {} and std \
                 (CLI_MAY_USE); reach the domain through the facade",
                shown.join(", "),
                may_use
                    .iter()
                    .filter(|c| **c != "arbor")
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (name, _) in still {
        let n = code_name(name);
        if !used.contains_key(&n) {
            problems.push(format!(
                "STILL_TO_MOVE lists `{name}`, which cli no longer uses: remove the entry \
                 (the list only shrinks)"
            ));
        }
        if target.contains(&n) {
            problems.push(format!("`{name}` is in both CLI_MAY_USE and STILL_TO_MOVE"));
        }
        if !seen.insert(n) {
            problems.push(format!("STILL_TO_MOVE lists `{name}` twice"));
        }
    }
    problems
}

/// Modules of a crate outside `load` that import `load`.
fn load_importers(sources: &[(ModPath, String, String)]) -> Vec<String> {
    let modules: BTreeSet<ModPath> = sources.iter().map(|(m, _, _)| m.clone()).collect();
    let mut problems = Vec::new();
    for (module, file, all) in sources {
        if module.first().is_some_and(|m| m == "load") {
            continue;
        }
        let imports_load = references(module, all)
            .iter()
            .any(|r| resolve(r, &modules).first().is_some_and(|m| m == "load"));
        if imports_load {
            problems.push(file.clone());
        }
    }
    problems
}

// ---------------------------------------------------------------------
// The rules on this repository.

fn workspace() -> Workspace {
    let workspace = Workspace::read(&repo());
    assert!(
        workspace.problems.is_empty(),
        "workspace members:\n{}",
        workspace.problems.join("\n")
    );
    assert!(
        workspace.by_dir("cli").is_some(),
        "the root Cargo.toml's members do not include cli: {:?}",
        workspace.root.members
    );
    workspace
}

fn relative(file: &Path) -> String {
    let repo = repo();
    file.strip_prefix(&repo)
        .unwrap_or(file)
        .display()
        .to_string()
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut problems = Vec::new();
    let mut files = 0;
    for member in &workspace().members {
        let code: Vec<(ModPath, String)> = sources(&repo().join(&member.dir))
            .into_iter()
            .map(|s| (s.module, s.code))
            .collect();
        files += code.len();
        problems.extend(module_cycles(&member.dir, &code));
    }
    assert!(files > 0, "no source file found under the members' src/");
    assert!(
        problems.is_empty(),
        "module cycles:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_crates_form_no_cycle_and_name_only_what_they_list() {
    let workspace = workspace();
    let mut problems: Vec<String> = crate_cycles(&workspace)
        .into_iter()
        .map(|c| format!("crate cycle: {c}"))
        .collect();
    for member in &workspace.members {
        let dir = repo().join(&member.dir);
        let locals = module_names(&sources(&dir));
        let mut paths = Vec::new();
        member_files(&dir, &mut paths);
        let files: Vec<(String, String)> = paths
            .iter()
            .filter_map(|p| Some((relative(p), blank(&std::fs::read_to_string(p).ok()?))))
            .collect();
        problems.extend(unlisted_crates(&workspace, member, &files, &locals));
    }
    assert!(problems.is_empty(), "crate edges:\n{}", problems.join("\n"));
}

#[test]
fn cli_uses_only_the_facade_the_console_crates_and_clap() {
    let workspace = workspace();
    let cli = workspace.by_dir("cli").expect("cli is a member");
    let deps: Vec<String> = cli
        .manifest
        .deps
        .iter()
        .filter(|d| d.kind == "dependencies")
        .map(|d| d.key.clone())
        .collect();
    let sources = sources(&repo().join("cli"));
    let locals = module_names(&sources);
    let files: Vec<(String, String)> = sources
        .iter()
        .map(|s| (relative(&s.file), s.all.clone()))
        .collect();
    let mut known: BTreeSet<String> = cli
        .manifest
        .deps
        .iter()
        .map(|d| code_name(&d.key))
        .collect();
    known.extend(workspace.members.iter().map(|m| m.krate.clone()));
    known.extend(CLI_MAY_USE.iter().map(|c| code_name(c)));
    known.extend(STILL_TO_MOVE.iter().map(|(c, _)| code_name(c)));
    let problems = cli_problems(&deps, &files, &known, &locals, CLI_MAY_USE, STILL_TO_MOVE);
    assert!(problems.is_empty(), "cli imports:\n{}", problems.join("\n"));
}

#[test]
fn modules_outside_load_do_not_import_load() {
    let mut problems = Vec::new();
    for member in &workspace().members {
        let sources = sources(&repo().join(&member.dir));
        if !sources.iter().any(|s| s.module == ["load"]) {
            continue;
        }
        let all: Vec<(ModPath, String, String)> = sources
            .into_iter()
            .map(|s| (s.module, relative(&s.file), s.all))
            .collect();
        problems.extend(load_importers(&all));
    }
    assert!(problems.is_empty(), "import load: {}", problems.join(", "));
}

// ---------------------------------------------------------------------
// The checker's own tests, on planted code.

fn m(path: &str) -> ModPath {
    path.split("::").map(String::from).collect()
}

#[test]
fn the_checker_finds_a_cycle_and_resolves_groups() {
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    edges.entry(m("a")).or_default().insert(m("b"));
    edges.entry(m("b")).or_default().insert(m("c"));
    edges.entry(m("c")).or_default().insert(m("a"));
    edges.entry(m("d")).or_default().insert(m("a"));
    assert_eq!(cycles(&edges), vec![vec![m("a"), m("b"), m("c"), m("a")]]);
    let refs = references(
        &m("x::y"),
        "use crate::{a::B, c::{d, e::F}};\nlet v = super::z::g();\n\
         mod inner { use super::super::w::H; }",
    );
    let shown: Vec<String> = refs.iter().map(|p| p.join("::")).collect();
    assert_eq!(shown, ["a::B", "c::d", "c::e::F", "x::z::g", "x::w::H"]);
}

#[test]
fn literals_and_comments_are_not_code() {
    let text = "let a = \"crate::x { \\\" }\"; // super::y {\n\
                let b = r#\"crate::z \"}\"#; /* outer /* inner } */ crate::w */\n\
                let c = '{'; let d = '\\''; fn f<'a>(x: &'a str) {}\n";
    let code = blank(text);
    assert_eq!(code.lines().count(), text.lines().count());
    assert!(!code.contains("crate::") && !code.contains("super::"));
    assert!(!code.contains('"') && code.matches('{').count() == 1);
    assert!(code.contains("fn f<'a>(x: &'a str) {}"));
}

#[test]
fn a_test_module_is_skipped_by_its_braces_and_what_follows_counts() {
    let text = "use super::a::A;\n\
                pub struct S {\n    #[cfg(test)]\n    pub field: super::b::B,\n}\n\
                #[cfg(test)]\n#[allow(dead_code)]\npub(crate) mod tests {\n\
                    use super::c::C;\n    const S: &str = \"}\";\n    const Q: char = '}';\n\
                    // }\n    fn f() { super::d::D::new(); }\n}\n\
                #[cfg(test)]\nmod helpers;\n\
                fn later() { super::e::E::go(); }\n";
    let (code, files) = without_tests(&blank(text));
    assert_eq!(files, ["helpers"]);
    let shown: Vec<String> = references(&m("x::y"), &code)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(shown, ["x::a::A", "x::b::B", "x::e::E::go"]);
    // A cycle hidden after a `#[cfg(test)]` field is found.
    let sources = [
        (
            m("runs"),
            blank(text).replace("super::e::E", "super::follows::link"),
        ),
        (m("follows"), "use super::runs::Observed;".to_string()),
        (m("a"), String::new()),
        (m("b"), String::new()),
        (m("c"), String::new()),
        (m("d"), String::new()),
    ];
    let sources: Vec<(ModPath, String)> = sources
        .into_iter()
        .map(|(module, text)| (module, without_tests(&text).0))
        .collect();
    assert_eq!(
        module_cycles("cli", &sources),
        ["cli: follows -> runs -> follows"]
    );
}

const ROOT: &str = r#"
[workspace]
resolver = "2"
members = [
    "engine",   # the core
    "sim", "crates/x",
]
exclude = ["fuzz"]

[workspace.dependencies]
arbor-engine = { path = "engine" }
arbor-sim = { path = "sim" }
renamed = { path = "crates/x", package = "arbor-x" }
serde = { version = "1", features = ["derive"] }
"#;

fn planted(sim_dev: &str) -> Workspace {
    let engine = "[package]\nname = \"arbor-engine\"\n\n[dependencies]\nserde.workspace = true\n";
    let sim = format!(
        "[package]\nname = \"arbor-sim\"\n\n[dependencies]\narbor-engine = {{ workspace = true, \
         features = [\"a\"] }}\n\n[dev-dependencies]\n{sim_dev}\n"
    );
    let x = "[package]\nname = \"arbor-x\"\n[lib]\nname = \"x\"\n\
             [target.'cfg(unix)'.build-dependencies.arbor-sim]\npath = \"../../sim\"\n";
    Workspace::new(
        ROOT,
        vec![
            ("engine".into(), Some(engine.into())),
            ("sim".into(), Some(sim)),
            ("crates/x".into(), Some(x.into())),
        ],
    )
}

#[test]
fn manifests_are_read_as_text() {
    let workspace = planted("");
    assert_eq!(workspace.root.members, ["engine", "sim", "crates/x"]);
    assert_eq!(workspace.root.exclude, ["fuzz"]);
    let krates: Vec<&str> = workspace.members.iter().map(|m| m.krate.as_str()).collect();
    assert_eq!(krates, ["arbor_engine", "arbor_sim", "x"]);
    let edges = workspace.edges();
    let to = |from: &str| -> Vec<String> { edges[from].keys().cloned().collect() };
    assert!(to("arbor-engine").is_empty());
    assert_eq!(to("arbor-sim"), ["arbor-engine"]);
    assert_eq!(to("arbor-x"), ["arbor-sim"]);
    assert_eq!(
        edges["arbor-x"]["arbor-sim"],
        BTreeSet::from(["build-dependencies".to_string()])
    );
    let missing = Workspace::new(ROOT, vec![("gone".into(), None)]);
    assert_eq!(missing.problems.len(), 1);
}

#[test]
fn the_checker_finds_a_crate_cycle_through_a_dev_dependency() {
    assert!(crate_cycles(&planted("")).is_empty());
    let workspace = planted("renamed.workspace = true");
    assert_eq!(
        crate_cycles(&workspace),
        ["arbor-sim -> arbor-x (dev-dependencies) -> arbor-sim (build-dependencies)"]
    );
    // A file naming a member its manifest does not list.
    let engine = workspace.by_package("arbor-engine").expect("engine");
    let files = vec![
        (
            "engine/src/a.rs".to_string(),
            blank("use arbor_sim::server;"),
        ),
        (
            "engine/src/b.rs".to_string(),
            blank("// arbor_sim::x\nlet s = \"x::y\";\nuse crate::x::y;\nfn f() { x::y(); }"),
        ),
        (
            "engine/tests/c.rs".to_string(),
            blank("arbor_engine::time::now();"),
        ),
    ];
    let locals = BTreeSet::from(["x".to_string()]);
    assert_eq!(
        unlisted_crates(&workspace, engine, &files, &locals),
        ["engine/src/a.rs names `arbor_sim::`, but engine/Cargo.toml lists no dependency on arbor-sim"]
    );
    let sim = workspace.by_package("arbor-sim").expect("sim");
    let uses_engine = vec![(
        "sim/src/a.rs".to_string(),
        blank("arbor_engine::time::now();"),
    )];
    assert!(unlisted_crates(&workspace, sim, &uses_engine, &BTreeSet::new()).is_empty());
}

#[test]
fn the_cli_rule_rejects_a_planted_import_and_a_stale_entry() {
    let known: BTreeSet<String> = ["arbor", "clap", "arbor_engine", "serde"]
        .map(String::from)
        .into();
    let locals: BTreeSet<String> = ["run", "output"].map(String::from).into();
    let deps = vec!["clap".to_string(), "arbor-engine".to_string()];
    let clean = "use std::io;\nuse clap::Parser;\nuse crate::run;\nuse output::Table;\n\
                 use arbor_engine::load;\nuse load::Loaded;\nenum K { A }\nfn f() { use K::*; \
                 arbor::plan(); }\n";
    let files = vec![("cli/src/a.rs".to_string(), blank(clean))];
    let still = [("arbor-engine", "moving")];
    assert!(cli_problems(&deps, &files, &known, &locals, CLI_MAY_USE, &still).is_empty());
    let planted = vec![
        files[0].clone(),
        (
            "cli/src/b.rs".to_string(),
            blank("use arbor_formats::detect;\nfn g() { serde::de::x(); }"),
        ),
    ];
    assert_eq!(
        cli_problems(&deps, &planted, &known, &locals, CLI_MAY_USE, &still),
        [
            "cli uses `arbor_formats` (cli/src/b.rs): cli may use only the facade `arbor`, \
             `clap`, `indicatif`, `comfy-table`, `crossterm` and std (CLI_MAY_USE); reach the domain \
             through the facade",
            "cli uses `serde` (cli/src/b.rs): cli may use only the facade `arbor`, `clap`, \
             `indicatif`, `comfy-table`, `crossterm` and std (CLI_MAY_USE); reach the domain through the \
             facade"
        ]
    );
    let stale = [("arbor-engine", "moving"), ("tokio", "moved already")];
    assert_eq!(
        cli_problems(&deps, &files, &known, &locals, CLI_MAY_USE, &stale),
        [
            "STILL_TO_MOVE lists `tokio`, which cli no longer uses: remove the entry (the list \
          only shrinks)"
        ]
    );
}

#[test]
fn the_load_rule_finds_an_importer() {
    let sources = vec![
        (m("load"), "load.rs".to_string(), String::new()),
        (
            m("load::json"),
            "load/json.rs".to_string(),
            "use crate::input::X;".into(),
        ),
        (m("input"), "input.rs".to_string(), String::new()),
        (
            m("inspect"),
            "inspect.rs".to_string(),
            blank("#[cfg(test)]\nmod tests { use crate::load::json; }"),
        ),
    ];
    assert_eq!(load_importers(&sources), ["inspect.rs"]);
}
