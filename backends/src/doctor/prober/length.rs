//! The output-length probes: whether `max_completion_tokens` and
//! `max_tokens` limit the output (and so which `--max-tokens-field` to
//! use), and whether `ignore_eos` is honoured.

use super::super::report::{Report, Status};
use super::{
    Prober, EOS_PROBE_TOKENS, LIMIT_PROBE_TOKENS, LOGIT_BIAS_EXAMPLE, LONG_PROMPT, SHORT_PROMPT,
};
use crate::live::request::{Api, MaxTokensField};

impl Prober<'_> {
    /// One limit probe: is `field` honoured? `Some(true)` honoured,
    /// `Some(false)` ignored, `None` rejected or failed.
    async fn limit(&mut self, field: MaxTokensField, report: &mut Report) -> Option<bool> {
        let name = field.name();
        let out = self
            .send(
                Api::Chat,
                field,
                false,
                true,
                LONG_PROMPT,
                LIMIT_PROBE_TOKENS,
            )
            .await;
        if let Some(why) = out.failure() {
            report.push(
                probe_name(field),
                Status::Warn,
                format!("a request with only {name}: {LIMIT_PROBE_TOKENS} failed: {why}"),
                Some(format!("do not use --max-tokens-field {name}")),
            );
            return None;
        }
        let honoured = out.tokens <= u64::from(LIMIT_PROBE_TOKENS);
        if honoured {
            report.push(
                probe_name(field),
                Status::Ok,
                format!(
                    "honoured: asked {LIMIT_PROBE_TOKENS} tokens with {name}, got {} ({})",
                    out.tokens,
                    out.source()
                ),
                None,
            );
        } else {
            report.push(
                probe_name(field),
                Status::Warn,
                format!(
                    "ignored: asked {LIMIT_PROBE_TOKENS} tokens with only {name}, got {} ({})",
                    out.tokens,
                    out.source()
                ),
                Some(format!(
                    "do not use --max-tokens-field {name}: outputs would not have the recorded lengths"
                )),
            );
        }
        Some(honoured)
    }

    /// Both limit probes; returns the field to use.
    pub(crate) async fn limits(&mut self, report: &mut Report) -> MaxTokensField {
        let mct = self
            .limit(MaxTokensField::MaxCompletionTokens, report)
            .await;
        let mt = self.limit(MaxTokensField::MaxTokens, report).await;
        report.max_completion_tokens_honoured = Some(mct == Some(true));
        report.max_tokens_honoured = Some(mt == Some(true));
        if mt == Some(true) {
            MaxTokensField::MaxTokens
        } else if mct == Some(true) {
            MaxTokensField::MaxCompletionTokens
        } else {
            report.push(
                "output_length",
                Status::Warn,
                "neither max_tokens nor max_completion_tokens limits the output",
                Some("output lengths will differ from the trace; a run still measures, but compare with care (or add a limit the server knows with --extra-body)".into()),
            );
            MaxTokensField::MaxTokens
        }
    }

    /// Asks a one-word answer for [`EOS_PROBE_TOKENS`] tokens with
    /// `ignore_eos`. Fewer tokens: ignored. All of them: the same request
    /// without `ignore_eos` tells whether the model would have stopped
    /// early (then it is honoured) or not (then it cannot be told).
    pub(crate) async fn ignore_eos(&mut self, field: MaxTokensField, report: &mut Report) {
        let out = self
            .send(Api::Chat, field, true, true, SHORT_PROMPT, EOS_PROBE_TOKENS)
            .await;
        let alternatives = format!(
            "output lengths will differ from the trace where the model stops early; force them with --extra-body instead, e.g. for llama.cpp --extra-body '{LOGIT_BIAS_EXAMPLE}' (2 is the EOS token id of SmolLM2 and Llama-2 style vocabularies: use your model's EOS id); vLLM and SGLang honour --ignore-eos"
        );
        if let Some(why) = out.failure() {
            report.ignore_eos_honoured = Some(false);
            report.push(
                "ignore_eos",
                Status::Warn,
                format!("a request with ignore_eos: true failed: {why}"),
                Some(format!("do not pass --ignore-eos; {alternatives}")),
            );
            return;
        }
        let asked = u64::from(EOS_PROBE_TOKENS);
        if out.tokens < asked {
            report.ignore_eos_honoured = Some(false);
            report.push(
                "ignore_eos",
                Status::Warn,
                format!(
                    "ignored: asked {asked} tokens for a one-word answer with ignore_eos, got {} ({})",
                    out.tokens,
                    out.source()
                ),
                Some(alternatives),
            );
            return;
        }
        let control = self
            .send(
                Api::Chat,
                field,
                false,
                true,
                SHORT_PROMPT,
                EOS_PROBE_TOKENS,
            )
            .await;
        if control.failure().is_none() && control.tokens < asked {
            report.ignore_eos_honoured = Some(true);
            report.push(
                "ignore_eos",
                Status::Ok,
                format!(
                    "honoured: a one-word answer got {} of {asked} tokens with ignore_eos, {} without ({})",
                    out.tokens,
                    control.tokens,
                    out.source()
                ),
                None,
            );
        } else {
            report.push(
                "ignore_eos",
                Status::Ok,
                format!(
                    "accepted, no early stop seen: {} of {asked} tokens with ignore_eos, and the model did not stop early without it either (so whether it is honoured cannot be told; outputs reach the asked length)",
                    out.tokens
                ),
                None,
            );
        }
    }
}

fn probe_name(field: MaxTokensField) -> &'static str {
    match field {
        MaxTokensField::MaxTokens => "max_tokens",
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
    }
}
