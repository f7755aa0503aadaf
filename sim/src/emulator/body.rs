//! Response bodies, and the stream state machine that writes one content
//! chunk per token on absolute deadlines (an OpenAI `data:` chunk, or a
//! Messages `content_block_delta` event).
//!
//! A stream is a [`hyper::body::Body`] polled by hyper's connection task
//! itself: no task or channel per stream. When hyper asks for the next
//! frame the body checks the chunk's deadline (`receipt + ttft + k * itl`,
//! plus the stall after the first chunk; under a profile, when the
//! model's step made token `k`, `engine.rs`), waits on one reusable tokio
//! timer if it is in the future, and otherwise builds the chunk from the
//! request's pre-rendered prefix, the token number and a static suffix.
//! Zero latency never touches a timer.
//!
//! **Where the stamps are taken:** in `poll_frame`, immediately before the
//! frame is returned to hyper; hyper copies it into its write buffer and
//! flushes it to the socket in the same poll of the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::answer::AnswerBase;
use super::engine::Submitted;
use super::request::Endpoint;
use super::shared::{RequestGuard, Shared};
use super::stamps::FaultKind;

/// The malformed SSE line injected by `--malformed-rate`.
pub(crate) const MALFORMED_LINE: &[u8] = b"data: {not json\n\n";

/// Any response body the emulator sends.
pub(crate) enum EmuBody {
    Full(Option<Bytes>),
    Stream(Box<StreamBody>),
    /// Headers, then the connection is closed (non-streaming disconnect).
    Abort {
        yielded: bool,
    },
}

impl EmuBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        EmuBody::Full(Some(bytes.into()))
    }
}

fn injected_disconnect() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "injected disconnect")
}

impl Body for EmuBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            EmuBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            EmuBody::Stream(s) => s.poll_next(cx),
            EmuBody::Abort { yielded } => {
                if *yielded {
                    Poll::Ready(Some(Err(injected_disconnect())))
                } else {
                    // Let hyper flush what it has before the close.
                    *yielded = true;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            EmuBody::Full(b) => b.is_none(),
            EmuBody::Stream(s) => matches!(s.phase, Phase::Done),
            EmuBody::Abort { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            EmuBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            EmuBody::Full(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

/// The per-request text around each token: the chunk is
/// `prefix_first|prefix + "tok" + k + suffix`.
pub(crate) struct ChunkTemplate {
    pub(crate) prefix_first: Bytes,
    pub(crate) prefix: Bytes,
    pub(crate) suffix: &'static [u8],
}

const CHAT_SUFFIX: &[u8] = b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
const TEXT_SUFFIX: &[u8] = b"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n";

/// A Messages stream's delta, after its token.
const MESSAGES_SUFFIX: &[u8] = b"\"}}\n\n";

/// `{"id":...,"object":...,"created":...,"model":...` (no closing brace);
/// for Messages, the message's `{"id":...,"type":"message",...,"model":...`.
pub(crate) fn head(endpoint: Endpoint, seq: u64, created: u64, model_json: &str) -> String {
    let (id, object) = match endpoint {
        Endpoint::Chat => ("chatcmpl", "chat.completion.chunk"),
        Endpoint::Completions => ("cmpl", "text_completion"),
        Endpoint::Messages => {
            return format!(
                r#"{{"id":"msg_arbor-{seq}","type":"message","role":"assistant","model":{model_json}"#
            )
        }
        Endpoint::Responses => return super::responses::head(seq, created, model_json),
    };
    format!(
        r#"{{"id":"{id}-arbor-{seq}","object":"{object}","created":{created},"model":{model_json}"#
    )
}

/// A Messages usage object: `input_tokens` is the uncached part of the
/// prompt, `cache_read_input_tokens` the cached part (the emulator creates
/// no explicit cache entries: `cache_creation_input_tokens` is 0).
pub(crate) fn messages_usage(prompt: u32, cached: u32, output: u32) -> String {
    format!(
        r#"{{"input_tokens":{},"cache_creation_input_tokens":0,"cache_read_input_tokens":{cached},"output_tokens":{output}}}"#,
        prompt - cached.min(prompt)
    )
}

/// One server-sent event of a Messages stream.
fn push_event(s: &mut String, name: &str, data: &str) {
    s.push_str("event: ");
    s.push_str(name);
    s.push_str("\ndata: ");
    s.push_str(data);
    s.push_str("\n\n");
}

impl ChunkTemplate {
    /// `start_usage`: a Messages stream's usage in `message_start`
    /// (ignored by the other endpoints); `seq` names a Responses stream's
    /// item.
    pub(crate) fn new(endpoint: Endpoint, seq: u64, head: &str, start_usage: &str) -> Self {
        match endpoint {
            Endpoint::Responses => {
                let t = super::responses::template(seq, head);
                ChunkTemplate {
                    prefix_first: Bytes::from(t.first),
                    prefix: Bytes::from(t.each),
                    suffix: t.suffix,
                }
            }
            Endpoint::Chat => ChunkTemplate {
                prefix_first: Bytes::from(format!(
                    r#"data: {head},"choices":[{{"index":0,"delta":{{"role":"assistant","content":" tok"#
                )),
                prefix: Bytes::from(format!(
                    r#"data: {head},"choices":[{{"index":0,"delta":{{"content":" tok"#
                )),
                suffix: CHAT_SUFFIX,
            },
            Endpoint::Completions => {
                let p = Bytes::from(format!(
                    r#"data: {head},"choices":[{{"index":0,"text":" tok"#
                ));
                ChunkTemplate {
                    prefix_first: p.clone(),
                    prefix: p,
                    suffix: TEXT_SUFFIX,
                }
            }
            Endpoint::Messages => {
                // message_start, the text block's start and a ping lead the
                // first delta, as in Anthropic's documented sequence.
                let delta = r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" tok"#;
                let mut first = String::with_capacity(head.len() + 400);
                push_event(
                    &mut first,
                    "message_start",
                    &format!(
                        r#"{{"type":"message_start","message":{head},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{start_usage}}}}}"#
                    ),
                );
                push_event(
                    &mut first,
                    "content_block_start",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                );
                push_event(&mut first, "ping", r#"{"type":"ping"}"#);
                first.push_str("event: content_block_delta\n");
                first.push_str(delta);
                ChunkTemplate {
                    prefix_first: Bytes::from(first),
                    prefix: Bytes::from(format!("event: content_block_delta\n{delta}")),
                    suffix: MESSAGES_SUFFIX,
                }
            }
        }
    }

    fn chunk(&self, k: u32) -> Bytes {
        let prefix = if k == 0 {
            &self.prefix_first
        } else {
            &self.prefix
        };
        let mut buf = BytesMut::with_capacity(prefix.len() + 10 + self.suffix.len());
        buf.put_slice(prefix);
        put_u32(&mut buf, k);
        buf.put_slice(self.suffix);
        buf.freeze()
    }
}

fn put_u32(buf: &mut BytesMut, mut v: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.put_slice(&digits[i..]);
}

/// The end of a stream of `n` tokens: the finish chunk, the usage chunk
/// (if asked) and `[DONE]`, as one frame; for Messages, the text block's
/// stop, `message_delta` (stop reason and usage) and `message_stop`; for
/// Responses, `super::responses::tail`.
pub(crate) fn tail(
    endpoint: Endpoint,
    seq: u64,
    head: &str,
    n: u32,
    include_usage: bool,
    usage_json: &str,
) -> Bytes {
    if endpoint == Endpoint::Responses {
        return super::responses::tail(seq, head, n, usage_json);
    }
    let mut s = String::with_capacity(2 * head.len() + usage_json.len() + 160);
    if endpoint == Endpoint::Messages {
        push_event(
            &mut s,
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        );
        push_event(
            &mut s,
            "message_delta",
            &format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"max_tokens","stop_sequence":null}},"usage":{usage_json}}}"#
            ),
        );
        push_event(&mut s, "message_stop", r#"{"type":"message_stop"}"#);
        return Bytes::from(s);
    }
    s.push_str("data: ");
    s.push_str(head);
    match endpoint {
        Endpoint::Chat => s.push_str(
            r#","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}"#,
        ),
        Endpoint::Completions | Endpoint::Messages | Endpoint::Responses => s.push_str(
            r#","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}"#,
        ),
    }
    s.push_str("\n\n");
    if include_usage {
        s.push_str("data: ");
        s.push_str(head);
        s.push_str(r#","choices":[],"usage":"#);
        s.push_str(usage_json);
        s.push_str("}\n\n");
    }
    s.push_str("data: [DONE]\n\n");
    Bytes::from(s)
}

pub(crate) enum Phase {
    Tokens,
    Finish,
    Aborting { yielded: bool },
    Done,
}

/// How early the timer is armed before a precise deadline.
const SPIN_WINDOW: Duration = Duration::from_micros(1200);

/// How far behind its deadline a chunk may be kept to space it from the
/// previous one (see `StreamBody::deadline`).
const MAX_LAG: Duration = Duration::from_millis(5);

/// How a stream waits for a deadline (see `StreamBody::ready`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Tick,
    Paced,
    Spin,
}

/// Below this ITL every chunk is paced by the pacer's thread: tokio's
/// timer would round each deadline up to its next millisecond tick and
/// write the chunks of a tick together (at 0.2 ms, 84 % of the gaps a
/// client saw were zero). At or above it, the timer's millisecond of
/// lateness is small against the ITL, and deadlines are absolute, so gaps
/// keep their length.
pub(crate) const PRECISE_ITL_BELOW: Duration = Duration::from_millis(2);

/// One streaming response.
pub(crate) struct StreamBody {
    pub(crate) shared: Arc<Shared>,
    pub(crate) guard: RequestGuard,
    /// `receipt + ttft`.
    pub(crate) first_at: Instant,
    pub(crate) itl: Duration,
    /// Extra delay of every deadline after the first chunk.
    pub(crate) stall: Duration,
    /// True when every deadline is the receipt time: no timers at all.
    pub(crate) immediate: bool,
    pub(crate) n: u32,
    pub(crate) next: u32,
    pub(crate) template: ChunkTemplate,
    pub(crate) tail: Option<Bytes>,
    /// Block keys to record in the cache when prefill completes.
    pub(crate) blocks: Option<Vec<u64>>,
    /// Where the keys of the prompt and its answer start, recorded in the
    /// cache when the stream ends (`answer.rs`).
    pub(crate) answer: Option<AnswerBase>,
    pub(crate) disconnect_after: Option<u32>,
    pub(crate) malformed_at: Option<u32>,
    pub(crate) sleep: Option<Pin<Box<Sleep>>>,
    /// When the previous content chunk was written.
    pub(crate) last_chunk: Option<Instant>,
    pub(crate) phase: Phase,
    /// Under a profile: the request in the model, which says when each
    /// token and the end are due; dropped unfinished, it cancels the
    /// request.
    pub(crate) model: Option<Submitted>,
}

impl StreamBody {
    /// When content chunk `k` (or, with `k == n`, the end) is due:
    /// `first_at + k * itl` (plus the stall after the first chunk). A
    /// content chunk also waits until half an ITL after the previous one
    /// was written, as long as that leaves it less behind its own deadline
    /// than both [`MAX_LAG`] and what the chunks left can win back (half
    /// an ITL each): a stream that fell behind (a late wake-up, its thread
    /// descheduled) catches up at twice its rate, not in a burst of chunks
    /// a client would read together, and still ends on time. The end
    /// stays on its deadline.
    fn deadline(&self, k: u32) -> Instant {
        let mut d = self.first_at + self.itl * k;
        if k >= 1 {
            d += self.stall;
        }
        match self.last_chunk {
            Some(last) if k < self.n => {
                let spaced = last + self.itl / 2;
                // Spacing by half an ITL wins back half an ITL a chunk: keep
                // only the lag the chunks left can win back.
                let budget = MAX_LAG.min(self.itl / 2 * (self.n - k));
                if spaced > d && spaced - d < budget {
                    spaced
                } else {
                    d
                }
            }
            _ => d,
        }
    }

    /// When content chunk `k` (or, with `k == n`, the end) is due. Under a
    /// profile: when the model's step made token `k` (the end: when the
    /// model finished the request), plus the stall after the first chunk;
    /// pending (`cx` armed) until the model has made it. Otherwise
    /// [`StreamBody::deadline`].
    fn due(&self, k: u32, cx: &mut Context<'_>) -> Poll<Instant> {
        let Some(model) = &self.model else {
            return Poll::Ready(self.deadline(k));
        };
        let made = if k >= self.n {
            model.ticket.poll_done(cx)
        } else {
            model.ticket.poll_token(cx, k)
        };
        made.map(|ns| {
            let at = Instant::from_std(model.instant(ns));
            if k >= 1 {
                at + self.stall
            } else {
                at
            }
        })
    }

    /// True when `deadline` has passed; otherwise arms a wake-up.
    ///
    /// [`Wait::Tick`]: tokio's timer at the deadline (it fires up to a
    /// millisecond late). [`Wait::Paced`] and [`Wait::Spin`]: the timer is
    /// armed [`SPIN_WINDOW`] early, since tokio's timer only has
    /// millisecond resolution, and the last stretch is waited by the
    /// [`Pacer`](super::pacer::Pacer)'s thread (`Paced`, every chunk of a
    /// stream whose ITL is below [`PRECISE_ITL_BELOW`]) or by re-polling,
    /// the task waking itself (`Spin`: the last token and the end of a
    /// response, which decides when the client's next turn may go, to the
    /// microsecond).
    fn ready(&mut self, deadline: Instant, cx: &mut Context<'_>, wait: Wait) -> bool {
        let now = Instant::now();
        if self.immediate || now >= deadline {
            return true;
        }
        if wait != Wait::Tick && deadline - now <= SPIN_WINDOW {
            match wait {
                Wait::Paced => self.shared.pacer.wake_at(deadline.into_std(), cx.waker()),
                _ => cx.waker().wake_by_ref(),
            }
            return false;
        }
        let arm = if wait == Wait::Tick {
            deadline
        } else {
            deadline - SPIN_WINDOW
        };
        let sleep = match &mut self.sleep {
            Some(s) => {
                s.as_mut().reset(arm);
                s
            }
            None => self.sleep.insert(Box::pin(tokio::time::sleep_until(arm))),
        };
        if sleep.as_mut().poll(cx).is_ready() {
            // Armed early: wait out the rest on the next poll.
            cx.waker().wake_by_ref();
        }
        false
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        loop {
            match self.phase {
                Phase::Tokens => {
                    let k = self.next;
                    if k == self.n {
                        self.phase = Phase::Finish;
                        continue;
                    }
                    // The last token is timed precisely too: the end of the
                    // response follows it by one ITL, which may be shorter
                    // than the timer's millisecond of slack.
                    let wait = if k + 1 == self.n {
                        Wait::Spin
                    } else if self.itl < PRECISE_ITL_BELOW {
                        Wait::Paced
                    } else {
                        Wait::Tick
                    };
                    let Poll::Ready(deadline) = self.due(k, cx) else {
                        return Poll::Pending;
                    };
                    if !self.ready(deadline, cx, wait) {
                        return Poll::Pending;
                    }
                    if self.disconnect_after == Some(k) {
                        self.start_abort();
                        continue;
                    }
                    if let Some(blocks) = self.blocks.take() {
                        self.shared.cache_insert(&blocks);
                    }
                    if self.malformed_at == Some(k) {
                        self.malformed_at = None;
                        self.shared.stats.malformed.fetch_add(1, Relaxed);
                        self.guard.fault(FaultKind::Malformed);
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                            MALFORMED_LINE,
                        )))));
                    }
                    let chunk = self.template.chunk(k);
                    self.next = k + 1;
                    if !self.immediate {
                        self.last_chunk = Some(Instant::now());
                    }
                    self.guard.stamp_chunk();
                    if k == 0 && !self.stall.is_zero() {
                        self.shared.stats.stalls.fetch_add(1, Relaxed);
                        self.guard.fault(FaultKind::Stall);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
                Phase::Finish => {
                    let Poll::Ready(deadline) = self.due(self.n, cx) else {
                        return Poll::Pending;
                    };
                    if !self.ready(deadline, cx, Wait::Spin) {
                        return Poll::Pending;
                    }
                    if self.disconnect_after.is_some_and(|d| d >= self.n) {
                        self.start_abort();
                        continue;
                    }
                    if let Some(blocks) = self.blocks.take() {
                        self.shared.cache_insert(&blocks);
                    }
                    if let Some(answer) = self.answer.take() {
                        let text = super::responses::text(self.n);
                        self.shared.cache_insert(&answer.blocks(&text));
                    }
                    self.phase = Phase::Done;
                    let tail = self.tail.take().unwrap_or_default();
                    self.shared.stats.tokens.fetch_add(self.n as u64, Relaxed);
                    self.shared.stats.completed.fetch_add(1, Relaxed);
                    self.guard.finish(200);
                    return Poll::Ready(Some(Ok(Frame::data(tail))));
                }
                Phase::Aborting { yielded } => {
                    if yielded {
                        self.phase = Phase::Done;
                        return Poll::Ready(Some(Err(injected_disconnect())));
                    }
                    // Return once without a frame so hyper flushes the
                    // chunks already written before the connection closes.
                    self.phase = Phase::Aborting { yielded: true };
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Phase::Done => return Poll::Ready(None),
            }
        }
    }

    fn start_abort(&mut self) {
        self.shared.stats.disconnects.fetch_add(1, Relaxed);
        self.guard.fault(FaultKind::Disconnect);
        self.guard.aborted_by_fault();
        self.phase = Phase::Aborting { yielded: false };
    }
}
