//! A response body passed through to the client chunk by chunk, read on
//! the way (never held back, never buffered to the end), and the capture
//! line it completes.
//!
//! Owns [`Pending`] (an exchange whose line waits for its response's end)
//! and [`TapBody`]: each frame hyper pulls from the upstream goes to the
//! client in the same poll, after [`super::scan::ResponseScan`] has read
//! it. The line is sent when the body ends, when the upstream fails
//! mid-body, or when the client goes away (hyper drops the body, or the
//! request's task before the head came): every exchange gets exactly one
//! line, whichever way it ends.

use std::pin::Pin;
use std::task::{Context, Poll};

use arbor_backends::live::redact::Secrets;
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use serde_json::value::RawValue;

use super::capture::{seconds, CaptureLine, CaptureSink};
use super::clock::UtcClock;
use super::scan::{ResponseScan, Shape};

/// An exchange whose capture line is written when its response ends; if
/// it is dropped first (the client went away before the response head),
/// the line is written then.
pub struct Pending {
    pub clock: UtcClock,
    pub sink: CaptureSink,
    pub start_ns: u64,
    pub session_id: Option<String>,
    pub method: String,
    pub path: String,
    pub stream: bool,
    /// `None` once the line is sent.
    pub request: Option<Box<RawValue>>,
    /// The request's secret header values, kept out of error messages.
    pub secrets: Secrets,
    pub status: Option<u16>,
    pub scan: ResponseScan,
}

impl Pending {
    /// Stamps the end and sends the line; `error` is how the exchange
    /// failed, if the response itself did not say.
    pub fn finish(mut self, error: Option<String>) {
        self.send(error);
    }

    /// Sends the line, once.
    fn send(&mut self, error: Option<String>) {
        let Some(request) = self.request.take() else {
            return;
        };
        let end_ns = self.clock.now_ns().max(self.start_ns);
        let scan = std::mem::replace(&mut self.scan, ResponseScan::new(Shape::Whole));
        let scanned = scan.finish(self.status);
        let error = error.or(scanned.error).map(|e| self.secrets.redact(&e));
        self.sink.send(CaptureLine {
            start: seconds(self.start_ns),
            end: seconds(end_ns),
            start_ns: self.start_ns,
            end_ns,
            session_id: self.session_id.take(),
            infer: true,
            method: std::mem::take(&mut self.method),
            path: std::mem::take(&mut self.path),
            stream: self.stream,
            status: self.status,
            error,
            response_truncated: scanned.truncated,
            request,
            response: scanned.response,
        });
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.send(Some(
            "the client went away before the response head".to_string(),
        ));
    }
}

/// The upstream's response body on its way to the client.
pub struct TapBody {
    inner: Incoming,
    /// `None` for an exchange that is not recorded, or once its line is
    /// sent.
    pending: Option<Pending>,
}

impl TapBody {
    pub fn new(inner: Incoming, pending: Option<Pending>) -> TapBody {
        TapBody { inner, pending }
    }
}

impl Body for TapBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(pending)) = (frame.data_ref(), self.pending.as_mut()) {
                    pending.scan.feed(data);
                }
            }
            Poll::Ready(Some(Err(e))) => {
                if let Some(pending) = self.pending.take() {
                    pending.finish(Some(format!("the upstream cut the response: {e}")));
                }
            }
            Poll::Ready(None) => {
                if let Some(pending) = self.pending.take() {
                    pending.finish(None);
                }
            }
            Poll::Pending => {}
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

impl Drop for TapBody {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            // An empty body hyper never had to poll ended well.
            let error = (!self.inner.is_end_stream())
                .then(|| "the client went away before the response ended".to_string());
            pending.finish(error);
        }
    }
}
