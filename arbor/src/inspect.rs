//! `arbor inspect` ([`inspect`]): load, fit (`--isl-scale`,
//! `--max-context`, told the observer), summarise, and the human form
//! ([`Inspected::write_human`]) or the JSON value ([`Inspected::json`]);
//! and the tree listing: each
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
use arbor_formats::inspect::links::TreeLinks;
use arbor_formats::inspect::{inspect, Inspection};
use arbor_formats::load;
use std::path::PathBuf;

use arbor_formats::input::{Format, Loaded};
use serde::Serialize;

use crate::options::{FitOptions, SubsetOptions};
use crate::Observer;
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

/// `arbor inspect`: the traces and how to read them.
#[derive(Debug, Clone)]
pub struct InspectOptions {
    pub inputs: Vec<PathBuf>,
    pub format: Option<Format>,
    pub fit: FitOptions,
    pub overlap_tolerance: arbor_engine::time::Nanos,
    /// The JSON form is wanted (the listing then only with `trees`).
    pub json: bool,
    /// List the trees whatever their number.
    pub trees: bool,
    /// Which part of the inputs to inspect (`--tree`, `--max-requests`);
    /// `Default` is all of them.
    pub subset: SubsetOptions,
}

/// What `arbor inspect` found.
pub struct Inspected {
    pub inspection: Inspection,
    /// The trees' shapes, when they are listed.
    pub shapes: Vec<TreeShape>,
    listed: bool,
    with_shapes: bool,
}

/// Keeps the trees of the subset asked for, in each input's list.
fn take_subset(
    loaded: &mut [Loaded],
    part: &SubsetOptions,
    observer: &dyn Observer,
) -> Result<(), Error> {
    if part.is_whole() {
        return Ok(());
    }
    let all: Vec<&Tree> = loaded.iter().flat_map(|l| l.trees.iter()).collect();
    let Some((kept, taken)) = crate::subset::choose(&all, part)? else {
        return Ok(());
    };
    observer.notice(&format!("arbor inspect: {taken}"));
    let mut wanted = kept.into_iter().peekable();
    let mut index = 0usize;
    for one in loaded.iter_mut() {
        one.trees.retain(|_| {
            let keep = wanted.peek() == Some(&index);
            if keep {
                wanted.next();
            }
            index += 1;
            keep
        });
    }
    Ok(())
}

/// Loads, fits and inspects the inputs.
pub fn inspect_inputs(args: &InspectOptions, observer: &dyn Observer) -> Result<Inspected, Error> {
    let options = DeriveOptions {
        overlap_tolerance: args.overlap_tolerance,
    };
    let paths = arbor_formats::data::resolve_inputs(&args.inputs)?;
    let mut loaded = load::load_all(&paths, args.format).map_err(Error::input)?;
    take_subset(&mut loaded, &args.subset, observer)?;
    let fit = args.fit.fit();
    if !fit.is_identity() {
        let report = apply_trees(loaded.iter_mut().flat_map(|l| l.trees.iter_mut()), &fit);
        observer.notice(&format!("arbor inspect: {}", describe_fit(&report)));
    }
    let inspection = inspect(&loaded, &options);
    let trees: Vec<&Tree> = loaded.iter().flat_map(|l| l.trees.iter()).collect();
    let listed = args.trees || (!args.json && trees.len() <= LISTED_BY_DEFAULT);
    let shapes = if listed {
        shapes(&trees, &options)
    } else {
        Vec::new()
    };
    Ok(Inspected {
        inspection,
        shapes,
        listed,
        with_shapes: args.json && args.trees,
    })
}

/// The JSON form: the report, with the trees' shapes under `tree_shapes`
/// when they were asked for (`--json --trees`).
impl Serialize for Inspected {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.with_shapes {
            WithShapes {
                inspection: &self.inspection,
                tree_shapes: &self.shapes,
            }
            .serialize(serializer)
        } else {
            self.inspection.serialize(serializer)
        }
    }
}

impl Inspected {
    /// The human form: the report, then the listing when there is one.
    pub fn write_human(&self, mut out: &mut dyn Write) -> io::Result<()> {
        self.inspection.write_human(&mut out)?;
        if self.listed {
            write_listing(out, &self.shapes, &self.inspection.links.trees)?;
        }
        Ok(())
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

/// Levels of indentation the listing draws; deeper agents say their depth.
const MAX_INDENT: usize = 32;

/// The human listing: per tree, its agents depth first from the root,
/// each indented under its parent (at most [`MAX_INDENT`] levels); a
/// subagent whose parent the file did not state says where it came from
/// (`links`, by tree index; may be empty).
pub fn write_listing(
    out: &mut dyn Write,
    shapes: &[TreeShape],
    links: &[TreeLinks],
) -> io::Result<()> {
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
        let parents = links
            .get(shape.tree_index as usize)
            .map_or(&[][..], |l| l.parents.as_slice());
        let line = |a: u32| {
            let mut line = agent_line(shape, a);
            if let Some(p) = parents.iter().find(|p| p.agent == a) {
                line.push_str(&format!(" [parent {}: {}]", p.source, p.rule));
            }
            line
        };
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
            // Indented under its parent down to MAX_INDENT levels; deeper
            // agents name their depth instead (the indent of a tree 32,768
            // agents deep was a gigabyte, and past 65,535 columns a panic).
            if depth <= MAX_INDENT {
                writeln!(out, "      {:indent$}{}", "", line(a), indent = depth * 2)?;
            } else {
                writeln!(
                    out,
                    "      {:indent$}[depth {depth}] {}",
                    "",
                    line(a),
                    indent = MAX_INDENT * 2
                )?;
            }
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

    #[test]
    fn a_tree_deeper_than_the_indent_is_listed_in_linear_space() {
        // Issue 27, item 12: 32,768 agents deep wrote 1.07 GB of indent,
        // then panicked ("Formatting argument out of range").
        let depth = 70_000u32;
        let agents = (0..depth)
            .map(|a| match a {
                0 => agent("root", None, "root", 1),
                a => agent(&format!("a{a}"), Some(a - 1), "blocking", 1),
            })
            .collect();
        let shape = TreeShape {
            tree_index: 0,
            tree: "deep".into(),
            agents,
            edges: Vec::new(),
        };
        let mut out = Vec::new();
        write_listing(&mut out, &[shape], &[]).expect("written");
        let text = String::from_utf8(out).expect("text");
        assert_eq!(text.lines().count(), depth as usize + 2);
        // Each line's indent is at most MAX_INDENT levels.
        assert!(text.len() < depth as usize * 200, "{} bytes", text.len());
        assert!(
            text.contains("[depth 69999] a69999"),
            "the deepest agent names its depth"
        );
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
        write_listing(&mut out, &[shape], &[]).expect("written");
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

    #[test]
    fn a_parent_not_from_the_file_says_where_it_came_from() {
        use arbor_formats::inspect::links::AgentParent;
        let shape = TreeShape {
            tree_index: 0,
            tree: "t".into(),
            agents: vec![
                agent("root", None, "root", 2),
                agent("a", Some(0), "blocking", 1),
                agent("b", Some(0), "background", 1),
            ],
            edges: vec![edge(EdgeRole::Spawn, (0, 0), (1, 0))],
        };
        let links = TreeLinks {
            tree: "t".into(),
            edges_from_file: 0,
            edges_derived: 1,
            parents_from_file: 0,
            parents: vec![
                AgentParent {
                    agent: 1,
                    agent_id: "a".into(),
                    source: "header",
                    rule: "x-claude-code-parent-agent-id".into(),
                },
                AgentParent {
                    agent: 2,
                    agent_id: "b".into(),
                    source: "inferred",
                    rule: "continuity".into(),
                },
            ],
            timing_reconstructed: Vec::new(),
        };
        let mut out = Vec::new();
        write_listing(&mut out, &[shape], &[links]).expect("written");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(
            text.contains("a (blocking, 1 turn), spawned by turn 0 [parent header: x-claude-code-parent-agent-id]"),
            "{text}"
        );
        assert!(
            text.contains("b (background, 1 turn) [parent inferred: continuity]"),
            "{text}"
        );
    }
}
