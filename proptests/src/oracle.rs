//! A reference scheduler, written for clarity, not speed.
//!
//! It states the contract of `docs/architecture.md` and
//! `docs/policies.md` as directly as possible and runs it against a service
//! function, so the properties can compare its timeline with the engine's:
//!
//! - every timer is a `(due, creation number)` in a plain list; the next one
//!   is found by scanning the list;
//! - an idle shift rewrites every pending timer and every partial
//!   constraint of a blocked turn (the engine instead raises one offset);
//! - edges come from the tree's edge list (derived, or stated), scanned in
//!   full for each event; gap transforms are applied when an edge resolves;
//! - the driver (completions before timers at equal times, sends reported
//!   right after dispatch) is part of the same loop.
//!
//! Supported: every arrival kind, copies and stagger, gap transforms,
//! `--max-inflight`, `--idle-gap-cap`, `--sessions` (without `--loop`).
//! Not supported: `--duration`/`--grace` (and so `--loop`); [`run`] returns
//! `None` for them.

use std::collections::VecDeque;

use arbor_engine::derive::derive_edges;
use arbor_engine::model::{Anchor, Edge, Workload};
use arbor_engine::policy::{Arrival, Policy, Stagger};
use arbor_engine::rng::{stream, Purpose};
use arbor_engine::time::{Nanos, NANOS_PER_SEC};
use rand::Rng;
use rand_distr::{Distribution, Exp};

use arbor_sim::ServiceRequest;

use crate::driver::Request;
use crate::EXACT;

/// One turn of one play, as the oracle saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub play: u32,
    pub turn: u32,
    pub eligible: Nanos,
    pub sent: Nanos,
    pub end: Nanos,
}

/// One play of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Play {
    pub tree: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    pub started: Option<Nanos>,
    pub done: Option<Nanos>,
}

/// The oracle's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    /// In request-id order (plays' turns in the order plays started).
    pub slots: Vec<Slot>,
    pub plays: Vec<Play>,
    pub idle_shifts: u64,
    pub idle_skipped: Nanos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Blocked,
    Timer,
    Queued,
    InFlight,
    Done,
}

#[derive(Debug, Clone, Copy)]
struct TurnState {
    state: State,
    /// Incoming edges not resolved yet.
    waiting: u32,
    /// Latest constraint so far (real time; may go below 0 after shifts).
    due: Option<i128>,
    slot: Slot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    Turn(usize),
    Play(usize),
    Lane(usize),
}

#[derive(Debug, Clone, Copy)]
struct Timer {
    due: Nanos,
    created: u64,
    what: What,
}

struct Oracle<'a> {
    workload: &'a Workload,
    policy: &'a Policy,
    /// Edges of each tree, gaps as recorded or stated.
    edges: Vec<Vec<Edge>>,
    turns: Vec<TurnState>,
    plays: Vec<Play>,
    /// First slot of each play.
    base: Vec<usize>,
    lanes: Vec<(Vec<(u32, u32)>, usize)>,
    timers: Vec<Timer>,
    created: u64,
    ready: VecDeque<usize>,
    /// Dispatched, not yet reported sent.
    to_send: VecDeque<usize>,
    /// In flight: (completion time, id).
    flying: Vec<(Nanos, usize)>,
    inflight: u32,
    idle_since: Option<Nanos>,
    now: Nanos,
    shifts: u64,
    skipped: Nanos,
}

/// Runs `workload` under `policy` with `service` deciding service times.
/// `None` when the policy uses something the oracle does not model.
pub fn run(
    workload: &Workload,
    policy: &Policy,
    service: &dyn Fn(&Request) -> Nanos,
) -> Option<Timeline> {
    if policy.duration.is_some() || policy.loop_lanes {
        return None;
    }
    let edges = workload
        .trees
        .iter()
        .map(|t| match &t.explicit_edges {
            Some(e) => e.clone(),
            None => derive_edges(t, &EXACT).0,
        })
        .collect();
    let mut o = Oracle {
        workload,
        policy,
        edges,
        turns: Vec::new(),
        plays: Vec::new(),
        base: Vec::new(),
        lanes: Vec::new(),
        timers: Vec::new(),
        created: 0,
        ready: VecDeque::new(),
        to_send: VecDeque::new(),
        flying: Vec::new(),
        inflight: 0,
        idle_since: None,
        now: 0,
        shifts: 0,
        skipped: 0,
    };
    o.plan();
    o.check_idle(0);
    loop {
        // The driver reports each dispatched request as sent, at once.
        while let Some(id) = o.to_send.pop_front() {
            let now = o.now;
            o.turns[id].slot.sent = now;
            o.resolve(id, Anchor::Start, now);
            o.check_idle(now);
            let r = o.request(id);
            o.flying.push((now + service(&r), id));
        }
        let next_completion = o.flying.iter().copied().min();
        let next_timer = o.timers.iter().map(|t| t.due).min();
        match (next_completion, next_timer) {
            (None, None) => break,
            (Some((at, id)), timer) if timer.is_none_or(|t| at <= t) => o.complete(at, id),
            (_, Some(t)) => o.fire_timers(t),
            (Some(_), None) => unreachable!(),
        }
    }
    Some(Timeline {
        slots: o.turns.iter().map(|t| t.slot).collect(),
        plays: o.plays,
        idle_shifts: o.shifts,
        idle_skipped: o.skipped,
    })
}

impl Oracle<'_> {
    fn request(&self, id: usize) -> Request {
        let slot = self.turns[id].slot;
        let tree = &self.workload.trees[self.plays[slot.play as usize].tree as usize];
        let turn = tree
            .agents
            .iter()
            .flat_map(|a| a.turns.iter())
            .nth(slot.turn as usize)
            .expect("turn exists");
        Request {
            id: id as u64,
            tree: self.plays[slot.play as usize].tree,
            turn: slot.turn,
            service: ServiceRequest {
                isl: turn.isl,
                osl: turn.osl,
                recorded: turn.duration.unwrap_or(0),
            },
        }
    }

    fn add_timer(&mut self, due: Nanos, what: What) {
        self.timers.push(Timer {
            due,
            created: self.created,
            what,
        });
        self.created += 1;
    }

    /// Arrival time of arrival number `index` (of `count`), or `None` for
    /// recorded arrival.
    fn arrivals(&self, count: usize) -> Option<Vec<Nanos>> {
        match self.policy.arrival {
            Arrival::Recorded => None,
            Arrival::Immediate => Some(vec![0; count]),
            Arrival::Rate(rate) => {
                let every = (NANOS_PER_SEC as f64 / rate).round() as Nanos;
                Some((0..count as u64).map(|i| i * every).collect())
            }
            Arrival::Poisson(rate) => {
                let mut rng = stream(self.policy.seed, Purpose::Arrival, 0, 0, 0);
                let exp = Exp::new(rate).expect("positive rate");
                let mut at = 0;
                let mut out = vec![];
                for i in 0..count {
                    if i > 0 {
                        let gap: f64 = exp.sample(&mut rng);
                        at += (gap * NANOS_PER_SEC as f64).round() as Nanos;
                    }
                    out.push(at);
                }
                Some(out)
            }
        }
    }

    fn plan(&mut self) {
        let trees = self.workload.trees.len() as u32;
        let copies = self.policy.copies;
        match self.policy.sessions {
            None => {
                let arrivals = self.arrivals((trees * copies) as usize);
                for copy in 0..copies {
                    for tree in 0..trees {
                        let base = match &arrivals {
                            Some(a) => a[(copy * trees + tree) as usize],
                            None => self.workload.trees[tree as usize].arrival,
                        };
                        let stagger = match self.policy.stagger {
                            Stagger::None => 0,
                            Stagger::Even { span } => span * copy as u64 / copies as u64,
                            Stagger::Random { span } if copy > 0 && span > 0 => stream(
                                self.policy.seed,
                                Purpose::Stagger,
                                tree as u64,
                                copy as u64,
                                0,
                            )
                            .random_range(0..span),
                            Stagger::Random { .. } => 0,
                        };
                        self.plays.push(Play {
                            tree,
                            copy,
                            lane: None,
                            started: None,
                            done: None,
                        });
                        self.base.push(0);
                        let play = self.plays.len() - 1;
                        self.add_timer(base + stagger, What::Play(play));
                    }
                }
            }
            Some(n) => {
                // The corpus, shuffled by the seed (Fisher-Yates), dealt
                // round-robin.
                let mut corpus: Vec<(u32, u32)> = (0..copies)
                    .flat_map(|c| (0..trees).map(move |t| (t, c)))
                    .collect();
                let mut rng = stream(self.policy.seed, Purpose::Lanes, 0, 0, 0);
                for i in (1..corpus.len()).rev() {
                    let j = rng.random_range(0..=i);
                    corpus.swap(i, j);
                }
                // Only lanes that get a play exist.
                let n = n.min(corpus.len() as u32);
                self.lanes = vec![(Vec::new(), 0); n as usize];
                for (i, entry) in corpus.into_iter().enumerate() {
                    self.lanes[i % n as usize].0.push(entry);
                }
                let starts = self.arrivals(n as usize);
                for lane in 0..n as usize {
                    let at = starts.as_ref().map_or(0, |s| s[lane]);
                    self.add_timer(at, What::Lane(lane));
                }
            }
        }
    }

    fn start_play(&mut self, play: usize, at: Nanos) {
        let tree_index = self.plays[play].tree as usize;
        let tree = &self.workload.trees[tree_index];
        self.plays[play].started = Some(at);
        self.base[play] = self.turns.len();
        let n = tree.turn_count();
        let starts: Vec<Nanos> = tree
            .agents
            .iter()
            .flat_map(|a| a.turns.iter().map(|t| t.start))
            .collect();
        for turn in 0..n {
            let waiting = self.edges[tree_index]
                .iter()
                .filter(|e| e.to == turn as u32)
                .count() as u32;
            self.turns.push(TurnState {
                state: State::Blocked,
                waiting,
                due: None,
                slot: Slot {
                    play: play as u32,
                    turn: turn as u32,
                    eligible: 0,
                    sent: 0,
                    end: 0,
                },
            });
        }
        for (turn, start) in starts.iter().enumerate() {
            let id = self.base[play] + turn;
            if self.turns[id].waiting == 0 {
                self.turns[id].due = Some((at + start) as i128);
                self.schedule(id);
            }
        }
    }

    fn start_next_in_lane(&mut self, lane: usize, at: Nanos) {
        let (share, next) = &mut self.lanes[lane];
        if *next == share.len() {
            return;
        }
        let (tree, copy) = share[*next];
        *next += 1;
        self.plays.push(Play {
            tree,
            copy,
            lane: Some(lane as u32),
            started: None,
            done: None,
        });
        self.base.push(0);
        let play = self.plays.len() - 1;
        self.start_play(play, at);
    }

    /// Every edge of `id` resolved: eligible now or at its due time.
    fn schedule(&mut self, id: usize) {
        let due = self.turns[id].due.expect("a constraint").max(0) as Nanos;
        if due <= self.now {
            self.become_eligible(id, due);
        } else {
            self.turns[id].state = State::Timer;
            self.add_timer(due, What::Turn(id));
        }
    }

    fn become_eligible(&mut self, id: usize, eligible: Nanos) {
        self.turns[id].slot.eligible = eligible;
        let capped = self
            .policy
            .max_inflight
            .is_some_and(|cap| self.inflight >= cap || !self.ready.is_empty());
        if capped {
            self.turns[id].state = State::Queued;
            self.ready.push_back(id);
            self.idle_since = None;
        } else {
            self.dispatch(id);
        }
    }

    fn dispatch(&mut self, id: usize) {
        self.turns[id].state = State::InFlight;
        self.inflight += 1;
        self.idle_since = None;
        self.to_send.push_back(id);
    }

    /// Resolves the edges out of `id` with this anchor, which happened at
    /// `at`.
    fn resolve(&mut self, id: usize, anchor: Anchor, at: Nanos) {
        let slot = self.turns[id].slot;
        let tree_index = self.plays[slot.play as usize].tree as usize;
        let tree = &self.workload.trees[tree_index];
        let inputs: Vec<_> = tree
            .agents
            .iter()
            .flat_map(|a| a.turns.iter().map(|t| t.input_kind))
            .collect();
        for edge in self.edges[tree_index].clone() {
            if edge.from != slot.turn || edge.anchor != anchor {
                continue;
            }
            let gap = self.policy.edge_gap(&edge, inputs[edge.to as usize]);
            let target = self.base[slot.play as usize] + edge.to as usize;
            let t = &mut self.turns[target];
            if t.state != State::Blocked {
                continue;
            }
            let c = at as i128 + gap as i128;
            t.due = Some(t.due.map_or(c, |d| d.max(c)));
            t.waiting -= 1;
            if t.waiting == 0 {
                self.schedule(target);
            }
        }
    }

    fn complete(&mut self, at: Nanos, id: usize) {
        self.flying.retain(|&(_, f)| f != id);
        self.now = self.now.max(at);
        self.turns[id].slot.end = at;
        self.turns[id].state = State::Done;
        self.inflight -= 1;
        // Turns already waiting for the cap go first.
        if let Some(cap) = self.policy.max_inflight {
            while self.inflight < cap {
                let Some(next) = self.ready.pop_front() else {
                    break;
                };
                self.dispatch(next);
            }
        }
        self.resolve(id, Anchor::End, at);
        let play = self.turns[id].slot.play as usize;
        let all_done = self.turns[self.base[play]..]
            .iter()
            .filter(|t| t.slot.play as usize == play)
            .all(|t| t.state == State::Done);
        if all_done {
            self.plays[play].done = Some(self.now);
            if let Some(lane) = self.plays[play].lane {
                self.start_next_in_lane(lane as usize, self.now);
            }
        }
        self.check_idle(self.now);
    }

    /// Time reaches `now`: fire every timer due by then, earliest (then
    /// oldest) first, including timers created meanwhile.
    fn fire_timers(&mut self, now: Nanos) {
        self.now = now;
        loop {
            let next = self
                .timers
                .iter()
                .enumerate()
                .filter(|(_, t)| t.due <= now)
                .min_by_key(|(_, t)| (t.due, t.created))
                .map(|(i, _)| i);
            let Some(i) = next else { break };
            let timer = self.timers.remove(i);
            match timer.what {
                What::Turn(id) => self.become_eligible(id, timer.due),
                What::Play(play) => self.start_play(play, timer.due),
                What::Lane(lane) => self.start_next_in_lane(lane, timer.due),
            }
        }
        self.check_idle(now);
    }

    /// Idle (nothing in flight, nothing waiting for the cap) since
    /// `idle_since`: if the earliest timer is due after `idle_since + cap`,
    /// move every timer and every partial constraint earlier by the same
    /// amount.
    fn check_idle(&mut self, now: Nanos) {
        if self.inflight > 0 || !self.ready.is_empty() {
            self.idle_since = None;
            return;
        }
        let since = *self.idle_since.get_or_insert(now);
        let Some(cap) = self.policy.idle_gap_cap else {
            return;
        };
        let Some(earliest) = self.timers.iter().map(|t| t.due).min() else {
            return;
        };
        let target = (since + cap).max(now);
        if earliest > target {
            let delta = earliest - target;
            for t in &mut self.timers {
                t.due -= delta;
            }
            for t in &mut self.turns {
                if t.state == State::Blocked {
                    if let Some(d) = &mut t.due {
                        *d -= delta as i128;
                    }
                }
            }
            self.shifts += 1;
            self.skipped += delta;
        }
    }
}
