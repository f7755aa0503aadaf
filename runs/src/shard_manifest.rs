//! A shard's manifest: what `arbor plan --shard I/N --timeline FILE`
//! writes beside its timeline (`FILE.shard.json`) so that `arbor merge`
//! can check the shards belong together and interleave their plays.
//!
//! Owns the manifest's form (its identity hashes are `crate::sharding`'s,
//! the same a sharded run records) and reading and writing it. It does
//! not merge anything (`merge::timeline` does). Outside `merge/` so that
//! `plan`, which writes it, does not depend on `merge`, which depends on
//! `run` (which uses `plan`).

use std::path::{Path, PathBuf};

use arbor_engine::dag::CompiledTree;
use arbor_engine::policy::{Policy, Shard};
use arbor_engine::shard::{Block, Cause};
use serde::{Deserialize, Serialize};

use arbor_error::Error;

/// The manifest's `kind`.
const KIND: &str = "arbor-plan-shard";

/// One started play: its start (ns), its turns (timeline lines), and what
/// started it (`timer` rank, or `after` = `[block, turn]` of this shard).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BlockLine {
    pub start: u64,
    pub turns: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<[u32; 2]>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardManifest {
    pub kind: String,
    pub index: u32,
    pub count: u32,
    pub seed: u64,
    /// SHA-256 of the compiled workload.
    pub workload: String,
    /// SHA-256 of the policy without its shard.
    pub policy: String,
    pub blocks: Vec<BlockLine>,
}

impl ShardManifest {
    pub fn new(shard: Shard, trees: &[CompiledTree], policy: &Policy, blocks: &[Block]) -> Self {
        ShardManifest {
            kind: KIND.to_string(),
            index: shard.index,
            count: shard.count,
            seed: policy.seed,
            workload: crate::sharding::workload_hash(trees),
            policy: crate::sharding::policy_hash(policy),
            blocks: blocks.iter().map(BlockLine::from).collect(),
        }
    }

    /// The blocks as the engine's merge reads them.
    pub fn blocks(&self) -> Vec<Block> {
        self.blocks
            .iter()
            .map(|b| Block {
                start: b.start,
                turns: b.turns,
                cause: match (b.after, b.timer) {
                    (Some([block, offset]), _) => Cause::Completion { block, offset },
                    (None, rank) => Cause::Timer(rank.unwrap_or(0)),
                },
            })
            .collect()
    }

    /// Where the manifest of the timeline at `timeline` lives.
    pub fn path_of(timeline: &Path) -> PathBuf {
        let mut name = timeline.as_os_str().to_owned();
        name.push(".shard.json");
        PathBuf::from(name)
    }

    pub fn write(&self, timeline: &Path) -> Result<(), Error> {
        let path = Self::path_of(timeline);
        let text = serde_json::to_string(self).map_err(Error::other)?;
        std::fs::write(&path, text + "\n")
            .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))
    }

    pub fn read(timeline: &Path) -> Result<Self, Error> {
        let path = Self::path_of(timeline);
        let text = crate::file_cap::read_to_string(&path).map_err(|e| {
            Error::input(format!(
                "{}: cannot read the shard manifest {} ({e}); was it written by `arbor plan --shard I/N --timeline FILE`?",
                timeline.display(),
                path.display()
            ))
        })?;
        let manifest: ShardManifest = serde_json::from_str(&text)
            .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
        if manifest.kind != KIND {
            return Err(Error::input(format!(
                "{}: kind `{}`, expected `{KIND}`",
                path.display(),
                manifest.kind
            )));
        }
        Ok(manifest)
    }
}

impl From<&Block> for BlockLine {
    fn from(b: &Block) -> Self {
        let (timer, after) = match b.cause {
            Cause::Timer(rank) => (Some(rank), None),
            Cause::Completion { block, offset } => (None, Some([block, offset])),
        };
        BlockLine {
            start: b.start,
            turns: b.turns,
            timer,
            after,
        }
    }
}
