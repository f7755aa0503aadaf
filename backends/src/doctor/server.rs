//! The probes before any model request: over `https://` the TLS handshake
//! (version, cipher, ALPN, or the certificate problem in plain words),
//! `GET /health`, and `GET /v1/models` (the models, the one to use, its
//! context length and the fit advice for a workload). Each adds its
//! findings to the report; each says whether the next can go on.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::options::Checked;
use super::report::{Report, Status};
use super::words::{root_cause, short};
use crate::endpoint;
use crate::live::exchange::Target;
use crate::live::stream::ConnectError;
use crate::preflight;
use crate::preflight::fit_advice;

enum GetError {
    Connect(String),
    Timeout,
    Other(String),
}

/// `GET url`: status and body, bounded by the timeout.
async fn get(
    client: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), GetError> {
    let exchange = async {
        let response = client
            .get(url)
            .headers(headers.clone())
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    GetError::Connect(root_cause(&e))
                } else if e.is_timeout() {
                    GetError::Timeout
                } else {
                    GetError::Other(endpoint::without_url(&e))
                }
            })?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| GetError::Other(endpoint::without_url(&e)))?;
        Ok((status, body.to_vec()))
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(GetError::Timeout),
    }
}

/// Over `https://`: the TLS handshake of the run's own client. False when
/// it failed (nothing else can be probed). Nothing to do for `http://`.
pub(crate) async fn probe_tls(options: &Checked, report: &mut Report) -> bool {
    let Some(tls) = &options.tls else {
        return true;
    };
    let url = endpoint::at(&options.endpoint, "/v1/models");
    let target = match Target::new(
        &url,
        &options.headers,
        options.timeout,
        0,
        Some(tls.clone()),
    ) {
        Ok(target) => target,
        Err(message) => {
            report.push("tls", Status::Fail, message, None);
            return false;
        }
    };
    match target.handshake().await {
        Ok(negotiated) => {
            let Some(n) = negotiated else { return true };
            let mut seen = format!("{}, cipher {}", n.version, n.cipher);
            match &n.alpn {
                Some(alpn) => seen.push_str(&format!(", ALPN {alpn}")),
                None => seen.push_str(", no ALPN (the server did not choose a protocol)"),
            }
            report.tls_version = Some(n.version);
            report.tls_cipher = Some(n.cipher);
            if options.access_flags.iter().any(|f| f == "--insecure") {
                seen.push_str("; the certificate was not verified (--insecure)");
                report.push(
                    "tls",
                    Status::Warn,
                    seen,
                    Some("trust the server's CA with --cacert FILE instead of --insecure".into()),
                );
            } else {
                report.push("tls", Status::Ok, seen, None);
            }
            true
        }
        Err(ConnectError::Tls {
            words, certificate, ..
        }) => {
            let action = if certificate {
                endpoint::certificate_hint(options.cacert.as_deref())
            } else {
                "check that the server speaks TLS (https) on this port".to_string()
            };
            report.push("tls", Status::Fail, words, Some(action));
            false
        }
        Err(e @ ConnectError::Tcp { .. }) => {
            report.push(
                "tls",
                Status::Fail,
                short(&e.to_string()),
                Some("check the URL and that the server is running and listening there".into()),
            );
            false
        }
    }
}

/// `GET /health`. False when the server cannot be reached at all.
pub(crate) async fn probe_health(
    client: &reqwest::Client,
    options: &Checked,
    report: &mut Report,
) -> bool {
    let url = endpoint::at(&options.endpoint, "/health");
    match get(client, &url, &options.headers, options.timeout).await {
        Ok((status, _)) => {
            report.health_status = Some(status);
            match status {
                200..=299 => report.push("health", Status::Ok, format!("GET /health: HTTP {status}"), None),
                404 => report.push(
                    "health",
                    Status::Warn,
                    "GET /health: HTTP 404 (no health endpoint)",
                    Some("nothing to do: many servers (llama.cpp's Python server among them) have no /health, and arbor run does not need it".into()),
                ),
                _ => report.push(
                    "health",
                    Status::Warn,
                    format!("GET /health: HTTP {status}"),
                    Some("the server may still be loading or be unhealthy: check its log".into()),
                ),
            }
            true
        }
        Err(GetError::Connect(message)) => {
            report.push(
                "health",
                Status::Fail,
                format!("cannot connect to {}: {}", report.endpoint, short(&message)),
                Some("check the URL and that the server is running and listening there".into()),
            );
            false
        }
        Err(GetError::Timeout) => {
            report.push(
                "health",
                Status::Warn,
                format!(
                    "GET /health: no answer within {} s",
                    options.timeout.as_secs_f64()
                ),
                Some("the server accepts connections but is slow to answer: check its load".into()),
            );
            true
        }
        Err(GetError::Other(message)) => {
            report.push(
                "health",
                Status::Warn,
                format!("GET /health failed: {}", short(&message)),
                None,
            );
            true
        }
    }
}

/// `GET /v1/models`: the models, the one to use and its context length.
/// `None` when there is no model to probe with.
pub(crate) async fn probe_models(
    client: &reqwest::Client,
    options: &Checked,
    report: &mut Report,
) -> Option<String> {
    let url = endpoint::at(&options.endpoint, "/v1/models");
    let answer = get(client, &url, &options.headers, options.timeout).await;
    let listed: Result<Vec<Value>, String> = match answer {
        Ok((status, body)) if (200..300).contains(&status) => {
            match serde_json::from_slice::<Value>(&body) {
                Ok(v) => match v.get("data").and_then(Value::as_array) {
                    Some(data) => Ok(data.clone()),
                    None => Err("GET /v1/models: no `data` list in the answer".into()),
                },
                Err(_) => Err("GET /v1/models: the answer is not JSON".into()),
            }
        }
        Ok((status @ (401 | 403), body)) => {
            report.push(
                "models",
                Status::Fail,
                format!("GET /v1/models: HTTP {status}"),
                Some(preflight::auth_refusal(
                    status,
                    &preflight::answer::server_words(&body),
                    options.key_from.as_deref(),
                    endpoint::default_api_key_env(crate::live::request::Api::Chat),
                )),
            );
            return None;
        }
        Ok((status, _)) => Err(format!("GET /v1/models: HTTP {status}")),
        Err(GetError::Connect(m)) => Err(format!("GET /v1/models: cannot connect: {}", short(&m))),
        Err(GetError::Timeout) => Err(format!(
            "GET /v1/models: no answer within {} s",
            options.timeout.as_secs_f64()
        )),
        Err(GetError::Other(m)) => Err(format!("GET /v1/models failed: {}", short(&m))),
    };
    let entries = match listed {
        Ok(entries) => entries,
        Err(seen) => {
            return match &options.model {
                Some(m) => {
                    report.push(
                        "models",
                        Status::Warn,
                        format!("{seen}; probing with --model {m}"),
                        None,
                    );
                    report.model = Some(m.clone());
                    report.model_from = Some("flag");
                    Some(m.clone())
                }
                None => {
                    report.push(
                        "models",
                        Status::Fail,
                        seen,
                        Some("pass --model M (to arbor doctor and arbor run)".into()),
                    );
                    None
                }
            };
        }
    };
    report.models = entries
        .iter()
        .filter_map(|m| m.get("id")?.as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect();
    let listing = if report.models.is_empty() {
        "no models listed".to_string()
    } else {
        format!(
            "{} listed ({})",
            report.models.len(),
            report.models.join(", ")
        )
    };
    let model = match &options.model {
        Some(m) if report.models.contains(m) => {
            report.push(
                "models",
                Status::Ok,
                format!("{listing}; using {m} (--model)"),
                None,
            );
            m.clone()
        }
        Some(m) => {
            report.push(
                "models",
                Status::Warn,
                format!("{listing}; --model {m} is not among them"),
                Some("check the spelling of --model; the probes go on with it".into()),
            );
            m.clone()
        }
        None => match report.models.first().cloned() {
            Some(first) => {
                let action = (report.models.len() > 1).then(|| {
                    "the probes use the first listed model; arbor run refuses to guess among \
                     several: pass --model M to both"
                        .to_string()
                });
                report.push(
                    "models",
                    Status::Ok,
                    format!("{listing}; using {first}"),
                    action,
                );
                first
            }
            None => {
                report.push(
                    "models",
                    Status::Fail,
                    "GET /v1/models lists no models".to_string(),
                    Some("pass --model M (to arbor doctor and arbor run)".into()),
                );
                return None;
            }
        },
    };
    report.model_from = Some(if options.model.is_some() {
        "flag"
    } else {
        "server"
    });
    report.model = Some(model.clone());

    let entry = entries
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model.as_str()));
    let context = entry.and_then(preflight::fit::context_length);
    match context {
        Some((key, n)) => {
            report.context_length = Some(n);
            report.context_length_key = Some(key.to_string());
            let advice = fit_advice::advise(n, options.workload);
            report.workload_largest_prompt = options.workload.map(|w| w.largest_prompt);
            report.suggested_max_context = Some(advice.max_context);
            report.suggested_isl_scale = advice.isl_scale;
            report.push(
                "context_length",
                Status::Ok,
                format!("{n} tokens ({key} of {model})"),
                Some(advice.text),
            );
        }
        None => report.push(
            "context_length",
            Status::Warn,
            format!("/v1/models reports no context length for {model} (none of max_model_len, context_length, max_context_length)"),
            Some("know the server's own setting (llama.cpp: --n_ctx): turns whose prompt and output exceed it fail as context_overflow in a run".into()),
        ),
    }
    Some(model)
}
