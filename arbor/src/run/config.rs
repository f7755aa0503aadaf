//! The `config` section of `run.json` and `summary.json`
//! (`arbor_runs::config::RunConfig`) filled in from `arbor run`'s options,
//! with every secret left out.
//!
//! What it stores is redacted (the rules live in `arbor_backends::endpoint`): the
//! API key is never stored (only whether one was set); a header whose name
//! looks like a credential keeps its name and loses its value; user info
//! and credential-looking query parameters are taken out of the endpoint
//! URL.

use std::collections::BTreeMap;
use std::path::Path;

use arbor_engine::policy::Policy;
use arbor_engine::time::Nanos;
use arbor_runs::config::RunConfig;
use arbor_runs::policy::PolicySummary;

use crate::options::RunOptions;
use arbor_backends::endpoint::{is_secret_header, redact_url, RequestOptions, REDACTED};

/// The configuration of a run from its options, before the endpoint is known.
pub fn new(
    args: &RunOptions,
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
        subset: None,
        corpus: None,
        workload_hash: None,
        policy_hash: None,
        service: service.to_string(),
        endpoint: None,
        url: None,
        emulator: None,
        api: requests.api.name().to_string(),
        flatten_tools: args.input.flatten_tools,
        history: args.input.history.name().to_string(),
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
        retry_on: requests.retry_on.clone(),
        cache_bust_salt: requests.cache_bust.then_some(requests.cache_bust_salt),
        warm_connections: 0,
        warm_connections_proven: 0,
        threads: 1,
        out: out.display().to_string(),
        force: args.force,
        metrics: None,
        repeat: args.repeat_of,
        barrier: None,
        shard: None,
        session_routing: None,
        endpoints: Vec::new(),
        placement: None,
        replica_header: None,
    }
}

/// How requests were routed: the session-routing mode, and with several
/// endpoints every one of them (redacted) and the placement (`endpoint`
/// stays the first, for older readers).
pub fn set_routing(config: &mut RunConfig, endpoint: &str, requests: &RequestOptions) {
    config.session_routing = Some(requests.routing.name());
    if !requests.more_endpoints.is_empty() {
        config.endpoints = std::iter::once(endpoint)
            .chain(requests.more_endpoints.iter().map(String::as_str))
            .map(redact_url)
            .collect();
        config.placement = Some(requests.placement.name().to_string());
    }
    config.replica_header = requests.replica_header.clone();
}

/// What is known once the endpoint is.
pub fn set_endpoint(
    config: &mut RunConfig,
    endpoint: &str,
    url: &str,
    model: &str,
    model_from: &'static str,
    warm_connections: usize,
) {
    config.endpoint = Some(redact_url(endpoint));
    config.url = Some(redact_url(url));
    config.model = Some(model.to_string());
    config.model_from = Some(model_from.to_string());
    config.warm_connections = warm_connections;
}
