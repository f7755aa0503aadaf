//! The live loop: the scheduler's commands become HTTP requests, their
//! events go back to the scheduler.
//!
//! Owns [`run`] and the state it keeps ([`LiveLoop`]: the scheduler, the
//! in-flight table, the counters, the task channel, the bodies, the record
//! sink, the progress counters), with one handler per event: a dispatch, a
//! cancel, a request sent, a request done, a timer, the stop signal. Also
//! owns what a caller hands in and gets back: [`LiveConfig`],
//! [`RecordSink`], [`Progress`], [`RunOutcome`], [`LiveError`].
//!
//! `now` is read from one monotonic clock (the run's epoch; [`run_among`]
//! takes it from the caller, so that the loops of several threads share
//! it, with their request and play numbers from one
//! [`super::numbering::Numbering`]). The loop
//! sends a request itself when a pooled connection is idle; each
//! request's task (on the same thread) sends the rest, reads the answer
//! and reports its final [`Response`] (and `sent`, when the task sent it)
//! over a channel; the loop hands them to the scheduler at the times they
//! were stamped (the scheduler anchors late-heard events at their own
//! time). Records go to the [`RecordSink`] as each request completes and
//! are flushed when no event is at hand, so nothing is lost if the run is
//! interrupted.
//!
//! Timers: tokio's timer wheel has millisecond resolution, so the loop
//! sleeps until shortly before the scheduler's next deadline and then
//! yields until the deadline passes; schedule lag stays well under a
//! millisecond without burning a core.
//!
//! Each request names its conversation as `--session-routing` says
//! (`super::routing`: the agent's key, its parent's, its last turn, the
//! token its agent's latest response issued), and with several endpoints
//! goes to the replica `--placement` picks (`super::placement`); its
//! record names both.
//!
//! A cancel (the grace period ran out) is a signal to the request's task,
//! not an abort: the task owns its [`Response`], stops its exchange and
//! reports the response measured so far (stamps, status, chunks, tokens,
//! attempts), marked `cancelled` at the time of the cancel.
//!
//! Memory is bounded by what is in flight, whatever the run's length: the
//! scheduler forgets finished plays ([`Scheduler::forget_finished`]) and
//! the loop's per-request and per-play tables drop the same prefix
//! ([`IdWindow`]).
//!
//! Must not: allocate, lock or hop a channel per event beyond what a
//! request needs (its body, its task, its cancel signal, its two events),
//! nor stamp anything the request's task stamps (sent, bytes arriving).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use arbor_engine::prompt::CacheBust;
use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler};
use arbor_engine::time::Nanos;
use arbor_engine::window::IdWindow;
use arbor_engine::{EngineError, Workload};

use super::exchange::{execute_into, Target};
use super::history::{History, Store};
use super::numbering::{Numbering, Numbers};
use super::placement::{agent_key_hash, Load, Placement, Placer};
use super::prebuild::Bodies;
use super::request::{Api, BodyConfig};
use super::routing::{agent_key, insert_first, user_field, Session, SessionRouting};
use super::turn::{identity, place, TurnBody};
use crate::reuse::ReusePlan;
use arbor_runs::history::HistoryCounts;
use arbor_runs::journal::Driven;
use arbor_runs::record::{ErrorCategory, RecordSink, RequestRecord, Response};

/// Everything the live driver needs besides the scheduler and workload.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    pub target: Target,
    pub body: BodyConfig,
    /// Connections opened (by `GET /v1/models`) before the clock starts.
    pub warm_connections: usize,
    /// Base URL for warming (`http://host:port`).
    pub base_url: String,
    /// Prepend each play's cache-bust marker to its prompts, from this
    /// seed and salt; `None`: no markers.
    pub cache_bust: Option<CacheBust>,
    /// Where a next turn's history comes from (`--history`).
    pub history: History,
    /// The plan's prefix reuse of every request, put into its record;
    /// `None`: not computed.
    pub reuse: Option<Arc<ReusePlan>>,
    /// Several endpoints (`--endpoint` repeated): the others and how
    /// requests are placed; `None` with one (`target` takes every
    /// request, and records name no replica).
    pub replicas: Option<Replicas>,
}

/// The endpoints after the first, and how requests are spread over them
/// all (docs/routing.md).
#[derive(Debug, Clone)]
pub struct Replicas {
    /// Replicas 1.. (replica 0 is [`LiveConfig::target`]), each with its
    /// own pool.
    pub more: Vec<Target>,
    /// Their base URLs, in the same order (for warming their pools).
    pub more_base_urls: Vec<String>,
    pub placement: Placement,
    /// Requests in flight per replica and the round-robin turn, shared by
    /// every loop of the process.
    pub load: Arc<Load>,
    /// The run's seed and this loop's number: its `random` stream.
    pub seed: u64,
    pub stream: u64,
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
    /// Under `--history live`: turns built from generated text, and
    /// turns that kept the recorded answer.
    pub history: Option<HistoryCounts>,
}

impl RunOutcome {
    /// What `end.json` keeps of it.
    pub fn driven(&self) -> Driven {
        Driven {
            cancelled: self.cancelled,
            elapsed: self.elapsed,
            observed_peak: self.observed_peak_inflight,
            history: self.history,
        }
    }
}

/// Why a live run stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("engine: {0}")]
    Engine(#[from] EngineError),
    #[error("cannot write a record: {0}")]
    Sink(#[source] std::io::Error),
    /// A root agent's warmup failed: the run cannot measure what it meant
    /// to (the AgentX recipe aborts).
    #[error("the warmup of tree `{tree}`'s root agent failed ({message}): the run is aborted")]
    WarmupFailed { tree: String, message: String },
}

/// Opens connections before the clock starts, so the first requests do not
/// pay for connecting: how many the server proved (see [`Target::warm`]).
/// With several endpoints, each replica's pool gets an even share.
///
/// [`Target::warm`]: super::exchange::Target::warm
pub async fn warm_pool(config: &LiveConfig) -> usize {
    let Some(replicas) = &config.replicas else {
        return warm_one_pool(&config.target, &config.base_url, config.warm_connections).await;
    };
    let share = config
        .warm_connections
        .div_ceil(replicas.more.len() + 1)
        .max(1);
    let mut proven = warm_one_pool(&config.target, &config.base_url, share).await;
    for (target, base) in replicas.more.iter().zip(&replicas.more_base_urls) {
        proven += warm_one_pool(target, base, share).await;
    }
    proven
}

/// Warms `connections` of `target`'s pool, whose base URL is `base`.
async fn warm_one_pool(target: &Target, base: &str, connections: usize) -> usize {
    let base = base.trim_end_matches('/');
    let base_path = base
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("");
    target
        .warm(connections, &format!("{base_path}/v1/models"))
        .await
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
    let alone = Among {
        epoch: Instant::now(),
        numbering: None,
    };
    run_among(alone, scheduler, workload, config, sink, progress, stop).await
}

/// Where a loop stands among the loops of one process.
#[derive(Debug, Clone)]
pub struct Among {
    /// The run's clock origin, shared by every loop.
    pub epoch: Instant,
    /// The process's request and play numbers; `None`: the scheduler's
    /// own (one loop).
    pub numbering: Option<Arc<Numbering>>,
}

/// [`run`] as one of several loops of a process: from the shared epoch,
/// with requests and plays numbered in the process (the ids sent in the
/// request-id header and recorded).
pub async fn run_among<S: RecordSink>(
    among: Among,
    scheduler: &mut Scheduler,
    workload: Arc<Workload>,
    config: &LiveConfig,
    sink: &mut S,
    progress: &Progress,
    stop: impl Future<Output = ()>,
) -> Result<RunOutcome, LiveError> {
    let (tx, rx) = mpsc::unbounded_channel();
    // The loop reads a request only between its dispatch and the call
    // after its completion (its record): finished plays can go.
    scheduler.forget_finished(Scheduler::FORGET_BATCH);
    let mut inflight = IdWindow::default();
    inflight.drop_finished(Scheduler::FORGET_BATCH);
    let mut targets = vec![Arc::new(config.target.clone())];
    let placer = config.replicas.as_ref().map(|r| {
        targets.extend(r.more.iter().cloned().map(Arc::new));
        let rng = arbor_engine::rng::stream(
            r.seed,
            arbor_engine::rng::Purpose::Placement,
            0,
            0,
            r.stream,
        );
        Placer::new(r.placement, Arc::clone(&r.load), rng)
    });
    let live = LiveLoop {
        epoch: among.epoch,
        numbers: among.numbering.map(Numbers::new),
        scheduler,
        routing: config.target.routing.clone(),
        messages: config.body.api == Api::Messages,
        targets,
        placer,
        agent_turns: BTreeMap::new(),
        tokens: BTreeMap::new(),
        bodies: Bodies::new(workload, config.body.clone(), config.cache_bust)
            .with_live_history(config.history == History::Live),
        history: (config.history == History::Live).then(Store::default),
        tx,
        inflight,
        outstanding: 0,
        sent_not_done: 0,
        observed_peak: 0,
        cancelled: false,
        sink,
        progress,
        reuse: config.reuse.clone(),
    };
    live.run(rx, stop).await
}

/// What a request's task tells the loop.
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
    /// Tells the request's task to stop, with the time of the cancel
    /// (taken once sent).
    cancel: Option<oneshot::Sender<Nanos>>,
    sent: Option<Nanos>,
    /// Where it went and whose it is.
    placed: Placed,
}

/// A request's replica and conversation.
#[derive(Debug, Clone, Copy, Default)]
struct Placed {
    /// Its index among the endpoints (0 with one).
    replica: u32,
    /// Its play's number (the record's `play`) and its agent's index in
    /// the tree, when known.
    agent: Option<(u32, u32)>,
    /// Its agent's last turn.
    last: bool,
    /// The index of its play's root agent (the agent with no parent
    /// above its own): sticky placement keys a conversation by it, so a
    /// subagent goes where its parent is and reuses the prefix it shares
    /// with it (docs/routing.md).
    root: u32,
}

/// The root of `agent` in a tree whose agents' parents are `parents`
/// (`u32::MAX`: none): up the parents, at most once per agent (a parent
/// list with a cycle, which a compiled tree never has, stops there).
fn root_of(parents: &[u32], agent: u32) -> u32 {
    let mut at = agent;
    for _ in 0..parents.len() {
        match parents.get(at as usize) {
            Some(&p) if p != u32::MAX => at = p,
            _ => break,
        }
    }
    at
}

/// The live loop's state between events.
struct LiveLoop<'a, S> {
    /// The run's clock origin: every `now` and every stamp counts from it.
    epoch: Instant,
    /// The process's numbers, when other loops share it.
    numbers: Option<Numbers>,
    scheduler: &'a mut Scheduler,
    /// How requests say which conversation they belong to.
    routing: SessionRouting,
    /// Bodies speak the Messages API (`user` goes in `metadata`).
    messages: bool,
    /// The endpoints: one, or the replicas in order.
    targets: Vec<Arc<Target>>,
    /// With several endpoints: which one a request goes to.
    placer: Option<Placer>,
    /// Turns of each agent, by tree index (for an agent's last turn; only
    /// kept when the routing needs it).
    agent_turns: BTreeMap<u32, Vec<u32>>,
    /// `token`: per (play, agent), the token of the agent's latest
    /// response, until its last turn is sent.
    tokens: BTreeMap<(u32, u32), String>,
    bodies: Bodies,
    /// Under `--history live`: what each agent's last turn sent and got.
    history: Option<Store>,
    /// Given (cloned) to every request's task.
    tx: mpsc::UnboundedSender<TaskEvent>,
    /// By request id: the requests dispatched and not yet done (from the
    /// scheduler's first request id on; those below are all done).
    inflight: IdWindow<Option<InFlight>>,
    /// Requests dispatched and not yet done (the entries of `inflight`).
    outstanding: u64,
    /// Requests sent and not yet done.
    sent_not_done: u64,
    /// The most `sent_not_done` has been.
    observed_peak: u64,
    /// The stop signal came.
    cancelled: bool,
    sink: &'a mut S,
    progress: &'a Progress,
    /// The plan's prefix reuse, looked up by each record.
    reuse: Option<Arc<ReusePlan>>,
}

impl<S: RecordSink> LiveLoop<'_, S> {
    /// Drain the commands, then wait for the next event: a task's, a timer,
    /// or the stop signal.
    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<TaskEvent>,
        stop: impl Future<Output = ()>,
    ) -> Result<RunOutcome, LiveError> {
        tokio::pin!(stop);
        loop {
            while let Some(command) = self.scheduler.poll_command() {
                match command {
                    Command::Dispatch(id) => self.on_dispatch(id)?,
                    Command::Cancel(id) => self.on_cancel(id)?,
                }
            }
            if self.outstanding == 0 && self.scheduler.is_finished() {
                break;
            }
            if rx.is_empty() {
                self.sink.flush().map_err(LiveError::Sink)?;
            }
            let deadline = self.scheduler.poll_timeout();
            let epoch = self.epoch;
            tokio::select! {
                biased;
                event = rx.recv() => match event {
                    Some(TaskEvent::Sent { id, at }) => self.on_sent(id, at)?,
                    Some(TaskEvent::Done { id, response }) => self.on_done(id, &response)?,
                    None => break,
                },
                _ = async {
                    match deadline {
                        Some(d) => sleep_precisely(epoch, d).await,
                        None => std::future::pending::<()>().await,
                    }
                } => self.on_timer()?,
                _ = &mut stop, if !self.cancelled => self.on_stop()?,
            }
        }
        self.sink.flush().map_err(LiveError::Sink)?;
        Ok(RunOutcome {
            cancelled: self.cancelled,
            elapsed: self.now(),
            observed_peak_inflight: self.observed_peak,
            prebuilt_bodies: self.bodies.used(),
            history: self.history.as_ref().map(Store::counts),
        })
    }

    /// Request `id`'s numbers in the process, when other loops share it.
    fn number(&mut self, id: RequestId) -> Option<super::numbering::Number> {
        self.numbers.as_mut()?.of(self.scheduler, id)
    }

    /// Request `id`'s session (`None` when nothing needs it: no routing
    /// key, one endpoint) and its conversation, in play `play` (the
    /// process's number; `None`: the scheduler's). The token to echo is
    /// its agent's latest; an agent's last turn takes it out.
    fn session(&mut self, id: RequestId, play: Option<u32>) -> (Option<Session>, Placed) {
        let mut placed = Placed::default();
        if !self.routing.keyed() && self.placer.is_none() {
            return (None, placed);
        }
        let Some(slot) = self.scheduler.slot(id) else {
            return (None, placed);
        };
        let (play, warmup) = (play.unwrap_or(slot.play), slot.warmup);
        let Some((tree, p, turn)) = self.scheduler.request_tree(id) else {
            return (None, placed);
        };
        let t = turn as usize;
        let agent = tree.agent_of[t];
        let parent = tree.agent_parent[agent as usize];
        let last = self.routing.needs_last() && !warmup && {
            let turns = self.agent_turns.entry(p.tree).or_insert_with(|| {
                let mut turns = vec![0u32; tree.agent_count as usize];
                for &a in &tree.agent_of {
                    turns[a as usize] += 1;
                }
                turns
            });
            tree.index_in_agent[t] + 1 == turns[agent as usize]
        };
        let token = match last {
            true => self.tokens.remove(&(play, agent)),
            false => self.tokens.get(&(play, agent)).cloned(),
        };
        placed.agent = Some((play, agent));
        placed.last = last;
        placed.root = root_of(&tree.agent_parent, agent);
        let session = Session {
            play,
            agent,
            parent: (parent != u32::MAX).then_some(parent),
            last,
            token,
        };
        (Some(session), placed)
    }

    /// Nanoseconds since the epoch.
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    /// `Dispatch(id)`: send the request from here when a connection is idle
    /// (no wait behind the other tasks of this thread), and spawn its task
    /// (which sends it otherwise, then reads the answer).
    fn on_dispatch(&mut self, id: RequestId) -> Result<(), LiveError> {
        let Some(turn) = self.bodies.turn(self.scheduler, id) else {
            return Ok(());
        };
        let live = self.live_body(id, &turn);
        // The generated text is kept only when a next turn reads it.
        let capture = live.as_ref().is_some_and(|(_, capture)| *capture);
        let mut body = match live {
            Some((Some(body), _)) => body,
            _ => self.bodies.take(id, &turn),
        };
        let epoch = self.epoch;
        let number = self.number(id);
        let wire = number.map_or(id, |n| n.request);
        let (session, mut placed) = self.session(id, number.map(|n| n.play));
        if self.routing == SessionRouting::User {
            if let Some(s) = &session {
                insert_first(&mut body, &user_field(self.messages, &s.key()));
            }
        }
        if let Some(placer) = &mut self.placer {
            let key = match placed.agent {
                Some((play, _)) => agent_key_hash(play, placed.root),
                None => 0,
            };
            placed.replica = placer.place(key) as u32;
        }
        let target = Arc::clone(&self.targets[placed.replica as usize]);
        let started = target.send_now_in(wire, &body, epoch, session.as_ref());
        let sent_now = started.as_ref().map(|s| s.sent());
        let tx = self.tx.clone();
        let head_tx = self.bodies.build_ahead(self.scheduler, id);
        let (cancel, cancelled) = oneshot::channel::<Nanos>();
        tokio::spawn(async move {
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
            let mut response = Response::default();
            if capture {
                response.generated = Some(String::with_capacity(osl * 8));
            }
            let cancelled_at = {
                let exchange = execute_into(
                    &mut response,
                    &target,
                    &body,
                    wire,
                    epoch,
                    osl,
                    started,
                    session.as_ref(),
                    on_sent,
                    on_head,
                );
                tokio::pin!(exchange);
                // A dropped sender (the loop is gone) disables the branch.
                tokio::select! {
                    biased;
                    () = &mut exchange => None,
                    Ok(at) = cancelled => Some(at),
                }
            };
            // The exchange is dropped (its connection closed); what it
            // measured stays.
            if let Some(at) = cancelled_at {
                response.cancel(at);
            }
            let _ = tx.send(TaskEvent::Done {
                id,
                response: Box::new(response),
            });
        });
        let first = u32::try_from(self.scheduler.first_request()).unwrap_or(u32::MAX);
        self.inflight.forget_below(first);
        // Request ids are u32 slot numbers, at or past the scheduler's
        // first (`id` is in flight there).
        if let Some(entry) = u32::try_from(id).ok().and_then(|i| self.inflight.entry(i)) {
            *entry = Some(InFlight {
                cancel: Some(cancel),
                sent: sent_now,
                placed,
            });
        }
        self.outstanding += 1;
        self.progress.inflight.fetch_add(1, Ordering::Relaxed);
        match sent_now {
            Some(at) => self.sent(id, at),
            None => Ok(()),
        }
    }

    /// `Cancel(id)` (the grace ran out): tell the request's task to stop
    /// now; it reports what it measured, marked cancelled, as its `Done`
    /// (handled by [`Self::on_done`]).
    fn on_cancel(&mut self, id: RequestId) -> Result<(), LiveError> {
        let at = self.now();
        if let Some(entry) = self.entry(id) {
            if let Some(cancel) = entry.cancel.take() {
                let _ = cancel.send(at);
            }
        }
        Ok(())
    }

    /// A request's task sent it at `at`.
    fn on_sent(&mut self, id: RequestId, at: Nanos) -> Result<(), LiveError> {
        let Some(entry) = self.entry(id) else {
            return Ok(());
        };
        entry.sent = Some(at);
        self.sent(id, at)
    }

    /// A request's task is done: the response's last byte arrived, or it
    /// failed. A failed warmup of a root agent aborts the run (the engine
    /// says so: `aborted()`).
    fn on_done(&mut self, id: RequestId, response: &Response) -> Result<(), LiveError> {
        let Some(entry) = self.take_inflight(id) else {
            return Ok(());
        };
        let placed = entry.placed;
        if let Some(placer) = &self.placer {
            placer.load().done(placed.replica as usize);
        }
        if let (Some(token), Some(agent), false) =
            (&response.session_token, placed.agent, placed.last)
        {
            self.tokens.insert(agent, token.clone());
        }
        self.heard(id, response);
        let at = response.stamps.done.unwrap_or_else(|| self.now());
        let outcome = match &response.error {
            None => Outcome::Ok,
            Some(e) if e.category == ErrorCategory::Cancelled => Outcome::Cancelled,
            // The prompt no longer fits: later turns of the conversation
            // would not either.
            Some(e) if e.category == ErrorCategory::ContextOverflow => Outcome::EndTrajectory,
            Some(_) => Outcome::Failed,
        };
        self.scheduler.handle_completion(at, id, outcome)?;
        let root_warmup = self.scheduler.aborted() == Some(id);
        if response.error.is_some() && outcome != Outcome::Cancelled {
            self.progress.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.progress.done.fetch_add(1, Ordering::Relaxed);
        if !self.record(id, response, placed)? {
            return Ok(());
        }
        match (
            root_warmup,
            &response.error,
            self.scheduler.request_tree(id),
        ) {
            (true, Some(e), Some((tree, _, _))) => Err(LiveError::WarmupFailed {
                tree: tree.id.clone(),
                message: e.message.chars().take(200).collect(),
            }),
            _ => Ok(()),
        }
    }

    /// Under `--history live`, request `id`'s body when it is built from
    /// its agent's previous turn (`None` inside: the recorded body), and
    /// whether its answer is to be kept; `None` otherwise (and for a
    /// warmup, whose answer is one token).
    fn live_body(&mut self, id: RequestId, turn: &TurnBody) -> Option<(Option<Vec<u8>>, bool)> {
        let history = self.history.as_mut()?;
        if turn.warmup {
            return None;
        }
        history.forget_below(self.scheduler.first_play());
        let place = turn.place(self.scheduler.slot(id)?.play);
        let workload = self.bodies.workload();
        let body = history.body(
            workload,
            self.bodies.config(),
            place,
            turn.osl,
            turn.marker(),
        );
        Some((body, Store::has_next(workload, place)))
    }

    /// Request `id`'s answer, kept for its agent's next turn under
    /// `--history live`.
    fn heard(&mut self, id: RequestId, response: &Response) {
        let Some(history) = self.history.as_mut() else {
            return;
        };
        if let Some(place) = place(self.scheduler, id) {
            history.answered(place, response);
        }
    }

    /// The scheduler's next deadline passed.
    fn on_timer(&mut self) -> Result<(), LiveError> {
        self.scheduler.handle_timeout(self.now())?;
        Ok(())
    }

    /// The caller's stop signal: no new sends; in-flight requests get the
    /// grace.
    fn on_stop(&mut self) -> Result<(), LiveError> {
        self.cancelled = true;
        self.scheduler.handle_stop(self.now())?;
        Ok(())
    }

    /// Request `id` went on the wire at `at`.
    fn sent(&mut self, id: RequestId, at: Nanos) -> Result<(), LiveError> {
        self.sent_not_done += 1;
        self.observed_peak = self.observed_peak.max(self.sent_not_done);
        self.scheduler.handle_sent(at, id)?;
        self.progress.sent.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Request `id`'s entry in the in-flight table, if it is in flight.
    fn entry(&mut self, id: RequestId) -> Option<&mut InFlight> {
        self.slot(id)?.as_mut()
    }

    /// Request `id`'s place in the in-flight table (`None` below its base).
    fn slot(&mut self, id: RequestId) -> Option<&mut Option<InFlight>> {
        self.inflight.get_mut(u32::try_from(id).ok()?)
    }

    /// Takes request `id` out of the in-flight table (`None`: it was not
    /// in flight) and counts it out.
    fn take_inflight(&mut self, id: RequestId) -> Option<InFlight> {
        let entry = self.slot(id)?.take()?;
        if entry.sent.is_some() {
            self.sent_not_done = self.sent_not_done.saturating_sub(1);
        }
        self.outstanding -= 1;
        self.progress.inflight.fetch_sub(1, Ordering::Relaxed);
        Some(entry)
    }

    /// Hands request `id`'s record to the sink; false when the scheduler
    /// does not know the request (nothing recorded).
    fn record(
        &mut self,
        id: RequestId,
        response: &Response,
        placed: Placed,
    ) -> Result<bool, LiveError> {
        let Some(mut identity) = identity(self.scheduler, id) else {
            return Ok(false);
        };
        if let Some(number) = self.number(id) {
            identity.request = number.request;
            identity.play = number.play;
        }
        if self.placer.is_some() {
            identity.replica = Some(placed.replica);
        }
        if self.routing.keyed() {
            identity.session_key = placed.agent.map(|(play, agent)| agent_key(play, agent));
        }
        let mut record = RequestRecord::new(identity, response);
        if let Some(planned) = self
            .reuse
            .as_ref()
            .and_then(|p| p.lookup(self.scheduler, id))
        {
            record.reuse_best_tokens = Some(planned.best);
            record.reuse_predicted_tokens = planned.predicted;
            record.reuse_gap_s = planned.gap.map(arbor_engine::time::nanos_to_secs);
        }
        self.sink.record(&record).map_err(LiveError::Sink)?;
        Ok(true)
    }
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
