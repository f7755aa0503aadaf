//! Round trips through every writer (`arbor_formats::write`): real
//! fixtures read, written in a target format, read back with that format's
//! reader. The trees must be the same (agents, parents, kinds, turns with
//! their times, isl/osl, models, hash ids, text, edges) except exactly
//! the differences the conversion's account names: each named key has an
//! erasure here that removes that difference from both sides, and without
//! it the two sides differ (the account names nothing that is not so).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arbor_engine::content::prompt_messages;
use arbor_engine::derive::{derive_edges, DeriveOptions};
use arbor_engine::model::{
    Agent, AgentKind, Anchor, Edge, EdgeKind, HashScope, InputKind, Role, Tree,
};
use arbor_engine::time::Nanos;
use arbor_formats::load::load_path;
use arbor_formats::write::{Account, Target};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(rel)
}

fn scratch(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "arbor-roundtrip-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The trees of the fixtures, in order.
fn read(fixtures: &[&str]) -> Vec<Tree> {
    fixtures
        .iter()
        .flat_map(|f| {
            load_path(&testdata(f), None)
                .unwrap_or_else(|e| panic!("{f}: {e}"))
                .trees
        })
        .collect()
}

/// `trees` written as `target` (a file, or a directory for Weka) and read
/// back; the account.
fn write_and_read(target: Target, trees: &[Tree]) -> (Vec<Tree>, Account) {
    let out = scratch(target.name());
    let mut account = Account::new(target.name(), "out", target.kept());
    let mut writer = target.writer().expect("a writer (arbor is the facade's)");
    let mut one_file = Vec::new();
    if target.file_per_tree() {
        std::fs::create_dir_all(&out).unwrap();
    }
    for tree in trees {
        account.tree_written(tree.agents.len(), tree.turn_count());
        match writer.tree_file(tree) {
            Some(name) => {
                let mut bytes = Vec::new();
                writer.write_tree(tree, &mut bytes, &mut account).unwrap();
                std::fs::write(out.join(name), bytes).unwrap();
            }
            None => writer
                .write_tree(tree, &mut one_file, &mut account)
                .unwrap(),
        }
    }
    if !target.file_per_tree() {
        std::fs::write(&out, &one_file).unwrap();
    }
    let back = load_path(&out, Some(target.format()))
        .unwrap_or_else(|e| panic!("{} reads its own output back: {e}", target.name()));
    if target.file_per_tree() {
        std::fs::remove_dir_all(&out).ok();
    } else {
        std::fs::remove_file(&out).ok();
    }
    assert_eq!(back.format, Some(target.format()));
    (back.trees, account)
}

// ---------------------------------------------------------------------------
// The comparable form

/// Where the edges read back come from: stated in the output (compare with
/// the source's edges as they were), or derived by the reader from the
/// times (derive both sides after the erasures).
#[derive(Clone, Copy, PartialEq)]
enum EdgesRead {
    Stated,
    Derived,
}

fn edges_read(target: Target) -> EdgesRead {
    match target {
        Target::AgenticMooncake | Target::AiperfGraph => EdgesRead::Stated,
        _ => EdgesRead::Derived,
    }
}

type TurnRef = (String, u32);

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct EdgeShape {
    from: TurnRef,
    to: TurnRef,
    anchor: Anchor,
    gap: Nanos,
    kind: EdgeKind,
}

#[derive(Debug, Clone, PartialEq)]
struct TurnShape {
    start: Nanos,
    duration: Option<Nanos>,
    ttft: Option<Nanos>,
    isl: u32,
    osl: u32,
    model: Option<String>,
    input: InputKind,
    ids: Vec<u32>,
    prompt: Option<Vec<(Role, String)>>,
}

#[derive(Debug, Clone, PartialEq)]
struct AgentShape {
    parent: Option<String>,
    kind: AgentKind,
    end: Option<Nanos>,
    turns: Vec<TurnShape>,
}

#[derive(Debug, Clone, PartialEq)]
struct TreeShape {
    arrival: Nanos,
    block_size: u32,
    scope: HashScope,
    tokens: (u32, u32),
    agents: BTreeMap<String, AgentShape>,
    edges: BTreeSet<EdgeShape>,
}

/// One side of a comparison: the trees and the edges each is compared
/// with (flat indices of the tree's own turns).
struct Side {
    trees: Vec<Tree>,
    edges: Vec<Vec<Edge>>,
}

impl Side {
    fn source(trees: Vec<Tree>, rule: EdgesRead) -> Side {
        let edges = trees
            .iter()
            .map(|t| match rule {
                EdgesRead::Stated => edges(t),
                EdgesRead::Derived => Vec::new(),
            })
            .collect();
        Side { trees, edges }
    }

    fn back(trees: Vec<Tree>, rule: EdgesRead) -> Side {
        let edges = trees
            .iter()
            .map(|t| match rule {
                EdgesRead::Stated => t.explicit_edges.clone().expect("stated edges read back"),
                EdgesRead::Derived => Vec::new(),
            })
            .collect();
        Side { trees, edges }
    }

    /// The comparable form, edges derived now when the rule says so.
    fn shape(&self, rule: EdgesRead) -> BTreeMap<String, TreeShape> {
        let mut out = BTreeMap::new();
        for (tree, stated) in self.trees.iter().zip(&self.edges) {
            let edges = match rule {
                EdgesRead::Stated => stated.clone(),
                EdgesRead::Derived => edges(tree),
            };
            let previous = out.insert(tree.id.clone(), shape(tree, &edges));
            assert!(previous.is_none(), "two trees named {}", tree.id);
        }
        out
    }
}

fn edges(tree: &Tree) -> Vec<Edge> {
    match &tree.explicit_edges {
        Some(e) => e.clone(),
        None => derive_edges(tree, &DeriveOptions::default()).0,
    }
}

/// Flat turn index to (agent id, turn index).
fn turn_refs(tree: &Tree) -> Vec<TurnRef> {
    tree.agents
        .iter()
        .flat_map(|a| (0..a.turns.len() as u32).map(move |k| (a.id.clone(), k)))
        .collect()
}

fn shape(tree: &Tree, edges: &[Edge]) -> TreeShape {
    let refs = turn_refs(tree);
    // Hash ids renumbered in order of first appearance, agents by id.
    let mut by_id: Vec<&Agent> = tree.agents.iter().collect();
    by_id.sort_by(|a, b| a.id.cmp(&b.id));
    let mut ids: BTreeMap<u32, u32> = BTreeMap::new();
    let mut renumbered: BTreeMap<String, Vec<Vec<u32>>> = BTreeMap::new();
    for agent in by_id {
        let turns = agent
            .turns
            .iter()
            .map(|t| {
                t.hash_ids
                    .iter()
                    .map(|id| {
                        let next = ids.len() as u32;
                        *ids.entry(id).or_insert(next)
                    })
                    .collect()
            })
            .collect();
        renumbered.insert(agent.id.clone(), turns);
    }
    let agents = tree
        .agents
        .iter()
        .map(|a| {
            let turns = a
                .turns
                .iter()
                .enumerate()
                .map(|(k, t)| TurnShape {
                    start: t.start,
                    duration: t.duration,
                    ttft: t.ttft,
                    isl: t.isl,
                    osl: t.osl,
                    model: t.model.and_then(|m| tree.models.get(m as usize).cloned()),
                    input: t.input_kind,
                    ids: renumbered[&a.id][k].clone(),
                    prompt: t.text.as_ref().map(|_| {
                        prompt_messages(a, k)
                            .into_iter()
                            .map(|m| (m.role, m.content.to_string()))
                            .collect()
                    }),
                })
                .collect();
            let shape = AgentShape {
                parent: a.parent.map(|p| tree.agents[p as usize].id.clone()),
                kind: a.kind,
                end: a.recorded_end,
                turns,
            };
            (a.id.clone(), shape)
        })
        .collect();
    // Without hash ids, the block size and scope mean nothing.
    let hashed = !ids.is_empty();
    TreeShape {
        arrival: tree.arrival,
        block_size: if hashed { tree.block_size } else { 0 },
        scope: if hashed {
            tree.hash_scope
        } else {
            HashScope::Local
        },
        tokens: (tree.tool_tokens, tree.system_tokens),
        agents,
        edges: edges
            .iter()
            .map(|e| EdgeShape {
                from: refs[e.from as usize].clone(),
                to: refs[e.to as usize].clone(),
                anchor: e.anchor,
                gap: e.gap,
                kind: e.kind,
            })
            .collect(),
    }
}

// ---------------------------------------------------------------------------
// Erasures: one per key an account may name

/// Removes the difference `key` names from one side. Tree-level erasures
/// work on the trees (before edges are derived); the rest on the edges.
fn erase(side: &mut Side, key: &str, target: Target) {
    let turns = |side: &mut Side, f: &dyn Fn(&mut arbor_engine::model::Turn)| {
        for tree in &mut side.trees {
            for agent in &mut tree.agents {
                agent.turns.iter_mut().for_each(f);
            }
        }
    };
    match key {
        // Said of the output, not of a tree's contents.
        "file_names" | "provenance" | "responses" | "empty_messages" => {}
        // Renumbered into the file's one space: the same blocks per tree
        // (shapes renumber them), the scope now global.
        "hash_ids" if target != Target::AiperfGraph => {
            for tree in &mut side.trees {
                tree.hash_scope = HashScope::Local;
            }
        }
        "durations" => turns(side, &|t| t.duration = None),
        "ttft" => turns(side, &|t| t.ttft = None),
        "input_kind" => turns(side, &|t| t.input_kind = InputKind::Unknown),
        "models" | "model_unknown" => {
            for tree in &mut side.trees {
                tree.models.clear();
                for agent in &mut tree.agents {
                    agent.turns.iter_mut().for_each(|t| t.model = None);
                }
            }
        }
        "text" | "text_dropped" | "filler_text" => turns(side, &|t| t.text = None),
        "isl" => turns(side, &|t| {
            if t.text.is_some() {
                t.isl = 0
            }
        }),
        "hash_ids" => {
            turns(side, &|t| t.hash_ids = Default::default());
            for tree in &mut side.trees {
                tree.block_size = 0;
                tree.hash_scope = HashScope::Local;
            }
        }
        "hash_scope" => {
            for tree in &mut side.trees {
                tree.hash_scope = HashScope::Local;
            }
        }
        "block_size" => {
            for tree in &mut side.trees {
                tree.block_size = 0;
            }
        }
        "tool_system_tokens" => {
            for tree in &mut side.trees {
                (tree.tool_tokens, tree.system_tokens) = (0, 0);
            }
        }
        "agent_end" => {
            for tree in &mut side.trees {
                tree.agents.iter_mut().for_each(|a| a.recorded_end = None);
            }
        }
        "root_id" | "session_ids" => {
            // The root named after the tree; others with `#N` where their
            // name was taken in the file.
            for tree in &mut side.trees {
                let id = tree.id.clone();
                for (a, agent) in tree.agents.iter_mut().enumerate() {
                    if a == 0 {
                        agent.id = id.clone();
                    } else if let Some((name, n)) = agent.id.rsplit_once('#') {
                        if key == "session_ids" && n.parse::<u32>().is_ok() {
                            agent.id = name.to_string();
                        }
                    }
                }
            }
        }
        "kinds" => {
            for tree in &mut side.trees {
                for agent in tree.agents.iter_mut().skip(1) {
                    agent.kind = AgentKind::Blocking;
                }
            }
        }
        "subagents" => {
            let trees = std::mem::take(&mut side.trees);
            side.edges = Vec::new();
            for mut tree in trees {
                let agents = std::mem::take(&mut tree.agents);
                for agent in agents {
                    side.trees.push(Tree {
                        id: agent.id.clone(),
                        agents: vec![Agent {
                            parent: None,
                            kind: AgentKind::Root,
                            ..agent
                        }],
                        explicit_edges: None,
                        ..tree.clone()
                    });
                    side.edges.push(Vec::new());
                }
            }
        }
        "arrival" if matches!(target, Target::AiperfGraph | Target::Weka) => {
            for tree in &mut side.trees {
                tree.arrival = 0;
            }
        }
        "arrival" => {
            // The tree starts at its root's first turn.
            for tree in &mut side.trees {
                let first = tree
                    .agents
                    .first()
                    .and_then(|a| a.turns.first())
                    .map_or(0, |t| t.start);
                tree.arrival += first;
                for agent in &mut tree.agents {
                    agent.turns.iter_mut().for_each(|t| t.start -= first);
                }
            }
            // Arrivals count from the earliest (Dynamo's rule).
            if target == Target::Dynamo {
                let earliest = side.trees.iter().map(|t| t.arrival).min().unwrap_or(0);
                side.trees.iter_mut().for_each(|t| t.arrival -= earliest);
            }
        }
        "starts" => turns(side, &|t| t.start = 0),
        "partial_blocks" => {
            // Only full blocks' ids are compared.
            for tree in &mut side.trees {
                let size = tree.block_size.max(1);
                for agent in &mut tree.agents {
                    for t in &mut agent.turns {
                        let full = (t.isl / size) as usize;
                        if t.hash_ids.len() > full {
                            t.hash_ids = t.hash_ids.iter().take(full).collect();
                        }
                    }
                }
            }
        }
        "edges" if edges_read(target) == EdgesRead::Derived => {
            side.trees.iter_mut().for_each(|t| t.explicit_edges = None);
        }
        "anchors" => side
            .edges
            .iter_mut()
            .flatten()
            .for_each(|e| e.anchor = Anchor::End),
        "join_gaps" => side
            .edges
            .iter_mut()
            .flatten()
            .filter(|e| e.kind == EdgeKind::Join)
            .for_each(|e| e.gap = 0),
        "gaps" => {
            // Rows with several incoming edges: their gaps are not compared.
            for edges in &mut side.edges {
                let mut count: BTreeMap<u32, usize> = BTreeMap::new();
                edges
                    .iter()
                    .for_each(|e| *count.entry(e.to).or_default() += 1);
                edges
                    .iter_mut()
                    .filter(|e| count[&e.to] > 1)
                    .for_each(|e| e.gap = 0);
            }
        }
        other => panic!("no erasure for the account's key `{other}` ({target})"),
    }
}

/// Erasures that must come first (they reshape the trees, or need the
/// block size before it is erased).
const FIRST: &[&str] = &["subagents", "root_id", "session_ids", "partial_blocks"];
/// Erasures that must come after the tree-level ones (they rebase times).
const LAST: &[&str] = &["arrival", "starts"];

fn erase_all(side: &mut Side, keys: &[&str], target: Target) {
    let order = |k: &&str| {
        if FIRST.contains(k) {
            0
        } else if LAST.contains(k) {
            2
        } else {
            1
        }
    };
    let mut keys = keys.to_vec();
    keys.sort_by_key(order);
    for key in keys {
        erase(side, key, target);
    }
}

/// Keys whose difference the shapes see (the others are about the output
/// or about what no shape holds; hash ids renumbered are the same blocks
/// to a shape, which numbers them in order of first appearance).
fn observable(key: &str, target: Target) -> bool {
    !matches!(
        key,
        "file_names" | "provenance" | "responses" | "empty_messages"
    ) && (key != "hash_ids" || target == Target::AiperfGraph)
}

/// The round trip of `fixtures` through `target`: equal after the
/// account's erasures; each observable key's erasure needed.
fn round_trip(target: Target, fixtures: &[&str]) -> Account {
    let source = read(fixtures);
    let (back, account) = write_and_read(target, &source);
    let keys: Vec<&str> = account
        .lost
        .iter()
        .chain(&account.inferred)
        .map(|e| e.key.as_str())
        .collect();
    let rule = edges_read(target);
    let compare = |keys: &[&str]| {
        let mut a = Side::source(source.clone(), rule);
        let mut b = Side::back(back.clone(), rule);
        erase_all(&mut a, keys, target);
        erase_all(&mut b, keys, target);
        (a.shape(rule), b.shape(rule))
    };
    let (a, b) = compare(&keys);
    if a != b {
        let (ka, kb): (Vec<&String>, Vec<&String>) = (a.keys().collect(), b.keys().collect());
        assert_eq!(ka, kb, "{target} {fixtures:?}: tree ids");
        for (id, tree) in &a {
            assert_eq!(
                Some(tree),
                b.get(id),
                "{target} {fixtures:?}: tree {id} after erasing {keys:?}"
            );
        }
    }
    for key in keys.iter().filter(|k| observable(k, target)) {
        let others: Vec<&str> = keys.iter().copied().filter(|k| k != key).collect();
        let (a, b) = compare(&others);
        assert_ne!(
            a, b,
            "{target} {fixtures:?}: the account names `{key}`, but without erasing it the trees are the same"
        );
    }
    account
}

const WEKA: &[&str] = &[
    "weka-kv-cache-tester/trace_0187.json",
    "weka-kv-cache-tester/trace_0277.json",
    "weka-kv-cache-tester/trace_0291.json",
    "weka-kv-cache-tester/trace_0504.json",
];
const DYNAMO: &str = "dynamo/sample.jsonl";
const GRAPH: &str = "aiperf-graph/sample.dag.jsonl";
const ABENCH: &str = "abench/sample.jsonl";
const MOONCAKE: &str = "mooncake-fast25/conversation_trace.head400.jsonl";
const AGENTIC: &str = "golden/agentic_mooncake.jsonl";

fn keys(account: &Account) -> (Vec<&str>, Vec<&str>) {
    (account.lost_keys(), account.inferred_keys())
}

#[test]
fn weka_writes_weka_and_dynamo_trees_back() {
    let account = round_trip(Target::Weka, WEKA);
    assert_eq!(keys(&account), (vec![], vec!["file_names"]));
    let account = round_trip(Target::Weka, &[DYNAMO]);
    assert_eq!(
        keys(&account),
        (
            vec!["hash_scope", "agent_end", "arrival"],
            vec!["file_names", "model_unknown"]
        )
    );
}

#[test]
fn mooncake_keeps_starts_and_lengths_and_names_what_it_drops() {
    let account = round_trip(Target::Mooncake, &[MOONCAKE]);
    assert_eq!(keys(&account), (vec![], vec!["hash_ids"]));
    let account = round_trip(Target::Mooncake, &[DYNAMO]);
    assert_eq!(
        account.lost_keys(),
        ["subagents", "arrival", "durations", "ttft", "block_size"]
    );
    // Each agent its own tree: 4 trees from 2.
    let subagents = account.entry("subagents").unwrap();
    assert_eq!((subagents.trees, subagents.agents), (1, 2));
    let account = round_trip(Target::Mooncake, &WEKA[..2]);
    assert!(account.lost_keys().contains(&"models"));
    // Text formats: the text goes, the lengths stay.
    let account = round_trip(Target::Mooncake, &[ABENCH]);
    assert!(
        account.lost_keys().contains(&"text"),
        "{:?}",
        account.lost_keys()
    );
}

#[test]
fn agentic_mooncake_keeps_the_graph() {
    let account = round_trip(Target::AgenticMooncake, &[AGENTIC]);
    assert_eq!(keys(&account).0, Vec::<&str>::new());
    let account = round_trip(Target::AgenticMooncake, &[DYNAMO]);
    assert_eq!(
        account.lost_keys(),
        ["gaps", "starts", "durations", "ttft", "block_size"]
    );
    let starts = account.entry("starts").unwrap();
    assert_eq!((starts.trees, starts.turns), (2, 7));
}

#[test]
fn dynamo_keeps_sessions_and_times_to_the_millisecond() {
    let account = round_trip(Target::Dynamo, &[DYNAMO]);
    assert_eq!(keys(&account), (vec![], vec!["hash_ids"]));
    let account = round_trip(Target::Dynamo, WEKA);
    assert!(account.lost_keys().contains(&"models"));
}

#[test]
fn aiperf_graph_keeps_its_own_graphs_and_text() {
    // Its own sample: the same graph, text and tokens. The foreground fork
    // reads back as a spawn on the last turn (background); the template
    // spawned in both trees gets a name of its own in the second.
    let account = round_trip(Target::AiperfGraph, &[GRAPH]);
    assert_eq!(
        keys(&account),
        (vec!["kinds", "provenance"], vec!["session_ids"])
    );
    let kinds = account.entry("kinds").unwrap();
    assert_eq!((kinds.trees, kinds.agents), (1, 1));
    let account = round_trip(Target::AiperfGraph, &[DYNAMO]);
    assert_eq!(
        keys(&account),
        (
            vec![
                "join_gaps",
                "starts",
                "input_kind",
                "durations",
                "ttft",
                "hash_ids",
                "arrival"
            ],
            vec!["filler_text"]
        )
    );
    // Recorded text is kept (each prompt as recorded); token counts are
    // re-estimated from it, and the last answers have no next prompt.
    let account = round_trip(Target::AiperfGraph, &[ABENCH]);
    assert_eq!(
        keys(&account),
        (vec!["responses", "isl", "input_kind"], vec![])
    );
    // Subagents with their spawn and join turns, from the recorded times.
    let account = round_trip(
        Target::AiperfGraph,
        &["weka-kv-cache-tester/trace_0291.json"],
    );
    assert_eq!(
        keys(&account),
        (
            vec![
                "join_gaps",
                "starts",
                "durations",
                "hash_ids",
                "tool_system_tokens",
                "agent_end"
            ],
            vec!["filler_text"]
        )
    );
}

#[test]
fn a_local_scope_keeps_trees_apart_in_global_formats() {
    // Two Weka trees written to Mooncake share no block, as in Weka.
    let source = read(&WEKA[..2]);
    for target in [Target::Mooncake, Target::AgenticMooncake, Target::Dynamo] {
        let (back, _) = write_and_read(target, &source);
        let ids = |trees: &[Tree], pick: &dyn Fn(&Tree) -> bool| -> BTreeSet<u32> {
            trees
                .iter()
                .filter(|t| pick(t))
                .flat_map(|t| t.agents.iter().flat_map(|a| a.turns.iter()))
                .flat_map(|t| t.hash_ids.iter())
                .collect()
        };
        let first = &source[0].id;
        let a = ids(&back, &|t| t.id.starts_with(first.as_str()));
        let b = ids(&back, &|t| !t.id.starts_with(first.as_str()));
        assert!(!a.is_empty() && !b.is_empty(), "{target}");
        assert!(a.is_disjoint(&b), "{target}: trees share blocks");
    }
}

#[test]
fn the_account_counts_what_it_names() {
    let (_, account) = write_and_read(Target::Mooncake, &read(&[DYNAMO]));
    // The Dynamo sample: 2 trees, 4 agents, 9 turns, all with durations
    // and ttft; one tree has two subagents.
    assert_eq!(
        (
            account.written.trees,
            account.written.agents,
            account.written.turns
        ),
        (2, 4, 9)
    );
    let durations = account.entry("durations").unwrap();
    assert_eq!((durations.trees, durations.turns), (2, 9));
}

#[test]
fn every_target_reads_its_output_back_as_its_format() {
    let source = read(&[DYNAMO]);
    for target in Target::ALL.into_iter().filter(|&t| t != Target::Arbor) {
        let (back, _) = write_and_read(target, &source);
        assert!(!back.is_empty(), "{target}");
    }
}
