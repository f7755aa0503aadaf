//! A scripted HTTP/1.1 server on `std::net` (a thread per connection) for
//! the reliability tests: it counts every request it reads, by arbor's
//! request id, and answers each as its script says. Plain TCP on
//! 127.0.0.1; a `GET` (warming the pool) gets a tiny keep-alive answer.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_sim::emulator::REQUEST_ID_HEADER;

/// How to answer one POST.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A complete chunked SSE stream of two tokens; keep the connection.
    Stream,
    /// The same, then close the connection (its head said keep-alive).
    StreamThenClose,
    /// Close the connection without a byte of a response.
    Drop,
    /// A chunked SSE head, then one content chunk every interval, never
    /// ending (until the client goes away).
    Slow(Duration),
    /// These bytes, then close.
    Raw(Vec<u8>),
    /// A chunked SSE stream of `lines` content lines of `bytes` bytes of
    /// text each, then `[DONE]`; keep the connection.
    Many { lines: usize, bytes: usize },
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

const TOKEN: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";

const DONE: &[u8] = b"data: [DONE]\n\n";

const GET_ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"data\":[]}";

#[derive(Debug, Default)]
struct Counts {
    posts: usize,
    by_id: BTreeMap<u64, usize>,
}

/// A running server; its threads end with the test process.
pub(crate) struct StdServer {
    addr: SocketAddr,
    counts: Arc<Mutex<Counts>>,
}

type Script = Arc<dyn Fn(u64) -> Reply + Send + Sync>;

impl StdServer {
    /// Serves POSTs as `script(request_id)` says.
    pub(crate) fn start(script: impl Fn(u64) -> Reply + Send + Sync + 'static) -> StdServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let addr = listener.local_addr().expect("an address");
        let counts = Arc::new(Mutex::new(Counts::default()));
        let script: Script = Arc::new(script);
        let shared = Arc::clone(&counts);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let counts = Arc::clone(&shared);
                let script = Arc::clone(&script);
                std::thread::spawn(move || serve(stream, &script, &counts));
            }
        });
        StdServer { addr, counts }
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// POSTs read in full so far.
    pub(crate) fn posts(&self) -> usize {
        self.counts.lock().expect("counts").posts
    }

    /// POSTs read carrying request id `id`.
    pub(crate) fn posts_of(&self, id: u64) -> usize {
        let counts = self.counts.lock().expect("counts");
        counts.by_id.get(&id).copied().unwrap_or(0)
    }
}

fn serve(mut stream: TcpStream, script: &Script, counts: &Mutex<Counts>) {
    let _ = stream.set_nodelay(true);
    let mut pending = Vec::new();
    while let Some((post, id)) = read_request(&mut stream, &mut pending) {
        if !post {
            if stream.write_all(GET_ANSWER).is_err() {
                return;
            }
            continue;
        }
        {
            let mut c = counts.lock().expect("counts");
            c.posts += 1;
            *c.by_id.entry(id).or_default() += 1;
        }
        let keep = match script(id) {
            Reply::Stream => write_stream(&mut stream, 2, TOKEN),
            Reply::StreamThenClose => {
                write_stream(&mut stream, 2, TOKEN);
                false
            }
            Reply::Drop => false,
            Reply::Slow(every) => {
                let _ = stream.write_all(SSE_HEAD);
                while write_chunk(&mut stream, TOKEN) {
                    std::thread::sleep(every);
                }
                false
            }
            Reply::Raw(bytes) => {
                let _ = stream.write_all(&bytes);
                false
            }
            Reply::Many { lines, bytes } => {
                let text = "x".repeat(bytes);
                let line =
                    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n");
                write_stream(&mut stream, lines, line.as_bytes())
            }
        };
        if !keep {
            return;
        }
    }
}

/// A chunked SSE stream of `lines` copies of `line`, then `[DONE]`;
/// false when the client went away.
fn write_stream(stream: &mut TcpStream, lines: usize, line: &[u8]) -> bool {
    if stream.write_all(SSE_HEAD).is_err() {
        return false;
    }
    for _ in 0..lines {
        if !write_chunk(stream, line) {
            return false;
        }
    }
    write_chunk(stream, DONE) && stream.write_all(b"0\r\n\r\n").is_ok()
}

fn write_chunk(stream: &mut TcpStream, data: &[u8]) -> bool {
    let size = format!("{:x}\r\n", data.len());
    stream.write_all(size.as_bytes()).is_ok()
        && stream.write_all(data).is_ok()
        && stream.write_all(b"\r\n").is_ok()
}

/// Reads one request (head and `Content-Length` body): whether it is a
/// POST, and its arbor request id (0 when none).
fn read_request(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Option<(bool, u64)> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let header = |name: &str| {
                head.lines()
                    .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                    .map(|v| v.trim().to_string())
            };
            let length: usize = header("content-length").map_or(0, |v| v.parse().unwrap_or(0));
            let id = header(REQUEST_ID_HEADER).map_or(0, |v| v.parse().unwrap_or(0));
            if pending.len() >= end + 4 + length {
                let post = head.starts_with("post ");
                pending.drain(..end + 4 + length);
                return Some((post, id));
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}
