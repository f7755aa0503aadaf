//! Field types every reader shares: values that deserialize straight into
//! what the model holds (integer nanoseconds, token counts, block ids,
//! chat messages) and reject anything else with the wording arbor uses
//! for a bad value everywhere: "expected WHAT, got VALUE".
//!
//! Owns the field types (and the token estimate for formats that record
//! text only); which fields a record has is each format's.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::{Serialize, Serializer};

use serde_json::value::RawValue;

use super::tools::{arguments_text, RawToolCall};
use arbor_engine::model::{
    BlockIds, BlockIdsBuilder, InputKind, Message, Role, ToolCall, ToolPart, ToolResult,
};
use arbor_engine::time::{millis_to_nanos, secs_to_nanos, Nanos, MAX_SECONDS, NANOS_PER_SEC};

/// The largest time a trace may state, in nanoseconds (every format).
pub(super) const MAX_NANOS: Nanos = (MAX_SECONDS as u64) * NANOS_PER_SEC;

/// A number as shown in a message: integers without a fraction, others as
/// written, huge or tiny ones in exponent form.
pub(super) fn show_number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.is_finite() && v.abs() < 1e15 && v.abs() >= 1e-6 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// Tokens estimated from text when a format records none: one token per
/// four bytes, rounded up (the usual rule of thumb for English and code).
pub fn estimate_tokens(text: &str) -> u32 {
    tokens_for_bytes(text.len())
}

/// [`estimate_tokens`] for a text of `bytes` bytes, without the text.
pub(super) fn tokens_for_bytes(bytes: usize) -> u32 {
    bytes.div_ceil(4).min(u32::MAX as usize) as u32
}

/// The bad-value message: `expected WHAT, got VALUE`.
fn bad_value<E: de::Error>(what: impl fmt::Display, got: impl fmt::Display) -> E {
    E::custom(format_args!("expected {what}, got {got}"))
}

/// An integer in `0..=max` (integral floats such as `512.0` too), named
/// `what` in messages.
struct Integer {
    what: &'static str,
    max: u64,
}

impl Visitor<'_> for Integer {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if v <= self.max {
            Ok(v)
        } else {
            Err(bad_value(self.what, v))
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(bad_value(self.what, v)),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v.fract() == 0.0 && (0.0..=self.max as f64).contains(&v) {
            Ok(v as u64)
        } else {
            Err(bad_value(self.what, show_number(v)))
        }
    }
}

fn integer<'de, D: Deserializer<'de>>(d: D, what: &'static str, max: u64) -> Result<u64, D::Error> {
    d.deserialize_u64(Integer { what, max })
}

/// A non-negative integer that fits in `u32` (a token count, an index);
/// integral floats such as `512.0` are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Count(pub(super) u32);

const COUNT: &str = "a non-negative integer of at most 4294967295";

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        integer(d, COUNT, u32::MAX.into()).map(|v| Count(v as u32))
    }
}

impl Serialize for Count {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.0)
    }
}

/// One hash id (u32).
struct HashId(u32);

impl<'de> Deserialize<'de> for HashId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let what = "a hash id (an integer in 0..=4294967295)";
        integer(d, what, u32::MAX.into()).map(|v| HashId(v as u32))
    }
}

/// `hash_ids`, read straight into runs of consecutive ids (no per-id
/// allocation: a turn's ids are a few runs, see [`BlockIds`]).
#[derive(Debug, Default)]
pub(super) struct HashIds {
    pub(super) ids: BlockIds,
    pub(super) has_zero: bool,
}

impl<'de> Deserialize<'de> for HashIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HashIds;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of hash ids")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HashIds, A::Error> {
                let mut builder = BlockIdsBuilder::default();
                let mut has_zero = false;
                while let Some(HashId(id)) = seq.next_element()? {
                    has_zero |= id == 0;
                    builder.push(id);
                }
                Ok(HashIds {
                    ids: builder.finish(),
                    has_zero,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

impl Serialize for HashIds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.ids.iter())
    }
}

/// A time as a non-negative finite number of `unit`s, converted to
/// nanoseconds (at most [`MAX_SECONDS`]) while deserializing.
struct TimeVisitor {
    unit: &'static str,
    max: f64,
    convert: fn(f64) -> Option<Nanos>,
}

impl TimeVisitor {
    const SECONDS: TimeVisitor = TimeVisitor {
        unit: "seconds",
        max: MAX_SECONDS,
        convert: secs_to_nanos,
    };
    const MILLIS: TimeVisitor = TimeVisitor {
        unit: "milliseconds",
        max: MAX_SECONDS * 1000.0,
        convert: millis_to_nanos,
    };

    fn check<E: de::Error>(&self, v: f64, shown: impl fmt::Display) -> Result<Nanos, E> {
        (self.convert)(v).ok_or_else(|| {
            bad_value(
                format_args!(
                    "a non-negative finite number of {} (at most {})",
                    self.unit,
                    show_number(self.max)
                ),
                shown,
            )
        })
    }
}

impl Visitor<'_> for TimeVisitor {
    type Value = Nanos;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a non-negative finite number of {}", self.unit)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Nanos, E> {
        self.check(v, show_number(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Nanos, E> {
        self.check(v as f64, v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Nanos, E> {
        self.check(v as f64, v)
    }
}

/// A time in seconds, as nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Secs(pub(super) Nanos);

impl<'de> Deserialize<'de> for Secs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_f64(TimeVisitor::SECONDS).map(Secs)
    }
}

/// A time in milliseconds, as nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Millis(pub(super) Nanos);

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_f64(TimeVisitor::MILLIS).map(Millis)
    }
}

/// A time in whole nanoseconds, at most [`MAX_NANOS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Ns(pub(super) Nanos);

impl<'de> Deserialize<'de> for Ns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let what = "a non-negative integer number of nanoseconds (at most 1000000000000000000)";
        integer(d, what, MAX_NANOS).map(Ns)
    }
}

impl Serialize for Ns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// A non-negative finite number of seconds as written (unix times, whose
/// reader converts them from their decimal form).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct UnixSecs(pub(super) f64);

impl<'de> Deserialize<'de> for UnixSecs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const WHAT: &str = "a non-negative finite number of seconds";
        impl Visitor<'_> for V {
            type Value = UnixSecs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(WHAT)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<UnixSecs, E> {
                if v.is_finite() && v >= 0.0 {
                    Ok(UnixSecs(v))
                } else {
                    Err(bad_value(WHAT, show_number(v)))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<UnixSecs, E> {
                self.visit_f64(v as f64)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<UnixSecs, E> {
                self.visit_f64(v as f64)
            }
        }
        d.deserialize_f64(V)
    }
}

/// The latest unix time accepted, in microseconds (1e10 s, year 2286):
/// anything later is corrupt input.
pub(super) const MAX_UNIX_MICROS: u64 = 10_000_000_000_000_000;

/// Unix time in whole microseconds.
pub(super) struct UnixMicros(pub(super) u64);

impl<'de> Deserialize<'de> for UnixMicros {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let what = "a unix time in whole microseconds (at most 10000000000000000, year 2286)";
        integer(d, what, MAX_UNIX_MICROS).map(UnixMicros)
    }
}

/// An id that may be a string or an integer (`session_id`, `request_id`),
/// kept as text: `7` and `"7"` are the same id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Id(pub(super) String);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an id (a string or an integer)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Id, E> {
                Ok(Id(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A non-empty string id.
pub(super) struct NonEmpty(pub(super) String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let id = String::deserialize(d)?;
        if id.is_empty() {
            return Err(bad_value("a non-empty string", "\"\""));
        }
        Ok(NonEmpty(id))
    }
}

/// A string, borrowed from the input unless it had escapes.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// `input_types`, reduced to the two flags that decide [`InputKind`].
pub(super) struct InputTypes {
    text: bool,
    tool_result: bool,
}

impl InputTypes {
    pub(super) fn kind(&self) -> InputKind {
        match (self.text, self.tool_result) {
            (false, true) => InputKind::ToolResult,
            (true, false) => InputKind::UserText,
            _ => InputKind::Unknown,
        }
    }
}

impl<'de> Deserialize<'de> for InputTypes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        enum Tag {
            Text,
            ToolResult,
            Other,
        }
        impl<'de> Deserialize<'de> for Tag {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct TagV;
                impl Visitor<'_> for TagV {
                    type Value = Tag;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("an input type string")
                    }
                    fn visit_str<E>(self, v: &str) -> Result<Tag, E> {
                        Ok(match v {
                            "text" => Tag::Text,
                            "tool_result" => Tag::ToolResult,
                            _ => Tag::Other,
                        })
                    }
                }
                d.deserialize_str(TagV)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InputTypes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of input type strings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<InputTypes, A::Error> {
                let mut types = InputTypes {
                    text: false,
                    tool_result: false,
                };
                while let Some(tag) = seq.next_element::<Tag>()? {
                    match tag {
                        Tag::Text => types.text = true,
                        Tag::ToolResult => types.tool_result = true,
                        Tag::Other => {}
                    }
                }
                Ok(types)
            }
        }
        d.deserialize_seq(V)
    }
}

/// A chat role, parsed with [`Role::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RoleName(pub(super) Role);

const ROLE: &str = "a role name (system, developer, user, assistant, tool or function)";

impl<'de> Deserialize<'de> for RoleName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RoleName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(ROLE)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RoleName, E> {
                Role::parse(v)
                    .map(RoleName)
                    .ok_or_else(|| bad_value(ROLE, format_args!("`{v}`")))
            }
        }
        d.deserialize_str(V)
    }
}

/// One chat message as the text formats record it: `role` and `content`,
/// and the tool parts chat records beside them (an assistant's
/// `tool_calls`, a tool message's `tool_call_id` and `name`).
#[derive(serde::Deserialize)]
#[serde(expecting = "a message object (`role`, `content`)")]
pub(super) struct RawMessage {
    pub(super) role: RoleName,
    #[serde(default)]
    pub(super) content: Content,
    #[serde(default)]
    tool_calls: Option<Vec<RawToolCall>>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

impl RawMessage {
    /// The message in the model's form, added to `out`. A Messages user
    /// message's `tool_result` blocks become tool messages, one a block,
    /// in order, followed by a user message of its text when it has any
    /// (so a message of tool results alone is tool messages only).
    /// `tool_use` blocks and `tool_calls` are the message's calls.
    pub(super) fn into_messages(self, out: &mut Vec<Message>) {
        let Content {
            text,
            mut calls,
            results,
            ..
        } = self.content;
        let had_results = !results.is_empty();
        for (call_id, content) in results {
            out.push(Message {
                role: Role::Tool,
                content,
                tool: Some(Box::new(ToolPart::Result(ToolResult {
                    call_id,
                    name: None,
                }))),
            });
        }
        calls.extend(
            self.tool_calls
                .into_iter()
                .flatten()
                .map(RawToolCall::into_call),
        );
        let role = self.role.0;
        if had_results && role == Role::User && text.is_empty() && calls.is_empty() {
            return;
        }
        let tool = if !calls.is_empty() {
            Some(Box::new(ToolPart::Calls(calls)))
        } else {
            match (role, self.tool_call_id) {
                (Role::Tool, Some(call_id)) => Some(Box::new(ToolPart::Result(ToolResult {
                    call_id,
                    name: self.name,
                }))),
                _ => None,
            }
        };
        out.push(Message {
            role,
            content: text,
            tool,
        });
    }
}

/// Message content: a string, `null` (empty), or an array of parts whose
/// `{"type": "text", "text": ...}` parts are joined with a newline (as
/// vLLM does). Anthropic Messages blocks: a `tool_use` block is a tool
/// call (its `input` kept as JSON text); a `tool_result` block is a
/// result (its own `content`, a string or text blocks, as text). Other
/// parts (images, audio, thinking) are dropped and counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Content {
    pub(super) text: String,
    /// Non-text parts dropped.
    pub(super) dropped: u32,
    /// `tool_use` blocks, in order.
    pub(super) calls: Vec<ToolCall>,
    /// `tool_result` blocks: the `tool_use_id` and the text, in order.
    pub(super) results: Vec<(String, String)>,
}

impl Content {
    /// Whether it held Anthropic tool blocks (so was a Messages body's).
    pub(super) fn has_tool_blocks(&self) -> bool {
        !self.calls.is_empty() || !self.results.is_empty()
    }
}

#[derive(serde::Deserialize)]
#[serde(expecting = "a content part object (`type`, and `text` for text parts)")]
struct RawPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    /// A `tool_use` block's id, tool name and arguments.
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Box<RawValue>>,
    /// A `tool_result` block's call and content.
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    content: Option<Content>,
}

/// What one part is.
enum Part {
    Text(String),
    Call(ToolCall),
    Result(String, String),
    Dropped,
}

impl RawPart {
    /// What the part is; `dropped` counts the parts dropped inside a
    /// `tool_result`.
    fn into_part(self, dropped: &mut u32) -> Result<Part, &'static str> {
        match self.kind.as_str() {
            "text" => self
                .text
                .map(Part::Text)
                .ok_or("missing field `text`: expected it in a part of type `text`"),
            "tool_use" => Ok(Part::Call(ToolCall {
                id: self.id.unwrap_or_default(),
                name: self.name.unwrap_or_default(),
                arguments: self
                    .input
                    .map(|input| arguments_text(&input))
                    .unwrap_or_default(),
            })),
            "tool_result" => {
                let content = self.content.unwrap_or_default();
                *dropped += content.dropped;
                Ok(Part::Result(
                    self.tool_use_id.unwrap_or_default(),
                    content.text,
                ))
            }
            _ => Ok(Part::Dropped),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content (a string, or an array of content parts)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content {
                    text: v.to_owned(),
                    ..Content::default()
                })
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content {
                    text: v,
                    ..Content::default()
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut out = Content::default();
                let mut first = true;
                while let Some(part) = seq.next_element::<RawPart>()? {
                    match part
                        .into_part(&mut out.dropped)
                        .map_err(de::Error::custom)?
                    {
                        Part::Text(text) => {
                            if !first {
                                out.text.push('\n');
                            }
                            out.text.push_str(&text);
                            first = false;
                        }
                        Part::Call(call) => out.calls.push(call),
                        Part::Result(id, text) => out.results.push((id, text)),
                        Part::Dropped => out.dropped += 1,
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

/// The latest unix time accepted, in nanoseconds (1e10 s, year 2286), as
/// [`MAX_UNIX_MICROS`].
pub(super) const MAX_UNIX_NANOS: u64 = MAX_UNIX_MICROS * 1000;

/// A unix time in whole nanoseconds as OTLP/JSON writes its `fixed64`
/// times: a decimal string (proto3's JSON mapping of 64-bit integers) or a
/// plain integer, which receivers must accept too.
pub(super) struct UnixNanos(pub(super) u64);

const UNIX_NANOS: &str =
    "a unix time in nanoseconds (a decimal string or an integer, at most 10000000000000000000, year 2286)";

impl<'de> Deserialize<'de> for UnixNanos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = UnixNanos;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(UNIX_NANOS)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<UnixNanos, E> {
                let digits =
                    !v.is_empty() && v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit());
                match v.parse::<u64>() {
                    Ok(n) if digits => self.visit_u64(n),
                    _ => Err(bad_value(UNIX_NANOS, format_args!("\"{v}\""))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<UnixNanos, E> {
                if v <= MAX_UNIX_NANOS {
                    Ok(UnixNanos(v))
                } else {
                    Err(bad_value(UNIX_NANOS, v))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<UnixNanos, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(bad_value(UNIX_NANOS, v)),
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<UnixNanos, E> {
                if v.fract() == 0.0 && (0.0..=MAX_UNIX_NANOS as f64).contains(&v) {
                    Ok(UnixNanos(v as u64))
                } else {
                    Err(bad_value(UNIX_NANOS, show_number(v)))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// An RFC 3339 date and time (`2026-06-01T05:40:20.151Z`, or with an
/// offset `+02:00`; `T`, `t` or a space between date and time; up to nine
/// digits of fraction), as unix nanoseconds. Times before 1970 or after
/// 2286 are refused.
pub(super) struct Rfc3339(pub(super) u64);

const RFC3339: &str =
    "an RFC 3339 time such as \"2026-06-01T05:40:20.151Z\" (UTC `Z` or an offset like `+02:00`)";

impl Rfc3339 {
    /// Unix nanoseconds of `text`, `None` unless it is RFC 3339 within
    /// 1970..=2286.
    pub(super) fn parse(text: &str) -> Option<u64> {
        let b = text.as_bytes();
        let num = |from: usize, len: usize| -> Option<u64> {
            let part = b.get(from..from + len)?;
            part.iter().try_fold(0u64, |n, &c| {
                c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
            })
        };
        let at = |i: usize, c: u8| b.get(i) == Some(&c);
        let separators = at(4, b'-')
            && at(7, b'-')
            && matches!(b.get(10), Some(b'T' | b't' | b' '))
            && at(13, b':')
            && at(16, b':');
        if !separators {
            return None;
        }
        let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
        let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
        // 60: a leap second, read as the next second's start.
        if !(1..=12).contains(&month) || hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days_in_month = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if day == 0 || day > days_in_month {
            return None;
        }
        let mut i = 19;
        let mut fraction = 0u64;
        if at(i, b'.') {
            i += 1;
            let digits = b
                .get(i..)?
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if digits == 0 || digits > 9 {
                return None;
            }
            fraction = num(i, digits)? * 10u64.pow(9 - digits as u32);
            i += digits;
        }
        let offset_secs: i64 = match b.get(i..)? {
            [b'Z' | b'z'] => 0,
            [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
                let (h, m) = (num(i + 1, 2)?, num(i + 4, 2)?);
                if h > 23 || m > 59 {
                    return None;
                }
                let secs = (h * 3600 + m * 60) as i64;
                if *sign == b'-' {
                    -secs
                } else {
                    secs
                }
            }
            _ => return None,
        };
        // Days from 1970-01-01 to the date (the proleptic Gregorian
        // calendar's civil-from-days inverse, eras of 400 years).
        let (y, m) = if month <= 2 {
            (year as i64 - 1, month + 9)
        } else {
            (year as i64, month - 3)
        };
        let era = y.div_euclid(400);
        let year_of_era = y - era * 400;
        let day_of_year = (153 * m as i64 + 2) / 5 + day as i64 - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        let days = era * 146_097 + day_of_era - 719_468;
        let secs = days * 86_400 + (hour * 3600 + minute * 60 + second) as i64 - offset_secs;
        let secs = u64::try_from(secs).ok()?;
        let nanos = secs.checked_mul(NANOS_PER_SEC)?.checked_add(fraction)?;
        (nanos <= MAX_UNIX_NANOS).then_some(nanos)
    }
}

impl<'de> Deserialize<'de> for Rfc3339 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Rfc3339;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(RFC3339)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Rfc3339, E> {
                Rfc3339::parse(v)
                    .map(Rfc3339)
                    .ok_or_else(|| bad_value(RFC3339, format_args!("\"{v}\"")))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod time_tests {
    use super::*;

    #[test]
    fn rfc3339_times_are_unix_nanoseconds() {
        let at = |t: &str| Rfc3339::parse(t);
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(0));
        // `date -u -d 2026-06-01T05:40:20.151Z +%s.%N`
        assert_eq!(
            at("2026-06-01T05:40:20.151Z"),
            Some(1_780_292_420_151_000_000)
        );
        assert_eq!(
            at("2026-06-01T07:40:20.151+02:00"),
            at("2026-06-01T05:40:20.151Z")
        );
        assert_eq!(
            at("2026-05-31T23:40:20.151-06:00"),
            at("2026-06-01T05:40:20.151Z")
        );
        assert_eq!(
            at("2024-02-29 12:00:00.123456789z"),
            Some(1_709_208_000_123_456_789)
        );
        for bad in [
            "",
            "2026-06-01",
            "2026-06-01T05:40:20",
            "2026-06-01T05:40:20.Z",
            "2026-06-01T05:40:20.1234567891Z",
            "2026-13-01T05:40:20Z",
            "2025-02-29T05:40:20Z",
            "2026-06-01T24:00:00Z",
            "1969-12-31T23:59:59Z",
            "2026-06-01T05:40:20+0200",
            "2026-06-01T05:40:20Z ",
            "९९९९-06-01T05:40:20Z",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn unix_nanos_read_strings_and_integers() {
        let read = |j: &str| serde_json::from_str::<UnixNanos>(j).map(|n| n.0);
        assert_eq!(
            read("\"1544712660000000000\"").ok(),
            Some(1_544_712_660_000_000_000)
        );
        assert_eq!(
            read("1544712660000000000").ok(),
            Some(1_544_712_660_000_000_000)
        );
        for bad in [
            "\"-1\"",
            "\"1e18\"",
            "\"\"",
            "-5",
            "\"99999999999999999999\"",
            "1.5",
        ] {
            let err = read(bad).expect_err(bad).to_string();
            assert!(
                err.contains("expected a unix time in nanoseconds"),
                "{bad}: {err}"
            );
        }
    }
}
