//! `trees.jsonl`: the shape of every tree a run replays (its agents, their
//! parents and kinds, and the edges between agents: spawns and joins), one
//! line per tree, as compiled for the run.
//!
//! `records.jsonl` names a request's tree, agent and turn but not how
//! agents relate; this file does, so that a run directory alone can be
//! drawn as trees (`arbor export --perfetto` draws spawns and joins as
//! flows). `arbor run` writes it once, before the clock starts (a pass over
//! the compiled edges: nothing on the request path). Edges within one agent
//! are left out: they follow from turn order and would make the file as
//! long as the workload.
//!
//! Owns the line's shape, building it from compiled trees, writing and
//! reading the file. Knows nothing of records or of what reads it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use arbor_engine::dag::CompiledTree;
use arbor_engine::model::{Anchor, Tree};
use arbor_engine::time::nanos_to_secs;
use serde::{Deserialize, Serialize};

use arbor_error::Error;

pub const TREES_FILE: &str = "trees.jsonl";

/// One line of `trees.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeShape {
    /// The tree's index in the workload (`tree_index` of its records).
    pub tree_index: u32,
    /// The tree's id (`tree` of its records).
    pub tree: String,
    /// `agents[0]` is the root; edges name agents by index here.
    pub agents: Vec<AgentShape>,
    /// Edges between two different agents, in compiled order.
    pub edges: Vec<EdgeShape>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentShape {
    /// The agent's id (`agent` of its records).
    pub agent: String,
    /// Index of the parent agent; `null` for the root.
    pub parent: Option<u32>,
    /// `root`, `blocking` (its parent joins it) or `background`.
    pub kind: String,
    /// Turns of the agent (`turn` of its records runs from 0 below this).
    pub turns: u32,
}

/// What an edge between two agents does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeRole {
    /// From a parent's turn to its child's (first) turn.
    Spawn,
    /// From a child's turn back to its parent's turn.
    Join,
    /// Between agents neither of which is the other's parent (a format's
    /// explicit edge).
    Other,
}

/// `to_agent`'s turn `to_turn` may not be sent before `anchor` of
/// `from_agent`'s turn `from_turn`, plus `gap_s` (the gap as the run's
/// policy transformed it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeShape {
    pub role: EdgeRole,
    pub from_agent: u32,
    pub from_turn: u32,
    pub to_agent: u32,
    pub to_turn: u32,
    /// `end` (the turn's last byte) or `start` (the turn was sent).
    pub anchor: String,
    pub gap_s: f64,
}

impl TreeShape {
    /// The shape of compiled tree `tree_index`; `recorded` (the same tree
    /// as loaded) gives the agents' kinds.
    pub fn of(tree_index: u32, tree: &CompiledTree, recorded: Option<&Tree>) -> TreeShape {
        let agent_count = tree.agent_count as usize;
        let mut turns = vec![0u32; agent_count];
        for &a in &tree.agent_of {
            if let Some(n) = turns.get_mut(a as usize) {
                *n += 1;
            }
        }
        let parent_of = |a: u32| -> Option<u32> {
            tree.agent_parent
                .get(a as usize)
                .copied()
                .filter(|&p| p != u32::MAX)
        };
        let agents = (0..agent_count)
            .map(|a| AgentShape {
                agent: tree.agent_ids.get(a).cloned().unwrap_or_default(),
                parent: parent_of(a as u32),
                kind: recorded
                    .and_then(|t| t.agents.get(a))
                    .map_or(if a == 0 { "root" } else { "blocking" }, |g| {
                        g.kind.as_str()
                    })
                    .to_string(),
                turns: turns[a],
            })
            .collect();
        let mut edges = Vec::new();
        for from in 0..tree.turn_count() {
            let from_agent = tree.agent_of[from as usize];
            for edge in tree.out(from) {
                let to_agent = tree.agent_of[edge.to as usize];
                if to_agent == from_agent {
                    continue;
                }
                let role = if parent_of(to_agent) == Some(from_agent) {
                    EdgeRole::Spawn
                } else if parent_of(from_agent) == Some(to_agent) {
                    EdgeRole::Join
                } else {
                    EdgeRole::Other
                };
                edges.push(EdgeShape {
                    role,
                    from_agent,
                    from_turn: tree.index_in_agent[from as usize],
                    to_agent,
                    to_turn: tree.index_in_agent[edge.to as usize],
                    anchor: match edge.anchor {
                        Anchor::End => "end",
                        Anchor::Start => "start",
                    }
                    .to_string(),
                    gap_s: nanos_to_secs(edge.gap),
                });
            }
        }
        TreeShape {
            tree_index,
            tree: tree.id.clone(),
            agents,
            edges,
        }
    }
}

/// Writes `dir/trees.jsonl` for the compiled trees of a run.
pub fn write(dir: &Path, trees: &[CompiledTree], recorded: &[Tree]) -> Result<(), Error> {
    let path = dir.join(TREES_FILE);
    let write = || -> io::Result<()> {
        let mut out = BufWriter::new(File::create(&path)?);
        for (i, tree) in trees.iter().enumerate() {
            let shape = TreeShape::of(i as u32, tree, recorded.get(i));
            serde_json::to_writer(&mut out, &shape).map_err(io::Error::other)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    };
    write().map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))
}

/// Reads `dir/trees.jsonl`: `Ok(None)` when the run has none (written by
/// an arbor older than the file); a line that is not a tree's shape is an
/// input error naming the file and line.
pub fn read(dir: &Path) -> Result<Option<Vec<TreeShape>>, Error> {
    let path = dir.join(TREES_FILE);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::input(format!(
                "{}: cannot read: {e}",
                path.display()
            )))
        }
    };
    let mut shapes = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line =
            line.map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let shape = serde_json::from_str(&line).map_err(|e| {
            Error::input(format!(
                "{}:{}: expected a tree's shape: {e}",
                path.display(),
                i + 1
            ))
        })?;
        shapes.push(shape);
    }
    Ok(Some(shapes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::dag::OutEdge;
    use arbor_engine::policy::GapClass;

    /// Root `r` (2 turns) spawns `c` (1 turn) after its turn 0; `c` joins
    /// back into the root's turn 1.
    fn tree() -> CompiledTree {
        CompiledTree {
            id: "t".into(),
            agent_count: 2,
            agent_ids: vec!["r".into(), "c".into()],
            agent_parent: vec![u32::MAX, 0],
            agent_of: vec![0, 0, 1],
            index_in_agent: vec![0, 1, 0],
            out_start: vec![0, 2, 2, 3],
            out_edges: vec![
                OutEdge {
                    to: 1,
                    anchor: Anchor::End,
                    gap: 5,
                    class: GapClass::Tool,
                },
                OutEdge {
                    to: 2,
                    anchor: Anchor::End,
                    gap: 1_000_000_000,
                    class: GapClass::Spawn,
                },
                OutEdge {
                    to: 1,
                    anchor: Anchor::End,
                    gap: 0,
                    class: GapClass::Join,
                },
            ],
            ..CompiledTree::default()
        }
    }

    #[test]
    fn spawns_and_joins_by_hand_and_no_edge_within_an_agent() {
        let shape = TreeShape::of(3, &tree(), None);
        assert_eq!(shape.tree_index, 3);
        assert_eq!(shape.agents[0].parent, None);
        assert_eq!(shape.agents[0].kind, "root");
        assert_eq!(shape.agents[1].parent, Some(0));
        assert_eq!(
            (shape.agents[0].turns, shape.agents[1].turns),
            (2, 1),
            "turns per agent"
        );
        assert_eq!(shape.edges.len(), 2, "{:?}", shape.edges);
        let spawn = &shape.edges[0];
        assert_eq!(spawn.role, EdgeRole::Spawn);
        assert_eq!((spawn.from_agent, spawn.from_turn), (0, 0));
        assert_eq!((spawn.to_agent, spawn.to_turn), (1, 0));
        assert_eq!(spawn.gap_s, 1.0);
        let join = &shape.edges[1];
        assert_eq!(join.role, EdgeRole::Join);
        assert_eq!((join.from_agent, join.from_turn), (1, 0));
        assert_eq!((join.to_agent, join.to_turn), (0, 1));
    }

    #[test]
    fn written_then_read_back() {
        let dir = std::env::temp_dir().join(format!("arbor-shape-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir).ok().flatten(), None, "no file: no shapes");
        write(&dir, &[tree()], &[]).ok().unwrap();
        let shapes = read(&dir).ok().flatten().unwrap();
        assert_eq!(shapes, vec![TreeShape::of(0, &tree(), None)]);
        std::fs::write(dir.join(TREES_FILE), "{\"tree\":1}\n").unwrap();
        let err = read(&dir).err().unwrap();
        assert!(err.is_input(), "{}", err.message);
        assert!(err.message.contains("trees.jsonl:1:"), "{}", err.message);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
