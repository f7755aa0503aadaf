//! The streaming probe: a tiny streaming chat request, its SSE chunks and
//! `[DONE]`, usage in the stream, cached tokens, TTFT and total time. A
//! stream that fails says why in the words of the failure's class.

use arbor_runs::record::ErrorCategory;

use super::super::report::{Report, Status};
use super::{Prober, STREAM_PROBE_TOKENS, STREAM_PROMPT};
use crate::live::request::{Api, MaxTokensField};

impl Prober<'_> {
    /// The streaming probe. False when the server does not stream usably.
    pub(crate) async fn streaming(&mut self, report: &mut Report) -> bool {
        let out = self
            .send(
                Api::Chat,
                MaxTokensField::MaxTokens,
                false,
                false,
                STREAM_PROMPT,
                STREAM_PROBE_TOKENS,
            )
            .await;
        let r = &out.response;
        let chunks = r.stamps.content.len();
        if let Some(why) = out.failure() {
            let category = r.error.as_ref().map(|e| e.category);
            let (seen, action) = match category {
                Some(ErrorCategory::Connect) => (
                    format!("POST /v1/chat/completions: cannot connect: {why}"),
                    "check the URL and that the server is running".to_string(),
                ),
                // A head and then nothing: the server took the request
                // and dropped the connection, which is not a question of
                // API compatibility.
                Some(ErrorCategory::StreamCut) if r.stamps.first_byte.is_none() => (
                    format!(
                        "POST /v1/chat/completions answered HTTP {} and the connection closed after the headers, before any data",
                        r.http_status.unwrap_or(200)
                    ),
                    "the server dropped the stream before its first byte: check the server's log (a crash, a proxy's timeout or a limit)".to_string(),
                ),
                Some(ErrorCategory::StreamCut) if chunks == 0 => (
                    "POST /v1/chat/completions with stream: true sent no SSE `data:` chunks and no [DONE]".to_string(),
                    "arbor run needs a streaming (SSE) chat endpoint: check that this is an OpenAI-compatible server".to_string(),
                ),
                Some(ErrorCategory::StreamCut) => (
                    format!("the stream sent {chunks} content chunks but never `data: [DONE]` ({why})"),
                    "every request of a run would be recorded as stream_cut: the server's SSE is not OpenAI-compatible".to_string(),
                ),
                Some(ErrorCategory::HttpStatus | ErrorCategory::ContextOverflow) => (
                    format!("POST /v1/chat/completions: {why}"),
                    "check --model, --header and OPENAI_API_KEY; the server rejected a minimal streaming request".to_string(),
                ),
                _ => (
                    format!("the streaming probe failed: {why}"),
                    "arbor run would record every request as an error: check the server's log".to_string(),
                ),
            };
            report.streaming = Some(false);
            report.push("streaming", Status::Fail, seen, Some(action));
            return false;
        }
        if chunks == 0 {
            report.streaming = Some(false);
            report.push(
                "streaming",
                Status::Fail,
                "the stream ended with [DONE] but carried no content chunk",
                Some("arbor run measures TTFT from the first content chunk: check the server's streaming output".into()),
            );
            return false;
        }
        report.streaming = Some(true);
        report.push(
            "streaming",
            Status::Ok,
            format!(
                "SSE stream: {chunks} content chunks and [DONE] for max_tokens {STREAM_PROBE_TOKENS}"
            ),
            None,
        );

        let usage = r.completion_tokens.is_some();
        report.usage_in_stream = Some(usage);
        if usage {
            let prompt = r.prompt_tokens.map_or("?".to_string(), |n| n.to_string());
            report.push(
                "usage",
                Status::Ok,
                format!(
                    "usage arrives in the stream ({prompt} prompt, {} completion tokens)",
                    out.tokens
                ),
                None,
            );
        } else {
            report.push(
                "usage",
                Status::Warn,
                "no usage in the stream despite stream_options.include_usage",
                Some("arbor run counts content chunks as output tokens (records say `counted`) and uses the planned prompt sizes; the server's own token counts are unknown".into()),
            );
        }
        report.cached_tokens_reported = Some(r.cached_tokens.is_some());
        match r.cached_tokens {
            Some(n) => report.push(
                "cached_tokens",
                Status::Ok,
                format!("usage carries prompt_tokens_details.cached_tokens ({n} on this request)"),
                None,
            ),
            None => report.push(
                "cached_tokens",
                Status::Warn,
                if usage {
                    "usage carries no prompt_tokens_details.cached_tokens"
                } else {
                    "no cached-token count (no usage at all)"
                },
                Some("summary.json's cache hit ratio will be null; enable the server's prompt-token details if it has them (vLLM: --enable-prompt-tokens-details)".into()),
            ),
        }
        let ttft = match (r.stamps.sent, r.stamps.first_content) {
            (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e9),
            _ => None,
        };
        let total = match (r.stamps.sent, r.stamps.done) {
            (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e9),
            _ => None,
        };
        report.ttft_s = ttft;
        report.total_s = total;
        let ms = |s: Option<f64>| s.map_or("?".to_string(), |s| format!("{:.1} ms", s * 1e3));
        report.push(
            "latency",
            Status::Ok,
            format!(
                "TTFT {}, total {} for {} output tokens (one tiny request; not a benchmark)",
                ms(ttft),
                ms(total),
                out.tokens
            ),
            None,
        );
        true
    }
}
