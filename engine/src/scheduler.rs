//! The discrete-event scheduler: a sans-IO state machine.
//!
//! Owns when each turn of each play may be sent, and nothing else: no clock,
//! no sockets, no service model. A driver feeds it what happened and asks it
//! what to do, in the style of `quinn-proto`:
//!
//! - [`Scheduler::handle_timeout`]`(now)`: time has reached `now`; fire due
//!   timers (arrivals, gaps), the duration deadline and the grace deadline.
//! - [`Scheduler::handle_sent`]`(now, id)`: the request was put on the wire.
//! - [`Scheduler::handle_completion`]`(now, id, outcome)`: its last byte
//!   arrived (or it failed or was cancelled).
//! - [`Scheduler::poll_command`]: what to do now (dispatch or cancel a
//!   request). Call it until it returns `None` after every `handle_*`.
//! - [`Scheduler::poll_timeout`]: when to call `handle_timeout` next.
//!   `None` with no request in flight means the run is over.
//!
//! # Time and order
//! Times are nanoseconds from the run's epoch and must never go backwards
//! across calls. Timers with equal due times fire in insertion order. When a
//! completion and a timer share a time, the driver reports the completion
//! first; the virtual driver does. A turn whose last constraint resolves at
//! `now` with zero gap is dispatched within the same call.
//!
//! # Idle-gap cap
//! Pending timers are stored under keys in a shifted time base:
//! `key = due + shift`, where `shift` is the total time skipped so far. An
//! idle shift moves every pending timer (and every partial constraint of a
//! blocked turn) earlier by the same amount by raising `shift` once: one
//! offset, not a rewrite of every timer. The system is idle when nothing is
//! in flight and nothing waits for the request cap.
//!
//! # Closed loop
//! With `sessions = N` the corpus (every tree times `copies`) is shuffled by
//! a seeded permutation and dealt round-robin to N lanes. A lane plays its
//! share in order, one tree at a time; it is freed when every turn of its
//! tree (background children included) is done, and starts its next tree at
//! that instant. Which trees a lane plays never depends on timing.
//!
//! # Start window and warmup
//! With `start_window` (the AgentX recipe), each lane's first play enters
//! its tree at a seeded `t*` ([`crate::start`]): turns recorded before it
//! are history, one warmup per agent alive at `t*` goes out at its capped
//! lead before the profiling start (a timer, so idle shifts move it too),
//! and live turns are due at their recorded offset from `t*`, after their
//! agent's warmup. The duration counts from the profiling start.
//!
//! # Trajectories and watchdogs
//! [`Outcome::EndTrajectory`] (a context overflow) skips the failed turn's
//! agent and the subagents it would spawn; edges out of them into other
//! agents resolve at once. `tree_idle_cap` moves one play's own pending
//! timers earlier when that play alone sits idle too long.
//!
//! # Lifecycle and deadlock
//! A turn moves `Blocked -> Timer -> (Queued) -> Dispatched -> Sent ->
//! Done|Failed|Cancelled`, or to `Skipped` when the duration ends first or
//! its trajectory ends, or is `History` (before a play's `t*`). A
//! failed request still resolves its successors, so a failure never stalls
//! a tree. Derived and validated DAGs cannot deadlock: every blocked turn
//! waits on an edge whose source is pending, in flight or on a timer.

use std::collections::VecDeque;

use rand::Rng;
use rand_distr::{Distribution, Exp};

use crate::dag::{CompiledTree, CompiledWorkload};
use crate::error::{EngineError, PolicyError};
use crate::model::Anchor;
use crate::policy::{Arrival, Policy, Stagger};
use crate::rng::{stream, Purpose};
use crate::time::{Nanos, NANOS_PER_SEC};

/// "No turn" in a `u32` turn field.
const NO_TURN: u32 = u32::MAX;

/// Identifies one request (one turn of one play) for the whole run.
pub type RequestId = u64;

/// What the driver must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Send this request now, then report `handle_sent`.
    Dispatch(RequestId),
    /// Abort this in-flight request, then report its completion as
    /// [`Outcome::Cancelled`].
    Cancel(RequestId),
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// The request failed (error status, cut stream, ...). Successors still
    /// proceed.
    Failed,
    Cancelled,
    /// The request failed in a way that ends its agent's trajectory (the
    /// prompt no longer fits the context): the agent's remaining turns and
    /// the subagents they would spawn are skipped; a parent waiting on it
    /// goes on.
    EndTrajectory,
}

/// Where a turn is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Waiting for incoming edges.
    Blocked,
    /// All edges resolved, waiting for its gap to elapse.
    Timer,
    /// Eligible, waiting for the request cap.
    Queued,
    Dispatched,
    Sent,
    Done,
    Failed,
    Cancelled,
    /// Never sent: the duration ended first, or its trajectory ended
    /// (context overflow).
    Skipped,
    /// Recorded before the play's `t*`: part of the conversation's past,
    /// not replayed (the AgentX start window).
    History,
}

impl TurnState {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnState::Blocked => "blocked",
            TurnState::Timer => "timer",
            TurnState::Queued => "queued",
            TurnState::Dispatched => "dispatched",
            TurnState::Sent => "sent",
            TurnState::Done => "ok",
            TurnState::Failed => "failed",
            TurnState::Cancelled => "cancelled",
            TurnState::Skipped => "skipped",
            TurnState::History => "history",
        }
    }

    fn is_pending(self) -> bool {
        matches!(
            self,
            TurnState::Blocked | TurnState::Timer | TurnState::Queued
        )
    }

    fn is_in_flight(self) -> bool {
        matches!(self, TurnState::Dispatched | TurnState::Sent)
    }
}

/// The life of one turn of one play. Times are from the run's epoch;
/// `shift_*` record the cumulative idle shift at that moment, so the shift
/// credited to a turn between two events is their difference.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub play: u32,
    pub turn: u32,
    pub state: TurnState,
    pending_in: u32,
    /// Latest constraint so far, in the shifted time base.
    due_key: Nanos,
    pub eligible: Nanos,
    pub dispatched: Nanos,
    /// Time spent waiting for the request cap (`--max-inflight`): from
    /// when the turn joined the FIFO to its dispatch. 0 when it was
    /// dispatched as soon as it was handled (a live driver's timer lag is
    /// not queue wait: it shows in `sent - eligible`).
    pub queue_wait: Nanos,
    pub sent: Nanos,
    pub end: Nanos,
    pub shift_at_eligible: Nanos,
    pub shift_at_sent: Nanos,
    pub shift_at_end: Nanos,
    /// Sent as a warmup (one output token, full prefix), not measured.
    pub warmup: bool,
    /// For a warmup: the turn of its agent that waits for it.
    warm_next: u32,
}

/// One scheduled instance of a tree.
#[derive(Debug, Clone, Copy)]
pub struct Play {
    pub tree: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    /// Planned arrival (before any idle shift).
    pub planned: Nanos,
    pub started: Option<Nanos>,
    pub done: Option<Nanos>,
    /// In a closed loop: this is the lane's `k`-th play (from 0). Markers
    /// and `t*` derive from it, never from timing.
    pub lane_play: u32,
    /// Where the play entered its tree (the start window), if not at 0.
    pub t_star: Option<Nanos>,
    slot_base: u32,
    remaining: u32,
    /// Requests of this play dispatched and not yet completed.
    inflight: u32,
}

impl Play {
    /// Request id of this play's turn `turn`, once started.
    pub fn request(&self, turn: u32) -> Option<RequestId> {
        self.started.map(|_| (self.slot_base + turn) as RequestId)
    }
}

/// A closed-loop lane.
#[derive(Debug, Clone, Default)]
pub struct Lane {
    /// The (tree, copy) pairs this lane plays, in order.
    pub share: Vec<(u32, u32)>,
    next: usize,
    /// Plays started by this lane.
    pub plays: u32,
    /// When the lane finished its share (without `--loop`), or stopped
    /// making progress.
    pub dry_at: Option<Nanos>,
    /// With `--loop`: when the lane last wrapped around its share.
    last_wrap: Option<Nanos>,
    /// With a start window: where the lane enters its first tree.
    pub t_star: Option<Nanos>,
    mid_start: Option<crate::start::MidStart>,
    /// Warmup requests of the lane's first play.
    pub warmups: u32,
    /// With `--loop`: the lane went a whole cycle of its share without time
    /// advancing (every turn took no time) and was stopped, since it would
    /// otherwise replay forever at one instant.
    pub stalled: bool,
}

#[derive(Debug, Clone, Copy)]
enum Timer {
    Turn(u32),
    Play(u32),
    Lane(u32),
    /// Every lane reaches its `t*`: measurement (and the duration) starts.
    /// A timer like the others, so idle shifts move it with the turns.
    Profiling,
}

/// Counters a plan or run reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub peak_inflight: u32,
    pub peak_inflight_at: Nanos,
    pub peak_live_trees: u32,
    pub peak_live_trees_at: Nanos,
    pub idle_shifts: u64,
    pub idle_skipped: Nanos,
    /// Events handled: timer firings, dispatches, sends, completions.
    pub events: u64,
    pub dispatched: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub skipped: u64,
    pub plays_started: u64,
    /// Turns recorded before a play's `t*` (not replayed).
    pub history: u64,
    /// Warmup requests dispatched.
    pub warmups: u64,
    /// Per-tree idle watchdog shifts and the time they skipped.
    pub tree_idle_shifts: u64,
    pub tree_idle_skipped: Nanos,
    pub plays_done: u64,
    /// Plays whose arrival never came before the duration ended.
    pub plays_not_started: u64,
    /// Latest completion seen.
    pub last_completion: Nanos,
    pub stopped_at: Option<Nanos>,
}

/// The scheduler. See the module documentation for the protocol.
#[derive(Debug)]
pub struct Scheduler {
    trees: Vec<CompiledTree>,
    policy: Policy,
    plays: Vec<Play>,
    lanes: Vec<Lane>,
    slots: Vec<Slot>,
    timers: crate::queue::EventQueue<Timer>,
    ready: VecDeque<u32>,
    commands: VecDeque<Command>,
    inflight: u32,
    live_trees: u32,
    shift: Nanos,
    idle_since: Option<Nanos>,
    now: Nanos,
    stopped: bool,
    grace_fired: bool,
    stats: Stats,
    /// Where measurement starts: 0, or with a start window the instant
    /// every lane reaches its `t*` (after the warmups). The duration counts
    /// from here.
    profiling_start: Nanos,
    /// False until the profiling timer fired (start window only).
    profiling_started: bool,
    /// The root warmup whose failure aborted the run, if one did.
    aborted: Option<RequestId>,
}

impl Scheduler {
    /// Builds the scheduler at time 0 of the run's epoch: open-loop plays
    /// get their arrival timers, closed-loop lanes their start timers.
    pub fn new(workload: CompiledWorkload, policy: Policy) -> Result<Self, PolicyError> {
        policy.validate()?;
        let turns = workload.turns as usize * policy.copies as usize;
        let mut scheduler = Scheduler {
            trees: workload.trees,
            policy,
            plays: Vec::new(),
            lanes: Vec::new(),
            slots: Vec::new(),
            timers: crate::queue::EventQueue::default(),
            ready: VecDeque::new(),
            commands: VecDeque::new(),
            inflight: 0,
            live_trees: 0,
            shift: 0,
            idle_since: None,
            now: 0,
            stopped: false,
            grace_fired: false,
            stats: Stats::default(),
            profiling_start: 0,
            profiling_started: true,
            aborted: None,
        };
        if scheduler.policy.sessions.is_none() && !scheduler.policy.loop_lanes {
            scheduler.slots.reserve(turns);
        }
        match scheduler.policy.sessions {
            None => scheduler.plan_open_loop(),
            Some(n) => scheduler.plan_lanes(n),
        }
        scheduler.check_idle(0);
        Ok(scheduler)
    }

    /// Arrival offsets of `count` arrivals under the policy's arrival
    /// process (index order); `None` for `recorded`, which uses each tree's
    /// own arrival.
    fn arrival_offsets(&self, count: usize) -> Option<Vec<Nanos>> {
        match self.policy.arrival {
            Arrival::Recorded => None,
            Arrival::Immediate => Some(vec![0; count]),
            Arrival::Rate(rate) => {
                let interval = (NANOS_PER_SEC as f64 / rate).round() as Nanos;
                Some(
                    (0..count as u64)
                        .map(|i| i.saturating_mul(interval))
                        .collect(),
                )
            }
            Arrival::Poisson(rate) => {
                let mut rng = stream(self.policy.seed, Purpose::Arrival, 0, 0, 0);
                let exp = Exp::new(rate).ok()?;
                let mut at: Nanos = 0;
                let mut out = Vec::with_capacity(count);
                for i in 0..count {
                    if i > 0 {
                        let gap: f64 = exp.sample(&mut rng);
                        at = at.saturating_add((gap * NANOS_PER_SEC as f64).round() as Nanos);
                    }
                    out.push(at);
                }
                Some(out)
            }
        }
    }

    fn stagger_offset(&self, tree: u32, copy: u32) -> Nanos {
        let copies = self.policy.copies as u64;
        match self.policy.stagger {
            Stagger::None => 0,
            Stagger::Even { span } => ((span as u128 * copy as u128) / copies as u128) as Nanos,
            Stagger::Random { span } if copy > 0 && span > 0 => stream(
                self.policy.seed,
                Purpose::Stagger,
                tree as u64,
                copy as u64,
                0,
            )
            .random_range(0..span),
            Stagger::Random { .. } => 0,
        }
    }

    fn plan_open_loop(&mut self) {
        let trees = self.trees.len() as u32;
        let count = trees as usize * self.policy.copies as usize;
        let offsets = self.arrival_offsets(count);
        self.plays.reserve(count);
        for copy in 0..self.policy.copies {
            for tree in 0..trees {
                let index = (copy * trees + tree) as usize;
                let base = match &offsets {
                    Some(o) => o[index],
                    None => self.trees[tree as usize].arrival,
                };
                let planned = base.saturating_add(self.stagger_offset(tree, copy));
                let play = self.plays.len() as u32;
                self.plays.push(Play {
                    tree,
                    copy,
                    lane: None,
                    planned,
                    started: None,
                    done: None,
                    lane_play: 0,
                    t_star: None,
                    slot_base: 0,
                    remaining: 0,
                    inflight: 0,
                });
                self.timers.push(planned, Timer::Play(play));
            }
        }
    }

    fn plan_lanes(&mut self, lanes: u32) {
        let trees = self.trees.len() as u32;
        let mut corpus: Vec<(u32, u32)> = (0..self.policy.copies)
            .flat_map(|copy| (0..trees).map(move |tree| (tree, copy)))
            .collect();
        let mut rng = stream(self.policy.seed, Purpose::Lanes, 0, 0, 0);
        // Fisher-Yates, written out so the permutation is fixed by the
        // seed alone (no dependence on a library's shuffle algorithm).
        for i in (1..corpus.len()).rev() {
            let j = rng.random_range(0..=i);
            corpus.swap(i, j);
        }
        self.lanes = vec![Lane::default(); lanes as usize];
        for (i, entry) in corpus.into_iter().enumerate() {
            self.lanes[i % lanes as usize].share.push(entry);
        }
        if let Some(window) = self.policy.start_window {
            self.profiling_started = false;
            self.plan_start_window(window);
            for lane in 0..lanes {
                self.timers.push(0, Timer::Lane(lane));
            }
            return;
        }
        let starts = self.arrival_offsets(lanes as usize);
        for lane in 0..lanes {
            let at = starts.as_ref().map_or(0, |s| s[lane as usize]);
            self.timers.push(at, Timer::Lane(lane));
        }
    }

    /// Picks each lane's `t*` and warm turns; the profiling start is the
    /// largest (capped) warmup lead, so every lane reaches `t*` together.
    fn plan_start_window(&mut self, window: crate::policy::StartWindow) {
        let mut profiling_start = 0;
        for lane in 0..self.lanes.len() {
            let Some(&(tree, _)) = self.lanes[lane].share.first() else {
                continue;
            };
            let compiled = &self.trees[tree as usize];
            let t_star =
                crate::start::t_star(compiled, window, self.policy.seed, tree, lane as u32);
            let mid = crate::start::mid_start(compiled, t_star);
            profiling_start =
                profiling_start.max(mid.max_lead(compiled).min(self.policy.warmup_spread));
            let l = &mut self.lanes[lane];
            l.t_star = Some(t_star);
            l.warmups = mid.warm.len() as u32;
            l.mid_start = Some(mid);
        }
        self.profiling_start = profiling_start;
        // Pushed before the lanes' timers: at equal times it fires first.
        self.timers.push(profiling_start, Timer::Profiling);
    }

    /// Turns a freshly started play into one entered at `mid.t_star`:
    /// history turns are done, each warm turn goes out at its (capped) lead
    /// before the profiling start, and every live turn is due at its
    /// recorded offset from `t*`, after its agent's warmup completes and
    /// after its live predecessors, as recorded.
    fn enter_mid_play(&mut self, play: u32, mid: &crate::start::MidStart, now: Nanos) {
        let p = self.plays[play as usize];
        let tree = &self.trees[p.tree as usize];
        let n = tree.turn_count() as usize;
        let base = p.slot_base as usize;
        let mut live_in = vec![0u32; n];
        let mut history_in = vec![false; n];
        for t in 0..n {
            for e in tree.out(t as u32) {
                if mid.history[t] {
                    history_in[e.to as usize] = true;
                } else {
                    live_in[e.to as usize] += 1;
                }
            }
        }
        let mut warm_of = vec![NO_TURN; n];
        for &(warm, next) in &mid.warm {
            warm_of[warm as usize] = next;
        }
        let t0 = self.profiling_start;
        let mut finished = 0u32;
        let mut due = Vec::new();
        for t in 0..n {
            let slot = &mut self.slots[base + t];
            if mid.history[t] {
                if warm_of[t] == NO_TURN {
                    slot.state = TurnState::History;
                    finished += 1;
                } else {
                    slot.warmup = true;
                    slot.warm_next = warm_of[t];
                    slot.pending_in = 0;
                    let lead = mid.lead(tree, t as u32).min(self.policy.warmup_spread);
                    slot.due_key = t0.saturating_sub(lead).saturating_add(self.shift);
                    due.push((base + t) as u32);
                }
                continue;
            }
            slot.pending_in = live_in[t];
            if history_in[t] || tree.in_degree[t] == 0 {
                let offset = tree.start[t].saturating_sub(mid.t_star);
                slot.due_key = t0.saturating_add(offset).saturating_add(self.shift);
            } else {
                slot.due_key = 0;
            }
        }
        for &(_, next) in &mid.warm {
            self.slots[base + next as usize].pending_in += 1;
        }
        for t in 0..n {
            let slot = &self.slots[base + t];
            if !mid.history[t] && slot.pending_in == 0 && slot.state == TurnState::Blocked {
                due.push((base + t) as u32);
            }
        }
        self.stats.history += u64::from(finished);
        self.plays[play as usize].remaining -= finished;
        for slot in due {
            self.schedule(slot, now);
        }
    }

    // ----- driver-facing verbs -------------------------------------------

    /// The next command, if any. Call until `None` after every `handle_*`.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// When `handle_timeout` should next be called. `None`: no timer is
    /// pending (the run is over once nothing is in flight either).
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let mut next = self.timers.peek_key().map(|k| k.saturating_sub(self.shift));
        if let Some(deadline) = self.deadline() {
            if !self.stopped && (next.is_some() || self.inflight > 0 || self.has_live_work()) {
                next = Some(next.map_or(deadline, |n| n.min(deadline)));
            }
        }
        if let Some(grace_end) = self.grace_end() {
            if !self.grace_fired && self.inflight > 0 {
                next = Some(next.map_or(grace_end, |n| n.min(grace_end)));
            }
        }
        next
    }

    /// Time has reached `now`: fire every timer due by then.
    pub fn handle_timeout(&mut self, now: Nanos) -> Result<(), EngineError> {
        self.advance(now)?;
        let deadline = self.deadline();
        while let Some(key) = self.timers.peek_key() {
            let due = key.saturating_sub(self.shift);
            if due > now || deadline.is_some_and(|d| due >= d) {
                break;
            }
            let Some((_, timer)) = self.timers.pop_due(key) else {
                break;
            };
            self.stats.events += 1;
            match timer {
                // A turn skipped while its timer was pending: a tombstone.
                Timer::Turn(slot) if self.slots[slot as usize].state != TurnState::Timer => {}
                Timer::Turn(slot) => self.become_eligible(slot, due, now),
                Timer::Play(play) => self.start_play(play, due, now),
                Timer::Lane(lane) => self.start_next_in_lane(lane, due, now),
                Timer::Profiling => {
                    self.profiling_start = due;
                    self.profiling_started = true;
                }
            }
        }
        if let Some(deadline) = deadline {
            if now >= deadline && !self.stopped {
                self.stop(deadline, now);
            }
        }
        if self.grace_end().is_some_and(|end| now >= end) && !self.grace_fired {
            self.fire_grace();
        }
        self.check_idle(now);
        Ok(())
    }

    /// Stop sending now (e.g. the user pressed Ctrl+C): turns not yet sent
    /// are skipped, plays not yet started never start, and requests in
    /// flight get the policy's grace, then are cancelled. Idempotent.
    pub fn handle_stop(&mut self, now: Nanos) -> Result<(), EngineError> {
        self.advance(now)?;
        if !self.stopped {
            self.stop(now, now);
        }
        self.check_idle(now);
        Ok(())
    }

    /// True once the duration ended or `handle_stop` was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The request was put on the wire at `at`.
    ///
    /// `at` may be earlier than the engine's latest time (a live driver can
    /// hear of an event after a timer fired): the event is anchored at `at`
    /// and processed now.
    pub fn handle_sent(&mut self, at: Nanos, id: RequestId) -> Result<(), EngineError> {
        let index = self.slot_index(id)?;
        match self.slots[index as usize].state {
            TurnState::Dispatched => {}
            TurnState::Sent => return Err(EngineError::AlreadySent(id)),
            TurnState::Done | TurnState::Failed | TurnState::Cancelled => {
                return Err(EngineError::AlreadyCompleted(id))
            }
            _ => return Err(EngineError::NotDispatched(id)),
        }
        let now = self.catch_up(at);
        self.stats.events += 1;
        let slot = &mut self.slots[index as usize];
        slot.state = TurnState::Sent;
        slot.sent = at;
        slot.shift_at_sent = self.shift;
        if !slot.warmup {
            self.resolve_out_edges(index, Anchor::Start, at);
        }
        self.check_idle(now);
        Ok(())
    }

    /// The request's last byte arrived at `at` (or it ended otherwise).
    /// A request completed without `handle_sent` counts as sent at `at`.
    /// As with [`Scheduler::handle_sent`], `at` may be late.
    pub fn handle_completion(
        &mut self,
        at: Nanos,
        id: RequestId,
        outcome: Outcome,
    ) -> Result<(), EngineError> {
        let index = self.slot_index(id)?;
        let was_sent = match self.slots[index as usize].state {
            TurnState::Dispatched => false,
            TurnState::Sent => true,
            TurnState::Done | TurnState::Failed | TurnState::Cancelled => {
                return Err(EngineError::AlreadyCompleted(id))
            }
            _ => return Err(EngineError::NotDispatched(id)),
        };
        let now = self.catch_up(at);
        self.stats.events += 1;
        let warmup = self.slots[index as usize].warmup;
        if !was_sent {
            let slot = &mut self.slots[index as usize];
            slot.sent = at;
            slot.shift_at_sent = self.shift;
            if !warmup {
                self.resolve_out_edges(index, Anchor::Start, at);
            }
        }
        let slot = &mut self.slots[index as usize];
        slot.end = at;
        slot.shift_at_end = self.shift;
        slot.state = match outcome {
            Outcome::Ok => TurnState::Done,
            Outcome::Failed | Outcome::EndTrajectory => TurnState::Failed,
            Outcome::Cancelled => TurnState::Cancelled,
        };
        let play = slot.play;
        let warm_next = slot.warm_next;
        let turn = slot.turn;
        if warmup && matches!(outcome, Outcome::Failed | Outcome::EndTrajectory) {
            let tree = &self.trees[self.plays[play as usize].tree as usize];
            if tree.agent_of[turn as usize] == 0 && self.aborted.is_none() {
                self.aborted = Some(id);
            }
        }
        match outcome {
            Outcome::Ok => self.stats.completed += 1,
            Outcome::Failed | Outcome::EndTrajectory => self.stats.failed += 1,
            Outcome::Cancelled => self.stats.cancelled += 1,
        }
        self.stats.last_completion = self.stats.last_completion.max(at);
        self.inflight -= 1;
        self.plays[play as usize].inflight -= 1;
        // Turns already waiting for the cap go first (FIFO by eligibility),
        // then successors made eligible by this completion.
        self.drain_ready(now);
        if outcome == Outcome::EndTrajectory {
            self.end_trajectory(index, now);
        }
        if warmup {
            // A warmup releases only its agent's next turn.
            let base = self.plays[play as usize].slot_base;
            self.resolve_one(base + warm_next, at);
        } else {
            self.resolve_out_edges(index, Anchor::End, at);
        }
        self.turn_finished(play, now);
        self.check_tree_idle(play, now);
        self.check_idle(now);
        Ok(())
    }

    // ----- queries ---------------------------------------------------------

    /// The request whose failure aborted the run: a warmup of a tree's
    /// root agent that failed (without it, the play's measured turns would
    /// replay a conversation the server never saw). A driver stops the run
    /// when this is set; the scheduler itself only reports it.
    pub fn aborted(&self) -> Option<RequestId> {
        self.aborted
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn trees(&self) -> &[CompiledTree] {
        &self.trees
    }

    pub fn plays(&self) -> &[Play] {
        &self.plays
    }

    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// Every turn of every started play, in request-id order.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub fn slot(&self, id: RequestId) -> Option<&Slot> {
        usize::try_from(id).ok().and_then(|i| self.slots.get(i))
    }

    /// The tree and play of a request.
    pub fn request_tree(&self, id: RequestId) -> Option<(&CompiledTree, &Play, u32)> {
        let slot = self.slot(id)?;
        let play = self.plays.get(slot.play as usize)?;
        Some((self.trees.get(play.tree as usize)?, play, slot.turn))
    }

    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// Total idle time skipped so far.
    pub fn shift(&self) -> Nanos {
        self.shift
    }

    /// True when nothing is in flight and nothing will ever happen again.
    pub fn is_finished(&self) -> bool {
        self.inflight == 0 && self.commands.is_empty() && self.poll_timeout().is_none()
    }

    // ----- internals -----------------------------------------------------

    /// The end of the duration, once profiling started (with a start
    /// window the duration counts from the profiling start).
    fn deadline(&self) -> Option<Nanos> {
        if !self.profiling_started {
            return None;
        }
        self.policy
            .duration
            .map(|d| self.profiling_start.saturating_add(d))
    }

    /// Where measurement starts (see the field): the planned instant until
    /// the profiling timer fires, then the instant it fired (idle shifts
    /// move it with every other timer).
    pub fn profiling_start(&self) -> Nanos {
        self.profiling_start
    }

    fn has_live_work(&self) -> bool {
        !self.ready.is_empty() || self.live_trees > 0
    }

    /// Moves the engine's time to `at` if it is later; returns the time to
    /// process an event at (never earlier than the last one).
    fn catch_up(&mut self, at: Nanos) -> Nanos {
        self.now = self.now.max(at);
        self.now
    }

    /// When in-flight requests are cancelled, once stopped.
    fn grace_end(&self) -> Option<Nanos> {
        self.stats
            .stopped_at
            .map(|at| at.saturating_add(self.policy.grace))
    }

    fn advance(&mut self, now: Nanos) -> Result<(), EngineError> {
        if now < self.now {
            return Err(EngineError::TimeWentBackwards {
                now,
                last: self.now,
            });
        }
        self.now = now;
        Ok(())
    }

    fn slot_index(&self, id: RequestId) -> Result<u32, EngineError> {
        if id < self.slots.len() as u64 {
            Ok(id as u32)
        } else {
            Err(EngineError::UnknownRequest(id))
        }
    }

    /// Starts a play at its beginning: its source turns are due at `at`
    /// plus their recorded offsets.
    fn start_play(&mut self, play: u32, at: Nanos, now: Nanos) {
        if !self.open_play(play, at) {
            return;
        }
        let p = self.plays[play as usize];
        let tree_index = p.tree as usize;
        for i in 0..self.trees[tree_index].sources.len() {
            let source = self.trees[tree_index].sources[i];
            let offset = self.trees[tree_index].start[source as usize];
            let slot = p.slot_base + source;
            self.slots[slot as usize].due_key =
                at.saturating_add(offset).saturating_add(self.shift);
            self.schedule(slot, now);
        }
    }

    /// Allocates a play's turns, all blocked. False once stopped.
    fn open_play(&mut self, play: u32, at: Nanos) -> bool {
        if self.stopped {
            return false;
        }
        let tree_index = self.plays[play as usize].tree as usize;
        let turns = self.trees[tree_index].turn_count();
        let base = self.slots.len() as u32;
        {
            let p = &mut self.plays[play as usize];
            p.started = Some(at);
            p.slot_base = base;
            p.remaining = turns;
        }
        let tree = &self.trees[tree_index];
        self.slots.extend((0..turns).map(|turn| Slot {
            play,
            turn,
            state: TurnState::Blocked,
            pending_in: tree.in_degree[turn as usize],
            due_key: 0,
            eligible: 0,
            dispatched: 0,
            queue_wait: 0,
            sent: 0,
            end: 0,
            shift_at_eligible: 0,
            shift_at_sent: 0,
            shift_at_end: 0,
            warmup: false,
            warm_next: NO_TURN,
        }));
        self.stats.plays_started += 1;
        self.live_trees += 1;
        if self.live_trees > self.stats.peak_live_trees {
            self.stats.peak_live_trees = self.live_trees;
            self.stats.peak_live_trees_at = at;
        }
        true
    }

    fn start_next_in_lane(&mut self, lane: u32, at: Nanos, now: Nanos) {
        if self.stopped {
            return;
        }
        let l = &mut self.lanes[lane as usize];
        if l.share.is_empty() {
            l.dry_at.get_or_insert(at);
            return;
        }
        if l.next == l.share.len() {
            if !self.policy.loop_lanes {
                l.dry_at = Some(at);
                return;
            }
            if l.last_wrap == Some(at) {
                l.stalled = true;
                l.dry_at = Some(at);
                return;
            }
            l.last_wrap = Some(at);
            l.next = 0;
        }
        let (tree, copy) = l.share[l.next];
        l.next += 1;
        l.plays += 1;
        let play = self.plays.len() as u32;
        let lane_play = l.plays - 1;
        let mid = if lane_play == 0 {
            l.mid_start.take()
        } else {
            None
        };
        self.plays.push(Play {
            tree,
            copy,
            lane: Some(lane),
            planned: at,
            started: None,
            done: None,
            lane_play,
            t_star: mid.as_ref().map(|m| m.t_star),
            slot_base: 0,
            remaining: 0,
            inflight: 0,
        });
        match mid {
            Some(mid) => {
                if self.open_play(play, at) {
                    self.enter_mid_play(play, &mid, now);
                }
            }
            None => self.start_play(play, at, now),
        }
    }

    /// All edges of `slot` resolved: wait for the due time or go now.
    fn schedule(&mut self, slot: u32, now: Nanos) {
        let key = self.slots[slot as usize].due_key;
        let due = key.saturating_sub(self.shift);
        if due <= now {
            self.become_eligible(slot, due, now);
        } else {
            self.slots[slot as usize].state = TurnState::Timer;
            self.timers.push(key, Timer::Turn(slot));
        }
    }

    fn become_eligible(&mut self, slot: u32, eligible: Nanos, now: Nanos) {
        let s = &mut self.slots[slot as usize];
        s.eligible = eligible;
        s.shift_at_eligible = self.shift;
        if self.stopped {
            s.state = TurnState::Skipped;
            self.stats.skipped += 1;
            let play = s.play;
            self.turn_finished(play, now);
            return;
        }
        let capped = self
            .policy
            .max_inflight
            .is_some_and(|cap| self.inflight >= cap || !self.ready.is_empty());
        if capped {
            s.state = TurnState::Queued;
            // Holds the time it joined the FIFO until dispatch.
            s.queue_wait = now;
            self.ready.push_back(slot);
            self.idle_since = None;
        } else {
            self.dispatch(slot, now);
        }
    }

    fn dispatch(&mut self, slot: u32, now: Nanos) {
        let s = &mut self.slots[slot as usize];
        if s.state == TurnState::Queued {
            s.queue_wait = now.saturating_sub(s.queue_wait);
        }
        s.state = TurnState::Dispatched;
        s.dispatched = now;
        let play = s.play;
        self.plays[play as usize].inflight += 1;
        self.inflight += 1;
        self.idle_since = None;
        self.stats.dispatched += 1;
        if s.warmup {
            self.stats.warmups += 1;
        }
        self.stats.events += 1;
        if self.inflight > self.stats.peak_inflight {
            self.stats.peak_inflight = self.inflight;
            self.stats.peak_inflight_at = now;
        }
        self.commands
            .push_back(Command::Dispatch(slot as RequestId));
    }

    fn drain_ready(&mut self, now: Nanos) {
        let Some(cap) = self.policy.max_inflight else {
            return;
        };
        while self.inflight < cap {
            let Some(slot) = self.ready.pop_front() else {
                break;
            };
            self.dispatch(slot, now);
        }
    }

    fn resolve_out_edges(&mut self, slot: u32, anchor: Anchor, at: Nanos) {
        let s = self.slots[slot as usize];
        let play = self.plays[s.play as usize];
        let tree_index = play.tree as usize;
        let (begin, end) = {
            let tree = &self.trees[tree_index];
            (
                tree.out_start[s.turn as usize] as usize,
                tree.out_start[s.turn as usize + 1] as usize,
            )
        };
        for e in begin..end {
            let edge = self.trees[tree_index].out_edges[e];
            if edge.anchor != anchor {
                continue;
            }
            let target = play.slot_base + edge.to;
            let contribution = at.saturating_add(edge.gap).saturating_add(self.shift);
            let t = &mut self.slots[target as usize];
            if t.state != TurnState::Blocked {
                continue;
            }
            t.due_key = t.due_key.max(contribution);
            t.pending_in -= 1;
            if t.pending_in == 0 {
                self.schedule(target, self.now);
            }
        }
    }

    /// One incoming edge of `target` resolved, its constraint `at`.
    fn resolve_one(&mut self, target: u32, at: Nanos) {
        let contribution = at.saturating_add(self.shift);
        let t = &mut self.slots[target as usize];
        if t.state != TurnState::Blocked {
            return;
        }
        t.due_key = t.due_key.max(contribution);
        t.pending_in -= 1;
        if t.pending_in == 0 {
            self.schedule(target, self.now);
        }
    }

    /// The agent of `slot` (and every subagent under it) ends: its turns
    /// not yet sent are skipped. Edges from them into other agents (a join
    /// into the parent) resolve now, so nobody waits for them.
    fn end_trajectory(&mut self, slot: u32, now: Nanos) {
        let s = self.slots[slot as usize];
        let p = self.plays[s.play as usize];
        let tree = &self.trees[p.tree as usize];
        let agents = tree.agent_count as usize;
        let mut ended = vec![false; agents];
        ended[tree.agent_of[s.turn as usize] as usize] = true;
        for a in 0..agents {
            let parent = tree.agent_parent[a];
            if parent != NO_TURN && ended[parent as usize] {
                ended[a] = true;
            }
        }
        let mut skipped = Vec::new();
        for t in 0..tree.turn_count() {
            let index = p.slot_base + t;
            let slot = &mut self.slots[index as usize];
            if ended[tree.agent_of[t as usize] as usize] && slot.state.is_pending() {
                slot.state = TurnState::Skipped;
                skipped.push(index);
            }
        }
        if skipped.is_empty() {
            return;
        }
        self.ready
            .retain(|&q| self.slots[q as usize].state == TurnState::Queued);
        self.stats.skipped += skipped.len() as u64;
        for &index in &skipped {
            self.resolve_out_edges(index, Anchor::Start, now);
            self.resolve_out_edges(index, Anchor::End, now);
        }
        for _ in &skipped {
            self.turn_finished(s.play, now);
        }
    }

    /// The per-tree idle watchdog: when `play` has nothing in flight or
    /// queued and its next timer is more than the cap away, every pending
    /// constraint of that play moves earlier by the same amount (its
    /// timers are re-queued; the old entries become tombstones).
    fn check_tree_idle(&mut self, play: u32, now: Nanos) {
        let Some(cap) = self.policy.tree_idle_cap else {
            return;
        };
        let p = self.plays[play as usize];
        if p.inflight > 0 || p.done.is_some() || p.started.is_none() || self.stopped {
            return;
        }
        let turns = self.trees[p.tree as usize].turn_count();
        let range = p.slot_base as usize..(p.slot_base + turns) as usize;
        if self.slots[range.clone()]
            .iter()
            .any(|s| s.state == TurnState::Queued)
        {
            return;
        }
        let Some(earliest) = self.slots[range.clone()]
            .iter()
            .filter(|s| s.state == TurnState::Timer)
            .map(|s| s.due_key.saturating_sub(self.shift))
            .min()
        else {
            return;
        };
        let target = now.saturating_add(cap);
        if earliest <= target {
            return;
        }
        let delta = earliest - target;
        self.stats.tree_idle_shifts += 1;
        self.stats.tree_idle_skipped += delta;
        for index in range {
            let slot = &mut self.slots[index];
            if slot.state.is_pending() && slot.state != TurnState::Queued {
                slot.due_key = slot.due_key.saturating_sub(delta);
                if slot.state == TurnState::Timer {
                    self.timers.push(slot.due_key, Timer::Turn(index as u32));
                }
            }
        }
    }

    fn turn_finished(&mut self, play: u32, now: Nanos) {
        let p = &mut self.plays[play as usize];
        p.remaining -= 1;
        if p.remaining > 0 {
            return;
        }
        p.done = Some(now);
        let lane = p.lane;
        self.live_trees -= 1;
        self.stats.plays_done += 1;
        if let Some(lane) = lane {
            self.start_next_in_lane(lane, now, now);
        }
    }

    /// The duration is over (at `at`), or the run was stopped: nothing new
    /// is sent; the grace counts from `at`.
    fn stop(&mut self, at: Nanos, now: Nanos) {
        self.stopped = true;
        self.stats.stopped_at = Some(at);
        let timers: Vec<Timer> = self.timers.drain().collect();
        for timer in timers {
            if let Timer::Play(_) = timer {
                self.stats.plays_not_started += 1;
            }
        }
        self.ready.clear();
        for play in 0..self.plays.len() as u32 {
            let p = self.plays[play as usize];
            if p.started.is_none() || p.done.is_some() {
                continue;
            }
            let turns = self.trees[p.tree as usize].turn_count();
            for turn in 0..turns {
                let s = &mut self.slots[(p.slot_base + turn) as usize];
                if s.state.is_pending() {
                    s.state = TurnState::Skipped;
                    self.stats.skipped += 1;
                    self.turn_finished(play, now);
                }
            }
        }
    }

    fn fire_grace(&mut self) {
        self.grace_fired = true;
        for (index, slot) in self.slots.iter().enumerate() {
            if slot.state.is_in_flight() {
                self.commands.push_back(Command::Cancel(index as RequestId));
            }
        }
    }

    fn check_idle(&mut self, now: Nanos) {
        if self.stopped || self.inflight > 0 || !self.ready.is_empty() {
            self.idle_since = None;
            return;
        }
        let since = *self.idle_since.get_or_insert(now);
        let (Some(cap), Some(key)) = (self.policy.idle_gap_cap, self.timers.peek_key()) else {
            return;
        };
        let due = key.saturating_sub(self.shift);
        let target = since.saturating_add(cap).max(now);
        if due > target {
            let delta = due - target;
            self.shift += delta;
            self.stats.idle_shifts += 1;
            self.stats.idle_skipped += delta;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::compile;
    use crate::derive::DeriveOptions;
    use crate::model::{Agent, AgentKind, Tree, Turn, Workload};

    fn two_turn_scheduler() -> Scheduler {
        let turns = vec![
            Turn {
                start: 0,
                duration: Some(10),
                ..Turn::default()
            },
            Turn {
                start: 15,
                duration: Some(10),
                ..Turn::default()
            },
        ];
        let workload = Workload {
            trees: vec![Tree {
                id: "t".into(),
                agents: vec![Agent {
                    id: "root".into(),
                    parent: None,
                    kind: AgentKind::Root,
                    recorded_end: None,
                    turns,
                }],
                ..Tree::default()
            }],
        };
        let policy = Policy::default();
        let compiled = compile(&workload, &policy, &DeriveOptions::default()).unwrap();
        Scheduler::new(compiled, policy).unwrap()
    }

    #[test]
    fn misuse_returns_errors_and_changes_nothing() {
        let mut s = two_turn_scheduler();
        assert_eq!(s.poll_timeout(), Some(0));
        s.handle_timeout(0).unwrap();
        assert_eq!(s.poll_command(), Some(Command::Dispatch(0)));
        assert_eq!(s.poll_command(), None);

        // Unknown ids, and turns not dispatched yet.
        assert_eq!(s.handle_sent(0, 99), Err(EngineError::UnknownRequest(99)));
        assert_eq!(
            s.handle_completion(0, 1, Outcome::Ok),
            Err(EngineError::NotDispatched(1))
        );
        assert_eq!(s.handle_sent(0, 1), Err(EngineError::NotDispatched(1)));

        s.handle_sent(0, 0).unwrap();
        assert_eq!(s.handle_sent(1, 0), Err(EngineError::AlreadySent(0)));
        s.handle_completion(10, 0, Outcome::Ok).unwrap();
        assert_eq!(
            s.handle_completion(11, 0, Outcome::Ok),
            Err(EngineError::AlreadyCompleted(0))
        );
        assert_eq!(
            s.handle_timeout(5),
            Err(EngineError::TimeWentBackwards { now: 5, last: 10 })
        );
        assert_eq!(s.inflight(), 0);
        assert_eq!(s.stats().completed, 1);

        // The engine goes on as if the bad calls never happened.
        assert_eq!(s.poll_timeout(), Some(15));
        s.handle_timeout(15).unwrap();
        assert_eq!(s.poll_command(), Some(Command::Dispatch(1)));
        s.handle_sent(15, 1).unwrap();
        s.handle_completion(25, 1, Outcome::Failed).unwrap();
        assert!(s.is_finished());
        assert_eq!(s.stats().failed, 1);
    }

    #[test]
    fn a_late_completion_is_anchored_at_its_own_time() {
        // Turn 1 follows turn 0's end by 5 ns (recorded: end 10, start 15).
        let mut s = two_turn_scheduler();
        s.handle_timeout(0).unwrap();
        assert_eq!(s.poll_command(), Some(Command::Dispatch(0)));
        s.handle_sent(0, 0).unwrap();
        // The driver hears of the completion (at 10) only at 12, after a
        // timer call at 12: turn 1 is still due at 15, not 17.
        s.handle_timeout(12).unwrap();
        s.handle_completion(10, 0, Outcome::Ok).unwrap();
        assert_eq!(s.slot(0).unwrap().end, 10);
        assert_eq!(s.poll_timeout(), Some(15));
    }

    #[test]
    fn stop_skips_pending_turns_and_cancels_after_the_grace() {
        let mut s = two_turn_scheduler();
        s.handle_timeout(0).unwrap();
        assert_eq!(s.poll_command(), Some(Command::Dispatch(0)));
        s.handle_sent(0, 0).unwrap();
        s.handle_stop(3).unwrap();
        assert!(s.is_stopped());
        // Grace (30 s by default) counts from the stop.
        assert_eq!(s.poll_timeout(), Some(3 + 30 * NANOS_PER_SEC));
        s.handle_timeout(3 + 30 * NANOS_PER_SEC).unwrap();
        assert_eq!(s.poll_command(), Some(Command::Cancel(0)));
        s.handle_completion(3 + 30 * NANOS_PER_SEC, 0, Outcome::Cancelled)
            .unwrap();
        assert!(s.is_finished());
        assert_eq!(s.slot(1).unwrap().state, TurnState::Skipped);
    }

    #[test]
    fn a_completion_without_a_send_counts_as_sent_then() {
        let mut s = two_turn_scheduler();
        s.handle_timeout(0).unwrap();
        assert_eq!(s.poll_command(), Some(Command::Dispatch(0)));
        s.handle_completion(3, 0, Outcome::Failed).unwrap();
        let slot = s.slot(0).unwrap();
        assert_eq!((slot.sent, slot.end, slot.state), (3, 3, TurnState::Failed));
    }
}
