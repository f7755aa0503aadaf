//! One live request's HTTP exchange and its stamps.
//!
//! Owns running a request over [`super::http`] with byte-arrival
//! timestamps (docs/run.md): `sent` just before a connection is
//! taken for it, `headers` when the read completing the response head
//! returns, `first_byte` and each content chunk when the read bringing them
//! returns (stamped before the bytes are decoded or scanned), `done` when
//! the read holding `[DONE]` (a Messages stream's `message_stop`, a
//! Responses stream's terminal event, or the body's end) returns. Over
//! TLS a read returns decrypted bytes, and is stamped when it returns, the
//! same way. A stream is read as its [`Target::api`] speaks: OpenAI chat
//! and completions payloads by [`super::sse`], Anthropic events by
//! [`super::messages_sse`], Responses events by [`super::responses_sse`];
//! under `--history live` the generated text is kept too
//! ([`super::history`]). Errors are classed, never raised: a
//! request always ends in a [`Response`]; a failed TLS handshake is a
//! `connect` error, not retried.
//!
//! Retries and resends (docs/reliability.md): a pooled connection the
//! server had closed is seen by the pool's zero-timeout peek and dropped
//! before anything is written (no attempt, no resend); a failed connect is
//! retried up to `retries` times (nothing was sent); a request is sent
//! again, once, only when a write failed with nothing of it written. A
//! connection that took the request, or part of it, and then closed before
//! a response is an error: the request may have reached the server. Every
//! try counts in [`Response::attempts`], the resend in
//! [`Response::resends`].
//!
//! Caps: an error body keeps [`ERROR_BODY_BYTES`]; the head, line and
//! chunk-size caps are `http`'s, `sse`'s and `framing`'s, and reaching one
//! is an `oversized` error. Error messages are recorded with the target's
//! secrets redacted ([`super::redact`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use arbor_engine::time::Nanos;
use arbor_sim::emulator::REQUEST_ID_HEADER;

use super::framing::{BodyDecoder, FramingError};
use super::history;
use super::http::{
    read_head, read_small_body, render_head_prefix, Conn, Endpoint, Head, HeadError, Pool,
    WriteError,
};
use super::messages_sse::{self, MessagesUsage};
use super::record::{classify_message, OVERLOADED_STATUS};
use super::redact::Secrets;
use super::request::Api;
use super::responses_sse;
use super::retry;
use super::routing::{write_headers, Session, SessionRouting};
use super::sse::{classify, data_of, LineSplitter};
use super::stream::{ConnectError, Dial};
use super::tls::{ClientConfig, Negotiated};
use arbor_runs::record::{ErrorCategory, RequestError, Response};

/// The most of an error body kept in a record, in bytes.
pub const ERROR_BODY_BYTES: usize = 2048;

/// The most of a malformed SSE line shown in its error message, in
/// characters.
const SHOWN_LINE_CHARS: usize = 200;

/// How long a finished stream's connection may take to deliver the end of
/// its body (after `[DONE]`) before it is dropped instead of reused.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// Where and how requests go. Cheap to clone: clones share one pool.
#[derive(Debug, Clone)]
pub struct Target {
    pool: Arc<Pool>,
    endpoint: Endpoint,
    /// Extra headers (`name`, `value`), the API key's among them.
    headers: Arc<[(String, Vec<u8>)]>,
    /// The secret values among them, redacted from recorded errors.
    secrets: Arc<Secrets>,
    /// `POST <path> HTTP/1.1`, `Host`, `Content-Type` and the extra headers.
    post_prefix: Arc<[u8]>,
    pub timeout: Duration,
    /// Retries of a request whose connection could not be made, and (with
    /// `retry_on`) of one refused with a listed status.
    pub retries: u32,
    /// Statuses a refused request is tried again on (`--retry-on`; empty:
    /// none), after the wait [`super::retry::wait`] says.
    pub retry_on: Arc<[u16]>,
    /// The API the requests speak, which decides how a stream is read
    /// (chat by default; set it with the URL's path).
    pub api: Api,
    /// The model the requests ask for: a stream whose first payload names
    /// another is recorded with the name it gave (`answered_model`).
    pub model: Option<Arc<str>>,
    /// How a request's head says which conversation it belongs to
    /// (`--session-routing`; the default `affinity`), for a request given
    /// a [`Session`].
    pub routing: SessionRouting,
    /// The response header naming the replica that served a request
    /// (`--replica-header`, lower case): its value goes to `served_by`.
    pub replica_header: Option<Arc<str>>,
}

impl Target {
    /// A target for `url` (`http[s]://host:port/path`). `headers` are sent
    /// with every request; `tls` is the configuration an `https://` URL
    /// needs (see [`super::tls::client_config`]).
    pub fn new(
        url: &str,
        headers: &http::HeaderMap,
        timeout: Duration,
        retries: u32,
        tls: Option<Arc<ClientConfig>>,
    ) -> Result<Target, String> {
        let endpoint = Endpoint::parse(url)?;
        let dial = match (endpoint.tls, tls) {
            (false, _) => Dial::plain(endpoint.addr),
            (true, Some(config)) => Dial::tls(endpoint.addr, &endpoint.server_name, config)?,
            (true, None) => return Err(format!("`{url}`: https needs a TLS configuration")),
        };
        let headers: Arc<[(String, Vec<u8>)]> = headers
            .iter()
            .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
            .collect();
        let secrets = Secrets::of(headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
        let mut fixed = headers.to_vec();
        fixed.push(("Content-Type".into(), b"application/json".to_vec()));
        let post_prefix = render_head_prefix("POST", &endpoint, &fixed).into();
        Ok(Target {
            pool: Arc::new(Pool::new(dial)),
            endpoint,
            headers,
            secrets: Arc::new(secrets),
            post_prefix,
            timeout,
            retries,
            retry_on: Arc::from(Vec::new()),
            api: Api::Chat,
            model: None,
            routing: SessionRouting::default(),
            replica_header: None,
        })
    }

    /// The URL requests go to.
    pub fn url(&self) -> String {
        format!(
            "{}://{}{}",
            self.endpoint.scheme(),
            self.endpoint.host,
            self.endpoint.path
        )
    }

    /// Opens one connection (for `https://`, with its TLS handshake) and
    /// leaves it in the pool: what the handshake settled on (`None` for
    /// plain HTTP), or why no connection could be made. Bounded by the
    /// timeout, at most 30 s.
    pub async fn handshake(&self) -> Result<Option<Negotiated>, ConnectError> {
        let limit = self.timeout.min(Duration::from_secs(30));
        let connect = tokio::time::timeout(limit, self.pool.connect());
        let conn = connect.await.map_err(|_| ConnectError::Tcp {
            addr: self.pool.addr(),
            source: std::io::ErrorKind::TimedOut.into(),
        })??;
        let negotiated = conn.stream.negotiated();
        self.pool.put(conn);
        Ok(negotiated)
    }

    /// Idle connections in the pool.
    pub fn idle_connections(&self) -> usize {
        self.pool.idle()
    }

    /// Opens `connections` connections, each proven by a `GET path` the
    /// server answered in full on a connection it keeps alive, and leaves
    /// them in the pool: how many were proven (the others are dropped; a
    /// request opens its own connection later, inside its time). At most
    /// [`WARM_PARALLEL`] connects are in flight at once, so a server with a
    /// short accept queue drops no SYN (a dropped SYN costs a second).
    pub async fn warm(&self, connections: usize, path: &str) -> usize {
        let get = render_head_prefix("GET", &self.endpoint.with_path(path), &self.headers);
        let get: Arc<[u8]> = [get.as_slice(), b"\r\n"].concat().into();
        let workers = connections.min(WARM_PARALLEL);
        let proven = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::with_capacity(workers);
        for worker in 0..workers {
            let pool = Arc::clone(&self.pool);
            let get = Arc::clone(&get);
            let proven = Arc::clone(&proven);
            // Worker w opens connections w, w + workers, ...
            let count = (connections - worker).div_ceil(workers);
            tasks.push(tokio::spawn(async move {
                for _ in 0..count {
                    if let Some(conn) = warm_one(&pool, &get).await {
                        pool.put(conn);
                        proven.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }));
        }
        let limit = tokio::time::Instant::now() + self.timeout.min(Duration::from_secs(30));
        for task in tasks {
            let _ = tokio::time::timeout_at(limit, task).await;
        }
        proven.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sends a request at once from the caller's task, on an idle
    /// connection (one the pool's peek found open), writing what the socket
    /// takes without waiting; the request's own task then writes any rest
    /// and reads the answer ([`execute`] with the returned [`Started`]).
    /// `None` when no connection is idle: [`execute`] does it all. A failed
    /// write is left to [`execute`], which judges it by the resend rule
    /// (the module doc) exactly as its own writes.
    pub fn send_now(&self, request_id: u64, body: &[u8], epoch: Instant) -> Option<Started> {
        self.send_now_in(request_id, body, epoch, None)
    }

    /// [`Target::send_now`] of a request of `session` (its head carries
    /// what [`Target::routing`] sends).
    pub fn send_now_in(
        &self,
        request_id: u64,
        body: &[u8],
        epoch: Instant,
        session: Option<&Session>,
    ) -> Option<Started> {
        let mut conn = self.pool.take()?;
        let head = self.post_head(request_id, body.len(), session);
        let sent = nanos_since(epoch);
        let (written, failed) = match conn.try_write_request(&head, body) {
            Ok(written) => (written, None),
            Err(e) => (e.written, Some(e)),
        };
        Some(Started {
            conn,
            head,
            written,
            failed,
            sent,
        })
    }

    /// The head of a POST carrying `body_len` bytes, with the session
    /// routing headers of `session`.
    fn post_head(&self, request_id: u64, body_len: usize, session: Option<&Session>) -> Vec<u8> {
        use std::io::Write;
        let room = if session.is_some() { 200 } else { 80 };
        let mut head = Vec::with_capacity(self.post_prefix.len() + room);
        head.extend_from_slice(&self.post_prefix);
        if let Some(session) = session {
            write_headers(&mut head, &self.routing, session);
        }
        let _ = write!(
            head,
            "{REQUEST_ID_HEADER}: {request_id}\r\nContent-Length: {body_len}\r\n\r\n"
        );
        head
    }
}

/// Connections opened at once when warming the pool.
pub const WARM_PARALLEL: usize = 32;

/// A connection that answered `get` in full and may be reused.
async fn warm_one(pool: &Pool, get: &[u8]) -> Option<Conn> {
    let mut conn = pool.connect().await.ok()?;
    conn.write_request(get, &[], 0).await.ok()?;
    let head = read_head(&mut conn, || 0).await.ok()?;
    let (_, clean) = read_small_body(&mut conn, &head, 0).await;
    (clean && head.keep_alive).then_some(conn)
}

/// A request sent, or begun, by [`Target::send_now`].
#[derive(Debug)]
pub struct Started {
    conn: Conn,
    head: Vec<u8>,
    /// Bytes of head and body written so far.
    written: usize,
    /// The write failed (after `written` bytes).
    failed: Option<WriteError>,
    sent: Nanos,
}

impl Started {
    /// The request's `sent` stamp.
    pub fn sent(&self) -> Nanos {
        self.sent
    }
}

fn nanos_since(epoch: Instant) -> Nanos {
    epoch.elapsed().as_nanos() as Nanos
}

fn error(category: ErrorCategory, message: impl Into<String>) -> RequestError {
    RequestError {
        category,
        message: message.into(),
        http_status: None,
        retry_after_s: None,
    }
}

/// Runs one request, or finishes one begun by [`Target::send_now`]
/// (`started`). `on_sent` is called with the `sent` stamp as soon as the
/// request is handed over (the scheduler anchors `Start` edges there),
/// unless it was `started` (its caller has the stamp); `on_head` when the
/// response head is in (the server has the request).
#[allow(clippy::too_many_arguments)]
pub async fn execute(
    target: &Target,
    body: &[u8],
    request_id: u64,
    epoch: Instant,
    expected_chunks: usize,
    started: Option<Started>,
    on_sent: impl FnOnce(Nanos),
    on_head: impl FnOnce(),
) -> Response {
    let mut response = Response::default();
    execute_into(
        &mut response,
        target,
        body,
        request_id,
        epoch,
        expected_chunks,
        started,
        None,
        on_sent,
        on_head,
    )
    .await;
    response
}

/// The most content stamps reserved ahead for a request (512 KiB).
const RESERVED_CHUNKS: usize = 1 << 16;

/// [`execute`], measuring into `response` as it goes: a caller that drops
/// this future midway (a cancel at the end of the grace period) keeps
/// every stamp, the status, the chunks and the attempts measured so far.
/// An error message is recorded with the target's secrets redacted. A
/// request of `session` carries its session routing headers (when not
/// `started`: those wrote their own).
#[allow(clippy::too_many_arguments)]
pub async fn execute_into(
    response: &mut Response,
    target: &Target,
    body: &[u8],
    request_id: u64,
    epoch: Instant,
    expected_chunks: usize,
    started: Option<Started>,
    session: Option<&Session>,
    on_sent: impl FnOnce(Nanos),
    on_head: impl FnOnce(),
) {
    // Reserved for the chunks planned, up to a bound: past it the stamps
    // grow as chunks arrive (a plan's count is not the server's promise).
    response
        .stamps
        .content
        .reserve(expected_chunks.min(RESERVED_CHUNKS) + 2);
    let deadline = tokio::time::Instant::now() + target.timeout;
    let clock = || nanos_since(epoch);
    let (begun, request_head, sent) = match started {
        Some(s) => (Some((s.conn, s.written, s.failed)), s.head, s.sent),
        None => {
            let head = target.post_head(request_id, body.len(), session);
            let sent = clock();
            on_sent(sent);
            (None, head, sent)
        }
    };
    response.stamps.sent = Some(sent);
    response.attempts = 1;
    let request = Outgoing {
        head: &request_head,
        body,
        deadline,
        epoch,
    };
    let mut begun = begun;
    let mut on_head = Some(on_head);
    let mut retried = 0;
    while let Some((conn, head)) = request.deliver(target, begun.take(), response).await {
        response.stamps.headers = Some(head.at);
        response.http_status = Some(head.status);
        heard(target, &conn.buf[..head.body_start], response);
        if let Some(on_head) = on_head.take() {
            on_head();
        }
        let answer = Answer {
            target,
            conn,
            head,
            deadline,
            epoch,
        };
        let status = answer.head.status;
        if (200..300).contains(&status) {
            answer.read_stream(response).await;
            break;
        }
        answer.failed_status(response).await;
        // `--retry-on`: a refusal before any content is tried again, after
        // the server's Retry-After or a backoff, within the timeout.
        if !retry::retries_status(&target.retry_on, target.retries, status, retried) {
            break;
        }
        let retry_after = response.error.as_ref().and_then(|e| e.retry_after_s);
        let until = tokio::time::Instant::now() + retry::wait(retry_after, retried + 1, request_id);
        if until >= deadline {
            break;
        }
        tokio::time::sleep_until(until).await;
        retried += 1;
        response.attempts += 1;
        response.retries += 1;
        response.http_status = None;
        response.error = None;
        response.stamps.headers = None;
        response.stamps.first_byte = None;
        response.stamps.done = None;
        response.stamps.sent = Some(clock());
    }
    if let Some(e) = &mut response.error {
        if !target.secrets.is_empty() {
            e.message = target.secrets.redact(&e.message);
        }
    }
}

/// A request on its way: its bytes and its clock.
struct Outgoing<'a> {
    head: &'a [u8],
    body: &'a [u8],
    /// The request's timeout.
    deadline: tokio::time::Instant,
    /// The run's clock origin.
    epoch: Instant,
}

/// Why one attempt got no response head.
enum Missed {
    Write(WriteError),
    Head(HeadError),
}

impl Outgoing<'_> {
    /// Writes the request and reads the response head, on `begun` (a
    /// connection [`Target::send_now`] wrote on) or on a pooled or new
    /// connection: the connection and the head, or `None` with the error
    /// in `response`.
    ///
    /// The resend rule: the request goes again, once, only when it
    /// provably never left: a write failed with nothing of it written. A
    /// connection that took any of it and then failed or closed before a
    /// response may have delivered it: that is an error, never a resend. A
    /// pooled connection seen closed before the write (the pool's peek) is
    /// dropped before this point and costs no attempt. A failed connect is
    /// retried up to `--retries` times (nothing was sent); each try counts
    /// in `attempts`.
    async fn deliver(
        &self,
        target: &Target,
        mut begun: Option<(Conn, usize, Option<WriteError>)>,
        response: &mut Response,
    ) -> Option<(Conn, Head)> {
        let clock = || nanos_since(self.epoch);
        let mut connect_retries = 0;
        loop {
            let (mut conn, from, failed) = match begun.take() {
                Some(begun) => begun,
                None => match self
                    .connection(target, &mut connect_retries, response)
                    .await
                {
                    Some(conn) => (conn, 0, None),
                    None => return None,
                },
            };
            let attempt = match failed {
                Some(e) => Ok(Err(Missed::Write(e))),
                None => {
                    tokio::time::timeout_at(self.deadline, async {
                        conn.write_request(self.head, self.body, from)
                            .await
                            .map_err(Missed::Write)?;
                        read_head(&mut conn, clock).await.map_err(Missed::Head)
                    })
                    .await
                }
            };
            let (category, message) = match attempt {
                Ok(Ok(head)) => return Some((conn, head)),
                // Nothing of the request left: it goes again, once.
                Ok(Err(Missed::Write(e))) if e.written == 0 && response.resends == 0 => {
                    response.resends += 1;
                    response.attempts += 1;
                    continue;
                }
                Ok(Err(Missed::Write(e))) if e.written == 0 => (
                    ErrorCategory::Connect,
                    format!(
                        "the connection failed before the request was written, \
                         also on the resend: {}",
                        e.source
                    ),
                ),
                Ok(Err(Missed::Write(e))) => (
                    ErrorCategory::Connect,
                    format!(
                        "the connection failed after {} of the request's {} bytes were \
                         written (not resent: it may have reached the server): {}",
                        e.written,
                        self.head.len() + self.body.len(),
                        e.source
                    ),
                ),
                Ok(Err(Missed::Head(HeadError::NoResponse(e)))) => (
                    ErrorCategory::Connect,
                    format!(
                        "the connection closed after the request was sent, before any \
                         response (not resent: it may have reached the server): {e}"
                    ),
                ),
                Ok(Err(Missed::Head(e))) => {
                    let category = match e {
                        HeadError::Cut(_) | HeadError::NoResponse(_) => ErrorCategory::StreamCut,
                        HeadError::Malformed(_) => ErrorCategory::ServerError,
                        HeadError::Oversized(_) => ErrorCategory::Oversized,
                    };
                    (category, e.to_string())
                }
                Err(_) => (
                    ErrorCategory::Timeout,
                    "no response head before the timeout".to_string(),
                ),
            };
            ended(response, category, message, clock());
            return None;
        }
    }

    /// A pooled connection (one the pool's peek found open), or a new one;
    /// a failed TCP connect is retried up to `target.retries` times in all
    /// (`retried` counts them). `None` with the error in `response`.
    async fn connection(
        &self,
        target: &Target,
        retried: &mut u32,
        response: &mut Response,
    ) -> Option<Conn> {
        if let Some(conn) = target.pool.take() {
            return Some(conn);
        }
        loop {
            let (category, message) =
                match tokio::time::timeout_at(self.deadline, target.pool.connect()).await {
                    Ok(Ok(conn)) => return Some(conn),
                    // Out of descriptors, buffers or ports: the client's own
                    // failure, loud, not retried.
                    Ok(Err(e @ ConnectError::Tcp { .. })) if e.is_client_resource() => {
                        (ErrorCategory::Client, e.to_string())
                    }
                    // A failed TLS handshake is not retried: it would fail
                    // the same way.
                    Ok(Err(ConnectError::Tcp { .. })) if *retried < target.retries => {
                        *retried += 1;
                        response.attempts += 1;
                        let backoff = Duration::from_millis(50 << (*retried).min(6));
                        let until = self.deadline.min(tokio::time::Instant::now() + backoff);
                        tokio::time::sleep_until(until).await;
                        continue;
                    }
                    Ok(Err(e)) => (ErrorCategory::Connect, e.to_string()),
                    Err(_) => (
                        ErrorCategory::Timeout,
                        "no connection before the timeout".to_string(),
                    ),
                };
            ended(response, category, message, nanos_since(self.epoch));
            return None;
        }
    }
}

/// What a response head said that the run asked to hear: the replica
/// that served it (`--replica-header`) and the session token to echo
/// (`--session-routing token`). Nothing is looked at (or allocated) when
/// neither was asked for.
fn heard(target: &Target, head: &[u8], response: &mut Response) {
    if let Some(name) = &target.replica_header {
        if let Some(value) = header_value(head, name) {
            response.served_by = Some(value.to_string());
        }
    }
    if let Some(name) = target.routing.token_header() {
        if let Some(value) = header_value(head, name) {
            response.session_token = Some(value.to_string());
        }
    }
}

/// The value of header `name` (any case) in the raw response `head` (the
/// last one, when informational heads came first), trimmed; `None` when
/// absent, empty or not UTF-8.
pub fn header_value<'h>(head: &'h [u8], name: &str) -> Option<&'h str> {
    let mut found = None;
    for line in head.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if line[..colon].eq_ignore_ascii_case(name.as_bytes()) {
            found = std::str::from_utf8(&line[colon + 1..])
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty());
        }
    }
    found
}

/// A response whose head is in, and what reading the rest needs.
struct Answer<'a> {
    target: &'a Target,
    conn: Conn,
    head: Head,
    /// The request's timeout.
    deadline: tokio::time::Instant,
    /// The run's clock origin.
    epoch: Instant,
}

/// `response` ended at `at` by an error before any response.
fn ended(response: &mut Response, category: ErrorCategory, message: impl Into<String>, at: Nanos) {
    response.error = Some(error(category, message));
    response.stamps.done = Some(at);
}

impl Answer<'_> {
    /// A non-success status: keeps the start of the error body as the
    /// message, and the connection when the body was read in full.
    async fn failed_status(mut self, response: &mut Response) {
        let head = &self.head;
        let status = head.status;
        let read = tokio::time::timeout_at(
            self.deadline,
            read_small_body(&mut self.conn, head, ERROR_BODY_BYTES),
        )
        .await;
        response.stamps.done = Some(nanos_since(self.epoch));
        let text = match read {
            Ok((text, clean)) => {
                if clean && head.keep_alive {
                    self.target.pool.put(self.conn);
                }
                text
            }
            Err(_) => Vec::new(),
        };
        if !text.is_empty() {
            response.stamps.first_byte = Some(head.at);
        }
        let message = String::from_utf8_lossy(&text).into_owned();
        let category = match classify_message(None, &message, ErrorCategory::HttpStatus) {
            ErrorCategory::HttpStatus if status == OVERLOADED_STATUS => ErrorCategory::Overloaded,
            category => category,
        };
        response.error = Some(RequestError {
            category,
            message: if message.is_empty() {
                format!("HTTP {status}")
            } else {
                message
            },
            http_status: Some(status),
            retry_after_s: head.retry_after_s,
        });
    }
}

/// What scanning a stream has found so far.
#[derive(Default)]
struct Scan {
    splitter: LineSplitter,
    lines: Lines,
}

/// Which events a stream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Dialect {
    /// OpenAI chat or completions chunks.
    #[default]
    OpenAi,
    /// Anthropic Messages events.
    Messages,
    /// OpenAI Responses events.
    Responses,
}

/// What the stream's lines have said so far.
#[derive(Default)]
struct Lines {
    dialect: Dialect,
    /// `[DONE]`, a Messages stream's `message_stop`, or a Responses
    /// stream's terminal event.
    saw_done: bool,
    failure: Option<RequestError>,
    /// A Messages stream's usage, added up event by event.
    usage: MessagesUsage,
    /// The model asked for, until the first payload is checked against it.
    asked_model: Option<Arc<str>>,
}

impl Scan {
    fn new(api: Api, asked_model: Option<Arc<str>>) -> Scan {
        Scan {
            lines: Lines {
                dialect: match api {
                    Api::Messages => Dialect::Messages,
                    Api::Responses => Dialect::Responses,
                    Api::Chat | Api::Completions => Dialect::OpenAi,
                },
                asked_model,
                ..Lines::default()
            },
            ..Scan::default()
        }
    }

    /// Decodes and scans the bytes of one read, which returned at `at`.
    /// False when the body's framing is broken.
    fn feed(
        &mut self,
        decoder: &mut BodyDecoder,
        bytes: &[u8],
        at: Nanos,
        response: &mut Response,
    ) -> bool {
        let Scan { splitter, lines } = self;
        response.stamps.done = Some(at);
        let mut too_long = None;
        let decoded = decoder.feed(bytes, |data| {
            response.stamps.first_byte.get_or_insert(at);
            if too_long.is_some() {
                return;
            }
            let split = splitter.feed(data, |line| {
                let Some(data) = data_of(line) else { return };
                if let Some(asked) = lines.asked_model.take() {
                    answered_model(data, &asked, response);
                }
                let said = match lines.dialect {
                    Dialect::Messages => lines.messages_event(data),
                    Dialect::Responses => Lines::responses_event(data),
                    Dialect::OpenAi => Lines::openai_payload(data),
                };
                // `--history live` only: the generated text is kept.
                if said.content {
                    if let Some(text) = response.generated.as_mut() {
                        match lines.dialect {
                            Dialect::Messages => history::push_messages(data, text),
                            Dialect::Responses => history::push_responses(data, text),
                            Dialect::OpenAi => history::push_openai(data, text),
                        }
                    }
                }
                lines.note(said, line, at, response);
            });
            too_long = split.err();
        });
        let failure = match (decoded, too_long) {
            (_, Some(e)) => error(ErrorCategory::Oversized, e.to_string()),
            (Ok(()), None) => return true,
            (Err(e @ FramingError::Oversized), None) => {
                error(ErrorCategory::Oversized, e.to_string())
            }
            (Err(e), None) => error(ErrorCategory::StreamCut, e.to_string()),
        };
        lines.failure.get_or_insert(failure);
        false
    }

    /// The failure of a stream that ended without its end marker.
    fn unfinished(&self) -> RequestError {
        let marker = match self.lines.dialect {
            Dialect::Messages => "message_stop",
            Dialect::Responses => "response.completed",
            Dialect::OpenAi => "[DONE]",
        };
        error(
            ErrorCategory::StreamCut,
            format!("the stream ended without {marker}"),
        )
    }
}

/// Records the model a stream's first payload names when it is not
/// `asked`.
fn answered_model(data: &[u8], asked: &str, response: &mut Response) {
    if let Some(named) = super::sse::string_value(data, &super::sse::MODEL_KEY) {
        if named != asked {
            response.answered_model = Some(named.into_owned());
        }
    }
}

/// What one `data:` line said, in either API's terms.
#[derive(Default)]
struct Said {
    content: bool,
    /// `[DONE]`, or `message_stop`.
    end: bool,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    error: Option<RequestError>,
    malformed: bool,
}

impl Lines {
    /// One `data:` payload of an OpenAI stream.
    fn openai_payload(data: &[u8]) -> Said {
        let payload = classify(data);
        let usage = payload.usage.unwrap_or_default();
        Said {
            content: payload.content,
            end: payload.done,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage.cached_tokens(),
            error: payload.error.map(|message| {
                let category = classify_message(None, &message, ErrorCategory::ServerError);
                error(category, message)
            }),
            malformed: payload.malformed,
        }
    }

    /// One `data:` payload of an Anthropic Messages stream, its usage
    /// added to what the stream reported before. Input tokens are `input +
    /// cache_read + cache_creation`, cached tokens `cache_read`
    /// (docs/run.md).
    fn messages_event(&mut self, data: &[u8]) -> Said {
        let event = messages_sse::classify(data);
        let mut said = Said {
            content: event.content,
            end: event.stop,
            malformed: event.malformed,
            ..Said::default()
        };
        if let Some(usage) = event.usage {
            self.usage.merge(usage);
            said.prompt_tokens = self.usage.prompt_tokens();
            said.completion_tokens = self.usage.completion_tokens();
            said.cached_tokens = self.usage.cached_tokens();
        }
        said.error = event.error.map(|e| {
            let category =
                classify_message(e.kind.as_deref(), &e.message, ErrorCategory::ServerError);
            let message = match e.kind {
                Some(kind) => format!("{kind}: {}", e.message),
                None => e.message,
            };
            error(category, message)
        });
        said
    }

    /// One `data:` payload of a Responses stream: its usage comes whole
    /// in the terminal event (`input_tokens` the whole prompt, cached
    /// tokens `input_tokens_details.cached_tokens`).
    fn responses_event(data: &[u8]) -> Said {
        let event = responses_sse::classify(data);
        let usage = event.usage.unwrap_or_default();
        Said {
            content: event.content,
            end: event.end,
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            cached_tokens: usage.cached_tokens(),
            error: event.error.map(|e| {
                let category =
                    classify_message(e.code.as_deref(), &e.message, ErrorCategory::ServerError);
                let message = match e.code {
                    Some(code) => format!("{code}: {}", e.message),
                    None => e.message,
                };
                error(category, message)
            }),
            malformed: event.malformed,
        }
    }

    /// Records what a line that arrived at `at` said.
    fn note(&mut self, said: Said, line: &[u8], at: Nanos, response: &mut Response) {
        if said.content {
            response.stamps.first_content.get_or_insert(at);
            response.stamps.content.push(at);
        }
        self.saw_done |= said.end;
        response.prompt_tokens = said.prompt_tokens.or(response.prompt_tokens);
        response.completion_tokens = said.completion_tokens.or(response.completion_tokens);
        response.cached_tokens = said.cached_tokens.or(response.cached_tokens);
        if let Some(e) = said.error {
            self.failure.get_or_insert(e);
        }
        if said.malformed {
            self.malformed(line);
        }
    }

    fn malformed(&mut self, line: &[u8]) {
        if self.failure.is_some() {
            return;
        }
        // At most 4 bytes a character: the shown characters are in here.
        let start = &line[..line.len().min(4 * SHOWN_LINE_CHARS)];
        let shown: String = String::from_utf8_lossy(start)
            .chars()
            .take(SHOWN_LINE_CHARS)
            .collect();
        self.failure = Some(error(
            ErrorCategory::MalformedSse,
            format!("malformed SSE line: {shown}"),
        ));
    }
}

impl Answer<'_> {
    /// A success: reads and scans the body (SSE or JSON) to its end.
    async fn read_stream(self, response: &mut Response) {
        let Answer {
            target,
            mut conn,
            head,
            deadline,
            epoch,
        } = self;
        let mut decoder = BodyDecoder::new(head.framing);
        let mut scan = Scan::new(target.api, target.model.clone());
        // Whether the connection is still in step with HTTP framing.
        let mut intact = scan.feed(
            &mut decoder,
            &conn.buf[head.body_start..head.filled],
            head.at,
            response,
        );
        // One timer for the whole stream (a timeout per read would register a
        // timer per token).
        let expiry = tokio::time::sleep_until(deadline);
        tokio::pin!(expiry);
        while intact && !scan.lines.saw_done && !decoder.is_complete() {
            let read = tokio::select! {
                biased;
                read = conn.stream.read(&mut conn.buf) => Some(read),
                _ = &mut expiry => None,
            };
            match read {
                None => {
                    scan.lines.failure.get_or_insert(error(
                        ErrorCategory::Timeout,
                        "stream not finished before the timeout",
                    ));
                    intact = false;
                }
                Some(Err(e)) => {
                    scan.lines
                        .failure
                        .get_or_insert(error(ErrorCategory::StreamCut, format!("stream cut: {e}")));
                    intact = false;
                }
                Some(Ok(0)) => {
                    if !decoder.close() {
                        scan.lines.failure.get_or_insert(error(
                            ErrorCategory::StreamCut,
                            "stream cut: the connection closed mid-body",
                        ));
                    }
                    intact = false;
                }
                Some(Ok(n)) => {
                    // The stamp comes first: before the bytes are looked at.
                    let at = nanos_since(epoch);
                    intact = scan.feed(&mut decoder, &conn.buf[..n], at, response);
                }
            }
        }
        if response.stamps.done.is_none() {
            response.stamps.done = Some(nanos_since(epoch));
        }
        if !scan.lines.saw_done && scan.lines.failure.is_none() {
            scan.lines.failure = Some(scan.unfinished());
        }
        response.error = scan.lines.failure;
        if intact && head.keep_alive {
            reuse(&target.pool, conn, decoder);
        }
    }
}

/// Returns a connection to the pool once its body has ended; a body still
/// open after `[DONE]` is read to its end by a task of its own, so the
/// request's completion is not held up by it.
fn reuse(pool: &Arc<Pool>, mut conn: Conn, mut decoder: BodyDecoder) {
    if decoder.is_complete() {
        pool.put(conn);
        return;
    }
    let pool = Arc::clone(pool);
    tokio::spawn(async move {
        let drained = tokio::time::timeout(DRAIN_LIMIT, async {
            while !decoder.is_complete() {
                match conn.stream.read(&mut conn.buf).await {
                    Ok(n) if n > 0 => {
                        if decoder.feed(&conn.buf[..n], |_| {}).is_err() {
                            return false;
                        }
                    }
                    _ => return false,
                }
            }
            true
        })
        .await;
        if drained == Ok(true) {
            pool.put(conn);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    const ANSWER: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 61\r\n\r\n\
data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";

    /// A server answering every request with [`ANSWER`], counting them; a
    /// connection closed by the client is held open (so the client's peek
    /// finds it open).
    async fn server() -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().unwrap()
        );
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    loop {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            // The tests' requests arrive in one read.
                            Ok(_) => {
                                counter.fetch_add(1, Ordering::SeqCst);
                                let _ = stream.write_all(ANSWER).await;
                            }
                        }
                    }
                    std::future::pending::<()>().await;
                    drop(stream);
                });
            }
        });
        (url, seen)
    }

    /// Pools a connection whose writing half the client shut: the pool's
    /// peek finds it open, a write fails with nothing written.
    async fn pool_unwritable(target: &Target) {
        let mut conn = target.pool.connect().await.unwrap();
        tokio::io::AsyncWriteExt::shutdown(&mut conn.stream)
            .await
            .unwrap();
        target.pool.put(conn);
    }

    #[test]
    fn a_request_whose_write_failed_with_nothing_written_is_resent_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (url, seen) = server().await;
            let target =
                Target::new(&url, &Default::default(), Duration::from_secs(5), 3, None).unwrap();
            let epoch = Instant::now();
            let run = |started| execute(&target, b"{}", 1, epoch, 4, started, |_| {}, || {});

            pool_unwritable(&target).await;
            let r = run(None).await;
            assert_eq!(r.error, None);
            assert_eq!((r.attempts, r.resends), (2, 1));
            assert_eq!(seen.load(Ordering::SeqCst), 1, "received once");

            // The same rule for a request begun by send_now.
            pool_unwritable(&target).await;
            let started = target
                .send_now(2, b"{}", epoch)
                .expect("an idle connection");
            let r = run(Some(started)).await;
            assert_eq!(r.error, None);
            assert_eq!((r.attempts, r.resends), (2, 1));
            assert_eq!(seen.load(Ordering::SeqCst), 2);

            // At most once, whatever --retries says (3 here).
            pool_unwritable(&target).await;
            pool_unwritable(&target).await;
            let r = run(None).await;
            let e = r.error.expect("an error after one resend");
            assert_eq!(e.category, ErrorCategory::Connect);
            assert!(e.message.contains("also on the resend"), "{}", e.message);
            assert_eq!((r.attempts, r.resends), (2, 1));
            assert_eq!(seen.load(Ordering::SeqCst), 2, "never received");
        });
    }

    #[test]
    fn a_request_whose_write_failed_midway_is_an_error_not_a_resend() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            // A server that takes the connection, reads nothing, and resets
            // it a moment later (closing with unread bytes).
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!(
                "http://{}/v1/chat/completions",
                listener.local_addr().unwrap()
            );
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        drop(stream);
                    });
                }
            });
            let target =
                Target::new(&url, &Default::default(), Duration::from_secs(5), 3, None).unwrap();
            // Far more than the sockets' buffers hold.
            let body = vec![b' '; 64 * 1024 * 1024];
            let r = execute(&target, &body, 1, Instant::now(), 4, None, |_| {}, || {}).await;
            let e = r.error.expect("an error");
            assert_eq!(e.category, ErrorCategory::Connect);
            assert!(
                e.message.contains("bytes were written (not resent"),
                "{}",
                e.message
            );
            assert_eq!((r.attempts, r.resends), (1, 0));
        });
    }
}
