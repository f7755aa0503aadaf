//! Starting a tree in the middle: the start window, `t*`, history and
//! warmup (the AgentX recipe, `docs/agentx.md`).
//!
//! Owns, for one tree and one `t*`, which turns are history (recorded
//! before `t*`: never replayed), which turn of each agent alive at `t*` is
//! sent as a warmup (the turn just before `t*`, with its full prefix and one
//! output token, so the server's cache holds what the recording's did), and
//! when the remaining turns are due relative to the profiling start. Pure
//! functions; the scheduler applies them to a lane's first play.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::compile;
    use crate::derive::DeriveOptions;
    use crate::load::weka::parse_trace;
    use crate::model::Workload;
    use crate::policy::Policy;

    fn trace_0277() -> CompiledTree {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/weka-kv-cache-tester/trace_0277.json"
        );
        let (tree, _) = parse_trace(&std::fs::read_to_string(path).unwrap(), path).unwrap();
        let workload = Workload { trees: vec![tree] };
        compile(&workload, &Policy::default(), &DeriveOptions::default())
            .unwrap()
            .trees
            .remove(0)
    }

    #[test]
    fn t_star_is_seeded_per_lane_and_inside_the_window() {
        let tree = trace_0277();
        let window = StartWindow {
            min_ppm: 250_000,
            max_ppm: 750_000,
        };
        let last = *tree.start.iter().max().unwrap();
        let a = t_star(&tree, window, 42, 0, 0);
        assert_eq!(a, t_star(&tree, window, 42, 0, 0));
        assert_ne!(a, t_star(&tree, window, 42, 0, 1));
        for lane in 0..50 {
            let t = t_star(&tree, window, 7, 0, lane);
            assert!(t >= last / 4 && t <= last * 3 / 4 + 1, "{t}");
        }
    }

    #[test]
    fn agents_alive_at_t_star_warm_their_last_turn_before_it() {
        let tree = trace_0277();
        // 30 s: the root has sent turn 0 (0 s) only; the three Explore
        // agents (spawned at 19.47 s) are part way through.
        let mid = mid_start(&tree, 30_000_000_000);
        let warm_agents: Vec<u32> = mid
            .warm
            .iter()
            .map(|&(w, _)| tree.agent_of[w as usize])
            .collect();
        assert_eq!(warm_agents, vec![0, 1, 2, 3]);
        for &(w, next) in &mid.warm {
            assert!(mid.history[w as usize] && !mid.history[next as usize]);
            assert_eq!(next, w + 1);
            assert!(
                tree.start[w as usize] < 30_000_000_000
                    && tree.start[next as usize] >= 30_000_000_000
            );
        }
        // The Plan agent (spawned at 385.6 s) has not started: no warmup.
        assert!(!warm_agents.contains(&4));
        assert!(mid.max_lead(&tree) <= 30_000_000_000);
    }
}
