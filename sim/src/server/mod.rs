//! The batching server model: one inference engine in the style of vLLM
//! V1 as a discrete-event model on integer nanoseconds (docs/capacity.md).
//!
//! [`ServerModel`] takes requests ([`ServerModel::submit`]), runs steps
//! (decode first, then chunked prefill first come first served, within
//! the profile's limits), and reports [`ModelEvent`]s: a request's first
//! token and its last. It reads no clock: the caller advances it to a
//! time ([`ServerModel::advance`]) and asks when it next has something to
//! say ([`ServerModel::next_event_at`]).
//!
//! Must not: read a clock, know about trees or the scheduler, iterate a
//! hash map.

pub mod keys;
pub mod profile;
pub mod step;

use arbor_engine::time::Nanos;

pub use profile::{
    EngineLimits, Overheads, Profile, ProfileError, ProfileOrigin, SchedulingPolicy,
    StepCoefficients,
};
pub use step::StepFeatures;

/// One request as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelRequest<'a> {
    pub id: u64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// Prefix block keys of the prompt's full blocks (block_size tokens
    /// each), chained (key i names the whole prefix to block i).
    pub blocks: &'a [u64],
}

/// What the model says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelEvent {
    /// The first output token reached the client; `cached_tokens` of the
    /// prompt were prefix-cache hits.
    FirstToken { id: u64, at: Nanos, cached_tokens: u32 },
    /// The last output token reached the client.
    Done { id: u64, at: Nanos },
}

impl ModelEvent {
    /// When it happened.
    pub fn at(&self) -> Nanos {
        match *self {
            ModelEvent::FirstToken { at, .. } | ModelEvent::Done { at, .. } => at,
        }
    }
}

/// The model's state at a glance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gauges {
    /// Requests received and not yet running (including preempted ones).
    pub waiting: u32,
    pub running: u32,
    pub kv_blocks_used: u32,
    pub kv_blocks_total: u32,
    /// Prompt tokens served from the prefix cache, so far.
    pub prefix_hit_tokens: u64,
    /// Prompt tokens of the requests admitted, so far.
    pub prompt_tokens: u64,
    pub preemptions: u64,
}

/// One modelled inference engine (deterministic, no clock, integer ns).
#[derive(Debug, Clone)]
pub struct ServerModel {
    profile: Profile,
}

impl ServerModel {
    pub fn new(profile: &Profile) -> ServerModel {
        ServerModel {
            profile: profile.clone(),
        }
    }

    /// The profile the model runs.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// A request arrives at `now` (times never go backwards).
    pub fn submit(&mut self, _now: Nanos, _request: &ModelRequest) {}

    /// The client gave up on `id` at `now`: its blocks are freed, no event
    /// follows.
    pub fn cancel(&mut self, _now: Nanos, _id: u64) {}

    /// The time of the next event the model will produce with no new
    /// input (None: idle).
    pub fn next_event_at(&self) -> Option<Nanos> {
        None
    }

    /// Runs the model up to and including `until`, pushing events in time
    /// order.
    pub fn advance(&mut self, _until: Nanos, _events: &mut Vec<ModelEvent>) {}

    pub fn gauges(&self) -> Gauges {
        Gauges {
            kv_blocks_total: self.profile.engine.num_gpu_blocks,
            ..Gauges::default()
        }
    }
}
