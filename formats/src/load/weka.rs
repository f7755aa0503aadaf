//! Weka agentic-coding traces: the `callanjfox/kv-cache-tester` files (one
//! JSON object per file) and the SemiAnalysis corpora (`traces.jsonl`, one
//! trace per line).
//!
//! Owns reading those files into [`Tree`]s and detecting which conventions a
//! trace used (formats.md section 1, semantics section 7):
//! - subagent times: *relative* (marker `t` is the subagent's completion,
//!   spawn = `t - duration_ms/1000`, inner `t` relative to the spawn) or
//!   *absolute* (inner `t` already on the root's clock);
//! - hash ids starting at 0 or 1, counting `floor` or `ceil(in/block_size)`.
//!
//! Parsing is one serde pass (`json.rs`) into typed, borrowing structs of
//! `fields.rs` types (no `serde_json::Value`); times are converted to
//! integer nanoseconds while deserializing, so every bad value is reported
//! with its JSON path. Files are read line by line, so a JSONL corpus never
//! sits in memory whole; its lines are parsed in parallel batches.

use std::path::Path;

use arbor_engine::error::InputError;
use arbor_engine::model::{Agent, AgentKind, BlockIds, HashScope, InputKind, Tree, Turn};
use arbor_engine::time::{Nanos, NANOS_PER_SEC};

use super::fields::{show_number, Count, HashIds, InputTypes, Millis, Secs, Text};
use super::json::{self, Fault, Lines};
use super::sniff::{self, has_key};
use super::source::Source;
use crate::input::Loaded;

/// Tokens per hash block when a trace does not say (the Weka format's value).
pub const DEFAULT_BLOCK_SIZE: u32 = 64;

/// Which time/id conventions a trace used (reported later by `arbor inspect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Conventions {
    pub subagent_times: SubagentTimes,
    /// 0 or 1; `None` if the trace has no hash ids.
    pub hash_id_base: Option<u32>,
    pub block_count: BlockCount,
}

/// How subagent entries state their times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubagentTimes {
    /// The trace has no subagent entries.
    #[default]
    NoSubagents,
    /// Marker `t` is the completion, inner `t` relative to the spawn
    /// (kv-cache-tester files).
    Relative,
    /// Inner `t` are root-trace times (SemiAnalysis corpora).
    Absolute,
}

/// How many hash ids a request carries per `in` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockCount {
    /// No hash ids, or neither rule holds for every request.
    #[default]
    Unknown,
    /// `len == floor(in / block_size)` (full blocks only).
    Floor,
    /// `len == ceil(in / block_size)` (last partial block counted).
    Ceil,
}

/// What a Weka trace is, in messages.
const TRACE: &str = "a Weka trace (a JSON object with `requests`)";

/// Reads one file: one trace, or one trace per line (a `.jsonl` file, or a
/// `.json` file whose first line is a whole object followed by more).
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut loaded = Loaded::default();
    for (tree, conventions) in read_file(input.into())? {
        let words = conventions.describe();
        if !loaded.conventions.contains(&words) {
            loaded.conventions.push(words);
        }
        loaded.trees.push(tree);
    }
    Ok(loaded)
}

impl Conventions {
    /// The conventions in words, for reports.
    pub fn describe(&self) -> String {
        let times = match self.subagent_times {
            SubagentTimes::NoSubagents => "no subagents",
            SubagentTimes::Relative => {
                "subagent times relative (marker t is the completion; spawn = t - duration)"
            }
            SubagentTimes::Absolute => "subagent times absolute (root-trace clock)",
        };
        let base = match self.hash_id_base {
            Some(b) => format!("hash ids from {b}"),
            None => "no hash ids".to_string(),
        };
        let count = match self.block_count {
            BlockCount::Floor => "floor(in/block_size) blocks",
            BlockCount::Ceil => "ceil(in/block_size) blocks",
            BlockCount::Unknown => "block count unknown",
        };
        format!("{times}; {base}; {count}")
    }
}
/// Parses one trace (one JSON object). `source` names it in errors and in
/// `Tree::source`; its file stem is the id when the trace has none.
pub fn parse_trace(text: &str, source: &str) -> Result<(Tree, Conventions), InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(InputError::whole(
            source,
            format!("empty input: expected {TRACE}"),
        ));
    }
    let (mut tree, conventions) = parse_object(text).map_err(|f| f.in_file(source, 0))?;
    tree.source = source.to_string();
    set_fallback_id(&mut tree, || file_stem(Path::new(source)));
    Ok((tree, conventions))
}

/// Cheap content sniff: does this start of a file look like a Weka trace?
/// Looks for a JSON object with Weka's keys; tolerates a prefix cut anywhere.
pub fn looks_like_weka(text_prefix: &str) -> bool {
    let text = sniff::trimmed(text_prefix);
    if !text.starts_with('{') {
        return false;
    }
    has_key(text, "hash_id_scope")
        || (has_key(text, "requests")
            && (has_key(text, "block_size") || has_key(text, "hash_ids") || has_key(text, "t")))
}

// ---------------------------------------------------------------------------
// Files

fn is_jsonl(path: Option<&Path>) -> bool {
    path.and_then(Path::extension)
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads one file into trees with the conventions each used.
fn read_file(source: Source) -> Result<Vec<(Tree, Conventions)>, InputError> {
    let jsonl = is_jsonl(source.path());
    let stem = file_stem(source.path().unwrap_or(Path::new(source.name())));
    let mut lines = Lines::open(source, TRACE)?;
    let file = lines.file().to_string();
    let mut out = Vec::new();
    let Some(first_text) = lines.next_line()? else {
        return Err(lines.empty("a Weka trace (one JSON object, or one per line)"));
    };
    let first_text = first_text.to_string();
    let first_no = lines.line();
    let first = parse_object(&first_text);
    let complete = match &first {
        Ok(_) => true,
        Err(fault) => fault.complete,
    };
    // One object per line if the name says so, or if the first line is a
    // whole object and another non-blank line follows.
    let second = if jsonl || complete {
        lines.next_line()?.map(str::to_string)
    } else {
        None
    };

    if jsonl || second.is_some() {
        push_line(&mut out, first, &file, &stem, first_no)?;
        let mut batch: Vec<(usize, String)> = Vec::new();
        let mut batch_bytes = 0;
        if let Some(line) = second {
            batch_bytes += line.len();
            batch.push((lines.line(), line));
        }
        loop {
            let next = lines.next_line()?.map(str::to_string);
            let more = next.is_some();
            if let Some(line) = next {
                batch_bytes += line.len();
                batch.push((lines.line(), line));
            }
            if !more || batch_bytes >= BATCH_BYTES {
                parse_batch(&batch, &mut out, &file, &stem)?;
                batch.clear();
                batch_bytes = 0;
            }
            if !more {
                return Ok(out);
            }
        }
    }

    let offset = first_no.saturating_sub(1);
    let (mut tree, conventions) = match first {
        // A complete object and nothing else but blank lines.
        Ok(parsed) => parsed,
        Err(fault) if fault.complete => return Err(fault.in_file(&file, offset)),
        // Not a one-line object: the object spans the file.
        Err(_) => {
            let mut whole = "\n".repeat(offset);
            whole.push_str(&first_text);
            let mut rest = String::new();
            lines.read_rest(&mut rest)?;
            if !rest.is_empty() {
                whole.push('\n');
                whole.push_str(&rest);
            }
            parse_object(&whole).map_err(|f| f.in_file(&file, 0))?
        }
    };
    tree.source = file.clone();
    set_fallback_id(&mut tree, || stem.clone());
    out.push((tree, conventions));
    Ok(out)
}

/// Lines of a JSONL corpus are parsed in batches of about this many bytes.
const BATCH_BYTES: usize = 16 << 20;

/// Parses a batch of JSONL lines on all cores (lines are independent),
/// then pushes the trees in line order. The first bad line in file order is
/// the one reported, whatever order the threads finish in.
fn parse_batch(
    batch: &[(usize, String)],
    out: &mut Vec<(Tree, Conventions)>,
    file: &str,
    stem: &str,
) -> Result<(), InputError> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    // Split into `workers` runs of roughly equal bytes.
    let total: usize = batch.iter().map(|(_, l)| l.len()).sum();
    let mut chunks: Vec<&[(usize, String)]> = Vec::with_capacity(workers);
    let (mut begin, mut acc) = (0, 0);
    for (i, (_, line)) in batch.iter().enumerate() {
        acc += line.len();
        if acc * workers >= total * (chunks.len() + 1) && chunks.len() + 1 < workers {
            chunks.push(&batch[begin..=i]);
            begin = i + 1;
        }
    }
    chunks.push(&batch[begin..]);
    let parse = |chunk: &[(usize, String)]| -> Vec<Result<(Tree, Conventions), Fault>> {
        chunk.iter().map(|(_, line)| parse_object(line)).collect()
    };
    let results: Vec<Vec<Result<(Tree, Conventions), Fault>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks[1..]
            .iter()
            .map(|&c| scope.spawn(move || parse(c)))
            .collect();
        let mut all = vec![parse(chunks[0])];
        for handle in handles {
            all.push(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        all
    });
    for (parsed, (line_no, _)) in results.into_iter().flatten().zip(batch) {
        push_line(out, parsed, file, stem, *line_no)?;
    }
    Ok(())
}

fn push_line(
    out: &mut Vec<(Tree, Conventions)>,
    parsed: Result<(Tree, Conventions), Fault>,
    file: &str,
    stem: &str,
    line_no: usize,
) -> Result<(), InputError> {
    let (mut tree, conventions) = parsed.map_err(|f| f.on_line(file, line_no))?;
    tree.source = format!("{file}:line {line_no}");
    set_fallback_id(&mut tree, || format!("{stem}:{line_no}"));
    out.push((tree, conventions));
    Ok(())
}

/// Gives a trace without an `id` (or with an empty one) a fallback id.
fn set_fallback_id(tree: &mut Tree, fallback: impl FnOnce() -> String) {
    if tree.id.is_empty() {
        tree.id = fallback();
        if let Some(root) = tree.agents.first_mut() {
            root.id.clone_from(&tree.id);
        }
    }
}

// ---------------------------------------------------------------------------
// Raw schema (one serde pass, borrowing strings where possible)

#[derive(serde::Deserialize)]
#[serde(expecting = "a Weka trace (a JSON object with `requests`)")]
struct RawTrace<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    block_size: Option<Count>,
    tool_tokens: Option<Count>,
    system_tokens: Option<Count>,
    #[serde(borrow)]
    requests: Vec<RawEntry<'a>>,
}

/// A request object (`type` `"n"`/`"s"`) or a subagent entry
/// (`type: "subagent"`), read into one flat struct so serde needs no
/// buffering to pick a variant.
#[derive(serde::Deserialize)]
#[serde(expecting = "a request object or a subagent entry")]
struct RawEntry<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    t: Secs,
    #[serde(rename = "in", alias = "input_length")]
    isl: Option<Count>,
    #[serde(rename = "out", alias = "output_length")]
    osl: Option<Count>,
    #[serde(borrow)]
    model: Option<Text<'a>>,
    hash_ids: Option<HashIds>,
    input_types: Option<InputTypes>,
    api_time: Option<Secs>,
    ttft: Option<Secs>,
    #[serde(borrow)]
    agent_id: Option<Text<'a>>,
    duration_ms: Option<Millis>,
    #[serde(borrow)]
    status: Option<Text<'a>>,
    #[serde(borrow)]
    requests: Option<Vec<RawEntry<'a>>>,
}

impl RawEntry<'_> {
    fn is_subagent(&self) -> bool {
        // "n", "s" or any other type is a request object.
        match &self.kind {
            Some(Text(kind)) => kind == "subagent",
            None => self.requests.is_some(),
        }
    }

    /// Request objects directly inside this subagent entry.
    fn inner_requests(&self) -> impl Iterator<Item = &Self> {
        self.requests.iter().flatten().filter(|e| !e.is_subagent())
    }
}

// ---------------------------------------------------------------------------
// From the raw schema to a tree

/// Parses one JSON object into a tree (without `source`; `id` empty when
/// the trace has none).
fn parse_object(text: &str) -> Result<(Tree, Conventions), Fault> {
    build(json::parse(text, TRACE)?)
}

fn build(raw: RawTrace<'_>) -> Result<(Tree, Conventions), Fault> {
    let block_size = match raw.block_size {
        None => DEFAULT_BLOCK_SIZE,
        Some(Count(0)) => {
            return Err(Fault::at(
                "$.block_size".to_string(),
                "expected a positive block size (tokens per hash block), got 0",
            ))
        }
        Some(Count(n)) => n,
    };
    let id = raw.id.map(|t| t.0.into_owned()).unwrap_or_default();

    let (mut absolute, mut relative, mut subagents) = (0usize, 0usize, 0usize);
    vote(&raw.requests, &mut absolute, &mut relative, &mut subagents);
    let subagent_times = if subagents == 0 {
        SubagentTimes::NoSubagents
    } else if absolute > relative {
        SubagentTimes::Absolute
    } else {
        SubagentTimes::Relative
    };

    let mut builder = Builder {
        absolute: subagent_times == SubagentTimes::Absolute,
        block_size,
        agents: vec![Agent {
            id: id.clone(),
            parent: None,
            kind: AgentKind::Root,
            recorded_end: None,
            turns: Vec::new(),
        }],
        models: Vec::new(),
        path: Vec::new(),
        any_ids: false,
        any_zero: false,
        floor_ok: true,
        ceil_ok: true,
    };
    builder.walk(raw.requests, 0, 0)?;

    for agent in &mut builder.agents {
        agent.turns.sort_by_key(|turn| turn.start);
    }
    let conventions = Conventions {
        subagent_times,
        hash_id_base: if builder.any_zero {
            Some(0)
        } else if builder.any_ids {
            Some(1)
        } else {
            None
        },
        block_count: if !builder.any_ids {
            BlockCount::Unknown
        } else if builder.floor_ok {
            BlockCount::Floor
        } else if builder.ceil_ok {
            BlockCount::Ceil
        } else {
            BlockCount::Unknown
        },
    };
    let tree = Tree {
        id,
        source: String::new(),
        arrival: 0,
        agents: builder.agents,
        explicit_edges: None,
        models: builder.models,
        block_size,
        hash_scope: HashScope::Local,
        tool_tokens: raw.tool_tokens.map_or(0, |c| c.0),
        system_tokens: raw.system_tokens.map_or(0, |c| c.0),
        provenance: Default::default(),
        shapes: Vec::new(),
    };
    Ok((tree, conventions))
}

/// Counts subagent entries and votes on their time convention: an entry
/// with a preceding request object looks absolute when its first inner `t`
/// is positive and no earlier than that request's end minus 1 s. Raw values
/// are compared within one `requests` array, so nesting needs no offsets.
fn vote(
    entries: &[RawEntry<'_>],
    absolute: &mut usize,
    relative: &mut usize,
    subagents: &mut usize,
) {
    let mut preceding: Option<&RawEntry<'_>> = None;
    for entry in entries {
        if !entry.is_subagent() {
            preceding = Some(entry);
            continue;
        }
        *subagents += 1;
        if let (Some(prev), Some(first)) = (preceding, entry.inner_requests().next()) {
            let prev_end = prev.t.0.saturating_add(prev.api_time.map_or(0, |a| a.0));
            if first.t.0 > 0 && first.t.0 >= prev_end.saturating_sub(NANOS_PER_SEC) {
                *absolute += 1;
            } else {
                *relative += 1;
            }
        }
        if let Some(inner) = &entry.requests {
            vote(inner, absolute, relative, subagents);
        }
    }
}

struct Builder {
    absolute: bool,
    block_size: u32,
    agents: Vec<Agent>,
    models: Vec<String>,
    /// Indices of the entries being converted, outermost first.
    path: Vec<usize>,
    any_ids: bool,
    any_zero: bool,
    floor_ok: bool,
    ceil_ok: bool,
}

impl Builder {
    /// JSON path of the current entry, plus an optional field.
    fn place(&self, field: Option<&str>) -> String {
        let mut place = String::from("$");
        for index in &self.path {
            place.push_str(&format!(".requests[{index}]"));
        }
        if let Some(field) = field {
            place.push('.');
            place.push_str(field);
        }
        place
    }

    fn overflow(&self, field: &str) -> Fault {
        Fault::at(
            self.place(Some(field)),
            "time overflows: the absolute time (offset plus this value) is too large",
        )
    }

    /// Converts `entries` (a `requests` array) into turns of agent `agent`,
    /// their `t` offset by `base`.
    fn walk(&mut self, entries: Vec<RawEntry<'_>>, agent: usize, base: Nanos) -> Result<(), Fault> {
        for (index, entry) in entries.into_iter().enumerate() {
            self.path.push(index);
            if entry.is_subagent() {
                self.subagent(entry, agent, base)?;
            } else {
                self.request(entry, agent, base)?;
            }
            self.path.pop();
        }
        Ok(())
    }

    fn subagent(&mut self, entry: RawEntry<'_>, parent: usize, base: Nanos) -> Result<(), Fault> {
        let index = self.agents.len();
        let id = match &entry.agent_id {
            Some(Text(id)) => id.to_string(),
            None => format!("subagent_{index}"),
        };
        let duration = entry.duration_ms.map(|d| d.0);
        let (spawn, inner_base) = if self.absolute {
            let spawn = match entry.inner_requests().map(|r| r.t.0).min() {
                Some(first) => first,
                None => base
                    .checked_add(entry.t.0)
                    .ok_or_else(|| self.overflow("t"))?,
            };
            (spawn, 0)
        } else {
            let marker = base
                .checked_add(entry.t.0)
                .ok_or_else(|| self.overflow("t"))?;
            let spawn = match duration {
                None => marker,
                Some(d) => marker.checked_sub(d).ok_or_else(|| {
                    Fault::at(
                        self.place(None),
                        format!(
                            "subagent {id} would spawn before the trace start: its completion \
                             t = {} s minus duration_ms = {} ms is negative; expected \
                             duration_ms <= t * 1000",
                            show_number(marker as f64 / NANOS_PER_SEC as f64),
                            show_number(d as f64 / 1e6),
                        ),
                    )
                })?,
            };
            (spawn, spawn)
        };
        let recorded_end = match duration {
            Some(d) => Some(
                spawn
                    .checked_add(d)
                    .ok_or_else(|| self.overflow("duration_ms"))?,
            ),
            None => None,
        };
        let async_launched = entry
            .status
            .as_ref()
            .is_some_and(|Text(s)| s == "async_launched");
        let kind = if async_launched || duration.is_none() {
            AgentKind::Background
        } else {
            AgentKind::Blocking
        };
        let parent = u32::try_from(parent)
            .map_err(|_| Fault::at(self.place(None), "too many subagents in one trace"))?;
        self.agents.push(Agent {
            id,
            parent: Some(parent),
            kind,
            recorded_end,
            turns: Vec::new(),
        });
        if let Some(inner) = entry.requests {
            self.walk(inner, index, inner_base)?;
        }
        Ok(())
    }

    fn request(&mut self, entry: RawEntry<'_>, agent: usize, base: Nanos) -> Result<(), Fault> {
        let isl = entry.isl.map(|c| c.0).ok_or_else(|| {
            Fault::at(
                self.place(None),
                "missing field `in` (or `input_length`): expected it in a request object (the prompt token count)",
            )
        })?;
        let osl = entry.osl.map(|c| c.0).ok_or_else(|| {
            Fault::at(
                self.place(None),
                "missing field `out` (or `output_length`): expected it in a request object (the output token count)",
            )
        })?;
        let start = base
            .checked_add(entry.t.0)
            .ok_or_else(|| self.overflow("t"))?;
        let model = match &entry.model {
            Some(Text(name)) => Some(self.model_index(name)?),
            None => None,
        };
        let (hash_ids, has_zero) = match entry.hash_ids {
            Some(h) => (h.ids, h.has_zero),
            None => (BlockIds::default(), false),
        };
        if !hash_ids.is_empty() {
            self.any_ids = true;
            self.any_zero |= has_zero;
            let len = hash_ids.len() as u64;
            let (isl64, bs) = (u64::from(isl), u64::from(self.block_size));
            self.floor_ok &= len == isl64 / bs;
            self.ceil_ok &= len == isl64.div_ceil(bs);
        }
        let turn = Turn {
            start,
            duration: entry.api_time.map(|a| a.0),
            isl,
            osl,
            ttft: entry.ttft.map(|a| a.0),
            model,
            input_kind: entry.input_types.map_or(InputKind::Unknown, |t| t.kind()),
            hash_ids,
            text: None,
            tokens_estimated: false,
        };
        match self.agents.get_mut(agent) {
            Some(a) => a.turns.push(turn),
            None => return Err(Fault::at(self.place(None), "internal: unknown agent")),
        }
        Ok(())
    }

    fn model_index(&mut self, name: &str) -> Result<u16, Fault> {
        let index = match self.models.iter().position(|m| m == name) {
            Some(i) => i,
            None => {
                self.models.push(name.to_string());
                self.models.len() - 1
            }
        };
        u16::try_from(index).map_err(|_| {
            Fault::at(
                self.place(Some("model")),
                format!(
                    "too many distinct model names: at most {} per trace",
                    u16::MAX as u32 + 1
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_contains, scratch_path, testdata};
    use super::*;
    use arbor_engine::time::NANOS_PER_MS;
    use std::path::PathBuf;

    /// Reads a file or directory as Weka, through the loader's table.
    fn load_path(path: &Path) -> Result<Vec<Tree>, InputError> {
        crate::load::load_path(path, Some(crate::load::Format::Weka)).map(|l| l.trees)
    }

    fn fixture(name: &str) -> PathBuf {
        testdata("weka-kv-cache-tester").join(name)
    }

    fn bad(name: &str) -> PathBuf {
        testdata("bad/weka").join(name)
    }

    /// A unique scratch directory under the system temp dir.
    fn scratch(tag: &str) -> PathBuf {
        let dir = scratch_path(&format!("weka-{tag}"), "");
        std::fs::create_dir_all(&dir).expect("create temp dir");
        dir
    }

    fn load_one(name: &str) -> (Tree, Conventions) {
        let mut all = read_file(Source::file(&fixture(name))).expect("fixture loads");
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    fn turn_counts(tree: &Tree) -> Vec<usize> {
        tree.agents.iter().map(|a| a.turns.len()).collect()
    }

    fn kinds(tree: &Tree) -> Vec<AgentKind> {
        tree.agents.iter().map(|a| a.kind).collect()
    }

    fn error_of(path: &Path) -> String {
        load_path(path)
            .expect_err("input must be rejected")
            .to_string()
    }

    const OPUS: &str = "claude-opus-4-5-20251101";
    const HAIKU: &str = "claude-haiku-4-5-20251001";

    #[test]
    fn trace_0277_relative_subagents_spawn_together() {
        let (tree, conv) = load_one("trace_0277.json");
        assert_eq!(tree.id, "trace_0277");
        assert!(tree.source.ends_with("trace_0277.json"));
        assert_eq!(tree.arrival, 0);
        assert_eq!(
            (tree.block_size, tree.tool_tokens, tree.system_tokens),
            (64, 12166, 2875)
        );
        assert_eq!(tree.explicit_edges, None);
        assert_eq!(tree.models, vec![OPUS.to_string(), HAIKU.to_string()]);
        assert_eq!(turn_counts(&tree), vec![9, 4, 12, 17, 11]);
        assert_eq!(
            kinds(&tree),
            vec![
                AgentKind::Root,
                AgentKind::Blocking,
                AgentKind::Blocking,
                AgentKind::Blocking,
                AgentKind::Blocking
            ]
        );
        let ids: Vec<&str> = tree.agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "trace_0277",
                "agent_001",
                "agent_002",
                "agent_003",
                "agent_004"
            ]
        );
        assert_eq!(tree.agents[0].parent, None);
        assert!(tree.agents[1..].iter().all(|a| a.parent == Some(0)));
        assert_eq!(
            conv,
            Conventions {
                subagent_times: SubagentTimes::Relative,
                hash_id_base: Some(1),
                block_count: BlockCount::Floor,
            }
        );

        // Spawn = marker t - duration_ms; recorded_end = marker t.
        let expected = [
            (79_224, 59_750, 19_474),
            (183_906, 164_445, 19_461),
            (211_347, 191_873, 19_474),
        ];
        for (agent, (t_ms, dur_ms, spawn_ms)) in tree.agents[1..4].iter().zip(expected) {
            assert_eq!(t_ms - dur_ms, spawn_ms);
            let spawn = spawn_ms * NANOS_PER_MS;
            assert_eq!(agent.turns[0].start, spawn, "{}", agent.id);
            assert_eq!(agent.recorded_end, Some(t_ms * NANOS_PER_MS));
            assert!((19_460_000_000..=19_480_000_000).contains(&spawn));
            assert_eq!(agent.turns[0].model, Some(1));
            assert_eq!(agent.turns[0].input_kind, InputKind::UserText);
            assert_eq!(agent.turns[1].input_kind, InputKind::ToolResult);
        }
        // agent_001's inner t 0, 6, 13, 19 are relative to the spawn.
        let starts: Vec<Nanos> = tree.agents[1].turns.iter().map(|t| t.start).collect();
        let s = 19_474 * NANOS_PER_MS;
        assert_eq!(
            starts,
            [
                s,
                s + 6 * NANOS_PER_SEC,
                s + 13 * NANOS_PER_SEC,
                s + 19 * NANOS_PER_SEC
            ]
        );
        // The Plan agent: 723.533 - 337.933 = 385.600 s, opus.
        let plan = &tree.agents[4];
        assert_eq!(plan.turns[0].start, 385_600 * NANOS_PER_MS);
        assert_eq!(plan.turns[0].model, Some(0));

        let root = &tree.agents[0];
        let first = &root.turns[0];
        assert_eq!(first.start, 0);
        assert_eq!(first.duration, Some(18_780 * NANOS_PER_MS));
        assert_eq!((first.isl, first.osl), (19560, 1017));
        assert_eq!(first.hash_ids.len(), 19560 / 64);
        assert_eq!(first.hash_ids.iter().next(), Some(1));
        assert_eq!(first.model, Some(0));
        assert_eq!(root.turns[8].start, 818 * NANOS_PER_SEC);
        assert_eq!(tree.turn_count(), 53);
    }

    #[test]
    fn trace_0291_two_explore_subagents() {
        let (tree, conv) = load_one("trace_0291.json");
        assert_eq!(tree.id, "trace_0291");
        assert_eq!(turn_counts(&tree), vec![20, 5, 7]);
        assert_eq!(
            kinds(&tree),
            vec![AgentKind::Root, AgentKind::Blocking, AgentKind::Blocking]
        );
        assert_eq!(tree.models, vec![OPUS.to_string(), HAIKU.to_string()]);
        assert_eq!(conv.subagent_times, SubagentTimes::Relative);
        assert_eq!(conv.hash_id_base, Some(1));
        assert_eq!(conv.block_count, BlockCount::Floor);
        // 1148.013 - 46.656 and 1180.553 - 79.184.
        assert_eq!(tree.agents[1].turns[0].start, 1_101_357 * NANOS_PER_MS);
        assert_eq!(tree.agents[2].turns[0].start, 1_101_369 * NANOS_PER_MS);
        assert_eq!(
            tree.agents[2].turns[6].start,
            (1_101_369 + 54_000) * NANOS_PER_MS
        );
        assert_eq!(tree.agents[1].recorded_end, Some(1_148_013 * NANOS_PER_MS));
        // Parent turns keep document order around the subagent entries.
        assert_eq!(tree.agents[0].turns[15].start, 1085 * NANOS_PER_SEC);
        assert_eq!(tree.agents[0].turns[16].start, 1209 * NANOS_PER_SEC);
    }

    #[test]
    fn small_fixtures_have_one_agent() {
        let (tree, conv) = load_one("trace_0504.json");
        assert_eq!(turn_counts(&tree), vec![3]);
        assert_eq!(kinds(&tree), vec![AgentKind::Root]);
        assert_eq!(tree.models, vec!["claude-sonnet-4-20250514".to_string()]);
        assert_eq!(tree.agents[0].turns[2].start, 3075 * NANOS_PER_SEC);
        assert_eq!(tree.agents[0].turns[2].ttft, Some(1_750 * NANOS_PER_MS));
        assert_eq!(tree.agents[0].turns[0].ttft, None);
        assert_eq!(conv.subagent_times, SubagentTimes::NoSubagents);
        assert_eq!(conv.hash_id_base, Some(1));
        assert_eq!(conv.block_count, BlockCount::Floor);

        let (tree, _) = load_one("trace_0187.json");
        assert_eq!(turn_counts(&tree), vec![3]);
        assert_eq!(tree.models, vec![HAIKU.to_string()]);
        let ttfts: Vec<Option<Nanos>> = tree.agents[0].turns.iter().map(|t| t.ttft).collect();
        assert_eq!(
            ttfts,
            [
                Some(1_430 * NANOS_PER_MS),
                Some(630 * NANOS_PER_MS),
                Some(1_260 * NANOS_PER_MS)
            ]
        );
        let t = &tree.agents[0].turns[1];
        assert_eq!(
            (t.isl, t.osl, t.duration),
            (11443, 280, Some(2_320 * NANOS_PER_MS))
        );
        assert_eq!(t.hash_ids.len(), 178);
    }

    #[test]
    fn directory_loads_in_file_name_order() {
        let trees = load_path(&fixture("")).expect("directory loads");
        let ids: Vec<&str> = trees.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            ["trace_0187", "trace_0277", "trace_0291", "trace_0504"]
        );
        let agents: Vec<usize> = trees.iter().map(|t| t.agents.len()).collect();
        assert_eq!(agents, [1, 5, 3, 1]);
    }

    const ABSOLUTE: &str = r#"{"id":"abc123","block_size":64,"tool_tokens":0,"requests":[
        {"t":0,"type":"n","model":"m1","in":418,"out":10,"hash_ids":[0,1,2,3,4,5,6],"api_time":2.5,"input_types":["text"]},
        {"t":10,"type":"subagent","agent_id":"a1","duration_ms":20000,"status":"completed","requests":[
            {"t":3,"type":"n","model":"m2","in":64,"out":5,"hash_ids":[0],"api_time":1,"input_types":["text"]},
            {"t":7.5,"type":"s","model":"m2","in":130,"out":5,"hash_ids":[0,7,8],"api_time":1,"input_types":["tool_result"]}]},
        {"t":5,"type":"subagent","agent_id":"a2","duration_ms":null,"status":"async_launched","requests":[
            {"t":4,"type":"n","model":"m2","input_length":100,"output_length":3,"hash_ids":[0,9]}]},
        {"t":30,"type":"n","model":"m1","in":500,"out":10,"hash_ids":[0,1,2,3,4,5,6,10],"input_types":["tool_result","text"]}]}"#;

    #[test]
    fn absolute_inner_times_are_kept() {
        let (tree, conv) = parse_trace(ABSOLUTE, "corpus.jsonl:line 1").expect("parses");
        assert_eq!(
            conv,
            Conventions {
                subagent_times: SubagentTimes::Absolute,
                hash_id_base: Some(0),
                block_count: BlockCount::Ceil,
            }
        );
        assert_eq!(tree.id, "abc123");
        assert_eq!(tree.source, "corpus.jsonl:line 1");
        assert_eq!(tree.models, vec!["m1".to_string(), "m2".to_string()]);
        assert_eq!(turn_counts(&tree), vec![2, 2, 1]);
        assert_eq!(
            kinds(&tree),
            vec![AgentKind::Root, AgentKind::Blocking, AgentKind::Background]
        );
        let a1 = &tree.agents[1];
        assert_eq!(a1.id, "a1");
        assert_eq!(a1.turns[0].start, 3 * NANOS_PER_SEC);
        assert_eq!(a1.turns[1].start, 7_500 * NANOS_PER_MS);
        // Spawn = smallest inner t; end = spawn + duration.
        assert_eq!(a1.recorded_end, Some(23 * NANOS_PER_SEC));
        let a2 = &tree.agents[2];
        assert_eq!((a2.parent, a2.recorded_end), (Some(0), None));
        assert_eq!(a2.turns[0].start, 4 * NANOS_PER_SEC);
        assert_eq!((a2.turns[0].isl, a2.turns[0].osl), (100, 3));
        assert_eq!(a2.turns[0].input_kind, InputKind::Unknown);
        assert_eq!(tree.agents[0].turns[1].input_kind, InputKind::Unknown);
        assert_eq!(tree.agents[0].turns[1].duration, None);
    }

    #[test]
    fn nested_relative_subagents_and_async() {
        let text = r#"{"id":"n","requests":[
            {"t":0,"in":10,"out":1,"api_time":1},
            {"t":100,"type":"subagent","agent_id":"outer","duration_ms":90000,"requests":[
                {"t":0,"in":10,"out":1},
                {"t":30,"type":"subagent","agent_id":"inner","duration_ms":20000,"requests":[
                    {"t":0,"in":10,"out":1},{"t":5,"in":10,"out":1}]},
                {"t":40,"in":10,"out":1}]},
            {"t":101,"in":10,"out":1},
            {"t":102,"type":"subagent","agent_id":"bg","status":"async_launched","requests":[
                {"t":0,"in":10,"out":1},{"t":50,"in":10,"out":1}]}]}"#;
        let (tree, conv) = parse_trace(text, "/x/nested.json").expect("parses");
        assert_eq!(conv.subagent_times, SubagentTimes::Relative);
        assert_eq!(conv.hash_id_base, None);
        assert_eq!(conv.block_count, BlockCount::Unknown);
        assert_eq!(tree.block_size, DEFAULT_BLOCK_SIZE);
        let parents: Vec<Option<u32>> = tree.agents.iter().map(|a| a.parent).collect();
        assert_eq!(parents, [None, Some(0), Some(1), Some(0)]);
        let starts = |i: usize| -> Vec<u64> {
            tree.agents[i]
                .turns
                .iter()
                .map(|t| t.start / NANOS_PER_SEC)
                .collect()
        };
        // outer spawns at 100 - 90 = 10; inner at 10 + 30 - 20 = 20.
        assert_eq!(starts(1), [10, 50]);
        assert_eq!(starts(2), [20, 25]);
        assert_eq!(tree.agents[2].recorded_end, Some(40 * NANOS_PER_SEC));
        // Async: spawn = marker t.
        assert_eq!(starts(3), [102, 152]);
        assert_eq!(tree.agents[3].kind, AgentKind::Background);
        assert!(tree.agents[0].turns.iter().all(|t| t.model.is_none()));
    }

    #[test]
    fn missing_id_falls_back_to_file_stem() {
        let (tree, _) = parse_trace(
            r#"{"requests":[{"t":0,"in":1,"out":1}]}"#,
            "/some/dir/my_trace.json",
        )
        .expect("parses");
        assert_eq!(tree.id, "my_trace");
        assert_eq!(tree.agents[0].id, "my_trace");
    }

    #[test]
    fn turns_are_sorted_by_start() {
        let (tree, _) = parse_trace(
            r#"{"id":"s","requests":[{"t":5,"in":1,"out":1},{"t":2,"in":2,"out":1},{"t":5,"in":3,"out":1}]}"#,
            "s.json",
        )
        .expect("parses");
        let isl: Vec<u32> = tree.agents[0].turns.iter().map(|t| t.isl).collect();
        assert_eq!(isl, [2, 1, 3]);
    }

    #[test]
    fn jsonl_gives_one_tree_per_line() {
        let dir = scratch("jsonl");
        let path = dir.join("traces.jsonl");
        let one = ABSOLUTE.replace('\n', " ");
        let two = r#"{"id":"second","requests":[{"t":0,"in":1,"out":1}]}"#;
        std::fs::write(&path, format!("{one}\n\n{two}\n")).expect("write");
        let trees = load_path(&path).expect("loads");
        assert_eq!(trees.len(), 2);
        assert!(
            trees[0].source.ends_with("traces.jsonl:line 1"),
            "{}",
            trees[0].source
        );
        assert!(
            trees[1].source.ends_with("traces.jsonl:line 3"),
            "{}",
            trees[1].source
        );
        assert_eq!(trees[0].id, "abc123");
        assert_eq!(trees[1].id, "second");

        // Two lines, no blank between, and a .json name: detected as JSONL too.
        let path2 = dir.join("two.json");
        std::fs::write(&path2, format!("{two}\n{one}")).expect("write");
        let trees = load_path(&path2).expect("loads");
        assert_eq!(trees.len(), 2);
        assert!(trees[0].source.ends_with("two.json:line 1"));
        assert!(trees[1].source.ends_with("two.json:line 2"));
        assert_eq!(trees[1].agents.len(), 3);

        // A lone object on one line, in a .json file: one whole-file trace.
        let path3 = dir.join("single.json");
        std::fs::write(&path3, format!("\n{two}\n\n")).expect("write");
        let trees = load_path(&path3).expect("loads");
        assert_eq!(trees.len(), 1);
        assert_eq!(trees[0].source, path3.display().to_string());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn looks_like_weka_sniffs_content() {
        let text = std::fs::read_to_string(fixture("trace_0187.json")).expect("read");
        assert!(looks_like_weka(text.get(..200).expect("prefix")));
        assert!(looks_like_weka(&text));
        assert!(looks_like_weka(ABSOLUTE));
        assert!(!looks_like_weka(
            r#"{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#
        ));
        assert!(!looks_like_weka("[1,2,3]"));
        assert!(!looks_like_weka(""));
        assert!(!looks_like_weka(r#"{"note":"requests"}"#));
    }

    // ----- errors -----

    #[test]
    fn error_jsonl_broken_line_2() {
        let msg = error_of(&bad("broken_line2.jsonl"));
        assert_contains(
            &msg,
            &[
                "broken_line2.jsonl",
                "line 2",
                "$.requests[0].out",
                "invalid JSON",
            ],
        );
        assert!(!msg.contains("line 1"), "{msg}");
    }

    #[test]
    fn error_missing_in_and_out() {
        let msg = parse_trace(r#"{"requests":[{"t":0,"out":1}]}"#, "x.json")
            .expect_err("rejected")
            .to_string();
        assert_contains(
            &msg,
            &[
                "x.json",
                "$.requests[0]",
                "missing field `in` (or `input_length`)",
            ],
        );
        let msg = parse_trace(r#"{"requests":[{"t":0,"in":1}]}"#, "x.json")
            .expect_err("rejected")
            .to_string();
        assert_contains(&msg, &["$.requests[0]", "missing field `out`"]);
        let msg = parse_trace(r#"{"requests":[{"in":1,"out":1}]}"#, "x.json")
            .expect_err("rejected")
            .to_string();
        assert_contains(&msg, &["$.requests[0]", "missing field `t`"]);
    }

    #[test]
    fn error_bad_times() {
        let cases = [
            (
                r#"{"requests":[{"t":0,"in":1,"out":1,"api_time":-0.5}]}"#,
                "$.requests[0].api_time",
                "seconds (at most 1000000000), got -0.5",
            ),
            (
                r#"{"requests":[{"t":1e300,"in":1,"out":1}]}"#,
                "$.requests[0].t",
                "seconds (at most 1000000000), got 1e300",
            ),
            (
                r#"{"requests":[{"t":1e400,"in":1,"out":1}]}"#,
                "$.requests[0].t",
                "number out of range",
            ),
            (
                r#"{"requests":[{"t":0,"in":1,"out":1,"ttft":"fast"}]}"#,
                "$.requests[0].ttft",
                "expected a non-negative finite number of seconds",
            ),
            (
                r#"{"requests":[{"t":0,"type":"subagent","duration_ms":-5,"requests":[]}]}"#,
                "$.requests[0].duration_ms",
                "milliseconds (at most 1000000000000), got -5",
            ),
            (
                r#"{"requests":[{"t":null,"in":1,"out":1}]}"#,
                "$.requests[0].t",
                "invalid type: null",
            ),
        ];
        for (text, place, expect) in cases {
            let msg = parse_trace(text, "times.json").expect_err(text).to_string();
            assert_contains(&msg, &["times.json", place, expect]);
        }
    }

    #[test]
    fn error_negative_subagent_spawn() {
        let text = r#"{"requests":[{"t":0,"in":1,"out":1},
            {"t":10,"type":"subagent","agent_id":"agent_009","duration_ms":15000,"requests":[{"t":0,"in":1,"out":1}]}]}"#;
        let msg = parse_trace(text, "spawn.json")
            .expect_err("rejected")
            .to_string();
        assert_contains(
            &msg,
            &[
                "spawn.json",
                "$.requests[1]",
                "agent_009",
                "negative",
                "15000 ms",
            ],
        );
    }

    #[test]
    fn error_hash_id_out_of_range_and_block_size_zero() {
        let msg = parse_trace(
            r#"{"requests":[{"t":0,"in":128,"out":1,"hash_ids":[1,4294967296]}]}"#,
            "ids.json",
        )
        .expect_err("rejected")
        .to_string();
        assert_contains(
            &msg,
            &[
                "ids.json",
                "$.requests[0].hash_ids[1]",
                "expected a hash id (an integer in 0..=4294967295), got 4294967296",
            ],
        );
        let msg = parse_trace(
            r#"{"requests":[{"t":0,"in":1,"out":1,"hash_ids":[-1]}]}"#,
            "ids.json",
        )
        .expect_err("rejected")
        .to_string();
        assert_contains(
            &msg,
            &[
                "$.requests[0].hash_ids[0]",
                "expected a hash id (an integer in 0..=4294967295), got -1",
            ],
        );
        let msg = parse_trace(r#"{"block_size":0,"requests":[]}"#, "bs.json")
            .expect_err("rejected")
            .to_string();
        assert_contains(
            &msg,
            &["bs.json", "$.block_size", "expected a positive block size"],
        );
    }

    #[test]
    fn error_wrong_shapes() {
        let cases = [
            ("[1,2]", "expected a Weka trace"),
            (r#"{"requests":{}}"#, "$.requests"),
            (
                r#"{"requests":[5]}"#,
                "expected a request object or a subagent entry",
            ),
            (r#"{"requests":[{"t":0,"in":1.5,"out":1}]}"#, "got 1.5"),
            (
                r#"{"requests":[{"t":0,"in":1,"out":1}]} trailing"#,
                "trailing characters",
            ),
            (
                r#"{"requests":[{"t":0,"in":1,"input_length":1,"out":1}]}"#,
                "duplicate field",
            ),
            ("   ", "empty input"),
        ];
        for (text, expect) in cases {
            let msg = parse_trace(text, "shape.json").expect_err(text).to_string();
            assert_contains(&msg, &["shape.json", expect]);
        }
    }

    #[test]
    fn error_missing_path_and_empty_directory() {
        let dir = scratch("empty");
        let msg = error_of(&dir);
        assert_contains(&msg, &["arbor-weka-empty", "no trace files"]);
        let missing = dir.join("nope.json");
        let msg = error_of(&missing);
        assert_contains(&msg, &["nope.json", "cannot read"]);
        std::fs::write(dir.join("notes.txt"), "hi").expect("write");
        assert_contains(&error_of(&dir), &["no trace files"]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn error_jsonl_line_numbers_in_generated_file() {
        let dir = scratch("lines");
        let path = dir.join("c.jsonl");
        let good = r#"{"id":"a","requests":[{"t":0,"in":1,"out":1}]}"#;
        let bad_value = r#"{"id":"b","requests":[{"t":0,"in":1,"out":1},{"t":-1,"in":1,"out":1}]}"#;
        std::fs::write(&path, format!("{good}\n{good}\n\n{bad_value}\n")).expect("write");
        let msg = error_of(&path);
        assert_contains(&msg, &["c.jsonl", "line 4, $.requests[1].t", "got -1"]);
        std::fs::remove_dir_all(&dir).ok();
    }
}
