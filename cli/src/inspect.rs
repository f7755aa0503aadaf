//! `arbor inspect`: load, fit (`--isl-scale`, `--max-context`, said on
//! stderr), summarise, print (human or JSON); and the tree listing: each
//! tree's agents with their turn counts, indented under their parents,
//! with the parent turn that spawned each child and the turn it joins
//! (by default for inputs of at most [`LISTED_BY_DEFAULT`] trees, always
//! with `--trees`). The listing is built as `trees.jsonl`'s shapes
//! ([`TreeShape`]), compiled under the default policy.

use std::io::{self, Write};

use arbor_engine::dag::compile_tree;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::fit::apply_trees;
use arbor_engine::model::Tree;
use arbor_engine::policy::Policy;
use arbor_formats::inspect::{inspect, Inspection};
use arbor_formats::load;
use serde::Serialize;

use crate::args::InspectArgs;
use crate::stdout;
use arbor_error::Error;
use arbor_report::plan::describe_fit;
use arbor_runs::shape::{EdgeRole, TreeShape};

/// Inputs of at most this many trees list them without `--trees`.
pub const LISTED_BY_DEFAULT: usize = 10;

/// `inspect --json --trees`: the report and the trees' shapes.
#[derive(Serialize)]
struct WithShapes<'a> {
    #[serde(flatten)]
    inspection: &'a Inspection,
    tree_shapes: &'a [TreeShape],
}

pub fn run(args: &InspectArgs) -> Result<(), Error> {
    let options = DeriveOptions {
        overlap_tolerance: args.overlap_tolerance,
    };
    let paths = arbor_formats::data::resolve_inputs(&args.traces.inputs)?;
    let mut loaded = load::load_all(&paths, args.traces.format).map_err(Error::input)?;
    let fit = args.fit.fit();
    if !fit.is_identity() {
        let report = apply_trees(loaded.iter_mut().flat_map(|l| l.trees.iter_mut()), &fit);
        eprintln!("arbor inspect: {}", describe_fit(&report));
    }
    let inspection = inspect(&loaded, &options);
    let trees: Vec<&Tree> = loaded.iter().flat_map(|l| l.trees.iter()).collect();
    let listed = args.trees || (!args.json && trees.len() <= LISTED_BY_DEFAULT);
    let shapes = if listed {
        shapes(&trees, &options)
    } else {
        Vec::new()
    };
    let human = |mut out: &mut dyn Write| {
        inspection.write_human(&mut out)?;
        if listed {
            write_listing(out, &shapes)?;
        }
        Ok(())
    };
    if args.json && args.trees {
        let value = WithShapes {
            inspection: &inspection,
            tree_shapes: &shapes,
        };
        stdout::json_or_human(true, &value, human)
    } else {
        stdout::json_or_human(args.json, &inspection, human)
    }
}

/// The shape of every tree that compiles (one that does not is left out:
/// `arbor plan` names its fault).
fn shapes(trees: &[&Tree], options: &DeriveOptions) -> Vec<TreeShape> {
    let policy = Policy::default();
    trees
        .iter()
        .enumerate()
        .filter_map(|(i, tree)| {
            let (compiled, _) = compile_tree(tree, &policy, options).ok()?;
            Some(TreeShape::of(i as u32, &compiled, Some(tree)))
        })
        .collect()
}

/// The human listing: per tree, its agents depth first from the root,
/// each indented under its parent.
pub fn write_listing(out: &mut dyn Write, shapes: &[TreeShape]) -> io::Result<()> {
    writeln!(
        out,
        "  trees           agents and their turns; spawns and joins by turn (turns count from 0)"
    )?;
    for shape in shapes {
        let turns: u64 = shape.agents.iter().map(|a| u64::from(a.turns)).sum();
        writeln!(
            out,
            "    {}: {} agents, {} turns",
            shape.tree,
            shape.agents.len(),
            turns
        )?;
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); shape.agents.len()];
        for (a, agent) in shape.agents.iter().enumerate() {
            if let Some(list) = agent.parent.and_then(|p| children.get_mut(p as usize)) {
                list.push(a as u32);
            }
        }
        // Depth first from the root, without recursion (any depth).
        let mut shown = vec![false; shape.agents.len()];
        let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
        while let Some((a, depth)) = stack.pop() {
            let Some(seen) = shown.get_mut(a as usize) else {
                continue;
            };
            if std::mem::replace(seen, true) {
                continue;
            }
            writeln!(
                out,
                "      {:indent$}{}",
                "",
                agent_line(shape, a),
                indent = depth * 2
            )?;
            for &child in children[a as usize].iter().rev() {
                stack.push((child, depth + 1));
            }
        }
        for e in shape.edges.iter().filter(|e| e.role == EdgeRole::Other) {
            let name = |a: u32| {
                shape
                    .agents
                    .get(a as usize)
                    .map_or("?", |g| g.agent.as_str())
            };
            writeln!(
                out,
                "      edge: {} turn {} -> {} turn {}",
                name(e.from_agent),
                e.from_turn,
                name(e.to_agent),
                e.to_turn
            )?;
        }
    }
    Ok(())
}

/// `id (kind, N turns), spawned by turn T, turn K joins turn J`.
fn agent_line(shape: &TreeShape, a: u32) -> String {
    let Some(agent) = shape.agents.get(a as usize) else {
        return String::new();
    };
    let plural = if agent.turns == 1 { "" } else { "s" };
    let mut line = format!(
        "{} ({}, {} turn{plural})",
        agent.agent, agent.kind, agent.turns
    );
    for e in &shape.edges {
        match e.role {
            EdgeRole::Spawn if e.to_agent == a => {
                line.push_str(&format!(", spawned by turn {}", e.from_turn));
            }
            EdgeRole::Join if e.from_agent == a => {
                line.push_str(&format!(", turn {} joins turn {}", e.from_turn, e.to_turn));
            }
            _ => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_runs::shape::{AgentShape, EdgeShape};

    fn agent(id: &str, parent: Option<u32>, kind: &str, turns: u32) -> AgentShape {
        AgentShape {
            agent: id.into(),
            parent,
            kind: kind.into(),
            turns,
        }
    }

    fn edge(role: EdgeRole, from: (u32, u32), to: (u32, u32)) -> EdgeShape {
        EdgeShape {
            role,
            from_agent: from.0,
            from_turn: from.1,
            to_agent: to.0,
            to_turn: to.1,
            anchor: "end".into(),
            gap_s: 0.0,
        }
    }

    #[test]
    fn children_are_indented_under_their_parents_with_their_edges() {
        let shape = TreeShape {
            tree_index: 0,
            tree: "t".into(),
            agents: vec![
                agent("root", None, "root", 3),
                agent("a", Some(0), "blocking", 2),
                agent("b", Some(1), "background", 1),
                agent("c", Some(0), "blocking", 1),
            ],
            edges: vec![
                edge(EdgeRole::Spawn, (0, 1), (1, 0)),
                edge(EdgeRole::Spawn, (1, 0), (2, 0)),
                edge(EdgeRole::Spawn, (0, 1), (3, 0)),
                edge(EdgeRole::Join, (1, 1), (0, 2)),
                edge(EdgeRole::Join, (3, 0), (0, 2)),
            ],
        };
        let mut out = Vec::new();
        write_listing(&mut out, &[shape]).expect("written");
        let text = String::from_utf8(out).expect("utf-8");
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "    t: 4 agents, 7 turns",
                "      root (root, 3 turns)",
                "        a (blocking, 2 turns), spawned by turn 1, turn 1 joins turn 2",
                "          b (background, 1 turn), spawned by turn 0",
                "        c (blocking, 1 turn), spawned by turn 1, turn 0 joins turn 2",
            ]
        );
    }
}
