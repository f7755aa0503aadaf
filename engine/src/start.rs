//! Starting a tree in the middle: the start window, `t*`, history and
//! warmup (the AgentX recipe, `docs/agentx.md`).
//!
//! Owns, for one tree and one `t*`, which turns are history (recorded
//! before `t*`: never replayed), which turn of each agent alive at `t*` is
//! sent as a warmup (the turn just before `t*`, with its full prefix and one
//! output token, so the server's cache holds what the recording's did), and
//! when the remaining turns are due relative to the profiling start, and
//! which live turns the accelerated cache warmup sends
//! ([`accelerated`]). Pure functions; the scheduler applies them to a
//! lane's first play.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;

use crate::dag::CompiledTree;
use crate::policy::StartWindow;
use crate::rng::{stream, Purpose};
use crate::time::Nanos;

/// A tree entered at `t_star`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MidStart {
    pub t_star: Nanos,
    /// Per flat turn: recorded start before `t_star`.
    pub history: Vec<bool>,
    /// Per agent alive at `t_star`: (warm turn, the agent's next turn).
    pub warm: Vec<(u32, u32)>,
}

impl MidStart {
    /// How long before `t_star` a warm turn was recorded.
    pub fn lead(&self, tree: &CompiledTree, warm_turn: u32) -> Nanos {
        self.t_star.saturating_sub(tree.start[warm_turn as usize])
    }

    /// The largest lead of the warm turns (0 without any).
    pub fn max_lead(&self, tree: &CompiledTree) -> Nanos {
        self.warm
            .iter()
            .map(|&(w, _)| self.lead(tree, w))
            .max()
            .unwrap_or(0)
    }
}

/// The lane's `t*`: uniform in the window over the span of the tree's turn
/// starts, from a stream derived from (seed, tree, lane), so it does not
/// depend on anything else in the run.
pub fn t_star(
    tree: &CompiledTree,
    window: StartWindow,
    seed: u64,
    tree_index: u32,
    lane: u32,
) -> Nanos {
    let first = tree.start.iter().copied().min().unwrap_or(0);
    let last = tree.start.iter().copied().max().unwrap_or(0);
    let span = last - first;
    let lo = first + ((span as u128 * window.min_ppm as u128) / 1_000_000) as Nanos;
    let hi = first + ((span as u128 * window.max_ppm as u128) / 1_000_000) as Nanos;
    if hi <= lo {
        return lo;
    }
    let mut rng = stream(
        seed,
        Purpose::StartWindow,
        u64::from(tree_index),
        0,
        u64::from(lane),
    );
    rng.random_range(lo..=hi)
}

/// History and warm turns of `tree` entered at `t_star`. Turns of an agent
/// are contiguous flat ids in start order.
pub fn mid_start(tree: &CompiledTree, t_star: Nanos) -> MidStart {
    let n = tree.turn_count() as usize;
    let history: Vec<bool> = (0..n).map(|t| tree.start[t] < t_star).collect();
    let mut warm = Vec::new();
    let mut begin = 0usize;
    while begin < n {
        let agent = tree.agent_of[begin];
        let mut end = begin;
        while end < n && tree.agent_of[end] == agent {
            end += 1;
        }
        // Last history turn and first live turn of this agent.
        let live = (begin..end).find(|&t| !history[t]);
        if let Some(next) = live {
            if next > begin {
                warm.push(((next - 1) as u32, next as u32));
            }
        }
        begin = end;
    }
    MidStart {
        t_star,
        history,
        warm,
    }
}

/// The live turns of `tree` entered at `mid` that the accelerated cache
/// warmup sends: the first `count` in dependency order, the order that
/// always takes the ready live turn with the earliest recorded start (ties
/// by flat id) next. So the set holds every live predecessor of each of its
/// turns (a join's children before the join), and it is a pure function of
/// the tree and `t*`. `u32::MAX` takes every live turn (the duration form).
/// Per flat turn: true when accelerated.
pub fn accelerated(tree: &CompiledTree, mid: &MidStart, count: u32) -> Vec<bool> {
    let n = tree.turn_count() as usize;
    let mut chosen = vec![false; n];
    let mut waiting = vec![0u32; n];
    // Only edges between live turns order them (a history turn is never
    // sent, whatever points at it).
    let live_out = |t: u32| tree.out(t).iter().filter(|e| !mid.history[e.to as usize]);
    for t in (0..n).filter(|&t| !mid.history[t]) {
        for e in live_out(t as u32) {
            waiting[e.to as usize] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<(Nanos, u32)>> = (0..n)
        .filter(|&t| !mid.history[t] && waiting[t] == 0)
        .map(|t| Reverse((tree.start[t], t as u32)))
        .collect();
    let mut taken = 0u32;
    while taken < count {
        let Some(Reverse((_, t))) = ready.pop() else {
            break;
        };
        chosen[t as usize] = true;
        taken += 1;
        for e in live_out(t) {
            let to = e.to as usize;
            waiting[to] -= 1;
            if waiting[to] == 0 {
                ready.push(Reverse((tree.start[to], e.to)));
            }
        }
    }
    chosen
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dag::compile;
    use crate::derive::DeriveOptions;
    use crate::model::{Agent, AgentKind, Tree, Turn, Workload};
    use crate::policy::Policy;

    /// An agent whose turns start at `starts` and each take `duration`.
    pub(crate) fn agent(
        id: &str,
        parent: Option<u32>,
        kind: AgentKind,
        starts: &[Nanos],
        duration: Nanos,
    ) -> Agent {
        Agent {
            id: id.into(),
            parent,
            kind,
            recorded_end: None,
            turns: starts
                .iter()
                .map(|&start| Turn {
                    start,
                    duration: Some(duration),
                    ..Turn::default()
                })
                .collect(),
        }
    }

    /// A workload of one tree with these agents (the first is the root).
    pub(crate) fn one_tree(agents: Vec<Agent>) -> Workload {
        Workload {
            trees: vec![Tree {
                id: "t".into(),
                agents,
                ..Tree::default()
            }],
        }
    }

    /// One tree: a root sending at 0, 10, 20 and 30 units and a
    /// background subagent sending at 12 and 25 (flat turns 4 and 5), each
    /// turn one unit long.
    pub(crate) fn root_and_background(unit: Nanos) -> Workload {
        let at = |starts: &[Nanos]| starts.iter().map(|s| s * unit).collect::<Vec<_>>();
        one_tree(vec![
            agent("root", None, AgentKind::Root, &at(&[0, 10, 20, 30]), unit),
            agent("sub", Some(0), AgentKind::Background, &at(&[12, 25]), unit),
        ])
    }

    fn small_tree() -> CompiledTree {
        compile(
            &root_and_background(1),
            &Policy::default(),
            &DeriveOptions::default(),
        )
        .unwrap()
        .trees
        .remove(0)
    }
    #[test]
    fn a_point_window_gives_its_point_and_a_wide_one_a_seeded_draw() {
        let tree = small_tree();
        let half = StartWindow {
            min_ppm: 500_000,
            max_ppm: 500_000,
        };
        assert_eq!(t_star(&tree, half, 42, 0, 0), 15);
        let whole = StartWindow {
            min_ppm: 0,
            max_ppm: 1_000_000,
        };
        let t = t_star(&tree, whole, 42, 0, 0);
        assert_eq!(t, t_star(&tree, whole, 42, 0, 0));
        assert!(t <= 30);
    }

    #[test]
    fn history_is_before_t_star_and_each_live_agent_warms_its_last_turn() {
        let tree = small_tree();
        let mid = mid_start(&tree, 15);
        assert_eq!(mid.history, vec![true, true, false, false, true, false]);
        assert_eq!(mid.warm, vec![(1, 2), (4, 5)]);
        assert_eq!(mid.lead(&tree, 1), 5);
        assert_eq!(mid.lead(&tree, 4), 3);
        assert_eq!(mid.max_lead(&tree), 5);
        // Before the subagent spawned: only the root warms.
        assert_eq!(mid_start(&tree, 11).warm, vec![(1, 2)]);
        // At the very start nothing is history and nothing warms.
        assert!(mid_start(&tree, 0).warm.is_empty());
    }

    #[test]
    fn the_accelerated_turns_are_the_earliest_live_ones_in_dependency_order() {
        let tree = small_tree();
        let mid = mid_start(&tree, 15);
        // Live: root turns 2 (20) and 3 (30), the subagent's turn 5 (25).
        let pick = |k| accelerated(&tree, &mid, k);
        assert_eq!(pick(0), vec![false; 6]);
        assert_eq!(pick(1), vec![false, false, true, false, false, false]);
        assert_eq!(pick(2), vec![false, false, true, false, false, true]);
        assert_eq!(pick(3), vec![false, false, true, true, false, true]);
        assert_eq!(pick(u32::MAX), pick(3));
    }
}
