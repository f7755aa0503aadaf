//! The proxy's request path: a client's request forwarded to the upstream
//! and its response handed back through a [`TapBody`].
//!
//! Owns [`Proxy`] (the upstream and what every exchange shares), [`Link`]
//! (one client connection's upstream connection) and [`handle`]. The
//! request body is read whole (it is the capture's `request`, and it is
//! small next to the response), bounded in size and in time (a larger
//! `Content-Length` is refused before a byte of the body is read: 413; a
//! body that has not arrived within the read timeout: 408); the response
//! streams. Headers are
//! forwarded except the hop-by-hop ones and `Accept-Encoding` (so the
//! upstream answers uncompressed and the capture can read the text);
//! `Host` names the upstream. No header is ever written to the capture.
//!
//! The upstream client is hyper's HTTP/1.1 connection (`client::conn`)
//! over the live client's `Dial` (plain TCP or rustls with arbor's trust
//! settings), not arbor's own client (`live/http.rs`): a proxy must hand
//! back the upstream's headers and forward any method and path, which
//! arbor's client, made to stamp one request's stream, does not keep. Each
//! client connection gets its own upstream connection, opened on its first
//! request and reused while both stay open: HTTP/1.1 sends one request at
//! a time on a connection, so the pair never waits on another.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use arbor_formats::capture::CaptureSink;
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST,
};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::clock::UtcClock;
use super::identity::identity;
use super::scan::Shape;
use super::tap::{Cutting, Exchange, Pending, TapBody};
use crate::live::redact::Secrets;
use crate::live::stream::Dial;

/// What a client gets back: the upstream's body, or the proxy's own
/// error.
pub type ProxyBody = Either<TapBody, Full<Bytes>>;

/// Headers that belong to one connection, never forwarded.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The session header read when the recording names none
/// (`--session-header`): the generic one some clients and gateways send.
/// Agent clients' own identity headers (Claude Code's, Codex's, Dynamo's,
/// OpenCode's) are the line's `identity`, read by [`super::identity`].
pub const KNOWN_SESSION_HEADERS: [&str; 1] = ["x-session-id"];

/// Where requests go and what every exchange shares.
pub struct Proxy {
    pub dial: Dial,
    /// The upstream's `Host` header value.
    pub host: HeaderValue,
    /// The upstream URL's path, put before every request's path.
    pub prefix: String,
    pub clock: UtcClock,
    pub sink: CaptureSink,
    /// The headers that name a request's session, the first present
    /// wins: `--session-header`'s, or [`KNOWN_SESSION_HEADERS`].
    pub session_headers: Vec<HeaderName>,
    /// Exchanges forwarded without a capture line.
    pub forwarded: AtomicU64,
    /// Set when the exchanges still open at the stop are cut.
    pub cutting: Cutting,
    /// The largest request body read (bytes).
    pub max_request_bytes: usize,
    /// The longest a request body may take to arrive.
    pub read_timeout: Duration,
}

/// One client connection and its upstream connection.
pub struct Link {
    proxy: Arc<Proxy>,
    upstream: tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>,
}

impl Link {
    pub fn new(proxy: Arc<Proxy>) -> Link {
        Link {
            proxy,
            upstream: tokio::sync::Mutex::new(None),
        }
    }

    /// Sends `request` on this link's upstream connection, opening one
    /// when there is none or it closed. A request the old connection
    /// provably never took goes out on a new one; one it took and lost is
    /// an error, never sent twice.
    async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, String> {
        let mut slot = self.upstream.lock().await;
        let mut request = request;
        if let Some(sender) = slot.as_mut() {
            if sender.ready().await.is_ok() {
                match sender.try_send_request(request).await {
                    Ok(response) => return Ok(response),
                    Err(mut e) => match e.take_message() {
                        Some(unsent) => request = unsent,
                        None => {
                            *slot = None;
                            return Err(format!("the upstream failed: {}", e.into_error()));
                        }
                    },
                }
            }
        }
        *slot = None;
        let stream = self.proxy.dial.open().await.map_err(|e| e.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("the upstream connection failed: {e}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("the upstream failed: {e}"));
        *slot = Some(sender);
        response
    }
}

/// What the capture needs to know of a request body.
#[derive(Deserialize)]
struct Probe {
    /// A chat or Messages request has `messages` (an array).
    #[serde(default)]
    messages: Option<Vec<IgnoredAny>>,
    /// A Responses request has `input` (a string or an array of items).
    #[serde(default)]
    input: Option<Input>,
    #[serde(default)]
    stream: Option<bool>,
}

/// A Responses request's `input`, checked to be a string or an array.
struct Input;

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Input, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Input;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of input items")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Input, E> {
                Ok(Input)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Input, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Input)
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether `path` is the Responses API's (`/v1/responses`, or any path
/// ending in `/responses`, as behind a gateway's prefix).
fn is_responses(path: &str) -> bool {
    path.ends_with("/responses")
}

/// A JSON chat, Messages or Responses request body as the capture's
/// `request` (on one line: raw line breaks in JSON are whitespace), and
/// whether it asked for a stream; `None` for anything else (forwarded,
/// not recorded). A body with `input` counts only on a Responses path
/// (embeddings take `input` too).
fn recordable(method: &Method, path: &str, body: &[u8]) -> Option<(Box<RawValue>, bool)> {
    if method != Method::POST {
        return None;
    }
    let probe: Probe = serde_json::from_slice(body).ok()?;
    let chat = probe.messages.is_some();
    let responses = probe.input.is_some() && is_responses(path);
    if !chat && !responses {
        return None;
    }
    let text = std::str::from_utf8(body).ok()?;
    let one_line = if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ")
    } else {
        text.to_string()
    };
    let raw = RawValue::from_string(one_line).ok()?;
    Some((raw, probe.stream.unwrap_or(false)))
}

fn forwardable(headers: &HeaderMap, host: &HeaderValue) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || n == "host" || n == "accept-encoding" {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out.insert(HOST, host.clone());
    out
}

/// The proxy's own answer to a request it did not read whole; the
/// connection closes after it (the rest of the body is not read).
fn refused(status: StatusCode, message: &str) -> Response<ProxyBody> {
    let mut r = proxy_error(status, message);
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

/// A request body, whole: at most `max_request_bytes` (a larger declared
/// `Content-Length` is refused before any of it is read), within
/// `read_timeout`; or the proxy's answer refusing it.
async fn read_body(
    proxy: &Proxy,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<Bytes, Response<ProxyBody>> {
    let max = proxy.max_request_bytes;
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(n) = declared.filter(|&n| n > max as u64) {
        return Err(refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is {n} bytes, more than --max-request-bytes {max}"),
        ));
    }
    match tokio::time::timeout(proxy.read_timeout, Limited::new(body, max).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is more than --max-request-bytes {max}"),
        )),
        Ok(Err(e)) => Err(refused(
            StatusCode::BAD_REQUEST,
            &format!("cannot read the request body: {e}"),
        )),
        Err(_) => Err(refused(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {} s (--read-timeout)",
                proxy.read_timeout.as_secs_f64()
            ),
        )),
    }
}

/// The proxy's own answer (the upstream could not be asked).
fn proxy_error(status: StatusCode, message: &str) -> Response<ProxyBody> {
    let body = serde_json::json!({
        "error": {"message": format!("arbor record: {message}"), "type": "proxy_error"}
    });
    let mut r = Response::new(Either::Right(Full::new(Bytes::from(body.to_string()))));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The capture's exchange for a request the capture records (a chat or
/// Messages request), with its session and the secrets of its headers;
/// `None` for a request that is only forwarded.
fn pending(proxy: &Proxy, parts: &Parts, body: &[u8], start_ns: u64) -> Option<Pending> {
    let (request, stream) = recordable(&parts.method, parts.uri.path(), body)?;
    let mut exchange = Exchange::new(
        start_ns,
        parts.method.to_string(),
        parts.uri.path().to_string(),
        request,
    );
    exchange.stream = stream;
    exchange.session_id = session(&proxy.session_headers, &parts.headers);
    exchange.identity = identity(&parts.headers);
    exchange.secrets = Secrets::of(
        parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_bytes())),
    );
    Some(Pending::new(
        proxy.clock,
        proxy.sink.clone(),
        proxy.cutting.clone(),
        exchange,
    ))
}

/// A request the capture has not read yet (it reads it once the request
/// is on its way upstream). Dropped unread, when the client went away
/// first, it reads it then: the exchange still gets its line.
struct Unread<'a> {
    proxy: &'a Proxy,
    parts: &'a Parts,
    body: &'a [u8],
    start_ns: u64,
    read: bool,
}

impl Unread<'_> {
    fn read(mut self) -> Option<Pending> {
        self.read = true;
        pending(self.proxy, self.parts, self.body, self.start_ns)
    }
}

impl Drop for Unread<'_> {
    fn drop(&mut self) {
        if !self.read {
            // Its line says the client went away before the response head.
            drop(pending(self.proxy, self.parts, self.body, self.start_ns));
        }
    }
}

/// The session a request names: the first of `names` it carries with a
/// value that is not blank.
fn session(names: &[HeaderName], headers: &HeaderMap) -> Option<String> {
    names
        .iter()
        .filter_map(|name| headers.get(name))
        .filter_map(|v| v.to_str().ok())
        .map(str::trim)
        .find(|v| !v.is_empty())
        .map(str::to_string)
}

/// The shape a response body is read in, from its head and the path.
fn shape(head: &hyper::http::response::Parts, path: &str) -> Shape {
    let event_stream = head
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    match event_stream {
        false => Shape::Whole,
        true if path.ends_with("/messages") => Shape::MessagesStream,
        true if is_responses(path) => Shape::ResponsesStream,
        true => Shape::ChatStream,
    }
}

/// Forwards one request and returns the upstream's answer, passed
/// through. The request goes upstream before the proxy reads its body
/// for the capture (is it a chat, Messages or Responses request, which
/// session and identity):
/// that reading overlaps the upstream's work instead of delaying it.
pub async fn handle(
    link: Arc<Link>,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let proxy = &link.proxy;
    let start_ns = proxy.clock.now_ns();
    let (parts, body) = request.into_parts();
    let body = match read_body(proxy, &parts.headers, body).await {
        Ok(body) => body,
        Err(refusal) => return Ok(refusal),
    };
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri = match format!("{}{path_and_query}", proxy.prefix).parse::<Uri>() {
        Ok(uri) => uri,
        Err(e) => {
            if let Some(p) = pending(proxy, &parts, &body, start_ns) {
                p.fail(None, format!("bad request path: {e}"));
            }
            return Ok(proxy_error(StatusCode::BAD_REQUEST, "bad request path"));
        }
    };
    let mut upstream = Request::new(Full::new(body.clone()));
    *upstream.method_mut() = parts.method.clone();
    *upstream.uri_mut() = uri;
    *upstream.headers_mut() = forwardable(&parts.headers, &proxy.host);

    let unread = Unread {
        proxy,
        parts: &parts,
        body: &body,
        start_ns,
        read: false,
    };
    let (response, pending) = tokio::join!(link.send(upstream), async move {
        // The upstream connection's task writes the request first.
        tokio::task::yield_now().await;
        unread.read()
    });
    if pending.is_none() {
        proxy.forwarded.fetch_add(1, Relaxed);
    }
    let response = match response {
        Ok(response) => response,
        Err(e) => {
            let message = format!("cannot reach the upstream: {e}");
            if let Some(p) = pending {
                p.fail(Some(StatusCode::BAD_GATEWAY.as_u16()), message.clone());
            }
            return Ok(proxy_error(StatusCode::BAD_GATEWAY, &message));
        }
    };
    let (mut head, body) = response.into_parts();
    let pending = pending.map(|mut p| {
        p.head(head.status.as_u16(), shape(&head, parts.uri.path()));
        p
    });
    for name in HOP_BY_HOP {
        head.headers.remove(name);
    }
    Ok(Response::from_parts(
        head,
        Either::Left(TapBody::new(body, pending)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_chat_messages_or_responses_posts_are_recorded() {
        let chat = br#"{"model": "m",
"messages": [{"role": "user", "content": "a\nb"}], "stream": true}"#;
        let path = "/v1/chat/completions";
        let (raw, stream) = recordable(&Method::POST, path, chat).expect("recorded");
        assert!(stream);
        assert!(!raw.get().contains('\n'));
        let back: serde_json::Value = serde_json::from_str(raw.get()).expect("json");
        assert_eq!(back["messages"][0]["content"], "a\nb");
        assert!(recordable(&Method::GET, path, chat).is_none());
        assert!(recordable(&Method::POST, path, br#"{"prompt": "x"}"#).is_none());
        assert!(recordable(&Method::POST, path, br#"{"messages": "x"}"#).is_none());
        assert!(recordable(&Method::POST, path, b"not json").is_none());
        // Responses: `input` a string or items, on a Responses path only.
        let responses = "/v1/responses";
        for body in [
            &br#"{"input": "hi", "stream": true}"#[..],
            br#"{"model": "m", "input": [{"role": "user", "content": "hi"}]}"#,
        ] {
            assert!(recordable(&Method::POST, responses, body).is_some());
            assert!(recordable(&Method::POST, "/v1/embeddings", body).is_none());
        }
        assert!(recordable(&Method::POST, responses, br#"{"input": 5}"#).is_none());
    }

    #[test]
    fn the_first_session_header_present_names_the_session() {
        let known: Vec<HeaderName> = KNOWN_SESSION_HEADERS
            .iter()
            .map(|n| HeaderName::from_static(n))
            .collect();
        let mut h = HeaderMap::new();
        assert_eq!(session(&known, &h), None);
        h.insert("x-claude-code-session-id", HeaderValue::from_static("cc"));
        assert_eq!(
            session(&known, &h),
            None,
            "an identity header, not the session"
        );
        h.insert("x-session-id", HeaderValue::from_static("  "));
        assert_eq!(session(&known, &h), None);
        h.insert("X-Session-Id", HeaderValue::from_static("generic"));
        assert_eq!(session(&known, &h).as_deref(), Some("generic"));
        let given = [
            HeaderName::from_static("x-agent-session"),
            HeaderName::from_static("x-session-id"),
        ];
        assert_eq!(session(&given, &h).as_deref(), Some("generic"));
        h.insert("x-agent-session", HeaderValue::from_static("mine"));
        assert_eq!(session(&given, &h).as_deref(), Some("mine"));
    }

    #[test]
    fn hop_by_hop_headers_and_host_are_replaced() {
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("keep-alive"));
        h.insert("host", HeaderValue::from_static("127.0.0.1:8787"));
        h.insert("accept-encoding", HeaderValue::from_static("gzip"));
        h.insert("authorization", HeaderValue::from_static("Bearer sk-1"));
        let out = forwardable(&h, &HeaderValue::from_static("api.example.com:443"));
        assert_eq!(out.len(), 2);
        assert_eq!(out["host"], "api.example.com:443");
        assert_eq!(out["authorization"], "Bearer sk-1");
    }
}
