//! A scripted HTTP server on 127.0.0.1 that misbehaves on purpose, for
//! the fault matrix (`faults.rs`) to drive `arbor run` against.
//!
//! Plain HTTP/1.1 written by hand on tokio (one task per connection; tokio
//! because a reset needs `SO_LINGER 0`, which std's sockets cannot set). It
//! answers `GET`s (arbor's warm-up `/v1/models`) like a healthy server and
//! every `POST` as its [`Script`] says, and logs every request it reads:
//! method, path and arbor's `x-arbor-request-id`, so a test can count what
//! reached the server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// How the server answers a `POST`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// A short, correct stream (three tokens, usage, `[DONE]`).
    Healthy,
    /// Reads the request, then resets the connection: no byte answered.
    ResetBeforeHead,
    /// A 200 head, then a reset.
    ResetAfterHead,
    /// A 200 head and two content chunks, then a reset inside a chunk.
    ResetMidChunk,
    /// A complete non-success answer with extra head lines and a body.
    Status {
        code: u16,
        extra: &'static str,
        body: &'static str,
    },
    /// 401 whose body repeats the request's `Authorization` value.
    EchoKey,
    /// A stream with invalid UTF-8 inside a JSON string of a data line.
    InvalidUtf8,
    /// Content chunks every 20 ms, never an end.
    Endless,
    /// A correct stream of about this many bytes.
    Huge { bytes: usize },
    /// An HTTP/1.0 answer with no length: the body ends when the
    /// connection closes.
    Http10,
    /// A redirect (`301`, `307`, ...) to another path of this server.
    Redirect { code: u16 },
    /// Answers every request (GETs too) in full, saying keep-alive, and
    /// then closes the connection.
    CloseAfterEachResponse,
    /// Answers the first request of each connection in full, saying
    /// keep-alive; reads the next one and closes without answering it (a
    /// keep-alive timeout racing a request on a reused connection).
    OneAnswerPerConnection,
    /// Holds the `nth` POST (1-based) without answering and, 100 ms after
    /// it arrived, resets every open connection at once: the server died,
    /// and came straight back (`back`) or stopped listening. Other POSTs
    /// stream slowly (50 ms a token).
    KilledAt { nth: usize, back: bool },
}

/// How the server answers `GET /v1/models` (the pre-flight's and the
/// warm-up's question).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Models {
    /// Lists one model, `m`.
    One,
    /// Lists `m`, `m-large` and `other`.
    Several,
    /// Lists `m` with a `max_model_len` of this many tokens.
    Context(u64),
    /// Answers 401 to every request whose `Authorization` is not
    /// `Bearer` and this key.
    NeedsKey(&'static str),
    /// Answers 503 `Loading model` (llama.cpp's words) for this long
    /// after it started, then lists `m`.
    LoadingFor(Duration),
}

/// One request the server read.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub request_id: Option<String>,
}

/// What happens to a connection after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    KeepAlive,
    Close,
    Reset,
}

/// The running server; it stops with the test process.
pub struct Scripted {
    port: u16,
    log: Arc<Mutex<Vec<Seen>>>,
    _runtime: tokio::runtime::Runtime,
}

/// What every connection task shares.
struct Shared {
    script: Script,
    models: Models,
    started: std::time::Instant,
    port: u16,
    log: Arc<Mutex<Vec<Seen>>>,
    /// Bumped to reset every open connection.
    kill: watch::Sender<u64>,
}

impl Scripted {
    pub fn start(script: Script) -> Scripted {
        Scripted::serving(script, Models::One)
    }

    /// A server that answers `GET /v1/models` as `models` says.
    pub fn serving(script: Script, models: Models) -> Scripted {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the scripted server");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let port = listener.local_addr().expect("an address").port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            script,
            models,
            started: std::time::Instant::now(),
            port,
            log: Arc::clone(&log),
            kill: watch::channel(0).0,
        });
        let stays_dead = matches!(script, Script::KilledAt { back: false, .. });
        runtime.spawn(async move {
            let mut killed = shared.kill.subscribe();
            loop {
                let socket = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((socket, _)) => socket,
                        Err(_) => break,
                    },
                    _ = killed.changed(), if stays_dead => break,
                };
                let _ = socket.set_nodelay(true);
                tokio::spawn(connection(socket, Arc::clone(&shared)));
            }
            // Dropping the listener: connecting is refused from now on.
        });
        Scripted {
            port,
            log,
            _runtime: runtime,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().expect("the log").clone()
    }

    /// The POSTs received, by arbor's request id (`None`: without one).
    pub fn posts_by_id(&self) -> std::collections::BTreeMap<Option<String>, u32> {
        let mut counts = std::collections::BTreeMap::new();
        for seen in self.seen().into_iter().filter(|s| s.method == "POST") {
            *counts.entry(seen.request_id).or_insert(0) += 1;
        }
        counts
    }
}

/// Serves one connection until it closes, the script ends it, or the
/// server is killed.
async fn connection(socket: TcpStream, shared: Arc<Shared>) {
    let mut killed = shared.kill.subscribe();
    let mut conn = BufReader::new(socket);
    let after = tokio::select! {
        after = serve(&mut conn, &shared) => after,
        _ = killed.changed() => After::Reset,
    };
    match after {
        After::Reset => {
            let _ = conn.get_ref().set_zero_linger();
        }
        After::Close | After::KeepAlive => {
            let _ = conn.get_mut().shutdown().await;
        }
    }
}

async fn serve(conn: &mut BufReader<TcpStream>, shared: &Shared) -> After {
    for answered in 0.. {
        let Some(request) = read_request(conn).await else {
            return After::Close;
        };
        let nth = {
            let mut log = shared.log.lock().expect("the log");
            log.push(request.seen.clone());
            log.iter().filter(|s| s.method == "POST").count()
        };
        let socket = conn.get_mut();
        if shared.script == Script::OneAnswerPerConnection && answered > 0 {
            return After::Close;
        }
        let after = if let Some(refusal) = refused(shared, &request) {
            refusal_of(socket, refusal).await
        } else if request.seen.method == "POST" {
            answer_post(socket, shared, &request, nth).await
        } else {
            answer_get(socket, shared, &request.seen.path).await
        };
        if after != After::KeepAlive {
            return after;
        }
    }
    After::Close
}

struct Request {
    seen: Seen,
    authorization: String,
}

/// Reads one request (head and `Content-Length` body); `None` at the end
/// of the connection or on anything unreadable.
async fn read_request(conn: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if conn.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut length = 0usize;
    let mut request_id = None;
    let mut authorization = String::new();
    loop {
        let mut header = String::new();
        if conn.read_line(&mut header).await.ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().ok()?,
            "x-arbor-request-id" => request_id = Some(value.to_string()),
            "authorization" => authorization = value.to_string(),
            _ => {}
        }
    }
    let mut body = vec![0u8; length];
    conn.read_exact(&mut body).await.ok()?;
    Some(Request {
        seen: Seen {
            method,
            path,
            request_id,
        },
        authorization,
    })
}

/// A refusal the server's [`Models`] makes of any request: a missing key
/// (401) or still loading (503).
fn refused(shared: &Shared, request: &Request) -> Option<(u16, &'static str)> {
    match shared.models {
        Models::NeedsKey(key) if request.authorization != format!("Bearer {key}") => Some((
            401,
            r#"{"error":{"message":"Invalid API Key","type":"invalid_request_error"}}"#,
        )),
        Models::LoadingFor(d) if shared.started.elapsed() < d => Some((
            503,
            r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
        )),
        _ => None,
    }
}

async fn refusal_of(socket: &mut TcpStream, (code, body): (u16, &'static str)) -> After {
    match status(socket, code, "", body).await {
        Ok(()) => After::KeepAlive,
        Err(_) => After::Close,
    }
}

async fn answer_get(socket: &mut TcpStream, shared: &Shared, path: &str) -> After {
    let listed = match shared.models {
        Models::Several => {
            r#"{"object":"list","data":[{"id":"m"},{"id":"m-large"},{"id":"other"}]}"#.to_string()
        }
        Models::Context(n) => {
            format!(
                r#"{{"object":"list","data":[{{"id":"m","object":"model","max_model_len":{n}}}]}}"#
            )
        }
        _ => r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#.to_string(),
    };
    let (status, body) = if path == "/v1/models" {
        ("200 OK", listed)
    } else {
        ("404 Not Found", r#"{"error":"not found"}"#.to_string())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    if socket
        .write_all(format!("{head}{body}").as_bytes())
        .await
        .is_err()
    {
        return After::Close;
    }
    match shared.script {
        Script::CloseAfterEachResponse => After::Close,
        _ => After::KeepAlive,
    }
}

const STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                           Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";

/// One SSE event as an HTTP chunk.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut event = b"data: ".to_vec();
    event.extend_from_slice(data);
    event.extend_from_slice(b"\n\n");
    let mut out = format!("{:x}\r\n", event.len()).into_bytes();
    out.extend_from_slice(&event);
    out.extend_from_slice(b"\r\n");
    out
}

fn token(text: &str) -> Vec<u8> {
    format!(r#"{{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}"#)
        .into_bytes()
}

/// The end of a stream of `tokens` tokens: finish reason, usage, `[DONE]`
/// (each an SSE event's data, unframed).
fn tail_events(tokens: usize) -> [Vec<u8>; 3] {
    let finish = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let usage = format!(
        r#"{{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{{"prompt_tokens":8,"completion_tokens":{tokens},"total_tokens":{}}}}}"#,
        tokens + 8
    );
    [finish.into(), usage.into_bytes(), b"[DONE]".to_vec()]
}

/// Writes the end of a chunked stream of `tokens` tokens.
async fn finish(socket: &mut TcpStream, tokens: usize) -> std::io::Result<()> {
    let mut out = Vec::new();
    for event in tail_events(tokens) {
        out.extend(chunk(&event));
    }
    out.extend_from_slice(b"0\r\n\r\n");
    socket.write_all(&out).await
}

/// A correct stream of `tokens` tokens of `text`, `gap` apart.
async fn stream(
    socket: &mut TcpStream,
    tokens: usize,
    text: &str,
    gap: Duration,
) -> std::io::Result<()> {
    socket.write_all(STREAM_HEAD.as_bytes()).await?;
    let one = chunk(&token(text));
    for _ in 0..tokens {
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        socket.write_all(&one).await?;
    }
    finish(socket, tokens).await
}

fn kept(written: std::io::Result<()>) -> After {
    match written {
        Ok(()) => After::KeepAlive,
        Err(_) => After::Close,
    }
}

async fn answer_post(
    socket: &mut TcpStream,
    shared: &Shared,
    request: &Request,
    nth: usize,
) -> After {
    let quick = Duration::from_millis(2);
    match shared.script {
        Script::Healthy | Script::OneAnswerPerConnection => {
            kept(stream(socket, 3, "w", quick).await)
        }
        Script::ResetBeforeHead => After::Reset,
        Script::ResetAfterHead => {
            let _ = socket.write_all(STREAM_HEAD.as_bytes()).await;
            // Time for the client to read the head before the reset
            // discards what it has not read.
            tokio::time::sleep(Duration::from_millis(50)).await;
            After::Reset
        }
        Script::ResetMidChunk => {
            let mut out = STREAM_HEAD.as_bytes().to_vec();
            out.extend(chunk(&token("a")));
            out.extend(chunk(&token("b")));
            out.extend_from_slice(b"40\r\ndata: {\"id\":\"c\",\"obj");
            let _ = socket.write_all(&out).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            After::Reset
        }
        Script::Status { code, extra, body } => kept(status(socket, code, extra, body).await),
        Script::EchoKey => {
            let body = format!(
                r#"{{"error":{{"message":"Incorrect API key provided: {}","type":"invalid_request_error"}}}}"#,
                request.authorization
            );
            kept(status(socket, 401, "", &body).await)
        }
        Script::InvalidUtf8 => {
            let mut out = STREAM_HEAD.as_bytes().to_vec();
            out.extend(chunk(&token("a")));
            let mut bad = token("b");
            let at = bad.len() - 6; // inside the content string
            bad.splice(at..at, [0xff, 0xfe, 0xc3]);
            out.extend(chunk(&bad));
            out.extend(chunk(&token("c")));
            if socket.write_all(&out).await.is_err() {
                return After::Close;
            }
            kept(finish(socket, 3).await)
        }
        Script::Endless => {
            if socket.write_all(STREAM_HEAD.as_bytes()).await.is_err() {
                return After::Close;
            }
            let one = chunk(&token("w"));
            // Bounded all the same: 60 s at most.
            for _ in 0..3000 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if socket.write_all(&one).await.is_err() {
                    break;
                }
            }
            After::Close
        }
        Script::Huge { bytes } => {
            let text = "x".repeat(16 * 1024);
            let tokens = bytes / text.len();
            kept(stream(socket, tokens, &text, Duration::ZERO).await)
        }
        Script::Http10 => {
            let mut out = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec();
            let events = [token("a"), token("b"), token("c")];
            for event in events.into_iter().chain(tail_events(3)) {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&event);
                out.extend_from_slice(b"\n\n");
            }
            let _ = socket.write_all(&out).await;
            After::Close
        }
        Script::Redirect { code } => {
            let location = format!(
                "Location: http://127.0.0.1:{}/elsewhere/v1/chat/completions\r\n",
                shared.port
            );
            kept(status(socket, code, &location, "").await)
        }
        Script::CloseAfterEachResponse => {
            let _ = stream(socket, 3, "w", quick).await;
            After::Close
        }
        Script::KilledAt { nth: at, .. } if nth == at => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            shared.kill.send_modify(|generation| *generation += 1);
            After::Reset
        }
        Script::KilledAt { .. } => kept(stream(socket, 5, "w", Duration::from_millis(50)).await),
    }
}

/// A complete answer with `code`, extra head lines and a JSON body.
async fn status(socket: &mut TcpStream, code: u16, extra: &str, body: &str) -> std::io::Result<()> {
    let answer = format!(
        "HTTP/1.1 {code} Scripted\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(answer.as_bytes()).await
}
