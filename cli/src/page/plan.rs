//! A plan as the page's source (`arbor plan --report`): the turns a
//! scheduler run to the end on the virtual clock sent, each as a [`Turn`]
//! with its row's key, and from them the plan's page: its load over time
//! ([`series::planned`]), swim lanes of the planned turns, and spawn/join
//! arrows from the compiled trees. Reads the scheduler only once it has
//! finished; never a clock.
//!
//! A plan knows no first token: a planned turn's `first` is its `sent`, so
//! its prompt is demanded when it is sent and its output over its whole
//! planned service (sent to end).

use std::collections::BTreeMap;

use arbor_engine::model::Tree;
use arbor_engine::scheduler::{Scheduler, TurnState};
use serde_json::Value;

use super::cdf::Cdf;
use super::data::{RunPage, Source};
use super::lanes::{LaneBuilder, RowKey};
use super::record::{Status, Turn};
use super::series;
use crate::shape::TreeShape;

/// A turn the plan sent, and whose row it is on.
pub struct PlanTurn<'a> {
    pub key: RowKey<'a>,
    pub turn: Turn,
}

/// Every turn the plan sent and ended (done, failed or cancelled), in
/// request order.
pub fn turns(scheduler: &Scheduler) -> Vec<PlanTurn<'_>> {
    let (trees, plays) = (scheduler.trees(), scheduler.plays());
    let mut out = Vec::new();
    for (request, slot) in scheduler.slots().iter().enumerate() {
        let status = match slot.state {
            TurnState::Done => Status::Ok,
            TurnState::Failed => Status::Error,
            TurnState::Cancelled => Status::Cancelled,
            _ => continue,
        };
        let status = if slot.warmup { Status::Warmup } else { status };
        let Some(play) = plays.get(slot.play as usize) else {
            continue;
        };
        let Some(tree) = trees.get(play.tree as usize) else {
            continue;
        };
        let t = slot.turn as usize;
        let agent = tree
            .agent_of
            .get(t)
            .and_then(|&a| tree.agent_ids.get(a as usize));
        let (Some(agent), Some(&isl), Some(&osl), Some(&index)) = (
            agent,
            tree.isl.get(t),
            tree.osl.get(t),
            tree.index_in_agent.get(t),
        ) else {
            continue;
        };
        out.push(PlanTurn {
            key: RowKey {
                play: slot.play,
                tree: &tree.id,
                agent,
                copy: play.copy,
                lane: play.lane,
            },
            turn: Turn {
                request: request as u64,
                turn: index,
                status,
                eligible: slot.eligible,
                sent: slot.sent,
                first: Some(slot.sent),
                done: slot.end,
                queue_wait: slot.queue_wait,
                ttft: None,
                input_tokens: u64::from(isl),
                output_tokens: u64::from(osl),
                cached_tokens: None,
                error: None,
            },
        });
    }
    out
}

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
    }
}
