//! The model requests of the doctor: [`Prober`] sends each probe through
//! the live client of `arbor run` (the same body builder, exchange, stamps
//! and SSE classification), so what the doctor sees is what a run would
//! see. The probes themselves: `stream` (streaming, usage, cached tokens,
//! latency), `length` (the output limits and `ignore_eos`), `apis`
//! (`/v1/completions`, `/v1/messages`).

use std::time::Instant;

use arbor_engine::prompt::Prompt;
use arbor_runs::record::{ErrorCategory, RequestError, Response};
use serde_json::Value;

use super::options::Checked;
use super::words::short;
use crate::endpoint;
use crate::live::exchange::{execute, Target};
use crate::live::request::{build_body, Api, BodyConfig, MaxTokensField};

mod apis;
mod length;
mod stream;

/// Output length asked of the streaming probe.
pub const STREAM_PROBE_TOKENS: u32 = 8;
/// Output length asked of the `max_completion_tokens` / `max_tokens` probes.
pub const LIMIT_PROBE_TOKENS: u32 = 5;
/// Output length asked of the `ignore_eos` probe.
pub const EOS_PROBE_TOKENS: u32 = 48;

const STREAM_PROMPT: &str = "Say hello.";
/// Invites a long answer, so that a limit that is not honoured shows.
const LONG_PROMPT: &str = "Count from 1 to 200, separated by spaces.";
/// Invites a one-word answer, so that an `ignore_eos` that is not
/// honoured shows.
const SHORT_PROMPT: &str = "Reply with the single word: yes";
const COMPLETION_PROMPT: &str = "Once upon a time";

/// The `--extra-body` suggested when `ignore_eos` is not honoured
/// (llama.cpp, EOS id 2 of SmolLM2 / Llama-2 style vocabularies).
pub const LOGIT_BIAS_EXAMPLE: &str = r#"{"logit_bias": {"2": -100}}"#;

/// What one probe request produced.
struct Outcome {
    response: Response,
    /// Output tokens: from usage, else content chunks counted.
    tokens: u64,
    from_usage: bool,
}

impl Outcome {
    fn source(&self) -> &'static str {
        if self.from_usage {
            "usage"
        } else {
            "counted chunks"
        }
    }

    /// Why the request failed, if it did, in one short line.
    fn failure(&self) -> Option<String> {
        let error = self.response.error.as_ref()?;
        let mut text = match error.http_status {
            Some(status) => format!("HTTP {status}: {}", short(&error.message)),
            None => format!("{}: {}", error.category.as_str(), short(&error.message)),
        };
        if error.category == ErrorCategory::Timeout {
            text = "no complete answer before the timeout".into();
        }
        Some(text)
    }
}

/// Sends the probes' requests, numbered, to one model.
pub(crate) struct Prober<'a> {
    options: &'a Checked,
    model: String,
    next_id: u64,
}

impl Prober<'_> {
    /// Probes `model` with `options`; request ids count from 1.
    pub(crate) fn new(options: &Checked, model: String) -> Prober<'_> {
        Prober {
            options,
            model,
            next_id: 1,
        }
    }

    async fn send(
        &mut self,
        api: Api,
        field: MaxTokensField,
        ignore_eos: bool,
        greedy: bool,
        prompt: &str,
        max_tokens: u32,
    ) -> Outcome {
        let url = endpoint::at(&self.options.endpoint, api.path());
        let headers = match api {
            Api::Messages => &self.options.messages_headers,
            Api::Chat | Api::Completions | Api::Responses => &self.options.headers,
        };
        let tls = self.options.tls.clone();
        let target = match Target::new(&url, headers, self.options.timeout, 0, tls) {
            Ok(mut target) => {
                target.api = api;
                target
            }
            Err(message) => {
                return Outcome {
                    response: Response {
                        error: Some(RequestError {
                            category: ErrorCategory::Connect,
                            message,
                            http_status: None,
                            retry_after_s: None,
                        }),
                        ..Response::default()
                    },
                    tokens: 0,
                    from_usage: false,
                }
            }
        };
        let config = BodyConfig {
            model: self.model.clone(),
            api,
            max_tokens_field: field,
            ignore_eos,
            // Greedy decoding: the same prompt gets the same answer, so the
            // length probes do not depend on sampling luck.
            extra_body: greedy.then(|| {
                let mut extra = serde_json::Map::new();
                extra.insert("temperature".into(), Value::from(0));
                extra
            }),
        };
        let body = build_body(
            &config,
            &Prompt::Synthesized(prompt.to_string()),
            max_tokens,
            None,
        );
        let id = self.next_id;
        self.next_id += 1;
        let epoch = Instant::now();
        let response = execute(
            &target,
            &body,
            id,
            epoch,
            max_tokens as usize,
            None,
            |_| {},
            || {},
        )
        .await;
        let (tokens, from_usage) = match response.completion_tokens {
            Some(n) => (n, true),
            None => (response.stamps.content.len() as u64, false),
        };
        Outcome {
            response,
            tokens,
            from_usage,
        }
    }
}
