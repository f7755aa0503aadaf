//! The pre-flight of a live run: what is checked before the clock starts,
//! so that a run that cannot measure what was asked is refused in one
//! clear message (exit 1) before any measured request, instead of
//! failing every request and reporting zeros.
//!
//! In order ([`check`]): the endpoint answers `GET /v1/models` (waited
//! for while it refuses connections or answers 502-504, up to
//! `--ready-timeout`: [`answer::poll`]); a connection that breaks is
//! asked in the other scheme ([`scheme`]: `http://` at a TLS port and the
//! reverse); a 404 tells a wrong base path from a server that lists no
//! models ([`base_path`]); 401 and 403 name where the key came from
//! ([`auth_refusal`]); the model is one the server serves ([`choose`]);
//! the workload fits the context length it reports ([`fit`]).
//!
//! Owns the decisions and their words; the run (`arbor::run`) calls it
//! and turns a refusal into its error. The doctor shares
//! [`fit::context_length`], [`fit_advice`] and [`auth_refusal`]; the
//! flags are `endpoint`'s, with the other request options.

pub mod answer;
pub mod base_path;
pub mod choose;
pub mod fit;
pub mod fit_advice;
pub mod scheme;

use std::path::Path;
use std::time::Duration;

use arbor_engine::Workload;
use reqwest::header::HeaderMap;
use serde_json::Value;

pub use crate::endpoint::PreflightOptions as Options;
use crate::endpoint::{at, certificate_hint, redact_url};
use answer::Answer;
use base_path::Missing;

/// What the pre-flight is asked about.
pub struct Ask<'a> {
    /// The normalized base URL.
    pub endpoint: &'a str,
    /// The request path (`/v1/chat/completions`).
    pub api_path: &'a str,
    /// Every request's headers, the key among them.
    pub headers: &'a HeaderMap,
    /// Where the key came from (`env OPENAI_API_KEY`, `--header
    /// authorization`), when one is sent.
    pub key_from: Option<&'a str>,
    /// The variable a key is read from by default (for the advice when
    /// none is sent).
    pub key_env: &'a str,
    /// `--model`.
    pub model: Option<&'a str>,
    /// The workload as it will be sent (after `--max-context`).
    pub workload: &'a Workload,
    /// `--cacert`, for a certificate's advice.
    pub cacert: Option<&'a Path>,
    pub options: Options,
}

/// A server ready for the run.
#[derive(Debug, Clone)]
pub struct Ready {
    pub model: String,
    /// How the model was chosen ([`choose::Chosen::from`]).
    pub model_from: &'static str,
    /// The context length the server reports for it.
    pub context_length: Option<u64>,
    /// How long the server was waited for.
    pub waited: Duration,
    /// What to say on stderr before the run.
    pub notices: Vec<String>,
}

/// The refusal of a 401 or 403: check the key, naming where it came from
/// (never the key), or send one.
pub fn auth_refusal(code: u16, words: &str, key_from: Option<&str>, key_env: &str) -> String {
    let said = if words.is_empty() {
        String::new()
    } else {
        format!(": {words}")
    };
    match key_from {
        Some(from) => format!(
            "the server refused the request's credentials (HTTP {code}{said}): check the key: it \
             came from {from}"
        ),
        None => format!(
            "the server asks for credentials (HTTP {code}{said}) and no key was sent: set \
             {key_env}, or give --api-key-env NAME or --api-key-file FILE"
        ),
    }
}

/// Checks the server before a run (see the module doc): `Err` with the
/// one message that says what is wrong and what to do.
pub async fn check(client: &reqwest::Client, ask: &Ask<'_>) -> Result<Ready, String> {
    let url = at(ask.endpoint, "/v1/models");
    let shown = redact_url(&url);
    let (answer, waited) = answer::poll(client, &url, ask.headers, ask.options.ready_timeout).await;
    let mut notices = Vec::new();
    if waited >= Duration::from_secs(1) && matches!(answer, Answer::Json(_)) {
        notices.push(format!(
            "arbor run: the server was ready after {:.1} s",
            waited.as_secs_f64()
        ));
    }
    let waited_words = || {
        format!(
            "after {:.1} s of asking (--ready-timeout {} s)",
            waited.as_secs_f64(),
            ask.options.ready_timeout.as_secs_f64()
        )
    };
    let unchecked = |why: String, notices: Vec<String>| -> Result<Ready, String> {
        match ask.model {
            Some(m) => {
                let mut notices = notices;
                notices.push(format!(
                    "arbor run: {why}: --model {m} is sent unchecked, and the workload is not \
                     checked against a context length"
                ));
                Ok(Ready {
                    model: m.to_string(),
                    model_from: "flag-unchecked",
                    context_length: None,
                    waited,
                    notices,
                })
            }
            None => Err(format!(
                "{why}: pass --model M (the model the server serves)"
            )),
        }
    };
    let listed = match answer {
        Answer::Json(value) => value,
        Answer::NotJson(why) => {
            return unchecked(format!("{shown} did not answer with JSON ({why})"), notices)
        }
        Answer::Status {
            code: code @ (401 | 403),
            words,
        } => {
            return Err(format!(
                "{shown}: {}",
                auth_refusal(code, &words, ask.key_from, ask.key_env)
            ))
        }
        Answer::Status { code: 404, words } => {
            return match base_path::diagnose(client, ask.endpoint, ask.api_path, ask.headers).await
            {
                Missing::NoModelList => unchecked(
                    format!("{shown} answered HTTP 404 ({words}): the server lists no models"),
                    notices,
                ),
                Missing::MovedTo(base) => Err(format!(
                    "{shown} answered HTTP 404, and so does {}: the base path looks wrong. \
                     {}/v1/models lists models: use --endpoint {}",
                    redact_url(&at(ask.endpoint, ask.api_path)),
                    redact_url(&base),
                    redact_url(&base)
                )),
                Missing::Nowhere(tried) => {
                    Err(format!(
                    "{shown} answered HTTP 404, and so does {}: the base path looks wrong, and \
                     none of {} lists models either. Give --endpoint the server's base URL \
                     (arbor adds /v1/models and {})",
                    redact_url(&at(ask.endpoint, ask.api_path)),
                    tried.iter().map(|b| redact_url(b)).collect::<Vec<_>>().join(", "),
                    ask.api_path
                ))
                }
            };
        }
        a @ Answer::Status { .. } if a.not_ready() => {
            return Err(format!(
                "the server is not ready {}: {shown} answered {}. Wait for it to load, or give \
                 a longer --ready-timeout",
                waited_words(),
                a.said()
            ))
        }
        a @ Answer::Status { .. } => {
            return unchecked(format!("{shown} answered {}", a.said()), notices)
        }
        Answer::Refused(words) => {
            return Err(format!(
                "nothing listens at {} ({words}) {}: start the server, or check --endpoint's \
                 host and port",
                redact_url(ask.endpoint),
                waited_words()
            ))
        }
        Answer::TimedOut(after) => {
            return Err(format!(
                "{shown} did not answer within {} s: the server is overloaded or stuck, or \
                 --endpoint is not an HTTP server",
                after.as_secs_f64()
            ))
        }
        Answer::Tls {
            words,
            certificate: true,
        } => {
            return Err(format!(
                "{}: TLS handshake with {} failed: {words}; {}",
                redact_url(ask.endpoint),
                host_of(ask.endpoint),
                certificate_hint(ask.cacert)
            ))
        }
        Answer::Tls { words, .. } => {
            return Err(broken(ask, &shown, &format!("the TLS handshake failed: {words}")).await)
        }
        Answer::Broken(words) => return Err(broken(ask, &shown, &words).await),
    };
    let entries: Vec<Value> = match listed.get("data").and_then(Value::as_array) {
        Some(entries) => entries.clone(),
        None => {
            return unchecked(
                format!("{shown} answered JSON without a `data` list of models"),
                notices,
            )
        }
    };
    let ids: Vec<String> = entries
        .iter()
        .filter_map(|e| e.get("id")?.as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect();
    let chosen = choose::choose(&ids, ask.model, ask.options.allow_unlisted_model)?;
    notices.extend(chosen.notice.clone());
    let entry = entries
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(chosen.model.as_str()));
    let context = entry.and_then(fit::context_length);
    if let Some((key, n)) = context {
        if let Some(over) = fit::overflow(ask.workload, n) {
            if !ask.options.allow_overflow {
                return Err(fit::refusal(
                    ask.workload,
                    over,
                    n,
                    key,
                    &chosen.model,
                    ask.options.fit_locked,
                ));
            }
            notices.push(format!(
                "arbor run: {} of {} turns need more than the server's {n} tokens and will fail \
                 as context_overflow (--allow-overflow)",
                over.turns, over.of
            ));
        }
    }
    Ok(Ready {
        model: chosen.model,
        model_from: chosen.from,
        context_length: context.map(|(_, n)| n),
        waited,
        notices,
    })
}

/// The host of a URL, for a handshake's words.
fn host_of(endpoint: &str) -> String {
    url::Url::parse(endpoint)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| endpoint.to_string())
}

/// A connection that was made and broke: the other scheme if the server
/// speaks it, or the failure's words.
async fn broken(ask: &Ask<'_>, shown: &str, words: &str) -> String {
    if let Some(other) = scheme::other_scheme_answers(ask.endpoint).await {
        let speaks = if other.starts_with("https://") {
            "TLS"
        } else {
            "plain HTTP (no TLS)"
        };
        return format!(
            "{shown}: {words}: the server speaks {speaks} on this port: use --endpoint {}",
            redact_url(&other)
        );
    }
    format!("cannot reach {shown}: {words}")
}
