//! The prompt block keys of the turns a virtual run dispatches, each
//! computed from the keys of the same agent's previous turn in the same
//! play when that was the last one dispatched.
//!
//! An agent's turn mostly extends its previous turn's prompt, and a play's
//! turns carry the same cache-bust marker, so
//! [`PromptKeys::next_turn`] hashes only the words past the blocks the two
//! prompts share. [`AgentKeys`] keeps, per live agent of a play, the keys
//! of its last dispatched turn (one key vector per live agent) and drops
//! them, keeping the buffer for the next agent, when the agent's last turn
//! is dispatched: no allocation per turn once warm. Any other turn (an
//! agent's first, a warmup sent again, a turn after a skipped one) is
//! keyed whole, with the same keys.
//!
//! Must not: know about the scheduler or the server model (the loop in
//! `virtual_clock` says which play, agent and turn it dispatches).

use std::collections::BTreeMap;

use arbor_engine::model::Tree;
use arbor_sim::server::keys::PromptKeys;

/// An agent's last dispatched turn (its index among the agent's turns) and
/// that turn's keys.
#[derive(Debug)]
struct Last {
    turn: usize,
    keys: Vec<u64>,
}

/// The keys of dispatched turns, kept per (play, agent) for the next turn
/// (see the module doc).
#[derive(Debug)]
pub struct AgentKeys {
    prompt: PromptKeys,
    /// Looked up only, never iterated.
    last: BTreeMap<(u32, usize), Last>,
    /// Buffers of agents whose last turn went, for the next agents.
    spare: Vec<Vec<u64>>,
    /// The keys of the turn just keyed, when not kept in `last`.
    current: Vec<u64>,
}

impl AgentKeys {
    /// Keys of `block_size`-token blocks (0 counts as 1).
    pub fn new(block_size: u32) -> AgentKeys {
        AgentKeys {
            prompt: PromptKeys::new(block_size),
            last: BTreeMap::new(),
            spare: Vec::new(),
            current: Vec::new(),
        }
    }

    /// The keys of turn `turn` of agent `agent` of `tree` as play `play`
    /// sends it with its cache-bust `marker` (the same for every turn of
    /// the play): [`PromptKeys::turn`]'s keys.
    pub fn turn(
        &mut self,
        play: u32,
        tree: &Tree,
        agent: usize,
        turn: usize,
        marker: Option<&str>,
    ) -> &[u64] {
        let id = (play, agent);
        match self.last.get(&id) {
            Some(last) if last.turn + 1 == turn => {
                self.prompt
                    .next_turn(tree, agent, turn, marker, &last.keys, &mut self.current);
            }
            _ => {
                self.prompt
                    .turn(tree, agent, turn, marker, &mut self.current);
            }
        }
        let last_turn = tree
            .agents
            .get(agent)
            .is_none_or(|a| turn + 1 >= a.turns.len());
        if last_turn {
            if let Some(gone) = self.last.remove(&id) {
                self.spare.push(gone.keys);
            }
            return &self.current;
        }
        let spare = &mut self.spare;
        let last = self.last.entry(id).or_insert_with(|| Last {
            turn,
            keys: spare.pop().unwrap_or_default(),
        });
        last.turn = turn;
        std::mem::swap(&mut last.keys, &mut self.current);
        &last.keys
    }

    /// Agents whose keys are kept.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_formats::synthetic::SyntheticSpec;

    #[test]
    fn kept_keys_give_every_turns_whole_keys_and_go_with_the_agent() {
        let spec: SyntheticSpec =
            "trees=2,turns=6,child_turns=3,depth=1,spawn=0.5,hash_ids=true,isl=150,isl_growth=90,seed=2"
                .parse()
                .expect("spec");
        let trees = spec.generate().trees;
        let whole = PromptKeys::new(16);
        let mut kept = AgentKeys::new(16);
        let mut expect = Vec::new();
        let markers = ["[rid:0123456789ab]\n\n", "odd"];
        // Two plays of each tree, their agents' turns interleaved, each
        // agent's turns in order; a turn sent twice (a warmup, then the
        // turn) and a turn skipped are keyed whole.
        let mut order = Vec::new();
        for (play, tree) in (0..4u32).zip(trees.iter().cycle()) {
            for (a, agent) in tree.agents.iter().enumerate() {
                for t in 0..agent.turns.len() {
                    order.push((t, play, a));
                    if t == 1 {
                        order.push((t, play, a));
                    }
                }
            }
        }
        order.retain(|&(t, play, a)| !(play == 3 && a == 0 && t == 2));
        order.sort_by_key(|&(t, play, a)| (t, play, a));
        let mut most = 0;
        for (t, play, a) in order {
            let tree = &trees[play as usize % trees.len()];
            let marker = Some(markers[play as usize % 2]);
            whole.turn(tree, a, t, marker, &mut expect);
            let got = kept.turn(play, tree, a, t, marker);
            assert_eq!(got, expect, "play {play} agent {a} turn {t}");
            most = most.max(kept.live());
        }
        assert!(most > 4);
        assert_eq!(kept.live(), 0, "every agent's last turn went");
        assert!(kept.spare.len() <= most, "buffers are reused");
    }

    #[test]
    fn a_turn_after_the_agents_last_reuses_its_kept_keys() {
        let spec: SyntheticSpec = "trees=1,turns=5,depth=0,isl=150,isl_growth=90,seed=4"
            .parse()
            .expect("spec");
        let tree = &spec.generate().trees[0];
        let whole = PromptKeys::new(16);
        let mut kept = AgentKeys::new(16);
        let mut expect = Vec::new();
        for t in 0..tree.agents[0].turns.len() {
            whole.turn(tree, 0, t, None, &mut expect);
            let got = kept.turn(7, tree, 0, t, None).to_vec();
            if t == 0 {
                assert_eq!(got, expect);
            } else {
                // The kept keys were poisoned: the shared blocks are theirs.
                assert_eq!(got[0], !expect[0], "turn {t}");
            }
            if let Some(last) = kept.last.get_mut(&(7, 0)) {
                last.keys = expect.iter().map(|k| !k).collect();
            }
        }
    }
}
