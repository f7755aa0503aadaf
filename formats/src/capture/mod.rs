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
//! Knows no HTTP.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

mod redact;

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
    /// The session's name from `--session-header`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
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
    /// The request body as sent (on one line).
    pub request: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
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

/// The open capture file and its writer thread.
pub struct CaptureFile {
    sink: CaptureSink,
    writer: JoinHandle<io::Result<u64>>,
}

impl CaptureFile {
    /// Creates (or truncates) `path` and starts the writer, which
    /// redacts every line with `redactor` when there is one.
    pub fn create(path: &Path, redactor: Option<Redactor>) -> io::Result<CaptureFile> {
        let file = BufWriter::new(File::create(path)?);
        let (tx, rx) = channel();
        let writer = std::thread::Builder::new()
            .name("arbor-capture".to_string())
            .spawn(move || write_lines(file, rx, redactor))?;
        Ok(CaptureFile {
            sink: CaptureSink { tx },
            writer,
        })
    }

    pub fn sink(&self) -> CaptureSink {
        self.sink.clone()
    }

    /// Writes every line queued so far, closes the file and returns how
    /// many lines it holds. Lines sent after this are dropped.
    pub fn finish(self) -> io::Result<u64> {
        let _ = self.sink.tx.send(Message::Stop);
        self.writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the capture writer panicked")))
    }
}

fn write_lines(
    mut file: BufWriter<File>,
    rx: Receiver<Message>,
    redactor: Option<Redactor>,
) -> io::Result<u64> {
    let mut lines = 0u64;
    let mut failed: Option<io::Error> = None;
    let mut write = |file: &mut BufWriter<File>, make: MakeLine| {
        let mut line = make();
        if let Some(r) = &redactor {
            redact(r, &mut line);
        }
        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return;
        };
        bytes.push(b'\n');
        if failed.is_none() {
            match file.write_all(&bytes) {
                Ok(()) => lines += 1,
                Err(e) => failed = Some(e),
            }
        }
    };
    'outer: while let Ok(message) = rx.recv() {
        let mut next = Some(message);
        while let Some(message) = next.take() {
            match message {
                Message::Line(line) => write(&mut file, line),
                Message::Stop => break 'outer,
            }
            next = rx.try_recv().ok();
        }
        file.flush()?;
    }
    file.flush()?;
    match failed {
        Some(e) => Err(e),
        None => Ok(lines),
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

    #[test]
    fn lines_are_written_in_order_and_counted() {
        let path = std::env::temp_dir().join(format!("arbor-capture-{}.jsonl", std::process::id()));
        let file = CaptureFile::create(&path, None).expect("create");
        let sink = file.sink();
        for i in 0..3u64 {
            sink.send_later(move || CaptureLine {
                start: seconds(i),
                end: seconds(i + 1),
                start_ns: i,
                first_byte_ns: None,
                end_ns: i + 1,
                session_id: None,
                infer: true,
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                stream: false,
                status: Some(200),
                error: None,
                response_truncated: false,
                request: RawValue::from_string(r#"{"messages":[]}"#.into()).expect("raw"),
                response: None,
            });
        }
        assert_eq!(file.finish().expect("finish"), 3);
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
}
