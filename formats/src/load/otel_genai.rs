//! OpenTelemetry GenAI spans (`docs/formats/otel-genai.md`): an OTLP/JSON
//! trace export (`{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`,
//! one document, or one export request per line as the collector's file
//! exporter writes), whose spans follow the GenAI semantic conventions:
//! `gen_ai.operation.name` says what a span is (`invoke_agent`, `chat`,
//! `text_completion`, `generate_content`, `execute_tool`), `gen_ai.usage.*`
//! its tokens, `gen_ai.agent.*` its agent.
//!
//! Owns turning spans into trees. A trace is a tree; each `invoke_agent`
//! span an agent, whose parent is the nearest `invoke_agent` span above it
//! in the trace's parent spans (stated by the file); each model call span a
//! turn of the nearest agent above it; `execute_tool` spans between an
//! agent's turns make the next turn's input a tool result. Times are the
//! spans' own. The conventions carry no prefix signal and no text is read,
//! so turns have no block ids. Edges are derived from the times. Must not
//! touch other formats' rows or the engine's edge rule.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use arbor_engine::error::InputError;
use arbor_engine::model::{Agent, AgentKind, HashScope, InputKind, Tree, Turn};
use arbor_engine::time::{Nanos, MAX_SECONDS};

use super::fields::{show_number, Text, UnixNanos, MAX_NANOS};
use super::json::{self, Lines};
use super::sniff::TopKeys;
use super::source::Source;
use crate::input::{Loaded, Problem};

/// What an export is, in messages.
const EXPORT: &str = "an OTLP trace export (a JSON object with `resourceSpans`)";

/// The operations read as turns (model calls).
pub const TURN_OPERATIONS: [&str; 3] = ["chat", "text_completion", "generate_content"];

/// Does this start of a file look like an OTLP/JSON trace export? (Its
/// first object has `resourceSpans`.)
pub fn looks_like(text_prefix: &str) -> bool {
    TopKeys::of(text_prefix).has("resourceSpans")
}

#[derive(Deserialize)]
#[serde(expecting = "an OTLP trace export (a JSON object with `resourceSpans`)")]
struct RawExport<'a> {
    #[serde(rename = "resourceSpans", borrow)]
    resource_spans: Vec<RawResourceSpans<'a>>,
}

#[derive(Deserialize)]
#[serde(expecting = "resource spans (an object with `scopeSpans`)")]
struct RawResourceSpans<'a> {
    #[serde(rename = "scopeSpans", default, borrow)]
    scope_spans: Vec<RawScopeSpans<'a>>,
}

#[derive(Deserialize)]
#[serde(expecting = "scope spans (an object with `spans`)")]
struct RawScopeSpans<'a> {
    #[serde(default, borrow)]
    spans: Vec<RawSpan<'a>>,
}

#[derive(Deserialize)]
#[serde(
    expecting = "a span (an object with `traceId`, `spanId`, `startTimeUnixNano`, `endTimeUnixNano`)"
)]
struct RawSpan<'a> {
    #[serde(rename = "traceId")]
    trace_id: TraceId,
    #[serde(rename = "spanId")]
    span_id: SpanId,
    #[serde(rename = "parentSpanId", default)]
    parent_span_id: Option<ParentId>,
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(rename = "startTimeUnixNano")]
    start: UnixNanos,
    #[serde(rename = "endTimeUnixNano")]
    end: UnixNanos,
    #[serde(default, borrow)]
    attributes: Attributes<'a>,
}

/// A hex id of `N` bytes (OTLP/JSON writes ids as hex, not base64).
fn hex_id<E: de::Error>(v: &str, digits: usize, what: &str) -> Result<u128, E> {
    let valid = v.len() == digits && v.bytes().all(|b| b.is_ascii_hexdigit());
    match u128::from_str_radix(v, 16) {
        Ok(id) if valid => Ok(id),
        _ => Err(E::custom(format_args!(
            "expected {what} ({digits} hex digits), got \"{v}\""
        ))),
    }
}

/// `traceId`: 16 bytes as 32 hex digits.
struct TraceId(u128);

impl<'de> Deserialize<'de> for TraceId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TraceId;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a trace id (32 hex digits)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TraceId, E> {
                hex_id(v, 32, "a trace id").map(TraceId)
            }
        }
        d.deserialize_str(V)
    }
}

/// `spanId`: 8 bytes as 16 hex digits.
struct SpanId(u64);

impl<'de> Deserialize<'de> for SpanId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = SpanId;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a span id (16 hex digits)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SpanId, E> {
                hex_id(v, 16, "a span id").map(|id| SpanId(id as u64))
            }
        }
        d.deserialize_str(V)
    }
}

/// `parentSpanId`: a span id, or `""` for a root span.
struct ParentId(Option<u64>);

impl<'de> Deserialize<'de> for ParentId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ParentId;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a parent span id (16 hex digits, or \"\" for a root span)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ParentId, E> {
                if v.is_empty() {
                    return Ok(ParentId(None));
                }
                hex_id(v, 16, "a parent span id (or \"\" for a root span)")
                    .map(|id| ParentId(Some(id as u64)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One attribute, `{"key": K, "value": {"stringValue" | "intValue" | ...}}`.
#[derive(Deserialize)]
#[serde(expecting = "an attribute (an object with `key` and `value`)")]
struct KeyValue<'a> {
    #[serde(borrow)]
    key: Text<'a>,
    #[serde(default, borrow)]
    value: AnyValue<'a>,
}

/// An attribute's value; the kinds arbor reads no attribute as
/// (`arrayValue`, `kvlistValue`, `bytesValue`) are skipped.
#[derive(Deserialize, Default)]
#[serde(expecting = "an attribute value (an object such as {\"stringValue\": ...})")]
struct AnyValue<'a> {
    #[serde(rename = "stringValue", default, borrow)]
    string: Option<Text<'a>>,
    #[serde(rename = "intValue", default)]
    int: Option<IntValue>,
    #[serde(rename = "doubleValue", default)]
    double: Option<f64>,
}

/// `intValue`: a 64-bit integer, as a decimal string (proto3's JSON
/// mapping) or a number.
struct IntValue(i64);

impl<'de> Deserialize<'de> for IntValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IntValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an intValue (a decimal string or an integer)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntValue, E> {
                v.parse().map(IntValue).map_err(|_| {
                    E::custom(format_args!(
                        "expected an intValue (a decimal string or an integer), got \"{v}\""
                    ))
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntValue, E> {
                Ok(IntValue(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntValue, E> {
                i64::try_from(v).map(IntValue).map_err(|_| {
                    E::custom(format_args!(
                        "expected an intValue (a 64-bit integer), got {v}"
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// The attributes arbor reads, kept as they come (the others skipped).
#[derive(Default)]
struct Attributes<'a> {
    operation: Option<Cow<'a, str>>,
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    /// The pre-1.27 names, `gen_ai.usage.prompt_tokens` / `completion_tokens`.
    legacy_tokens: bool,
    request_model: Option<Cow<'a, str>>,
    response_model: Option<Cow<'a, str>>,
    agent_name: Option<Cow<'a, str>>,
    agent_id: Option<Cow<'a, str>>,
    conversation: Option<Cow<'a, str>>,
    /// `gen_ai.response.time_to_first_chunk`, ns.
    first_chunk: Option<Nanos>,
    failed: bool,
}

/// A token count attribute: an intValue in `0..=u32::MAX`.
fn tokens(value: &AnyValue, key: &str, index: usize) -> Result<u32, String> {
    let n = match (&value.int, value.double) {
        (Some(IntValue(n)), _) => Some(*n),
        (None, Some(d)) if d.fract() == 0.0 && d.abs() < 1e18 => Some(d as i64),
        _ => None,
    };
    n.and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
        format!(
            "attribute `{key}` (attributes[{index}]): expected a token count (an intValue in 0..=4294967295), got {}",
            shown(value)
        )
    })
}

/// A value in messages.
fn shown(value: &AnyValue) -> String {
    match (&value.string, &value.int, value.double) {
        (Some(Text(s)), _, _) => format!("stringValue \"{s}\""),
        (_, Some(IntValue(n)), _) => format!("intValue {n}"),
        (_, _, Some(d)) => format!("doubleValue {}", show_number(d)),
        _ => "another kind of value".to_string(),
    }
}

fn string<'a>(value: AnyValue<'a>, key: &str, index: usize) -> Result<Cow<'a, str>, String> {
    match value.string {
        Some(Text(s)) => Ok(s),
        None => Err(format!(
            "attribute `{key}` (attributes[{index}]): expected a stringValue, got {}",
            shown(&value)
        )),
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Attributes<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Attributes<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of attributes")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Attributes<'a>, A::Error> {
                let mut out = Attributes::default();
                let mut index = 0usize;
                while let Some(KeyValue {
                    key: Text(key),
                    value,
                }) = seq.next_element::<KeyValue<'a>>()?
                {
                    let i = index;
                    index += 1;
                    let Some(name) = key.strip_prefix("gen_ai.") else {
                        if key == "error.type" {
                            out.failed = true;
                        }
                        continue;
                    };
                    let read = match name {
                        "operation.name" => string(value, &key, i).map(|s| out.operation = Some(s)),
                        "usage.input_tokens" => {
                            tokens(&value, &key, i).map(|n| out.input_tokens = Some(n))
                        }
                        "usage.output_tokens" => {
                            tokens(&value, &key, i).map(|n| out.output_tokens = Some(n))
                        }
                        "usage.prompt_tokens" => tokens(&value, &key, i).map(|n| {
                            out.input_tokens.get_or_insert(n);
                            out.legacy_tokens = true;
                        }),
                        "usage.completion_tokens" => tokens(&value, &key, i).map(|n| {
                            out.output_tokens.get_or_insert(n);
                            out.legacy_tokens = true;
                        }),
                        "request.model" => {
                            string(value, &key, i).map(|s| out.request_model = Some(s))
                        }
                        "response.model" => {
                            string(value, &key, i).map(|s| out.response_model = Some(s))
                        }
                        "agent.name" => string(value, &key, i).map(|s| out.agent_name = Some(s)),
                        "agent.id" => string(value, &key, i).map(|s| out.agent_id = Some(s)),
                        "conversation.id" => {
                            string(value, &key, i).map(|s| out.conversation = Some(s))
                        }
                        "response.time_to_first_chunk" => {
                            let secs = value.double.or(value.int.as_ref().map(|n| n.0 as f64));
                            match secs.and_then(arbor_engine::time::secs_to_nanos) {
                                Some(ns) => {
                                    out.first_chunk = Some(ns);
                                    Ok(())
                                }
                                None => Err(format!(
                                    "attribute `{key}` (attributes[{i}]): expected seconds (a non-negative finite doubleValue), got {}",
                                    shown(&value)
                                )),
                            }
                        }
                        _ => Ok(()),
                    };
                    read.map_err(de::Error::custom)?;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// What a span is, by `gen_ai.operation.name`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Agent,
    Turn,
    Tool,
    /// Any other span (another operation, or none): only a link in the
    /// chain of parents.
    Other,
}

/// Where a span is: `(resource, scope, span)` indices, and its line (0
/// until known: the line of a JSON-lines export, or found in a whole
/// document when a message needs it).
#[derive(Clone, Copy)]
struct Place {
    line: usize,
    at: (u32, u32, u32),
}

impl Place {
    fn path(&self) -> String {
        let (r, s, k) = self.at;
        format!("$.resourceSpans[{r}].scopeSpans[{s}].spans[{k}]")
    }
}

/// One span as kept until its trace is built.
struct Span {
    trace: u128,
    id: u64,
    parent: Option<u64>,
    start: u64,
    end: u64,
    op: Op,
    /// An agent's name; a turn's model.
    label: Option<String>,
    /// A turn's conversation id.
    conversation: Option<String>,
    isl: u32,
    osl: u32,
    first_chunk: Option<Nanos>,
    place: Place,
}

/// What was counted while reading, for `inspect`.
#[derive(Default)]
struct Counts {
    failed_turns: usize,
    legacy_tokens: usize,
    other_operations: usize,
    tools: usize,
    orphan_parents: usize,
    empty_agents: usize,
    traces: usize,
    without_agents: usize,
    split_traces: usize,
    lines: usize,
}

impl Counts {
    /// Adds what another batch of lines counted while converting.
    fn add(&mut self, other: &Counts) {
        self.failed_turns += other.failed_turns;
        self.legacy_tokens += other.legacy_tokens;
        self.other_operations += other.other_operations;
        self.tools += other.tools;
        self.lines += other.lines;
    }
}

/// A fault of one span, before its line is known.
struct Pending {
    place: Place,
    suffix: &'static str,
    message: String,
}

/// The spans of one export request, converted; a fault names its span.
fn convert(
    export: RawExport,
    line: usize,
    spans: &mut Vec<Span>,
    counts: &mut Counts,
) -> Result<(), Pending> {
    for (r, resource) in export.resource_spans.into_iter().enumerate() {
        for (s, scope) in resource.scope_spans.into_iter().enumerate() {
            for (k, raw) in scope.spans.into_iter().enumerate() {
                let place = Place {
                    line,
                    at: (r as u32, s as u32, k as u32),
                };
                let fault = |suffix, message: String| Pending {
                    place,
                    suffix,
                    message,
                };
                let (start, end) = (raw.start.0, raw.end.0);
                if end < start {
                    return Err(fault(
                        ".endTimeUnixNano",
                        format!("{end} is before startTimeUnixNano {start}: expected a span to end after it starts"),
                    ));
                }
                let attrs = raw.attributes;
                let op = match attrs.operation.as_deref() {
                    Some("invoke_agent") => Op::Agent,
                    Some("execute_tool") => Op::Tool,
                    Some(op) if TURN_OPERATIONS.contains(&op) => Op::Turn,
                    Some(_) => {
                        counts.other_operations += 1;
                        Op::Other
                    }
                    None => Op::Other,
                };
                let mut span = Span {
                    trace: raw.trace_id.0,
                    id: raw.span_id.0,
                    parent: raw.parent_span_id.and_then(|p| p.0),
                    start,
                    end,
                    op,
                    label: None,
                    conversation: None,
                    isl: 0,
                    osl: 0,
                    first_chunk: None,
                    place,
                };
                match op {
                    Op::Agent => {
                        let name = attrs
                            .agent_name
                            .or(attrs.agent_id)
                            .or(raw.name.map(|Text(n)| n));
                        span.label = name.map(Cow::into_owned);
                    }
                    Op::Turn => {
                        let (Some(isl), Some(osl)) = (attrs.input_tokens, attrs.output_tokens)
                        else {
                            if attrs.failed {
                                counts.failed_turns += 1;
                                continue;
                            }
                            let missing = if attrs.input_tokens.is_none() {
                                "gen_ai.usage.input_tokens"
                            } else {
                                "gen_ai.usage.output_tokens"
                            };
                            return Err(fault(
                                ".attributes",
                                format!("no `{missing}` on a `{}` span: expected the model call's token counts (gen_ai.usage.input_tokens and gen_ai.usage.output_tokens)", attrs.operation.as_deref().unwrap_or_default()),
                            ));
                        };
                        if attrs.legacy_tokens {
                            counts.legacy_tokens += 1;
                        }
                        span.isl = isl;
                        span.osl = osl;
                        span.first_chunk = attrs.first_chunk;
                        span.label = attrs
                            .request_model
                            .or(attrs.response_model)
                            .map(Cow::into_owned);
                        span.conversation = attrs.conversation.map(Cow::into_owned);
                    }
                    Op::Tool => counts.tools += 1,
                    Op::Other => {}
                }
                spans.push(span);
            }
        }
    }
    Ok(())
}

/// A whole-document export, kept to find the line a span starts on when
/// a message or a tree's source names it: the document is read once more,
/// each span kept as raw text, on first need.
struct Document {
    text: String,
    lines: std::cell::OnceCell<Vec<Vec<Vec<usize>>>>,
}

#[derive(Deserialize)]
struct SkeletonExport<'a> {
    #[serde(rename = "resourceSpans", borrow)]
    resource_spans: Vec<SkeletonResource<'a>>,
}

#[derive(Deserialize)]
struct SkeletonResource<'a> {
    #[serde(rename = "scopeSpans", default, borrow)]
    scope_spans: Vec<SkeletonScope<'a>>,
}

#[derive(Deserialize)]
struct SkeletonScope<'a> {
    #[serde(default, borrow)]
    spans: Vec<&'a serde_json::value::RawValue>,
}

impl Document {
    fn new(text: String) -> Document {
        Document {
            text,
            lines: std::cell::OnceCell::new(),
        }
    }

    /// The line span `at` starts on.
    fn line_of(&self, at: (u32, u32, u32)) -> Option<usize> {
        let table = self.lines.get_or_init(|| self.line_table());
        let (r, s, k) = at;
        table
            .get(r as usize)?
            .get(s as usize)?
            .get(k as usize)
            .copied()
    }

    /// The line of every span, by resource, scope and span index.
    fn line_table(&self) -> Vec<Vec<Vec<usize>>> {
        let Ok(skeleton) = serde_json::from_str::<SkeletonExport>(&self.text) else {
            return Vec::new();
        };
        let base = self.text.as_ptr() as usize;
        let mut line = 1;
        let mut counted = 0;
        let mut line_at = |raw: &serde_json::value::RawValue| {
            let offset = (raw.get().as_ptr() as usize).saturating_sub(base);
            let gap = self.text.get(counted..offset).unwrap_or_default();
            line += gap.bytes().filter(|&b| b == b'\n').count();
            counted = counted.max(offset);
            line
        };
        skeleton
            .resource_spans
            .iter()
            .map(|r| {
                r.scope_spans
                    .iter()
                    .map(|s| s.spans.iter().map(|raw| line_at(raw)).collect())
                    .collect()
            })
            .collect()
    }
}

/// Names places in messages: `line N, $.resourceSpans[r]...`.
struct Places<'a> {
    file: &'a str,
    document: Option<&'a Document>,
}

impl Places<'_> {
    fn error(&self, place: Place, suffix: &str, message: impl Into<String>) -> InputError {
        let line = line_of(self, place);
        InputError::at(
            self.file,
            format!("line {line}, {}{suffix}", place.path()),
            message,
        )
    }
}

/// Reads one OTLP/JSON trace export: a whole document, or one export
/// request per line.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut lines = Lines::open(input.into(), EXPORT)?;
    let file = lines.file().to_string();
    let mut spans: Vec<Span> = Vec::new();
    let mut counts = Counts::default();

    let Some(first) = lines.next_line()? else {
        return Err(lines.empty(
            "an OTLP trace export (`{\"resourceSpans\": [...]}`, one document or one per line)",
        ));
    };
    let first = first.to_string();
    let first_line = lines.line();
    let parsed = json::parse::<RawExport>(&first, EXPORT);
    // One request per line when the first line is one (or is not an
    // object at all, which is refused on its line); else a document.
    let one_per_line = match &parsed {
        Ok(_) => true,
        Err(fault) => fault.complete || !first.trim_start().starts_with('{'),
    };
    let places_document;
    if one_per_line {
        counts.lines += 1;
        let export = parsed.map_err(|f| f.on_line(&file, first_line))?;
        convert(export, first_line, &mut spans, &mut counts)
            .map_err(|p| pending_error(&file, first_line, p))?;
        // The other lines in batches, parsed on all cores (lines are
        // independent until their traces are built).
        let mut batch: Vec<(usize, String)> = Vec::new();
        let mut batch_bytes = 0;
        loop {
            let next = lines.next_line()?.map(str::to_string);
            let more = next.is_some();
            if let Some(text) = next {
                batch_bytes += text.len();
                batch.push((lines.line(), text));
            }
            if !more || batch_bytes >= BATCH_BYTES {
                read_batch(&batch, &file, &mut spans, &mut counts)?;
                batch.clear();
                batch_bytes = 0;
            }
            if !more {
                break;
            }
        }
        places_document = None;
    } else {
        // One document over the file: read it whole, keeping line numbers.
        let mut text = "\n".repeat(first_line.saturating_sub(1));
        text.push_str(&first);
        let mut rest = String::new();
        lines.read_rest(&mut rest)?;
        if !rest.is_empty() {
            text.push('\n');
            text.push_str(&rest);
        }
        let document = Document::new(text);
        let export =
            json::parse::<RawExport>(&document.text, EXPORT).map_err(|f| f.in_file(&file, 0))?;
        if let Err(pending) = convert(export, 0, &mut spans, &mut counts) {
            let places = Places {
                file: &file,
                document: Some(&document),
            };
            return Err(places.error(pending.place, pending.suffix, pending.message));
        }
        counts.lines = 1;
        places_document = Some(document);
    }
    let places = Places {
        file: &file,
        document: places_document.as_ref(),
    };
    build(spans, &places, counts)
}

/// Export lines are parsed in batches of about this many bytes.
const BATCH_BYTES: usize = 16 << 20;

/// The spans of a batch of export lines, parsed and converted on up to
/// four threads, appended in line order; the first faulty line in file
/// order is the one reported, whatever order the threads finish in.
fn read_batch(
    batch: &[(usize, String)],
    file: &str,
    spans: &mut Vec<Span>,
    counts: &mut Counts,
) -> Result<(), InputError> {
    if batch.is_empty() {
        return Ok(());
    }
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
    let read = |chunk: &[(usize, String)]| -> (Vec<Span>, Counts, Option<InputError>) {
        let mut spans = Vec::new();
        let mut counts = Counts::default();
        for (line, text) in chunk {
            let converted = json::parse::<RawExport>(text, EXPORT)
                .map_err(|fault| fault.on_line(file, *line))
                .and_then(|export| {
                    convert(export, *line, &mut spans, &mut counts)
                        .map_err(|pending| pending_error(file, *line, pending))
                });
            counts.lines += 1;
            if let Err(e) = converted {
                return (spans, counts, Some(e));
            }
        }
        (spans, counts, None)
    };
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks[1..]
            .iter()
            .map(|&c| scope.spawn(move || read(c)))
            .collect();
        let mut all = vec![read(chunks[0])];
        for handle in handles {
            all.push(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        all
    });
    for (more, more_counts, error) in results {
        if let Some(e) = error {
            return Err(e);
        }
        spans.extend(more);
        counts.add(&more_counts);
    }
    Ok(())
}

fn pending_error(file: &str, line: usize, pending: Pending) -> InputError {
    Places {
        file,
        document: None,
    }
    .error(
        Place {
            line,
            ..pending.place
        },
        pending.suffix,
        pending.message,
    )
}

/// The trees of all spans read.
fn build(spans: Vec<Span>, places: &Places, mut counts: Counts) -> Result<Loaded, InputError> {
    let earliest = spans
        .iter()
        .filter(|s| s.op == Op::Turn)
        .map(|s| s.start)
        .min();
    let Some(earliest) = earliest else {
        let what = format!(
            "no model call among its {} spans: expected GenAI spans with `gen_ai.operation.name` chat, text_completion or generate_content and their `gen_ai.usage.*` token counts",
            spans.len()
        );
        return Err(match spans.first() {
            Some(first) => places.error(first.place, "", what),
            None => InputError::whole(places.file, format!("empty file: {what}")),
        });
    };
    // Traces in order of first appearance, spans in file order: a sort of
    // span indices by trace (no hashing on the hot path).
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].trace, i));
    let mut traces: Vec<(u128, Vec<usize>)> = Vec::new();
    for i in order {
        match traces.last_mut() {
            Some((trace, members)) if *trace == spans[i].trace => members.push(i),
            _ => traces.push((spans[i].trace, vec![i])),
        }
    }
    traces.sort_by_key(|(_, members)| members[0]);
    counts.traces = traces.len();
    let mut loaded = Loaded::default();
    let mut agents_read = 0usize;
    for (trace, members) in &traces {
        let trees = build_trace(*trace, members, &spans, places, &mut counts)?;
        if trees.len() > 1 {
            counts.split_traces += 1;
        }
        let many = trees.len() > 1;
        for (k, mut tree) in trees.into_iter().enumerate() {
            agents_read += tree.agents.len();
            tree.id = if many {
                format!("{trace:032x}#{}", k + 1)
            } else {
                format!("{trace:032x}")
            };
            let origin = tree.arrival;
            tree.arrival = origin - earliest;
            if tree.arrival > MAX_NANOS {
                return Err(places.error(
                    spans[members[0]].place,
                    ".startTimeUnixNano",
                    format!(
                        "the trace starts more than {} s after the file's first model call: expected the file's spans within that span",
                        show_number(MAX_SECONDS)
                    ),
                ));
            }
            loaded.trees.push(tree);
        }
    }
    // Stable: trees arriving together keep their order of appearance.
    loaded.trees.sort_by_key(|t| t.arrival);
    describe(&mut loaded, places.file, agents_read, &counts);
    Ok(loaded)
}

/// The trees of one trace: one per top-level `invoke_agent` span, and one
/// for model calls under no agent. Each tree's `arrival` is its first
/// turn's unix start (the caller rebases it). Spans are numbered locally
/// (their index in `members`, in file order).
fn build_trace(
    trace: u128,
    members: &[usize],
    spans: &[Span],
    places: &Places,
    counts: &mut Counts,
) -> Result<Vec<Tree>, InputError> {
    let n = members.len();
    let span = |local: usize| &spans[members[local]];
    // Span ids, sorted, to find a parent by id.
    let mut ids: Vec<(u64, usize)> = (0..n).map(|l| (span(l).id, l)).collect();
    ids.sort_unstable();
    for pair in ids.windows(2) {
        if let [(a, first), (b, second)] = pair {
            if a == b {
                let (first, second) = ((*first).min(*second), (*first).max(*second));
                return Err(places.error(
                    span(second).place,
                    ".spanId",
                    format!(
                        "span id {a:016x} appears twice in trace {trace:032x} (first on line {}, {}): expected each span once",
                        line_of(places, span(first).place),
                        span(first).place.path()
                    ),
                ));
            }
        }
    }
    let find = |id: u64| {
        ids.binary_search_by_key(&id, |&(id, _)| id)
            .ok()
            .map(|at| ids[at].1)
    };
    // Each span's parent in the trace; a parent not in the file leaves
    // the span at the top level.
    let mut parent_of: Vec<Option<usize>> = vec![None; n];
    for (l, slot) in parent_of.iter_mut().enumerate() {
        if let Some(parent) = span(l).parent {
            *slot = find(parent);
            if slot.is_none() {
                counts.orphan_parents += 1;
            }
        }
    }
    // A loop of parents: walk up from each span, each span walked once.
    const NEW: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; n];
    let mut path = Vec::new();
    for l in 0..n {
        let mut at = Some(l);
        while let Some(s) = at {
            match state[s] {
                DONE => break,
                ON_PATH => {
                    return Err(places.error(
                        span(s).place,
                        ".parentSpanId",
                        format!(
                        "span {:016x} is its own ancestor: expected parent spans to form a tree",
                        span(s).id
                    ),
                    ))
                }
                _ => {}
            }
            state[s] = ON_PATH;
            path.push(s);
            at = parent_of[s];
        }
        for s in path.drain(..) {
            state[s] = DONE;
        }
    }
    // The nearest invoke_agent span above each span (None: top level).
    let mut above: Vec<Option<Option<usize>>> = vec![None; n];
    let mut chain = Vec::new();
    for l in 0..n {
        let mut at = l;
        let found = loop {
            if let Some(known) = above[at] {
                break known;
            }
            chain.push(at);
            match parent_of[at] {
                None => break None,
                Some(p) if span(p).op == Op::Agent => break Some(p),
                Some(p) => at = p,
            }
        };
        // Every span of the chain has the same agent above it.
        for c in chain.drain(..) {
            above[c] = Some(found);
        }
    }
    // Members by the agent above them (slot `n`: none): child agents,
    // turns and tools, in start order.
    let slot = |l: usize| above[l].flatten().unwrap_or(n);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    let mut turns: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    let mut tools: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for l in 0..n {
        let list = match span(l).op {
            Op::Agent => &mut children,
            Op::Turn => &mut turns,
            Op::Tool => &mut tools,
            Op::Other => continue,
        };
        list[slot(l)].push(l);
    }
    for list in children.iter_mut().chain(&mut turns).chain(&mut tools) {
        // Stable: spans starting together keep file order.
        list.sort_by_key(|&l| span(l).start);
    }
    // Whether each agent's subtree holds a turn (turnless ones are left
    // out): children come after their parent in no particular order, so
    // settle them by an explicit post-order walk.
    let mut live: Vec<Option<bool>> = vec![None; n];
    let mut stack: Vec<(usize, bool)> = Vec::new();
    for &top in &children[n] {
        stack.push((top, false));
        while let Some((a, expanded)) = stack.pop() {
            if !expanded {
                stack.push((a, true));
                stack.extend(children[a].iter().map(|&c| (c, false)));
                continue;
            }
            let any = !turns[a].is_empty() || children[a].iter().any(|&c| live[c] == Some(true));
            live[a] = Some(any);
        }
    }
    counts.empty_agents += live.iter().filter(|&&l| l == Some(false)).count();

    let local = Local {
        members,
        spans,
        children: &children,
        turns: &turns,
        tools: &tools,
        live: &live,
    };
    let mut trees = Vec::new();
    for &top in &children[n] {
        if live[top] == Some(true) {
            trees.push(local.agent_tree(top, places)?);
        }
    }
    if let Some(&first) = turns[n].first() {
        // Model calls under no agent: one agent, the trace's own.
        let mut tree = Tree {
            source: format!(
                "{}:line {}",
                places.file,
                line_of(places, span(first).place)
            ),
            hash_scope: HashScope::Local,
            ..Tree::default()
        };
        let origin = span(first).start;
        let agent_turns = local.turns_of(&turns[n], &tools[n], origin, &mut tree.models, places)?;
        tree.agents.push(Agent {
            id: span(first)
                .conversation
                .clone()
                .unwrap_or_else(|| "trace".to_string()),
            parent: None,
            kind: AgentKind::Root,
            recorded_end: None,
            turns: agent_turns,
        });
        tree.arrival = origin;
        if children[n].is_empty() {
            counts.without_agents += 1;
        }
        trees.push(tree);
    }
    trees.sort_by_key(|t| t.arrival);
    Ok(trees)
}

/// One trace's spans, numbered locally, grouped by the agent above them.
struct Local<'a> {
    members: &'a [usize],
    spans: &'a [Span],
    children: &'a [Vec<usize>],
    turns: &'a [Vec<usize>],
    tools: &'a [Vec<usize>],
    live: &'a [Option<bool>],
}

impl Local<'_> {
    fn span(&self, local: usize) -> &Span {
        &self.spans[self.members[local]]
    }

    /// The tree of top-level agent `top`: its agents breadth first
    /// (children in start order), turnless ones left out.
    fn agent_tree(&self, top: usize, places: &Places) -> Result<Tree, InputError> {
        let mut order: Vec<(usize, Option<u32>)> = vec![(top, None)];
        let mut next = 0;
        while let Some(&(a, _)) = order.get(next) {
            for &c in &self.children[a] {
                if self.live[c] == Some(true) {
                    order.push((c, Some(next as u32)));
                }
            }
            next += 1;
        }
        let origin = order
            .iter()
            .flat_map(|&(a, _)| &self.turns[a])
            .map(|&t| self.span(t).start)
            .min()
            .unwrap_or(self.span(top).start);
        let mut tree = Tree {
            source: format!(
                "{}:line {}",
                places.file,
                line_of(places, self.span(top).place)
            ),
            hash_scope: HashScope::Local,
            arrival: origin,
            ..Tree::default()
        };
        let mut names: HashMap<String, usize> = HashMap::new();
        for (a, parent) in order {
            let agent_turns = self.turns_of(
                &self.turns[a],
                &self.tools[a],
                origin,
                &mut tree.models,
                places,
            )?;
            let (start, end) = (self.span(a).start, self.span(a).end);
            let kind = match parent.and_then(|p| tree.agents.get(p as usize)) {
                None => AgentKind::Root,
                // A parent turn starting while the child runs: the parent
                // did not wait for it.
                Some(pa)
                    if pa.turns.iter().any(|t| {
                        let at = t.start + origin;
                        at > start && at < end
                    }) =>
                {
                    AgentKind::Background
                }
                Some(_) => AgentKind::Blocking,
            };
            let base = self
                .span(a)
                .label
                .clone()
                .unwrap_or_else(|| format!("{:016x}", self.span(a).id));
            let seen = names.entry(base.clone()).or_insert(0);
            *seen += 1;
            let id = if *seen > 1 {
                format!("{base}#{seen}")
            } else {
                base
            };
            tree.agents.push(Agent {
                id,
                parent,
                kind,
                recorded_end: since(end, origin),
                turns: agent_turns,
            });
        }
        Ok(tree)
    }

    /// An agent's turns from its model-call spans (in start order); a turn
    /// after `execute_tool` spans that ran since the agent's previous turn
    /// started takes a tool result.
    fn turns_of(
        &self,
        calls: &[usize],
        tools: &[usize],
        origin: u64,
        models: &mut Vec<String>,
        places: &Places,
    ) -> Result<Vec<Turn>, InputError> {
        let mut out = Vec::with_capacity(calls.len());
        let mut previous_start: Option<u64> = None;
        for &c in calls {
            let span = self.span(c);
            let start = since(span.start, origin).ok_or_else(|| {
                places.error(
                    span.place,
                    ".startTimeUnixNano",
                    format!(
                        "more than {} s after its tree's first model call: expected a trace's spans within that span",
                        show_number(MAX_SECONDS)
                    ),
                )
            })?;
            let duration = span.end - span.start;
            if duration > MAX_NANOS {
                return Err(places.error(
                    span.place,
                    ".endTimeUnixNano",
                    format!(
                        "the span lasts past the largest time a trace may state ({} s): expected a shorter model call",
                        show_number(MAX_SECONDS)
                    ),
                ));
            }
            let after_tool = previous_start.is_some_and(|prev| {
                tools.iter().any(|&t| {
                    let tool = self.span(t);
                    tool.start >= prev && tool.end <= span.start
                })
            });
            let model =
                span.label
                    .as_deref()
                    .map(|name| match models.iter().position(|m| m == name) {
                        Some(i) => i as u16,
                        None => {
                            models.push(name.to_string());
                            (models.len() - 1) as u16
                        }
                    });
            out.push(Turn {
                start,
                duration: Some(duration),
                isl: span.isl,
                osl: span.osl,
                ttft: span.first_chunk,
                model,
                input_kind: if after_tool {
                    InputKind::ToolResult
                } else {
                    InputKind::Unknown
                },
                ..Turn::default()
            });
            previous_start = Some(span.start);
        }
        Ok(out)
    }
}

fn line_of(places: &Places, place: Place) -> usize {
    match (place.line, places.document) {
        (0, Some(doc)) => doc.line_of(place.at).unwrap_or(1),
        (line, _) => line,
    }
}

/// `at - origin`, when within the engine's time range.
fn since(at: u64, origin: u64) -> Option<Nanos> {
    at.checked_sub(origin).filter(|&n| n <= MAX_NANOS)
}

/// The conventions and problems `inspect` reports.
fn describe(loaded: &mut Loaded, file: &str, agents: usize, counts: &Counts) {
    let trees = loaded.trees.len();
    loaded.conventions.push(format!(
        "traces: {} in {trees} trees, {agents} agents (invoke_agent spans; parents from parent spans); spawn and join inferred from the times",
        counts.traces
    ));
    loaded.conventions.push(
        "turns: chat, text_completion and generate_content spans; times startTimeUnixNano/endTimeUnixNano; ttft gen_ai.response.time_to_first_chunk".to_string(),
    );
    loaded.conventions.push(
        "tokens: gen_ai.usage.input_tokens / output_tokens; no text and no block ids (no prefix sharing)".to_string(),
    );
    if counts.lines > 1 {
        loaded
            .conventions
            .push(format!("{} export requests, one per line", counts.lines));
    }
    if counts.tools > 0 {
        loaded.conventions.push(format!(
            "{} execute_tool spans: a turn after them takes a tool result (the gap is tool time)",
            counts.tools
        ));
    }
    if counts.without_agents > 0 {
        loaded.conventions.push(format!(
            "{} traces without invoke_agent spans: their model calls are one agent",
            counts.without_agents
        ));
    }
    if counts.split_traces > 0 {
        loaded.conventions.push(format!(
            "{} traces hold several top-level agents or model calls under no agent: one tree each (`TRACE#N`)",
            counts.split_traces
        ));
    }
    if counts.legacy_tokens > 0 {
        loaded.conventions.push(format!(
            "{} model calls count tokens with the older gen_ai.usage.prompt_tokens / completion_tokens",
            counts.legacy_tokens
        ));
    }
    let mut problem = |message: String| {
        loaded.problems.push(Problem {
            place: file.to_string(),
            message,
        })
    };
    if counts.failed_turns > 0 {
        problem(format!(
            "{} failed model calls (error.type, no token counts) left out",
            counts.failed_turns
        ));
    }
    if counts.orphan_parents > 0 {
        problem(format!(
            "{} spans name a parent span not in the file: read as top level",
            counts.orphan_parents
        ));
    }
    if counts.empty_agents > 0 {
        problem(format!(
            "{} invoke_agent spans hold no model call: left out",
            counts.empty_agents
        ));
    }
    if counts.other_operations > 0 {
        problem(format!(
            "{} spans of other GenAI operations (embeddings, retrieval, ...) are not turns",
            counts.other_operations
        ));
    }
}

/// A generated export of `traces` traces, one export request a line as the
/// collector's file exporter writes (for benches of load speed), with the
/// attributes instrumentations set: each trace an agent `coder` of four
/// model calls whose second starts two `delegate` tools at once, each
/// running a subagent of three model calls with tools between them.
pub fn generated(traces: usize) -> String {
    const BASE: u64 = 1_767_225_600_000_000_000;
    let mut text = String::with_capacity(traces * 20_000);
    for t in 0..traces as u64 {
        let trace = format!("{:032x}", 0x4bf9_2f35_77b3_4da6_u128 << 64 | u128::from(t));
        let t0 = BASE + t * 7_000_000_000;
        let ms = |at: u64| (t0 + at * 1_000_000).to_string();
        let mut spans: Vec<String> = Vec::new();
        let mut next_id = 0u64;
        let mut id = || {
            next_id += 1;
            format!("{:016x}", (t << 20) | next_id)
        };
        let attr_s =
            |k: &str, v: &str| format!("{{\"key\":\"{k}\",\"value\":{{\"stringValue\":\"{v}\"}}}}");
        let attr_i =
            |k: &str, v: u64| format!("{{\"key\":\"{k}\",\"value\":{{\"intValue\":\"{v}\"}}}}");
        let span = |id: &str,
                    parent: &str,
                    name: &str,
                    kind: u8,
                    start: u64,
                    end: u64,
                    attrs: Vec<String>| {
            format!(
                "{{\"traceId\":\"{trace}\",\"spanId\":\"{id}\",\"parentSpanId\":\"{parent}\",\"flags\":256,\"name\":\"{name}\",\"kind\":{kind},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":[{}],\"status\":{{}}}}",
                ms(start),
                ms(end),
                attrs.join(",")
            )
        };
        let chat = |id: &str, parent: &str, start: u64, end: u64, isl: u64, osl: u64| {
            span(id, parent, "chat gpt-4.1", 3, start, end, vec![
                attr_s("gen_ai.operation.name", "chat"),
                attr_s("gen_ai.provider.name", "openai"),
                attr_s("gen_ai.conversation.id", "conv_5j66UpCpwteGg4YSxUnt7lPY"),
                attr_s("gen_ai.request.model", "gpt-4.1"),
                "{\"key\":\"gen_ai.request.stream\",\"value\":{\"boolValue\":true}}".to_string(),
                attr_i("gen_ai.request.max_tokens", 4096),
                "{\"key\":\"gen_ai.request.temperature\",\"value\":{\"doubleValue\":0.2}}".to_string(),
                attr_s("gen_ai.response.model", "gpt-4.1-2025-04-14"),
                attr_s("gen_ai.response.id", "chatcmpl-Bq7xV5nYz2Kp9Lm3Qr8TsWu1"),
                "{\"key\":\"gen_ai.response.finish_reasons\",\"value\":{\"arrayValue\":{\"values\":[{\"stringValue\":\"tool_calls\"}]}}}".to_string(),
                "{\"key\":\"gen_ai.response.time_to_first_chunk\",\"value\":{\"doubleValue\":0.412}}".to_string(),
                attr_i("gen_ai.usage.input_tokens", isl),
                attr_i("gen_ai.usage.output_tokens", osl),
                attr_i("gen_ai.usage.cache_read.input_tokens", isl / 2),
                attr_s("server.address", "api.openai.com"),
                attr_i("server.port", 443),
            ])
        };
        let tool = |id: &str, parent: &str, name: &str, start: u64, end: u64| {
            span(
                id,
                parent,
                &format!("execute_tool {name}"),
                1,
                start,
                end,
                vec![
                    attr_s("gen_ai.operation.name", "execute_tool"),
                    attr_s("gen_ai.tool.name", name),
                    attr_s("gen_ai.tool.call.id", "call_VSPygqKTWdrhaFErNvMV18Yl"),
                    attr_s("gen_ai.tool.type", "function"),
                ],
            )
        };
        let agent = |id: &str, parent: &str, name: &str, start: u64, end: u64| {
            span(
                id,
                parent,
                &format!("invoke_agent {name}"),
                1,
                start,
                end,
                vec![
                    attr_s("gen_ai.operation.name", "invoke_agent"),
                    attr_s("gen_ai.provider.name", "openai"),
                    attr_s("gen_ai.agent.name", name),
                    attr_s("gen_ai.agent.id", "asst_5j66UpCpwteGg4YSxUnt7lPY"),
                    attr_s("gen_ai.conversation.id", "conv_5j66UpCpwteGg4YSxUnt7lPY"),
                    attr_s("gen_ai.request.model", "gpt-4.1"),
                ],
            )
        };
        let root = id();
        for (k, (start, end)) in [(0, 2000), (3000, 4800), (20_000, 22_500), (26_000, 29_000)]
            .into_iter()
            .enumerate()
        {
            spans.push(chat(&id(), &root, start, end, 3000 + 1500 * k as u64, 200));
        }
        spans.push(tool(&id(), &root, "read_file", 2100, 2900));
        spans.push(tool(&id(), &root, "run_tests", 23_000, 25_900));
        for (c, name) in ["researcher", "tester"].into_iter().enumerate() {
            let c = c as u64;
            let delegate = id();
            let child = id();
            spans.push(tool(&delegate, &root, "delegate", 4900 + c * 100, 19_000));
            spans.push(agent(&child, &delegate, name, 5000 + c * 100, 18_500));
            for k in 0..3u64 {
                let at = 5100 + c * 100 + k * 4000;
                spans.push(chat(&id(), &child, at, at + 2500, 2000 + 1000 * k, 150));
                if k < 2 {
                    spans.push(tool(&id(), &child, "web_search", at + 2600, at + 3900));
                }
            }
        }
        spans.push(agent(&root, "", "coder", 0, 29_500));
        text.push_str(&format!(
            "{{\"resourceSpans\":[{{\"resource\":{{\"attributes\":[{},{}]}},\"scopeSpans\":[{{\"scope\":{{\"name\":\"opentelemetry.instrumentation.openai_agents\",\"version\":\"0.1.0\"}},\"spans\":[{}]}}]}}]}}\n",
            attr_s("service.name", "coder-agent"),
            attr_s("telemetry.sdk.language", "python"),
            spans.join(",")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{scratch_file, testdata};
    use super::super::{load_path, Format};
    use super::*;
    use arbor_engine::derive::{derive_edges, DeriveOptions};
    use arbor_engine::model::{Anchor, Edge, EdgeKind};

    const MS: Nanos = 1_000_000;
    const T1: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const T2: &str = "5b8efff798038103d269b633813fc60c";

    fn sample(name: &str) -> Loaded {
        load_path(&testdata("otel-genai").join(name), None).expect("the fixture loads")
    }

    #[test]
    fn both_forms_are_detected_by_content() {
        assert_eq!(sample("sample.json").format, Some(Format::OtelGenai));
        assert_eq!(sample("sample.jsonl").format, Some(Format::OtelGenai));
    }

    /// An agent as the tests compare it: id, parent, kind, turns, end.
    type AgentShape = (String, Option<u32>, AgentKind, usize, Option<Nanos>);

    #[test]
    fn a_trace_is_a_tree_and_invoke_agent_spans_its_agents() {
        let loaded = sample("sample.json");
        let shape: Vec<(String, Nanos, Vec<AgentShape>)> = loaded
            .trees
            .iter()
            .map(|t| {
                let agents = t
                    .agents
                    .iter()
                    .map(|a| {
                        (
                            a.id.clone(),
                            a.parent,
                            a.kind,
                            a.turns.len(),
                            a.recorded_end,
                        )
                    })
                    .collect();
                (t.id.clone(), t.arrival, agents)
            })
            .collect();
        let agent = |id: &str, parent, kind, turns, end| (id.to_string(), parent, kind, turns, end);
        assert_eq!(
            shape,
            vec![
                (
                    T1.to_string(),
                    0,
                    vec![
                        agent("coder", None, AgentKind::Root, 4, Some(29_500 * MS)),
                        agent(
                            "researcher",
                            Some(0),
                            AgentKind::Blocking,
                            3,
                            Some(15_800 * MS)
                        ),
                    ]
                ),
                (
                    T2.to_string(),
                    39_900 * MS,
                    vec![agent("conv_02", None, AgentKind::Root, 2, None)]
                ),
            ]
        );
        // Parents come from the file: nothing inferred, no block ids.
        for tree in &loaded.trees {
            assert!(tree.provenance.is_empty());
            assert!(tree.explicit_edges.is_none());
            assert!(tree
                .agents
                .iter()
                .flat_map(|a| &a.turns)
                .all(|t| t.hash_ids.is_empty() && t.text.is_none()));
        }
        assert_eq!(loaded.trees[0].models, vec!["gpt-4.1".to_string()]);
        assert_eq!(
            loaded.trees[1].models,
            vec!["claude-sonnet-4-5".to_string()]
        );
    }

    #[test]
    fn model_calls_keep_their_times_tokens_and_the_tools_before_them() {
        let loaded = sample("sample.json");
        // (start ms, duration ms, isl, osl, ttft ms, input)
        type Shape = (Nanos, Nanos, u32, u32, Nanos, InputKind);
        let turns = |tree: usize, agent: usize| -> Vec<Shape> {
            loaded.trees[tree].agents[agent]
                .turns
                .iter()
                .map(|t| {
                    (
                        t.start / MS,
                        t.duration.expect("known") / MS,
                        t.isl,
                        t.osl,
                        t.ttft.expect("known") / MS,
                        t.input_kind,
                    )
                })
                .collect()
        };
        let (none, tool) = (InputKind::Unknown, InputKind::ToolResult);
        assert_eq!(
            turns(0, 0),
            vec![
                (0, 2_000, 1_200, 80, 350, none),
                (2_500, 2_000, 2_100, 60, 410, tool),
                (16_000, 2_900, 2_600, 200, 440, tool),
                (25_000, 4_400, 3_300, 150, 480, tool),
            ]
        );
        assert_eq!(
            turns(0, 1),
            vec![
                (4_900, 1_500, 900, 40, 300, none),
                (9_600, 2_300, 2_600, 120, 520, tool),
                (13_000, 2_700, 4_100, 300, 610, tool),
            ]
        );
        assert_eq!(
            turns(1, 0),
            vec![
                (0, 1_200, 500, 40, 620, none),
                (1_500, 1_500, 800, 90, 580, none)
            ]
        );
        let sum = |f: fn(&Turn) -> u32| -> u32 {
            loaded
                .trees
                .iter()
                .flat_map(|t| &t.agents)
                .flat_map(|a| &a.turns)
                .map(f)
                .sum()
        };
        assert_eq!((sum(|t| t.isl), sum(|t| t.osl)), (18_100, 1_080));
    }

    #[test]
    fn the_subagent_is_spawned_after_the_delegating_turn_and_joined_at_the_next() {
        let loaded = sample("sample.json");
        let (edges, _) = derive_edges(&loaded.trees[0], &DeriveOptions::default());
        let mut crossing: Vec<Edge> = edges
            .into_iter()
            .filter(|e| e.kind != EdgeKind::Sequence)
            .collect();
        crossing.sort();
        // Flat turns: coder 0..=3, researcher 4..=6.
        let edge = |from, to, gap_ms: Nanos, kind| Edge {
            from,
            to,
            anchor: Anchor::End,
            gap: gap_ms * MS,
            kind,
        };
        assert_eq!(
            crossing,
            vec![
                // coder's second call ends at 4.5 s; researcher's first at 4.9 s.
                edge(1, 4, 400, EdgeKind::Spawn),
                // researcher's last call ends at 15.7 s; coder's third is at 16.0 s.
                edge(6, 2, 300, EdgeKind::Join),
            ]
        );
    }

    #[test]
    fn the_file_exporters_lines_read_as_the_document() {
        let strip = |mut l: Loaded| {
            for t in &mut l.trees {
                t.source.clear();
            }
            l.trees
        };
        let lines = sample("sample.jsonl");
        assert!(lines
            .conventions
            .iter()
            .any(|c| c == "3 export requests, one per line"));
        assert_eq!(strip(lines), strip(sample("sample.json")));
    }

    #[test]
    fn tree_sources_name_the_line_of_the_top_span() {
        let loaded = sample("sample.json");
        let file = testdata("otel-genai").join("sample.json");
        let text = std::fs::read_to_string(&file).expect("read");
        // The coder's invoke_agent span and trace 2's first chat span.
        let line_of = |needle: &str| {
            let at = text.find(needle).expect("in the fixture");
            let open = text[..at].rfind('{').expect("its object");
            text[..open].matches('\n').count() + 1
        };
        assert_eq!(
            loaded.trees[0].source,
            format!(
                "{}:line {}",
                file.display(),
                line_of("\"spanId\": \"a000000000000001\"")
            )
        );
        assert_eq!(
            loaded.trees[1].source,
            format!(
                "{}:line {}",
                file.display(),
                line_of("\"spanId\": \"e000000000000001\"")
            )
        );
    }

    #[test]
    fn a_trace_without_agent_spans_and_tools_are_named() {
        let loaded = sample("sample.json");
        for needle in [
            "traces: 2 in 2 trees, 3 agents",
            "1 traces without invoke_agent spans: their model calls are one agent",
            "5 execute_tool spans",
        ] {
            assert!(
                loaded.conventions.iter().any(|c| c.starts_with(needle)),
                "{needle}: {:?}",
                loaded.conventions
            );
        }
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    }

    #[test]
    fn a_generated_trace_loads_to_its_stated_shape() {
        let path = scratch_file("otel-gen", generated(30).as_bytes());
        let loaded = load_path(&path, None);
        std::fs::remove_file(&path).ok();
        let loaded = loaded.expect("the generated trace loads");
        assert_eq!(loaded.format, Some(Format::OtelGenai));
        assert_eq!(loaded.trees.len(), 30);
        assert!(loaded
            .trees
            .iter()
            .all(|t| t.agents.len() == 3 && t.turn_count() == 10));
    }

    /// Every leaf of every export line of the fixture replaced, in turn,
    /// by a hostile value: each file loads or is refused, never a panic.
    #[test]
    fn never_panics_on_any_field_value() {
        use serde_json::Value;
        fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::Object(map) => map
                    .iter()
                    .for_each(|(k, v)| leaves(v, format!("{at}/{k}"), out)),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .for_each(|(i, v)| leaves(v, format!("{at}/{i}"), out)),
                _ => out.push(at),
            }
        }
        let text =
            std::fs::read_to_string(testdata("otel-genai").join("sample.jsonl")).expect("read");
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let nasties = [
            serde_json::json!(null),
            serde_json::json!(-1),
            serde_json::json!("18446744073709551615"),
            serde_json::json!(1e300),
            serde_json::json!(u64::MAX),
            serde_json::json!("a000000000000001"),
            serde_json::json!([]),
        ];
        let path = super::super::test_support::scratch_path("otel-nasty", ".jsonl");
        let mut loads = 0;
        for (i, row) in rows.iter().enumerate() {
            let mut paths = Vec::new();
            leaves(row, String::new(), &mut paths);
            for leaf in paths {
                for nasty in &nasties {
                    let mut changed = rows.clone();
                    if let Some(slot) = changed[i].pointer_mut(&leaf) {
                        *slot = nasty.clone();
                    }
                    let body: String = changed.iter().map(|r| format!("{r}\n")).collect();
                    std::fs::write(&path, body).expect("write");
                    let _ = load_path(&path, Some(Format::OtelGenai));
                    loads += 1;
                }
            }
        }
        std::fs::remove_file(&path).ok();
        assert!(loads > 1000, "only {loads} variants");
    }
}
