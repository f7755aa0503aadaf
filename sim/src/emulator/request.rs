//! Reading a request body (OpenAI chat or completions, Anthropic
//! Messages): the fields the emulator honours, the prompt's token count and
//! its cache block keys.
//!
//! Prompt tokens are counted by `tokens.rs` over the prompt text, in the
//! order and pieces `arbor_engine::shape::walk` gives the plan: the tool
//! definitions (each tool's name, description and schema's JSON text),
//! then every message's content (string content, or the `text` of each
//! content part, and a Messages `tool_result` block's `content`) and its
//! tool calls (each call's name and arguments: chat's `tool_calls`, a
//! Messages `tool_use` block's `name` and `input` text) for chat and
//! Messages, with a Messages body's `system` read first as a system
//! message and each `tool_result` block as a tool message of its own (so
//! a turn sent either way has the same cache blocks), or `prompt` for
//! completions (a prompt given as token ids counts one token per id).
//! Roles count for the cache key but not for tokens.
//!
//! Under `--profile` the same walk also feeds the server model's block
//! keys (`crate::server::keys::TextKeys`, in the profile's `block_size`
//! tokens): the framing (each chat or Messages message's role and `\n`
//! before its content, `\n` after) names blocks, the text is cut into
//! tokens by the estimate, a completion prompt's token ids are four other
//! bytes each. [`model_request_of`] is that reading for a whole body (the
//! keys the plan must predict; `proptests`' `prefix_keys`).
//!
//! A body the emulator cannot read is a [`BadRequest`]: the server answers
//! 400 with its message.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::answer::AnswerBase;
use super::cache::{BlockHasher, HasherMark};
use super::config::DEFAULT_MAX_TOKENS;
use super::responses;
use super::tokens::{TextTokenizer, TokenCount};
use crate::server::keys::TextKeys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Chat,
    Completions,
    /// Anthropic's Messages API.
    Messages,
    /// OpenAI's Responses API (`super::responses`).
    Responses,
}

impl Endpoint {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
            Endpoint::Messages => "/v1/messages",
            Endpoint::Responses => "/v1/responses",
        }
    }
}

/// What the emulator takes from a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub model: Option<String>,
    pub max_tokens: u32,
    pub stream: bool,
    pub include_usage: bool,
    pub prompt_tokens: u32,
    /// How the prompt was counted: the tokens of a cached prefix.
    pub counted: TokenCount,
    pub blocks: Vec<u64>,
    /// The server model's block keys (under a profile; else empty).
    pub model_blocks: Vec<u64>,
    /// Where the keys of "prompt + answer" start (`answer.rs`).
    pub answer: AnswerBase,
    /// The body's `user` (chat, completions, Responses) or
    /// `metadata.user_id` (Messages): what a router may route by.
    pub user: Option<String>,
}

#[derive(Deserialize)]
struct RawRequest<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    messages: Option<Vec<RawMessage<'a>>>,
    /// Messages: the system prompt (a string or text blocks).
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
    #[serde(borrow, default)]
    prompt: Option<&'a RawValue>,
    /// Responses: the system prompt and the items.
    #[serde(borrow, default)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    max_output_tokens: Option<i64>,
    /// Tool definitions (chat's `function` objects, or Messages' own).
    #[serde(borrow, default)]
    tools: Option<Vec<RawTool<'a>>>,
    #[serde(default)]
    max_tokens: Option<i64>,
    #[serde(default)]
    max_completion_tokens: Option<i64>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    /// Who the request is for (OpenAI's end-user id).
    #[serde(borrow, default)]
    user: Option<&'a RawValue>,
    /// Messages: `metadata.user_id`.
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Metadata<'a> {
    #[serde(borrow, default)]
    user_id: Option<&'a RawValue>,
}

/// The `user` of a request to `endpoint`: the body's `user`, or for
/// Messages `metadata.user_id`, when it is a string (anything else is
/// ignored, not refused).
fn user_field(
    endpoint: Endpoint,
    user: Option<&RawValue>,
    metadata: Option<&RawValue>,
) -> Option<String> {
    let raw = match endpoint {
        Endpoint::Messages => {
            let m: Metadata = serde_json::from_str(metadata?.get()).ok()?;
            m.user_id?
        }
        _ => user?,
    };
    serde_json::from_str::<String>(raw.get()).ok()
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    /// A chat assistant's calls.
    #[serde(borrow, default)]
    tool_calls: Option<Vec<RawCall<'a>>>,
}

#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// A content part (chat) or block (Messages): its `text`, a
/// `tool_result` block's own `content`, a `tool_use` block's `name` and
/// `input`.
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

impl Part<'_> {
    fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }
}

/// A tool definition: chat's `{"function": {...}}` or Messages' own.
#[derive(Deserialize)]
struct RawTool<'a> {
    #[serde(borrow, default)]
    function: Option<RawFunction<'a>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    description: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input_schema: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    description: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parameters: Option<&'a RawValue>,
}

/// One of a chat assistant's `tool_calls`.
#[derive(Deserialize)]
struct RawCall<'a> {
    #[serde(borrow, default)]
    function: Option<RawCalled<'a>>,
}

#[derive(Deserialize)]
struct RawCalled<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    /// A string of JSON text (or a JSON value).
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

struct Prompt<'t> {
    hasher: BlockHasher,
    tokens: TokenCount,
    /// Counts the text instead of the estimate, when given.
    tokenizer: Option<&'t dyn TextTokenizer>,
    /// The server model's keys, under a profile.
    model_keys: Option<TextKeys>,
    /// The hasher just before the last message's closing `\n`.
    last_close: Option<HasherMark>,
}

impl Prompt<'_> {
    fn text(&mut self, s: &str) {
        self.hasher.update(s.as_bytes());
        self.tokens.text_with(s, self.tokenizer);
        if let Some(keys) = &mut self.model_keys {
            keys.text(s);
        }
    }

    /// Framing: hashed into the blocks, no token.
    fn frame(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        if let Some(keys) = &mut self.model_keys {
            keys.frame(bytes);
        }
    }

    /// The `\n` that ends a message.
    fn close(&mut self) {
        self.last_close = Some(self.hasher.mark());
        self.frame(b"\n");
    }

    /// Bytes counted at four to a token.
    fn other(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.tokens.bytes(bytes.len() as u64);
        if let Some(keys) = &mut self.model_keys {
            keys.other(bytes);
        }
    }

    /// Adds the JSON string `json` (quotes and escapes included).
    fn json_string(&mut self, json: &str) -> Result<(), BadRequest> {
        let s: Text = serde_json::from_str(json).map_err(bad)?;
        self.text(&s.0);
        Ok(())
    }
}

/// A Responses request's walk (`super::responses`) feeds the same prompt.
impl responses::Walk for Prompt<'_> {
    type Error = BadRequest;
    fn frame(&mut self, bytes: &[u8]) {
        Prompt::frame(self, bytes);
    }
    fn close(&mut self) {
        Prompt::close(self);
    }
    fn text(&mut self, text: &str) {
        Prompt::text(self, text);
    }
    fn json_string(&mut self, json: &str) -> Result<(), BadRequest> {
        Prompt::json_string(self, json)
    }
    fn content(&mut self, raw: &RawValue) -> Result<(), BadRequest> {
        content(raw, self)
    }
    fn bad(&self, what: String) -> BadRequest {
        BadRequest::Body(what)
    }
}

/// Why a request body is refused; the emulator answers 400 with this
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadRequest {
    /// Not JSON, or not the shape the endpoint reads.
    #[error("invalid request body: {0}")]
    Body(String),
    /// The body could not be read (too large, or the connection failed).
    #[error("could not read the request body: {0}")]
    Unreadable(String),
    /// A token count below 1 or above `u32::MAX`.
    #[error("`{field}` must be at least 1, got {value}")]
    Count { field: &'static str, value: i64 },
}

fn bad(what: impl std::fmt::Display) -> BadRequest {
    BadRequest::Body(what.to_string())
}

fn content(raw: &RawValue, prompt: &mut Prompt) -> Result<(), BadRequest> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => prompt.json_string(text)?,
        Some(b'[') => {
            let parts: Vec<Part> = serde_json::from_str(text).map_err(bad)?;
            for p in &parts {
                if let Some(text) = p.text.as_deref() {
                    prompt.text(text);
                }
                if let Some(inner) = p.content {
                    content(inner, prompt)?;
                }
            }
        }
        Some(b'n') => {}
        _ => {
            return Err(bad(
                "a message content must be a string, an array of parts or null",
            ))
        }
    }
    Ok(())
}

/// The tool definitions: `tools` `\n`, then each tool's name,
/// description and schema text, each followed by `\n`
/// (`arbor_engine::shape::walk`'s order).
fn tools(tools: &[RawTool<'_>], prompt: &mut Prompt) {
    prompt.frame(b"tools\n");
    for tool in tools {
        let (name, description, schema) = match &tool.function {
            Some(f) => (f.name.as_deref(), f.description.as_deref(), f.parameters),
            None => (
                tool.name.as_deref(),
                tool.description.as_deref(),
                tool.input_schema,
            ),
        };
        for piece in [name, description, schema.map(RawValue::get)]
            .into_iter()
            .flatten()
        {
            prompt.text(piece);
            prompt.frame(b"\n");
        }
    }
}

/// One message: its role and `\n`, its content, each tool call (`\n`,
/// the name, the arguments' text), `\n`. A Messages message's
/// `tool_result` blocks are each a `tool` message first, then its text
/// blocks (if any has text) the message itself, as arbor reads a
/// recorded Messages body into its model.
fn message(m: &RawMessage<'_>, endpoint: Endpoint, prompt: &mut Prompt) -> Result<(), BadRequest> {
    let role = m.role.as_deref().unwrap_or("");
    let parts: Option<Vec<Part>> = match m.content {
        Some(c) if c.get().starts_with('[') => Some(serde_json::from_str(c.get()).map_err(bad)?),
        _ => None,
    };
    let results = parts
        .iter()
        .flatten()
        .filter(|p| p.is("tool_result"))
        .count();
    if endpoint == Endpoint::Messages && results > 0 {
        for part in parts.iter().flatten().filter(|p| p.is("tool_result")) {
            prompt.frame(b"tool\n");
            if let Some(inner) = part.content {
                content(inner, prompt)?;
            }
            prompt.close();
        }
        let has_text = parts
            .iter()
            .flatten()
            .any(|p| !p.is("tool_result") && p.text.as_deref().is_some_and(|t| !t.is_empty()));
        if !has_text {
            return Ok(());
        }
    }
    prompt.frame(role.as_bytes());
    prompt.frame(b"\n");
    match (&parts, m.content) {
        (Some(parts), _) => {
            for p in parts.iter().filter(|p| !p.is("tool_result")) {
                if let Some(text) = p.text.as_deref() {
                    prompt.text(text);
                }
                if let Some(inner) = p.content {
                    content(inner, prompt)?;
                }
            }
        }
        (None, Some(c)) => content(c, prompt)?,
        (None, None) => {}
    }
    for p in parts.iter().flatten().filter(|p| p.is("tool_use")) {
        prompt.frame(b"\n");
        prompt.text(p.name.as_deref().unwrap_or(""));
        prompt.text(p.input.map_or("", RawValue::get));
    }
    for call in m.tool_calls.iter().flatten() {
        let Some(f) = &call.function else { continue };
        prompt.frame(b"\n");
        prompt.text(f.name.as_deref().unwrap_or(""));
        if let Some(arguments) = f.arguments {
            match arguments.get().starts_with('"') {
                true => prompt.json_string(arguments.get())?,
                false => prompt.text(arguments.get()),
            }
        }
    }
    prompt.close();
    Ok(())
}

fn completion_prompt(raw: &RawValue, prompt: &mut Prompt) -> Result<(), BadRequest> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => prompt.json_string(text)?,
        Some(b'[') => {
            if let Ok(ids) = serde_json::from_str::<Vec<u32>>(text) {
                for id in ids {
                    prompt.other(&id.to_le_bytes());
                }
            } else {
                let mut texts: Vec<Text> = serde_json::from_str(text).map_err(|_| {
                    bad("`prompt` must be a string, an array of one string, or an array of token ids")
                })?;
                if texts.len() != 1 {
                    return Err(bad(
                        "batched prompts (more than one string) are not supported",
                    ));
                }
                let s = texts.pop().expect("one prompt");
                prompt.text(&s.0);
            }
        }
        _ => return Err(bad("`prompt` must be a string or an array")),
    }
    Ok(())
}

fn count(field: &'static str, value: i64) -> Result<u32, BadRequest> {
    u32::try_from(value)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or(BadRequest::Count { field, value })
}

/// Reads `body`; prompt text is counted with `tokenizer` when given; the
/// server model's block keys are computed in `model_block_size`-token
/// blocks when given (under a profile).
pub(crate) fn parse(
    endpoint: Endpoint,
    body: &[u8],
    tokenizer: Option<&dyn TextTokenizer>,
    model_block_size: Option<u32>,
) -> Result<Parsed, BadRequest> {
    let raw: RawRequest = serde_json::from_slice(body).map_err(bad)?;
    let mut prompt = Prompt {
        hasher: BlockHasher::new(),
        tokens: TokenCount::default(),
        tokenizer,
        model_keys: model_block_size.map(TextKeys::new),
        last_close: None,
    };
    match endpoint {
        Endpoint::Chat | Endpoint::Messages => {
            let messages = raw
                .messages
                .as_ref()
                .ok_or_else(|| bad("`messages` is required"))?;
            if let Some(tools) = raw.tools.as_deref().filter(|t| !t.is_empty()) {
                self::tools(tools, &mut prompt);
            }
            if let Some(system) = raw.system.filter(|_| endpoint == Endpoint::Messages) {
                prompt.frame(b"system\n");
                content(system, &mut prompt)?;
                prompt.close();
            }
            for m in messages {
                message(m, endpoint, &mut prompt)?;
            }
        }
        Endpoint::Completions => {
            let p = raw.prompt.ok_or_else(|| bad("`prompt` is required"))?;
            completion_prompt(p, &mut prompt)?;
        }
        Endpoint::Responses => responses::prompt(raw.instructions, raw.input, &mut prompt)?,
    }
    let max_tokens = match (
        raw.max_output_tokens,
        raw.max_completion_tokens,
        raw.max_tokens,
    ) {
        (Some(v), _, _) if endpoint == Endpoint::Responses => count("max_output_tokens", v)?,
        (_, Some(v), _) => count("max_completion_tokens", v)?,
        (_, None, Some(v)) => count("max_tokens", v)?,
        _ => DEFAULT_MAX_TOKENS,
    };
    let prompt_tokens = prompt.tokens.tokens();
    let end = prompt.hasher.mark();
    let answer = match endpoint {
        Endpoint::Completions => AnswerBase {
            appended: Some(end),
            after: None,
        },
        _ => AnswerBase {
            appended: prompt.last_close,
            after: prompt.last_close.map(|_| end),
        },
    };
    let user = user_field(endpoint, raw.user, raw.metadata);
    Ok(Parsed {
        model: raw.model.map(Cow::into_owned),
        max_tokens,
        stream: raw.stream.unwrap_or(false),
        // A Responses stream always ends with its usage.
        include_usage: endpoint == Endpoint::Responses
            || raw
                .stream_options
                .and_then(|o| o.include_usage)
                .unwrap_or(false),
        prompt_tokens,
        counted: prompt.tokens,
        blocks: prompt.hasher.finish(),
        model_blocks: prompt.model_keys.map(TextKeys::finish).unwrap_or_default(),
        answer,
        user,
    })
}

/// Only the fields that name who a request is for.
#[derive(Deserialize)]
struct RawUser<'a> {
    #[serde(borrow, default)]
    user: Option<&'a RawValue>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
}

/// The body's `user` (chat, completions, Responses) or
/// `metadata.user_id` (Messages), read without the rest: what a router
/// routes by. None: absent, or a body that is not JSON.
pub(crate) fn user_of(endpoint: Endpoint, body: &[u8]) -> Option<String> {
    let raw: RawUser = serde_json::from_slice(body).ok()?;
    user_field(endpoint, raw.user, raw.metadata)
}

/// What the emulator under a profile of `block_size`-token blocks submits
/// to its model for `body` sent to `path` (`/v1/chat/completions`,
/// `/v1/completions`, `/v1/messages` or `/v1/responses`): the prompt's
/// tokens by the estimate and its block keys. None: another path, or a
/// body it refuses.
pub fn model_request_of(path: &str, body: &[u8], block_size: u32) -> Option<(u32, Vec<u64>)> {
    let endpoint = [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Messages,
        Endpoint::Responses,
    ]
    .into_iter()
    .find(|e| e.path() == path)?;
    let parsed = parse(endpoint, body, None, Some(block_size)).ok()?;
    Some((parsed.prompt_tokens, parsed.model_blocks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulator::cache::BLOCK_BYTES;

    /// Parses with the estimate (no tokenizer).
    fn parse(endpoint: Endpoint, body: &[u8]) -> Result<Parsed, BadRequest> {
        super::parse(endpoint, body, None, None)
    }

    #[test]
    fn chat_fields() {
        let body = br#"{"model":"m","messages":[{"role":"system","content":"abcde"},
            {"role":"user","content":[{"type":"text","text":"fgh"},{"type":"image_url","image_url":{}}]},
            {"role":"assistant","content":null,"tool_calls":[]}],
            "max_tokens":5,"max_completion_tokens":7,"stream":true,
            "stream_options":{"include_usage":true},"ignore_eos":true}"#;
        let p = parse(Endpoint::Chat, body).unwrap();
        assert_eq!(p.model.as_deref(), Some("m"));
        assert_eq!(p.max_tokens, 7);
        assert!(p.stream && p.include_usage);
        assert_eq!(p.prompt_tokens, 2); // 8 bytes
    }

    #[test]
    fn escapes_count_decoded_bytes_and_defaults_apply() {
        let p = parse(
            Endpoint::Chat,
            br#"{"messages":[{"role":"user","content":"a\nb\u00e9"}]}"#,
        )
        .unwrap();
        assert_eq!(p.prompt_tokens, 2); // 5 bytes
        assert_eq!(p.max_tokens, DEFAULT_MAX_TOKENS);
        assert!(!p.stream && !p.include_usage && p.model.is_none());
    }

    #[test]
    fn completion_prompts() {
        let p = parse(
            Endpoint::Completions,
            br#"{"prompt":"abcdefgh","max_tokens":3}"#,
        )
        .unwrap();
        assert_eq!((p.prompt_tokens, p.max_tokens), (2, 3));
        let p = parse(Endpoint::Completions, br#"{"prompt":[1,2,3]}"#).unwrap();
        assert_eq!(p.prompt_tokens, 3);
        let p = parse(Endpoint::Completions, br#"{"prompt":["abcd"]}"#).unwrap();
        assert_eq!(p.prompt_tokens, 1);
        assert!(parse(Endpoint::Completions, br#"{"prompt":["a","b"]}"#).is_err());
        assert!(parse(Endpoint::Completions, br#"{"max_tokens":3}"#).is_err());
    }

    #[test]
    fn bad_bodies() {
        assert!(parse(Endpoint::Chat, b"{").is_err());
        assert!(parse(Endpoint::Chat, br#"{"prompt":"x"}"#).is_err());
        assert!(parse(Endpoint::Chat, br#"{"messages":[],"max_tokens":0}"#).is_err());
        assert!(parse(
            Endpoint::Chat,
            br#"{"messages":[{"role":"user","content":5}]}"#
        )
        .is_err());
    }

    #[test]
    fn messages_bodies_count_system_and_blocks() {
        let body = br#"{"model":"m","max_tokens":5,"stream":true,
            "system":[{"type":"text","text":"abcd"}],
            "messages":[{"role":"user","content":"efgh"},
            {"role":"assistant","content":[{"type":"text","text":"ijkl"},{"type":"tool_use","id":"t","name":"f","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"mnop"}]},
              {"type":"tool_result","tool_use_id":"u","content":"qrst"}]}]}"#;
        let p = parse(Endpoint::Messages, body).unwrap();
        // 20 bytes of text, and the tool_use's name and input (3 bytes).
        assert_eq!((p.prompt_tokens, p.max_tokens), (6, 5));
        assert!(p.stream);
        // The same turn as chat (system as a message) has the same blocks.
        let long = "x".repeat(700);
        let messages =
            format!(r#"{{"system":"{long}","messages":[{{"role":"user","content":"{long}"}}]}}"#);
        let chat = format!(
            r#"{{"messages":[{{"role":"system","content":"{long}"}},{{"role":"user","content":"{long}"}}]}}"#
        );
        let pm = parse(Endpoint::Messages, messages.as_bytes()).unwrap();
        let pc = parse(Endpoint::Chat, chat.as_bytes()).unwrap();
        assert_eq!(pm.blocks, pc.blocks);
        assert_eq!(pm.prompt_tokens, pc.prompt_tokens);
    }

    /// A turn sent as a Responses body counts and keys as the same turn
    /// sent as chat: instructions are the system message, items messages.
    #[test]
    fn a_responses_body_counts_and_keys_as_its_chat_body() {
        let long = "y".repeat(700);
        let responses = format!(
            r#"{{"instructions":"{long}","max_output_tokens":4,"stream":true,"input":[
            {{"role":"user","content":"{long}"}},
            {{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"ok"}}]}},
            {{"type":"reasoning","summary":[]}},
            {{"type":"function_call","name":"f","arguments":"{{}}","call_id":"c"}},
            {{"type":"function_call_output","call_id":"c","output":"done"}}]}}"#
        );
        let chat = format!(
            r#"{{"messages":[{{"role":"system","content":"{long}"}},{{"role":"user","content":"{long}"}},
            {{"role":"assistant","content":"ok"}},{{"role":"assistant","content":"f {{}}"}},
            {{"role":"tool","content":"done"}}]}}"#
        );
        let pr = parse(Endpoint::Responses, responses.as_bytes()).unwrap();
        let pc = parse(Endpoint::Chat, chat.as_bytes()).unwrap();
        assert_eq!(pr.blocks, pc.blocks);
        assert_eq!(pr.prompt_tokens, pc.prompt_tokens);
        assert_eq!(pr.max_tokens, 4);
        assert!(pr.stream && pr.include_usage);
        let plain = parse(Endpoint::Responses, br#"{"input":"abcdefgh"}"#).unwrap();
        assert_eq!(plain.prompt_tokens, 2);
        assert!(parse(Endpoint::Responses, br#"{"messages":[]}"#).is_err());
        assert!(parse(Endpoint::Responses, br#"{"input":5}"#).is_err());
    }

    /// Leading keys of `next` found among `known`.
    fn leading_hits(next: &Parsed, known: &[u64]) -> usize {
        next.blocks.iter().take_while(|k| known.contains(k)).count()
    }

    /// The keys of "prompt + answer" are the keys of a next turn that
    /// re-sends the answer, appended to the last message (a synthesized
    /// prompt) or as an assistant message (recorded messages), and for a
    /// completion prompt; without the answer the next turn shares only
    /// the prompt's full blocks.
    #[test]
    fn prompt_and_answer_keys_prefix_the_next_turn() {
        let answer = responses::text(40); // 270 bytes
        let words = " the of and".repeat(60); // 660 bytes
        let more = " between".repeat(100);
        let cases = [
            (
                Endpoint::Chat,
                serde_json::json!({"messages": [{"role": "user", "content": words}]}),
                serde_json::json!({"messages": [{"role": "user", "content": format!("{words}{answer}{more}")}]}),
                serde_json::json!({"messages": [{"role": "user", "content": format!("{words}{more}")}]}),
                5 + 660 + 270,
            ),
            (
                Endpoint::Chat,
                serde_json::json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": words}]}),
                serde_json::json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": words},
                    {"role": "assistant", "content": answer}, {"role": "user", "content": more}]}),
                serde_json::json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": words},
                    {"role": "assistant", "content": "other"}, {"role": "user", "content": more}]}),
                9 + 666 + 10 + 271,
            ),
            (
                Endpoint::Messages,
                serde_json::json!({"max_tokens": 4, "messages": [{"role": "user", "content": words}]}),
                serde_json::json!({"max_tokens": 4, "messages": [{"role": "user", "content": words},
                    {"role": "assistant", "content": [{"type": "text", "text": answer}]},
                    {"role": "user", "content": more}]}),
                serde_json::json!({"max_tokens": 4, "messages": [{"role": "user", "content": words},
                    {"role": "user", "content": more}]}),
                666 + 10 + 271,
            ),
            (
                Endpoint::Completions,
                serde_json::json!({"prompt": words}),
                serde_json::json!({"prompt": format!("{words}{answer}{more}")}),
                serde_json::json!({"prompt": format!("{words}{more}")}),
                660 + 270,
            ),
        ];
        for (endpoint, first, next, without, shared_bytes) in cases {
            let first = parse(endpoint, first.to_string().as_bytes()).unwrap();
            let mut known = first.blocks.clone();
            known.extend(first.answer.blocks(&answer));
            let next = parse(endpoint, next.to_string().as_bytes()).unwrap();
            assert_eq!(
                leading_hits(&next, &known),
                shared_bytes / BLOCK_BYTES,
                "{endpoint:?}"
            );
            let without = parse(endpoint, without.to_string().as_bytes()).unwrap();
            assert!(leading_hits(&without, &known) <= first.blocks.len());
        }
    }

    #[test]
    fn same_prefix_same_blocks() {
        let long = "x".repeat(1000);
        let a = format!(r#"{{"messages":[{{"role":"user","content":"{long}"}}]}}"#);
        let b = format!(
            r#"{{"messages":[{{"role":"user","content":"{long}"}},{{"role":"assistant","content":"{long}"}}]}}"#
        );
        let pa = parse(Endpoint::Chat, a.as_bytes()).unwrap();
        let pb = parse(Endpoint::Chat, b.as_bytes()).unwrap();
        assert_eq!(pa.blocks.len(), 3);
        assert_eq!(pa.blocks[..], pb.blocks[..3]);
    }
}
