//! The live driver: the scheduler against a real OpenAI-compatible server.
//!
//! Owns the loop that turns the scheduler's commands into HTTP requests on
//! tokio and feeds their events back, with `now` read from one monotonic
//! clock (the run's epoch). The loop sends a request itself when a pooled
//! connection is idle; each request's task (on the same thread) sends the
//! rest, reads the answer and reports its final [`Response`] (and `sent`,
//! when the task sent it) over a channel; the loop hands them to the
//! scheduler at the times they were stamped (the scheduler anchors
//! late-heard events at their own time). Records are handed to a
//! [`RecordSink`] as each request completes and flushed at the end of the
//! loop's turn, so nothing is lost if the run is interrupted.
//!
//! Timers: tokio's timer wheel has millisecond resolution, so the loop
//! sleeps until shortly before the scheduler's next deadline and then
//! yields until the deadline passes; schedule lag stays well under a
//! millisecond without burning a core.

pub mod exchange;
pub mod framing;
pub mod http;
pub mod prebuild;
pub mod record;
pub mod request;
pub mod sse;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use arbor_engine::prompt;
use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler, TurnState};
use arbor_engine::time::Nanos;
use arbor_engine::{EngineError, Workload};

use exchange::{execute, Target};
use prebuild::Prebuilt;
use record::{ErrorCategory, RequestError, RequestIdentity, RequestRecord, Response};
use request::{build_turn_body, BodyConfig};

/// Everything the live driver needs besides the scheduler and workload.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    pub target: Target,
    pub body: BodyConfig,
    /// Connections opened (by `GET /v1/models`) before the clock starts.
    pub warm_connections: usize,
    /// Base URL for warming (`http://host:port`).
    pub base_url: String,
    /// Prepend each play's cache-bust marker to its prompts.
    pub cache_bust: bool,
    /// The run's seed (markers derive from it).
    pub seed: u64,
}

/// Where records go, as requests finish.
pub trait RecordSink {
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()>;

    /// The loop has no more events at hand: records held so far should be
    /// written now (a sink may batch the records of one burst).
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Counters a progress display can read at its own pace (no redraw here).
#[derive(Debug, Default)]
pub struct Progress {
    pub sent: AtomicU64,
    pub done: AtomicU64,
    pub errors: AtomicU64,
    pub inflight: AtomicU64,
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOutcome {
    /// Stopped by the caller's stop signal (e.g. Ctrl+C).
    pub cancelled: bool,
    /// Run duration, from the epoch to the last event.
    pub elapsed: Nanos,
    /// Most requests in flight at once, as observed (sent, not done).
    pub observed_peak_inflight: u64,
    /// Requests whose body was built ahead, while a predecessor ran.
    pub prebuilt_bodies: u64,
}

#[derive(Debug)]
pub enum LiveError {
    Engine(EngineError),
    Sink(std::io::Error),
    /// A root agent's warmup failed: the run cannot measure what it meant
    /// to (the AgentX recipe aborts).
    WarmupFailed {
        tree: String,
        message: String,
    },
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LiveError::Engine(e) => write!(f, "engine: {e}"),
            LiveError::Sink(e) => write!(f, "cannot write a record: {e}"),
            LiveError::WarmupFailed { tree, message } => {
                write!(f, "the warmup of tree `{tree}`'s root agent failed ({message}): the run is aborted")
            }
        }
    }
}

impl std::error::Error for LiveError {}

impl From<EngineError> for LiveError {
    fn from(e: EngineError) -> Self {
        LiveError::Engine(e)
    }
}

enum TaskEvent {
    Sent {
        id: RequestId,
        at: Nanos,
    },
    Done {
        id: RequestId,
        response: Box<Response>,
    },
}

/// What the loop keeps per request in flight.
struct InFlight {
    abort: AbortHandle,
    sent: Option<Nanos>,
}

/// Opens connections before the clock starts, so the first requests do not
/// pay for connecting.
pub async fn warm_pool(config: &LiveConfig) {
    let base = config.base_url.trim_end_matches('/');
    let base_path = base
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("");
    config
        .target
        .warm(config.warm_connections, &format!("{base_path}/v1/models"))
        .await;
}

fn identity(scheduler: &Scheduler, id: RequestId) -> Option<RequestIdentity> {
    let slot = scheduler.slot(id)?;
    let (tree, play, turn) = scheduler.request_tree(id)?;
    let t = turn as usize;
    Some(RequestIdentity {
        request: id,
        tree: tree.id.clone(),
        tree_index: play.tree,
        agent: tree
            .agent_ids
            .get(tree.agent_of[t] as usize)
            .cloned()
            .unwrap_or_default(),
        turn: tree.index_in_agent[t],
        copy: play.copy,
        lane: play.lane,
        play: slot.play,
        eligible: slot.eligible,
        dispatched: slot.dispatched,
        warmup: slot.warmup,
        queue_wait: slot.queue_wait,
        planned_input_tokens: tree.isl[t],
        planned_output_tokens: tree.osl[t],
    })
}

/// Sleeps until `deadline` (ns since `epoch`) with sub-millisecond lateness:
/// tokio's millisecond timer to within 1 ms, then yielding.
async fn sleep_precisely(epoch: Instant, deadline: Nanos) {
    let target = epoch + Duration::from_nanos(deadline);
    let coarse = target
        .checked_sub(Duration::from_micros(1200))
        .unwrap_or(target);
    if Instant::now() < coarse {
        tokio::time::sleep_until(coarse.into()).await;
    }
    while Instant::now() < target {
        tokio::task::yield_now().await;
    }
}

/// Runs the scheduler against the server until it is finished or `stop`
/// resolves (then: no new sends, in-flight requests get the grace).
pub async fn run<S: RecordSink>(
    scheduler: &mut Scheduler,
    workload: Arc<Workload>,
    config: &LiveConfig,
    sink: &mut S,
    progress: &Progress,
    stop: impl Future<Output = ()>,
) -> Result<RunOutcome, LiveError> {
    let epoch = Instant::now();
    let now = || epoch.elapsed().as_nanos() as Nanos;
    let (tx, mut rx) = mpsc::unbounded_channel::<TaskEvent>();
    let target = Arc::new(config.target.clone());
    let body_config = Arc::new(config.body.clone());
    let mut inflight: Vec<Option<InFlight>> = Vec::new();
    let mut outstanding = 0u64;
    let mut sent_not_done = 0u64;
    let mut observed_peak = 0u64;
    let mut cancelled = false;
    let prebuilt = Arc::new(Mutex::new(Prebuilt::default()));
    tokio::pin!(stop);

    loop {
        while let Some(command) = scheduler.poll_command() {
            match command {
                Command::Dispatch(id) => {
                    let Some(turn) = locate(scheduler, id, config) else {
                        continue;
                    };
                    let ready = if turn.warmup {
                        None
                    } else {
                        lock(&prebuilt).take(id)
                    };
                    // The request goes out from here when a connection is
                    // idle: no wait behind the other tasks of this thread.
                    let body = ready.unwrap_or_else(|| turn.body(&workload, &body_config));
                    let started = target.send_now(id, &body, epoch);
                    let sent_now = started.as_ref().map(|s| s.sent());
                    let tx = tx.clone();
                    let target = Arc::clone(&target);
                    let head_tx =
                        build_ahead(scheduler, id, config, &prebuilt, &workload, &body_config);
                    let task = tokio::spawn(async move {
                        let sent_tx = tx.clone();
                        let on_sent = move |at| {
                            let _ = sent_tx.send(TaskEvent::Sent { id, at });
                        };
                        // The server has the request: build what follows.
                        let on_head = move || {
                            if let Some(head_tx) = head_tx {
                                let _ = head_tx.send(());
                            }
                        };
                        let osl = turn.osl as usize;
                        let response =
                            execute(&target, &body, id, epoch, osl, started, on_sent, on_head)
                                .await;
                        let _ = tx.send(TaskEvent::Done {
                            id,
                            response: Box::new(response),
                        });
                    });
                    let index = id as usize;
                    if inflight.len() <= index {
                        inflight.resize_with(index + 1, || None);
                    }
                    inflight[index] = Some(InFlight {
                        abort: task.abort_handle(),
                        sent: sent_now,
                    });
                    outstanding += 1;
                    progress.inflight.store(outstanding, Ordering::Relaxed);
                    if let Some(at) = sent_now {
                        sent_not_done += 1;
                        observed_peak = observed_peak.max(sent_not_done);
                        scheduler.handle_sent(at, id)?;
                        progress.sent.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Command::Cancel(id) => {
                    let Some(entry) = inflight.get_mut(id as usize).and_then(Option::take) else {
                        continue;
                    };
                    entry.abort.abort();
                    let at = now();
                    if entry.sent.is_some() {
                        sent_not_done = sent_not_done.saturating_sub(1);
                    }
                    outstanding -= 1;
                    progress.inflight.store(outstanding, Ordering::Relaxed);
                    let mut response = Response {
                        error: Some(RequestError {
                            category: ErrorCategory::Cancelled,
                            message: "cancelled at the end of the grace period".into(),
                            http_status: None,
                            retry_after_s: None,
                        }),
                        ..Response::default()
                    };
                    response.stamps.sent = entry.sent;
                    response.stamps.done = Some(at);
                    scheduler.handle_completion(at, id, Outcome::Cancelled)?;
                    if let Some(identity) = identity(scheduler, id) {
                        sink.record(&RequestRecord::new(identity, &response))
                            .map_err(LiveError::Sink)?;
                    }
                    progress.done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if outstanding == 0 && scheduler.is_finished() {
            break;
        }
        if rx.is_empty() {
            sink.flush().map_err(LiveError::Sink)?;
        }
        let deadline = scheduler.poll_timeout();
        tokio::select! {
            biased;
            event = rx.recv() => {
                let Some(event) = event else { break };
                match event {
                    TaskEvent::Sent { id, at } => {
                        if let Some(Some(entry)) = inflight.get_mut(id as usize) {
                            entry.sent = Some(at);
                            sent_not_done += 1;
                            observed_peak = observed_peak.max(sent_not_done);
                            scheduler.handle_sent(at, id)?;
                            progress.sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    TaskEvent::Done { id, response } => {
                        let Some(entry) = inflight.get_mut(id as usize).and_then(Option::take) else {
                            continue;
                        };
                        if entry.sent.is_some() {
                            sent_not_done = sent_not_done.saturating_sub(1);
                        }
                        outstanding -= 1;
                        progress.inflight.store(outstanding, Ordering::Relaxed);
                        let at = response.stamps.done.unwrap_or_else(now);
                        let outcome = match &response.error {
                            None => Outcome::Ok,
                            // The prompt no longer fits: later turns of the
                            // conversation would not either.
                            Some(e) if e.category == ErrorCategory::ContextOverflow => Outcome::EndTrajectory,
                            Some(_) => Outcome::Failed,
                        };
                        scheduler.handle_completion(at, id, outcome)?;
                        let root_warmup = scheduler.aborted() == Some(id);
                        if response.error.is_some() {
                            progress.errors.fetch_add(1, Ordering::Relaxed);
                        }
                        progress.done.fetch_add(1, Ordering::Relaxed);
                        if let Some(identity) = identity(scheduler, id) {
                            let tree = identity.tree.clone();
                            sink.record(&RequestRecord::new(identity, &response)).map_err(LiveError::Sink)?;
                            if let (true, Some(e)) = (root_warmup, &response.error) {
                                return Err(LiveError::WarmupFailed {
                                    tree,
                                    message: e.message.chars().take(200).collect(),
                                });
                            }
                        }
                    }
                }
            }
            _ = async {
                match deadline {
                    Some(d) => sleep_precisely(epoch, d).await,
                    None => std::future::pending::<()>().await,
                }
            } => {
                scheduler.handle_timeout(now())?;
            }
            _ = &mut stop, if !cancelled => {
                cancelled = true;
                scheduler.handle_stop(now())?;
            }
        }
    }
    sink.flush().map_err(LiveError::Sink)?;
    let prebuilt_bodies = lock(&prebuilt).used;
    Ok(RunOutcome {
        cancelled,
        elapsed: now(),
        observed_peak_inflight: observed_peak,
        prebuilt_bodies,
    })
}

/// What a request's body is made of.
#[derive(Debug, Clone)]
struct TurnBody {
    tree: usize,
    agent: usize,
    /// Turn within its agent.
    turn: usize,
    /// Output tokens asked for (1 for a warmup: prefill only).
    osl: u32,
    warmup: bool,
    /// The play's cache-bust marker, when busting.
    marker: Option<String>,
}

impl TurnBody {
    fn body(&self, workload: &Workload, config: &BodyConfig) -> Vec<u8> {
        match workload.trees.get(self.tree) {
            Some(tree) => build_turn_body(
                config,
                tree,
                self.agent,
                self.turn,
                self.osl,
                self.marker.as_deref(),
            ),
            None => Vec::new(),
        }
    }
}

fn locate(scheduler: &Scheduler, id: RequestId, config: &LiveConfig) -> Option<TurnBody> {
    let (tree, play, turn) = scheduler.request_tree(id)?;
    let t = turn as usize;
    let warmup = scheduler.slot(id)?.warmup;
    Some(TurnBody {
        tree: play.tree as usize,
        agent: tree.agent_of[t] as usize,
        turn: tree.index_in_agent[t] as usize,
        osl: if warmup { 1 } else { tree.osl[t] },
        warmup,
        marker: config
            .cache_bust
            .then(|| prompt::cache_bust_marker(config.seed, play)),
    })
}

fn lock(store: &Mutex<Prebuilt>) -> std::sync::MutexGuard<'_, Prebuilt> {
    store
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Builds, in a task of its own, the bodies of the turns that request `id`
/// leads to and that are still waiting: they will be ready when those
/// turns become eligible. The build starts when the returned sender fires
/// (request `id`'s response head is in) or is dropped: not while the
/// server is taking the request in, whose wake-up a busy client core would
/// delay (on a machine shared with the server).
fn build_ahead(
    scheduler: &Scheduler,
    id: RequestId,
    config: &LiveConfig,
    prebuilt: &Arc<Mutex<Prebuilt>>,
    workload: &Arc<Workload>,
    body_config: &Arc<BodyConfig>,
) -> Option<oneshot::Sender<()>> {
    let (tree, play, turn) = scheduler.request_tree(id)?;
    let mut ahead = Vec::new();
    for edge in tree.out(turn) {
        let Some(next) = play.request(edge.to) else {
            continue;
        };
        let waiting = scheduler
            .slot(next)
            .is_some_and(|s| matches!(s.state, TurnState::Blocked | TurnState::Timer) && !s.warmup);
        // A short prompt is built in microseconds: not worth a task.
        let large = tree.isl[edge.to as usize] >= prebuild::MIN_TOKENS;
        if !waiting || !large || !lock(prebuilt).claim(next) {
            continue;
        }
        if let Some(body) = locate(scheduler, next, config) {
            ahead.push((next, body));
        }
    }
    if ahead.is_empty() {
        return None;
    }
    let prebuilt = Arc::clone(prebuilt);
    let workload = Arc::clone(workload);
    let body_config = Arc::clone(body_config);
    let (start, started) = oneshot::channel();
    tokio::spawn(async move {
        let _ = started.await;
        for (next, turn) in ahead {
            let body = turn.body(&workload, &body_config);
            lock(&prebuilt).finish(next, body);
            tokio::task::yield_now().await;
        }
    });
    Some(start)
}
