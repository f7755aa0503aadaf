//! The server side of a live run, shared by `arbor run`, `arbor doctor`
//! and `arbor record`: the endpoint's base URL, request headers and the API key (from
//! the environment or a file), TLS trust for `https://`, the request
//! options a run sends with, `/v1/models` answers (read under a cap), the
//! URL of a path on the endpoint ([`at`]: a query string stays last), and
//! redaction of what must never be shown (credential headers, URL user
//! info and secret query values: [`redact_url`]). The key is
//! never written to any output, log or error message: errors about it name
//! the variable or the file, never the value.
//!
//! Reads no flag: the front end hands in what the user gave.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::live::placement::Placement;
use crate::live::request::{Api, MaxTokensField, ANTHROPIC_VERSION};
use crate::live::routing::SessionRouting;
use crate::live::stream::ConnectError;
use crate::live::tls::{client_config, ClientConfig, TlsOptions};
use arbor_engine::prompt::CacheBust;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::{Map, Value};

use arbor_error::Error;

/// The environment variable the key of `api` is read from without
/// `--api-key-env` (never written anywhere): `ANTHROPIC_API_KEY` for the
/// Messages API (sent as `x-api-key`), `OPENAI_API_KEY` otherwise (sent as
/// `Authorization: Bearer ...`). The one place the default per API lives.
pub fn default_api_key_env(api: Api) -> &'static str {
    match api {
        Api::Messages => "ANTHROPIC_API_KEY",
        Api::Chat | Api::Completions | Api::Responses => "OPENAI_API_KEY",
    }
}

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// Request options from the flags, checked.
#[derive(Debug, Clone)]
pub struct RequestOptions {
    /// `None`: ask the server (`GET /v1/models`).
    pub model: Option<String>,
    pub api: Api,
    pub max_tokens_field: MaxTokensField,
    pub ignore_eos: bool,
    pub extra_body: Option<Map<String, Value>>,
    /// `--header` values and the API key.
    pub auth: Auth,
    /// What to trust over `https://`.
    pub tls: TlsOptions,
    pub timeout: Duration,
    pub retries: u32,
    /// Statuses a refused request is tried again on (`--retry-on`).
    pub retry_on: Vec<u16>,
    /// Prepend each play's cache-bust marker to its prompts (`--cache-bust`
    /// or a recipe).
    pub cache_bust: bool,
    /// `--cache-bust-salt`: moves every marker.
    pub cache_bust_salt: u64,
    /// What is checked before the clock starts.
    pub preflight: PreflightOptions,
    /// How requests say which conversation they belong to
    /// (`--session-routing`).
    pub routing: SessionRouting,
    /// The endpoints after the first (`--endpoint` repeated), normalized.
    pub more_endpoints: Vec<String>,
    /// How requests are spread over several endpoints (`--placement`).
    pub placement: Placement,
    /// The response header naming the replica that served a request
    /// (`--replica-header`).
    pub replica_header: Option<String>,
}

/// The pre-flight's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreflightOptions {
    /// `--ready-timeout`: how long a server that refuses connections or
    /// answers 502-504 is waited for (zero: asked once).
    pub ready_timeout: Duration,
    /// `--allow-unlisted-model`: send `--model` even when the server does
    /// not list it.
    pub allow_unlisted_model: bool,
    /// `--allow-overflow`: run turns longer than the server's context
    /// (they fail as `context_overflow`).
    pub allow_overflow: bool,
    /// A recipe locks `--max-context` and `--isl-scale` (docs/agentx.md):
    /// a workload that does not fit is advised a longer context instead.
    pub fit_locked: bool,
}

/// `--ready-timeout`'s default.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for PreflightOptions {
    fn default() -> Self {
        PreflightOptions {
            ready_timeout: DEFAULT_READY_TIMEOUT,
            allow_unlisted_model: false,
            allow_overflow: false,
            fit_locked: false,
        }
    }
}

impl RequestOptions {
    /// Where the markers of a run of `seed` come from; `None` without
    /// markers.
    pub fn markers(&self, seed: u64) -> Option<CacheBust> {
        self.cache_bust.then_some(CacheBust {
            seed,
            salt: self.cache_bust_salt,
        })
    }
}

/// Extra headers and the API key: what every request carries besides its
/// body. Its `Debug` shows no key.
#[derive(Clone, Default)]
pub struct Auth {
    /// `--header` values, in order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// From the environment or `--api-key-file`; never serialized.
    pub api_key: Option<String>,
    /// Where the key came from (`env OPENAI_API_KEY`, `file PATH`), when
    /// one was found: safe to show.
    pub api_key_from: Option<String>,
    /// The API the key and headers are for.
    pub api: Api,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("headers", &self.headers)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("api_key_from", &self.api_key_from)
            .field("api", &self.api)
            .finish()
    }
}

/// The header the Messages API takes its key in.
const X_API_KEY: &str = "x-api-key";

impl Auth {
    /// `--header K=V` values, and the API key: from `--api-key-file`, or
    /// from the environment variable `--api-key-env` names (default:
    /// [`default_api_key_env`] of `api`). A variable named explicitly must
    /// be set; the default one may be unset (no key). `api` also decides
    /// how the key is sent ([`Auth::header_map`]).
    pub fn from_flags(
        headers: &[String],
        api_key_env: Option<&str>,
        api_key_file: Option<&std::path::Path>,
        api: Api,
    ) -> Result<Auth, Error> {
        let headers = headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        let (api_key, api_key_from) = match (api_key_file, api_key_env) {
            (Some(path), _) => (
                Some(secret_from_file(path, "--api-key-file")?),
                Some(format!("file {}", path.display())),
            ),
            (None, Some(name)) => match env_key(name) {
                Some(key) => (Some(key), Some(format!("env {name}"))),
                None => {
                    return Err(Error::input(format!(
                        "--api-key-env: the environment variable {name} is not set (or empty)"
                    )))
                }
            },
            (None, None) => {
                let name = default_api_key_env(api);
                let key = env_key(name);
                let from = key.as_ref().map(|_| format!("env {name}"));
                (key, from)
            }
        };
        Ok(Auth {
            headers,
            api_key,
            api_key_from,
            api,
        })
    }

    /// Where the credentials every request carries came from, for advice
    /// (never the key): the key's source, else the first `--header` whose
    /// name looks like a credential.
    pub fn key_source(&self) -> Option<String> {
        self.api_key_from.clone().or_else(|| {
            self.headers
                .iter()
                .find(|(name, _)| is_secret_header(name.as_str()))
                .map(|(name, _)| format!("--header {name}"))
        })
    }

    /// Every request's extra headers: `--header` values, and the API key
    /// as `Authorization: Bearer ...` unless a `--header` set
    /// `Authorization`. For the Messages API: the key as `x-api-key`
    /// (unless a `--header` set it) and `anthropic-version: 2023-06-01`
    /// (unless a `--header` set it).
    pub fn header_map(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            map.append(name.clone(), value.clone());
        }
        let (key_header, key_value) = match self.api {
            Api::Messages => (HeaderName::from_static(X_API_KEY), self.api_key.clone()),
            Api::Chat | Api::Completions | Api::Responses => (
                AUTHORIZATION,
                self.api_key.as_ref().map(|key| format!("Bearer {key}")),
            ),
        };
        if let Some(text) = key_value.filter(|_| !map.contains_key(&key_header)) {
            if let Ok(mut value) = HeaderValue::from_str(&text) {
                value.set_sensitive(true);
                map.insert(key_header, value);
            }
        }
        if self.api == Api::Messages {
            let (name, value) = ANTHROPIC_VERSION;
            let name = HeaderName::from_static(name);
            if !map.contains_key(&name) {
                map.insert(name, HeaderValue::from_static(value));
            }
        }
        map
    }
}

/// The key in environment variable `name`, trimmed; `None` when unset or
/// blank.
fn env_key(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
}

/// The most a secret's file is read of (a key or token is one short
/// line; a file linked to `/dev/zero` is not read to the end).
const SECRET_FILE_CAP: u64 = 64 * 1024;

/// The first line of the secret file `path` (`--api-key-file`,
/// `--barrier-token-file`: `flag`), trimmed. Reads at most
/// [`SECRET_FILE_CAP`] bytes. Errors name the flag and the file, never
/// what it holds.
pub fn secret_from_file(path: &std::path::Path, flag: &str) -> Result<String, Error> {
    use std::io::Read;
    let at = || format!("{flag} {}", path.display());
    let mut text = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(SECRET_FILE_CAP + 1).read_to_end(&mut text))
        .map_err(|e| Error::input(format!("{}: cannot read: {}", at(), e.kind())))?;
    if text.len() as u64 > SECRET_FILE_CAP {
        return Err(Error::input(format!(
            "{}: longer than {} KiB, not a secret's file",
            at(),
            SECRET_FILE_CAP / 1024
        )));
    }
    let text = String::from_utf8(text)
        .map_err(|_| Error::input(format!("{}: is not UTF-8 text", at())))?;
    let secret = text.lines().next().unwrap_or("").trim();
    if secret.is_empty() {
        return Err(Error::input(format!(
            "{}: the first line holds no key or token",
            at()
        )));
    }
    Ok(secret.to_string())
}

/// The TLS configuration for `endpoint`: `None` for `http://` (with a
/// warning when TLS flags were given). With `--insecure`, prints the
/// warning on stderr. A `--cacert` file that
/// cannot be used is bad input (exit 2).
pub fn tls_config(
    endpoint: &str,
    options: &TlsOptions,
) -> Result<Option<Arc<ClientConfig>>, Error> {
    if !endpoint.starts_with("https://") {
        if options.cacert.is_some() || options.insecure {
            eprintln!(
                "warning: --cacert and --insecure have no effect without an https:// endpoint"
            );
        }
        return Ok(None);
    }
    let config = client_config(options).map_err(|e| Error::input(format!("--cacert: {e}")))?;
    if options.insecure {
        eprintln!("{INSECURE_WARNING}");
    }
    Ok(Some(config))
}

/// What `--insecure` prints.
pub const INSECURE_WARNING: &str = "warning: --insecure: the server's TLS certificate is not \
verified; anyone on the network path can read and change the traffic, the API key included";

/// A client for the few `reqwest` requests (`/v1/models`, doctor's
/// probes) that trusts what the run's own client trusts.
pub fn reqwest_builder(tls: Option<&Arc<ClientConfig>>) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder()
        // The endpoint is asked directly, as the request path does.
        .no_proxy()
        .tcp_nodelay(true);
    match tls {
        Some(config) => builder.use_preconfigured_tls(ClientConfig::clone(config)),
        None => builder,
    }
}

/// A connection that could not be made, as a failure (exit 1) that says
/// what to do about a certificate, worded for what was trusted
/// (`cacert`, when `--cacert` was given).
pub fn connect_failure(endpoint: &str, e: &ConnectError, cacert: Option<&Path>) -> Error {
    match e {
        ConnectError::Tls {
            certificate: true, ..
        } => Error::other(format!(
            "{}: {e}; {}",
            redact_url(endpoint),
            certificate_hint(cacert)
        )),
        _ => Error::other(format!("{}: {e}", redact_url(endpoint))),
    }
}

/// What to do about a certificate the client refused: trust its issuer
/// with `--cacert`, or, when a `--cacert` file was given, give the right
/// one.
pub fn certificate_hint(cacert: Option<&Path>) -> String {
    match cacert {
        None => "trust the certificate's issuer with --cacert FILE (PEM), or skip verification \
                 with --insecure"
            .to_string(),
        Some(path) => format!(
            "the certificate is neither one of --cacert {} nor signed by one of them: give the \
             server's own certificate or its issuer's, or skip verification with --insecure",
            path.display()
        ),
    }
}

/// The API paths an `--endpoint` may already end in: they are taken off,
/// so the request path is never doubled (`arbor run` prints the URL
/// requests go to).
const API_PATHS: [&str; 5] = [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/messages",
    "/v1/responses",
    "/v1",
];

/// `http://host:port`, `http://host:port/`, `http://host:port/v1` and
/// `http://host:port/v1/chat/completions` (or `/v1/completions`,
/// `/v1/messages`, `/v1/responses`) all name the same server: the base URL without a
/// trailing `/` or API path. A query string (`?api_key=...`) is kept at
/// the end, and [`at`] puts it back after the request's path. A clap value
/// parser (`--endpoint`); its errors show the URL redacted.
pub fn normalize_endpoint(text: &str) -> Result<String, String> {
    let shown = redact_url(text.trim());
    let mut url = reqwest::Url::parse(text.trim()).map_err(|e| {
        format!("expected a URL such as http://127.0.0.1:8000, got `{shown}` ({e})")
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "expected an http:// or https:// URL, got `{shown}`"
        ));
    }
    let query = url.query().filter(|q| !q.is_empty()).map(str::to_string);
    url.set_query(None);
    url.set_fragment(None);
    let mut base = url.as_str().trim_end_matches('/').to_string();
    if let Some(stripped) = API_PATHS.iter().find_map(|p| base.strip_suffix(p)) {
        base = stripped.trim_end_matches('/').to_string();
    }
    Ok(match query {
        Some(query) => format!("{base}?{query}"),
        None => base,
    })
}

/// The URL of `path` (`/v1/models`, `/metrics`, ...) on a base URL made by
/// [`normalize_endpoint`]: the path goes before the base's query string,
/// which stays at the end (`http://h/v1/chat/completions?api_key=...`).
pub fn at(base: &str, path: &str) -> String {
    match base.split_once('?') {
        Some((head, query)) => format!("{}{path}?{query}", head.trim_end_matches('/')),
        None => format!("{}{path}", base.trim_end_matches('/')),
    }
}

/// `--header K=V`. Parsed here rather than by clap so that an error never
/// shows a value (it may be a credential).
pub fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), Error> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(Error::input(format!(
            "--header: expected NAME=VALUE, got `{}`",
            redact_header_text(text)
        )));
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
        Error::input(format!(
            "--header: `{}` is not a valid header name",
            name.trim()
        ))
    })?;
    let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
        Error::input(format!(
            "--header {name}: the value is not a valid header value"
        ))
    })?;
    if is_secret_header(name.as_str()) {
        value.set_sensitive(true);
    }
    Ok((name, value))
}

/// Does a header (or query parameter) name look like it carries a secret?
/// The live client's rule ([`crate::live::redact::is_secret_name`]),
/// so what is hidden on the way out and in recorded errors is the same.
pub fn is_secret_header(name: &str) -> bool {
    crate::live::redact::is_secret_name(name)
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

/// What replaces the user info of a URL and a secret query value:
/// unlike [`REDACTED`], it needs no percent-encoding in a query.
pub const REDACTED_IN_URL: &str = "[redacted]";

/// Does a query parameter's name look like it carries a secret (`api_key`,
/// `key`, `token`, `access_token`, `sig`, anything with `key`, `token`,
/// `secret`, `password` or `auth` in it)?
pub fn is_secret_query_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    is_secret_header(&lower) || lower == "sig" || lower.contains("signature")
}

/// The URL as it may be shown (stderr, stdout, `summary.json`, `run.json`):
/// user info, a secret-looking query value ([`is_secret_query_name`]) and
/// the fragment replaced by `[redacted]`; the rest as given. Text that is
/// not a URL is shown only without `@`, `?` and `#`. Every URL arbor prints goes through
/// here.
pub fn redact_url(text: &str) -> String {
    let Some(url) = reqwest::Url::parse(text)
        .ok()
        .filter(reqwest::Url::has_host)
    else {
        // Not a URL with a host: shown only when nothing in it can be a
        // credential's place.
        return if text.contains(['@', '?', '#']) {
            REDACTED_IN_URL.to_string()
        } else {
            text.to_string()
        };
    };
    let mut shown = format!("{}://", url.scheme());
    if !url.username().is_empty() || url.password().is_some() {
        shown.push_str(REDACTED_IN_URL);
        shown.push('@');
    }
    shown.push_str(url.host_str().unwrap_or(""));
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    if url.path() != "/" {
        shown.push_str(url.path());
    }
    if let Some(query) = url.query() {
        shown.push('?');
        // `query_pairs` decodes the names of the non-empty pieces, in order.
        let pairs: Vec<String> = query
            .split('&')
            .filter(|piece| !piece.is_empty())
            .zip(url.query_pairs())
            .map(|(piece, (name, _))| {
                if is_secret_query_name(&name) {
                    let raw_name = piece.split('=').next().unwrap_or("");
                    format!("{raw_name}={REDACTED_IN_URL}")
                } else {
                    piece.to_string()
                }
            })
            .collect();
        shown.push_str(&pairs.join("&"));
    }
    if url.fragment().is_some() {
        shown.push('#');
        shown.push_str(REDACTED_IN_URL);
    }
    shown
}

/// A reqwest error and its causes, with any URL in them redacted
/// ([`redact_url`]): reqwest names the URL in its messages, and the URL
/// may carry credentials.
pub fn without_url(e: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = source {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s.to_string());
        source = s.source();
    }
    match e.url() {
        Some(url) => text.replace(url.as_str(), &redact_url(url.as_str())),
        None => text,
    }
}

/// The most bytes of a `/v1/models` answer read (a list of a few models is
/// a few kilobytes).
pub const MODELS_BODY_CAP: usize = 1 << 20;
/// The longest model id taken from a `/v1/models` answer, in bytes.
pub const MODEL_ID_CAP: usize = 512;

/// `data[0].id` of a `/v1/models` answer (the first non-empty id),
/// whatever its length: see [`MODEL_ID_CAP`].
pub fn first_model_id(body: &Value) -> Option<String> {
    body.get("data")?
        .as_array()?
        .iter()
        .find_map(|m| m.get("id")?.as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
}

/// The body of `response`, read chunk by chunk up to `cap` bytes: `Err`
/// with the words of the failure when it is longer (nothing more is
/// read) or the read fails.
pub async fn read_capped(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    let over = || format!("the answer is longer than the {cap}-byte cap");
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(over());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| without_url(&e))? {
        if body.len() + chunk.len() > cap {
            return Err(over());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An `http://` or `https://` URL with a host, kept as given
/// (`--metrics-url`).
pub fn http_url(text: &str) -> Result<String, String> {
    match url::Url::parse(text.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            Ok(text.trim().to_string())
        }
        Ok(_) => Err(format!("expected an http:// or https:// URL, got `{text}`")),
        Err(e) => Err(format!(
            "expected a URL such as http://127.0.0.1:8000/metrics, got `{text}` ({e})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_normalized() {
        for text in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/",
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v1/",
        ] {
            assert_eq!(
                normalize_endpoint(text).ok().as_deref(),
                Some("http://127.0.0.1:8000"),
                "{text}"
            );
        }
        assert_eq!(
            normalize_endpoint("https://h/api").ok().as_deref(),
            Some("https://h/api")
        );
        assert!(normalize_endpoint("ftp://h").is_err());
        assert!(normalize_endpoint("nonsense").is_err());
    }

    #[test]
    fn headers_parse_and_secrets_are_marked_sensitive() {
        let (name, value) = parse_header("X-Api-Key=abc=def").ok().unwrap();
        assert_eq!(name.as_str(), "x-api-key");
        assert_eq!(value.to_str().unwrap(), "abc=def");
        assert!(value.is_sensitive());
        let (_, value) = parse_header("X-Trace=1").ok().unwrap();
        assert!(!value.is_sensitive());
        let failure = parse_header("Authorization: Bearer sk-123").err().unwrap();
        assert!(failure.is_input(), "{}", failure.message);
        assert!(!failure.message.contains("sk-123"), "{}", failure.message);
        assert!(parse_header("bad name=1").is_err());
    }

    #[test]
    fn the_api_key_becomes_a_bearer_header_unless_one_is_given() {
        let mut auth = Auth {
            headers: vec![],
            api_key: Some("sk-test".into()),
            api_key_from: None,
            api: Api::Chat,
        };
        assert_eq!(auth.header_map()[AUTHORIZATION], "Bearer sk-test");
        assert!(auth.header_map().get(X_API_KEY).is_none());
        auth.headers = vec![parse_header("Authorization=Bearer other").ok().unwrap()];
        assert_eq!(auth.header_map()[AUTHORIZATION], "Bearer other");
    }

    #[test]
    fn the_messages_api_takes_its_key_as_x_api_key_with_a_version() {
        let mut auth = Auth {
            headers: vec![],
            api_key: Some("sk-ant-test".into()),
            api_key_from: None,
            api: Api::Messages,
        };
        let map = auth.header_map();
        assert_eq!(map[X_API_KEY], "sk-ant-test");
        assert!(map[X_API_KEY].is_sensitive());
        assert_eq!(map["anthropic-version"], "2023-06-01");
        assert!(map.get(AUTHORIZATION).is_none());
        auth.headers = vec![
            parse_header("x-api-key=other").ok().unwrap(),
            parse_header("anthropic-version=2024-01-01").ok().unwrap(),
        ];
        let map = auth.header_map();
        assert_eq!(map[X_API_KEY], "other");
        assert_eq!(map["anthropic-version"], "2024-01-01");
        assert_eq!(default_api_key_env(Api::Messages), "ANTHROPIC_API_KEY");
        assert_eq!(default_api_key_env(Api::Chat), "OPENAI_API_KEY");
        assert_eq!(default_api_key_env(Api::Completions), "OPENAI_API_KEY");
    }

    #[test]
    fn keys_come_from_a_file_or_a_named_variable_and_errors_never_show_them() {
        let dir = std::env::temp_dir().join(format!("arbor-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("key");
        std::fs::write(&file, "sk-from-file-123\nsecond line\n").unwrap();
        let auth = Auth::from_flags(&[], None, Some(&file), Api::Chat)
            .ok()
            .unwrap();
        assert_eq!(auth.api_key.as_deref(), Some("sk-from-file-123"));
        assert_eq!(auth.api_key_from, Some(format!("file {}", file.display())));
        // The Messages API takes the same file's key as x-api-key.
        let messages = Auth::from_flags(&[], None, Some(&file), Api::Messages)
            .ok()
            .unwrap()
            .header_map();
        assert_eq!(messages[X_API_KEY], "sk-from-file-123");
        assert!(messages.get(AUTHORIZATION).is_none());
        std::fs::write(&file, "\n").unwrap();
        let failure = Auth::from_flags(&[], None, Some(&file), Api::Chat)
            .err()
            .unwrap();
        assert!(
            failure.message.contains("holds no key"),
            "{}",
            failure.message
        );
        let unset = Some("ARBOR_TEST_SURELY_UNSET_KEY");
        let failure = Auth::from_flags(&[], unset, None, Api::Chat).err().unwrap();
        assert!(failure.is_input(), "{}", failure.message);
        assert!(failure.message.contains("ARBOR_TEST_SURELY_UNSET_KEY"));
        assert_eq!(default_api_key_env(Api::Chat), "OPENAI_API_KEY");
        assert!(!format!("{auth:?}").contains("sk-from-file-123"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_first_listed_model_is_used() {
        let body = serde_json::json!({"object":"list","data":[{"id":"m1"},{"id":"m2"}]});
        assert_eq!(first_model_id(&body).as_deref(), Some("m1"));
        assert_eq!(first_model_id(&serde_json::json!({"data":[]})), None);
        assert_eq!(first_model_id(&serde_json::json!({})), None);
    }

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
            "http://[redacted]@h:8000/v1?api-key=[redacted]&x=2"
        );
        assert_eq!(redact_url("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
        assert_eq!(
            redact_url("http://127.0.0.1:8000/"),
            "http://127.0.0.1:8000"
        );
        assert_eq!(
            redact_url("https://h/v1/models?key=a&token=b&access_token=c&sig=d&Secret_x=e&pw_auth=f&q=1#frag"),
            "https://h/v1/models?key=[redacted]&token=[redacted]&access_token=[redacted]\
             &sig=[redacted]&Secret_x=[redacted]&pw_auth=[redacted]&q=1#[redacted]"
        );
        assert_eq!(
            redact_url("http://h?api%5Fkey=sk-2"),
            "http://h?api%5Fkey=[redacted]"
        );
        assert_eq!(redact_url("not a url?sk-3"), "[redacted]");
        assert_eq!(redact_url("localhost8000"), "localhost8000");
        let shown = redact_url("http://user:pw-9@h/?api_key=sk-1");
        assert!(
            !shown.contains("pw-9") && !shown.contains("sk-1"),
            "{shown}"
        );
    }

    #[test]
    fn query_strings_stay_after_the_path_and_api_paths_are_not_doubled() {
        let base = normalize_endpoint("http://u:p@h:8000/v1?api_key=X").unwrap();
        assert_eq!(base, "http://u:p@h:8000?api_key=X");
        assert_eq!(
            at(&base, "/v1/chat/completions"),
            "http://u:p@h:8000/v1/chat/completions?api_key=X"
        );
        for path in [
            "/v1/chat/completions",
            "/v1/completions",
            "/v1/messages",
            "/v1/messages/",
            "/v1/responses",
        ] {
            assert_eq!(
                normalize_endpoint(&format!("https://h/api{path}?k=1")).unwrap(),
                "https://h/api?k=1",
                "{path}"
            );
        }
        assert_eq!(at("http://h:1", "/metrics"), "http://h:1/metrics");
        assert_eq!(at("http://h:1/", "/metrics"), "http://h:1/metrics");
        let err = normalize_endpoint("ftp://u:sk-9@h").unwrap_err();
        assert!(!err.contains("sk-9"), "{err}");
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
