//! A dispatched turn as the live loop reads it from the scheduler.
//!
//! Owns the two views of a request the loop needs besides its id: the
//! recipe of its body ([`TurnBody`]: which turn, how many output tokens,
//! which cache-bust marker), and its [`RequestIdentity`] for the record.
//! Both are pure reads of the scheduler's compiled trees and slots; the
//! body itself is built by `request.rs`.

use arbor_engine::prompt::CacheBust;
use arbor_engine::scheduler::{RequestId, Scheduler};
use arbor_engine::Workload;

use super::history::Place;
use super::request::{build_turn_body, BodyConfig};
use arbor_runs::record::RequestIdentity;

/// What a request's body is made of.
#[derive(Debug, Clone)]
pub struct TurnBody {
    tree: usize,
    agent: usize,
    /// Turn within its agent.
    turn: usize,
    /// Output tokens asked for (1 for a warmup: prefill only).
    pub osl: u32,
    pub warmup: bool,
    /// The play's cache-bust marker, when busting.
    marker: Option<String>,
}

impl TurnBody {
    /// The recipe of request `id`'s body; `bust` is where the markers
    /// come from when prompts carry their play's cache-bust marker.
    pub fn of(scheduler: &Scheduler, id: RequestId, bust: Option<CacheBust>) -> Option<TurnBody> {
        let (tree, play, turn) = scheduler.request_tree(id)?;
        let t = turn as usize;
        let warmup = scheduler.slot(id)?.warmup;
        Some(TurnBody {
            tree: play.tree as usize,
            agent: tree.agent_of[t] as usize,
            turn: tree.index_in_agent[t] as usize,
            osl: if warmup { 1 } else { tree.osl[t] },
            warmup,
            marker: bust.map(|bust| bust.marker(play)),
        })
    }

    /// Where the turn sits, in play `play` (for `--history live`).
    pub fn place(&self, play: u32) -> Place {
        Place {
            play,
            tree: self.tree,
            agent: self.agent,
            turn: self.turn,
        }
    }

    /// The play's cache-bust marker, when busting.
    pub fn marker(&self) -> Option<&str> {
        self.marker.as_deref()
    }

    /// Builds the body (empty for a tree the workload does not have).
    pub fn body(&self, workload: &Workload, config: &BodyConfig) -> Vec<u8> {
        match workload.trees.get(self.tree) {
            Some(tree) => build_turn_body(
                config,
                tree,
                self.agent,
                self.turn,
                self.osl,
                self.marker.as_deref(),
            ),
            None => Vec::new(),
        }
    }
}

/// Where request `id` sits: its play, tree, agent and turn within the
/// agent (for `--history live`).
pub fn place(scheduler: &Scheduler, id: RequestId) -> Option<Place> {
    let slot = scheduler.slot(id)?;
    let (tree, play, turn) = scheduler.request_tree(id)?;
    let t = turn as usize;
    Some(Place {
        play: slot.play,
        tree: play.tree as usize,
        agent: tree.agent_of[t] as usize,
        turn: tree.index_in_agent[t] as usize,
    })
}

/// Who request `id` is in the workload, for its record.
pub fn identity(scheduler: &Scheduler, id: RequestId) -> Option<RequestIdentity> {
    let slot = scheduler.slot(id)?;
    let (tree, play, turn) = scheduler.request_tree(id)?;
    let t = turn as usize;
    Some(RequestIdentity {
        request: id,
        tree: tree.id.clone(),
        tree_index: play.tree,
        agent: tree
            .agent_ids
            .get(tree.agent_of[t] as usize)
            .cloned()
            .unwrap_or_default(),
        turn: tree.index_in_agent[t],
        copy: play.copy,
        lane: play.lane,
        play: slot.play,
        eligible: slot.eligible,
        dispatched: slot.dispatched,
        warmup: slot.warmup,
        queue_wait: slot.queue_wait,
        planned_input_tokens: tree.isl[t],
        planned_output_tokens: tree.osl[t],
        replica: None,
        session_key: None,
    })
}
