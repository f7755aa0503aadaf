//! The virtual-clock driver: the scheduler plus a service model, no I/O.
//!
//! Owns the one virtual driver loop: it turns dispatch commands into
//! completions at `now + service_time` and jumps the clock to the next
//! event. Order at equal times: completions first (in request-id order),
//! then timers, as the scheduler's documentation requires.
//!
//! [`run`] drives a scheduler with one of sim's [`ServiceModel`]s (what
//! `arbor plan` does, and `arbor run` for the plan it reports beside the
//! live run). [`run_with`] is the same loop with [`Hooks`]: a service
//! function of the whole [`Request`] (the property tests use a seeded
//! random per-request model), a view of every [`Call`] the loop makes to
//! the engine, and a hook before every step that may make extra calls or
//! end the run (the misuse property, a step bound). Hooks are a generic
//! parameter, so the plain [`run`] compiles to the loop with no hook calls
//! at all.
//!
//! [`run_server`] drives a scheduler with sim's batching
//! [`ServerModel`] instead of a per-request model: a dispatch is submitted
//! to the model with its prompt's prefix block keys, a completion is the
//! model's `Done`, and the model's clock and the scheduler's timers
//! interleave (completions first at equal times, as in [`run`]). Its
//! signature:
//!
//! ```text
//! run_server(scheduler: &mut Scheduler, prompts: impl Into<Prompts>, server: &mut ServerModel,
//!            out: &mut Vec<Predicted>) -> Result<Nanos, EngineError>
//! ```
//!
//! where `Prompts { workload: &Workload, cache_bust: Option<CacheBust>,
//! keys: Option<&WorkloadKeys> }`, and a plain `&Workload` is `Prompts`
//! without the cache-bust marker or stored keys.
//!
//! Block keys come from the workload's trees (`arbor_sim::server::keys`),
//! or, without the cache-bust marker, from `keys` when given (every
//! turn's keys computed once for the workload: what a capacity search
//! shares across its points; `arbor_sim::server::workload_keys`):
//! the keys of the text the live client sends for the turn (synthesized
//! from hash ids or virtual blocks, or recorded), exactly the keys the
//! emulator computes from that body; with `cache_bust` the text carries
//! each play's cache-bust marker (and the model counts its tokens), as
//! the live client's marker keeps plays apart. Computed per request, a
//! turn's keys extend those of its agent's previous turn in the same play
//! when that was the agent's last dispatched turn (`crate::agent_keys`:
//! only the words past their shared blocks are hashed; the same keys).
//! [`run_server_observed`] is the same loop with a view of the model's
//! gauges after every step (what `plan`'s series are built from).
//!
//! Must not: read a clock, or decide anything the scheduler decides.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

use arbor_engine::prompt::CacheBust;
use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler, TurnState};
use arbor_engine::time::Nanos;
use arbor_engine::{EngineError, Workload};
use arbor_sim::server::keys::marker_tokens;
use arbor_sim::server::{Gauges, ModelEvent, ModelRequest, ServerModel};
use arbor_sim::{ServiceModel, ServiceRequest, WorkloadKeys};

use crate::agent_keys::AgentKeys;

/// A request the loop has just sent: what a service function may look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub id: RequestId,
    /// Index of its play's tree in the workload.
    pub tree: u32,
    /// Its flat turn index within the tree.
    pub turn: u32,
    /// What a service model sees. A warmup asks for one token (prefill
    /// only) and has no recorded time to give (0).
    pub service: ServiceRequest,
}

/// One call the loop makes to the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Timeout(Nanos),
    Sent(Nanos, RequestId),
    Completion(Nanos, RequestId, Outcome),
}

impl Call {
    /// The time the call carries.
    pub fn time(self) -> Nanos {
        match self {
            Call::Timeout(t) | Call::Sent(t, _) | Call::Completion(t, _, _) => t,
        }
    }
}

/// What a caller of [`run_with`] plugs into the loop.
pub trait Hooks {
    /// How long `request` takes, from the time it is sent.
    fn service_time(&mut self, request: &Request) -> Nanos;

    /// Sees every call the loop makes to the engine, just before it is
    /// made (not the calls [`Hooks::before_step`] makes itself).
    fn call(&mut self, _call: Call) {}

    /// Runs before every step of the loop (a step: drain the commands, then
    /// one completion or one timer), `step` counting from 0. It may make
    /// calls of its own on `scheduler` at `now`; `Break` ends the run there.
    fn before_step(
        &mut self,
        _scheduler: &mut Scheduler,
        _now: Nanos,
        _step: usize,
    ) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// The plain loop's hooks: a shipped model, nothing else.
struct Model<'a>(&'a ServiceModel);

impl Hooks for Model<'_> {
    #[inline]
    fn service_time(&mut self, request: &Request) -> Nanos {
        self.0.service_time(&request.service)
    }
}

/// Runs the scheduler to the end with `model` deciding service times.
/// Returns the final virtual time.
pub fn run(scheduler: &mut Scheduler, model: &ServiceModel) -> Result<Nanos, EngineError> {
    run_with(scheduler, &mut Model(model))
}

/// The request `id` as the loop sends it.
pub fn request(scheduler: &Scheduler, id: RequestId) -> Result<Request, EngineError> {
    let (tree, play, turn) = scheduler
        .request_tree(id)
        .ok_or(EngineError::UnknownRequest(id))?;
    let t = turn as usize;
    let warmup = scheduler.slot(id).is_some_and(|s| s.warmup);
    Ok(Request {
        id,
        tree: play.tree,
        turn,
        service: ServiceRequest {
            isl: tree.isl[t],
            osl: if warmup { 1 } else { tree.osl[t] },
            recorded: if warmup { 0 } else { tree.duration[t] },
        },
    })
}

/// Whether the next step is a completion (true) or a timer (false): the
/// earlier one, a completion at equal times; `None` when neither is due.
#[inline]
fn completion_first(completion: Option<Nanos>, timer: Option<Nanos>) -> Option<bool> {
    match (completion, timer) {
        (None, None) => None,
        (Some(at), Some(t)) => Some(at <= t),
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
    }
}

/// Runs the scheduler to the end (or until `hooks` ends it) with `hooks`
/// deciding service times and watching. Returns the final virtual time.
pub fn run_with<H: Hooks>(scheduler: &mut Scheduler, hooks: &mut H) -> Result<Nanos, EngineError> {
    let mut completions: BinaryHeap<Reverse<(Nanos, RequestId)>> = BinaryHeap::new();
    let mut now: Nanos = 0;
    for step in 0.. {
        if hooks.before_step(scheduler, now, step).is_break() {
            break;
        }
        while let Some(command) = scheduler.poll_command() {
            match command {
                Command::Dispatch(id) => {
                    hooks.call(Call::Sent(now, id));
                    scheduler.handle_sent(now, id)?;
                    let request = request(scheduler, id)?;
                    let done = now.saturating_add(hooks.service_time(&request));
                    completions.push(Reverse((done, id)));
                }
                Command::Cancel(id) => {
                    // The scheduler only cancels what is in flight; the
                    // heap entry becomes stale and is skipped below.
                    hooks.call(Call::Completion(now, id, Outcome::Cancelled));
                    scheduler.handle_completion(now, id, Outcome::Cancelled)?;
                }
            }
        }
        let next_completion = completions.peek().map(|Reverse((at, _))| *at);
        let next_timer = scheduler.poll_timeout();
        let Some(completion_first) = completion_first(next_completion, next_timer) else {
            break;
        };
        if completion_first {
            let Some(Reverse((at, id))) = completions.pop() else {
                break;
            };
            let in_flight = scheduler
                .slot(id)
                .is_some_and(|s| s.state == TurnState::Sent);
            if in_flight {
                now = now.max(at);
                hooks.call(Call::Completion(now, id, Outcome::Ok));
                scheduler.handle_completion(now, id, Outcome::Ok)?;
            }
        } else if let Some(t) = next_timer {
            now = now.max(t);
            hooks.call(Call::Timeout(now));
            scheduler.handle_timeout(now)?;
        }
    }
    Ok(now)
}

/// One request as the server model served it on the virtual clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predicted {
    pub id: RequestId,
    /// Index of its play's tree in the workload.
    pub tree: u32,
    pub play: u32,
    /// Its flat turn index within the tree.
    pub turn: u32,
    pub warmup: bool,
    pub sent: Nanos,
    pub first_token: Nanos,
    pub done: Nanos,
    /// Prompt and output tokens as sent (a warmup asks for one).
    pub isl: u32,
    pub osl: u32,
    /// Prompt tokens the model's prefix cache served.
    pub cached_tokens: u32,
}

/// Where the prompts' block keys come from.
#[derive(Debug, Clone, Copy)]
pub struct Prompts<'a> {
    /// The workload the scheduler's trees were compiled from (same order).
    pub workload: &'a Workload,
    /// Each play's prompts carry its cache-bust marker (`--cache-bust`),
    /// from this seed and salt; `None`: no markers.
    pub cache_bust: Option<CacheBust>,
    /// Every turn's keys, computed once for `workload` (used without the
    /// marker, when their block size is the model's).
    pub keys: Option<&'a WorkloadKeys>,
}

impl<'a> From<&'a Workload> for Prompts<'a> {
    fn from(workload: &'a Workload) -> Self {
        Prompts {
            workload,
            cache_bust: None,
            keys: None,
        }
    }
}

/// Runs the scheduler to the end with the batching server model deciding
/// completions; appends one [`Predicted`] per request that completed, in
/// completion order. Returns the final virtual time.
pub fn run_server<'a>(
    scheduler: &mut Scheduler,
    prompts: impl Into<Prompts<'a>>,
    server: &mut ServerModel,
    out: &mut Vec<Predicted>,
) -> Result<Nanos, EngineError> {
    run_server_observed(scheduler, prompts.into(), server, out, |_, _| {})
}

/// A request submitted to the model, until its first token.
#[derive(Debug, Clone, Copy)]
struct Pending {
    sent: Nanos,
    first_token: Option<(Nanos, u32)>,
}

/// [`run_server`] with `observe(now, gauges)` called after every step of
/// the loop that changed the model (a submission, an advance, a cancel).
pub fn run_server_observed(
    scheduler: &mut Scheduler,
    prompts: Prompts<'_>,
    server: &mut ServerModel,
    out: &mut Vec<Predicted>,
    mut observe: impl FnMut(Nanos, &Gauges),
) -> Result<Nanos, EngineError> {
    let block_size = server.profile().engine.block_size;
    let mut agent_keys = AgentKeys::new(block_size);
    let stored = prompts
        .keys
        .filter(|k| prompts.cache_bust.is_none() && k.block_size() == block_size.max(1));
    // Request ids are dense slot indices: a Vec, never a hash map.
    let mut pending: Vec<Option<Pending>> = Vec::new();
    let mut stored_keys: Vec<u64> = Vec::new();
    let mut events: Vec<ModelEvent> = Vec::new();
    let mut now: Nanos = 0;
    loop {
        let mut changed = false;
        while let Some(command) = scheduler.poll_command() {
            changed = true;
            match command {
                Command::Dispatch(id) => {
                    scheduler.handle_sent(now, id)?;
                    let sent = request(scheduler, id)?;
                    let (tree, play, turn) = scheduler
                        .request_tree(id)
                        .ok_or(EngineError::UnknownRequest(id))?;
                    let agent = tree.agent_of[turn as usize] as usize;
                    let index = tree.index_in_agent[turn as usize] as usize;
                    let marker = prompts.cache_bust.map(|bust| bust.marker(play));
                    let keys: &[u64] =
                        match (stored, prompts.workload.trees.get(play.tree as usize)) {
                            (Some(stored), _) => {
                                stored.turn(play.tree as usize, agent, index, &mut stored_keys);
                                &stored_keys
                            }
                            (None, Some(recorded)) => {
                                let play_index = scheduler.slot(id).map_or(0, |s| s.play);
                                let marker = marker.as_deref();
                                agent_keys.turn(play_index, recorded, agent, index, marker)
                            }
                            (None, None) => &[],
                        };
                    server.submit(
                        now,
                        &ModelRequest {
                            id,
                            // The marker's tokens are sent too.
                            prompt_tokens: sent
                                .service
                                .isl
                                .saturating_add(marker.as_deref().map_or(0, marker_tokens)),
                            output_tokens: sent.service.osl,
                            blocks: keys,
                        },
                    );
                    let slot = id as usize;
                    if pending.len() <= slot {
                        pending.resize(slot + 1, None);
                    }
                    pending[slot] = Some(Pending {
                        sent: now,
                        first_token: None,
                    });
                }
                Command::Cancel(id) => {
                    server.cancel(now, id);
                    if let Some(p) = pending.get_mut(id as usize) {
                        *p = None;
                    }
                    scheduler.handle_completion(now, id, Outcome::Cancelled)?;
                }
            }
        }
        if changed {
            observe(now, &server.gauges());
        }
        let next_model = server.next_event_at();
        let next_timer = scheduler.poll_timeout();
        let Some(model_first) = completion_first(next_model, next_timer) else {
            break;
        };
        if model_first {
            let Some(at) = next_model else { break };
            now = now.max(at);
            events.clear();
            server.advance(now, &mut events);
            for event in &events {
                match *event {
                    ModelEvent::FirstToken {
                        id,
                        at,
                        cached_tokens,
                    } => {
                        if let Some(Some(p)) = pending.get_mut(id as usize) {
                            p.first_token = Some((at, cached_tokens));
                        }
                    }
                    ModelEvent::Done { id, at } => {
                        let Some(p) = pending.get_mut(id as usize).and_then(Option::take) else {
                            continue;
                        };
                        let in_flight = scheduler
                            .slot(id)
                            .is_some_and(|s| s.state == TurnState::Sent);
                        if !in_flight {
                            continue;
                        }
                        let sent = request(scheduler, id)?;
                        let play = scheduler.slot(id).map_or(0, |s| s.play);
                        let warmup = scheduler.slot(id).is_some_and(|s| s.warmup);
                        let (first_token, cached_tokens) = p.first_token.unwrap_or((at, 0));
                        scheduler.handle_completion(at.max(now), id, Outcome::Ok)?;
                        out.push(Predicted {
                            id,
                            tree: sent.tree,
                            play,
                            turn: sent.turn,
                            warmup,
                            sent: p.sent,
                            first_token,
                            done: at,
                            isl: sent.service.isl,
                            osl: sent.service.osl,
                            cached_tokens,
                        });
                    }
                    // Not reported: this model has no token events.
                    ModelEvent::Token { .. } => {}
                }
            }
            observe(now, &server.gauges());
        } else if let Some(t) = next_timer {
            now = now.max(t);
            scheduler.handle_timeout(now)?;
        }
    }
    Ok(now)
}
