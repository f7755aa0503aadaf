//! The HTTP client against scripted servers: the framings, connection
//! reuse and the ways real servers end connections.
//!
//! Each scripted server answers the requests arriving on its n-th
//! connection with the n-th script, step by step, on 127.0.0.1, over plain
//! TCP or over TLS (every test runs both ways: reuse, stale connections and
//! stamps must not depend on the wire).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use arbor_backends::live::exchange::{execute, Target};
use arbor_backends::live::tls::{client_config, ClientConfig, TlsOptions};
use arbor_runs::record::{ErrorCategory, Response};
use arbor_sim::emulator::EmulatorTls;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Wire {
    Plain,
    Tls,
}

pub(crate) const WIRES: [Wire; 2] = [Wire::Plain, Wire::Tls];

/// A self-signed certificate for 127.0.0.1: the server's configuration,
/// and a client's that trusts it (made once).
fn tls_pair() -> &'static (EmulatorTls, Arc<ClientConfig>) {
    static PAIR: OnceLock<(EmulatorTls, Arc<ClientConfig>)> = OnceLock::new();
    PAIR.get_or_init(|| {
        let made = EmulatorTls::self_signed().expect("a certificate");
        let path = std::env::temp_dir().join(format!("arbor-http-it-{}.pem", std::process::id()));
        std::fs::write(&path, &made.cert_pem).expect("cert written");
        let client = client_config(&TlsOptions {
            cacert: Some(path.clone()),
            insecure: false,
        })
        .expect("a client configuration");
        let _ = std::fs::remove_file(path);
        (made.tls, client)
    })
}

/// A scripted server's address and wire.
pub(crate) struct Server {
    addr: SocketAddr,
    wire: Wire,
}

impl Server {
    pub(crate) fn target(&self) -> Target {
        let (scheme, tls) = match self.wire {
            Wire::Plain => ("http", None),
            Wire::Tls => ("https", Some(Arc::clone(&tls_pair().1))),
        };
        Target::new(
            &format!("{scheme}://{}/v1/chat/completions", self.addr),
            &Default::default(),
            Duration::from_secs(5),
            0,
            tls,
        )
        .unwrap()
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Step {
    /// Write these bytes and keep the connection.
    Answer(&'static [u8]),
    /// Write these bytes and close.
    AnswerAndClose(&'static [u8]),
    /// Read the request and close without a byte.
    Close,
}

const SSE_CHUNKED: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
2f\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\r\n\
2f\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n\r\n\
e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";

const SSE_SIZED: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 61\r\n\r\n\
data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";

const SSE_HTTP10: &[u8] = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";

const RATE_LIMITED: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Type: application/json\r\nContent-Length: 26\r\n\r\n{\"error\":\"slow down, pls\"}";

const CUT_MID_CHUNK: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
2f\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\r\n40\r\ndata: {\"cho";

/// Serves `scripts` (connection n gets `scripts[n]`, the last repeating);
/// counts the requests read.
pub(crate) async fn scripted(wire: Wire, scripts: Vec<Vec<Step>>) -> (Server, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&requests);
    let acceptor = match wire {
        Wire::Plain => None,
        Wire::Tls => Some(tokio_rustls::TlsAcceptor::from(
            tls_pair().0.server_config(),
        )),
    };
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((stream, _)) = listener.accept().await {
            let script = scripts[n.min(scripts.len() - 1)].clone();
            n += 1;
            let seen = Arc::clone(&seen);
            match &acceptor {
                None => {
                    tokio::spawn(serve_connection(stream, script, seen));
                }
                Some(acceptor) => {
                    let handshake = acceptor.accept(stream);
                    tokio::spawn(async move {
                        if let Ok(stream) = handshake.await {
                            serve_connection(stream, script, seen).await;
                        }
                    });
                }
            }
        }
    });
    (Server { addr, wire }, requests)
}

async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    script: Vec<Step>,
    seen: Arc<AtomicUsize>,
) {
    let mut pending = Vec::new();
    for step in script {
        if !read_request(&mut stream, &mut pending).await {
            return;
        }
        seen.fetch_add(1, Ordering::SeqCst);
        match step {
            Step::Answer(bytes) => {
                let _ = stream.write_all(bytes).await;
                let _ = stream.flush().await;
            }
            Step::AnswerAndClose(bytes) => {
                let _ = stream.write_all(bytes).await;
                let _ = stream.flush().await;
                return;
            }
            Step::Close => return,
        }
    }
}

/// Reads one request (head and `Content-Length` body) off `stream`.
async fn read_request<S: AsyncRead + Unpin>(stream: &mut S, pending: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap_or(0));
            if pending.len() >= end + 4 + length {
                pending.drain(..end + 4 + length);
                return true;
            }
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

pub(crate) async fn send(target: &Target, id: u64) -> Response {
    execute(target, b"{}", id, Instant::now(), 4, None, |_| {}, || {}).await
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn chunked_sized_and_close_delimited_streams_are_read_whole() {
    for wire in WIRES {
        runtime().block_on(async {
            for (answer, reusable) in [
                (Step::Answer(SSE_CHUNKED), true),
                (Step::Answer(SSE_SIZED), true),
                (Step::AnswerAndClose(SSE_HTTP10), false),
            ] {
                let (server, _) = scripted(wire, vec![vec![answer, answer]]).await;
                let target = server.target();
                let r = send(&target, 1).await;
                assert_eq!(r.error, None);
                assert_eq!(r.http_status, Some(200));
                assert!(!r.stamps.content.is_empty());
                assert!(r.stamps.headers.is_some() && r.stamps.done >= r.stamps.first_content);
                // The drain of a finished body may still be running.
                tokio::time::sleep(Duration::from_millis(20)).await;
                assert_eq!(target.idle_connections(), usize::from(reusable));
            }
        });
    }
}

#[test]
fn a_pooled_connection_closed_after_taking_the_request_is_an_error_not_a_resend() {
    for wire in WIRES {
        runtime().block_on(async {
            // Connection 1 answers once, then closes on the next request
            // without answering (a keep-alive timeout racing the request,
            // or a server that died of it); connection 2 would answer.
            let (server, seen) = scripted(
                wire,
                vec![
                    vec![Step::Answer(SSE_CHUNKED), Step::Close],
                    vec![Step::Answer(SSE_CHUNKED)],
                ],
            )
            .await;
            let target = server.target();
            assert_eq!(send(&target, 1).await.error, None);
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(target.idle_connections(), 1);
            let r = send(&target, 2).await;
            let e = r.error.expect("not resent: it may have reached the server");
            assert_eq!(e.category, ErrorCategory::Connect);
            assert!(
                e.message.contains("after the request was sent"),
                "{}",
                e.message
            );
            assert_eq!((r.attempts, r.resends), (1, 0));
            assert_eq!(seen.load(Ordering::SeqCst), 2, "received once");

            // A server that closed an idle connection: noticed when taken
            // (the peek), dropped, not an attempt.
            let (server, seen) = scripted(wire, vec![vec![Step::AnswerAndClose(SSE_SIZED)]]).await;
            let target = server.target();
            assert_eq!(send(&target, 1).await.error, None);
            tokio::time::sleep(Duration::from_millis(20)).await;
            let r = send(&target, 2).await;
            assert_eq!((r.error, r.attempts, r.resends), (None, 1, 0));
            assert_eq!(seen.load(Ordering::SeqCst), 2);
        });
    }
}

#[test]
fn a_fresh_connection_closed_without_an_answer_is_a_connect_error() {
    for wire in WIRES {
        runtime().block_on(async {
            let (server, seen) = scripted(wire, vec![vec![Step::Close]]).await;
            let r = send(&server.target(), 1).await;
            assert_eq!(
                r.error.map(|e| e.category),
                Some(ErrorCategory::Connect),
                "not resent: it may have reached the server"
            );
            assert_eq!(seen.load(Ordering::SeqCst), 1);
        });
    }
}

#[test]
fn error_statuses_keep_their_body_and_retry_after_and_the_connection() {
    for wire in WIRES {
        runtime().block_on(async {
            let (server, _) = scripted(
                wire,
                vec![vec![Step::Answer(RATE_LIMITED), Step::Answer(SSE_CHUNKED)]],
            )
            .await;
            let target = server.target();
            let r = send(&target, 1).await;
            let e = r.error.expect("an error");
            assert_eq!(e.category, ErrorCategory::HttpStatus);
            assert_eq!((e.http_status, e.retry_after_s), (Some(429), Some(3.0)));
            assert!(e.message.contains("slow down"), "{}", e.message);
            assert_eq!(send(&target, 2).await.error, None, "same connection");
        });
    }
}

#[test]
fn cut_and_garbled_answers_are_classed_not_panics() {
    for wire in WIRES {
        runtime().block_on(async {
            let (server, _) = scripted(wire, vec![vec![Step::AnswerAndClose(CUT_MID_CHUNK)]]).await;
            let r = send(&server.target(), 1).await;
            assert_eq!(r.error.map(|e| e.category), Some(ErrorCategory::StreamCut));
            assert_eq!(r.stamps.content.len(), 1, "the chunk before the cut counts");

            let (server, _) = scripted(
                wire,
                vec![vec![Step::AnswerAndClose(b"SSH-2.0-OpenSSH_9\r\n\r\n")]],
            )
            .await;
            let r = send(&server.target(), 1).await;
            assert_eq!(
                r.error.map(|e| e.category),
                Some(ErrorCategory::ServerError)
            );

            let (server, _) = scripted(
                wire,
                vec![vec![Step::AnswerAndClose(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                )]],
            )
            .await;
            let r = send(&server.target(), 1).await;
            let e = r.error.expect("an error");
            assert_eq!(e.category, ErrorCategory::StreamCut);
            assert!(e.message.contains("framing"), "{}", e.message);
        });
    }
}

#[test]
fn a_request_begun_by_send_now_is_finished_by_execute() {
    for wire in WIRES {
        runtime().block_on(async {
            let (server, seen) = scripted(
                wire,
                vec![
                    vec![
                        Step::Answer(SSE_CHUNKED),
                        Step::Answer(SSE_CHUNKED),
                        Step::Close,
                    ],
                    vec![Step::Answer(SSE_CHUNKED)],
                ],
            )
            .await;
            let target = server.target();
            let epoch = Instant::now();
            assert!(
                target.send_now(1, b"{}", epoch).is_none(),
                "no idle connection yet: the task connects"
            );
            assert_eq!(send(&target, 1).await.error, None);
            tokio::time::sleep(Duration::from_millis(20)).await;
            for id in [2, 3] {
                let started = target
                    .send_now(id, b"{}", epoch)
                    .expect("an idle connection");
                let sent = started.sent();
                let mut stamped_again = false;
                let r = execute(
                    &target,
                    b"{}",
                    id,
                    epoch,
                    4,
                    Some(started),
                    |_| stamped_again = true,
                    || {},
                )
                .await;
                // Request 3's connection closes once it took the request:
                // an error, never sent again.
                match id {
                    2 => assert_eq!(r.error, None),
                    _ => assert_eq!(r.error.map(|e| e.category), Some(ErrorCategory::Connect)),
                }
                assert_eq!((r.attempts, r.resends), (1, 0));
                assert_eq!(r.stamps.sent, Some(sent), "the stamp of send_now");
                assert!(!stamped_again);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(seen.load(Ordering::SeqCst), 3, "each request once");
        });
    }
}

#[test]
fn warming_counts_only_the_connections_the_server_proved() {
    const MODELS: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    const MODELS_THEN_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    runtime().block_on(async {
        for wire in WIRES {
            let (all_answer, _) = scripted(wire, vec![vec![Step::Answer(MODELS)]]).await;
            assert_eq!(
                all_answer.target().warm(3, "/v1/models").await,
                3,
                "{wire:?}"
            );
            // One connection answers and stays; one answers and says it
            // closes; the rest close without a byte.
            let (some, _) = scripted(
                wire,
                vec![
                    vec![Step::Answer(MODELS)],
                    vec![Step::AnswerAndClose(MODELS_THEN_CLOSE)],
                    vec![Step::Close],
                ],
            )
            .await;
            assert_eq!(some.target().warm(4, "/v1/models").await, 1, "{wire:?}");
        }
    });
}
