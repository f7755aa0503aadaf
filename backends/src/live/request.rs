//! One live request: its body, its HTTP exchange, its stamps.
//!
//! Owns building the OpenAI request body for a turn and running the
//! exchange with byte-arrival timestamps: `sent` just before the request is
//! handed to the connection pool, `headers` when the response head is in,
//! `first_byte` and each content chunk when a body chunk arrives (stamped
//! before the chunk is scanned), `done` when the chunk holding `[DONE]` (or
//! the end of the body) arrives. Errors are classed, never raised: a
//! request always ends in a [`Response`].

use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde::Serialize;
use serde_json::{Map, Value};

use arbor_engine::prompt::{wire_role, Prompt};
use arbor_engine::time::Nanos;

use super::record::{is_context_overflow, ErrorCategory, RequestError, Response};
use super::sse::{classify, data_of, LineSplitter};

/// Which OpenAI endpoint to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    #[default]
    Chat,
    Completions,
}

/// How the output length is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    #[default]
    MaxTokens,
    MaxCompletionTokens,
}

impl MaxTokensField {
    pub fn name(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// What every request body carries besides its prompt.
#[derive(Debug, Clone, Default)]
pub struct BodyConfig {
    pub model: String,
    pub api: Api,
    pub max_tokens_field: MaxTokensField,
    pub ignore_eos: bool,
    /// Merged last: its keys replace any the body would have had.
    pub extra_body: Option<Map<String, Value>>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct CompletionBody<'a> {
    model: &'a str,
    prompt: &'a str,
    stream: bool,
    stream_options: StreamOptions,
}

fn push_json_str(out: &mut Vec<u8>, text: &str) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Synthesized text is made of plain words and spaces (see
/// `arbor_engine::prompt`): nothing to escape, so it is copied as is.
fn push_synthesized(out: &mut Vec<u8>, text: &str) {
    if text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' ') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        push_json_str(out, text);
    }
}

/// Builds the JSON body of one request.
///
/// Without `--extra-body` the body is written straight into one buffer (a
/// prompt of 100k tokens is about 600 kB: no intermediate JSON tree); with
/// it, fields are merged through a map so the extra keys win.
///
/// `marker` (the play's cache-bust marker) is prepended to the first user
/// message (or to the synthesized text, which is one user message).
pub fn build_body(
    config: &BodyConfig,
    prompt: &Prompt<'_>,
    max_tokens: u32,
    marker: Option<&str>,
) -> Vec<u8> {
    if config.extra_body.is_some() {
        return build_merged_body(config, prompt, max_tokens, marker);
    }
    // The first user message, marked (one copy of it, only when marking).
    let marked = |content: &str| -> Option<String> { marker.map(|m| format!("{m}{content}")) };
    let first_user = match prompt {
        Prompt::Recorded(messages) => messages
            .iter()
            .position(|m| m.role == arbor_engine::Role::User),
        Prompt::Synthesized(_) => None,
    };
    let max_tokens = max_tokens.max(1);
    let text_len = match prompt {
        Prompt::Synthesized(text) => text.len(),
        Prompt::Recorded(messages) => messages.iter().map(|m| m.content.len() + 32).sum(),
    };
    let mut out = Vec::with_capacity(text_len + 256);
    out.extend_from_slice(br#"{"model":"#);
    push_json_str(&mut out, &config.model);
    match (config.api, prompt) {
        (Api::Chat, Prompt::Synthesized(text)) => {
            out.extend_from_slice(br#","messages":[{"role":"user","content":"#);
            match marked(text) {
                Some(text) => push_json_str(&mut out, &text),
                None => push_synthesized(&mut out, text),
            }
            out.extend_from_slice(b"}]");
        }
        (Api::Chat, Prompt::Recorded(messages)) => {
            out.extend_from_slice(br#","messages":["#);
            for (i, m) in messages.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"role":""#);
                out.extend_from_slice(wire_role(m.role).as_bytes());
                out.extend_from_slice(br#"","content":"#);
                match marked(m.content).filter(|_| first_user == Some(i)) {
                    Some(content) => push_json_str(&mut out, &content),
                    None => push_json_str(&mut out, m.content),
                }
                out.push(b'}');
            }
            out.push(b']');
        }
        (Api::Completions, Prompt::Synthesized(text)) => {
            out.extend_from_slice(br#","prompt":"#);
            match marked(text) {
                Some(text) => push_json_str(&mut out, &text),
                None => push_synthesized(&mut out, text),
            }
        }
        (Api::Completions, Prompt::Recorded(messages)) => {
            out.extend_from_slice(br#","prompt":"#);
            let mut joined = String::new();
            for (i, m) in messages.iter().enumerate() {
                if i > 0 {
                    joined.push('\n');
                }
                if first_user == Some(i) {
                    joined.push_str(marker.unwrap_or(""));
                }
                joined.push_str(m.content);
            }
            push_json_str(&mut out, &joined);
        }
    }
    out.extend_from_slice(br#","stream":true,"stream_options":{"include_usage":true},""#);
    out.extend_from_slice(config.max_tokens_field.name().as_bytes());
    out.extend_from_slice(format!("\":{max_tokens}").as_bytes());
    if config.ignore_eos {
        out.extend_from_slice(br#","ignore_eos":true"#);
    }
    out.push(b'}');
    out
}

/// [`build_body`] through a JSON map, `--extra-body` merged last.
fn build_merged_body(
    config: &BodyConfig,
    prompt: &Prompt<'_>,
    max_tokens: u32,
    marker: Option<&str>,
) -> Vec<u8> {
    let max_tokens = max_tokens.max(1);
    // Marking copies the prompt once; this path is only for --extra-body.
    let marked_text;
    let marked_owned;
    let marked_messages;
    let prompt = match (marker, prompt) {
        (None, _) => prompt,
        (Some(m), Prompt::Synthesized(text)) => {
            marked_text = Prompt::Synthesized(format!("{m}{text}"));
            &marked_text
        }
        (Some(m), Prompt::Recorded(messages)) => {
            let first_user = messages
                .iter()
                .position(|x| x.role == arbor_engine::Role::User);
            marked_owned = first_user.map(|i| format!("{m}{}", messages[i].content));
            marked_messages = Prompt::Recorded(
                messages
                    .iter()
                    .enumerate()
                    .map(|(i, x)| arbor_engine::content::MessageRef {
                        role: x.role,
                        content: match (&marked_owned, Some(i) == first_user) {
                            (Some(owned), true) => owned.as_str(),
                            _ => x.content,
                        },
                    })
                    .collect(),
            );
            &marked_messages
        }
    };
    let joined;
    let body = match (config.api, prompt) {
        (Api::Chat, Prompt::Synthesized(text)) => serde_json::to_value(ChatBody {
            model: &config.model,
            messages: vec![WireMessage {
                role: "user",
                content: text,
            }],
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }),
        (Api::Chat, Prompt::Recorded(messages)) => serde_json::to_value(ChatBody {
            model: &config.model,
            messages: messages
                .iter()
                .map(|m| WireMessage {
                    role: wire_role(m.role),
                    content: m.content,
                })
                .collect(),
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }),
        (Api::Completions, prompt) => {
            let text: &str = match prompt {
                Prompt::Synthesized(text) => text,
                Prompt::Recorded(messages) => {
                    joined = messages
                        .iter()
                        .map(|m| m.content)
                        .collect::<Vec<_>>()
                        .join("\n");
                    &joined
                }
            };
            serde_json::to_value(CompletionBody {
                model: &config.model,
                prompt: text,
                stream: true,
                stream_options: StreamOptions {
                    include_usage: true,
                },
            })
        }
    };
    let mut body = match body {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    body.insert(
        config.max_tokens_field.name().into(),
        Value::from(max_tokens),
    );
    if config.ignore_eos {
        body.insert("ignore_eos".into(), Value::Bool(true));
    }
    if let Some(extra) = &config.extra_body {
        for (key, value) in extra {
            body.insert(key.clone(), value.clone());
        }
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

/// Where and how requests go.
#[derive(Debug, Clone)]
pub struct Target {
    pub client: reqwest::Client,
    /// Full URL of the completions endpoint.
    pub url: String,
    /// Extra headers, the API key's `Authorization` among them.
    pub headers: HeaderMap,
    pub timeout: Duration,
    /// Retries of a request that got no response byte (connect errors).
    pub retries: u32,
}

/// The header carrying arbor's request id (the emulator stamps by it).
pub const REQUEST_ID_HEADER: &str = "x-arbor-request-id";

fn nanos_since(epoch: Instant) -> Nanos {
    epoch.elapsed().as_nanos() as Nanos
}

fn error(category: ErrorCategory, message: impl Into<String>) -> RequestError {
    RequestError {
        category,
        message: message.into(),
        http_status: None,
        retry_after_s: None,
    }
}

/// The most of an error body kept in a record.
const ERROR_BODY_BYTES: usize = 2048;

/// Runs one request. `on_sent` is called with the `sent` stamp as soon as
/// the request is handed over (the scheduler anchors `Start` edges there).
pub async fn execute(
    target: &Target,
    body: Bytes,
    request_id: u64,
    epoch: Instant,
    expected_chunks: usize,
    on_sent: impl FnOnce(Nanos),
) -> Response {
    let mut response = Response::default();
    response.stamps.content.reserve(expected_chunks + 2);
    let mut on_sent = Some(on_sent);
    let deadline = tokio::time::Instant::now() + target.timeout;
    let id_value = HeaderValue::from(request_id);
    let id_header = HeaderName::from_static(REQUEST_ID_HEADER);
    let http = loop {
        response.attempts += 1;
        let request = target
            .client
            .post(&target.url)
            .headers(target.headers.clone())
            .header(id_header.clone(), id_value.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        let sent = nanos_since(epoch);
        if let Some(f) = on_sent.take() {
            f(sent);
            response.stamps.sent = Some(sent);
        }
        match tokio::time::timeout_at(deadline, request.send()).await {
            Ok(Ok(http)) => break http,
            Ok(Err(e)) => {
                let retry = e.is_connect() && response.attempts <= target.retries;
                if !retry {
                    let category = if e.is_timeout() {
                        ErrorCategory::Timeout
                    } else {
                        ErrorCategory::Connect
                    };
                    response.error = Some(error(category, e.to_string()));
                    response.stamps.done = Some(nanos_since(epoch));
                    return response;
                }
                tokio::time::sleep(Duration::from_millis(50 << response.attempts.min(6))).await;
            }
            Err(_) => {
                response.error = Some(error(
                    ErrorCategory::Timeout,
                    "no response head before the timeout",
                ));
                response.stamps.done = Some(nanos_since(epoch));
                return response;
            }
        }
    };
    response.stamps.headers = Some(nanos_since(epoch));
    let status = http.status();
    response.http_status = Some(status.as_u16());
    if !status.is_success() {
        failed_status(http, status.as_u16(), deadline, epoch, &mut response).await;
        return response;
    }
    read_stream(http, deadline, epoch, &mut response).await;
    response
}

async fn failed_status(
    mut http: reqwest::Response,
    status: u16,
    deadline: tokio::time::Instant,
    epoch: Instant,
    response: &mut Response,
) {
    let retry_after_s = http
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok());
    let mut text = Vec::new();
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, http.chunk()).await {
        if response.stamps.first_byte.is_none() {
            response.stamps.first_byte = Some(nanos_since(epoch));
        }
        let room = ERROR_BODY_BYTES.saturating_sub(text.len());
        text.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    response.stamps.done = Some(nanos_since(epoch));
    let message = String::from_utf8_lossy(&text).into_owned();
    let category = if is_context_overflow(&message) {
        ErrorCategory::ContextOverflow
    } else {
        ErrorCategory::HttpStatus
    };
    response.error = Some(RequestError {
        category,
        message: if message.is_empty() {
            format!("HTTP {status}")
        } else {
            message
        },
        http_status: Some(status),
        retry_after_s,
    });
}

async fn read_stream(
    mut http: reqwest::Response,
    deadline: tokio::time::Instant,
    epoch: Instant,
    response: &mut Response,
) {
    let mut splitter = LineSplitter::default();
    let mut saw_done = false;
    let mut failure: Option<RequestError> = None;
    // One timer for the whole stream (a timeout per chunk re-registers a
    // timer per token).
    let expiry = tokio::time::sleep_until(deadline);
    tokio::pin!(expiry);
    loop {
        let next = tokio::select! {
            biased;
            chunk = http.chunk() => Ok(chunk),
            _ = &mut expiry => Err(()),
        };
        let chunk = match next {
            Err(()) => {
                failure.get_or_insert(error(
                    ErrorCategory::Timeout,
                    "stream not finished before the timeout",
                ));
                break;
            }
            Ok(Err(e)) => {
                failure.get_or_insert(error(ErrorCategory::StreamCut, format!("stream cut: {e}")));
                break;
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => chunk,
        };
        // The stamp comes first: before the bytes are looked at.
        let at = nanos_since(epoch);
        let stamps = &mut response.stamps;
        stamps.first_byte.get_or_insert(at);
        stamps.done = Some(at);
        splitter.feed(&chunk, |line| {
            let Some(data) = data_of(line) else { return };
            let payload = classify(data);
            if payload.content {
                stamps.first_content.get_or_insert(at);
                stamps.content.push(at);
            }
            if payload.done {
                saw_done = true;
            }
            if let Some(usage) = payload.usage {
                response.prompt_tokens = usage.prompt_tokens.or(response.prompt_tokens);
                response.completion_tokens = usage.completion_tokens.or(response.completion_tokens);
                response.cached_tokens = usage.cached_tokens().or(response.cached_tokens);
            }
            if let Some(message) = payload.error {
                let category = if is_context_overflow(&message) {
                    ErrorCategory::ContextOverflow
                } else {
                    ErrorCategory::ServerError
                };
                failure.get_or_insert(error(category, message));
            }
            if payload.malformed {
                let shown: String = String::from_utf8_lossy(line).chars().take(200).collect();
                failure.get_or_insert(error(
                    ErrorCategory::MalformedSse,
                    format!("malformed SSE line: {shown}"),
                ));
            }
        });
        if saw_done {
            break;
        }
    }
    if response.stamps.done.is_none() {
        response.stamps.done = Some(nanos_since(epoch));
    }
    if !saw_done && failure.is_none() {
        failure = Some(error(
            ErrorCategory::StreamCut,
            "the stream ended without [DONE]",
        ));
    }
    response.error = failure;
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::content::MessageRef;
    use arbor_engine::Role;

    #[test]
    fn bodies_carry_the_prompt_limits_and_extra_fields() {
        let config = BodyConfig {
            model: "m".into(),
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            ignore_eos: true,
            extra_body: serde_json::from_str::<Map<String, Value>>(
                r#"{"temperature":0,"ignore_eos":false}"#,
            )
            .ok(),
            ..BodyConfig::default()
        };
        let prompt = Prompt::Recorded(vec![
            MessageRef {
                role: Role::System,
                content: "s",
            },
            MessageRef {
                role: Role::Tool,
                content: "result",
            },
        ]);
        let body: Value = serde_json::from_slice(&build_body(&config, &prompt, 0, None)).unwrap();
        assert_eq!(body["model"], "m");
        assert_eq!(
            body["messages"][1]["role"], "user",
            "tool results go as user messages"
        );
        assert_eq!(body["max_completion_tokens"], 1, "at least one token");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["temperature"], 0);
        assert_eq!(body["ignore_eos"], false, "--extra-body is merged last");
        assert!(body.get("max_tokens").is_none());

        let completions = BodyConfig {
            api: Api::Completions,
            ..BodyConfig::default()
        };
        let body: Value = serde_json::from_slice(&build_body(
            &completions,
            &Prompt::Synthesized(" a b".into()),
            5,
            None,
        ))
        .unwrap();
        assert_eq!(body["prompt"], " a b");
        assert_eq!(body["max_tokens"], 5);

        // The direct writer and the merging path agree on every field.
        let plain = BodyConfig {
            model: "m\"q".into(),
            ignore_eos: true,
            ..BodyConfig::default()
        };
        let merged = BodyConfig {
            extra_body: Some(Map::new()),
            ..plain.clone()
        };
        for prompt in [
            Prompt::Synthesized(" x \"y\" \n z".into()),
            Prompt::Recorded(vec![
                MessageRef {
                    role: Role::System,
                    content: "s\u{1}",
                },
                MessageRef {
                    role: Role::Assistant,
                    content: "é",
                },
            ]),
        ] {
            for api in [Api::Chat, Api::Completions] {
                let a = BodyConfig {
                    api,
                    ..plain.clone()
                };
                let b = BodyConfig {
                    api,
                    ..merged.clone()
                };
                for marker in [None, Some("[rid:0123456789ab]\n\n")] {
                    let x: Value =
                        serde_json::from_slice(&build_body(&a, &prompt, 7, marker)).unwrap();
                    let y: Value =
                        serde_json::from_slice(&build_body(&b, &prompt, 7, marker)).unwrap();
                    assert_eq!(x, y);
                }
            }
        }
    }

    #[test]
    fn the_marker_leads_the_first_user_message_only() {
        let config = BodyConfig::default();
        let marker = Some("[rid:0123456789ab]\n\n");
        let recorded = Prompt::Recorded(vec![
            MessageRef {
                role: Role::System,
                content: "sys",
            },
            MessageRef {
                role: Role::User,
                content: "first",
            },
            MessageRef {
                role: Role::User,
                content: "second",
            },
        ]);
        let body: Value =
            serde_json::from_slice(&build_body(&config, &recorded, 3, marker)).unwrap();
        assert_eq!(body["messages"][0]["content"], "sys");
        assert_eq!(
            body["messages"][1]["content"],
            "[rid:0123456789ab]\n\nfirst"
        );
        assert_eq!(body["messages"][2]["content"], "second");
        let synthesized = Prompt::Synthesized(" a b".into());
        let body: Value =
            serde_json::from_slice(&build_body(&config, &synthesized, 3, marker)).unwrap();
        assert_eq!(body["messages"][0]["content"], "[rid:0123456789ab]\n\n a b");
    }
}
