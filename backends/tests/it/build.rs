//! Small builders for hand-written trees and runs.

use arbor_backends::virtual_clock;
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::{Scheduler, Slot};
use arbor_engine::time::{Nanos, NANOS_PER_SEC};
use arbor_engine::{Agent, AgentKind, InputKind, Tree, Turn, Workload};
use arbor_sim::ServiceModel;

pub const S: Nanos = NANOS_PER_SEC;

/// A turn at `start` s lasting `duration` s, whose input is a tool result.
pub fn tool(start: u64, duration: u64) -> Turn {
    Turn {
        start: start * S,
        duration: Some(duration * S),
        isl: 100,
        osl: 10,
        input_kind: InputKind::ToolResult,
        ..Turn::default()
    }
}

/// Same, with user text as input.
pub fn user(start: u64, duration: u64) -> Turn {
    Turn {
        input_kind: InputKind::UserText,
        ..tool(start, duration)
    }
}

pub fn agent(id: &str, parent: Option<u32>, kind: AgentKind, turns: Vec<Turn>) -> Agent {
    Agent {
        id: id.into(),
        parent,
        kind,
        recorded_end: None,
        turns,
    }
}

pub fn root(turns: Vec<Turn>) -> Agent {
    agent("root", None, AgentKind::Root, turns)
}

pub fn tree(id: &str, arrival_s: u64, agents: Vec<Agent>) -> Tree {
    Tree {
        id: id.into(),
        source: "test".into(),
        arrival: arrival_s * S,
        agents,
        ..Tree::default()
    }
}

/// Compiles and runs `trees` under `policy` with `model`, exact derivation
/// (tolerance 0).
pub fn run_with(trees: Vec<Tree>, policy: Policy, model: ServiceModel) -> Scheduler {
    let workload = Workload { trees };
    let options = DeriveOptions {
        overlap_tolerance: 0,
    };
    let compiled = compile(&workload, &policy, &options).expect("valid workload");
    let mut scheduler = Scheduler::new(compiled, policy).expect("valid policy");
    virtual_clock::run(&mut scheduler, &model).expect("engine accepts the driver");
    scheduler
}

pub fn run(trees: Vec<Tree>, policy: Policy) -> Scheduler {
    run_with(trees, policy, ServiceModel::Recorded)
}

/// The slot of (play, flat turn).
pub fn slot(s: &Scheduler, play: usize, turn: u32) -> Slot {
    let id = s.plays()[play].request(turn).expect("play started");
    *s.slot(id).expect("slot exists")
}

/// Send times of every turn of `play`, in seconds (exact multiples assumed).
pub fn sends(s: &Scheduler, play: usize) -> Vec<f64> {
    let p = s.plays()[play];
    (0..s.trees()[p.tree as usize].turn_count())
        .map(|t| slot(s, play, t).sent as f64 / S as f64)
        .collect()
}
