//! What [`diagnose`](super::diagnose) is asked ([`Options`]: the endpoint,
//! the model, headers, TLS trust and the key's source, the timeout, a
//! workload to fit), and the same checked once before any probe
//! ([`Checked`]: header maps with the keys, the TLS configuration, the
//! secrets never to show, the access flags to pass on, the workload's
//! sizes).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arbor_engine::Workload;
use arbor_error::Error;
use arbor_formats::input::Format;
use arbor_formats::load;
use reqwest::header::HeaderMap;

use crate::endpoint::{self, Auth};
use crate::live::request::Api;
use crate::live::tls::{ClientConfig, TlsOptions};
use crate::preflight::fit_advice::WorkloadSize;

/// What to probe, and with what.
#[derive(Debug, Clone)]
pub struct Options {
    /// The server's base URL, as [`endpoint::normalize_endpoint`] returns
    /// it.
    pub endpoint: String,
    /// The model to probe; `None` (or empty): the first the server lists.
    pub model: Option<String>,
    /// Extra request headers, `K=V` (`--header`).
    pub headers: Vec<String>,
    /// What to trust over `https://` (`--cacert`, `--insecure`).
    pub tls: TlsOptions,
    /// The environment variable holding the key (`--api-key-env`); `None`:
    /// each API's default variable.
    pub api_key_env: Option<String>,
    /// The file holding the key (`--api-key-file`).
    pub api_key_file: Option<PathBuf>,
    /// The bound of each probe.
    pub timeout: Duration,
    /// A workload to fit to the server's context length (trace files or
    /// directories); empty: none.
    pub inputs: Vec<PathBuf>,
    /// Read every input as this format instead of detecting it.
    pub format: Option<Format>,
}

impl Options {
    /// Probes `endpoint` with the defaults of `arbor doctor`: the model
    /// the server lists first, no extra header, the system's roots, each
    /// API's default key variable, 30 s a probe, no workload.
    pub fn new(endpoint: impl Into<String>) -> Options {
        Options {
            endpoint: endpoint.into(),
            model: None,
            headers: Vec::new(),
            tls: TlsOptions::default(),
            api_key_env: None,
            api_key_file: None,
            timeout: Duration::from_secs(30),
            inputs: Vec::new(),
            format: None,
        }
    }
}

/// The options checked: what the probes use.
pub(crate) struct Checked {
    pub(crate) endpoint: String,
    pub(crate) model: Option<String>,
    /// Headers of the OpenAI APIs' probes (and the `GET`s).
    pub(crate) headers: HeaderMap,
    /// Headers of the Messages probe: its key and `anthropic-version`.
    pub(crate) messages_headers: HeaderMap,
    /// Where the Messages probe's key came from (`env NAME`, `file PATH`),
    /// or the variable it was looked for in: safe to show.
    pub(crate) messages_key_from: String,
    /// Where the OpenAI APIs' credentials came from (`env NAME`, `file
    /// PATH`, `--header NAME`), when any are sent: safe to show.
    pub(crate) key_from: Option<String>,
    pub(crate) timeout: Duration,
    /// Strings never to print: the API key and secret header values.
    pub(crate) secrets: Vec<String>,
    /// For `https://`.
    pub(crate) tls: Option<Arc<ClientConfig>>,
    /// The `--cacert` file, if one was given (for the hint).
    pub(crate) cacert: Option<PathBuf>,
    /// The TLS and key flags given, passed on in the recommended command.
    pub(crate) access_flags: Vec<String>,
    /// The sizes of the workload given (INPUT), if any.
    pub(crate) workload: Option<WorkloadSize>,
}

impl Checked {
    /// Bad headers, a key that cannot be read, a `cacert` that cannot be
    /// used or a workload that cannot be loaded are bad input.
    pub(crate) fn of(options: &Options) -> Result<Checked, Error> {
        // The chat and completions probes send the OpenAI-style APIs' key,
        // the messages probe the Messages API's (each API's default
        // variable unless --api-key-env or --api-key-file names one key
        // for both).
        let auth_for = |api| {
            Auth::from_flags(
                &options.headers,
                options.api_key_env.as_deref(),
                options.api_key_file.as_deref(),
                api,
            )
        };
        let auth = auth_for(Api::Chat)?;
        let messages_auth = auth_for(Api::Messages)?;
        let mut secrets: Vec<String> = auth
            .headers
            .iter()
            .filter(|(_, v)| v.is_sensitive())
            .filter_map(|(_, v)| v.to_str().ok().map(str::to_string))
            .collect();
        secrets.extend(auth.api_key.clone());
        secrets.extend(messages_auth.api_key.clone());
        secrets.retain(|s| s.len() >= 4);
        let tls = endpoint::tls_config(&options.endpoint, &options.tls)?;
        let workload = if options.inputs.is_empty() {
            None
        } else {
            let mut w = Workload::default();
            for loaded in load::load_all(&options.inputs, options.format).map_err(Error::input)? {
                w.trees.extend(loaded.trees);
            }
            Some(WorkloadSize::of(&w))
        };
        Ok(Checked {
            endpoint: options.endpoint.clone(),
            model: options.model.clone().filter(|m| !m.is_empty()),
            headers: auth.header_map(),
            messages_headers: messages_auth.header_map(),
            messages_key_from: messages_auth.api_key_from.clone().unwrap_or_else(|| {
                format!(
                    "env {} (unset)",
                    endpoint::default_api_key_env(Api::Messages)
                )
            }),
            key_from: auth.key_source(),
            timeout: options.timeout,
            secrets,
            tls,
            access_flags: access_flags(options),
            cacert: options.tls.cacert.clone(),
            workload,
        })
    }
}

/// The TLS and key flags given, as `arbor run` takes them.
fn access_flags(options: &Options) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(path) = &options.tls.cacert {
        flags.extend(["--cacert".to_string(), path.display().to_string()]);
    }
    if options.tls.insecure {
        flags.push("--insecure".into());
    }
    if let Some(name) = &options.api_key_env {
        flags.extend(["--api-key-env".to_string(), name.clone()]);
    }
    if let Some(path) = &options.api_key_file {
        flags.extend(["--api-key-file".to_string(), path.display().to_string()]);
    }
    flags
}
