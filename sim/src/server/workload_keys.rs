//! Every turn's prompt block keys of a workload, computed once.
//!
//! A capacity search plans the same workload at many loads; the keys of a
//! turn's prompt (without a cache-bust marker) depend only on the
//! workload, so [`WorkloadKeys`] computes them once with
//! [`PromptKeys`](super::keys::PromptKeys) and every plan reads them. An
//! agent's turns mostly extend its previous turn's prompt, so a turn's
//! keys are computed from the previous turn's
//! ([`PromptKeys::next_turn`](super::keys::PromptKeys::next_turn): only
//! the words past their shared blocks are hashed), and a turn is stored
//! as the length of the prefix it shares with the agent's previous turn
//! and its own keys after it: the store is about the size of the agents'
//! longest prompts, not of every prompt.
//!
//! Must not: know about the scheduler or plays (a cache-bust marker is a
//! play's, so marked prompts are not stored here).

use arbor_engine::Workload;

use super::keys::PromptKeys;

/// No previous turn.
const NONE: u32 = u32::MAX;

/// One turn's keys: the first `shared` of turn `prev`'s, then
/// `keys[own..own + len - shared]`.
#[derive(Debug, Clone, Copy)]
struct Stored {
    /// Flat index of the agent's previous turn (NONE for its first).
    prev: u32,
    shared: u32,
    len: u32,
    own: usize,
}

/// The block keys of every turn of a workload (see the module doc).
#[derive(Debug, Clone)]
pub struct WorkloadKeys {
    block_size: u32,
    /// Each tree's first agent in `agents`.
    trees: Vec<u32>,
    /// Each agent's first turn in `turns`.
    agents: Vec<u32>,
    turns: Vec<Stored>,
    keys: Vec<u64>,
}

impl WorkloadKeys {
    /// The keys of `block_size`-token blocks (0 counts as 1) of every
    /// turn of `workload`, as [`PromptKeys::turn`] gives them with no
    /// marker.
    pub fn new(workload: &Workload, block_size: u32) -> WorkloadKeys {
        let mut prompt = PromptKeys::new(block_size);
        let mut store = WorkloadKeys {
            block_size: block_size.max(1),
            trees: Vec::with_capacity(workload.trees.len()),
            agents: Vec::new(),
            turns: Vec::new(),
            keys: Vec::new(),
        };
        let (mut previous, mut current) = (Vec::new(), Vec::new());
        for tree in &workload.trees {
            store.trees.push(store.agents.len() as u32);
            for (a, agent) in tree.agents.iter().enumerate() {
                store.agents.push(store.turns.len() as u32);
                previous.clear();
                for t in 0..agent.turns.len() {
                    prompt.next_turn(tree, a, t, None, &previous, &mut current);
                    let shared = previous
                        .iter()
                        .zip(&current)
                        .take_while(|(p, c)| p == c)
                        .count();
                    let prev = if t == 0 {
                        NONE
                    } else {
                        store.turns.len() as u32 - 1
                    };
                    store.turns.push(Stored {
                        prev,
                        shared: shared as u32,
                        len: current.len() as u32,
                        own: store.keys.len(),
                    });
                    store.keys.extend_from_slice(&current[shared..]);
                    std::mem::swap(&mut previous, &mut current);
                }
            }
        }
        store
    }

    /// The block size the keys are of.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Sets `out` to the keys of turn `turn` of agent `agent` of tree
    /// `tree`; false (and `out` empty) for a turn out of range.
    pub fn turn(&self, tree: usize, agent: usize, turn: usize, out: &mut Vec<u64>) -> bool {
        out.clear();
        let Some(&first_agent) = self.trees.get(tree) else {
            return false;
        };
        let agents_end = self
            .trees
            .get(tree + 1)
            .map_or(self.agents.len(), |&a| a as usize);
        let a = first_agent as usize + agent;
        if a >= agents_end {
            return false;
        }
        let turns_end = self
            .agents
            .get(a + 1)
            .map_or(self.turns.len(), |&t| t as usize);
        let t = self.agents[a] as usize + turn;
        if t >= turns_end {
            return false;
        }
        // Fill from the end: each turn back in the chain supplies the
        // keys before the part already filled.
        out.resize(self.turns[t].len as usize, 0);
        let mut filled = out.len();
        let mut at = t as u32;
        while filled > 0 && at != NONE {
            let stored = self.turns[at as usize];
            let shared = (stored.shared as usize).min(filled);
            let own = &self.keys[stored.own..stored.own + (filled - shared)];
            out[shared..filled].copy_from_slice(own);
            filled = shared;
            at = stored.prev;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_formats::synthetic::SyntheticSpec;

    #[test]
    fn every_turn_reads_back_as_computed() {
        let spec: SyntheticSpec = "trees=6,turns=7,depth=2,spawn=0.3,hash_ids=true,seed=3"
            .parse()
            .expect("spec");
        let workload = spec.generate();
        let store = WorkloadKeys::new(&workload, 16);
        let prompt = PromptKeys::new(16);
        let (mut expect, mut got) = (Vec::new(), Vec::new());
        let mut turns = 0;
        for (i, tree) in workload.trees.iter().enumerate() {
            for (a, agent) in tree.agents.iter().enumerate() {
                for t in 0..agent.turns.len() {
                    prompt.turn(tree, a, t, None, &mut expect);
                    assert!(store.turn(i, a, t, &mut got));
                    assert_eq!(got, expect, "tree {i} agent {a} turn {t}");
                    turns += 1;
                }
                assert!(!store.turn(i, a, agent.turns.len(), &mut got));
                assert!(got.is_empty());
            }
            assert!(!store.turn(i, tree.agents.len(), 0, &mut got));
        }
        assert!(!store.turn(workload.trees.len(), 0, 0, &mut got));
        // Shared prefixes are stored once.
        assert!(turns > 40);
        let whole: usize = store.turns.iter().map(|s| s.len as usize).sum();
        assert!(
            store.keys.len() * 2 < whole,
            "{} of {whole}",
            store.keys.len()
        );
    }
}
