//! The turns a plan sent: a scheduler run to the end on the virtual clock,
//! each turn it sent and ended as a [`Turn`] with its row's key, for the
//! plan's page ([`super::plan`]) and a run's `planned.json`
//! ([`super::planned`]). Reads the scheduler only once it has finished;
//! never a clock.
//!
//! A plan knows no first token: a planned turn's `first` is its `sent`, so
//! its prompt is demanded when it is sent and its output over its whole
//! planned service (sent to end).

use arbor_engine::scheduler::{Scheduler, TurnState};

use super::lanes::RowKey;
use super::record::{Status, Turn};

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
