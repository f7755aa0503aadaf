//! The `config` section of `summary.json`: what produced a run, with every
//! secret left out.
//!
//! Owns redaction: the API key is never stored (only whether one was set);
//! a header whose name looks like a credential (`Authorization`, or a name
//! containing `auth`, `key`, `token`, `secret`, `cookie`, `password`) keeps
//! its name and loses its value; user info and credential-looking query
//! parameters are taken out of the endpoint URL.

use std::collections::BTreeMap;
use std::path::Path;

use arbor_backends::live::request::Api;
use arbor_engine::policy::Policy;
use arbor_engine::time::Nanos;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::args::RunArgs;
use crate::report::PolicySummary;

use super::RequestOptions;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// Does a header (or query parameter) name look like it carries a secret?
pub fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "authorization",
        "auth",
        "key",
        "token",
        "secret",
        "cookie",
        "password",
    ]
    .iter()
    .any(|word| lower.contains(word))
}

/// What of an unparseable `--header` can be shown: the part before any
/// `:` or space (a name, never a value).
pub fn redact_header_text(text: &str) -> String {
    let name: String = text
        .chars()
        .take_while(|c| *c != ':' && !c.is_whitespace())
        .collect();
    if name.len() < text.len() {
        format!("{name}... (value not shown)")
    } else {
        name
    }
}

/// The URL without user info or credential-looking query values.
pub fn redact_url(text: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(text) else {
        return text.to_string();
    };
    if !url.username().is_empty() {
        let _ = url.set_username("redacted");
    }
    if url.password().is_some() {
        let _ = url.set_password(Some("redacted"));
    }
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| {
                let v = if is_secret_header(&k) {
                    REDACTED.to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.as_str().trim_end_matches('/').to_string()
}

#[derive(Debug, Serialize)]
pub struct RunConfig {
    pub arbor_version: &'static str,
    /// The inputs as `arbor plan` describes them.
    pub inputs: String,
    pub input_paths: Vec<String>,
    pub format: Option<String>,
    pub synthetic: Option<String>,
    pub seed: u64,
    pub policy: PolicySummary,
    /// Service model of the planned side.
    pub service: String,
    /// Base URL, redacted.
    pub endpoint: Option<String>,
    /// The URL every request went to, redacted.
    pub url: Option<String>,
    pub api: &'static str,
    pub model: Option<String>,
    /// `flag` (--model) or `server` (first id of /v1/models).
    pub model_from: Option<&'static str>,
    pub max_tokens_field: &'static str,
    pub ignore_eos: bool,
    pub extra_body: Option<Map<String, Value>>,
    /// `--header` names and values; credential values redacted.
    pub headers: BTreeMap<String, String>,
    /// Whether OPENAI_API_KEY was set (the key itself is never stored).
    pub api_key_set: bool,
    pub timeout_s: f64,
    pub retries: u32,
    pub warm_connections: usize,
    pub out: String,
    pub force: bool,
}

impl RunConfig {
    pub fn new(
        args: &RunArgs,
        description: &str,
        policy: &Policy,
        overlap_tolerance: Nanos,
        service: &str,
        requests: &RequestOptions,
        out: &Path,
    ) -> RunConfig {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in &requests.headers {
            let shown = if is_secret_header(name.as_str()) {
                REDACTED.to_string()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            headers
                .entry(name.as_str().to_string())
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&shown);
                })
                .or_insert(shown);
        }
        RunConfig {
            arbor_version: env!("CARGO_PKG_VERSION"),
            inputs: description.to_string(),
            input_paths: args
                .input
                .inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            format: args.input.format.clone(),
            synthetic: args.input.synthetic.clone(),
            seed: policy.seed,
            policy: PolicySummary::new(policy, overlap_tolerance),
            service: service.to_string(),
            endpoint: None,
            url: None,
            api: match requests.api {
                Api::Chat => "chat",
                Api::Completions => "completions",
            },
            model: requests.model.clone(),
            model_from: requests.model.as_ref().map(|_| "flag"),
            max_tokens_field: requests.max_tokens_field.name(),
            ignore_eos: requests.ignore_eos,
            extra_body: requests.extra_body.clone(),
            headers,
            api_key_set: requests.api_key.is_some(),
            timeout_s: requests.timeout.as_secs_f64(),
            retries: requests.retries,
            warm_connections: 0,
            out: out.display().to_string(),
            force: args.force,
        }
    }

    /// What is known once the endpoint is.
    pub fn set_endpoint(
        &mut self,
        endpoint: &str,
        url: &str,
        model: &str,
        model_from: &'static str,
        warm_connections: usize,
    ) {
        self.endpoint = Some(redact_url(endpoint));
        self.url = Some(redact_url(url));
        self.model = Some(model.to_string());
        self.model_from = Some(model_from);
        self.warm_connections = warm_connections;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_recognised() {
        for name in [
            "Authorization",
            "proxy-authorization",
            "X-Api-Key",
            "api-key",
            "X-Auth-Token",
            "x-client-secret",
            "Cookie",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        for name in ["X-Trace-Id", "Content-Type", "x-request-source"] {
            assert!(!is_secret_header(name), "{name}");
        }
    }

    #[test]
    fn urls_lose_user_info_and_secret_query_values() {
        assert_eq!(
            redact_url("http://user:pw@h:8000/v1?api-key=sk-1&x=2"),
            "http://redacted:redacted@h:8000/v1?api-key=%3Credacted%3E&x=2"
        );
        assert_eq!(redact_url("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
    }

    #[test]
    fn bad_header_text_shows_no_value() {
        assert_eq!(
            redact_header_text("Authorization: Bearer sk-1"),
            "Authorization... (value not shown)"
        );
        assert_eq!(redact_header_text("X-Trace"), "X-Trace");
    }
}
