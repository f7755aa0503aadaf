//! A fleet of emulator replicas ([`serve_fleet`]), optionally behind a
//! router ([`serve_routed`]): what `arbor emulate --replicas N [--router
//! MODE]` serves, so placements and routing conventions are tested end to
//! end on one machine.
//!
//! Each replica is a whole emulator on its own port, with its own prefix
//! cache, counters, `/metrics`, stamps and received store; their clocks
//! share one origin, so their stamps compare. The router listens on its
//! own port and hands each completion request to the replica its
//! [`RouteBy`] picks, in process (the replica's own handler with the
//! replica's state, no second HTTP hop); its `/metrics` and
//! `/arbor/stats` add the replicas' figures up, `/arbor/stamps` lists
//! every replica's, the other routes are replica 0's. Owns the binding
//! and the router's listener; the decision is `router.rs`'s.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION};
use hyper::{Method, Request, Response};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::body::EmuBody;
use super::config::EmulatorConfig;
use super::metrics;
use super::received::{Received, SESSION_TOKEN_HEADER};
use super::request::{self, Endpoint};
use super::router::{RouteBy, Routed, Router, MAX_KEYS};
use super::server::{
    self, bind_replica, completion, completion_endpoint, endpoint_error, json_response,
    EmulatorHandle, MAX_BODY_BYTES,
};
use super::shared::{EmulatorStats, Shared};

/// Running replicas, and their router if any. Dropping it stops them all
/// from accepting connections.
pub struct FleetHandle {
    replicas: Vec<EmulatorHandle>,
    router: Option<RouterHandle>,
}

struct RouterHandle {
    addr: SocketAddr,
    by: RouteBy,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Drop for RouterHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// What the router's connections share.
struct Front {
    router: Router,
    replicas: Vec<Arc<Shared>>,
    body_limit: Duration,
}

/// The port of replica `i` when the fleet was asked for `first` (0: any
/// free port for each).
fn port_of(first: u16, i: usize) -> io::Result<u16> {
    if first == 0 {
        return Ok(0);
    }
    u16::try_from(first as usize + i).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("port {first} + {i} is past 65535"),
        )
    })
}

async fn bind_replicas(
    config: &EmulatorConfig,
    replicas: usize,
    addr: SocketAddr,
    skip: usize,
) -> io::Result<Vec<EmulatorHandle>> {
    if replicas == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a fleet needs at least one replica",
        ));
    }
    let start = Instant::now();
    let mut handles = Vec::with_capacity(replicas);
    for i in 0..replicas {
        let port = port_of(addr.port(), skip + i)?;
        let at = SocketAddr::new(addr.ip(), port);
        let handle = bind_replica(config.clone(), at, None, i, start)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("replica {i} on {at}: {e}")))?;
        handles.push(handle);
    }
    Ok(handles)
}

/// `replicas` emulators of `config` on consecutive ports from `addr`'s
/// (127.0.0.1 only; port 0: any free port for each).
pub async fn serve_fleet(
    config: EmulatorConfig,
    replicas: usize,
    addr: SocketAddr,
) -> io::Result<FleetHandle> {
    Ok(FleetHandle {
        replicas: bind_replicas(&config, replicas, addr, 0).await?,
        router: None,
    })
}

/// A router by `by` on `addr`, in front of `replicas` emulators of
/// `config` on the next ports (port 0: any free port for each).
pub async fn serve_routed(
    config: EmulatorConfig,
    replicas: usize,
    by: RouteBy,
    addr: SocketAddr,
) -> io::Result<FleetHandle> {
    config
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let listener = server::listen(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("router on {addr}: {e}")))?;
    let front_addr = listener.local_addr()?;
    let handles = bind_replicas(&config, replicas, addr, 1).await?;
    let front = Arc::new(Front {
        router: Router::new(by.clone(), replicas, MAX_KEYS),
        replicas: handles.iter().map(|h| h.shared().clone()).collect(),
        body_limit: Duration::from_nanos(config.read_timeouts.body),
    });
    let header_limit = Duration::from_nanos(config.read_timeouts.header);
    let handler = move |req, t0| serve_front(front.clone(), req, t0);
    let (stop, task) = server::spawn_server(listener, header_limit, None, handler);
    Ok(FleetHandle {
        replicas: handles,
        router: Some(RouterHandle {
            addr: front_addr,
            by,
            stop: Some(stop),
            task: Some(task),
        }),
    })
}

async fn serve_front(
    front: Arc<Front>,
    req: Request<Incoming>,
    t0: Instant,
) -> Result<Response<EmuBody>, Infallible> {
    if req.method() == Method::POST {
        if let Some(endpoint) = completion_endpoint(req.uri().path()) {
            return Ok(routed(&front, req, endpoint, t0).await);
        }
    }
    let replicas = &front.replicas;
    let response = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => server::metrics_response(metrics::fleet_exposition(replicas)),
        (&Method::GET, "/arbor/stats") => {
            let all: Vec<EmulatorStats> = replicas.iter().map(|s| s.stats.snapshot()).collect();
            let sum = EmulatorStats::sum(&all);
            json_response(200, serde_json::to_vec(&sum).expect("stats serialize"))
        }
        (&Method::GET, "/arbor/stamps") => {
            let drain = server::wants_drain(req.uri());
            let stamps: Vec<_> = replicas
                .iter()
                .flat_map(|s| if drain { s.take_stamps() } else { s.stamps() })
                .collect();
            json_response(200, serde_json::to_vec(&stamps).expect("stamps serialize"))
        }
        _ => return server::handle(replicas[0].clone(), req, t0).await,
    };
    Ok(response)
}

/// A completion request through the router: routed (its body read first
/// when the mode routes by it; a body that cannot be read is answered by
/// the router itself), then answered by the replica.
async fn routed(
    front: &Front,
    req: Request<Incoming>,
    endpoint: Endpoint,
    t0: Instant,
) -> Response<EmuBody> {
    if !front.router.by().reads_body() {
        let routed = front.router.route(req.headers(), None);
        return on_replica(front, routed, req, endpoint, t0).await;
    }
    let (parts, body) = req.into_parts();
    let collect = Limited::new(body, MAX_BODY_BYTES).collect();
    let bytes = match tokio::time::timeout(front.body_limit, collect).await {
        Ok(Ok(body)) => body.to_bytes(),
        Ok(Err(e)) => {
            let message = format!("could not read the request body: {e}");
            return endpoint_error(endpoint, 400, "BadRequestError", &message);
        }
        Err(_) => {
            let message = format!(
                "the request body did not arrive within {} s",
                front.body_limit.as_secs_f64()
            );
            let mut r = endpoint_error(endpoint, 408, "RequestTimeout", &message);
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
    };
    let user = request::user_of(endpoint, &bytes);
    let routed = front.router.route(&parts.headers, user.as_deref());
    let req = Request::from_parts(parts, Full::new(bytes));
    on_replica(front, routed, req, endpoint, t0).await
}

async fn on_replica<B>(
    front: &Front,
    routed: Routed,
    req: Request<B>,
    endpoint: Endpoint,
    t0: Instant,
) -> Response<EmuBody>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let shared = front.replicas[routed.replica].clone();
    let mut response = completion(shared, req, endpoint, t0).await;
    if let Some(token) = routed.token.and_then(|t| HeaderValue::from_str(&t).ok()) {
        response.headers_mut().insert(SESSION_TOKEN_HEADER, token);
    }
    response
}

impl FleetHandle {
    /// The replicas, by index.
    pub fn replicas(&self) -> &[EmulatorHandle] {
        &self.replicas
    }

    /// Each replica's `http://127.0.0.1:PORT`, by index.
    pub fn replica_urls(&self) -> Vec<String> {
        self.replicas.iter().map(|r| r.base_url()).collect()
    }

    /// The router's `http://127.0.0.1:PORT`, if the fleet has one.
    pub fn router_url(&self) -> Option<String> {
        self.router.as_ref().map(|r| format!("http://{}", r.addr))
    }

    /// How the router routes, if the fleet has one.
    pub fn route_by(&self) -> Option<&RouteBy> {
        self.router.as_ref().map(|r| &r.by)
    }

    /// Where a client sends requests: the router, else replica 0.
    pub fn base_url(&self) -> String {
        self.router_url()
            .unwrap_or_else(|| self.replicas[0].base_url())
    }

    /// Each replica's counters, by index.
    pub fn stats(&self) -> Vec<EmulatorStats> {
        self.replicas.iter().map(|r| r.stats()).collect()
    }

    /// What every replica received (see [`EmulatorHandle::received`]),
    /// replica 0's first.
    pub fn received(&self) -> Vec<Received> {
        self.replicas.iter().flat_map(|r| r.received()).collect()
    }

    /// Stops the router and every replica; resolves when all their
    /// connections have closed.
    pub fn shutdown(mut self) -> impl Future<Output = ()> + Send + 'static {
        let router_task = self.router.as_mut().and_then(|r| {
            if let Some(stop) = r.stop.take() {
                let _ = stop.send(());
            }
            r.task.take()
        });
        let replicas: Vec<_> = std::mem::take(&mut self.replicas)
            .into_iter()
            .map(EmulatorHandle::shutdown)
            .collect();
        async move {
            if let Some(task) = router_task {
                let _ = task.await;
            }
            for replica in replicas {
                replica.await;
            }
        }
    }
}
