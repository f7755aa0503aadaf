//! A response body passed through to the client chunk by chunk, read on
//! the way (never held back, never buffered to the end), and the capture
//! line it completes.
//!
//! Owns [`Exchange`] (what a line needs of one request and its response),
//! [`Pending`] (an exchange whose line waits for its response's end) and
//! [`TapBody`]. The hot path is forwarding: each frame hyper pulls from
//! the upstream goes back to hyper in the same poll, with nothing done to
//! it but a reference count (and, on the first, a clock read). Reading it
//! for the capture waits until hyper has written it to the client: the
//! next poll answers `Pending` once (waking itself), hyper flushes, and
//! the poll after that feeds the chunk to the [`ResponseScan`]. The last
//! chunk, and the scan's finish (the response rebuilt, redaction,
//! serialization), go to the capture's writer thread with the line.
//!
//! Times are taken when bytes arrive: the first byte when the first frame
//! comes, the end when the body ends (or fails, or the client leaves).
//! The line is sent when the body ends, when the upstream fails mid-body,
//! or when the client goes away (hyper drops the body, or the request's
//! task before the head came): every exchange gets exactly one line,
//! whichever way it ends. A drop after the proxy began cutting the
//! exchanges still open at its stop ([`Cutting`]) says the proxy shut
//! down, not that the client went away.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};

use arbor_formats::capture::{seconds, CaptureLine, CaptureSink, Identity};
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use serde_json::value::RawValue;

use super::clock::UtcClock;
use super::scan::{ResponseScan, Shape};
use crate::live::redact::Secrets;

/// One recorded request and what its response said so far.
pub struct Exchange {
    pub start_ns: u64,
    pub session_id: Option<String>,
    /// What the agent's own identity headers said.
    pub identity: Identity,
    pub method: String,
    pub path: String,
    pub stream: bool,
    pub request: Box<RawValue>,
    /// The request's secret header values, kept out of error messages.
    pub secrets: Secrets,
    pub status: Option<u16>,
    pub first_byte_ns: Option<u64>,
    pub scan: ResponseScan,
}

impl Exchange {
    /// An exchange whose response has not come yet.
    pub fn new(start_ns: u64, method: String, path: String, request: Box<RawValue>) -> Exchange {
        Exchange {
            start_ns,
            session_id: None,
            identity: Identity::default(),
            method,
            path,
            stream: false,
            request,
            secrets: Secrets::default(),
            status: None,
            first_byte_ns: None,
            scan: ResponseScan::new(Shape::Whole),
        }
    }

    /// The capture line, once the response ended at `end_ns`: `tail` is
    /// the last chunk, not scanned yet; `error` how the exchange failed,
    /// if the response itself did not say. Run on the writer thread.
    fn line(mut self, end_ns: u64, tail: Option<Bytes>, error: Option<String>) -> CaptureLine {
        if let Some(tail) = tail {
            self.scan.feed(&tail);
        }
        let scanned = self.scan.finish(self.status);
        let error = error.or(scanned.error).map(|e| self.secrets.redact(&e));
        CaptureLine {
            start: seconds(self.start_ns),
            end: seconds(end_ns),
            start_ns: self.start_ns,
            first_byte_ns: self.first_byte_ns,
            end_ns,
            session_id: self.session_id,
            identity: self.identity,
            infer: true,
            method: self.method,
            path: self.path,
            stream: self.stream,
            status: self.status,
            error,
            response_truncated: scanned.truncated,
            malformed_sse_lines: scanned.malformed,
            request: self.request,
            response: scanned.response,
        }
    }
}

/// Set when the proxy cuts the exchanges still open after its stop
/// grace; shared by every exchange.
#[derive(Debug, Clone, Default)]
pub struct Cutting(Arc<AtomicBool>);

impl Cutting {
    /// From now on, an exchange dropped unfinished was cut by the proxy.
    pub fn start(&self) {
        self.0.store(true, Relaxed);
    }
}

/// An exchange whose capture line is written when its response ends; if
/// it is dropped first (the client went away before the response head, or
/// the proxy cut it at its stop), the line is written then.
pub struct Pending {
    clock: UtcClock,
    sink: CaptureSink,
    cutting: Cutting,
    /// `None` once the line is sent.
    exchange: Option<Exchange>,
}

impl Pending {
    pub fn new(
        clock: UtcClock,
        sink: CaptureSink,
        cutting: Cutting,
        exchange: Exchange,
    ) -> Pending {
        Pending {
            clock,
            sink,
            cutting,
            exchange: Some(exchange),
        }
    }

    /// Why an exchange dropped `before` its end ended: the proxy's stop,
    /// or the client.
    fn gone(&self, before: &str) -> String {
        if self.cutting.0.load(Relaxed) {
            format!("the proxy shut down before {before}")
        } else {
            format!("the client went away before {before}")
        }
    }

    /// The response head came: its status, and the shape its body is
    /// read in.
    pub fn head(&mut self, status: u16, shape: Shape) {
        if let Some(x) = self.exchange.as_mut() {
            x.status = Some(status);
            x.scan = ResponseScan::new(shape);
        }
    }

    /// The exchange failed with `status` before any response came.
    pub fn fail(mut self, status: Option<u16>, error: String) {
        if let Some(x) = self.exchange.as_mut() {
            x.status = status;
        }
        self.send(None, Some(error));
    }

    /// Stamps the end and sends the line, once: `tail` is a chunk not yet
    /// scanned, `error` how the exchange failed, if it did.
    fn send(&mut self, tail: Option<Bytes>, error: Option<String>) {
        let Some(exchange) = self.exchange.take() else {
            return;
        };
        let end_ns = self.clock.now_ns().max(exchange.start_ns);
        self.sink
            .send_later(move || exchange.line(end_ns, tail, error));
    }

    /// The first byte of the body came (stamped once).
    fn first_byte(&mut self) {
        if let Some(x) = self.exchange.as_mut() {
            if x.first_byte_ns.is_none() {
                x.first_byte_ns = Some(self.clock.now_ns());
            }
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if let Some(x) = self.exchange.as_mut() {
            x.scan.feed(chunk);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.exchange.is_some() {
            let error = self.gone("the response head");
            self.send(None, Some(error));
        }
    }
}

/// The upstream's response body on its way to the client.
pub struct TapBody<B: Body = Incoming> {
    inner: B,
    /// `None` for an exchange that is not recorded, or once its line is
    /// sent.
    pending: Option<Pending>,
    /// The chunk last handed to hyper, read once hyper has written it.
    unscanned: Option<Bytes>,
    /// Whether this body answered `Pending` since `unscanned` was handed
    /// over, so that hyper flushed it.
    yielded: bool,
}

impl<B: Body> TapBody<B> {
    pub fn new(inner: B, pending: Option<Pending>) -> TapBody<B> {
        TapBody {
            inner,
            pending,
            unscanned: None,
            yielded: false,
        }
    }

    /// Sends the line with the chunk not yet scanned.
    fn finish(&mut self, error: Option<String>) {
        if let Some(mut pending) = self.pending.take() {
            pending.send(self.unscanned.take(), error);
        }
    }
}

impl<B> Body for TapBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        if this.unscanned.is_some() && !this.yielded {
            // Let hyper write the last chunk to the client first.
            this.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(pending) = this.pending.as_mut() {
                    if let Some(chunk) = this.unscanned.take() {
                        pending.feed(&chunk);
                    }
                    if let Some(data) = frame.data_ref() {
                        if !data.is_empty() {
                            pending.first_byte();
                            this.unscanned = Some(data.clone());
                            this.yielded = false;
                        }
                    }
                }
            }
            Poll::Ready(Some(Err(e))) => {
                this.finish(Some(format!("the upstream cut the response: {e}")));
            }
            Poll::Ready(None) => this.finish(None),
            Poll::Pending => {
                if let (Some(pending), Some(chunk)) = (this.pending.as_mut(), this.unscanned.take())
                {
                    pending.feed(&chunk);
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: Body> Drop for TapBody<B> {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.as_ref() {
            // An empty body hyper never had to poll ended well.
            let error = (!self.inner.is_end_stream()).then(|| pending.gone("the response ended"));
            self.finish(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    use super::*;
    use arbor_formats::capture::CaptureFile;

    /// A body that yields its chunks one per poll.
    struct Chunks(VecDeque<Bytes>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|c| Ok(Frame::data(c))))
        }
    }

    struct Count(std::sync::atomic::AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn text(kept: &ResponseScan) -> String {
        format!("{kept:?}")
    }

    #[test]
    fn a_chunk_is_handed_over_before_it_is_read_and_read_after_a_flush() {
        let path = std::env::temp_dir().join(format!("arbor-tap-{}.jsonl", std::process::id()));
        let file = CaptureFile::create(&path, None, None).expect("create");
        let request = RawValue::from_string(r#"{"messages":[]}"#.into()).expect("raw");
        let mut pending = Pending::new(
            UtcClock::anchored_now(),
            file.sink(),
            Cutting::default(),
            Exchange::new(1, "POST".into(), "/v1/chat/completions".into(), request),
        );
        pending.head(200, Shape::ChatStream);
        let chunks = [
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
        ];
        let inner = Chunks(
            chunks
                .iter()
                .map(|c| Bytes::from_static(c.as_bytes()))
                .collect(),
        );
        let mut body = TapBody::new(inner, Some(pending));
        let wakes = Arc::new(Count(Default::default()));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut poll = |body: &mut TapBody<Chunks>| Pin::new(body).poll_frame(&mut cx);
        let scanned = |body: &TapBody<Chunks>| {
            let x = body.pending.as_ref().and_then(|p| p.exchange.as_ref());
            text(&x.expect("pending").scan)
        };

        // The first chunk comes back at once, unread.
        assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
        assert!(!scanned(&body).contains("Hel"));
        // The next poll lets hyper flush it (and wakes itself) ...
        assert!(poll(&mut body).is_pending());
        assert_eq!(wakes.0.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(!scanned(&body).contains("Hel"));
        // ... and the one after reads it, then hands over the second.
        assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
        assert!(scanned(&body).contains("Hel") && !scanned(&body).contains("lo\""));
        assert!(poll(&mut body).is_pending());
        // The end: the second chunk goes to the writer with the line.
        assert!(matches!(poll(&mut body), Poll::Ready(None)));
        assert!(body.pending.is_none());
        drop(body);
        assert_eq!(file.finish().lines, 1);
        let line: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&path).expect("read").trim())
                .expect("json");
        assert_eq!(line["response"]["content"], "Hello");
        assert!(line["first_byte_ns"].as_u64() <= line["end_ns"].as_u64());
        assert!(line["error"].is_null(), "{line}");
        std::fs::remove_file(&path).ok();
    }
}
