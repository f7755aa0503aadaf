//! A virtual-clock driver for the properties.
//!
//! It follows `arbor_backends::virtual_clock::run` step for step (the
//! property `test_driver_agrees_with_the_shipped_driver` checks it), with two
//! additions: the service time of a request is any function of the request
//! (so a seeded random per-request model is possible), and every call made
//! to the engine is recorded in a [`Trace`], so properties can check time
//! monotonicity, the in-flight count seen from outside, and termination.
//! A hook may make extra calls (bad ones, for the misuse property) before
//! every step.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use arbor_engine::rng::{stream, Purpose};
use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler, TurnState};
use arbor_engine::time::{Nanos, NANOS_PER_MS};
use arbor_sim::{ServiceModel, ServiceRequest};
use rand::Rng;

/// What a service function may look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Req {
    pub id: RequestId,
    pub tree: u32,
    pub turn: u32,
    pub isl: u32,
    pub osl: u32,
    /// Recorded duration (unknown: 0).
    pub recorded: Nanos,
}

/// A service model for the properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// One of the shipped models (`recorded`, `fixed`, `throughput`).
    Model(ServiceModel),
    /// Per-request durations drawn uniformly from `0..=max` by a seeded
    /// stream keyed by the request id: random, but deterministic.
    Random { seed: u64, max: Nanos },
}

impl Service {
    pub fn time(&self, r: &Req) -> Nanos {
        match *self {
            Service::Model(m) => m.service_time(&ServiceRequest {
                isl: r.isl,
                osl: r.osl,
                recorded: r.recorded,
            }),
            Service::Random { seed, max } => {
                stream(seed, Purpose::Service, r.id, 0, 0).random_range(0..=max / NANOS_PER_MS)
                    * NANOS_PER_MS
            }
        }
    }
}

/// One call the driver made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Timeout(Nanos),
    Sent(Nanos, RequestId),
    Completion(Nanos, RequestId, Outcome),
}

impl Call {
    pub fn time(self) -> Nanos {
        match self {
            Call::Timeout(t) | Call::Sent(t, _) | Call::Completion(t, _, _) => t,
        }
    }
}

/// What the driver saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    pub calls: Vec<Call>,
    /// Dispatch commands, in order.
    pub dispatched: Vec<RequestId>,
    /// Cancel commands, in order.
    pub cancelled: Vec<RequestId>,
    /// Most requests in flight at once, counted by the driver (dispatches
    /// minus completions), after every command.
    pub max_inflight: u32,
    /// The driver's final time.
    pub end: Nanos,
    /// True when the step bound was hit (a livelock).
    pub livelock: bool,
}

/// The largest number of driver steps before a run is declared a livelock.
pub const STEP_LIMIT: usize = 200_000;

/// A hook that does nothing.
pub fn no_hook(_: &mut Scheduler, _: Nanos, _: usize) {}

/// The request description of `id`, from the scheduler's compiled trees.
pub fn request(s: &Scheduler, id: RequestId) -> Req {
    let (tree, play, turn) = s.request_tree(id).expect("dispatched ids exist");
    let t = turn as usize;
    Req {
        id,
        tree: play.tree,
        turn,
        isl: tree.isl[t],
        osl: tree.osl[t],
        recorded: tree.duration[t],
    }
}

/// Runs the scheduler to the end. Order at equal times, as in the shipped
/// driver: completions first (by time, then request id), then timers.
/// Engine errors panic: the driver never misuses the engine.
pub fn run(
    s: &mut Scheduler,
    service: &dyn Fn(&Req) -> Nanos,
    hook: &mut dyn FnMut(&mut Scheduler, Nanos, usize),
) -> Trace {
    let mut trace = Trace::default();
    let mut completions: BinaryHeap<Reverse<(Nanos, RequestId)>> = BinaryHeap::new();
    let mut now: Nanos = 0;
    let mut inflight: u32 = 0;
    for step in 0.. {
        if step >= STEP_LIMIT {
            trace.livelock = true;
            break;
        }
        hook(s, now, step);
        while let Some(command) = s.poll_command() {
            match command {
                Command::Dispatch(id) => {
                    trace.dispatched.push(id);
                    inflight += 1;
                    trace.max_inflight = trace.max_inflight.max(inflight);
                    trace.calls.push(Call::Sent(now, id));
                    s.handle_sent(now, id).expect("sent");
                    let at = now.saturating_add(service(&request(s, id)));
                    completions.push(Reverse((at, id)));
                }
                Command::Cancel(id) => {
                    trace.cancelled.push(id);
                    inflight -= 1;
                    trace
                        .calls
                        .push(Call::Completion(now, id, Outcome::Cancelled));
                    s.handle_completion(now, id, Outcome::Cancelled)
                        .expect("cancel");
                }
            }
        }
        let next_completion = completions.peek().map(|Reverse((at, _))| *at);
        let next_timer = s.poll_timeout();
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
            let in_flight = s.slot(id).is_some_and(|x| x.state == TurnState::Sent);
            if in_flight {
                now = now.max(at);
                inflight -= 1;
                trace.calls.push(Call::Completion(now, id, Outcome::Ok));
                s.handle_completion(now, id, Outcome::Ok)
                    .expect("completion");
            }
        } else if let Some(t) = next_timer {
            now = now.max(t);
            trace.calls.push(Call::Timeout(now));
            s.handle_timeout(now).expect("timeout");
        }
    }
    trace.end = now;
    trace
}
