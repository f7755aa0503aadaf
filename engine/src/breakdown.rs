//! Where the time goes: the makespan of a finished schedule broken into
//! classes (docs/plan.md, "Where the time goes").
//!
//! Owns the [`TimeClass`]es and the walk that attributes the makespan to
//! them. It reads a finished [`Scheduler`] (its slots, plays and compiled
//! trees) and never changes it; which flag scales a class is the CLI's
//! business.
//!
//! # Definition
//! The makespan runs from 0 to the last completion. Walk its critical path
//! backwards, starting at the request that completed last (the lowest
//! request id among equals). At a request that is on the path by its
//! completion, `end - sent` is `service`; at every request on the path,
//! `sent - eligible` is `queue` (the wait for `--max-inflight`; on a live
//! clock also the driver's lag). What made the request eligible is the
//! incoming edge that bound it: among the edges whose source was sent (a
//! `Start` edge) or completed (an `End` edge), the one with the latest
//! constraint `anchor + gap` in the scheduler's shifted time base; among
//! equal constraints the one with the latest anchor (the one that still
//! binds when gaps shrink: a join after a child's last turn, not the
//! parent's own earlier turn), then the first. Its replayed gap goes to the gap's class
//! (`tool`, `think`, `other`, `spawn`, `join`, `concurrent`), and the rest
//! of `eligible - anchor`: when it is short of the gap, to `idle_skipped`
//! (time the idle caps skipped: negative); when it is beyond the gap (only
//! a start window's entry holds a turn so), to `arrival`. The walk goes on
//! at the edge's source, by its completion or its send as the anchor says.
//! A warmup's edges never bind (a warmup is a turn of the play's history).
//!
//! A request no edge explains (a tree's first turn, or a turn entered at a
//! start window's `t*`) became eligible from its play's start: the time
//! from the play's start to `eligible` is `arrival`. A closed-loop play
//! after a lane's first started when the lane's previous play finished:
//! the walk goes on at that play's last completion (the time between is
//! `arrival`, 0 in a plan). Otherwise the play's planned arrival (arrival
//! process plus stagger) is `arrival` and what the idle caps moved it
//! earlier is `idle_skipped`; the walk ends at 0.
//!
//! Every step covers the time between two instants exactly, so the classes
//! sum to the makespan to the nanosecond, with any driver.

use crate::dag::OutEdge;
use crate::model::Anchor;
use crate::policy::GapClass;
use crate::scheduler::{Scheduler, Slot, TurnState};
use crate::time::Nanos;

/// A class of the makespan's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeClass {
    /// In a request: sent to last byte.
    Service,
    /// Eligible to sent: waiting for the request cap.
    Queue,
    /// A replayed gap of this class.
    Gap(GapClass),
    /// From 0 (or a lane's previous play) to a play's first eligible turn:
    /// the arrival process, stagger, a source turn's recorded offset, a
    /// start window's lead.
    Arrival,
    /// Time the idle caps skipped (never positive).
    IdleSkipped,
}

impl TimeClass {
    /// Every class, in the order reports list them.
    pub const ALL: [TimeClass; 10] = [
        TimeClass::Service,
        TimeClass::Queue,
        TimeClass::Gap(GapClass::Tool),
        TimeClass::Gap(GapClass::Think),
        TimeClass::Gap(GapClass::Other),
        TimeClass::Gap(GapClass::Spawn),
        TimeClass::Gap(GapClass::Join),
        TimeClass::Gap(GapClass::Concurrent),
        TimeClass::Arrival,
        TimeClass::IdleSkipped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TimeClass::Service => "service",
            TimeClass::Queue => "queue",
            TimeClass::Gap(class) => class.as_str(),
            TimeClass::Arrival => "arrival",
            TimeClass::IdleSkipped => "idle_skipped",
        }
    }

    fn index(self) -> usize {
        TimeClass::ALL
            .iter()
            .position(|&c| c == self)
            .unwrap_or_default()
    }
}

/// The makespan and its classes (signed nanoseconds; they sum to it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breakdown {
    pub makespan: Nanos,
    parts: [i64; TimeClass::ALL.len()],
    /// Requests on the critical path.
    pub path_requests: u64,
}

impl Breakdown {
    /// The time of `class`.
    pub fn get(&self, class: TimeClass) -> i64 {
        self.parts[class.index()]
    }

    /// Every class and its time, in [`TimeClass::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (TimeClass, i64)> + '_ {
        TimeClass::ALL.iter().map(|&c| (c, self.get(c)))
    }

    /// The classes' sum (equal to the makespan).
    pub fn total(&self) -> i64 {
        self.parts.iter().sum()
    }

    /// Adds the time from `from` to `to` (signed) to `class`.
    fn add(&mut self, class: TimeClass, from: Nanos, to: Nanos) {
        self.parts[class.index()] += signed(to) - signed(from);
    }

    fn add_ns(&mut self, class: TimeClass, ns: Nanos) {
        self.parts[class.index()] += signed(ns);
    }
}

fn signed(ns: Nanos) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

fn ended(state: TurnState) -> bool {
    matches!(
        state,
        TurnState::Done | TurnState::Failed | TurnState::Cancelled
    )
}

fn was_sent(state: TurnState) -> bool {
    state == TurnState::Sent || ended(state)
}

/// Per tree, per turn: the incoming edges `(source turn, edge)`.
fn in_edges(scheduler: &Scheduler) -> Vec<Vec<Vec<(u32, OutEdge)>>> {
    scheduler
        .trees()
        .iter()
        .map(|tree| {
            let mut incoming = vec![Vec::new(); tree.turn_count() as usize];
            for from in 0..tree.turn_count() {
                for edge in tree.out(from) {
                    incoming[edge.to as usize].push((from, *edge));
                }
            }
            incoming
        })
        .collect()
}

/// Where the walk stands: a request, reached by its completion or its
/// send.
#[derive(Debug, Clone, Copy)]
struct Step {
    request: u32,
    by_end: bool,
}

/// The breakdown of a live run's scheduler: `None` when it forgot finished
/// plays ([`Scheduler::forget_finished`], a run past
/// [`Scheduler::FORGET_BATCH`] plays), since the path may go back through
/// them; else [`breakdown`].
pub fn observed(scheduler: &Scheduler) -> Option<Breakdown> {
    let whole = scheduler.first_play() == 0 && scheduler.first_request() == 0;
    whole.then(|| breakdown(scheduler))
}

/// The breakdown of `scheduler`'s makespan (see the module documentation),
/// of a scheduler that kept every play (a plan, or a live run before it
/// forgot any: [`observed`]); one that forgot gives an empty breakdown.
pub fn breakdown(scheduler: &Scheduler) -> Breakdown {
    if scheduler.first_play() != 0 || scheduler.first_request() != 0 {
        return Breakdown::default();
    }
    let slots = scheduler.slots();
    let mut out = Breakdown::default();
    let Some(last) = last_completion(slots, |_| true) else {
        return out;
    };
    out.makespan = slots[last as usize].end;
    let incoming = in_edges(scheduler);
    let mut step = Some(Step {
        request: last,
        by_end: true,
    });
    // Each step goes to an earlier turn of a DAG or an earlier play; the
    // bound only guards against a malformed schedule.
    let mut budget = slots.len() + scheduler.plays().len() + 1;
    while let Some(at) = step {
        if budget == 0 {
            let s = &slots[at.request as usize];
            out.add(TimeClass::Arrival, 0, s.eligible);
            out.add(TimeClass::Queue, s.eligible, s.sent);
            if at.by_end {
                out.add(TimeClass::Service, s.sent, s.end);
            }
            break;
        }
        budget -= 1;
        out.path_requests += 1;
        step = walk_back(scheduler, &incoming, at, &mut out);
    }
    out
}

/// The latest completion among the slots `keep` selects (the lowest id
/// among equals).
fn last_completion(slots: &[Slot], keep: impl Fn(&Slot) -> bool) -> Option<u32> {
    let mut best: Option<(Nanos, u32)> = None;
    for (id, slot) in (0u32..).zip(slots) {
        if ended(slot.state) && keep(slot) && best.is_none_or(|(end, _)| slot.end > end) {
            best = Some((slot.end, id));
        }
    }
    best.map(|(_, id)| id)
}

/// Attributes the time from `at`'s instant back to whatever bound it;
/// returns the next step, or `None` at 0.
fn walk_back(
    scheduler: &Scheduler,
    incoming: &[Vec<Vec<(u32, OutEdge)>>],
    at: Step,
    out: &mut Breakdown,
) -> Option<Step> {
    let slots = scheduler.slots();
    let s = slots[at.request as usize];
    if at.by_end {
        out.add(TimeClass::Service, s.sent, s.end);
    }
    out.add(TimeClass::Queue, s.eligible, s.sent);
    let play = scheduler.plays()[s.play as usize];
    let base = at.request - s.turn;
    let mut bound: Option<(Nanos, u32, OutEdge, Nanos)> = None;
    for &(from, edge) in &incoming[play.tree as usize][s.turn as usize] {
        let source = base + from;
        let p = slots[source as usize];
        let (anchor, shift) = match edge.anchor {
            // A warmup is a turn of the play's history: its edges do not
            // bind (it releases its agent's next turn, which the start
            // window also holds until `t*`).
            _ if p.warmup => continue,
            Anchor::End if ended(p.state) => (p.end, p.shift_at_end),
            Anchor::Start if was_sent(p.state) => (p.sent, p.shift_at_sent),
            _ => continue,
        };
        let key = anchor.saturating_add(edge.gap).saturating_add(shift);
        let later = bound.is_none_or(|(k, _, _, a)| (key, anchor) > (k, a));
        if anchor <= s.eligible && later {
            bound = Some((key, source, edge, anchor));
        }
    }
    if let Some((_, source, edge, anchor)) = bound {
        out.add_ns(TimeClass::Gap(edge.class), edge.gap);
        let bound_at = anchor.saturating_add(edge.gap);
        let rest = if s.eligible < bound_at {
            TimeClass::IdleSkipped
        } else {
            TimeClass::Arrival
        };
        out.add(rest, bound_at, s.eligible);
        return Some(Step {
            request: source,
            by_end: edge.anchor == Anchor::End,
        });
    }
    let started = play.started.unwrap_or(0);
    out.add(TimeClass::Arrival, started, s.eligible);
    if let Some(lane) = play.lane {
        let previous = scheduler.plays()[..s.play as usize]
            .iter()
            .rposition(|p| p.lane == Some(lane));
        if let Some(previous) = previous {
            let previous = previous as u32;
            if let Some(request) = last_completion(slots, |x| x.play == previous) {
                out.add(TimeClass::Arrival, slots[request as usize].end, started);
                return Some(Step {
                    request,
                    by_end: true,
                });
            }
        }
    }
    out.add_ns(TimeClass::Arrival, play.planned);
    out.add(TimeClass::IdleSkipped, play.planned, started);
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::compile;
    use crate::derive::DeriveOptions;
    use crate::model::{Agent, AgentKind, InputKind, Tree, Turn, Workload};
    use crate::policy::{GapScale, GapTransform, Policy};
    use crate::scheduler::{Command, Outcome};

    /// Runs to the end; every request takes `service` ns.
    fn run(workload: &Workload, policy: Policy, service: Nanos) -> Scheduler {
        let compiled = compile(workload, &policy, &DeriveOptions::default()).unwrap();
        let mut s = Scheduler::new(compiled, policy).unwrap();
        let mut pending: Vec<(Nanos, u64)> = Vec::new();
        let mut now = 0;
        loop {
            while let Some(command) = s.poll_command() {
                if let Command::Dispatch(id) = command {
                    s.handle_sent(now, id).unwrap();
                    pending.push((now + service, id));
                }
            }
            pending.sort_unstable();
            let timer = s.poll_timeout();
            match (pending.first().copied(), timer) {
                (Some((done, id)), t) if t.is_none_or(|t| done <= t) => {
                    pending.remove(0);
                    now = done;
                    s.handle_completion(now, id, Outcome::Ok).unwrap();
                }
                (_, Some(t)) => {
                    now = t;
                    s.handle_timeout(now).unwrap();
                }
                _ => return s,
            }
        }
    }

    fn turn(start: Nanos, input_kind: InputKind) -> Turn {
        Turn {
            start,
            duration: Some(10),
            input_kind,
            ..Turn::default()
        }
    }

    /// A root (turns at 0, 100, 300) that spawns a blocking child at 20
    /// (turns at 20, 50, ending at 60) after its turn 0, joined by its
    /// turn 1 (a join gap of 40); a tool gap of 190 before turn 2.
    fn tree(arrival: Nanos) -> Tree {
        Tree {
            id: "t".into(),
            source: "t.json".into(),
            arrival,
            agents: vec![
                Agent {
                    id: "root".into(),
                    parent: None,
                    kind: AgentKind::Root,
                    recorded_end: None,
                    turns: vec![
                        turn(0, InputKind::UserText),
                        turn(100, InputKind::ToolResult),
                        turn(300, InputKind::ToolResult),
                    ],
                },
                Agent {
                    id: "child".into(),
                    parent: Some(0),
                    kind: AgentKind::Blocking,
                    recorded_end: None,
                    turns: vec![turn(20, InputKind::UserText), turn(50, InputKind::Unknown)],
                },
            ],
            ..Tree::default()
        }
    }

    fn parts(b: &Breakdown) -> Vec<(&'static str, i64)> {
        b.iter()
            .filter(|&(_, t)| t != 0)
            .map(|(c, t)| (c.as_str(), t))
            .collect()
    }

    #[test]
    fn the_recorded_schedule_splits_into_its_gaps_and_service() {
        let w = Workload {
            trees: vec![tree(1000)],
        };
        let b = breakdown(&run(&w, Policy::default(), 10));
        assert_eq!(b.makespan, 1310);
        assert_eq!(b.total(), 1310);
        // 0 -> arrival 1000, root 0 (10), spawn 10, child 0 (10), other 20,
        // child 1 (10), join 40, root 1 (10), tool 190, root 2 (10).
        assert_eq!(
            parts(&b),
            vec![
                ("service", 50),
                ("tool", 190),
                ("other", 20),
                ("spawn", 10),
                ("join", 40),
                ("arrival", 1000),
            ]
        );
        assert_eq!(b.path_requests, 5);
    }

    #[test]
    fn every_gap_flag_shrinks_its_class_and_the_cap_shows_as_negative() {
        let w = Workload {
            trees: vec![tree(1000)],
        };
        let policy = Policy {
            gap_scale: GapScale { ppm: 500_000 },
            tool_time: GapTransform::Zero,
            ..Policy::default()
        };
        let b = breakdown(&run(&w, policy, 10));
        assert_eq!(
            parts(&b),
            vec![
                ("service", 50),
                ("other", 10),
                ("spawn", 5),
                ("arrival", 1000),
            ]
        );
        // The join's next input is a tool result: `--tool-time zero`
        // zeroes it too (spawn and join gaps follow their input's class).
        assert_eq!(b.makespan, 1065);
        assert_eq!(b.total(), b.makespan as i64);

        let capped = Policy {
            idle_gap_cap: Some(15),
            ..Policy::default()
        };
        let b = breakdown(&run(&w, capped, 10));
        assert_eq!(b.total(), b.makespan as i64);
        assert!(b.get(TimeClass::IdleSkipped) < 0, "{b:?}");
        assert_eq!(b.get(TimeClass::Gap(GapClass::Tool)), 190);
    }

    #[test]
    fn a_lane_walks_back_through_its_previous_play() {
        let w = Workload {
            trees: vec![tree(0), tree(0)],
        };
        let policy = Policy {
            sessions: Some(1),
            ..Policy::default()
        };
        let b = breakdown(&run(&w, policy, 10));
        assert_eq!(b.makespan, 620);
        assert_eq!(b.get(TimeClass::Service), 100);
        assert_eq!(b.get(TimeClass::Gap(GapClass::Tool)), 380);
        assert_eq!(b.total(), 620);
    }

    #[test]
    fn a_scheduler_that_forgot_plays_has_no_observed_path() {
        let w = Workload {
            trees: vec![tree(0), tree(0), tree(0)],
        };
        let policy = Policy {
            sessions: Some(1),
            ..Policy::default()
        };
        let compiled = compile(&w, &policy, &DeriveOptions::default()).unwrap();
        let mut s = Scheduler::new(compiled, policy).unwrap();
        s.forget_finished(1);
        let mut now = 0;
        // Drive it to the end, each request done 10 ns after it is sent.
        loop {
            let mut sent = Vec::new();
            while let Some(command) = s.poll_command() {
                if let Command::Dispatch(id) = command {
                    s.handle_sent(now, id).unwrap();
                    sent.push(id);
                }
            }
            if !sent.is_empty() {
                now += 10;
                for id in sent {
                    s.handle_completion(now, id, Outcome::Ok).unwrap();
                }
                continue;
            }
            match s.poll_timeout() {
                Some(t) => {
                    now = t;
                    s.handle_timeout(now).unwrap();
                }
                None => break,
            }
        }
        assert!(s.first_play() > 0, "the test needs plays forgotten");
        assert_eq!(observed(&s), None);
        assert_eq!(breakdown(&s), Breakdown::default(), "and no panic");
    }

    #[test]
    fn an_empty_schedule_has_no_time() {
        let s = run(&Workload::default(), Policy::default(), 10);
        assert_eq!(breakdown(&s), Breakdown::default());
    }
}
