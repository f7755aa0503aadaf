//! Edges from a recording: the happens-before relation of semantics
//! section 2, transitively reduced.
//!
//! Owns the derivation rules (within an agent, spawn, join, overlap
//! tolerance, unknown durations) and the count of adjustments they make.
//! Works on recorded times only; gap transforms and scheduling happen later.
//!
//! The rules, in short:
//! - Within an agent, turn `n` gets an `End` edge from every earlier turn
//!   that ended by `start(n)` and is not implied by another such turn (the
//!   frontier), gap `start(n) - end(p)`. If the previous turn was still in
//!   flight, `n` also gets a `Start` edge from it (recorded overlap), unless
//!   the overlap is within the tolerance, when it counts as sequential with
//!   gap 0.
//! - A child agent's first turn gets edges from its parent's turns by the
//!   same rule at the child's recorded start (only parent turns that started
//!   strictly before it can precede it).
//! - A blocking child joins the first parent turn starting at or after the
//!   child's end, from the child's last-ending turn, keeping the residual
//!   gap. Background children, and blocking ones with no later parent turn,
//!   get no join edge.

use crate::model::{AgentKind, Anchor, Edge, EdgeKind, Tree};
use crate::time::{Nanos, NANOS_PER_SEC};

/// Settings of the derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeriveOptions {
    /// Overlap between consecutive turns of an agent up to this long is
    /// treated as rounding: the turns are sequential with gap 0.
    pub overlap_tolerance: Nanos,
}

impl Default for DeriveOptions {
    fn default() -> Self {
        DeriveOptions {
            overlap_tolerance: NANOS_PER_SEC,
        }
    }
}

/// What the derivation changed or assumed, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Adjustments {
    /// Overlaps within the tolerance, replayed as sequential with gap 0.
    pub overlaps_rounded: u64,
    /// Total recorded overlap so removed.
    pub overlap_rounded_ns: Nanos,
    /// Recorded overlaps kept as `Start` edges (concurrent replay).
    pub overlaps_kept: u64,
    /// Turns whose duration is unknown (taken as 0).
    pub unknown_durations: u64,
    /// Blocking children with no later parent turn to join: replayed as
    /// background.
    pub unjoined_children: u64,
}

impl Adjustments {
    pub fn add(&mut self, other: &Adjustments) {
        self.overlaps_rounded += other.overlaps_rounded;
        self.overlap_rounded_ns += other.overlap_rounded_ns;
        self.overlaps_kept += other.overlaps_kept;
        self.unknown_durations += other.unknown_durations;
        self.unjoined_children += other.unjoined_children;
    }
}

/// A turn the frontier still considers: ended or in flight, and not yet
/// implied by a later turn that has ended.
#[derive(Debug, Clone)]
struct FrontierEntry {
    turn: u32,
    end: Nanos,
    /// Turns reachable from this one by a path whose first edge is this
    /// turn's `End` edge.
    reach: Vec<u32>,
    /// Earliest end among `reach`: once a new turn starts at or after it,
    /// this entry is implied and leaves the frontier for good.
    reach_min_end: Nanos,
}

/// The frontier of one agent, fed its turns in start order.
#[derive(Debug, Default)]
struct Frontier {
    entries: Vec<FrontierEntry>,
    /// The last turn fed: (flat id, start, end).
    prev: Option<(u32, Nanos, Nanos)>,
}

impl Frontier {
    /// Edges into a turn starting at `start` (flat id `to`), by the
    /// frontier rule. Prunes entries implied at `start`, which is safe
    /// because starts only grow.
    fn incoming(
        &mut self,
        to: u32,
        start: Nanos,
        kind: EdgeKind,
        options: &DeriveOptions,
        adjustments: &mut Adjustments,
        out: &mut Vec<Edge>,
    ) {
        self.entries.retain(|e| e.reach_min_end > start);
        let prev_overlap = match self.prev {
            Some((prev, prev_start, prev_end)) if prev_end > start => {
                let overlap = prev_end - start;
                if overlap <= options.overlap_tolerance {
                    adjustments.overlaps_rounded += 1;
                    adjustments.overlap_rounded_ns += overlap;
                    out.push(Edge {
                        from: prev,
                        to,
                        anchor: Anchor::End,
                        gap: 0,
                        kind,
                    });
                } else {
                    adjustments.overlaps_kept += 1;
                    out.push(Edge {
                        from: prev,
                        to,
                        anchor: Anchor::Start,
                        gap: start - prev_start,
                        kind,
                    });
                }
                Some(prev)
            }
            _ => None,
        };
        for entry in &self.entries {
            if entry.end <= start && Some(entry.turn) != prev_overlap {
                out.push(Edge {
                    from: entry.turn,
                    to,
                    anchor: Anchor::End,
                    gap: start - entry.end,
                    kind,
                });
            }
        }
    }

    /// Adds turn `to` after its incoming edges were decided.
    fn commit(&mut self, to: u32, start: Nanos, end: Nanos, edges_in: &[Edge]) {
        for entry in &mut self.entries {
            let reached = edges_in.iter().any(|e| {
                (e.from == entry.turn && e.anchor == Anchor::End) || entry.reach.contains(&e.from)
            });
            if reached {
                entry.reach.push(to);
                entry.reach_min_end = entry.reach_min_end.min(end);
            }
        }
        self.entries.push(FrontierEntry {
            turn: to,
            end,
            reach: Vec::new(),
            reach_min_end: Nanos::MAX,
        });
        self.prev = Some((to, start, end));
    }
}

/// Derives the edges of a tree from its recorded times. Agents' turns must
/// be ordered by start (loaders guarantee it; [`crate::dag`] checks it).
pub fn derive_edges(tree: &Tree, options: &DeriveOptions) -> (Vec<Edge>, Adjustments) {
    let mut adjustments = Adjustments::default();
    let mut edges = Vec::new();
    let offsets = tree.turn_offsets();

    // Children of each agent, ordered by their first turn's start.
    let mut children: Vec<Vec<(Nanos, u32)>> = vec![Vec::new(); tree.agents.len()];
    for (index, agent) in tree.agents.iter().enumerate() {
        adjustments.unknown_durations +=
            agent.turns.iter().filter(|t| t.duration.is_none()).count() as u64;
        if let (Some(parent), Some(first)) = (agent.parent, agent.turns.first()) {
            if let Some(list) = children.get_mut(parent as usize) {
                list.push((first.start, index as u32));
            }
        }
    }
    for list in &mut children {
        list.sort_unstable();
    }

    let mut scratch = Vec::new();
    for (agent_index, agent) in tree.agents.iter().enumerate() {
        let base = offsets[agent_index];
        let mut frontier = Frontier::default();
        let mut probes = children[agent_index].iter().peekable();
        for (i, turn) in agent.turns.iter().enumerate() {
            // Children starting at or before this turn's start see only the
            // parent turns that started strictly before them.
            while let Some(&&(child_start, child)) = probes.peek() {
                if child_start > turn.start {
                    break;
                }
                let to = offsets[child as usize];
                frontier.incoming(
                    to,
                    child_start,
                    EdgeKind::Spawn,
                    options,
                    &mut adjustments,
                    &mut edges,
                );
                probes.next();
            }
            let to = base + i as u32;
            scratch.clear();
            frontier.incoming(
                to,
                turn.start,
                EdgeKind::Sequence,
                options,
                &mut adjustments,
                &mut scratch,
            );
            frontier.commit(to, turn.start, turn.end(), &scratch);
            edges.extend_from_slice(&scratch);
        }
        for &(child_start, child) in probes {
            let to = offsets[child as usize];
            frontier.incoming(
                to,
                child_start,
                EdgeKind::Spawn,
                options,
                &mut adjustments,
                &mut edges,
            );
        }
    }

    for (index, agent) in tree.agents.iter().enumerate() {
        let Some(parent) = agent.parent else { continue };
        if agent.kind != AgentKind::Blocking {
            continue;
        }
        let Some((last_index, last)) = agent
            .turns
            .iter()
            .enumerate()
            .max_by_key(|(i, t)| (t.end(), *i))
        else {
            continue;
        };
        let child_end = agent.recorded_end.unwrap_or(0).max(last.end());
        let parent_turns = &tree.agents[parent as usize].turns;
        let join = parent_turns.partition_point(|t| t.start < child_end);
        match parent_turns.get(join) {
            Some(join_turn) => edges.push(Edge {
                from: offsets[index] + last_index as u32,
                to: offsets[parent as usize] + join as u32,
                anchor: Anchor::End,
                gap: join_turn.start - last.end(),
                kind: EdgeKind::Join,
            }),
            None => adjustments.unjoined_children += 1,
        }
    }
    (edges, adjustments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, Turn};

    fn turn(start: Nanos, duration: Option<Nanos>) -> Turn {
        Turn {
            start,
            duration,
            ..Turn::default()
        }
    }

    fn agent(parent: Option<u32>, kind: AgentKind, turns: Vec<Turn>) -> Agent {
        Agent {
            id: String::new(),
            parent,
            kind,
            recorded_end: None,
            turns,
        }
    }

    fn tree(agents: Vec<Agent>) -> Tree {
        Tree {
            agents,
            ..Tree::default()
        }
    }

    fn e(from: u32, to: u32, anchor: Anchor, gap: Nanos, kind: EdgeKind) -> Edge {
        Edge {
            from,
            to,
            anchor,
            gap,
            kind,
        }
    }

    const TOL0: DeriveOptions = DeriveOptions {
        overlap_tolerance: 0,
    };

    #[test]
    fn sequential_turns_chain_end_to_start() {
        let t = tree(vec![agent(
            None,
            AgentKind::Root,
            vec![
                turn(0, Some(10)),
                turn(15, Some(5)),
                turn(20, None),
                turn(30, Some(1)),
            ],
        )]);
        let (edges, adj) = derive_edges(&t, &TOL0);
        use Anchor::End;
        use EdgeKind::Sequence as S;
        assert_eq!(
            edges,
            vec![e(0, 1, End, 5, S), e(1, 2, End, 0, S), e(2, 3, End, 10, S)]
        );
        assert_eq!(adj.unknown_durations, 1);
    }

    #[test]
    fn recorded_overlap_keeps_a_start_edge_and_the_frontier() {
        // 0: [0,100); 1: [50,60) overlaps 0; 2 at 120 follows both.
        let t = tree(vec![agent(
            None,
            AgentKind::Root,
            vec![turn(0, Some(100)), turn(50, Some(10)), turn(120, Some(1))],
        )]);
        let (edges, adj) = derive_edges(&t, &TOL0);
        use Anchor::*;
        use EdgeKind::Sequence as S;
        assert_eq!(
            edges,
            vec![
                e(0, 1, Start, 50, S),
                e(0, 2, End, 20, S),
                e(1, 2, End, 60, S)
            ]
        );
        assert_eq!(adj.overlaps_kept, 1);
    }

    #[test]
    fn implied_turns_leave_the_frontier() {
        // 0 ends at 10; 1 [20,30) follows 0; 2 at 40 needs only 1.
        let t = tree(vec![agent(
            None,
            AgentKind::Root,
            vec![turn(0, Some(10)), turn(20, Some(10)), turn(40, Some(1))],
        )]);
        let (edges, _) = derive_edges(&t, &TOL0);
        assert_eq!(edges.len(), 2);
        assert!(edges.iter().all(|e| e.to == e.from + 1));
    }

    #[test]
    fn overlap_within_tolerance_is_sequential() {
        let t = tree(vec![agent(
            None,
            AgentKind::Root,
            vec![turn(0, Some(100)), turn(90, Some(10))],
        )]);
        let (edges, adj) = derive_edges(
            &t,
            &DeriveOptions {
                overlap_tolerance: 10,
            },
        );
        assert_eq!(edges, vec![e(0, 1, Anchor::End, 0, EdgeKind::Sequence)]);
        assert_eq!((adj.overlaps_rounded, adj.overlap_rounded_ns), (1, 10));
    }

    #[test]
    fn spawn_and_join_keep_the_residual_gap() {
        // Parent: [0,10) then [100,110). Blocking child [15,20),[25,40)
        // recorded end 45: joins parent turn 1 from child turn 1, gap 60.
        let mut child = agent(
            Some(0),
            AgentKind::Blocking,
            vec![turn(15, Some(5)), turn(25, Some(15))],
        );
        child.recorded_end = Some(45);
        let t = tree(vec![
            agent(
                None,
                AgentKind::Root,
                vec![turn(0, Some(10)), turn(100, Some(10))],
            ),
            child,
        ]);
        let (edges, _) = derive_edges(&t, &TOL0);
        use Anchor::End;
        assert!(edges.contains(&e(0, 2, End, 5, EdgeKind::Spawn)));
        assert!(edges.contains(&e(2, 3, End, 5, EdgeKind::Sequence)));
        assert!(edges.contains(&e(3, 1, End, 60, EdgeKind::Join)));
        assert!(edges.contains(&e(0, 1, End, 90, EdgeKind::Sequence)));
        assert_eq!(edges.len(), 4);
    }

    #[test]
    fn join_goes_to_the_first_parent_turn_after_the_child_end() {
        // Child ends at 50: parent turn at 40 is too early, 60 joins.
        let t = tree(vec![
            agent(
                None,
                AgentKind::Root,
                vec![turn(0, Some(5)), turn(40, Some(5)), turn(60, Some(5))],
            ),
            agent(Some(0), AgentKind::Blocking, vec![turn(10, Some(40))]),
        ]);
        let (edges, _) = derive_edges(&t, &TOL0);
        assert!(edges.contains(&e(3, 2, Anchor::End, 10, EdgeKind::Join)));
    }

    #[test]
    fn background_and_late_children_get_no_join() {
        let t = tree(vec![
            agent(
                None,
                AgentKind::Root,
                vec![turn(0, Some(5)), turn(20, Some(5))],
            ),
            agent(Some(0), AgentKind::Background, vec![turn(6, Some(100))]),
            agent(Some(0), AgentKind::Blocking, vec![turn(7, Some(100))]),
        ]);
        let (edges, adj) = derive_edges(&t, &TOL0);
        assert!(edges.iter().all(|e| e.kind != EdgeKind::Join));
        assert_eq!(adj.unjoined_children, 1);
    }

    #[test]
    fn child_spawned_while_parent_turn_in_flight_gets_a_start_edge() {
        let t = tree(vec![
            agent(None, AgentKind::Root, vec![turn(0, Some(100))]),
            agent(Some(0), AgentKind::Background, vec![turn(30, Some(5))]),
        ]);
        let (edges, _) = derive_edges(&t, &TOL0);
        assert_eq!(edges, vec![e(0, 1, Anchor::Start, 30, EdgeKind::Spawn)]);
    }
}
