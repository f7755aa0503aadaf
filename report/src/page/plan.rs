//! A plan as the page's source (`arbor plan --report`): from the turns
//! it sent ([`plan_turns`]), the plan's page: its load over time
//! ([`series::planned`]), swim lanes of the planned turns, and spawn/join
//! arrows from the compiled trees.

use std::collections::BTreeMap;

use arbor_engine::model::Tree;
use arbor_engine::scheduler::Scheduler;
use serde_json::Value;

use super::cdf::Cdf;
use super::data::{RunPage, Source};
use super::lanes::LaneBuilder;
use super::plan_turns::turns;
use super::series;
use arbor_runs::shape::TreeShape;

/// The page of a finished plan: `summary` is its `plan --json` object,
/// `inputs` what it read; `recorded` (the trees as loaded) gives the
/// agents' kinds.
pub fn page(scheduler: &Scheduler, recorded: &[Tree], summary: Value, inputs: &str) -> RunPage {
    let turns = turns(scheduler);
    let series = series::planned(turns.iter().map(|p| &p.turn));
    let mut cdf = BTreeMap::new();
    if scheduler.policy().max_inflight.is_some() {
        let waits = turns.iter().map(|p| p.turn.queue_wait).collect();
        cdf.insert("queue_wait", Cdf::of_values(waits));
    }
    let mut lanes = LaneBuilder::default();
    for p in &turns {
        lanes.push(p.key, p.turn.clone(), None);
    }
    let lanes = lanes.finish();
    let shapes: Vec<TreeShape> = scheduler
        .trees()
        .iter()
        .enumerate()
        .map(|(i, tree)| TreeShape::of(i as u32, tree, recorded.get(i)))
        .collect();
    RunPage {
        source: Source::Plan,
        name: "plan".to_string(),
        path: inputs.to_string(),
        summary,
        records: turns.len() as u64,
        cdf,
        series,
        edges: Some(lanes.arrows(&shapes)),
        lanes,
        planned: None,
        server: None,
        slo: None,
    }
}
