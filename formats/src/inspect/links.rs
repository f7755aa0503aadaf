//! How sure each link of a corpus is: `arbor inspect`'s `links`.
//!
//! Owns [`Links`]: per tree and in total, which edges the file stated and
//! which were derived from recorded times (by which rule), which parent
//! links the file stated, which came from a request header and which a
//! reader inferred (by which rule), and which turns' timing a reader
//! reconstructed (by which rule). It reads only the trees, their
//! `provenance` and the edges `inspect` already has; no I/O.

use std::collections::BTreeMap;

use serde::Serialize;

use arbor_engine::model::{Edge, EdgeKind, LinkSource, Tree};

/// The name of the derivation rule of each kind of derived edge
/// (`arbor_engine::derive`; docs/inspect.md says each in words).
pub fn derived_rule(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Sequence => "in-agent",
        EdgeKind::Spawn => "spawn",
        EdgeKind::Join => "join",
    }
}

/// Derived-edge rules in the order they are listed.
const DERIVED_ORDER: [EdgeKind; 3] = [EdgeKind::Sequence, EdgeKind::Spawn, EdgeKind::Join];

/// Links of the whole corpus, and of each tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Links {
    /// Edges the files stated.
    pub edges_from_file: u64,
    /// Edges derived from recorded times, counted by rule.
    pub edges_derived: Vec<RuleCount>,
    /// Subagents whose parent the file stated.
    pub parents_from_file: u64,
    /// Subagents whose parent came from a request header, by header.
    pub parents_from_headers: Vec<RuleCount>,
    /// Subagents whose parent a reader inferred, by rule.
    pub parents_inferred: Vec<RuleCount>,
    /// Turns whose timing a reader reconstructed, by rule.
    pub timing_reconstructed: Vec<RuleCount>,
    /// Every tree, in input order.
    pub trees: Vec<TreeLinks>,
}

/// A rule (or header) and how many edges, agents or turns followed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCount {
    pub rule: String,
    pub count: u64,
}

/// One tree's links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeLinks {
    pub tree: String,
    pub edges_from_file: u64,
    pub edges_derived: u64,
    pub parents_from_file: u64,
    /// Subagents whose parent was not stated by the file, with its source
    /// (left out of the JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<AgentParent>,
    /// Left out of the JSON when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timing_reconstructed: Vec<RuleCount>,
}

impl TreeLinks {
    /// Whether anything of the tree is less sure than the file's word or
    /// a derivation from recorded times.
    pub fn inferred_anything(&self) -> bool {
        !self.parents.is_empty() || !self.timing_reconstructed.is_empty()
    }
}

/// Where one subagent's parent link came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentParent {
    /// The agent's index in the tree (the root is 0).
    pub agent: u32,
    pub agent_id: String,
    /// `header` or `inferred`.
    pub source: &'static str,
    /// The header's name, or the inference rule in words.
    pub rule: String,
}

/// Counts `rule` `n` more times in `counts`.
fn bump(counts: &mut BTreeMap<String, u64>, rule: &str, n: u64) {
    *counts.entry(rule.to_string()).or_default() += n;
}

fn listed(counts: BTreeMap<String, u64>) -> Vec<RuleCount> {
    counts
        .into_iter()
        .map(|(rule, count)| RuleCount { rule, count })
        .collect()
}

/// Accumulates [`Links`] tree by tree.
#[derive(Default)]
pub struct LinksBuilder {
    edges_from_file: u64,
    derived: BTreeMap<String, u64>,
    parents_from_file: u64,
    headers: BTreeMap<String, u64>,
    inferred: BTreeMap<String, u64>,
    timing: BTreeMap<String, u64>,
    trees: Vec<TreeLinks>,
}

impl LinksBuilder {
    /// Adds `tree`, whose edges (as `arbor plan` uses them) are `edges`.
    pub fn add(&mut self, tree: &Tree, edges: &[Edge]) {
        let stated = tree.explicit_edges.is_some();
        let (mut from_file, mut derived) = (0u64, 0u64);
        for edge in edges {
            if stated {
                from_file += 1;
            } else {
                derived += 1;
                bump(&mut self.derived, derived_rule(edge.kind), 1);
            }
        }
        self.edges_from_file += from_file;

        let mut parents = Vec::with_capacity(tree.provenance.parents.len());
        for link in &tree.provenance.parents {
            let Some(agent) = tree.agents.get(link.agent as usize) else {
                continue;
            };
            if agent.parent.is_none() {
                continue;
            }
            let (source, rule) = match &link.source {
                LinkSource::Header(name) => {
                    bump(&mut self.headers, name, 1);
                    ("header", name.to_string())
                }
                LinkSource::Inferred(rule) => {
                    bump(&mut self.inferred, rule, 1);
                    ("inferred", rule.to_string())
                }
            };
            parents.push(AgentParent {
                agent: link.agent,
                agent_id: agent.id.clone(),
                source,
                rule,
            });
        }
        let subagents = tree.agents.iter().filter(|a| a.parent.is_some()).count() as u64;
        let parents_from_file = subagents.saturating_sub(parents.len() as u64);
        self.parents_from_file += parents_from_file;

        let timing: Vec<RuleCount> = tree
            .provenance
            .timing
            .iter()
            .map(|r| {
                bump(&mut self.timing, &r.rule, u64::from(r.turns));
                RuleCount {
                    rule: r.rule.to_string(),
                    count: u64::from(r.turns),
                }
            })
            .collect();
        self.trees.push(TreeLinks {
            tree: tree.id.clone(),
            edges_from_file: from_file,
            edges_derived: derived,
            parents_from_file,
            parents,
            timing_reconstructed: timing,
        });
    }

    pub fn finish(mut self) -> Links {
        let edges_derived = DERIVED_ORDER
            .iter()
            .filter_map(|&kind| {
                let rule = derived_rule(kind);
                let count = self.derived.remove(rule)?;
                Some(RuleCount {
                    rule: rule.to_string(),
                    count,
                })
            })
            .collect();
        Links {
            edges_from_file: self.edges_from_file,
            edges_derived,
            parents_from_file: self.parents_from_file,
            parents_from_headers: listed(self.headers),
            parents_inferred: listed(self.inferred),
            timing_reconstructed: listed(self.timing),
            trees: self.trees,
        }
    }
}

/// Trees the human summary names as least sure.
pub const TREES_SHOWN: usize = 10;

impl Links {
    /// The human lines, each after `indent`: edges, parents, timing and
    /// the trees with anything inferred.
    pub fn human_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let derived: u64 = self.edges_derived.iter().map(|r| r.count).sum();
        let mut edges = format!("edges: {} from the file", self.edges_from_file);
        if derived > 0 {
            let rules: Vec<String> = self
                .edges_derived
                .iter()
                .map(|r| format!("{} {}", r.count, r.rule))
                .collect();
            edges.push_str(&format!(
                ", {derived} derived from recorded times ({})",
                rules.join(", ")
            ));
        }
        lines.push(edges);

        let mut parents = format!("parents: {} from the file", self.parents_from_file);
        for r in &self.parents_from_headers {
            parents.push_str(&format!(", {} from header {}", r.count, r.rule));
        }
        for r in &self.parents_inferred {
            parents.push_str(&format!(", {} inferred ({})", r.count, r.rule));
        }
        if self.parents_from_headers.is_empty() && self.parents_inferred.is_empty() {
            parents.push_str(", none inferred");
        }
        lines.push(parents);

        if self.timing_reconstructed.is_empty() {
            lines.push("timing: as recorded, none reconstructed".into());
        } else {
            let rules: Vec<String> = self
                .timing_reconstructed
                .iter()
                .map(|r| format!("{} turns ({})", r.count, r.rule))
                .collect();
            lines.push(format!("timing reconstructed: {}", rules.join(", ")));
        }

        let unsure: Vec<&TreeLinks> = self
            .trees
            .iter()
            .filter(|t| t.inferred_anything())
            .collect();
        if !unsure.is_empty() {
            let named: Vec<String> = unsure
                .iter()
                .take(TREES_SHOWN)
                .map(|t| {
                    let turns: u64 = t.timing_reconstructed.iter().map(|r| r.count).sum();
                    let mut what = Vec::new();
                    if !t.parents.is_empty() {
                        what.push(format!("{} parents not from the file", t.parents.len()));
                    }
                    if turns > 0 {
                        what.push(format!("{turns} turns reconstructed"));
                    }
                    format!("{} ({})", t.tree, what.join(", "))
                })
                .collect();
            let more = unsure.len().saturating_sub(TREES_SHOWN);
            let tail = if more > 0 {
                format!(" and {more} more (all with --json)")
            } else {
                String::new()
            };
            lines.push(format!(
                "trees with links not from the file: {}{tail}",
                named.join(", ")
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::derive::{derive_edges, DeriveOptions};
    use arbor_engine::model::{Agent, AgentKind, Anchor, Turn};
    use arbor_engine::time::NANOS_PER_SEC as S;

    fn turn(start: u64, duration: u64) -> Turn {
        Turn {
            start: start * S,
            duration: Some(duration * S),
            ..Turn::default()
        }
    }

    fn agent(id: &str, parent: Option<u32>, kind: AgentKind, turns: Vec<Turn>) -> Agent {
        Agent {
            id: id.into(),
            parent,
            kind,
            recorded_end: None,
            turns,
        }
    }

    /// A root of three turns with a blocking child between its first two.
    fn tree() -> Tree {
        Tree {
            id: "t".into(),
            agents: vec![
                agent(
                    "root",
                    None,
                    AgentKind::Root,
                    vec![turn(0, 1), turn(10, 1), turn(20, 1)],
                ),
                agent(
                    "child",
                    Some(0),
                    AgentKind::Blocking,
                    vec![turn(2, 1), turn(4, 1)],
                ),
            ],
            ..Tree::default()
        }
    }

    fn links_of(trees: &[Tree]) -> Links {
        let mut builder = LinksBuilder::default();
        for tree in trees {
            let edges = match &tree.explicit_edges {
                Some(edges) => edges.clone(),
                None => derive_edges(tree, &DeriveOptions::default()).0,
            };
            builder.add(tree, &edges);
        }
        builder.finish()
    }

    #[test]
    fn derived_edges_are_counted_by_rule_and_stated_parents_by_the_file() {
        let links = links_of(&[tree()]);
        assert_eq!(links.edges_from_file, 0);
        let count = |rule: &str| {
            links
                .edges_derived
                .iter()
                .find(|r| r.rule == rule)
                .map_or(0, |r| r.count)
        };
        // Root 0→1→2, child 0→1: three sequence edges; one spawn, one join.
        assert_eq!(count(derived_rule(EdgeKind::Sequence)), 3);
        assert_eq!(count(derived_rule(EdgeKind::Spawn)), 1);
        assert_eq!(count(derived_rule(EdgeKind::Join)), 1);
        assert_eq!(links.parents_from_file, 1);
        assert!(links.parents_inferred.is_empty());
        assert!(!links.trees[0].inferred_anything());
        let lines = links.human_lines();
        assert!(
            lines[1].contains("1 from the file, none inferred"),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 3, "no tree is named when nothing was inferred");
    }

    #[test]
    fn inferred_and_header_parents_and_reconstructed_turns_are_named() {
        let mut inferred = tree();
        inferred
            .provenance
            .parent(1, LinkSource::Inferred("timing containment".into()));
        inferred.provenance.reconstructed("from timing events", 3);
        inferred.provenance.reconstructed("from timing events", 2);
        let mut headed = tree();
        headed.id = "h".into();
        headed.explicit_edges = Some(vec![Edge {
            from: 0,
            to: 1,
            anchor: Anchor::End,
            gap: 0,
            kind: EdgeKind::Sequence,
        }]);
        headed.provenance.parent(
            1,
            LinkSource::Header("x-claude-code-parent-agent-id".into()),
        );
        let links = links_of(&[inferred, headed]);
        assert_eq!(links.edges_from_file, 1);
        assert_eq!(links.parents_from_file, 0);
        assert_eq!(
            links.parents_inferred,
            vec![RuleCount {
                rule: "timing containment".into(),
                count: 1
            }]
        );
        assert_eq!(links.parents_from_headers[0].count, 1);
        assert_eq!(links.timing_reconstructed[0].count, 5);
        assert_eq!(links.trees[0].parents[0].agent_id, "child");
        assert_eq!(links.trees[0].parents[0].source, "inferred");
        assert_eq!(links.trees[1].parents[0].source, "header");
        let lines = links.human_lines().join("\n");
        assert!(
            lines.contains("1 from header x-claude-code-parent-agent-id"),
            "{lines}"
        );
        assert!(lines.contains("1 inferred (timing containment)"), "{lines}");
        assert!(lines.contains("5 turns (from timing events)"), "{lines}");
        assert!(
            lines.contains("t (1 parents not from the file, 5 turns reconstructed), h (1 parents"),
            "{lines}"
        );
    }

    #[test]
    fn a_provenance_naming_no_subagent_is_ignored() {
        let mut t = tree();
        t.provenance.parent(0, LinkSource::Inferred("root".into()));
        t.provenance
            .parent(9, LinkSource::Inferred("missing".into()));
        let links = links_of(&[t]);
        assert!(links.parents_inferred.is_empty());
        assert_eq!(links.parents_from_file, 1);
    }
}
