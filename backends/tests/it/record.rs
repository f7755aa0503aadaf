//! The recording proxy in process: its options checked before anything is
//! created or bound (a bad upstream or session header, or an upstream that
//! is the proxy's own address, is the caller's fault, exit 2: the observer
//! hears nothing and no capture file is made), and its bounds against
//! hostile disks and clients (issue 27): a capture that cannot be written
//! stops it at once (or is reported while it forwards on), stalled bodies
//! are cut, connections are capped, oversized bodies refused, exchanges
//! cut at the stop say so and malformed stream lines are counted.
//!
//! Clients are raw `std::net` sockets on 127.0.0.1 (the bytes on the wire
//! are the point); the upstream is the scripted `StdServer`.

use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use arbor_backends::record::{record_until, RecordObserver, RecordOptions, Recorded, StopHandle};
use arbor_error::{Error, Kind};
use serde_json::Value;

use crate::std_server::{Reply, StdServer};

#[derive(Default)]
struct Heard(Cell<usize>);

impl RecordObserver for Heard {
    fn listening(&self, _: SocketAddr, _: &str) -> Result<(), Error> {
        self.0.set(self.0.get() + 1);
        Ok(())
    }

    fn stopping(&self, _: SocketAddr) {
        self.0.set(self.0.get() + 1);
    }

    fn capture_failed(&self, _: &str, _: bool) {
        self.0.set(self.0.get() + 1);
    }
}

pub(crate) fn scratch_file(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!("arbor-record-{test}-{}.jsonl", std::process::id()))
}

fn options(upstream: &str, session_header: Option<&str>, test: &str) -> RecordOptions {
    let mut options = RecordOptions::new(
        upstream.to_string(),
        "127.0.0.1:0".parse().expect("addr"),
        scratch_file(&format!("options-{test}")),
    );
    options.session_header = session_header.map(str::to_string);
    options
}

#[test]
fn a_bad_upstream_or_session_header_is_refused_before_anything_starts() {
    let cases = [
        (
            options("http://127.0.0.1:9/?key=secret", None, "query"),
            "a query string is not forwarded",
        ),
        (
            options("http://127.0.0.1:9", Some("bad header"), "header"),
            "--session-header `bad header` is not a header name",
        ),
        (
            // Issue 27: forwarding to itself ran until descriptors ran out.
            RecordOptions {
                listen: "127.0.0.1:47811".parse().expect("addr"),
                ..options("http://127.0.0.1:47811/v1", None, "itself")
            },
            "is the proxy's own address",
        ),
    ];
    for (options, said) in cases {
        let heard = Heard::default();
        // Stopped before it starts: a check that let it start ends it at
        // once instead of hanging the test.
        let stop = StopHandle::default();
        stop.stop();
        let e = record_until(&options, &heard, &stop).unwrap_err();
        assert!(e.is_input(), "{e}");
        assert!(e.message.contains(said), "{e}");
        assert!(!e.message.contains("secret"), "{e}");
        assert_eq!(heard.0.get(), 0);
        assert!(!options.out.exists());
    }
}

// ---------------------------------------------------------------------------
// A recording on its own thread, and raw clients

/// How long any one step may take before the test fails: generous, since
/// each step is a few local round trips on a loaded 2-core machine.
pub(crate) const BOUND: Duration = Duration::from_secs(30);

/// What the observer heard.
#[derive(Debug)]
pub(crate) enum Event {
    Listening(SocketAddr),
    Stopping,
    CaptureFailed(String, bool),
}

struct Told(Sender<Event>);

impl RecordObserver for Told {
    fn listening(&self, addr: SocketAddr, _: &str) -> Result<(), Error> {
        let _ = self.0.send(Event::Listening(addr));
        Ok(())
    }

    fn stopping(&self, _: SocketAddr) {
        let _ = self.0.send(Event::Stopping);
    }

    fn capture_failed(&self, error: &str, forwarding: bool) {
        let _ = self
            .0
            .send(Event::CaptureFailed(error.to_string(), forwarding));
    }
}

pub(crate) struct Running {
    pub(crate) addr: SocketAddr,
    events: Receiver<Event>,
    pub(crate) stop: StopHandle,
    done: JoinHandle<Result<Recorded, Error>>,
}

impl Running {
    pub(crate) fn start(options: RecordOptions) -> Running {
        let (tx, events) = channel();
        let stop = StopHandle::default();
        let handle = stop.clone();
        let done = std::thread::spawn(move || record_until(&options, &Told(tx), &handle));
        let addr = match events.recv_timeout(BOUND) {
            Ok(Event::Listening(addr)) => addr,
            other => panic!("no listening in time: {other:?}"),
        };
        Running {
            addr,
            events,
            stop,
            done,
        }
    }

    fn next_event(&self) -> Event {
        self.events.recv_timeout(BOUND).expect("an event in time")
    }

    /// The recording's result, once it ended by itself or by `stop`.
    pub(crate) fn wait(self) -> Result<Recorded, Error> {
        let deadline = std::time::Instant::now() + BOUND;
        while !self.done.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "the recording did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.done.join().expect("the recording does not panic")
    }
}

fn recording(upstream: &StdServer, test: &str) -> RecordOptions {
    RecordOptions::new(
        upstream.base_url(),
        "127.0.0.1:0".parse().expect("addr"),
        scratch_file(test),
    )
}

const CHAT: &str = r#"{"stream":true,"messages":[{"role":"user","content":"Go."}]}"#;

/// A connection to the proxy with `head` (a request line and headers,
/// without the blank line) and `body` sent.
fn send(addr: SocketAddr, head: &str, body: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("the proxy accepts");
    stream.set_read_timeout(Some(BOUND)).expect("timeout");
    let mut bytes = format!("{head}\r\nHost: proxy\r\n\r\n").into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).expect("sent");
    stream
}

/// A chat request whose connection closes after its answer.
fn chat(addr: SocketAddr) -> TcpStream {
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\n\
         Connection: close\r\nContent-Length: {}",
        CHAT.len()
    );
    send(addr, &head, CHAT.as_bytes())
}

/// Everything the proxy sends until it closes the connection.
fn answer(mut stream: TcpStream) -> String {
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Reads until the response head and one chunk have come.
fn first_chunk(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("data:") {
        let n = stream.read(&mut buf).expect("the stream goes on");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

pub(crate) fn capture_lines(path: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the capture")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

// ---------------------------------------------------------------------------
// Issue 27, item 1: a capture that cannot be written

#[test]
fn a_capture_that_cannot_be_written_stops_the_proxy_at_once() {
    let upstream = StdServer::start(|_| Reply::Stream);
    let mut options = recording(&upstream, "full");
    options.out = PathBuf::from("/dev/full");
    let running = Running::start(options);
    let said = answer(chat(running.addr));
    assert!(said.starts_with("HTTP/1.1 200"), "{said}");
    // Reported as soon as the line failed, then the accepting stops; no
    // signal, no stop handle.
    match running.next_event() {
        Event::CaptureFailed(error, false) => assert!(error.contains("No space left"), "{error}"),
        other => panic!("expected the failure at once, heard {other:?}"),
    }
    assert!(matches!(running.next_event(), Event::Stopping));
    let addr = running.addr;
    let e = running.wait().expect_err("a failed capture is an error");
    assert_eq!(e.kind, Kind::Other, "{e}");
    assert!(
        e.message.contains("/dev/full: writing the capture failed"),
        "{e}"
    );
    assert!(e.message.contains("stopped accepting"), "{e}");
    assert!(e.message.contains("0 exchanges written, 1 lost"), "{e}");
    assert!(TcpStream::connect(addr).is_err(), "still accepting");
}

#[test]
fn forwarding_without_recording_goes_on_after_a_failed_write_and_says_so() {
    let upstream = StdServer::start(|_| Reply::Stream);
    let mut options = recording(&upstream, "full-forward");
    options.out = PathBuf::from("/dev/full");
    options.forward_without_recording = true;
    let running = Running::start(options);
    assert!(answer(chat(running.addr)).starts_with("HTTP/1.1 200"));
    match running.next_event() {
        Event::CaptureFailed(error, true) => assert!(error.contains("No space left"), "{error}"),
        other => panic!("expected the failure at once, heard {other:?}"),
    }
    // Still forwarding.
    let said = answer(chat(running.addr));
    assert!(
        said.starts_with("HTTP/1.1 200") && said.contains("[DONE]"),
        "{said}"
    );
    running.stop.stop();
    assert!(matches!(running.next_event(), Event::Stopping));
    let e = running.wait().expect_err("the capture is still incomplete");
    assert_eq!(e.kind, Kind::Other, "{e}");
    assert!(e.message.contains("forwarding without recording"), "{e}");
    assert!(e.message.contains("0 exchanges written, 2 lost"), "{e}");
    assert_eq!(upstream.posts(), 2);
}

// ---------------------------------------------------------------------------
// Issue 27, item 9: bounded clients

#[test]
fn a_stalled_or_oversized_request_body_is_refused_not_held() {
    let upstream = StdServer::start(|_| Reply::Stream);
    let mut options = recording(&upstream, "stalled");
    // The stall below is endless: the timeout only has to fire at all
    // within BOUND. 3 s, not less, so that the request head (sent at
    // once) never meets the same timeout on a loaded machine.
    options.read_timeout = Duration::from_secs(3);
    options.max_request_bytes = 1000;
    let running = Running::start(options);
    let head = |length: usize| {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\n\
             Content-Length: {length}"
        )
    };
    // 10 bytes of a 900-byte body, then nothing.
    let said = answer(send(running.addr, &head(900), &[b' '; 10]));
    assert!(said.starts_with("HTTP/1.1 408"), "{said}");
    assert!(said.contains("--read-timeout"), "{said}");
    // A body declared larger than the cap: refused before any of it.
    let said = answer(send(running.addr, &head(5000), b""));
    assert!(said.starts_with("HTTP/1.1 413"), "{said}");
    // A chunked body that grows past it.
    let chunked = "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked";
    let chunk = format!("{:x}\r\n{}\r\n", 600, " ".repeat(600));
    let said = answer(send(running.addr, chunked, chunk.repeat(2).as_bytes()));
    assert!(said.starts_with("HTTP/1.1 413"), "{said}");
    assert_eq!(upstream.posts(), 0, "nothing refused went upstream");
    running.stop.stop();
    running.wait().expect("a clean stop");
}

#[test]
fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let upstream = StdServer::start(|_| Reply::Slow(Duration::from_millis(50)));
    let mut options = recording(&upstream, "cap");
    options.max_connections = 1;
    let running = Running::start(options);
    let mut first = chat(running.addr);
    first_chunk(&mut first);
    // The second connection is not served while the first holds the only
    // slot. (A negative check: load can only make it pass more slowly.)
    let mut second = send(
        running.addr,
        "GET /v1/models HTTP/1.1\r\nConnection: close",
        b"",
    );
    second
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let mut byte = [0u8; 1];
    let waited = second.read(&mut byte);
    assert!(
        matches!(&waited, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "served beyond the cap: {waited:?}"
    );
    drop(first);
    second.set_read_timeout(Some(BOUND)).expect("timeout");
    let said = answer(second);
    assert!(said.starts_with("HTTP/1.1 200"), "{said}");
    running.stop.stop();
    running.wait().expect("a clean stop");
}

// ---------------------------------------------------------------------------
// Issue 27: the smaller slips

#[test]
fn an_exchange_cut_at_the_stop_says_the_proxy_shut_down() {
    let upstream = StdServer::start(|_| Reply::Slow(Duration::from_millis(50)));
    let options = recording(&upstream, "cut");
    let out = options.out.clone();
    let running = Running::start(options);
    let mut client = chat(running.addr);
    first_chunk(&mut client);
    running.stop.stop();
    assert!(matches!(running.next_event(), Event::Stopping));
    // After the stop's grace (5 s) the stream is cut.
    let recorded = running.wait().expect("a clean stop");
    drop(client);
    assert_eq!(recorded.lines, 1);
    let lines = capture_lines(&out);
    let error = lines[0]["error"].as_str().unwrap_or_default();
    assert_eq!(
        error, "the proxy shut down before the response ended",
        "{}",
        lines[0]
    );
}

#[test]
fn malformed_stream_lines_are_flagged_in_the_capture() {
    let stream = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
        data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n\
        data: {\"choices\":[{\"delta\n\n\
        <html>oops</html>\n\n\
        data: [DONE]\n\n";
    let upstream = StdServer::start(|_| Reply::Raw(stream.to_vec()));
    let options = recording(&upstream, "malformed");
    let out = options.out.clone();
    let running = Running::start(options);
    let said = answer(chat(running.addr));
    assert!(said.contains("<html>oops</html>"), "passed through: {said}");
    running.stop.stop();
    running.wait().expect("a clean stop");
    let lines = capture_lines(&out);
    assert_eq!(lines[0]["malformed_sse_lines"], 2, "{}", lines[0]);
    assert_eq!(lines[0]["response"]["content"], "ok");
}
