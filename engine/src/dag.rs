//! Validation and compilation of trees into flat arrays.
//!
//! Owns the step from a [`Tree`] (recorded, possibly with explicit edges) to
//! a [`CompiledTree`]: edges derived or taken as stated, checked with
//! petgraph (no dangling ids, no cycles), gap transforms of the policy
//! applied, and everything laid out in compressed arrays for the
//! scheduler's hot loop. The scheduler never sees the model types.

use petgraph::algo::toposort;
use petgraph::graph::DiGraph;

use crate::derive::{derive_edges, Adjustments, DeriveOptions};
use crate::error::InputError;
use crate::model::{AgentKind, Anchor, Edge, Tree, Workload};
use crate::policy::{GapClass, Policy};
use crate::time::Nanos;

/// An edge as the scheduler uses it: target, anchor and transformed gap,
/// and the gap's class (for the makespan's breakdown; the scheduler does
/// not read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutEdge {
    pub to: u32,
    pub anchor: Anchor,
    pub gap: Nanos,
    pub class: GapClass,
}

/// One tree in flat arrays, indexed by flat turn id.
#[derive(Debug, Clone, Default)]
pub struct CompiledTree {
    pub id: String,
    pub source: String,
    /// Recorded arrival.
    pub arrival: Nanos,
    pub agent_count: u32,
    /// Agent ids, indexed by agent.
    pub agent_ids: Vec<String>,
    /// Parent agent of each agent (`u32::MAX` for the root).
    pub agent_parent: Vec<u32>,
    pub agent_of: Vec<u32>,
    pub index_in_agent: Vec<u32>,
    /// Recorded start from the tree start: the offset of a source turn.
    pub start: Vec<Nanos>,
    /// Recorded duration (unknown: 0).
    pub duration: Vec<Nanos>,
    pub isl: Vec<u32>,
    pub osl: Vec<u32>,
    /// Number of incoming edges of each turn.
    pub in_degree: Vec<u32>,
    /// Outgoing edges of turn `i` are `out_edges[out_start[i]..out_start[i+1]]`.
    pub out_start: Vec<u32>,
    pub out_edges: Vec<OutEdge>,
    /// Turns with no incoming edge: eligible at the play start plus their
    /// recorded start.
    pub sources: Vec<u32>,
}

impl CompiledTree {
    pub fn turn_count(&self) -> u32 {
        self.agent_of.len() as u32
    }

    pub fn out(&self, turn: u32) -> &[OutEdge] {
        let i = turn as usize;
        &self.out_edges[self.out_start[i] as usize..self.out_start[i + 1] as usize]
    }
}

/// A workload ready to schedule.
#[derive(Debug, Clone, Default)]
pub struct CompiledWorkload {
    pub trees: Vec<CompiledTree>,
    pub adjustments: Adjustments,
    pub agents: u64,
    pub turns: u64,
}

fn tree_error(tree: &Tree, message: String) -> InputError {
    let place = if tree.id.is_empty() {
        "tree".to_string()
    } else {
        format!("tree `{}`", tree.id)
    };
    InputError::at(tree.source.clone(), place, message)
}

/// Human name of a flat turn id, for messages.
fn turn_name(tree: &Tree, offsets: &[u32], flat: u32) -> String {
    let agent = offsets.partition_point(|&o| o <= flat).saturating_sub(1);
    let index = flat - offsets[agent];
    match tree.agents.get(agent) {
        Some(a) if !a.id.is_empty() => format!("agent `{}` turn {}", a.id, index),
        _ => format!("agent {agent} turn {index}"),
    }
}

/// Checks what the scheduler relies on: a root first, parents before
/// children, turns in start order and of at most
/// [`MAX_TURN_TOKENS`](crate::model::MAX_TURN_TOKENS) input and output
/// tokens (a turn of 4e9 output tokens made the live client reserve 32 GB),
/// edges between existing turns, no cycle.
pub fn validate(tree: &Tree, edges: &[Edge]) -> Result<(), InputError> {
    if tree.turn_count() == 0 {
        return Err(tree_error(
            tree,
            "expected at least one turn, found none".into(),
        ));
    }
    if tree.turn_count() > u32::MAX as usize / 2 {
        return Err(tree_error(tree, "too many turns in one tree".into()));
    }
    for (index, agent) in tree.agents.iter().enumerate() {
        match (index, agent.parent, agent.kind) {
            (0, None, AgentKind::Root) => {}
            (0, _, _) => {
                return Err(tree_error(
                    tree,
                    "expected the first agent to be the root".into(),
                ))
            }
            (_, Some(p), kind) if (p as usize) < index && kind != AgentKind::Root => {}
            _ => {
                return Err(tree_error(
                    tree,
                    format!(
                        "agent `{}`: expected a parent agent listed before it and a child kind",
                        agent.id
                    ),
                ))
            }
        }
        if let Some((i, t)) = agent.turns.iter().enumerate().find(|(_, t)| {
            t.isl > crate::model::MAX_TURN_TOKENS || t.osl > crate::model::MAX_TURN_TOKENS
        }) {
            return Err(tree_error(
                tree,
                format!(
                    "agent `{}` turn {i}: {} input and {} output tokens: expected at most {} of \
                     each in one turn (no model's context is longer)",
                    agent.id,
                    t.isl,
                    t.osl,
                    crate::model::MAX_TURN_TOKENS
                ),
            ));
        }
        if let Some(w) = agent.turns.windows(2).position(|w| w[1].start < w[0].start) {
            return Err(tree_error(
                tree,
                format!(
                    "agent `{}` turn {}: expected turns in start order, but it starts before turn {}",
                    agent.id,
                    w + 1,
                    w
                ),
            ));
        }
    }
    let n = tree.turn_count() as u32;
    let offsets = tree.turn_offsets();
    let mut graph = DiGraph::<(), ()>::with_capacity(n as usize, edges.len());
    for _ in 0..n {
        graph.add_node(());
    }
    for edge in edges {
        if edge.from >= n || edge.to >= n {
            return Err(tree_error(
                tree,
                format!(
                    "edge {} -> {} refers to a turn that does not exist (the tree has {n} turns)",
                    edge.from, edge.to
                ),
            ));
        }
        if edge.from == edge.to {
            return Err(tree_error(
                tree,
                format!("{} depends on itself", turn_name(tree, &offsets, edge.from)),
            ));
        }
        graph.add_edge(edge.from.into(), edge.to.into(), ());
    }
    if let Err(cycle) = toposort(&graph, None) {
        let at = cycle.node_id().index() as u32;
        return Err(tree_error(
            tree,
            format!(
                "the edges form a cycle through {}: expected a DAG",
                turn_name(tree, &offsets, at)
            ),
        ));
    }
    Ok(())
}

/// Derives (or takes) the edges of a tree, validates them and lays the tree
/// out flat with the policy's gap transforms applied.
pub fn compile_tree(
    tree: &Tree,
    policy: &Policy,
    options: &DeriveOptions,
) -> Result<(CompiledTree, Adjustments), InputError> {
    let (edges, adjustments) = match &tree.explicit_edges {
        Some(edges) => (edges.clone(), Adjustments::default()),
        None => derive_edges(tree, options),
    };
    validate(tree, &edges)?;

    let n = tree.turn_count();
    let mut compiled = CompiledTree {
        id: tree.id.clone(),
        source: tree.source.clone(),
        arrival: tree.arrival,
        agent_count: tree.agents.len() as u32,
        agent_ids: tree.agents.iter().map(|a| a.id.clone()).collect(),
        agent_parent: tree
            .agents
            .iter()
            .map(|a| a.parent.unwrap_or(u32::MAX))
            .collect(),
        agent_of: Vec::with_capacity(n),
        index_in_agent: Vec::with_capacity(n),
        start: Vec::with_capacity(n),
        duration: Vec::with_capacity(n),
        isl: Vec::with_capacity(n),
        osl: Vec::with_capacity(n),
        in_degree: vec![0; n],
        out_start: vec![0; n + 1],
        out_edges: Vec::with_capacity(edges.len()),
        sources: Vec::new(),
    };
    let mut input_kind = Vec::with_capacity(n);
    for (a, agent) in tree.agents.iter().enumerate() {
        for (i, turn) in agent.turns.iter().enumerate() {
            compiled.agent_of.push(a as u32);
            compiled.index_in_agent.push(i as u32);
            compiled.start.push(turn.start);
            compiled.duration.push(turn.duration.unwrap_or(0));
            compiled.isl.push(turn.isl);
            compiled.osl.push(turn.osl);
            input_kind.push(turn.input_kind);
        }
    }
    // Counting sort of edges by source keeps each turn's edges in the order
    // they were derived, so the plan does not depend on a sort's stability.
    for edge in &edges {
        compiled.out_start[edge.from as usize + 1] += 1;
        compiled.in_degree[edge.to as usize] += 1;
    }
    for i in 0..n {
        compiled.out_start[i + 1] += compiled.out_start[i];
    }
    let mut fill: Vec<u32> = compiled.out_start[..n].to_vec();
    compiled.out_edges.resize(
        edges.len(),
        OutEdge {
            to: 0,
            anchor: Anchor::End,
            gap: 0,
            class: GapClass::Other,
        },
    );
    for edge in &edges {
        // A start-anchored gap spans the previous request's service time,
        // not tool or think time: only the gap scale changes it.
        let input = input_kind[edge.to as usize];
        let slot = &mut fill[edge.from as usize];
        compiled.out_edges[*slot as usize] = OutEdge {
            to: edge.to,
            anchor: edge.anchor,
            gap: policy.edge_gap(edge, input),
            class: GapClass::of_edge(edge, input),
        };
        *slot += 1;
    }
    compiled.sources = (0..n as u32)
        .filter(|&t| compiled.in_degree[t as usize] == 0)
        .collect();
    Ok((compiled, adjustments))
}

/// Compiles every tree of a workload. Fails on the first bad tree.
pub fn compile(
    workload: &Workload,
    policy: &Policy,
    options: &DeriveOptions,
) -> Result<CompiledWorkload, InputError> {
    let mut out = CompiledWorkload {
        trees: Vec::with_capacity(workload.trees.len()),
        ..CompiledWorkload::default()
    };
    for tree in &workload.trees {
        let (compiled, adjustments) = compile_tree(tree, policy, options)?;
        out.adjustments.add(&adjustments);
        out.agents += compiled.agent_count as u64;
        out.turns += compiled.turn_count() as u64;
        out.trees.push(compiled);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, EdgeKind, InputKind, Turn};
    use crate::policy::GapTransform;

    fn simple_tree(edges: Option<Vec<Edge>>) -> Tree {
        let turns = (0..3)
            .map(|i| Turn {
                start: i * 10,
                duration: Some(5),
                input_kind: InputKind::ToolResult,
                ..Turn::default()
            })
            .collect();
        Tree {
            id: "t".into(),
            source: "file.jsonl".into(),
            agents: vec![Agent {
                id: "root".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns,
            }],
            explicit_edges: edges,
            ..Tree::default()
        }
    }

    fn edge(from: u32, to: u32) -> Edge {
        Edge {
            from,
            to,
            anchor: Anchor::End,
            gap: 0,
            kind: EdgeKind::Sequence,
        }
    }

    #[test]
    fn compiles_to_csr_with_transformed_gaps() {
        let policy = Policy {
            tool_time: GapTransform::Zero,
            ..Policy::default()
        };
        let (c, _) = compile_tree(&simple_tree(None), &policy, &DeriveOptions::default()).unwrap();
        assert_eq!(c.sources, vec![0]);
        assert_eq!(c.in_degree, vec![0, 1, 1]);
        assert_eq!(
            c.out(0),
            &[OutEdge {
                to: 1,
                anchor: Anchor::End,
                gap: 0,
                class: GapClass::Tool,
            }]
        );
        assert_eq!(c.out(2), &[]);
    }

    #[test]
    fn a_cycle_in_explicit_edges_is_an_input_error() {
        let tree = simple_tree(Some(vec![edge(0, 1), edge(1, 2), edge(2, 1)]));
        let err = compile_tree(&tree, &Policy::default(), &DeriveOptions::default()).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("file.jsonl: tree `t`: "), "{text}");
        assert!(text.contains("cycle through agent `root` turn"), "{text}");
    }

    #[test]
    fn an_edge_to_a_missing_turn_is_an_input_error() {
        let tree = simple_tree(Some(vec![edge(0, 7)]));
        let err = compile_tree(&tree, &Policy::default(), &DeriveOptions::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("does not exist (the tree has 3 turns)"),
            "{err}"
        );
    }

    #[test]
    fn a_turn_of_more_tokens_than_any_context_is_an_input_error() {
        // Issue 27, item 10: `out` = 4e9, accepted by every loader, made a
        // live run reserve 32 GB of stamps and abort.
        let mut tree = simple_tree(None);
        tree.agents[0].turns[1].osl = 4_000_000_000;
        let err = compile_tree(&tree, &Policy::default(), &DeriveOptions::default()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("turn 1: "), "{text}");
        assert!(
            text.contains("4000000000 output tokens: expected at most 16777216"),
            "{text}"
        );
        tree.agents[0].turns[1].osl = crate::model::MAX_TURN_TOKENS;
        assert!(compile_tree(&tree, &Policy::default(), &DeriveOptions::default()).is_ok());
    }

    #[test]
    fn turns_out_of_order_and_empty_trees_are_rejected() {
        let mut tree = simple_tree(None);
        tree.agents[0].turns[2].start = 1;
        let err = compile_tree(&tree, &Policy::default(), &DeriveOptions::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("turn 2: expected turns in start order"),
            "{err}"
        );
        tree.agents[0].turns.clear();
        let err = compile_tree(&tree, &Policy::default(), &DeriveOptions::default()).unwrap_err();
        assert!(
            err.to_string().contains("expected at least one turn"),
            "{err}"
        );
    }
}
