//! The other APIs: does `/v1/completions` stream (`--api completions`),
//! does `/v1/messages` stream Anthropic's events (`--api messages`, with
//! its own key and `anthropic-version`).

use super::super::report::{Report, Status};
use super::{Prober, COMPLETION_PROMPT, LIMIT_PROBE_TOKENS, STREAM_PROMPT};
use crate::live::request::{Api, MaxTokensField};

impl Prober<'_> {
    pub(crate) async fn completions(&mut self, field: MaxTokensField, report: &mut Report) {
        let out = self
            .send(
                Api::Completions,
                field,
                false,
                false,
                COMPLETION_PROMPT,
                LIMIT_PROBE_TOKENS,
            )
            .await;
        let chunks = out.response.stamps.content.len();
        match out.failure() {
            None if chunks > 0 => {
                report.completions_api = Some(true);
                report.push(
                    "completions",
                    Status::Ok,
                    format!("POST /v1/completions streams ({chunks} content chunks); --api completions is available"),
                    None,
                );
            }
            failure => {
                report.completions_api = Some(false);
                let why = failure.unwrap_or_else(|| "no content chunk".into());
                report.push(
                    "completions",
                    Status::Warn,
                    format!("POST /v1/completions: {why}"),
                    Some("use the default --api chat".into()),
                );
            }
        }
    }

    /// Does `/v1/messages` stream Anthropic's events? True when it does.
    pub(crate) async fn messages(&mut self, report: &mut Report) -> bool {
        let out = self
            .send(
                Api::Messages,
                MaxTokensField::MaxTokens,
                false,
                false,
                STREAM_PROMPT,
                LIMIT_PROBE_TOKENS,
            )
            .await;
        let r = &out.response;
        let chunks = r.stamps.content.len();
        let works = out.failure().is_none() && chunks > 0;
        report.messages_api = Some(works);
        if works {
            let count = |n: Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
            report.push(
                "messages",
                Status::Ok,
                format!(
                    "POST /v1/messages streams Anthropic events ({chunks} text deltas and message_stop; usage: {} input tokens, {} of them cached, {} output); --api messages is available",
                    count(r.prompt_tokens),
                    count(r.cached_tokens),
                    count(r.completion_tokens)
                ),
                None,
            );
        } else {
            let why = out.failure().unwrap_or_else(|| "no text delta".into());
            report.push(
                "messages",
                Status::Warn,
                format!("POST /v1/messages: {why}"),
                Some(format!(
                    "--api messages is not available here (its key: {}; --api-key-env or --api-key-file names another)",
                    self.options.messages_key_from
                )),
            );
        }
        works
    }
}
