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

mod batch;
mod jump;
pub mod keys;
mod kv;
pub mod profile;
mod state;
pub mod step;

use std::collections::{BTreeMap, VecDeque};

use arbor_engine::time::Nanos;

use batch::Batch;
use jump::Jump;
use state::{Req, State};
use step::DecodeRun;

pub use profile::{
    EngineLimits, Overheads, Profile, ProfileError, ProfileOrigin, SchedulingPolicy,
    StepCoefficients, StepFeatures,
};

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
    FirstToken {
        id: u64,
        at: Nanos,
        cached_tokens: u32,
    },
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
    /// Requests refused: their prompt and output never fit the KV pool.
    pub rejected: u64,
    /// Engine steps run, so far.
    pub steps: u64,
}

/// One modelled inference engine (deterministic, no clock, integer ns).
///
/// Time is the caller's: requests arrive at the `now` of [`submit`], and
/// [`advance`] runs every step that ends by its `until`. A step is
/// composed when the previous one ends (or when an idle engine sees a
/// request), from the requests visible by then: one arriving during a
/// step waits for the next. Events reach the client `departure_ns` after
/// their step; a request reaches the scheduler `arrival_ns` after it is
/// submitted.
///
/// [`submit`]: ServerModel::submit
/// [`advance`]: ServerModel::advance
#[derive(Debug, Clone)]
pub struct ServerModel {
    profile: Profile,
    state: State,
    /// Submitted, not yet visible to the scheduler: (visible at, slot).
    arrivals: VecDeque<(Nanos, usize)>,
    /// The step in flight.
    batch: Option<Batch>,
    /// The end of the last step run (or of the last idle wait).
    clock: Nanos,
    /// Events not yet released, by (time, order).
    outbox: BTreeMap<(Nanos, u64), ModelEvent>,
    sequence: u64,
    rejected: u64,
    steps: u64,
    /// Jump over decode-only runs in closed form (off: step by step, the
    /// reference the jump is tested against).
    jumps: bool,
}

impl ServerModel {
    pub fn new(profile: &Profile) -> ServerModel {
        ServerModel {
            profile: profile.clone(),
            state: State::new(profile.engine.block_size, profile.engine.num_gpu_blocks),
            arrivals: VecDeque::new(),
            batch: None,
            clock: 0,
            outbox: BTreeMap::new(),
            sequence: 0,
            rejected: 0,
            steps: 0,
            jumps: true,
        }
    }

    /// The same model stepping one step at a time: what the closed-form
    /// jump must agree with, event for event (tests and benches).
    pub fn without_jumps(mut self) -> ServerModel {
        self.jumps = false;
        self
    }

    /// The profile the model runs.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// A request arrives at `now` (times never go backwards). One whose
    /// prompt and output can never fit the KV pool is refused: its first
    /// token and its end come at once, with no step (counted in
    /// [`Gauges::rejected`]).
    pub fn submit(&mut self, now: Nanos, request: &ModelRequest) {
        let visible = now.saturating_add(self.profile.overhead.arrival_ns);
        let prompt = request.prompt_tokens.max(1);
        let output = request.output_tokens.max(1);
        let bs = self.profile.engine.block_size.max(1);
        let keep = (prompt / bs) as usize;
        let req = Req {
            id: request.id,
            prompt,
            output,
            keys: request.blocks[..request.blocks.len().min(keep)].to_vec(),
            computed: 0,
            generated: 0,
            blocks: Vec::new(),
            keyed: 0,
            cached_tokens: None,
            first_token_sent: false,
            cancelled: false,
        };
        if u64::from(prompt) + u64::from(output)
            > u64::from(self.profile.engine.num_gpu_blocks) * u64::from(bs)
        {
            self.rejected += 1;
            let at = visible.saturating_add(self.profile.overhead.departure_ns);
            self.post(ModelEvent::FirstToken {
                id: request.id,
                at,
                cached_tokens: 0,
            });
            self.post(ModelEvent::Done { id: request.id, at });
            return;
        }
        let slot = self.state.insert(req);
        // Submissions come in time order, so the queue stays sorted; a
        // late one is placed by its time.
        let place = self.arrivals.partition_point(|&(at, _)| at <= visible);
        self.arrivals.insert(place, (visible, slot));
    }

    /// The client gave up on `id` at `now`: its blocks are freed, no event
    /// follows. A request in the step in flight leaves when it ends.
    pub fn cancel(&mut self, _now: Nanos, id: u64) {
        let Some(slot) = self.state.slot_of(id) else {
            return;
        };
        if self.state.req(slot).cancelled {
            return;
        }
        self.state.req_mut(slot).cancelled = true;
        let in_batch = self
            .batch
            .as_ref()
            .is_some_and(|b| b.entries.iter().any(|&(s, _)| s == slot));
        if in_batch {
            return;
        }
        self.arrivals.retain(|&(_, s)| s != slot);
        self.state.waiting.retain(|&s| s != slot);
        if self.state.running.contains(&slot) {
            self.state.release_blocks(slot);
            self.state.running.retain(|&s| s != slot);
        }
        self.state.remove(slot);
        // Events already posted for it stand (they are in the past).
    }

    /// The time of the next event the model will produce with no new
    /// input, or an earlier time at which it has work to do (advancing to
    /// it makes progress); None: idle.
    pub fn next_event_at(&self) -> Option<Nanos> {
        let posted = self.outbox.keys().next().map(|&(at, _)| at);
        let work = match &self.batch {
            Some(batch) => Some(match self.jump_of(batch) {
                Some(jump) => batch.start.saturating_add(jump.run.total(jump.steps)),
                None => batch.end,
            }),
            None => self.arrivals.front().map(|&(at, _)| at.max(self.clock)),
        };
        match (posted, work) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the model up to and including `until`, pushing events in time
    /// order.
    pub fn advance(&mut self, until: Nanos, events: &mut Vec<ModelEvent>) {
        let mut finished = Vec::new();
        loop {
            if let Some(batch) = self.batch.take() {
                if let Some(jump) = self.jump_of(&batch) {
                    let room = until.saturating_sub(batch.start);
                    let steps = jump.run.steps_within(room, jump.steps);
                    if until >= batch.start && steps >= 2 {
                        self.state.apply_jump(steps);
                        self.steps += steps;
                        self.clock = batch.start.saturating_add(jump.run.total(steps));
                        self.compose_at(self.clock);
                        continue;
                    }
                }
                if batch.end > until {
                    self.batch = Some(batch);
                    break;
                }
                self.clock = batch.end;
                self.steps += 1;
                let out_at = batch.end.saturating_add(self.profile.overhead.departure_ns);
                finished.clear();
                self.state.finish(&batch.entries, out_at, &mut finished);
                for event in finished.drain(..) {
                    self.post(event);
                }
                self.compose_at(self.clock);
            } else if let Some(&(at, _)) = self.arrivals.front() {
                let start = at.max(self.clock);
                if start > until {
                    break;
                }
                self.clock = start;
                self.compose_at(start);
                if self.batch.is_none() && self.arrivals.front().is_some_and(|&(a, _)| a <= start) {
                    // Nothing could be scheduled (cannot happen: an
                    // idle engine has every block free).
                    break;
                }
            } else {
                break;
            }
        }
        while let Some(entry) = self.outbox.first_entry() {
            if entry.key().0 > until {
                break;
            }
            events.push(entry.remove());
        }
    }

    pub fn gauges(&self) -> Gauges {
        Gauges {
            waiting: (self.state.waiting.len() + self.arrivals.len()) as u32,
            running: self.state.running.len() as u32,
            kv_blocks_used: self.state.pool.used(),
            kv_blocks_total: self.state.pool.total(),
            prefix_hit_tokens: self.state.prefix_hit_tokens,
            prompt_tokens: self.state.prompt_tokens,
            preemptions: self.state.preemptions,
            rejected: self.rejected,
            steps: self.steps,
        }
    }

    fn post(&mut self, event: ModelEvent) {
        self.outbox.insert((event.at(), self.sequence), event);
        self.sequence += 1;
    }

    /// The jump the in-flight `batch` allows, if any.
    fn jump_of(&self, batch: &Batch) -> Option<Jump> {
        if !batch.decode_only || !self.jumps {
            return None;
        }
        let run = DecodeRun::new(&self.profile.step, &batch.features);
        let next_arrival = self.arrivals.front().map(|&(at, _)| at);
        self.state
            .jump(batch, &self.profile.engine, run, next_arrival)
    }

    /// Moves the requests visible at `at` into the queue and composes the
    /// step starting then.
    fn compose_at(&mut self, at: Nanos) {
        while let Some(&(visible, slot)) = self.arrivals.front() {
            if visible > at {
                break;
            }
            self.arrivals.pop_front();
            self.state.waiting.push_back(slot);
        }
        self.batch = self
            .state
            .compose(&self.profile.engine)
            .map(|(entries, features)| {
                let decode_only = features.prefill_attention == 0.0
                    && entries.len() as u32 == features.seqs
                    && features.tokens == features.seqs
                    && entries
                        .iter()
                        .all(|&(slot, new)| new == 1 && self.state.req(slot).is_decoding());
                Batch {
                    start: at,
                    end: at.saturating_add(self.profile.step.step_ns(&features)),
                    entries,
                    features,
                    decode_only,
                }
            });
    }
}
