//! Proptest strategies: workloads, policies, service models.
//!
//! Workloads are built directly as [`Workload`] values from small integer
//! "scripts" (times are whole milliseconds from small ranges), so a failure
//! shrinks to a handful of turns with readable times. They cover nested
//! subagents (depth up to 4), blocking and background children, fan-outs up
//! to 16, recorded overlaps, unknown durations, zero gaps, equal timestamps,
//! recorded agent ends and many trees arriving together. [`dag_workload`]
//! builds trees with explicit edges (random DAGs over their turns).

use arbor_engine::model::{Agent, AgentKind, Anchor, Edge, EdgeKind, InputKind, Tree, Turn};
use arbor_engine::policy::{Arrival, GapTransform, Policy, Stagger};
use arbor_engine::time::{Nanos, NANOS_PER_MS};
use arbor_engine::Workload;
use arbor_sim::ServiceModel;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::driver::Service;

const MS: Nanos = NANOS_PER_MS;

/// Deepest subagent nesting generated (the root is depth 0).
pub const MAX_DEPTH: u32 = 4;

/// One generated turn: start after the previous one, duration, input kind,
/// tokens.
#[derive(Debug, Clone)]
struct TurnGen {
    delta_ms: u64,
    duration_ms: Option<u64>,
    input: u8,
    isl: u32,
    osl: u32,
}

/// One generated child agent.
#[derive(Debug, Clone)]
struct ChildGen {
    parent: Index,
    background: bool,
    /// The parent turn it is spawned near, and the delay after that turn's
    /// start.
    spawn_turn: Index,
    spawn_delay_ms: u64,
    /// Extra time between its last turn's end and its recorded end.
    end_extra_ms: Option<u64>,
    turns: Vec<TurnGen>,
}

fn turn_gen() -> impl Strategy<Value = TurnGen> {
    (
        prop_oneof![2 => Just(0u64), 5 => 0u64..5],
        prop_oneof![1 => Just(None), 5 => (0u64..7).prop_map(Some)],
        0u8..3,
        1u32..40,
        0u32..6,
    )
        .prop_map(|(delta_ms, duration_ms, input, isl, osl)| TurnGen {
            delta_ms,
            duration_ms,
            input,
            isl,
            osl,
        })
}

fn child_gen() -> impl Strategy<Value = ChildGen> {
    (
        any::<Index>(),
        prop::bool::weighted(0.3),
        any::<Index>(),
        0u64..6,
        prop_oneof![3 => Just(None), 1 => (0u64..6).prop_map(Some)],
        prop::collection::vec(turn_gen(), 1..4),
    )
        .prop_map(
            |(parent, background, spawn_turn, spawn_delay_ms, end_extra_ms, turns)| ChildGen {
                parent,
                background,
                spawn_turn,
                spawn_delay_ms,
                end_extra_ms,
                turns,
            },
        )
}

fn input_kind(code: u8) -> InputKind {
    match code {
        0 => InputKind::ToolResult,
        1 => InputKind::UserText,
        _ => InputKind::Unknown,
    }
}

fn turns_from(first_start: Nanos, gens: &[TurnGen]) -> Vec<Turn> {
    let mut at = first_start;
    gens.iter()
        .enumerate()
        .map(|(i, g)| {
            if i > 0 {
                at += g.delta_ms * MS;
            }
            Turn {
                start: at,
                duration: g.duration_ms.map(|d| d * MS),
                isl: g.isl,
                osl: g.osl,
                input_kind: input_kind(g.input),
                ..Turn::default()
            }
        })
        .collect()
}

/// Depth of each agent (root 0).
fn depths(agents: &[Agent]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::with_capacity(agents.len());
    for a in agents {
        let d = a.parent.map_or(0, |p| out[p as usize] + 1);
        out.push(d);
    }
    out
}

fn build_tree(
    index: usize,
    arrival_ms: u64,
    root: &[TurnGen],
    star: bool,
    children: &[ChildGen],
) -> Tree {
    let mut agents = vec![Agent {
        id: "a0".into(),
        parent: None,
        kind: AgentKind::Root,
        recorded_end: None,
        turns: turns_from(0, root),
    }];
    for c in children {
        let depth = depths(&agents);
        let candidates: Vec<u32> = (0..agents.len() as u32)
            .filter(|&a| depth[a as usize] < MAX_DEPTH)
            .collect();
        let parent = if star {
            0
        } else {
            candidates[c.parent.index(candidates.len())]
        };
        let parent_turns = &agents[parent as usize].turns;
        let near = &parent_turns[c.spawn_turn.index(parent_turns.len())];
        let turns = turns_from(near.start + c.spawn_delay_ms * MS, &c.turns);
        let last_end = turns.iter().map(Turn::end).max().unwrap_or(0);
        agents.push(Agent {
            id: format!("a{}", agents.len()),
            parent: Some(parent),
            kind: if c.background {
                AgentKind::Background
            } else {
                AgentKind::Blocking
            },
            recorded_end: c.end_extra_ms.map(|e| last_end + e * MS),
            turns,
        });
    }
    Tree {
        id: format!("t{index}"),
        source: "generated".into(),
        arrival: arrival_ms * MS,
        agents,
        ..Tree::default()
    }
}

/// Size knobs of generated workloads.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub trees: u32,
    pub root_turns: u32,
    /// Child agents per tree (fan-outs up to this many).
    pub children: u32,
}

/// Small workloads (the oracle and API properties).
pub const SMALL: Size = Size {
    trees: 3,
    root_turns: 5,
    children: 5,
};

/// The default size: up to 4 trees, 16 children each.
pub const MEDIUM: Size = Size {
    trees: 4,
    root_turns: 6,
    children: 16,
};

fn tree_strategy(size: Size) -> impl Strategy<Value = (u64, Vec<TurnGen>, bool, Vec<ChildGen>)> {
    (
        prop_oneof![2 => Just(0u64), 3 => 0u64..4],
        prop::collection::vec(turn_gen(), 1..=size.root_turns as usize),
        prop::bool::weighted(0.2),
        prop_oneof![
            3 => prop::collection::vec(child_gen(), 0..=(size.children as usize).min(4)),
            1 => prop::collection::vec(child_gen(), 0..=size.children as usize),
        ],
    )
}

/// Workloads with derived edges, built directly.
pub fn workload(size: Size) -> impl Strategy<Value = Workload> {
    prop::collection::vec(tree_strategy(size), 1..=size.trees as usize).prop_map(|trees| Workload {
        trees: trees
            .iter()
            .enumerate()
            .map(|(i, (arrival, root, star, children))| {
                build_tree(i, *arrival, root, *star, children)
            })
            .collect(),
    })
}

/// Workloads whose trees state their edges: random DAGs over their turns
/// (edges go from a lower flat index to a higher one), any anchor, small
/// gaps; some trees keep derived edges. Turns of an agent stay in start
/// order, as validation requires.
pub fn dag_workload(size: Size) -> impl Strategy<Value = Workload> {
    let tree = (
        tree_strategy(size),
        prop::bool::weighted(0.8),
        prop::collection::vec(
            (any::<Index>(), any::<Index>(), any::<bool>(), 0u64..5),
            0..24,
        ),
    );
    prop::collection::vec(tree, 1..=size.trees as usize).prop_map(|trees| {
        let trees = trees
            .iter()
            .enumerate()
            .map(|(i, ((arrival, root, star, children), explicit, edges))| {
                let mut tree = build_tree(i, *arrival, root, *star, children);
                if *explicit {
                    let n = tree.turn_count();
                    let mut out = Vec::new();
                    if n > 1 {
                        for (a, b, start, gap) in edges {
                            let (a, b) = (a.index(n) as u32, b.index(n) as u32);
                            if a == b {
                                continue;
                            }
                            out.push(Edge {
                                from: a.min(b),
                                to: a.max(b),
                                anchor: if *start { Anchor::Start } else { Anchor::End },
                                gap: gap * MS,
                                kind: EdgeKind::Sequence,
                            });
                        }
                    }
                    tree.explicit_edges = Some(out);
                }
                tree
            })
            .collect();
        Workload { trees }
    })
}

/// Derived-edge workloads or explicit-DAG workloads.
pub fn any_workload(size: Size) -> impl Strategy<Value = Workload> {
    prop_oneof![3 => workload(size), 1 => dag_workload(size)]
}

pub fn gap_transform() -> impl Strategy<Value = GapTransform> {
    prop_oneof![
        3 => Just(GapTransform::Recorded),
        1 => Just(GapTransform::Zero),
        1 => (0u64..300).prop_map(|p| GapTransform::Scale { ppm: p * 10_000 }),
        1 => (0u64..4).prop_map(|ms| GapTransform::Max(ms * MS)),
        1 => (0u64..4).prop_map(|ms| GapTransform::Fixed(ms * MS)),
    ]
}

/// Every arrival kind, at rates of about one tree per millisecond.
pub fn arrival() -> impl Strategy<Value = Arrival> {
    prop_oneof![
        Just(Arrival::Recorded),
        Just(Arrival::Immediate),
        (1u32..4).prop_map(|k| Arrival::Rate(1000.0 / k as f64)),
        (1u32..4).prop_map(|k| Arrival::Poisson(1000.0 / k as f64)),
    ]
}

pub fn stagger() -> impl Strategy<Value = Stagger> {
    prop_oneof![
        2 => Just(Stagger::None),
        1 => (0u64..10).prop_map(|ms| Stagger::Even { span: ms * MS }),
        1 => (0u64..10).prop_map(|ms| Stagger::Random { span: ms * MS }),
    ]
}

fn opt<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    prop_oneof![1 => Just(None), 1 => s.prop_map(Some)]
}

/// Open-loop policies with no duration: transforms, arrivals, copies and
/// stagger, request cap, idle-gap cap, seed.
pub fn open_policy() -> impl Strategy<Value = Policy> {
    (
        gap_transform(),
        gap_transform(),
        arrival(),
        1u32..4,
        stagger(),
        opt(1u32..6),
        opt((0u64..4).prop_map(|ms| ms * MS)),
        0u64..4,
    )
        .prop_map(
            |(
                tool_time,
                think_time,
                arrival,
                copies,
                stagger,
                max_inflight,
                idle_gap_cap,
                seed,
            )| {
                Policy {
                    tool_time,
                    think_time,
                    arrival,
                    copies,
                    stagger,
                    max_inflight,
                    idle_gap_cap,
                    seed,
                    ..Policy::default()
                }
            },
        )
}

/// Closed-loop policies (`--sessions N`) with no duration.
pub fn closed_policy() -> impl Strategy<Value = Policy> {
    (open_policy(), 1u32..5).prop_map(|(p, n)| Policy {
        sessions: Some(n),
        stagger: Stagger::None,
        ..p
    })
}

/// Any policy that runs to completion (no duration).
pub fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![2 => open_policy(), 1 => closed_policy()]
}

/// Policies with `--duration` and `--grace`, open or closed loop, with and
/// without `--loop`.
pub fn timed_policy() -> impl Strategy<Value = Policy> {
    let bounded = (policy(), 0u64..25, 0u64..6).prop_map(|(p, d, g)| Policy {
        duration: Some(d * MS),
        grace: g * MS,
        ..p
    });
    prop_oneof![3 => bounded, 1 => looping_policy()]
}

/// Closed-loop policies with `--loop` (and so `--duration`).
pub fn looping_policy() -> impl Strategy<Value = Policy> {
    (closed_policy(), 0u64..25, 0u64..6).prop_map(|(p, d, g)| Policy {
        duration: Some(d * MS),
        grace: g * MS,
        loop_lanes: true,
        ..p
    })
}

/// Shipped models and the random per-request model; times of a few ms.
pub fn service() -> impl Strategy<Value = Service> {
    prop_oneof![
        2 => Just(Service::Model(ServiceModel::Recorded)),
        1 => (0u64..3, 0u64..2).prop_map(|(t, i)| Service::Model(ServiceModel::Fixed { ttft: t * MS, itl: i * MS })),
        1 => (1u64..5, 1u64..5).prop_map(|(p, d)| Service::Model(ServiceModel::Throughput {
            prefill_mtok_s: p * 10_000_000,
            decode_mtok_s: d * 1_000_000,
        })),
        2 => (any::<u64>(), 0u64..8).prop_map(|(seed, max)| Service::Random { seed, max: max * MS }),
    ]
}
