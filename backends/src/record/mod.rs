//! The recording proxy (`arbor record`, docs/record.md): a pass-through
//! HTTP proxy that an agent uses as its base URL, writing every chat
//! completions or Messages exchange to an openai-log capture
//! (`arbor_formats::capture`) that `arbor inspect`, `plan` and `run` read
//! like any trace.
//!
//! Modules, each used only by those after it: `clock` (monotonic
//! nanoseconds anchored to UTC), `scan` (a response's text, usage and
//! error read from its bytes), `tap` (the response body passed through and
//! the line it completes), `proxy` (forwarding one request upstream). This
//! file owns a recording: the upstream checked and dialled, the listener,
//! the accept loop, stopping on SIGINT or SIGTERM, the capture closed
//! ([`record`], from [`RecordOptions`]). It prints nothing: what the
//! console says comes from a [`RecordObserver`] and the [`Recorded`] it
//! returns.

mod clock;
mod proxy;
mod scan;
mod tap;

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
use tokio::net::TcpListener;

use crate::endpoint::{redact_url, tls_config};
use crate::live::http::Endpoint;
use crate::live::stream::Dial;
use crate::live::tls::TlsOptions;
use arbor_error::Error;
use arbor_formats::capture::{CaptureFile, Redactor};

use clock::UtcClock;
use proxy::{handle, Link, Proxy};

pub use proxy::KNOWN_SESSION_HEADERS;

/// How long in-flight exchanges may finish after a stop signal; then they
/// are cut (their lines say so).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The longest a client may take to send a request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

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
}

/// What a recording did, once it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// Lines in the capture: one per recorded exchange.
    pub lines: u64,
    /// Requests forwarded without a line (not a chat or Messages request).
    pub forwarded: u64,
}

/// Records until SIGINT or SIGTERM: exit 2 for a bad upstream or session
/// header, 1 when the capture cannot be created or written or the address
/// cannot be bound.
pub fn record(options: &RecordOptions, observer: &dyn RecordObserver) -> Result<Recorded, Error> {
    let shown = redact_url(&options.upstream);
    let endpoint = Endpoint::parse(&options.upstream)
        .map_err(|e| Error::input(format!("--upstream: {}", redact_url(&e))))?;
    if endpoint.path.contains('?') {
        return Err(Error::input(format!(
            "--upstream {shown}: a query string is not forwarded; give the key in the \
             agent's own headers"
        )));
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
    let capture = CaptureFile::create(&options.out, redactor).map_err(|e| {
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
        serve(listener, addr, proxy.clone(), observer).await;
        Ok::<(), Error>(())
    });
    // Exchanges still open after the grace are dropped with the runtime:
    // each sends its line (marked cut) before the file is closed.
    runtime.shutdown_timeout(Duration::from_secs(1));
    let lines = capture.finish().map_err(|e| {
        Error::other(format!(
            "{}: writing the capture failed: {e}",
            options.out.display()
        ))
    })?;
    served?;
    Ok(Recorded {
        lines,
        forwarded: proxy.forwarded.load(Relaxed),
    })
}

/// Accepts connections until SIGINT or SIGTERM, then lets in-flight
/// exchanges finish for [`STOP_GRACE`].
async fn serve(
    listener: TcpListener,
    addr: SocketAddr,
    proxy: Arc<Proxy>,
    observer: &dyn RecordObserver,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
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
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let link = Arc::new(Link::new(proxy.clone()));
                    let service = service_fn(move |req| handle(link.clone(), req));
                    let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                }
                // Out of file descriptors and the like: back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = &mut terminated => break,
        }
    }
    drop(listener);
    observer.stopping(addr);
    let _ = tokio::time::timeout(STOP_GRACE, graceful.shutdown()).await;
}
