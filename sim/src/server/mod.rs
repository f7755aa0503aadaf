//! The batching server model: one inference engine in the style of vLLM
//! V1 as a discrete-event model on integer nanoseconds (docs/capacity.md).
//!
//! [`ServerModel`] takes requests ([`ServerModel::submit`]), runs steps
//! (decode first, then chunked prefill first come first served, within
//! the profile's limits), and reports [`ModelEvent`]s: a request's first
//! token and its last (and, when asked, every token between: what the
//! emulator streams, [`ServerModel::with_token_events`]). It reads no clock: the caller advances it to a
//! time ([`ServerModel::advance`]) and asks when it next has something to
//! say ([`ServerModel::next_event_at`]).
//!
//! Must not: read a clock, know about trees or the scheduler, iterate a
//! hash map.

mod batch;
mod jump;
mod key_table;
pub mod keys;
mod kv;
pub mod profile;
mod state;
pub mod step;
pub mod workload_keys;

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
    /// An output token after the first reached the client (only from a
    /// model [`with_token_events`](ServerModel::with_token_events)); the
    /// last one's comes just before its `Done`, at the same time.
    Token { id: u64, at: Nanos },
    /// The last output token reached the client.
    Done { id: u64, at: Nanos },
}

impl ModelEvent {
    /// When it happened.
    pub fn at(&self) -> Nanos {
        match *self {
            ModelEvent::FirstToken { at, .. }
            | ModelEvent::Token { at, .. }
            | ModelEvent::Done { at, .. } => at,
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
    /// The jump the step in flight allows, worked out whenever the batch
    /// or what it depends on changes (composing, a submission, a cancel),
    /// so asking for the next event costs nothing.
    jump: Option<Jump>,
    /// The entries of the last finished step, kept for the next one's.
    spare_entries: Vec<(usize, u32)>,
    /// Scratch for a finished step's events.
    finished: Vec<ModelEvent>,
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
    /// Report every token ([`ModelEvent::Token`]), and the end of the step
    /// in flight as the next event.
    token_events: bool,
}

impl ServerModel {
    pub fn new(profile: &Profile) -> ServerModel {
        ServerModel {
            profile: profile.clone(),
            state: State::new(profile.engine.block_size, profile.engine.num_gpu_blocks),
            arrivals: VecDeque::new(),
            batch: None,
            jump: None,
            spare_entries: Vec::new(),
            finished: Vec::new(),
            clock: 0,
            outbox: BTreeMap::new(),
            sequence: 0,
            rejected: 0,
            steps: 0,
            jumps: true,
            token_events: false,
        }
    }

    /// The same model reporting every output token at the end of the step
    /// that made it (plus the departure): [`ModelEvent::Token`]s, and
    /// [`next_event_at`](ServerModel::next_event_at) is never later than
    /// the end of the step in flight. A jump over decode-only steps still
    /// goes in closed form when the caller advances past several steps at
    /// once, each step's tokens at its end (`DecodeRun::total`). What the
    /// emulator runs; the virtual driver needs only first tokens and ends.
    pub fn with_token_events(mut self) -> ServerModel {
        self.token_events = true;
        self
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
        let (mut keys, blocks) = self.state.spare_vectors();
        keys.extend_from_slice(&request.blocks[..request.blocks.len().min(keep)]);
        let req = Req {
            id: request.id,
            prompt,
            output,
            keys,
            computed: 0,
            generated: 0,
            blocks,
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
        self.plan_jump();
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
        self.plan_jump();
        // Events already posted for it stand (they are in the past).
    }

    /// The time of the next event the model will produce with no new
    /// input, or an earlier time at which it has work to do (advancing to
    /// it makes progress); None: idle.
    pub fn next_event_at(&self) -> Option<Nanos> {
        let posted = self.outbox.keys().next().map(|&(at, _)| at);
        let work = match &self.batch {
            Some(batch) => Some(match self.jump {
                Some(jump) if !self.token_events => {
                    batch.start.saturating_add(jump.run.total(jump.steps))
                }
                _ => batch.end,
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
        loop {
            if let Some(batch) = self.batch.take() {
                if let Some(jump) = self.jump {
                    let room = until.saturating_sub(batch.start);
                    let steps = jump.run.steps_within(room, jump.steps);
                    if until >= batch.start && steps >= 2 {
                        self.state.apply_jump(steps);
                        if self.token_events {
                            self.post_jump_tokens(batch.start, jump.run, steps);
                        }
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
                let mut finished = std::mem::take(&mut self.finished);
                self.state
                    .finish(&batch.entries, out_at, self.token_events, &mut finished);
                for event in finished.drain(..) {
                    self.post(event);
                }
                self.finished = finished;
                self.spare_entries = batch.entries;
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

    /// The tokens of `steps` decode steps jumped from `start`: step `j`'s
    /// (from 1) reach the client at the end of the first `j` steps of
    /// `run`, one per running request in schedule order, as stepping
    /// posts them.
    fn post_jump_tokens(&mut self, start: Nanos, run: DecodeRun, steps: u64) {
        let departure = self.profile.overhead.departure_ns;
        for j in 1..=steps {
            let at = start.saturating_add(run.total(j)).saturating_add(departure);
            for i in 0..self.state.running.len() {
                let id = self.state.req(self.state.running[i]).id;
                self.post(ModelEvent::Token { id, at });
            }
        }
    }

    /// Works out the jump the step in flight allows.
    fn plan_jump(&mut self) {
        self.jump = self.batch.as_ref().and_then(|batch| self.jump_of(batch));
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
        let mut entries = std::mem::take(&mut self.spare_entries);
        entries.clear();
        self.batch = match self.state.compose(&self.profile.engine, &mut entries) {
            Some((features, decode_only)) => Some(Batch {
                start: at,
                end: at.saturating_add(self.profile.step.step_ns(&features)),
                entries,
                features,
                decode_only,
            }),
            None => {
                self.spare_entries = entries;
                None
            }
        };
        self.plan_jump();
    }
}
