//! The HTTP server: routing, request handling (chat, completions,
//! Messages and Responses, with each API's error shape), the handle.
//! Every completion answer names the replica that served it
//! (`x-arbor-replica`); the listener and its accept loop
//! ([`spawn_server`]) also serve a fleet's router (`fleet.rs`).
//!
//! Built on hyper 1 directly (HTTP/1.1, one tokio task per connection via
//! hyper-util's `TokioIo`): a stream is a body that hyper polls on the
//! connection's own task, so a stream costs no extra task, channel or
//! router layer, and a body error closes the connection mid-stream (the
//! disconnect fault). With an [`EmulatorTls`] ([`serve_tls`]) each
//! connection's TLS handshake runs on that same task before hyper takes it.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::body::{self, ChunkTemplate, EmuBody, Phase, StreamBody, MALFORMED_LINE};
use super::cache::BLOCK_BYTES;
use super::config::{EmulatorConfig, FailStatus};
use super::faults::FaultPlan;
use super::metrics;
use super::received::{Received, REPLICA_HEADER};
use super::request::{self, BadRequest, Endpoint};
use super::responses;
use super::shared::{EmulatorStats, RequestGuard, Shared};
use super::stamps::{FaultKind, ServerStamp, REQUEST_ID_HEADER};
use super::tls::EmulatorTls;

/// Largest request body accepted (bytes).
pub const MAX_BODY_BYTES: usize = 64 << 20;

pub(crate) fn json_response(status: u16, body: impl Into<Bytes>) -> Response<EmuBody> {
    let mut r = Response::new(EmuBody::full(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error_response(status: u16, kind: &str, message: &str) -> Response<EmuBody> {
    let body = serde_json::json!({
        "error": {"message": message, "type": kind, "param": null, "code": status}
    });
    json_response(status, body.to_string())
}

/// An error in `endpoint`'s own shape: OpenAI's (`kind` its type), or for
/// Messages Anthropic's `{"type":"error","error":{"type":...}}` with the
/// type Anthropic gives `status`.
pub(crate) fn endpoint_error(
    endpoint: Endpoint,
    status: u16,
    kind: &str,
    message: &str,
) -> Response<EmuBody> {
    if endpoint != Endpoint::Messages {
        return error_response(status, kind, message);
    }
    let kind = match status {
        400 => "invalid_request_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": kind, "message": message}
    });
    json_response(status, body.to_string())
}

/// Refuses a completion request: counts it in `counter`, finishes its
/// stamp with `status` and answers with the endpoint's error shape.
fn reject(
    counter: &AtomicU64,
    guard: &mut RequestGuard,
    endpoint: Endpoint,
    status: u16,
    kind: &str,
    message: &str,
) -> Response<EmuBody> {
    counter.fetch_add(1, Relaxed);
    guard.finish(status);
    endpoint_error(endpoint, status, kind, message)
}

pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    t0: Instant,
) -> Result<Response<EmuBody>, Infallible> {
    let path = req.uri().path();
    let response = match (req.method(), path) {
        (&Method::GET, "/health") => json_response(200, Bytes::from_static(b"{\"status\":\"ok\"}")),
        (&Method::GET, "/v1/models") => json_response(200, shared.models_body.clone()),
        (&Method::GET, "/metrics") => metrics_response(metrics::exposition(&shared)),
        (&Method::POST, "/v1/chat/completions") => {
            completion(shared, req, Endpoint::Chat, t0).await
        }
        (&Method::POST, "/v1/completions") => {
            completion(shared, req, Endpoint::Completions, t0).await
        }
        (&Method::POST, "/v1/messages") => completion(shared, req, Endpoint::Messages, t0).await,
        (&Method::POST, "/v1/responses") => completion(shared, req, Endpoint::Responses, t0).await,
        (&Method::GET, "/arbor/stamps") => {
            let drain = wants_drain(req.uri());
            let stamps = if drain {
                shared.take_stamps()
            } else {
                shared.stamps()
            };
            json_response(200, serde_json::to_vec(&stamps).expect("stamps serialize"))
        }
        (&Method::GET, "/arbor/stats") => json_response(
            200,
            serde_json::to_vec(&shared.stats.snapshot()).expect("stats serialize"),
        ),
        (&Method::GET, "/arbor/clock") => {
            json_response(200, format!("{{\"now_ns\":{}}}", shared.now_ns()))
        }
        (
            _,
            "/health"
            | "/v1/models"
            | "/metrics"
            | "/v1/chat/completions"
            | "/v1/completions"
            | "/v1/messages"
            | "/v1/responses"
            | "/arbor/stamps"
            | "/arbor/stats"
            | "/arbor/clock",
        ) => error_response(405, "MethodNotAllowed", "method not allowed"),
        _ => error_response(404, "NotFoundError", &format!("no such route: {path}")),
    };
    Ok(response)
}

/// A `/metrics` answer of Prometheus `text`.
pub(crate) fn metrics_response(text: String) -> Response<EmuBody> {
    let mut r = Response::new(EmuBody::full(text));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(metrics::CONTENT_TYPE),
    );
    r
}

/// Whether `/arbor/stamps` was asked to forget what it returns.
pub(crate) fn wants_drain(uri: &hyper::Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "drain=1" || kv == "drain=true"))
}

/// The answer to a request whose body did not arrive within `limit`: 408
/// with `Connection: close` (the rest of the body would be read as the
/// next request otherwise).
fn body_timed_out(
    shared: &Shared,
    guard: &mut RequestGuard,
    endpoint: Endpoint,
    limit: Duration,
) -> Response<EmuBody> {
    let message = format!(
        "the request body did not arrive within {} s",
        limit.as_secs_f64()
    );
    let mut response = reject(
        &shared.stats.bad_requests,
        guard,
        endpoint,
        408,
        "RequestTimeout",
        &message,
    );
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The vLLM-style context overflow message (arbor classifies it).
pub(crate) fn context_overflow_message(max_model_len: u32, prompt: u32, completion: u32) -> String {
    format!(
        "This model's maximum context length is {max_model_len} tokens. However, you requested {} tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
        prompt as u64 + completion as u64
    )
}

/// The completion routes by path (chat, completions, Messages,
/// Responses).
pub(crate) fn completion_endpoint(path: &str) -> Option<Endpoint> {
    [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Messages,
        Endpoint::Responses,
    ]
    .into_iter()
    .find(|e| e.path() == path)
}

/// A completion request answered by the replica of `shared` (directly, or
/// handed over by a router): the answer carries `x-arbor-replica`.
pub(crate) async fn completion<B>(
    shared: Arc<Shared>,
    req: Request<B>,
    endpoint: Endpoint,
    t0: Instant,
) -> Response<EmuBody>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let replica = shared.replica;
    let mut response = answer(shared, req, endpoint, t0).await;
    response
        .headers_mut()
        .insert(REPLICA_HEADER, HeaderValue::from(replica));
    response
}

async fn answer<B>(
    shared: Arc<Shared>,
    req: Request<B>,
    endpoint: Endpoint,
    t0: Instant,
) -> Response<EmuBody>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let seq = shared.seq.fetch_add(1, Relaxed);
    shared.stats.requests.fetch_add(1, Relaxed);
    let stamp = req
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|id| ServerStamp {
            request_id: id.to_string(),
            seq,
            endpoint: endpoint.path().to_string(),
            stream: false,
            status: 0,
            received_ns: shared.ns(t0),
            first_chunk_ns: None,
            chunk_ns: Vec::new(),
            done_ns: None,
            prompt_tokens: 0,
            cached_tokens: 0,
            max_tokens: 0,
            faults: Vec::new(),
        });
    let received = Received::from_headers(shared.replica, endpoint.path(), req.headers());
    let mut guard = RequestGuard::new(shared.clone(), stamp, received);
    let config = &shared.config;

    // A body shorter than its Content-Length must not hold the
    // connection forever: 408, and the connection is closed.
    let body_limit = Duration::from_nanos(config.read_timeouts.body);
    let collect = Limited::new(req.into_body(), MAX_BODY_BYTES).collect();
    let body = match tokio::time::timeout(body_limit, collect).await {
        Ok(body) => body.map_err(|e| BadRequest::Unreadable(e.to_string())),
        Err(_) => return body_timed_out(&shared, &mut guard, endpoint, body_limit),
    };
    let tokenizer = config.tokenizer.as_ref().map(|t| &*t.tokenizer);
    let model_block_size = config.profile.as_ref().map(|p| p.engine.block_size);
    let body = body.map(|b| b.to_bytes());
    if config.keep_bodies {
        if let Ok(bytes) = &body {
            guard.with_received(|r| r.body = Some(bytes.clone()));
        }
    }
    let parsed =
        match body.and_then(|body| request::parse(endpoint, &body, tokenizer, model_block_size)) {
            Ok(p) => p,
            Err(e) => {
                return reject(
                    &shared.stats.bad_requests,
                    &mut guard,
                    endpoint,
                    400,
                    "BadRequestError",
                    &e.to_string(),
                );
            }
        };
    let (prompt_tokens, n) = (parsed.prompt_tokens, parsed.max_tokens);
    guard.with_stamp(|s| {
        s.stream = parsed.stream;
        s.prompt_tokens = prompt_tokens;
        s.max_tokens = n;
    });
    guard.with_received(|r| {
        r.user = parsed.user.clone();
        r.prompt_tokens = prompt_tokens;
    });
    if let Some(model) = parsed.model.as_deref() {
        if model != config.model_name {
            return reject(
                &shared.stats.model_not_found,
                &mut guard,
                endpoint,
                404,
                "NotFoundError",
                &format!("The model `{model}` does not exist."),
            );
        }
    }
    if prompt_tokens as u64 + n as u64 > config.max_model_len as u64 {
        return reject(
            &shared.stats.context_overflows,
            &mut guard,
            endpoint,
            400,
            "BadRequestError",
            &context_overflow_message(config.max_model_len, prompt_tokens, n),
        );
    }

    // A model that stops early on a server that ignores ignore_eos.
    let n = config.faults.eos_after.map_or(n, |cap| n.min(cap));
    let plan = FaultPlan::decide(config, seq);
    if let Some(status) = plan.fail {
        let stats = &shared.stats;
        let (counter, fault, kind, message) = match status {
            FailStatus::InternalError => (
                &stats.errors_500,
                FaultKind::Error500,
                "InternalServerError",
                "injected server error (arbor emulator)",
            ),
            FailStatus::TooManyRequests => (
                &stats.errors_429,
                FaultKind::Error429,
                "RateLimitError",
                "injected rate limit (arbor emulator)",
            ),
            FailStatus::Overloaded => (
                &stats.errors_529,
                FaultKind::Error529,
                "overloaded_error",
                "injected overload (arbor emulator)",
            ),
        };
        guard.fault(fault);
        let mut r = reject(counter, &mut guard, endpoint, status.code(), kind, message);
        if status == FailStatus::TooManyRequests {
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(config.faults.retry_after_s));
        }
        return r;
    }

    // Under a profile the model decides the first token, each token's
    // step and the cached tokens; the request waits in its queue until
    // its first token.
    let model = match &shared.engine {
        Some(engine) => {
            let Some(submitted) = engine.submit(prompt_tokens, n, &parsed.model_blocks) else {
                return reject(
                    &shared.stats.bad_requests,
                    &mut guard,
                    endpoint,
                    500,
                    "InternalServerError",
                    "the emulator's model thread could not be started",
                );
            };
            let first = submitted.first().await;
            Some((engine, submitted, first))
        }
        None => None,
    };
    let stall = Duration::from_nanos(plan.stall.unwrap_or(0));
    let (cached, ttft, itl, first_at) = match &model {
        Some((engine, _, first)) => {
            let first_at = Instant::from_std(engine.instant(first.at_ns));
            let ttft = first.at_ns.saturating_sub(shared.ns(t0));
            // No pace: each token is due when its step ends.
            (first.cached_tokens, ttft, Duration::ZERO, first_at)
        }
        None => {
            let hit_blocks = shared.cache_lookup(&parsed.blocks);
            let cached = parsed
                .counted
                .tokens_in(hit_blocks as u64 * BLOCK_BYTES as u64);
            let ttft = config.timing.ttft_for(prompt_tokens - cached);
            let itl = Duration::from_nanos(config.timing.itl);
            (cached, ttft, itl, t0 + Duration::from_nanos(ttft))
        }
    };
    guard.with_stamp(|s| s.cached_tokens = cached);
    guard.with_received(|r| r.cached_tokens = cached);
    shared.count_prefix_lookup(u64::from(prompt_tokens), u64::from(cached));
    let model = model.map(|(_, submitted, _)| submitted);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let head = body::head(endpoint, seq, created, &shared.answer_json);
    let usage = match endpoint {
        Endpoint::Messages => body::messages_usage(prompt_tokens, cached, n),
        Endpoint::Responses => responses::usage(prompt_tokens, cached, n),
        _ => format!(
            r#"{{"prompt_tokens":{prompt_tokens},"completion_tokens":{n},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{cached}}}}}"#,
            prompt_tokens as u64 + n as u64
        ),
    };

    if parsed.stream {
        let start_usage = body::messages_usage(prompt_tokens, cached, 0);
        let template = ChunkTemplate::new(endpoint, seq, &head, &start_usage);
        let tail = body::tail(endpoint, seq, &head, n, parsed.include_usage, &usage);
        let stream = StreamBody {
            shared: shared.clone(),
            guard,
            first_at,
            itl,
            stall,
            immediate: model.is_none() && ttft == 0 && itl.is_zero() && stall.is_zero(),
            n,
            next: 0,
            template,
            tail: Some(tail),
            blocks: model.is_none().then_some(parsed.blocks),
            answer: model.is_none().then_some(parsed.answer),
            model,
            disconnect_after: plan.disconnect_after,
            malformed_at: plan.malformed.then_some(n / 2),
            sleep: None,
            last_chunk: None,
            phase: Phase::Tokens,
        };
        let mut r = Response::new(EmuBody::Stream(Box::new(stream)));
        let h = r.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        return r;
    }

    // Non-streaming: the whole answer at the time the stream would end.
    if ttft > 0 {
        tokio::time::sleep_until(first_at).await;
    }
    if model.is_none() {
        shared.cache_insert(&parsed.blocks);
    }
    if !stall.is_zero() {
        shared.stats.stalls.fetch_add(1, Relaxed);
        guard.fault(FaultKind::Stall);
    }
    let end = match &model {
        Some(submitted) => {
            submitted.done().await;
            Instant::now() + stall
        }
        None => first_at + itl * n + stall,
    };
    if end > first_at {
        tokio::time::sleep_until(end).await;
    }
    if plan.disconnect_after.is_some() {
        shared.stats.disconnects.fetch_add(1, Relaxed);
        guard.fault(FaultKind::Disconnect);
        guard.aborted_by_fault();
        let mut r = Response::new(EmuBody::Abort { yielded: false });
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return r;
    }
    if model.is_none() {
        // The answer is decoded: its blocks are cached too (`answer.rs`).
        shared.cache_insert(&parsed.answer.blocks(&responses::text(n)));
    }
    if plan.malformed {
        shared.stats.malformed.fetch_add(1, Relaxed);
        guard.fault(FaultKind::Malformed);
        guard.finish(200);
        return json_response(200, Bytes::from_static(&MALFORMED_LINE[6..15]));
    }
    if endpoint == Endpoint::Responses {
        shared.stats.completed.fetch_add(1, Relaxed);
        shared.stats.tokens.fetch_add(n as u64, Relaxed);
        guard.finish(200);
        return json_response(200, responses::whole(seq, &head, n, &usage));
    }
    let text = responses::text(n);
    let text_json = serde_json::to_string(&text).expect("a string serializes");
    shared.stats.completed.fetch_add(1, Relaxed);
    shared.stats.tokens.fetch_add(n as u64, Relaxed);
    guard.finish(200);
    if endpoint == Endpoint::Messages {
        return json_response(
            200,
            format!(
                r#"{head},"content":[{{"type":"text","text":{text_json}}}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{usage}}}"#
            ),
        );
    }
    let (object, choice) = match endpoint {
        Endpoint::Chat => (
            "chat.completion",
            format!(
                r#"{{"index":0,"message":{{"role":"assistant","content":{text_json}}},"logprobs":null,"finish_reason":"length"}}"#
            ),
        ),
        _ => (
            "text_completion",
            format!(r#"{{"index":0,"text":{text_json},"logprobs":null,"finish_reason":"length"}}"#),
        ),
    };
    let id = match endpoint {
        Endpoint::Chat => "chatcmpl",
        _ => "cmpl",
    };
    let json = format!(
        r#"{{"id":"{id}-arbor-{seq}","object":"{object}","created":{created},"model":{},"choices":[{choice}],"usage":{usage}}}"#,
        shared.answer_json
    );
    json_response(200, json)
}

/// A running emulator. Dropping the handle stops accepting connections
/// (like [`EmulatorHandle::shutdown`] without waiting).
pub struct EmulatorHandle {
    addr: SocketAddr,
    /// Serves https.
    tls: bool,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl EmulatorHandle {
    /// The bound address (the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, or `https://` when it serves TLS.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    pub fn config(&self) -> &EmulatorConfig {
        &self.shared.config
    }

    /// Stamps of the most recent requests that carried
    /// `x-arbor-request-id`, in the order they finished.
    pub fn stamps(&self) -> Vec<ServerStamp> {
        self.shared.stamps()
    }

    /// Like [`EmulatorHandle::stamps`], and forgets them.
    pub fn take_stamps(&self) -> Vec<ServerStamp> {
        self.shared.take_stamps()
    }

    pub fn stats(&self) -> EmulatorStats {
        self.shared.stats.snapshot()
    }

    /// Its index in its fleet (0 for a single emulator).
    pub fn replica(&self) -> usize {
        self.shared.replica
    }

    /// The routing information of the most recent completion requests
    /// (`EmulatorConfig::received_capacity` of them), in the order they
    /// finished.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received()
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The emulator's clock: monotonic nanoseconds since it started.
    pub fn now_ns(&self) -> u64 {
        self.shared.now_ns()
    }

    /// Stops accepting connections at once, closes idle connections, and
    /// returns a future that resolves when every in-flight response has
    /// finished and every connection is closed. Dropping the future does
    /// not cancel the shutdown.
    pub fn shutdown(mut self) -> impl Future<Output = ()> + Send + 'static {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self.task.take();
        async move {
            if let Some(task) = task {
                let _ = task.await;
            }
        }
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Connections waiting to be accepted (the kernel caps it at somaxconn).
const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` (127.0.0.1 only; port 0 picks a free port), spawns the
/// server on the current tokio runtime and returns at once.
pub async fn serve(config: EmulatorConfig, addr: SocketAddr) -> io::Result<EmulatorHandle> {
    bind(config, addr, None).await
}

/// [`serve`], over https with `tls`.
pub async fn serve_tls(
    config: EmulatorConfig,
    addr: SocketAddr,
    tls: EmulatorTls,
) -> io::Result<EmulatorHandle> {
    bind(config, addr, Some(tls)).await
}

async fn bind(
    config: EmulatorConfig,
    addr: SocketAddr,
    tls: Option<EmulatorTls>,
) -> io::Result<EmulatorHandle> {
    bind_replica(config, addr, tls, 0, Instant::now()).await
}

/// Binds replica `replica` of a fleet whose clocks start at `start` (a
/// single emulator is replica 0 of its own).
pub(crate) async fn bind_replica(
    config: EmulatorConfig,
    addr: SocketAddr,
    tls: Option<EmulatorTls>,
    replica: usize,
    start: Instant,
) -> io::Result<EmulatorHandle> {
    config
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let listener = listen(addr)?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(Shared::replica(config, replica, start));
    let is_tls = tls.is_some();
    let acceptor = tls.map(|t| tokio_rustls::TlsAcceptor::from(t.config));
    let header_limit = Duration::from_nanos(shared.config.read_timeouts.header);
    let handler = {
        let shared = shared.clone();
        move |req, t0| handle(shared.clone(), req, t0)
    };
    let (stop, task) = spawn_server(listener, header_limit, acceptor, handler);
    Ok(EmulatorHandle {
        addr,
        tls: is_tls,
        shared,
        stop: Some(stop),
        task: Some(task),
    })
}

/// A listener on `addr` (127.0.0.1 only; port 0 picks a free port).
pub(crate) fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    if addr.ip() != IpAddr::V4(Ipv4Addr::LOCALHOST) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the emulator binds 127.0.0.1 only, not {}", addr.ip()),
        ));
    }
    // A deep accept queue: a client opening hundreds of connections at once
    // must not see SYNs dropped (tokio's default backlog is 128; a dropped
    // SYN costs the client a one-second retransmission).
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `listener` with `handler` (each request with its receipt
/// time) until the returned sender fires; the task ends once every
/// connection has closed.
pub(crate) fn spawn_server<H, F>(
    listener: TcpListener,
    header_limit: Duration,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    handler: H,
) -> (oneshot::Sender<()>, JoinHandle<()>)
where
    H: Fn(Request<Incoming>, Instant) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<EmuBody>, Infallible>> + Send + 'static,
{
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(accept_loop(
        listener,
        header_limit,
        acceptor,
        handler,
        stopped,
    ));
    (stop, task)
}

async fn accept_loop<H, F>(
    listener: TcpListener,
    header_limit: Duration,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    handler: H,
    mut stopped: oneshot::Receiver<()>,
) where
    H: Fn(Request<Incoming>, Instant) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<EmuBody>, Infallible>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(header_limit);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let handler = handler.clone();
                    // The receipt stamp is taken when hyper hands over the
                    // parsed head, before the handler's first poll.
                    let service = service_fn(move |req| handler(req, Instant::now()));
                    match &acceptor {
                        None => {
                            let conn = builder.serve_connection(TokioIo::new(stream), service);
                            let conn = graceful.watch(conn);
                            tokio::spawn(async move {
                                let _ = conn.await;
                            });
                        }
                        Some(acceptor) => {
                            let handshake = acceptor.accept(stream);
                            let builder = builder.clone();
                            let watcher = graceful.watcher();
                            tokio::spawn(async move {
                                // A client that fails the handshake (an
                                // untrusted certificate), or stalls in it,
                                // just goes away.
                                let Ok(Ok(stream)) =
                                    tokio::time::timeout(header_limit, handshake).await
                                else {
                                    return;
                                };
                                let conn = builder.serve_connection(TokioIo::new(stream), service);
                                let _ = watcher.watch(conn).await;
                            });
                        }
                    }
                }
                // Out of file descriptors and the like: back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = &mut stopped => break,
        }
    }
    drop(listener);
    graceful.shutdown().await;
}
