//! What a run measured, as two hashes recorded in `run.json` and
//! `summary.json` (`config.workload_hash`, `config.policy_hash`): two runs
//! with equal ones played the same workload under the same policy, so
//! `arbor compare` may set their figures side by side (docs/compare.md,
//! "Comparable runs").
//!
//! Owns which parts of a compiled workload and of a policy count: the
//! workload's trees, times, lengths and edges, but not where they were read
//! from (a tree's `source`, a path); the policy without its seed (runs of
//! one experiment with other seeds, `--repeat`'s among them, stay
//! comparable) and without its shard. A shard's own identity, which keeps
//! the seed, is `crate::sharding`'s.

use std::fmt::{self, Write as _};

use arbor_engine::dag::CompiledTree;
use arbor_engine::policy::Policy;
use sha2::{Digest, Sha256};

/// SHA-256 of the compiled workload's debug form (which holds no
/// hash-ordered maps), each tree without its `source`. Every other field
/// is named, so a field added to `CompiledTree` must be placed here.
pub fn workload_hash(trees: &[CompiledTree]) -> String {
    let mut h = Hashing(Sha256::new());
    for tree in trees {
        let CompiledTree {
            id,
            source: _,
            arrival,
            agent_count,
            agent_ids,
            agent_parent,
            agent_of,
            index_in_agent,
            start,
            duration,
            isl,
            osl,
            in_degree,
            out_start,
            out_edges,
            sources,
        } = tree;
        let agents = (
            agent_count,
            agent_ids,
            agent_parent,
            agent_of,
            index_in_agent,
        );
        let turns = (start, duration, isl, osl);
        let edges = (in_degree, out_start, out_edges, sources);
        let _ = write!(h, "{:?}", (id, arrival, agents, turns, edges));
    }
    arbor_formats::manifest::hex(&h.0.finalize())
}

/// SHA-256 of `policy` without its seed and its shard.
pub fn policy_hash(policy: &Policy) -> String {
    digest(&Policy {
        seed: 0,
        shard: None,
        ..policy.clone()
    })
}

/// SHA-256 of a value's debug form, streamed into the hasher.
pub(crate) fn digest(value: &impl fmt::Debug) -> String {
    let mut h = Hashing(Sha256::new());
    let _ = write!(h, "{value:?}");
    arbor_formats::manifest::hex(&h.0.finalize())
}

struct Hashing(Sha256);

impl fmt::Write for Hashing {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.update(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::policy::Shard;

    fn tree(source: &str, isl: u32) -> CompiledTree {
        CompiledTree {
            id: "t0".into(),
            source: source.into(),
            agent_count: 1,
            agent_of: vec![0],
            isl: vec![isl],
            osl: vec![20],
            ..CompiledTree::default()
        }
    }

    #[test]
    fn where_a_tree_was_read_from_is_not_its_identity_but_its_lengths_are() {
        let here = workload_hash(&[tree("a/trace.json", 100)]);
        assert_eq!(here, workload_hash(&[tree("/elsewhere/trace.json:3", 100)]));
        assert_ne!(here, workload_hash(&[tree("a/trace.json", 101)]));
        assert_ne!(here, workload_hash(&[]));
        assert_ne!(
            here,
            workload_hash(&[tree("a/trace.json", 100), tree("a/trace.json", 100)])
        );
    }

    #[test]
    fn the_seed_and_the_shard_are_not_the_policys_identity_but_its_settings_are() {
        let policy = Policy::default();
        let same = Policy {
            seed: 7,
            shard: Some(Shard { index: 1, count: 2 }),
            ..policy.clone()
        };
        assert_eq!(policy_hash(&policy), policy_hash(&same));
        let capped = Policy {
            max_inflight: Some(4),
            ..policy.clone()
        };
        assert_ne!(policy_hash(&policy), policy_hash(&capped));
    }
}
