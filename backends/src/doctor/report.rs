//! What `arbor doctor` found, as data: each probe's [`Finding`] (ok / warn
//! / fail, what was seen, what to do) and the [`Report`] that holds them
//! with what the probes measured, the verdict and the recommended flags
//! (`arbor doctor --json` prints it). Probes nothing; prints nothing.

use serde::Serialize;

use arbor_error::Error;

/// A finding's verdict: `fail` means a run cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

/// One probe's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// A stable name: `tls`, `health`, `models`, `context_length`, `streaming`,
    /// `usage`, `cached_tokens`, `latency`, `max_completion_tokens`,
    /// `max_tokens`, `ignore_eos`, `completions`, `messages`, `api`.
    pub probe: &'static str,
    pub status: Status,
    /// What was seen.
    pub seen: String,
    /// What to do, when anything.
    pub action: Option<String>,
}

/// Everything the doctor found, as printed with `--json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub arbor_version: &'static str,
    /// The base URL (user info redacted).
    pub endpoint: String,
    pub model: Option<String>,
    /// `flag` or `server`.
    pub model_from: Option<&'static str>,
    pub models: Vec<String>,
    /// Over https: the negotiated TLS version (`TLSv1.3`).
    pub tls_version: Option<String>,
    /// Over https: the negotiated cipher suite.
    pub tls_cipher: Option<String>,
    pub health_status: Option<u16>,
    pub context_length: Option<u64>,
    /// The `/v1/models` key the context length came from.
    pub context_length_key: Option<String>,
    /// With a workload (INPUT): its largest prompt, in tokens.
    pub workload_largest_prompt: Option<u32>,
    /// With a context length: the `--max-context` to fit prompts to it.
    pub suggested_max_context: Option<u64>,
    /// With a workload whose largest prompt exceeds that: the
    /// `--isl-scale` that shrinks it to fit.
    pub suggested_isl_scale: Option<f64>,
    pub streaming: Option<bool>,
    pub usage_in_stream: Option<bool>,
    pub cached_tokens_reported: Option<bool>,
    /// Of the streaming probe: first content chunk - sent.
    pub ttft_s: Option<f64>,
    /// Of the streaming probe: done - sent.
    pub total_s: Option<f64>,
    pub max_completion_tokens_honoured: Option<bool>,
    pub max_tokens_honoured: Option<bool>,
    /// `null` when not probed, or when the model did not stop early even
    /// without `ignore_eos` (nothing to tell it by).
    pub ignore_eos_honoured: Option<bool>,
    pub completions_api: Option<bool>,
    /// Anthropic's `/v1/messages` streams.
    pub messages_api: Option<bool>,
    /// The `--api` to run with: `chat` when chat streams, else `messages`
    /// when it streams.
    pub api: Option<&'static str>,
    pub findings: Vec<Finding>,
    /// No finding failed: `arbor run` can benchmark this server.
    pub usable: bool,
    /// The recommended `arbor run` flags, one argument per item.
    pub flags: Vec<String>,
    /// The recommended command line.
    pub command: String,
}

impl Status {
    /// The status as printed: `ok`, `warn`, `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

impl Report {
    pub(crate) fn push(
        &mut self,
        probe: &'static str,
        status: Status,
        seen: impl Into<String>,
        action: Option<String>,
    ) {
        self.findings.push(Finding {
            probe,
            status,
            seen: seen.into(),
            action,
        });
    }

    /// The first failed finding: why the server cannot be benchmarked.
    pub fn failed(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.status == Status::Fail)
    }

    /// `Ok` when the server can be benchmarked; else the error naming the
    /// endpoint and the first failure (exit 1).
    pub fn verdict(&self) -> Result<(), Error> {
        match self.failed() {
            None => Ok(()),
            Some(f) => Err(Error::other(format!(
                "{} cannot be benchmarked: {}",
                self.endpoint, f.seen
            ))),
        }
    }

    /// The report as `arbor doctor --json` prints it (pretty JSON).
    pub fn to_json(&self) -> Result<String, Error> {
        serde_json::to_string_pretty(self)
            .map_err(|e| Error::other(format!("cannot write the report: {e}")))
    }

    /// The chat stream failed but the Messages stream works: the failure
    /// becomes a warning pointing at `--api messages`.
    pub(crate) fn streaming_via_messages(&mut self) {
        if let Some(f) = self.findings.iter_mut().find(|f| f.probe == "streaming") {
            f.status = Status::Warn;
            f.action =
                Some("the server streams Anthropic's Messages API: run with --api messages".into());
        }
    }

    /// The `api` finding: which APIs stream, and the `--api` to use.
    pub(crate) fn choose_api(&mut self) {
        let served: Vec<&str> = [
            ("chat", self.streaming),
            ("completions", self.completions_api),
            ("messages", self.messages_api),
        ]
        .into_iter()
        .filter(|(_, streams)| *streams == Some(true))
        .map(|(name, _)| name)
        .collect();
        let api = if self.streaming == Some(true) {
            "chat"
        } else {
            "messages"
        };
        self.api = Some(api);
        self.push(
            "api",
            Status::Ok,
            format!("streams {}; --api {api}", served.join(", ")),
            None,
        );
    }
}
