//! `arbor doctor`'s domain: probe a server before benchmarking it.
//!
//! [`diagnose`] runs a short sequence of probes against an
//! OpenAI-compatible endpoint: `/health` and `/v1/models`, a tiny
//! streaming chat request (SSE, `[DONE]`, usage in the stream, cached
//! tokens, TTFT), whether `max_completion_tokens`, `max_tokens` and
//! `ignore_eos` are honoured, whether `/v1/completions` and Anthropic's
//! `/v1/messages` stream, and so which `--api` to use. Each probe becomes a
//! [`Finding`] (ok / warn / fail, what was seen, what to do); the
//! [`Report`] ends with the `arbor run` flags to use. When the server
//! reports its context length, the finding suggests `--max-context` (and,
//! given a workload whose largest prompt exceeds it, `--isl-scale`; see
//! [`crate::preflight::fit_advice`]). Over `https://` a `tls` probe comes first: the
//! handshake the run's own client makes, reporting the TLS version, cipher
//! and ALPN protocol, or the certificate problem in plain words and what
//! to pass. See `docs/doctor.md`.
//!
//! The modules: `options` (what is asked, checked once), `server` (TLS,
//! health, models), `prober` (the model requests, through the live client
//! of `arbor run`), `report` (the findings as data), `flags` (the verdict
//! and the recommended command), `scrub` (no secret in any text),
//! `words` (errors in one short line), [`crate::preflight::fit_advice`] (a workload against
//! the context length). Nothing here prints; the human report is the
//! CLI's.

use std::time::Duration;

use arbor_error::Error;

use crate::endpoint;

mod flags;
mod options;
mod prober;
mod report;
mod scrub;
mod server;
mod words;

pub use options::Options;
pub use prober::{EOS_PROBE_TOKENS, LIMIT_PROBE_TOKENS, LOGIT_BIAS_EXAMPLE, STREAM_PROBE_TOKENS};
pub use report::{Finding, Report, Status};

use options::Checked;
use prober::Prober;

/// Probes the server `options` name, on a two-worker tokio runtime of its
/// own (so not from inside a runtime). Bad options (a header, a key that
/// cannot be read, a `cacert`, a workload) are input errors; a server that
/// cannot be benchmarked is not an error here but the report's verdict
/// ([`Report::verdict`]). No secret is left in the report's text.
pub fn diagnose(options: &Options) -> Result<Report, Error> {
    let checked = Checked::of(options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("arbor")
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the async runtime: {e}")))?;
    let mut report = runtime.block_on(probe(&checked));
    runtime.shutdown_timeout(Duration::from_millis(200));
    scrub::scrub(&mut report, &checked.secrets);
    Ok(report)
}

/// Runs every probe; stops early when one makes a run impossible.
async fn probe(options: &Checked) -> Report {
    let mut report = Report {
        arbor_version: env!("CARGO_PKG_VERSION"),
        endpoint: endpoint::redact_url(&options.endpoint),
        ..Report::default()
    };
    let finish = |report| flags::finish(report, &options.access_flags);
    if !server::probe_tls(options, &mut report).await {
        return finish(report);
    }
    let client = match endpoint::reqwest_builder(options.tls.as_ref())
        .connect_timeout(options.timeout)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            report.push(
                "health",
                Status::Fail,
                format!("cannot build the HTTP client: {e}"),
                None,
            );
            return finish(report);
        }
    };
    if !server::probe_health(&client, options, &mut report).await {
        return finish(report);
    }
    let Some(model) = server::probe_models(&client, options, &mut report).await else {
        return finish(report);
    };
    let mut prober = Prober::new(options, model);
    if !prober.streaming(&mut report).await {
        // A server of the Messages API only can still be benchmarked.
        if prober.messages(&mut report).await {
            report.streaming_via_messages();
            report.choose_api();
        }
        return finish(report);
    }
    let field = prober.limits(&mut report).await;
    prober.ignore_eos(field, &mut report).await;
    prober.completions(field, &mut report).await;
    prober.messages(&mut report).await;
    report.choose_api();
    finish(report)
}
