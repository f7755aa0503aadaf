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
//! that instant. Which trees a lane plays never depends on timing. Lanes
//! beyond the number of plays would hold nothing and are not made, so
//! `sessions = 4294967295` costs what `sessions = plays` does.
//!
//! # Start window and warmup
//! With `start_window` (the AgentX recipe), each lane's first play enters
//! its tree at a seeded `t*` ([`crate::start`]): turns recorded before it
//! are history, one warmup per agent alive at `t*` goes out at its capped
//! lead before the profiling start (a timer, so idle shifts move it too),
//! and live turns are due at their recorded offset from `t*`, after their
//! agent's warmup. The duration counts from the profiling start.
//!
//! # The accelerated cache warmup
//! With `warmup_requests_per_lane = K` (or `cache_warmup_duration`), each
//! lane's first play goes on from `t*` for its first K live turns in
//! dependency order ([`crate::start::accelerated`]; every live turn for the
//! duration form): warmups sent as soon as their edges resolve, with no
//! gap and not before the boundary instant (every lane at `t*`). Every
//! other live turn of a first play waits for the profiling start, which
//! is the instant every warmup has returned (not before the boundary
//! instant); such a turn goes at the later of that and its recorded
//! constraint, so `residual = max(0, delay − drain wait)`. The global
//! idle cap is off, and a lane whose first play ended waits, until then.
//! The duration form hands its accelerated turns not yet released back to
//! profiling when the duration is up.
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
//!
//! # Forgetting finished plays
//! By default the scheduler keeps every play and every slot: a plan is the
//! whole history. A long live run calls [`Scheduler::forget_finished`]:
//! then a play that is done, when every play opened before it is done
//! too, is forgotten with its slots at the start of a later `handle_*`
//! call (what a call finished stays readable until the next call), and
//! the forgotten prefix is dropped in batches ([`crate::window`]). Ids
//! never change; [`Scheduler::slots`] and [`Scheduler::plays`] then start
//! at [`Scheduler::first_request`] and [`Scheduler::first_play`], and a
//! request id below the first is unknown. No decision reads a finished
//! play, so forgetting changes none.
//!
//! # Layout
//! This module is the core: the protocol, the timer heap, the commands, and
//! the event handlers, which call owned sub-states at fixed points. Each
//! sub-state owns its fields; none uses another (shared types live in
//! `types`):
//!
//! - `types`: the public vocabulary ([`Slot`], [`Play`], [`Lane`],
//!   [`Stats`], ...) and the timer kinds;
//! - `slots`: per-request state and its legal moves;
//! - `plays`: the plays, how many are live, the open-loop plan;
//! - `admission`: the `--max-inflight` cap and its FIFO;
//! - `idle`: the shifted time base, the idle-gap cap, the tree watchdog;
//! - `lanes`: the closed loop's deal and each lane's progress;
//! - `warmup`: the start window at run time, the profiling start, and the
//!   abort rule of a failed root warmup;
//! - `cache_warmup`: the accelerated cache warmup's marks, gate, count of
//!   warmups out and deferred lanes.

mod admission;
mod cache_warmup;
mod idle;
mod lanes;
mod plays;
mod slots;
mod types;
mod warmup;

pub use types::{Command, Footprint, Lane, Outcome, Play, RequestId, Slot, Stats, TurnState};

use std::collections::VecDeque;

use crate::dag::{CompiledTree, CompiledWorkload};
use crate::error::{EngineError, PolicyError};
use crate::model::Anchor;
use crate::policy::Policy;
use crate::queue::EventQueue;
use crate::start::MidStart;
use crate::time::Nanos;

use admission::Admission;
use cache_warmup::CacheWarmup;
use idle::IdleShift;
use lanes::Lanes;
use plays::Plays;
use slots::Slots;
use types::{Timer, NO_TURN};
use warmup::Warmup;

/// The scheduler. See the module documentation for the protocol.
#[derive(Debug)]
pub struct Scheduler {
    trees: Vec<CompiledTree>,
    policy: Policy,
    plays: Plays,
    slots: Slots,
    lanes: Lanes,
    timers: EventQueue<Timer>,
    commands: VecDeque<Command>,
    admission: Admission,
    idle: IdleShift,
    warmup: Warmup,
    cache_warmup: CacheWarmup,
    now: Nanos,
    stopped: bool,
    grace_fired: bool,
    /// [`Scheduler::forget_finished`] was called.
    forgetting: bool,
    stats: Stats,
}

impl Scheduler {
    /// Builds the scheduler at time 0 of the run's epoch: open-loop plays
    /// get their arrival timers, closed-loop lanes their start timers.
    pub fn new(workload: CompiledWorkload, policy: Policy) -> Result<Self, PolicyError> {
        policy.validate()?;
        // Plays and requests are numbered in `u32`: more would wrap.
        let footprint = Self::footprint(&workload, &policy)
            .filter(Footprint::fits_ids)
            .ok_or_else(|| {
                PolicyError::new(format!(
                    "every tree times copies: expected at most {} plays and {} requests",
                    Footprint::MAX_COUNT,
                    Footprint::MAX_COUNT
                ))
            })?;
        let turns = footprint.turns as usize;
        let mut scheduler = Scheduler {
            trees: workload.trees,
            plays: Plays::default(),
            slots: Slots::default(),
            lanes: Lanes::default(),
            timers: EventQueue::default(),
            commands: VecDeque::new(),
            admission: Admission::new(policy.max_inflight),
            idle: IdleShift::new(policy.idle_gap_cap, policy.tree_idle_cap),
            warmup: Warmup::default(),
            cache_warmup: CacheWarmup::default(),
            now: 0,
            stopped: false,
            grace_fired: false,
            forgetting: false,
            stats: Stats::default(),
            policy,
        };
        match scheduler.policy.sessions {
            None => {
                scheduler.slots.reserve(turns);
                scheduler.plan_open_loop();
            }
            Some(n) => scheduler.plan_lanes(n),
        }
        scheduler.note_idle(0);
        Ok(scheduler)
    }

    /// What a plan of `workload` under `policy` would hold, counted with
    /// checked arithmetic before anything is allocated; `None` when a
    /// count does not fit 64 bits. The CLI compares it with the machine's
    /// memory and the `u32` ids ([`Footprint::fits_ids`]) before planning.
    pub fn footprint(workload: &CompiledWorkload, policy: &Policy) -> Option<Footprint> {
        use std::mem::size_of;
        let copies = u64::from(policy.copies);
        let plays = (workload.trees.len() as u64).checked_mul(copies)?;
        let turns = workload.turns.checked_mul(copies)?;
        let lanes = policy.sessions.map_or(0, |n| u64::from(n).min(plays));
        let per_play = size_of::<Play>() + size_of::<Nanos>() + 2 * size_of::<Timer>();
        let per_lane_play = if policy.sessions.is_some() {
            size_of::<(u32, u32)>()
        } else {
            0
        };
        let bytes = turns
            .checked_mul(size_of::<Slot>() as u64)?
            .checked_add(plays.checked_mul((per_play + per_lane_play) as u64)?)?
            .checked_add(lanes.checked_mul(size_of::<Lane>() as u64)?)?;
        Some(Footprint {
            plays,
            turns,
            lanes,
            bytes,
        })
    }

    fn plan_open_loop(&mut self) {
        let planned = plays::open_loop(&self.trees, &self.policy);
        for (play, p) in (0u32..).zip(&planned) {
            self.timers.push(p.planned, Timer::Play(play));
        }
        self.plays = Plays::planned(planned);
    }

    fn plan_lanes(&mut self, sessions: u32) {
        self.lanes = Lanes::deal(self.trees.len() as u32, sessions, &self.policy);
        // Only lanes with a share exist (at most one per play).
        let count = self.lanes.all().len() as u32;
        if let Some(window) = self.policy.start_window {
            self.warmup = Warmup::plan(
                window,
                self.lanes.all_mut(),
                &self.trees,
                self.policy.seed,
                self.policy.warmup_spread,
            );
            let boundary = self.warmup.profiling_start();
            if self.policy.accelerates() {
                self.cache_warmup =
                    CacheWarmup::plan(&self.policy, self.lanes.all_mut(), &self.trees, boundary);
            }
            // Pushed before the lanes' timers: at equal times it fires first.
            self.timers.push(boundary, Timer::Profiling);
            for lane in 0..count {
                self.timers.push(0, Timer::Lane(lane));
            }
            if let Some(d) = self.policy.cache_warmup_duration.filter(|&d| d > 0) {
                self.timers
                    .push(boundary.saturating_add(d), Timer::CacheWarmupEnd);
            }
            return;
        }
        let starts = self
            .policy
            .arrival
            .offsets(count as usize, self.policy.seed);
        // A shard starts its own lanes only; starts stay the unsharded ones.
        for lane in 0..count {
            if self.policy.shard.is_some_and(|s| !s.keeps(u64::from(lane))) {
                continue;
            }
            let at = starts.as_ref().map_or(0, |s| s[lane as usize]);
            self.timers.push(at, Timer::Lane(lane));
        }
    }

    /// How many finished slots (or plays) [`Scheduler::forget_finished`]
    /// lets pile up before dropping them: a batch this large (and at least
    /// half of what is stored) is moved at most once, and a short run
    /// drops nothing.
    pub const FORGET_BATCH: u32 = 4096;

    /// From now on, forget finished plays and their slots (see the module
    /// documentation), dropping them in batches of at least `min_drop`
    /// ([`Scheduler::FORGET_BATCH`] for a live run; 1 drops as early as
    /// possible). For drivers that read a request only between its
    /// dispatch and the call after its completion; a plan keeps all.
    pub fn forget_finished(&mut self, min_drop: u32) {
        self.forgetting = true;
        self.slots.drop_finished(min_drop);
        self.plays.drop_finished(min_drop);
    }

    // ----- driver-facing verbs -------------------------------------------

    /// The next command, if any. Call until `None` after every `handle_*`.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// When `handle_timeout` should next be called. `None`: no timer is
    /// pending (the run is over once nothing is in flight either).
    pub fn poll_timeout(&self) -> Option<Nanos> {
        let mut next = self.timers.peek_key().map(|k| self.idle.due(k));
        let inflight = self.admission.inflight();
        if let Some(deadline) = self.deadline() {
            if !self.stopped && (next.is_some() || inflight > 0 || self.has_live_work()) {
                next = Some(next.map_or(deadline, |n| n.min(deadline)));
            }
        }
        if let Some(grace_end) = self.grace_end() {
            if !self.grace_fired && inflight > 0 {
                next = Some(next.map_or(grace_end, |n| n.min(grace_end)));
            }
        }
        next
    }

    /// Time has reached `now`: fire every timer due by then.
    pub fn handle_timeout(&mut self, now: Nanos) -> Result<(), EngineError> {
        self.advance(now)?;
        self.forget_done();
        let deadline = self.deadline();
        while let Some(key) = self.timers.peek_key() {
            let due = self.idle.due(key);
            if due > now || deadline.is_some_and(|d| due >= d) {
                break;
            }
            let Some((_, timer)) = self.timers.pop_due(key) else {
                break;
            };
            self.stats.events += 1;
            match timer {
                // A turn skipped while its timer was pending: a tombstone.
                // (Or of a play since forgotten.)
                Timer::Turn(slot)
                    if self.slots.get(slot.into()).map(|s| s.state) != Some(TurnState::Timer) => {}
                Timer::Turn(slot) => self.become_eligible(slot, due, now),
                Timer::Play(play) => self.start_play(play, due, now),
                Timer::Lane(lane) => self.start_next_in_lane(lane, due, now),
                Timer::Profiling if self.cache_warmup.holds() => {
                    self.cache_warmup.reach();
                    self.start_profiling_if_ready(due, now);
                }
                Timer::Profiling => self.warmup.profiling_fired(due),
                Timer::CacheWarmupEnd => {
                    let base = self.slots.base();
                    self.cache_warmup.close(base, self.slots.all_mut());
                    self.start_profiling_if_ready(due, now);
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
        self.note_idle(now);
        Ok(())
    }

    /// Stop sending now (e.g. the user pressed Ctrl+C): turns not yet sent
    /// are skipped, plays not yet started never start, and requests in
    /// flight get the policy's grace, then are cancelled. Idempotent.
    pub fn handle_stop(&mut self, now: Nanos) -> Result<(), EngineError> {
        self.advance(now)?;
        self.forget_done();
        if !self.stopped {
            self.stop(now, now);
        }
        self.note_idle(now);
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
        let (index, sent) = self.slots.in_flight(id)?;
        if sent {
            return Err(EngineError::AlreadySent(id));
        }
        self.forget_done();
        let now = self.catch_up(at);
        self.stats.events += 1;
        self.sent(index, at);
        self.note_idle(now);
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
        let (index, sent) = self.slots.in_flight(id)?;
        self.forget_done();
        let now = self.catch_up(at);
        self.stats.events += 1;
        if !sent {
            self.sent(index, at);
        }
        let play = self.slots.mark_end(index, at, self.idle.shift(), outcome);
        self.stats.count_end(outcome, at);
        self.admission.completed();
        self.plays.request_ended(play);
        // Turns already waiting for the cap go first (FIFO by eligibility),
        // then successors made eligible by this completion.
        self.admit_waiting(now);
        if outcome == Outcome::EndTrajectory {
            self.end_trajectory(index, now);
        }
        self.release_end(index, at, outcome);
        if self.slots[index].warmup && self.cache_warmup.holds() {
            self.cache_warmup.returned(1);
            self.start_profiling_if_ready(at, now);
        }
        self.turn_finished(play, now);
        self.check_tree_idle(play, now);
        self.note_idle(now);
        Ok(())
    }

    // ----- queries ---------------------------------------------------------

    /// The request whose failure aborted the run: a warmup of a tree's
    /// root agent that failed (without it, the play's measured turns would
    /// replay a conversation the server never saw). A driver stops the run
    /// when this is set; the scheduler itself only reports it.
    pub fn aborted(&self) -> Option<RequestId> {
        self.warmup.aborted()
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

    /// Every play (planned or started), by play id from
    /// [`Scheduler::first_play`] (0 unless forgetting).
    pub fn plays(&self) -> &[Play] {
        self.plays.all()
    }

    /// The id of `plays()[0]`.
    pub fn first_play(&self) -> u32 {
        self.plays.base()
    }

    /// Play `play`; `None` when there is none or it was forgotten.
    pub fn play(&self, play: u32) -> Option<&Play> {
        self.plays.get(play)
    }

    pub fn lanes(&self) -> &[Lane] {
        self.lanes.all()
    }

    /// Every turn of every started play, in request-id order from
    /// [`Scheduler::first_request`] (0 unless forgetting).
    pub fn slots(&self) -> &[Slot] {
        self.slots.all()
    }

    /// The request id of `slots()[0]`.
    pub fn first_request(&self) -> RequestId {
        RequestId::from(self.slots.base())
    }

    pub fn slot(&self, id: RequestId) -> Option<&Slot> {
        self.slots.get(id)
    }

    /// The tree and play of a request.
    pub fn request_tree(&self, id: RequestId) -> Option<(&CompiledTree, &Play, u32)> {
        let slot = self.slot(id)?;
        let play = self.plays.get(slot.play)?;
        Some((self.trees.get(play.tree as usize)?, play, slot.turn))
    }

    pub fn inflight(&self) -> u32 {
        self.admission.inflight()
    }

    /// Total idle time skipped so far.
    pub fn shift(&self) -> Nanos {
        self.idle.shift()
    }

    /// True when nothing is in flight and nothing will ever happen again.
    pub fn is_finished(&self) -> bool {
        self.admission.inflight() == 0 && self.commands.is_empty() && self.poll_timeout().is_none()
    }

    /// Where measurement starts: 0, or with a start window the instant
    /// every lane reaches its `t*` (after the warmups); the duration counts
    /// from here. The planned instant until the profiling timer fires, then
    /// the instant it fired (idle shifts move it with every other timer).
    pub fn profiling_start(&self) -> Nanos {
        self.warmup.profiling_start()
    }

    // ----- the core's steps ----------------------------------------------

    /// All edges of `slot` resolved: wait for the due time or go now.
    fn schedule(&mut self, slot: u32, now: Nanos) {
        let key = self
            .cache_warmup
            .due_key(&self.slots[slot], self.idle.key(now));
        let due = self.idle.due(key);
        if due <= now {
            self.become_eligible(slot, due, now);
        } else {
            self.slots[slot].due_key = key;
            self.slots[slot].state = TurnState::Timer;
            self.timers.push(key, Timer::Turn(slot));
        }
    }

    /// The turn's gap elapsed: skip it once stopped, else admit it.
    fn become_eligible(&mut self, slot: u32, eligible: Nanos, now: Nanos) {
        let s = &mut self.slots[slot];
        s.eligible = eligible;
        s.shift_at_eligible = self.idle.shift();
        if self.stopped {
            s.state = TurnState::Skipped;
            self.stats.skipped += 1;
            let play = s.play;
            self.turn_finished(play, now);
            return;
        }
        if self.admission.must_wait() {
            s.state = TurnState::Queued;
            // Holds the time it joined the FIFO until dispatch.
            s.queue_wait = now;
            self.admission.wait(slot);
            self.idle.busy();
        } else {
            self.dispatch(slot, now);
        }
    }

    fn dispatch(&mut self, slot: u32, now: Nanos) {
        let s = &mut self.slots[slot];
        if s.state == TurnState::Queued {
            s.queue_wait = now.saturating_sub(s.queue_wait);
        }
        s.state = TurnState::Dispatched;
        s.dispatched = now;
        let (play, warmup) = (s.play, s.warmup);
        self.plays.request_dispatched(play);
        let inflight = self.admission.dispatched();
        self.idle.busy();
        self.stats.dispatched += 1;
        if warmup {
            self.stats.warmups += 1;
        }
        self.stats.events += 1;
        if inflight > self.stats.peak_inflight {
            self.stats.peak_inflight = inflight;
            self.stats.peak_inflight_at = now;
        }
        self.commands
            .push_back(Command::Dispatch(slot as RequestId));
    }

    /// Dispatches the waiting turns the request cap now admits.
    fn admit_waiting(&mut self, now: Nanos) {
        while let Some(slot) = self.admission.next() {
            self.dispatch(slot, now);
        }
    }

    /// The request went on the wire at `at`: its `Start` edges resolve (a
    /// boundary warmup has none of its own; an accelerated one has).
    fn sent(&mut self, index: u32, at: Nanos) {
        self.slots.mark_sent(index, at, self.idle.shift());
        let s = self.slots[index];
        if !s.warmup || s.accelerated {
            self.resolve_out_edges(index, Anchor::Start, at);
        }
    }

    /// The request ended at `at`: its `End` edges resolve; a boundary
    /// warmup releases only its agent's next turn (and may abort the run).
    fn release_end(&mut self, index: u32, at: Nanos, outcome: Outcome) {
        let s = self.slots[index];
        if !s.warmup || s.accelerated {
            self.resolve_out_edges(index, Anchor::End, at);
        } else if let Some(next) = self.warmup.ended(index, outcome) {
            self.resolve_one(next, at);
        }
    }

    fn resolve_out_edges(&mut self, slot: u32, anchor: Anchor, at: Nanos) {
        let s = self.slots[slot];
        let base = self.plays[s.play].slot_base;
        let tree_index = self.plays[s.play].tree as usize;
        let (begin, end) = {
            let tree = &self.trees[tree_index];
            (
                tree.out_start[s.turn as usize] as usize,
                tree.out_start[s.turn as usize + 1] as usize,
            )
        };
        for e in begin..end {
            let edge = self.trees[tree_index].out_edges[e];
            if edge.anchor == anchor {
                self.resolve_one(base + edge.to, at.saturating_add(edge.gap));
            }
        }
    }

    /// One incoming edge of `target` resolved, its constraint `at`.
    #[inline]
    fn resolve_one(&mut self, target: u32, at: Nanos) {
        let contribution = self.idle.key(at);
        // A forgotten target (a gated turn of a play since finished) is no
        // longer blocked either.
        let Some(t) = self.slots.get_mut(target) else {
            return;
        };
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
        let s = self.slots[slot];
        let p = self.plays[s.play];
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
        let skipped = self
            .slots
            .skip_pending(p.slot_base, tree.turn_count(), |turn| {
                ended[tree.agent_of[turn as usize] as usize]
            });
        if skipped.is_empty() {
            return;
        }
        let slots = &self.slots;
        self.admission
            .retain(|&q| slots[q].state == TurnState::Queued);
        self.stats.skipped += skipped.len() as u64;
        let warmups = skipped.iter().filter(|&&i| slots[i].accelerated).count();
        self.cache_warmup.returned(warmups as u64);
        for &index in &skipped {
            self.resolve_out_edges(index, Anchor::Start, now);
            self.resolve_out_edges(index, Anchor::End, now);
        }
        for _ in &skipped {
            self.turn_finished(s.play, now);
        }
    }

    /// The per-tree idle watchdog, for `play` with nothing in flight (see
    /// [`IdleShift::watch_tree`]).
    fn check_tree_idle(&mut self, play: u32, now: Nanos) {
        if !self.idle.watches_trees() || self.stopped {
            return;
        }
        let p = self.plays[play];
        if p.inflight > 0 || p.done.is_some() || p.started.is_none() {
            return;
        }
        let turns = self.trees[p.tree as usize].turn_count();
        self.idle.watch_tree(
            now,
            p.slot_base,
            self.slots.block_mut(p.slot_base, turns),
            &mut self.timers,
            &mut self.stats,
        );
    }

    /// A turn of `play` finished; a lane whose play is done starts its
    /// next.
    fn turn_finished(&mut self, play: u32, now: Nanos) {
        if let Some(lane) = self.plays.turn_finished(play, now, &mut self.stats) {
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
        self.admission.clear();
        for play in self.plays.ids() {
            let p = self.plays[play];
            if p.started.is_none() || p.done.is_some() {
                continue;
            }
            let turns = self.trees[p.tree as usize].turn_count();
            let skipped = self.slots.skip_pending(p.slot_base, turns, |_| true);
            self.stats.skipped += skipped.len() as u64;
            for _ in skipped {
                self.turn_finished(play, now);
            }
        }
    }

    fn fire_grace(&mut self) {
        self.grace_fired = true;
        for (id, slot) in (self.first_request()..).zip(self.slots.all()) {
            if slot.state.is_in_flight() {
                self.commands.push_back(Command::Cancel(id));
            }
        }
    }

    /// After every event: the system is idle when nothing is in flight and
    /// nothing waits for the cap (and the run is not stopped).
    /// The global idle cap is off during the accelerated cache warmup.
    fn note_idle(&mut self, now: Nanos) {
        if self.stopped || !self.admission.is_idle() || self.cache_warmup.holds() {
            self.idle.busy();
            return;
        }
        self.idle.idle(now, self.timers.peek_key(), &mut self.stats);
    }

    /// The end of the duration, once profiling started (with a start
    /// window the duration counts from the profiling start).
    fn deadline(&self) -> Option<Nanos> {
        let since = self.warmup.measuring_since()?;
        self.policy.duration.map(|d| since.saturating_add(d))
    }

    fn has_live_work(&self) -> bool {
        self.admission.has_waiting() || self.plays.has_live()
    }

    /// Moves the engine's time to `at` if it is later; returns the time to
    /// process an event at (never earlier than the last one).
    fn catch_up(&mut self, at: Nanos) -> Nanos {
        self.now = self.now.max(at);
        self.now
    }

    /// With forgetting on: forgets the plays done whose predecessors in
    /// opening order (the order of their slot blocks) are all done, and
    /// their slots. Each step moves a cursor forward: O(1) amortized.
    fn forget_done(&mut self) {
        if !self.forgetting {
            return;
        }
        let mut cut = self.slots.forgotten();
        // `cut` is the first id of a block; its play is not forgotten yet.
        while let Some(slot) = self.slots.get(cut.into()) {
            let p = self.plays[slot.play];
            if p.done.is_none() {
                break;
            }
            cut = p.slot_base + self.trees[p.tree as usize].turn_count();
        }
        self.slots.forget_below(cut);
        let mut play = self.plays.forgotten();
        while self
            .plays
            .get(play)
            .is_some_and(|p| p.done.is_some() && p.slot_base < cut)
        {
            play += 1;
        }
        self.plays.forget_below(play);
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

    /// Starts a play at its beginning: its source turns are due at `at`
    /// plus their recorded offsets.
    fn start_play(&mut self, play: u32, at: Nanos, now: Nanos) {
        if !self.open_play(play, at) {
            return;
        }
        let p = self.plays[play];
        let tree_index = p.tree as usize;
        for i in 0..self.trees[tree_index].sources.len() {
            let source = self.trees[tree_index].sources[i];
            let offset = self.trees[tree_index].start[source as usize];
            let slot = p.slot_base + source;
            self.slots[slot].due_key = self.idle.key(at.saturating_add(offset));
            self.schedule(slot, now);
        }
    }

    /// Allocates a play's turns, all blocked. False once stopped.
    fn open_play(&mut self, play: u32, at: Nanos) -> bool {
        if self.stopped {
            return false;
        }
        let tree = &self.trees[self.plays[play].tree as usize];
        let base = self.slots.open(play, tree);
        self.plays
            .open(play, at, base, tree.turn_count(), &mut self.stats);
        true
    }

    /// The lane is free at `at`: it starts its next play, its first one
    /// entered at the lane's `t*` with a start window.
    fn start_next_in_lane(&mut self, lane: u32, at: Nanos, now: Nanos) {
        if self.stopped {
            return;
        }
        if self.cache_warmup.holds() && self.lanes.all()[lane as usize].plays > 0 {
            self.cache_warmup.defer(lane);
            return;
        }
        let Some(next) = self.lanes.next(lane, at) else {
            return;
        };
        let entry = self.warmup.entry(lane, next.lane_play);
        let play = self.plays.push(Play {
            lane_play: next.lane_play,
            t_star: entry.as_ref().map(|m| m.t_star),
            ..Play::planned(next.tree, next.copy, Some(lane), at)
        });
        match entry {
            Some(mid) => {
                if self.open_play(play, at) {
                    self.enter_mid_play(play, &mid, now);
                }
            }
            None => self.start_play(play, at, now),
        }
    }

    /// Turns a freshly opened play into one entered at `mid.t_star` (see
    /// [`Warmup::enter`]) and schedules what is due.
    fn enter_mid_play(&mut self, play: u32, mid: &MidStart, now: Nanos) {
        let p = self.plays[play];
        let tree = &self.trees[p.tree as usize];
        let entered = self.warmup.enter(
            mid,
            tree,
            p.slot_base,
            self.slots.block_mut(p.slot_base, tree.turn_count()),
            self.idle.shift(),
        );
        self.stats.history += u64::from(entered.history);
        self.plays.skip_history(play, entered.history);
        if let Some(lane) = p.lane {
            let turns = self.trees[p.tree as usize].turn_count();
            self.cache_warmup
                .enter(lane, p.slot_base, self.slots.block_mut(p.slot_base, turns));
        }
        for slot in entered.due {
            // The accelerated warmup's gate may hold it.
            if self.slots[slot].pending_in == 0 {
                self.schedule(slot, now);
            }
        }
    }

    /// With the accelerated cache warmup: once the boundary instant came
    /// and every warmup returned, profiling starts at `at`; the gated
    /// turns and the deferred lanes go on from there, and every idle
    /// play's watchdog looks again.
    fn start_profiling_if_ready(&mut self, at: Nanos, now: Nanos) {
        if !self.cache_warmup.ready() {
            return;
        }
        self.warmup.profiling_fired(at);
        let hand_off = self.cache_warmup.hand_off();
        for slot in hand_off.gated {
            self.resolve_one(slot, at);
        }
        for lane in hand_off.lanes {
            self.start_next_in_lane(lane, at, now);
        }
        for play in self.plays.ids() {
            self.check_tree_idle(play, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::compile;
    use crate::derive::DeriveOptions;
    use crate::model::AgentKind;
    use crate::policy::StartWindow;
    use crate::start::tests::{agent, one_tree, root_and_background};
    use crate::time::NANOS_PER_SEC;

    /// One root agent: turn 0 at 0 and turn 1 at 15, each 10 ns long.
    fn two_turn_scheduler() -> Scheduler {
        let workload = one_tree(vec![agent("root", None, AgentKind::Root, &[0, 15], 10)]);
        let policy = Policy::default();
        let compiled = compile(&workload, &policy, &DeriveOptions::default()).unwrap();
        Scheduler::new(compiled, policy).unwrap()
    }

    #[test]
    fn the_footprint_counts_before_allocating() {
        use std::mem::size_of;
        let workload = one_tree(vec![agent("root", None, AgentKind::Root, &[0, 15], 10)]);
        let compiled = compile(&workload, &Policy::default(), &DeriveOptions::default()).unwrap();
        let open = Policy {
            copies: 100_000_000,
            ..Policy::default()
        };
        let f = Scheduler::footprint(&compiled, &open).unwrap();
        assert_eq!((f.plays, f.turns, f.lanes), (100_000_000, 200_000_000, 0));
        assert!(f.bytes >= 200_000_000 * size_of::<Slot>() as u64);
        assert!(f.fits_ids());
        // Closed loop: a lane per play at most.
        let closed = Policy {
            copies: 3,
            sessions: Some(u32::MAX),
            ..Policy::default()
        };
        let f = Scheduler::footprint(&compiled, &closed).unwrap();
        assert_eq!((f.plays, f.turns, f.lanes), (3, 6, 3));
        let s = Scheduler::new(compiled.clone(), closed).unwrap();
        assert_eq!(s.lanes().len(), 3);
        // More requests than u32 ids number.
        let huge = Policy {
            copies: u32::MAX,
            ..Policy::default()
        };
        assert!(!Scheduler::footprint(&compiled, &huge).unwrap().fits_ids());
        let refused = Scheduler::new(compiled, huge).expect_err("refused");
        assert!(
            refused.to_string().contains("at most 4294967295"),
            "{refused}"
        );
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

    /// A tree whose root sends at 0, 10, 20 and 30 s and whose background
    /// subagent sends at 12 and 25 s, entered at `t* = 15 s` (the window
    /// 0.5:0.5): the root warms its turn 1 (request 1), the subagent its
    /// turn 0 (request 4).
    fn window_scheduler() -> Scheduler {
        let workload = root_and_background(NANOS_PER_SEC);
        let policy = Policy {
            sessions: Some(1),
            start_window: Some(StartWindow {
                min_ppm: 500_000,
                max_ppm: 500_000,
            }),
            ..Policy::default()
        };
        let compiled = compile(&workload, &policy, &DeriveOptions::default()).unwrap();
        Scheduler::new(compiled, policy).unwrap()
    }

    /// Runs to the end with zero service time; request `fail` ends with
    /// `outcome`, every other one succeeds.
    fn run_with(mut s: Scheduler, fail: RequestId, outcome: Outcome) -> Scheduler {
        let mut now = 0;
        loop {
            while let Some(command) = s.poll_command() {
                let Command::Dispatch(id) = command else {
                    continue;
                };
                s.handle_sent(now, id).unwrap();
                let ended = if id == fail { outcome } else { Outcome::Ok };
                s.handle_completion(now, id, ended).unwrap();
            }
            match s.poll_timeout() {
                Some(next) => {
                    now = next;
                    s.handle_timeout(now).unwrap();
                }
                None => return s,
            }
        }
    }

    #[test]
    fn the_window_scenario_warms_one_turn_per_live_agent() {
        let s = run_with(window_scheduler(), u64::MAX, Outcome::Ok);
        let warm: Vec<u32> = s
            .slots()
            .iter()
            .filter(|slot| slot.warmup)
            .map(|slot| slot.turn)
            .collect();
        assert_eq!(warm, vec![1, 4]);
        assert_eq!(s.stats().warmups, 2);
        assert_eq!(s.stats().history, 1);
        assert_eq!(s.profiling_start(), 5 * NANOS_PER_SEC);
        assert!(s.is_finished());
        assert_eq!(s.aborted(), None);
    }

    /// Eight looping lanes of the two-turn tree for 6,250 ns: with zero
    /// service time a play takes 5 ns (turn 1 follows turn 0's end by
    /// 5 ns), so 10,000 plays.
    fn looping_scheduler(forget: bool) -> Scheduler {
        let workload = one_tree(vec![agent("root", None, AgentKind::Root, &[0, 15], 10)]);
        let policy = Policy {
            copies: 8,
            sessions: Some(8),
            loop_lanes: true,
            duration: Some(6_250),
            ..Policy::default()
        };
        let compiled = compile(&workload, &policy, &DeriveOptions::default()).unwrap();
        let mut s = Scheduler::new(compiled, policy).unwrap();
        if forget {
            s.forget_finished(Scheduler::FORGET_BATCH);
        }
        s
    }

    #[test]
    fn forgetting_keeps_a_long_loop_in_a_bounded_window() {
        let mut s = looping_scheduler(true);
        let (mut now, mut most_slots, mut most_plays) = (0, 0, 0);
        loop {
            while let Some(command) = s.poll_command() {
                let Command::Dispatch(id) = command else {
                    continue;
                };
                s.handle_sent(now, id).unwrap();
                s.handle_completion(now, id, Outcome::Ok).unwrap();
                most_slots = most_slots.max(s.slots().len());
                most_plays = most_plays.max(s.plays().len());
            }
            let Some(next) = s.poll_timeout() else { break };
            now = next.max(now);
            s.handle_timeout(now).unwrap();
        }
        assert!(s.stats().plays_done >= 9_000, "{:?}", s.stats().plays_done);
        assert!(s.first_request() > 0 && s.first_play() > 0);
        // At most a batch of finished slots (one two-turn block past it at
        // worst), and the eight plays in flight (two turns each).
        let bound = Scheduler::FORGET_BATCH as usize + 2 + 8 * 2;
        assert!(most_slots <= bound, "{most_slots} slots kept");
        assert!(most_plays <= Scheduler::FORGET_BATCH as usize + 1 + 8);
        // Without forgetting: every play and every turn stays.
        let kept = run_with(looping_scheduler(false), u64::MAX, Outcome::Ok);
        assert_eq!(kept.slots().len() as u64, 2 * kept.stats().plays_started);
        assert_eq!(kept.stats().plays_done, s.stats().plays_done);
    }

    #[test]
    fn a_forgotten_request_is_unknown() {
        let mut s = looping_scheduler(false);
        s.forget_finished(1);
        let mut now = 0;
        while s.first_request() == 0 {
            while let Some(Command::Dispatch(id)) = s.poll_command() {
                s.handle_completion(now, id, Outcome::Ok).unwrap();
            }
            now = s.poll_timeout().unwrap().max(now);
            s.handle_timeout(now).unwrap();
        }
        assert!(s.slot(0).is_none() && s.play(0).is_none());
        assert_eq!(s.request_tree(0).map(|(_, _, turn)| turn), None);
        assert_eq!(
            s.handle_completion(now, 0, Outcome::Ok),
            Err(EngineError::UnknownRequest(0))
        );
        let first = s.first_request();
        assert!(std::ptr::eq(s.slot(first).unwrap(), &s.slots()[0]));
    }

    #[test]
    fn a_failed_root_warmup_aborts_the_run() {
        for outcome in [Outcome::Failed, Outcome::EndTrajectory] {
            let s = run_with(window_scheduler(), 1, outcome);
            assert_eq!(s.aborted(), Some(1), "{outcome:?}");
        }
    }

    #[test]
    fn other_failures_do_not_abort_the_run() {
        // The subagent's warmup, a measured turn of the root, a cancelled
        // root warmup.
        for (fail, outcome) in [
            (4, Outcome::Failed),
            (2, Outcome::Failed),
            (5, Outcome::EndTrajectory),
            (1, Outcome::Cancelled),
        ] {
            let s = run_with(window_scheduler(), fail, outcome);
            assert_eq!(s.aborted(), None, "request {fail} {outcome:?}");
        }
    }
}
