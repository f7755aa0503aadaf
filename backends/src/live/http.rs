//! A small HTTP/1.1 client made for one job: send a request and read its
//! streamed answer inside the request's own task, stamping every read.
//!
//! Owns the endpoint (parsed once), connections and their pool, writing a
//! request, and reading a response head. The body is left to the caller
//! with [`super::framing::BodyDecoder`], so body bytes are stamped and
//! scanned in the very poll whose read brought them.
//!
//! Why not reqwest (or hyper's pooled client): it runs every connection in
//! a task of its own and hands body chunks to the request's task through a
//! channel, a task hop and a wake-up per chunk; and its read buffer grows
//! toward 400 kB per connection under a fast stream (243 MB at 512
//! streams). Here the request task owns its connection for the whole
//! exchange and each connection has one fixed read buffer.
//!
//! `http://` and `https://` (a connection's bytes are a
//! [`super::stream::Stream`], plain or TLS: the same buffer, reads and
//! stamps either way). Connections are kept alive and reused (last in,
//! first out); a pooled connection the server has closed is noticed when it
//! is taken (a zero-timeout peek) and dropped. Whether a request may be
//! sent again is not decided here: a failed write reports how much of the
//! request was written ([`WriteError`]) and `exchange` decides.
//!
//! Caps on what is read (documented sizes, each a classified error when
//! reached, never an allocation): a response head of [`HEAD_CAP_BYTES`]
//! bytes and [`HEAD_CAP_LINES`] header lines; a small body (an error
//! message, a warm-up answer) read to [`SMALL_BODY_CAP`] bytes at most.

use std::io::{self, IoSlice};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::framing::Framing;
use super::stream::{ConnectError, Dial, Stream};

/// Bytes read from the socket at a time; also the size of a connection's
/// read buffer unless a response head is larger. 8 KiB holds a burst of
/// SSE chunks in one read and keeps a held stream's memory small (10,000
/// streams: docs/performance.md, "Scale"); a larger body only takes more
/// reads.
pub const READ_BUFFER: usize = 8 * 1024;

/// The largest response head accepted, in bytes; informational (1xx)
/// heads before it may add up to as much again.
pub const HEAD_CAP_BYTES: usize = 64 * 1024;

/// The most header lines a response head may have.
pub const HEAD_CAP_LINES: usize = 64;

/// The most of a small body (an error message, a warm-up answer) read off
/// the connection; past it the rest is not read and the connection is not
/// reused.
pub const SMALL_BODY_CAP: usize = 1024 * 1024;

/// A request's write failed after `written` bytes of its head and body
/// (counted from the start of the request, on this connection).
#[derive(Debug, thiserror::Error)]
#[error("writing the request failed after {written} bytes: {source}")]
pub struct WriteError {
    pub written: usize,
    pub source: io::Error,
}

/// Where requests go: the server's address and the request's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub addr: SocketAddr,
    /// `https://`: connections speak TLS.
    pub tls: bool,
    /// The host as named in the URL (without brackets): the TLS server
    /// name.
    pub server_name: String,
    /// `Host` header value (`host:port`).
    pub host: String,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Endpoint {
    /// Parses `http[s]://host[:port][/path]` and resolves the host.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
        let tls = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(format!(
                    "`{url}`: expected an http:// or https:// URL, not {other}://"
                ))
            }
        };
        let host = parsed
            .host_str()
            .ok_or_else(|| format!("`{url}` has no host"))?;
        let port = parsed
            .port_or_known_default()
            .unwrap_or(if tls { 443 } else { 80 });
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addr = (bare, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
            .next()
            .ok_or_else(|| format!("`{host}` resolves to no address"))?;
        let mut path = parsed.path().to_string();
        if let Some(query) = parsed.query() {
            path.push('?');
            path.push_str(query);
        }
        Ok(Endpoint {
            addr,
            tls,
            server_name: bare.to_string(),
            host: format!("{host}:{port}"),
            path,
        })
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// The same server, another path.
    pub fn with_path(&self, path: &str) -> Endpoint {
        Endpoint {
            path: path.to_string(),
            ..self.clone()
        }
    }
}

/// One open connection and its read buffer.
#[derive(Debug)]
pub struct Conn {
    pub stream: Stream,
    pub buf: Vec<u8>,
}

impl Conn {
    /// Connects (and, for TLS, completes the handshake).
    pub async fn open(dial: &Dial) -> Result<Conn, ConnectError> {
        Ok(Conn {
            stream: dial.open().await?,
            buf: vec![0; READ_BUFFER],
        })
    }

    /// Writes `head` then `body` from byte `from` of the two, in one system
    /// call when the socket takes it all. A failure says how many bytes
    /// had been written.
    pub async fn write_request(
        &mut self,
        head: &[u8],
        body: &[u8],
        from: usize,
    ) -> Result<(), WriteError> {
        let total = head.len() + body.len();
        let mut written = from;
        let failed = |written, source| WriteError { written, source };
        while written < total {
            let n = if written < head.len() {
                let parts = [IoSlice::new(&head[written..]), IoSlice::new(body)];
                self.stream.write_vectored(&parts).await
            } else {
                self.stream.write(&body[written - head.len()..]).await
            };
            match n {
                Ok(0) => return Err(failed(written, io::ErrorKind::WriteZero.into())),
                Ok(n) => written += n,
                Err(e) => return Err(failed(written, e)),
            }
        }
        // TLS: what the session holds goes out now (a no-op for TCP).
        self.stream.flush().await.map_err(|e| failed(written, e))
    }

    /// Writes as much of `head` then `body` as the socket takes without
    /// waiting; returns how much that was, or how much had been written
    /// when the write failed.
    pub fn try_write_request(&mut self, head: &[u8], body: &[u8]) -> Result<usize, WriteError> {
        let total = head.len() + body.len();
        let mut written = 0;
        while written < total {
            let attempt = if written < head.len() {
                let parts = [IoSlice::new(&head[written..]), IoSlice::new(body)];
                self.stream.try_write_vectored(&parts)
            } else {
                let rest = [IoSlice::new(&body[written - head.len()..])];
                self.stream.try_write_vectored(&rest)
            };
            match attempt {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(source) => return Err(WriteError { written, source }),
            }
        }
        Ok(written)
    }
}

/// Idle connections to one server, and how to open more.
#[derive(Debug)]
pub struct Pool {
    dial: Dial,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    pub fn new(dial: Dial) -> Pool {
        Pool {
            dial,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.dial.addr()
    }

    pub fn is_tls(&self) -> bool {
        self.dial.is_tls()
    }

    /// A new connection (not pooled until [`Pool::put`]).
    pub async fn connect(&self) -> Result<Conn, ConnectError> {
        Conn::open(&self.dial).await
    }

    /// The most recently returned idle connection that is still open (a
    /// zero-timeout peek, [`Stream::is_idle_open`]); closed ones are
    /// dropped on the way, before anything is written on them.
    pub fn take(&self) -> Option<Conn> {
        loop {
            let mut conn = self.idle.lock().ok()?.pop()?;
            // Closed, unexpected bytes, or an error: discard.
            if conn.stream.is_idle_open() {
                return Some(conn);
            }
        }
    }

    pub fn put(&self, conn: Conn) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(conn);
        }
    }

    pub fn idle(&self) -> usize {
        self.idle.lock().map(|v| v.len()).unwrap_or(0)
    }
}

/// What a response head said.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    pub status: u16,
    pub framing: Framing,
    /// The connection may carry another request after this response.
    pub keep_alive: bool,
    /// `Retry-After` in seconds, when given as a number.
    pub retry_after_s: Option<f64>,
    /// When the read that completed the head returned.
    pub at: u64,
    /// Body bytes that came in with the head: `conn.buf[body_start..filled]`.
    pub body_start: usize,
    pub filled: usize,
}

/// Why reading a response head failed.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// The connection closed (or failed) before any byte of a response.
    #[error("connection closed before a response: {0}")]
    NoResponse(io::Error),
    /// It failed after part of a head arrived.
    #[error("connection cut during the response head: {0}")]
    Cut(io::Error),
    /// The bytes are not an HTTP/1.x response head.
    #[error("not an HTTP response: {0}")]
    Malformed(String),
    /// The head passed a cap ([`HEAD_CAP_BYTES`], [`HEAD_CAP_LINES`]).
    #[error("{0}")]
    Oversized(String),
}

/// Reads a response head into `conn.buf`. `clock` is read right after each
/// read returns, before its bytes are parsed; the head keeps the time of
/// the read that completed it.
pub async fn read_head(conn: &mut Conn, clock: impl Fn() -> u64) -> Result<Head, HeadError> {
    let mut filled = 0usize;
    // Bytes of informational heads skipped: they have their own cap.
    let mut skipped = 0usize;
    loop {
        if filled == conn.buf.len() {
            if conn.buf.len() >= HEAD_CAP_BYTES {
                return Err(HeadError::Oversized(format!(
                    "the response head passed {} KiB (the cap on a head) after {filled} bytes",
                    HEAD_CAP_BYTES / 1024
                )));
            }
            conn.buf.resize((conn.buf.len() * 2).min(HEAD_CAP_BYTES), 0);
        }
        let n = match conn.stream.read(&mut conn.buf[filled..]).await {
            Ok(0) if filled + skipped == 0 => {
                return Err(HeadError::NoResponse(io::ErrorKind::UnexpectedEof.into()))
            }
            Ok(0) => return Err(HeadError::Cut(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => n,
            Err(e) if filled + skipped == 0 => return Err(HeadError::NoResponse(e)),
            Err(e) => return Err(HeadError::Cut(e)),
        };
        let at = clock();
        filled += n;
        // Informational (1xx) heads are skipped: the next head follows.
        let mut start = 0;
        loop {
            match parse_head(&conn.buf[start..filled])? {
                None => break,
                Some((len, head)) if (100..200).contains(&head.status) => {
                    start += len;
                    skipped += len;
                    if skipped > HEAD_CAP_BYTES {
                        return Err(HeadError::Oversized(format!(
                            "informational (1xx) heads passed {} KiB (the cap on a head) \
                             after {skipped} bytes",
                            HEAD_CAP_BYTES / 1024
                        )));
                    }
                }
                Some((len, mut head)) => {
                    head.body_start = start + len;
                    head.filled = filled;
                    head.at = at;
                    return Ok(head);
                }
            }
        }
        if start > 0 {
            conn.buf.copy_within(start..filled, 0);
            filled -= start;
        }
    }
}

/// Parses one head from `bytes`: its length and meaning, or `None` when it
/// is not complete yet. Public for the fuzzer (`fuzz/`).
pub fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Head)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; HEAD_CAP_LINES];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HeadError::Oversized(format!(
                "the response head has more than {HEAD_CAP_LINES} header lines (the cap on a head)"
            )))
        }
        Err(e) => {
            let shown: String = String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
                .chars()
                .take(80)
                .collect();
            return Err(HeadError::Malformed(format!("{e} (in {shown:?})")));
        }
    };
    let status = response.code.unwrap_or(0);
    let http11 = response.version == Some(1);
    let mut chunked = false;
    let mut length = None;
    let mut connection_close = !http11;
    let mut retry_after_s = None;
    for h in response.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<u64>().map_err(|_| {
                HeadError::Malformed(format!("Content-Length `{value}` is not a number"))
            })?);
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    connection_close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") && !http11 {
                    connection_close = false;
                }
            }
        } else if h.name.eq_ignore_ascii_case("retry-after") {
            retry_after_s = value.parse::<f64>().ok().filter(|s| s.is_finite());
        }
    }
    let framing = if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else if status == 204 || status == 304 {
        Framing::Length(0)
    } else {
        Framing::UntilClose
    };
    Ok(Some((
        len,
        Head {
            status,
            keep_alive: !connection_close && framing != Framing::UntilClose,
            framing,
            retry_after_s,
            at: 0,
            body_start: 0,
            filled: 0,
        },
    )))
}

/// The request line and the headers every request carries, rendered once:
/// `METHOD path HTTP/1.1`, `Host`, then `extra` (`name: value` pairs).
pub fn render_head_prefix(
    method: &str,
    endpoint: &Endpoint,
    extra: &[(String, Vec<u8>)],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(endpoint.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(endpoint.host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in extra {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads the rest of a small body (an error message, a model list) after
/// its head, keeping at most `keep` bytes and reading at most
/// [`SMALL_BODY_CAP`]. Returns the bytes and whether the body ended
/// cleanly (the connection may be reused when the head allows it).
pub async fn read_small_body(conn: &mut Conn, head: &Head, keep: usize) -> (Vec<u8>, bool) {
    let mut decoder = super::framing::BodyDecoder::new(head.framing);
    let mut text = Vec::new();
    let mut take = |data: &[u8]| {
        let room = keep.saturating_sub(text.len());
        text.extend_from_slice(&data[..data.len().min(room)]);
    };
    if decoder
        .feed(&conn.buf[head.body_start..head.filled], &mut take)
        .is_err()
    {
        return (text, false);
    }
    let mut read = head.filled - head.body_start;
    while !decoder.is_complete() {
        if read >= SMALL_BODY_CAP {
            return (text, false);
        }
        match conn.stream.read(&mut conn.buf).await {
            Ok(0) | Err(_) => {
                let clean = decoder.close();
                return (text, clean);
            }
            Ok(n) => {
                read += n;
                if decoder.feed(&conn.buf[..n], &mut take).is_err() {
                    return (text, false);
                }
            }
        }
    }
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(bytes: &[u8]) -> Head {
        parse_head(bytes).expect("parses").expect("complete").1
    }

    #[test]
    fn heads_give_status_framing_and_reuse() {
        let h = head(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\ndata");
        assert_eq!(
            (h.status, h.framing, h.keep_alive),
            (200, Framing::Chunked, true)
        );
        let h = head(b"HTTP/1.1 429 Too Many\r\ncontent-length: 12\r\nRetry-After: 2\r\nConnection: close\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(12));
        assert_eq!(h.retry_after_s, Some(2.0));
        assert!(!h.keep_alive);
        let h = head(b"HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!(h.framing, Framing::UntilClose);
        assert!(
            !h.keep_alive,
            "a body delimited by close cannot be followed"
        );
        let h = head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
        assert!(h.keep_alive);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le")
            .unwrap()
            .is_none());
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[test]
    fn urls_parse_to_an_address_a_host_and_a_path() {
        let e = Endpoint::parse("http://127.0.0.1:8000/v1/chat/completions?x=1").unwrap();
        assert_eq!(e.addr, "127.0.0.1:8000".parse().unwrap());
        assert_eq!(e.host, "127.0.0.1:8000");
        assert_eq!(e.path, "/v1/chat/completions?x=1");
        assert_eq!(Endpoint::parse("http://127.0.0.1").unwrap().addr.port(), 80);
        let e = Endpoint::parse("https://127.0.0.1/v1").unwrap();
        assert!(e.tls);
        assert_eq!((e.addr.port(), e.server_name.as_str()), (443, "127.0.0.1"));
        assert_eq!(e.scheme(), "https");
        assert!(!Endpoint::parse("http://[::1]:9/").unwrap().tls);
        assert_eq!(
            Endpoint::parse("http://[::1]:9/").unwrap().server_name,
            "::1"
        );
        assert!(Endpoint::parse("ftp://x/").is_err());
        assert!(Endpoint::parse("not a url").is_err());
    }
}
