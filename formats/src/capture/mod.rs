//! The capture file `arbor record` writes: one openai-log line per
//! recorded exchange (docs/formats/openai-log.md), the thread that writes
//! it, and the redaction of a line (`redact`, `--redact`). The capture is a
//! trace format (`load::openai_log` reads it), so its writer lives with
//! the readers; the proxy that feeds it is `arbor_backends::record`.
//!
//! Owns [`CaptureLine`] (what a line says) and [`CaptureFile`], whose
//! writer thread makes each line an exchange sends (the exchange's work
//! that need not happen on its request's task: the response read to its
//! end), redacts it (`--redact`), serializes and appends it, and flushes
//! whenever it has nothing more waiting, so a line is on disk as soon as
//! its response has ended and no request task ever waits on the disk.
//! A write or flush that fails is reported at once, to the hook given at
//! creation (the proxy stops on it), and every later line is counted as
//! lost, never silently dropped ([`Written`]). Knows no HTTP.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

mod identity;
mod redact;

pub use identity::{Identity, Stated};
pub use redact::Redactor;

/// One recorded exchange. `start` and `end` (unix seconds) are what every
/// openai-log reader reads; `start_ns` and `end_ns` are the same stamps
/// exact, which arbor prefers.
#[derive(Debug, Serialize)]
pub struct CaptureLine {
    pub start: f64,
    pub end: f64,
    pub start_ns: u64,
    /// When the response's first body byte arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_ns: Option<u64>,
    pub end_ns: u64,
    /// The session's name from `--session-header` (or `X-Session-Id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's own identity headers (session, agent, parent agent),
    /// each with the header that stated it.
    #[serde(skip_serializing_if = "Identity::is_empty")]
    pub identity: Identity,
    /// Agents are inferred from the traffic by the loader.
    pub infer: bool,
    pub method: String,
    /// The request's path, without its query string (which may carry a
    /// key).
    pub path: String,
    pub stream: bool,
    /// The status the client got; `None` when no response head came.
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// More of the response came than the capture keeps of it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub response_truncated: bool,
    /// Lines of the response's event stream that were not SSE or whose
    /// `data` was not JSON: passed to the client, left out of `response`.
    #[serde(skip_serializing_if = "is_zero")]
    pub malformed_sse_lines: u64,
    /// The request body as sent (on one line).
    pub request: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Unix nanoseconds as unix seconds.
pub fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A line, made on the writer thread.
type MakeLine = Box<dyn FnOnce() -> CaptureLine + Send>;

enum Message {
    Line(MakeLine),
    Stop,
}

/// Where exchanges send their lines; cheap to clone.
#[derive(Clone)]
pub struct CaptureSink {
    tx: Sender<Message>,
}

impl CaptureSink {
    /// Queues the line `make` makes for the file: the writer thread calls
    /// it, then redacts and serializes the line, so the sender never waits
    /// on any of that, nor on the disk.
    pub fn send_later(&self, make: impl FnOnce() -> CaptureLine + Send + 'static) {
        let _ = self.tx.send(Message::Line(Box::new(make)));
    }
}

/// Called on the writer thread, once, with the first error writing the
/// capture.
pub type OnFailure = Box<dyn FnOnce(&io::Error) + Send>;

/// What a capture holds once its writer stopped.
#[derive(Debug)]
pub struct Written {
    /// Lines written (and flushed).
    pub lines: u64,
    /// Lines lost: those a failed write or flush took, and every line
    /// sent after it.
    pub lost: u64,
    /// The first error writing the capture.
    pub error: Option<io::Error>,
}

/// The open capture file and its writer thread.
pub struct CaptureFile {
    sink: CaptureSink,
    writer: JoinHandle<Written>,
}

impl CaptureFile {
    /// Creates (or truncates) `path` and starts the writer, which
    /// redacts every line with `redactor` when there is one and calls
    /// `on_failure` as soon as a write fails.
    pub fn create(
        path: &Path,
        redactor: Option<Redactor>,
        on_failure: Option<OnFailure>,
    ) -> io::Result<CaptureFile> {
        let file = BufWriter::new(File::create(path)?);
        let (tx, rx) = channel();
        let writer = Writer {
            file,
            redactor,
            on_failure,
            buffered: 0,
            written: Written {
                lines: 0,
                lost: 0,
                error: None,
            },
        };
        let writer = std::thread::Builder::new()
            .name("arbor-capture".to_string())
            .spawn(move || writer.run(rx))?;
        Ok(CaptureFile {
            sink: CaptureSink { tx },
            writer,
        })
    }

    pub fn sink(&self) -> CaptureSink {
        self.sink.clone()
    }

    /// Writes every line queued so far, closes the file and says what it
    /// holds. Lines sent after this are dropped.
    pub fn finish(self) -> Written {
        let _ = self.sink.tx.send(Message::Stop);
        self.writer.join().unwrap_or_else(|_| Written {
            lines: 0,
            lost: 0,
            error: Some(io::Error::other("the capture writer panicked")),
        })
    }
}

/// The writer thread's state.
struct Writer {
    file: BufWriter<File>,
    redactor: Option<Redactor>,
    on_failure: Option<OnFailure>,
    /// Lines written to the buffer since the last flush.
    buffered: u64,
    written: Written,
}

impl Writer {
    /// Writes lines until [`Message::Stop`], flushing whenever none is
    /// waiting.
    fn run(mut self, rx: Receiver<Message>) -> Written {
        'outer: while let Ok(message) = rx.recv() {
            let mut next = Some(message);
            while let Some(message) = next.take() {
                match message {
                    Message::Line(make) => self.line(make),
                    Message::Stop => break 'outer,
                }
                next = rx.try_recv().ok();
            }
            self.flush();
        }
        self.flush();
        self.written
    }

    /// Makes, redacts and writes one line; after a failure, counts it
    /// lost without making it.
    fn line(&mut self, make: MakeLine) {
        if self.written.error.is_some() {
            self.written.lost += 1;
            return;
        }
        let mut line = make();
        if let Some(r) = &self.redactor {
            redact(r, &mut line);
        }
        let mut bytes = match serde_json::to_vec(&line) {
            Ok(bytes) => bytes,
            Err(e) => return self.fail(io::Error::other(e), 1),
        };
        bytes.push(b'\n');
        match self.file.write_all(&bytes) {
            Ok(()) => self.buffered += 1,
            Err(e) => self.fail(e, 1),
        }
    }

    fn flush(&mut self) {
        if self.written.error.is_some() {
            return;
        }
        match self.file.flush() {
            Ok(()) => {
                self.written.lines += self.buffered;
                self.buffered = 0;
            }
            Err(e) => self.fail(e, 0),
        }
    }

    /// The first failure: the buffered lines and `failing` (the line
    /// being written) are lost, and the hook hears of it.
    fn fail(&mut self, error: io::Error, failing: u64) {
        self.written.lost += self.buffered + failing;
        self.buffered = 0;
        if let Some(hook) = self.on_failure.take() {
            hook(&error);
        }
        self.written.error = Some(error);
    }
}

/// `line`'s request, response and error, redacted.
fn redact(r: &Redactor, line: &mut CaptureLine) {
    // The request was read as JSON; were it not, no text may stay.
    line.request = r
        .request(&line.request)
        .or_else(|| RawValue::from_string("{\"messages\":[]}".to_string()).ok())
        .unwrap_or_else(|| line.request.clone());
    if let Some(response) = line.response.as_mut() {
        r.body(response);
    }
    if let Some(error) = line.error.as_mut() {
        *error = r.text(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: u64) -> CaptureLine {
        CaptureLine {
            start: seconds(i),
            end: seconds(i + 1),
            start_ns: i,
            first_byte_ns: None,
            end_ns: i + 1,
            session_id: None,
            identity: Identity::default(),
            infer: true,
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            stream: false,
            status: Some(200),
            error: None,
            response_truncated: false,
            malformed_sse_lines: 0,
            request: RawValue::from_string(r#"{"messages":[]}"#.into()).expect("raw"),
            response: None,
        }
    }

    #[test]
    fn lines_are_written_in_order_and_counted() {
        let path = std::env::temp_dir().join(format!("arbor-capture-{}.jsonl", std::process::id()));
        let file = CaptureFile::create(&path, None, None).expect("create");
        let sink = file.sink();
        for i in 0..3u64 {
            sink.send_later(move || line(i));
        }
        let written = file.finish();
        assert!(written.error.is_none());
        assert_eq!((written.lines, written.lost), (3, 0));
        let text = std::fs::read_to_string(&path).expect("read");
        let starts: Vec<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("json")["start_ns"]
                    .as_u64()
                    .expect("ns")
            })
            .collect();
        assert_eq!(starts, [0, 1, 2]);
        std::fs::remove_file(&path).ok();
    }

    /// Issue 27, item 1: a capture that cannot be written is reported at
    /// once (the hook, before the writer is asked to stop), and every line
    /// after the failure is counted lost.
    #[test]
    fn a_failed_write_is_reported_at_once_and_later_lines_are_counted_lost() {
        let (tx, rx) = std::sync::mpsc::channel();
        let hook: OnFailure = Box::new(move |e: &io::Error| {
            let _ = tx.send(e.to_string());
        });
        let file = CaptureFile::create(Path::new("/dev/full"), None, Some(hook)).expect("create");
        let sink = file.sink();
        sink.send_later(|| line(0));
        // Bounded so that a writer which never reports fails the test
        // instead of hanging it; generous for a loaded machine.
        let said = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the failure is reported while the capture is open");
        assert!(said.contains("No space left"), "{said}");
        for i in 1..4 {
            sink.send_later(move || line(i));
        }
        let written = file.finish();
        assert_eq!((written.lines, written.lost), (0, 4));
        assert!(written.error.is_some());
    }
}
