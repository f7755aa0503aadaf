//! The recording proxy (`arbor record`, docs/record.md): a pass-through
//! HTTP proxy that an agent uses as its base URL, writing every chat
//! completions, Messages or Responses exchange to an openai-log capture
//! (`arbor_formats::capture`) that `arbor inspect`, `plan` and `run` read
//! like any trace.
//!
//! Modules, each used only by those after it: `clock` (monotonic
//! nanoseconds anchored to UTC), `identity` (the agent's own identity
//! headers), `responses_scan` (a Responses stream's events), `scan` (a
//! response's text, usage and error read from its bytes), `tap` (the response body passed through and the line it
//! completes), `proxy` (forwarding one request upstream). This
//! file owns a recording: the upstream checked and dialled, the listener,
//! the accept loop, stopping on SIGINT or SIGTERM (or a [`StopHandle`]),
//! the capture closed ([`record`], from [`RecordOptions`]). It also owns
//! what bounds a recording: at most `max_connections` client connections
//! at once (beyond, new connections wait in the kernel's listen queue), a
//! read timeout on each request head and body, and a failed capture
//! write, which stops the accepting at once (or, with
//! `forward_without_recording`, is reported and forwarding goes on). It
//! prints nothing: what the console says comes from a [`RecordObserver`]
//! and the [`Recorded`] it returns.

mod clock;
mod identity;
mod proxy;
mod responses_scan;
mod scan;
mod tap;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit, Semaphore};

use crate::endpoint::{redact_url, tls_config};
use crate::live::http::Endpoint;
use crate::live::stream::Dial;
use crate::live::tls::TlsOptions;
use arbor_error::Error;
use arbor_formats::capture::{CaptureFile, OnFailure, Redactor};

use clock::UtcClock;
use proxy::{handle, Link, Proxy};
use tap::Cutting;

pub use identity::{Client, CLIENTS};
pub use proxy::KNOWN_SESSION_HEADERS;

/// How long in-flight exchanges may finish after a stop signal; then they
/// are cut (their lines say so).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The default cap on client connections open at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// The default largest request body (bytes): 32 MiB, the largest request
/// the Messages API takes.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 32 << 20;

/// The default longest a client may take to send a request head (or to
/// start one on an idle connection), and then its body.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// What a recording is asked to do.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The upstream's root URL (normalized: no trailing `/v1`).
    pub upstream: String,
    /// Where the proxy listens (port 0: a free port).
    pub listen: SocketAddr,
    /// The capture file, created or truncated.
    pub out: PathBuf,
    /// The request header that names the session; `None`: the
    /// [`KNOWN_SESSION_HEADERS`].
    pub session_header: Option<String>,
    /// Redact every text of the capture (`arbor_formats::capture::Redactor`).
    pub redact: bool,
    /// What to trust over an `https://` upstream.
    pub tls: TlsOptions,
    /// When the capture cannot be written: keep forwarding (reported to
    /// the observer) instead of stopping.
    pub forward_without_recording: bool,
    /// Client connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// The largest request body read (bytes); a larger one gets 413.
    pub max_request_bytes: usize,
    /// The longest a request head (or an idle connection's next one), and
    /// then its body, may take to arrive.
    pub read_timeout: Duration,
}

impl RecordOptions {
    /// Options with the default bounds and no redaction.
    pub fn new(upstream: String, listen: SocketAddr, out: PathBuf) -> RecordOptions {
        RecordOptions {
            upstream,
            listen,
            out,
            session_header: None,
            redact: false,
            tls: TlsOptions::default(),
            forward_without_recording: false,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            read_timeout: DEFAULT_READ_TIMEOUT,
        }
    }
}

/// What a recording tells its caller while it runs.
pub trait RecordObserver {
    /// The proxy listens on `addr` (the port chosen, for port 0) and
    /// forwards to `upstream` (its URL with any credentials hidden). An
    /// error stops the recording before it accepts a connection.
    fn listening(&self, addr: SocketAddr, upstream: &str) -> Result<(), Error>;

    /// A stop signal came: no new connections on `addr`; in-flight
    /// exchanges have a grace to finish.
    fn stopping(&self, addr: SocketAddr);

    /// Writing the capture failed with `error`, now: the recording stops
    /// accepting (`stopping` follows), or, when `forwarding`, it goes on
    /// forwarding and no later exchange is recorded.
    fn capture_failed(&self, error: &str, forwarding: bool);
}

/// Stops a recording as SIGINT would, from another thread.
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<Notify>);

impl StopHandle {
    /// Asks the recording to stop (before or while it runs).
    pub fn stop(&self) {
        self.0.notify_one();
    }
}

/// A warning for a listen address other machines may reach (not a
/// loopback address); `None` for a loopback one.
pub fn exposure_warning(addr: SocketAddr) -> Option<String> {
    if addr.ip().is_loopback() {
        return None;
    }
    Some(format!(
        "warning: listening on {addr}, which other machines may reach: anyone who can \
         connect can send requests through this proxy to the upstream and into the \
         capture, and the agent's API key crosses the network unencrypted (plain HTTP); \
         use --listen 127.0.0.1:PORT unless that is meant"
    ))
}

/// Whether a proxy listening on `listen` would forward to itself at
/// `upstream`: the same port, and the same address (or `listen`'s
/// unspecified address taking the upstream's loopback or unspecified
/// one). Port 0 picks a port nobody names. Another of this machine's own
/// addresses is not detected.
fn forwards_to_itself(upstream: SocketAddr, listen: SocketAddr) -> bool {
    let (up, at) = (upstream.ip(), listen.ip());
    listen.port() != 0
        && upstream.port() == listen.port()
        && (up == at
            || (at.is_unspecified() && (up.is_loopback() || up.is_unspecified()))
            || (up.is_unspecified() && at.is_loopback()))
}

/// What a recording did, once it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// Lines in the capture: one per recorded exchange.
    pub lines: u64,
    /// Requests forwarded without a line (not a chat, Messages or
    /// Responses request).
    pub forwarded: u64,
}

/// Records until SIGINT or SIGTERM: exit 2 for a bad upstream or session
/// header (or an upstream that is the proxy's own address), 1 when the
/// capture cannot be created or written or the address cannot be bound.
pub fn record(options: &RecordOptions, observer: &dyn RecordObserver) -> Result<Recorded, Error> {
    record_until(options, observer, &StopHandle::default())
}

/// [`record`], which `stop` also stops.
pub fn record_until(
    options: &RecordOptions,
    observer: &dyn RecordObserver,
    stop: &StopHandle,
) -> Result<Recorded, Error> {
    let shown = redact_url(&options.upstream);
    let endpoint = Endpoint::parse(&options.upstream)
        .map_err(|e| Error::input(format!("--upstream: {}", redact_url(&e))))?;
    if endpoint.path.contains('?') {
        return Err(Error::input(format!(
            "--upstream {shown}: a query string is not forwarded; give the key in the \
             agent's own headers"
        )));
    }
    if forwards_to_itself(endpoint.addr, options.listen) {
        return Err(Error::input(format!(
            "--upstream {shown} is the proxy's own address (--listen {}): every request \
             would be forwarded back to the proxy",
            options.listen
        )));
    }
    if options.max_connections == 0 || options.max_request_bytes == 0 {
        return Err(Error::input(
            "--max-connections and --max-request-bytes must be at least 1",
        ));
    }
    if options.read_timeout.is_zero() {
        return Err(Error::input("--read-timeout must be more than 0 s"));
    }
    let dial = match tls_config(&options.upstream, &options.tls)? {
        Some(config) => Dial::tls(endpoint.addr, &endpoint.server_name, config)
            .map_err(|e| Error::input(format!("--upstream: {e}")))?,
        None => Dial::plain(endpoint.addr),
    };
    let host = HeaderValue::from_str(&endpoint.host)
        .map_err(|_| Error::input(format!("--upstream {shown}: not a valid host")))?;
    let session_headers = match options.session_header.as_deref() {
        Some(name) => vec![
            HeaderName::from_bytes(name.trim().to_ascii_lowercase().as_bytes()).map_err(|_| {
                Error::input(format!("--session-header `{name}` is not a header name"))
            })?,
        ],
        None => KNOWN_SESSION_HEADERS
            .iter()
            .map(|name| HeaderName::from_static(name))
            .collect(),
    };
    let redactor = options.redact.then(Redactor::new);
    let (failed_tx, failed) = oneshot::channel::<String>();
    let on_failure: OnFailure = Box::new(move |e: &io::Error| {
        let _ = failed_tx.send(e.to_string());
    });
    let capture = CaptureFile::create(&options.out, redactor, Some(on_failure)).map_err(|e| {
        Error::other(format!(
            "{}: cannot create the capture: {e}",
            options.out.display()
        ))
    })?;
    let proxy = Arc::new(Proxy {
        dial,
        host,
        prefix: endpoint.path.trim_end_matches('/').to_string(),
        clock: UtcClock::anchored_now(),
        sink: capture.sink(),
        session_headers,
        forwarded: AtomicU64::new(0),
        cutting: Cutting::default(),
        max_request_bytes: options.max_request_bytes,
        read_timeout: options.read_timeout,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("arbor")
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the async runtime: {e}")))?;
    let served = runtime.block_on(async {
        let listen = options.listen;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| Error::other(format!("cannot listen on {listen}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::other(format!("cannot listen on {listen}: {e}")))?;
        observer.listening(addr, &shown)?;
        let ends = Ends {
            observer,
            stop,
            failed,
            forward_without_recording: options.forward_without_recording,
        };
        serve(listener, addr, proxy.clone(), options, ends).await;
        Ok::<(), Error>(())
    });
    // Exchanges still open after the grace are dropped with the runtime:
    // each sends its line (marked cut) before the file is closed.
    runtime.shutdown_timeout(Duration::from_secs(1));
    let written = capture.finish();
    served?;
    if let Some(e) = written.error {
        let after = if options.forward_without_recording {
            "the proxy went on forwarding without recording (--forward-without-recording)"
        } else {
            "the proxy stopped accepting exchanges at once"
        };
        return Err(Error::other(format!(
            "{}: writing the capture failed: {e}; {after}; {} exchanges written, {} lost",
            options.out.display(),
            written.lines,
            written.lost
        )));
    }
    Ok(Recorded {
        lines: written.lines,
        forwarded: proxy.forwarded.load(Relaxed),
    })
}

/// What ends the accepting, besides SIGINT and SIGTERM.
struct Ends<'a> {
    observer: &'a dyn RecordObserver,
    stop: &'a StopHandle,
    /// The capture writer's first error.
    failed: oneshot::Receiver<String>,
    forward_without_recording: bool,
}

/// The next connection, once fewer than the cap are open: the slot it
/// holds until it closes.
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> io::Result<(TcpStream, OwnedSemaphorePermit)> {
    let slot = slots
        .clone()
        .acquire_owned()
        .await
        .map_err(io::Error::other)?;
    let (stream, _) = listener.accept().await?;
    Ok((stream, slot))
}

/// Accepts connections (at most `options.max_connections` open) until
/// SIGINT, SIGTERM, the stop handle or a failed capture write (unless
/// forwarding without recording), then lets in-flight exchanges finish
/// for [`STOP_GRACE`] and marks the rest cut.
async fn serve(
    listener: TcpListener,
    addr: SocketAddr,
    proxy: Arc<Proxy>,
    options: &RecordOptions,
    mut ends: Ends<'_>,
) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(options.read_timeout);
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let terminated = async move {
        match terminate.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(terminated);
    let mut heard_failure = false;
    loop {
        tokio::select! {
            accepted = accept(&listener, &slots) => match accepted {
                Ok((stream, slot)) => {
                    let _ = stream.set_nodelay(true);
                    let link = Arc::new(Link::new(proxy.clone()));
                    let service = service_fn(move |req| handle(link.clone(), req));
                    let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
                    tokio::spawn(async move {
                        let _ = conn.await;
                        drop(slot);
                    });
                }
                // Out of file descriptors and the like: back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            failed = &mut ends.failed, if !heard_failure => {
                heard_failure = true;
                let error = failed.unwrap_or_else(|_| "the capture writer stopped".to_string());
                ends.observer.capture_failed(&error, ends.forward_without_recording);
                if !ends.forward_without_recording {
                    break;
                }
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = &mut terminated => break,
            _ = ends.stop.0.notified() => break,
        }
    }
    drop(listener);
    ends.observer.stopping(addr);
    if tokio::time::timeout(STOP_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        // What is still open is dropped with the runtime: cut by the proxy.
        proxy.cutting.start();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> SocketAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn only_loopback_listen_addresses_go_unwarned() {
        for quiet in ["127.0.0.1:8787", "127.0.0.2:1", "[::1]:8787"] {
            assert_eq!(exposure_warning(at(quiet)), None, "{quiet}");
        }
        for loud in [
            "0.0.0.0:8787",
            "[::]:8787",
            "192.168.1.4:8787",
            "10.0.0.1:0",
        ] {
            let said = exposure_warning(at(loud)).expect("a warning");
            assert!(
                said.contains(loud) && said.contains("other machines"),
                "{said}"
            );
        }
    }

    #[test]
    fn an_upstream_at_the_listen_address_forwards_to_itself() {
        let cases = [
            ("127.0.0.1:8787", "127.0.0.1:8787", true),
            ("127.0.0.1:8787", "0.0.0.0:8787", true),
            ("[::1]:8787", "[::]:8787", true),
            ("0.0.0.0:8787", "127.0.0.1:8787", true),
            ("127.0.0.1:8000", "127.0.0.1:8787", false),
            ("127.0.0.2:8787", "127.0.0.1:8787", false),
            ("10.1.2.3:8787", "127.0.0.1:8787", false),
            ("127.0.0.1:0", "127.0.0.1:0", false),
        ];
        for (upstream, listen, loops) in cases {
            assert_eq!(
                forwards_to_itself(at(upstream), at(listen)),
                loops,
                "{upstream} from {listen}"
            );
        }
    }
}
