//! `config.shard`: what a sharded run (`--shard I/N`) or plan says of its
//! stripe and of the global policies that cannot be split exactly, in
//! `run.json`, `summary.json` and `plan --json`; and, in a run merged by
//! `arbor merge`, every shard's directory and start.
//!
//! Owns the section's shape and the rule each global policy follows under
//! `--shard` (docs/scale-out.md, "Global policies"): the global idle-gap
//! cap and the start window are refused (a run with either never starts),
//! `--max-inflight` applies per shard. Whether a rule fired is known only
//! at the end: `null` in `run.json`, filled in by `Summary::build` from the
//! records (a turn waited for the cap) and by `plan` from its schedule. It
//! also holds the start barrier's record ([`BarrierRecord`], `config.barrier`)
//! so a merged run can keep every shard's. Uses no command module.

use arbor_engine::dag::CompiledTree;
use arbor_engine::policy::Policy;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::identity::digest;

/// `config.shard`: present for a shard of a sharded run and for a merged
/// run; absent otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardConfig {
    /// I of `--shard I/N` (from 0); absent in a merged run (every index).
    pub index: Option<u32>,
    /// N: the shard count.
    pub count: u32,
    /// SHA-256 of the compiled workload: equal in every shard of one run.
    pub workload: String,
    /// SHA-256 of the policy without its shard (the seed included): equal
    /// in every shard of one run.
    pub policy: String,
    /// `--idle-gap-cap` (the global one).
    pub idle_gap_cap: GlobalRule,
    /// `--max-inflight`.
    pub max_inflight: GlobalRule,
    /// `--start-window` (AgentX's single t*).
    pub start_window: GlobalRule,
    /// In a merged run: each shard, in index order; absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<MergedShard>,
}

/// What became of one global policy under `--shard`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GlobalRule {
    /// `refused` (the policy and `--shard` together are refused, so it
    /// was not set) or `per_shard` (each shard applies it to its own
    /// stripe: the sum over shards is what one process would not do).
    #[schemars(extend("enum" = ["refused", "per_shard"]))]
    pub rule: String,
    /// The policy was set.
    pub set: bool,
    /// It acted at least once (for `--max-inflight`: a turn waited for
    /// the cap); `null` where not yet known (`run.json`).
    pub fired: Option<bool>,
}

/// One shard of a merged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MergedShard {
    pub index: u32,
    /// The shard's run directory, as given to `arbor merge`.
    pub dir: String,
    /// Its records.
    pub records: u64,
    /// Its `config.barrier`: its clock offset to rank 0 and how late it
    /// started; absent when it started on its own.
    pub barrier: Option<BarrierRecord>,
}

/// `config.barrier`: the start instant this shard kept and its clock
/// against rank 0's (docs/scale-out.md, "Starting together").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BarrierRecord {
    /// `rank0` (`--barrier-listen`), `peer` (`--barrier`) or `start_at`
    /// (`--start-at`).
    pub role: String,
    /// Rank 0's clock minus this shard's, in ns, measured over the barrier
    /// connection (the sample of least round trip; within ± rtt_ns / 2).
    /// 0 for rank 0 and `--start-at`.
    pub offset_ns: i64,
    /// The round trip of that sample, in ns (0 when nothing was measured).
    pub rtt_ns: u64,
    /// The start instant, UTC on rank 0's clock (RFC 3339, ns).
    pub start_at: String,
    /// Shards that met at the barrier, rank 0 included (absent for
    /// `--start-at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// How long after the start instant (on this shard's clock, corrected
    /// by the offset) its clock started, in ns.
    pub late_ns: u64,
}

const REFUSED: &str = "refused";
const PER_SHARD: &str = "per_shard";

impl GlobalRule {
    /// A policy `--shard` refuses: never set in a shard that ran, never
    /// fired.
    fn refused() -> GlobalRule {
        GlobalRule {
            rule: REFUSED.to_string(),
            set: false,
            fired: Some(false),
        }
    }
}

impl ShardConfig {
    /// The section of a process playing `trees` under `policy`; `None`
    /// when it is not sharded. `fired` of `--max-inflight` is left
    /// unknown.
    pub fn of(policy: &Policy, trees: &[CompiledTree]) -> Option<ShardConfig> {
        let shard = policy.shard?;
        Some(ShardConfig {
            index: Some(shard.index),
            count: shard.count,
            workload: workload_hash(trees),
            policy: policy_hash(policy),
            idle_gap_cap: GlobalRule::refused(),
            max_inflight: GlobalRule {
                rule: PER_SHARD.to_string(),
                set: policy.max_inflight.is_some(),
                fired: None,
            },
            start_window: GlobalRule::refused(),
            shards: Vec::new(),
        })
    }

    /// With what the end knows: whether a turn waited for the cap.
    pub fn ended(mut self, waited_for_cap: bool) -> ShardConfig {
        self.max_inflight.fired = Some(self.max_inflight.set && waited_for_cap);
        self
    }
}

/// SHA-256 of the compiled workload's debug form (which holds no
/// hash-ordered maps): the shards of one run have equal ones.
pub fn workload_hash(trees: &[CompiledTree]) -> String {
    digest(&trees)
}

/// SHA-256 of `policy` without its shard.
pub fn policy_hash(policy: &Policy) -> String {
    digest(&Policy {
        shard: None,
        ..policy.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::policy::Shard;

    #[test]
    fn a_shard_says_its_stripe_and_the_rule_of_each_global_policy() {
        assert_eq!(ShardConfig::of(&Policy::default(), &[]), None);
        let policy = Policy {
            shard: Some(Shard { index: 1, count: 3 }),
            max_inflight: Some(4),
            ..Policy::default()
        };
        let Some(c) = ShardConfig::of(&policy, &[]) else {
            panic!("a sharded policy has a section")
        };
        assert_eq!((c.index, c.count), (Some(1), 3));
        assert_eq!(c.idle_gap_cap.rule, "refused");
        assert_eq!(c.start_window.fired, Some(false));
        assert_eq!(
            (c.max_inflight.rule.as_str(), c.max_inflight.fired),
            ("per_shard", None)
        );
        let other = Policy {
            shard: Some(Shard { index: 2, count: 3 }),
            ..policy.clone()
        };
        assert_eq!(
            ShardConfig::of(&other, &[]).map(|o| o.policy),
            Some(c.policy.clone())
        );
        assert_ne!(policy_hash(&Policy::default()), c.policy);
        assert_eq!(c.clone().ended(true).max_inflight.fired, Some(true));
        assert_eq!(c.ended(false).max_inflight.fired, Some(false));
    }
}
