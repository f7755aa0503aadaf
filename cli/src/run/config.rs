//! The `config` section of `summary.json`: what produced a run, with every
//! secret left out.
//!
//! What it stores is redacted (the rules live in `crate::endpoint`): the
//! API key is never stored (only whether one was set); a header whose name
//! looks like a credential keeps its name and loses its value; user info
//! and credential-looking query parameters are taken out of the endpoint
//! URL.

use std::collections::BTreeMap;
use std::path::Path;

use arbor_engine::fit::FitReport;
use arbor_engine::policy::Policy;
use arbor_engine::time::Nanos;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::aggregate::RepeatOf;
use crate::args::{values, RunArgs};
use crate::endpoint::{is_secret_header, redact_url, RequestOptions, REDACTED};
use crate::report::PolicySummary;
use crate::server_metrics::MetricsConfig;
pub use crate::sharding::BarrierRecord;
use crate::sharding::ShardConfig;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunConfig {
    pub arbor_version: String,
    /// The inputs as `arbor plan` describes them.
    pub inputs: String,
    pub input_paths: Vec<String>,
    pub format: Option<String>,
    pub synthetic: Option<String>,
    pub seed: u64,
    pub policy: PolicySummary,
    /// `--isl-scale`/`--max-context`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReport>,
    /// The trace inputs' identity (docs/data.md, "Manifest"): absent for a
    /// synthetic workload alone or a stream (stdin, a FIFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<crate::data::manifest::Corpus>,
    /// Service model of the planned side.
    pub service: String,
    /// Base URL, redacted.
    pub endpoint: Option<String>,
    /// The URL every request went to, redacted.
    pub url: Option<String>,
    /// The built-in emulator's settings as flags, when it served the run
    /// (`null` against `--endpoint`).
    #[serde(default)]
    pub emulator: Option<String>,
    pub api: String,
    pub model: Option<String>,
    /// `flag` (--model) or `server` (first id of /v1/models).
    pub model_from: Option<String>,
    pub max_tokens_field: String,
    pub ignore_eos: bool,
    pub extra_body: Option<Map<String, Value>>,
    /// `--header` names and values; credential values redacted.
    pub headers: BTreeMap<String, String>,
    /// Whether an API key was found (the key itself is never stored).
    pub api_key_set: bool,
    /// Where it came from: `env NAME` or `file PATH`.
    #[serde(default)]
    pub api_key_from: Option<String>,
    /// `--cacert`: the PEM file whose CAs alone were trusted over https.
    #[serde(default)]
    pub cacert: Option<String>,
    /// `--insecure`: the server's TLS certificate was not verified.
    #[serde(default)]
    pub insecure: bool,
    pub timeout_s: f64,
    pub retries: u32,
    /// When prompts carried cache-bust markers (`--cache-bust`, a recipe):
    /// the salt they were moved by (`--cache-bust-salt`; a live capacity
    /// probe adds its number). Absent without markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bust_salt: Option<u64>,
    /// Connections opened before the clock starts (every thread's).
    pub warm_connections: usize,
    /// Client threads (`--threads`), each over its stripe of the plan.
    #[serde(default = "one_thread")]
    pub threads: u32,
    pub out: String,
    pub force: bool,
    /// The server metrics scraped into `metrics.jsonl`; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsConfig>,
    /// Under `--repeat N`: which run of the sequence this is, and the
    /// global seed its `seed` derives from; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<RepeatOf>,
    /// How the clock's start was agreed with the other shards
    /// (`--start-at` or the start barrier); absent for a run that started
    /// on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier: Option<BarrierRecord>,
    /// Under `--shard I/N`, and in a run `arbor merge` joined: the stripe
    /// and the rule each global policy followed (`crate::sharding`);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardConfig>,
}

/// A run directory from before `--threads` ran on one.
fn one_thread() -> u32 {
    1
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
        for (name, value) in &requests.auth.headers {
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
            arbor_version: env!("CARGO_PKG_VERSION").to_string(),
            inputs: description.to_string(),
            input_paths: args
                .input
                .inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            format: args.input.format.map(|f| f.name().to_string()),
            synthetic: args.input.synthetic.clone(),
            seed: policy.seed,
            policy: PolicySummary::new(policy, overlap_tolerance),
            fit: None,
            corpus: None,
            service: service.to_string(),
            endpoint: None,
            url: None,
            emulator: None,
            api: values::api_name(requests.api).to_string(),
            model: requests.model.clone(),
            model_from: requests.model.as_ref().map(|_| "flag".to_string()),
            max_tokens_field: requests.max_tokens_field.name().to_string(),
            ignore_eos: requests.ignore_eos,
            extra_body: requests.extra_body.clone(),
            headers,
            api_key_set: requests.auth.api_key.is_some(),
            api_key_from: requests.auth.api_key_from.clone(),
            cacert: requests
                .tls
                .cacert
                .as_ref()
                .map(|p| p.display().to_string()),
            insecure: requests.tls.insecure,
            timeout_s: requests.timeout.as_secs_f64(),
            retries: requests.retries,
            cache_bust_salt: requests.cache_bust.then_some(requests.cache_bust_salt),
            warm_connections: 0,
            threads: 1,
            out: out.display().to_string(),
            force: args.force,
            metrics: None,
            repeat: args.repeat_of,
            barrier: None,
            shard: None,
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
        self.model_from = Some(model_from.to_string());
        self.warm_connections = warm_connections;
    }
}
