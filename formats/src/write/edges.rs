//! What every writer needs to know of a tree's structure, whatever the
//! format: its edges (the stated ones, else those arbor derives from the
//! recorded times, as every reader without stated edges will) and the
//! starts a reader rebuilds from edges when durations are unknown.

use arbor_engine::derive::{derive_edges, DeriveOptions};
use arbor_engine::model::{Anchor, Edge, Tree};
use arbor_engine::time::Nanos;

/// The tree's edges: stated, else derived with the default options.
pub fn edges_of(tree: &Tree) -> Vec<Edge> {
    match &tree.explicit_edges {
        Some(edges) => edges.clone(),
        None => derive_edges(tree, &DeriveOptions::default()).0,
    }
}

/// Agent index and turn index of each flat turn index.
pub fn places(tree: &Tree) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(tree.turn_count());
    for (a, agent) in tree.agents.iter().enumerate() {
        for k in 0..agent.turns.len() {
            out.push((a as u32, k as u32));
        }
    }
    out
}

/// Starts a reader computes when every duration is unknown (a turn
/// completes when it is sent): a turn with incoming edges at the latest
/// `start(from) + gap`; one without at `base[turn]`. Edges are `(from,
/// to, gap)` over flat indices and must form a DAG; `None` if they do not.
pub fn rebuilt_starts(
    turns: usize,
    edges: &[(u32, u32, Nanos)],
    base: &[Nanos],
) -> Option<Vec<Nanos>> {
    let mut pending = vec![0usize; turns];
    let mut out_edges: Vec<Vec<(u32, Nanos)>> = vec![Vec::new(); turns];
    for &(from, to, gap) in edges {
        pending[to as usize] += 1;
        out_edges[from as usize].push((to, gap));
    }
    let mut start: Vec<Option<Nanos>> = vec![None; turns];
    let mut ready: Vec<usize> = (0..turns).filter(|&t| pending[t] == 0).collect();
    for &t in &ready {
        start[t] = Some(base.get(t).copied().unwrap_or(0));
    }
    let mut latest: Vec<Nanos> = vec![0; turns];
    let mut done = 0;
    while let Some(t) = ready.pop() {
        done += 1;
        let at = start[t].unwrap_or(latest[t]);
        start[t] = Some(at);
        for &(to, gap) in &out_edges[t] {
            let to = to as usize;
            latest[to] = latest[to].max(at.saturating_add(gap));
            pending[to] -= 1;
            if pending[to] == 0 {
                start[to] = Some(latest[to]);
                ready.push(to);
            }
        }
    }
    (done == turns).then(|| start.into_iter().map(|s| s.unwrap_or(0)).collect())
}

/// Turns whose incoming edges differ between `tree`'s stated edges and
/// the edges a reader derives from `as_read` (the tree as the format
/// carries it: same agents and turns, other times or links); 0 when the
/// tree states none.
pub fn stated_lost(tree: &Tree, as_read: &Tree) -> usize {
    let Some(stated) = &tree.explicit_edges else {
        return 0;
    };
    let derived = derive_edges(as_read, &DeriveOptions::default()).0;
    let mut turns: Vec<u32> = stated
        .iter()
        .filter(|e| !derived.contains(e))
        .chain(derived.iter().filter(|e| !stated.contains(e)))
        .map(|e| e.to)
        .collect();
    turns.sort_unstable();
    turns.dedup();
    turns.len()
}

/// Whether an edge counts from its source's completion.
pub fn is_end(edge: &Edge) -> bool {
    edge.anchor == Anchor::End
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_follow_the_latest_incoming_edge() {
        // 0 -> 1 (gap 5), 0 -> 2 (gap 1), 1 -> 2 (gap 1); 3 alone at 7.
        let starts = rebuilt_starts(4, &[(0, 1, 5), (0, 2, 1), (1, 2, 1)], &[2, 0, 0, 7]);
        assert_eq!(starts, Some(vec![2, 7, 8, 7]));
        assert_eq!(rebuilt_starts(2, &[(0, 1, 0), (1, 0, 0)], &[0, 0]), None);
    }
}
