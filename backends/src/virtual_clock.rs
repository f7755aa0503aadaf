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
//! Must not: read a clock, or decide anything the scheduler decides.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler, TurnState};
use arbor_engine::time::Nanos;
use arbor_engine::EngineError;
use arbor_sim::{ServiceModel, ServiceRequest};

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
        let completion_first = match (next_completion, next_timer) {
            (None, None) => break,
            (Some(at), Some(t)) => at <= t,
            (Some(_), None) => true,
            (None, Some(_)) => false,
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
