//! The properties' driver: the shipped virtual-clock loop with a trace.
//!
//! Runs [`arbor_backends::virtual_clock::run_with`], the one virtual
//! driver loop (the one `arbor plan` runs), with hooks: the service time of
//! a request is any function of the request (so a seeded random
//! per-request model is possible), and every call the loop makes to the
//! engine is recorded in a [`Trace`], so properties can check time
//! monotonicity, the in-flight count seen from outside, and termination.
//! A hook may make extra calls (bad ones, for the misuse property) before
//! every step; a step bound declares a livelock.

use std::ops::ControlFlow;

use arbor_backends::virtual_clock::{self, Hooks};
use arbor_engine::rng::{stream, Purpose};
use arbor_engine::scheduler::{Outcome, RequestId, Scheduler};
use arbor_engine::time::{Nanos, NANOS_PER_MS};
use arbor_sim::ServiceModel;
use rand::Rng;

pub use arbor_backends::virtual_clock::{Call, Request};

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
    pub fn time(&self, r: &Request) -> Nanos {
        match *self {
            Service::Model(m) => m.service_time(&r.service),
            Service::Random { seed, max } => {
                stream(seed, Purpose::Service, r.id, 0, 0).random_range(0..=max / NANOS_PER_MS)
                    * NANOS_PER_MS
            }
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

/// The hooks that keep the trace.
struct Recorder<'a> {
    service: &'a dyn Fn(&Request) -> Nanos,
    hook: &'a mut dyn FnMut(&mut Scheduler, Nanos, usize),
    trace: Trace,
    inflight: u32,
}

impl Hooks for Recorder<'_> {
    fn service_time(&mut self, request: &Request) -> Nanos {
        (self.service)(request)
    }

    fn call(&mut self, call: Call) {
        match call {
            Call::Sent(_, id) => {
                self.trace.dispatched.push(id);
                self.inflight += 1;
                self.trace.max_inflight = self.trace.max_inflight.max(self.inflight);
            }
            Call::Completion(_, id, outcome) => {
                if outcome == Outcome::Cancelled {
                    self.trace.cancelled.push(id);
                }
                self.inflight -= 1;
            }
            Call::Timeout(_) => {}
        }
        self.trace.calls.push(call);
    }

    fn before_step(&mut self, s: &mut Scheduler, now: Nanos, step: usize) -> ControlFlow<()> {
        if step >= STEP_LIMIT {
            self.trace.livelock = true;
            return ControlFlow::Break(());
        }
        (self.hook)(s, now, step);
        ControlFlow::Continue(())
    }
}

/// Runs the scheduler to the end with the shipped loop. Order at equal
/// times: completions first (by time, then request id), then timers.
/// Engine errors panic: the loop never misuses the engine.
pub fn run(
    s: &mut Scheduler,
    service: &dyn Fn(&Request) -> Nanos,
    hook: &mut dyn FnMut(&mut Scheduler, Nanos, usize),
) -> Trace {
    let mut recorder = Recorder {
        service,
        hook,
        trace: Trace::default(),
        inflight: 0,
    };
    let end = virtual_clock::run_with(s, &mut recorder)
        .expect("the virtual driver never misuses the engine");
    recorder.trace.end = end;
    recorder.trace
}
