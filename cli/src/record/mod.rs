//! `arbor record`: a pass-through HTTP proxy that an agent uses as its
//! base URL, writing every chat completions or Messages exchange to an
//! openai-log capture (docs/record.md) that `arbor inspect`, `plan` and
//! `run` read like any trace.
//!
//! Modules, each used only by those after it: `clock` (monotonic
//! nanoseconds anchored to UTC), `redact` (`--redact`'s synthesized text),
//! `capture` (a line and the file's writer thread), `scan` (a response's text, usage and error read from its
//! bytes), `tap` (the response body passed through and the line it
//! completes), `proxy` (forwarding one request upstream). This file owns
//! the command: the upstream, the listener, the accept loop and stopping
//! on SIGINT or SIGTERM.

mod capture;
mod clock;
mod proxy;
mod redact;
mod scan;
mod tap;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use arbor_backends::live::http::Endpoint;
use arbor_backends::live::stream::Dial;
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::args::RecordArgs;
use crate::stdout;
use arbor::runtime;
use arbor_backends::endpoint::{redact_url, tls_config};
use arbor_error::Error;

use capture::CaptureFile;
use clock::UtcClock;
use proxy::{handle, Link, Proxy};

/// How long in-flight exchanges may finish after a stop signal; then they
/// are cut (their lines say so).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The longest a client may take to send a request head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

pub fn run(args: &RecordArgs) -> Result<(), Error> {
    runtime::raise_fd_limit();
    let shown = redact_url(&args.upstream);
    let endpoint = Endpoint::parse(&args.upstream)
        .map_err(|e| Error::input(format!("--upstream: {}", redact_url(&e))))?;
    if endpoint.path.contains('?') {
        return Err(Error::input(format!(
            "--upstream {shown}: a query string is not forwarded; give the key in the \
             agent's own headers"
        )));
    }
    let dial = match tls_config(&args.upstream, &args.tls())? {
        Some(config) => Dial::tls(endpoint.addr, &endpoint.server_name, config)
            .map_err(|e| Error::input(format!("--upstream: {e}")))?,
        None => Dial::plain(endpoint.addr),
    };
    let host = HeaderValue::from_str(&endpoint.host)
        .map_err(|_| Error::input(format!("--upstream {shown}: not a valid host")))?;
    let session_headers = match args.session_header.as_deref() {
        Some(name) => vec![
            HeaderName::from_bytes(name.trim().to_ascii_lowercase().as_bytes()).map_err(|_| {
                Error::input(format!("--session-header `{name}` is not a header name"))
            })?,
        ],
        None => proxy::KNOWN_SESSION_HEADERS
            .iter()
            .map(|name| HeaderName::from_static(name))
            .collect(),
    };
    let redactor = args.redact.then(redact::Redactor::new);
    let capture = CaptureFile::create(&args.out, redactor).map_err(|e| {
        Error::other(format!(
            "{}: cannot create the capture: {e}",
            args.out.display()
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
    let runtime = runtime::two_workers()?;
    let served = runtime.block_on(async {
        let listener = TcpListener::bind(args.listen)
            .await
            .map_err(|e| Error::other(format!("cannot listen on {}: {e}", args.listen)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::other(format!("cannot listen on {}: {e}", args.listen)))?;
        stdout::print(|out| {
            writeln!(
                out,
                "arbor record: listening on http://{addr}, forwarding to {shown}, writing {} \
                 (Ctrl+C stops)",
                args.out.display()
            )
        })?;
        serve(listener, addr, proxy.clone()).await;
        Ok::<(), Error>(())
    });
    // Exchanges still open after the grace are dropped with the runtime:
    // each sends its line (marked cut) before the file is closed.
    runtime.shutdown_timeout(Duration::from_secs(1));
    let lines = capture.finish().map_err(|e| {
        Error::other(format!(
            "{}: writing the capture failed: {e}",
            args.out.display()
        ))
    })?;
    served?;
    eprintln!(
        "arbor record: {lines} exchanges written to {}; {} other requests forwarded only",
        args.out.display(),
        proxy.forwarded.load(Relaxed)
    );
    Ok(())
}

/// Accepts connections until SIGINT or SIGTERM, then lets in-flight
/// exchanges finish for [`STOP_GRACE`].
async fn serve(listener: TcpListener, addr: SocketAddr, proxy: Arc<Proxy>) {
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
    eprintln!("arbor record: stopping (no new connections on {addr})");
    let _ = tokio::time::timeout(STOP_GRACE, graceful.shutdown()).await;
}
