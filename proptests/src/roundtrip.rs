//! Round trips through the writers (`arbor_formats::write`): trees
//! written in a target format and read back with that format's reader,
//! compared field by field (agents, parents, kinds, turns with their
//! times, isl/osl, models, hash ids, prompts, edges) but for exactly the
//! differences the conversion's account names. Each key an account may
//! name has an erasure here that removes that difference from both sides
//! ([`check`] applies them), so a difference the account does not name
//! fails, and so does a named one that is not there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arbor_engine::content::prompt_messages;
use arbor_engine::derive::{derive_edges, DeriveOptions};
use arbor_engine::model::{
    Agent, AgentKind, Anchor, Edge, EdgeKind, HashScope, InputKind, Role, Tree,
};
use arbor_engine::time::Nanos;
use arbor_formats::load::arbor::write_tree;
use arbor_formats::load::load_path;
use arbor_formats::write::{Account, Target, TreeWriter};

/// `testdata/REL` of the repository.
pub fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(rel)
}

/// A fresh path under the temp dir.
fn scratch(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "arbor-roundtrip-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The trees of the fixtures (`testdata/` paths), in order.
pub fn read(fixtures: &[&str]) -> Vec<Tree> {
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
/// back; the account. Arbor's lines are the native reader's writer, with
/// its account, as `arbor convert` pairs them.
pub fn write_and_read(target: Target, trees: &[Tree]) -> (Vec<Tree>, Account) {
    let out = scratch(target.name());
    let mut account = Account::new(target.name(), "out", target.kept());
    let mut writer: Box<dyn TreeWriter> = target.writer().unwrap_or_else(|| Box::new(ArborLines));
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
    writer.finish(&mut account);
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

/// Arbor's own lines with their account (the facade's pairing).
struct ArborLines;

impl TreeWriter for ArborLines {
    fn write_tree(
        &mut self,
        tree: &Tree,
        mut out: &mut dyn std::io::Write,
        account: &mut Account,
    ) -> std::io::Result<()> {
        write_tree(tree, &mut out)?;
        arbor_formats::write::arbor::account(tree, account);
        Ok(())
    }
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
            // A repeated id (names not yet made comparable) gets `~N`.
            let mut id = tree.id.clone();
            let mut n = 1;
            while out.contains_key(&id) {
                n += 1;
                id = format!("{}~{n}", tree.id);
            }
            out.insert(id, shape(tree, &edges));
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
        // Said of the output, or why other entries are there.
        "file_names" | "provenance" | "responses" | "empty_messages" | "background" => {}
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
            let strip = |name: &str| match name.rsplit_once('#') {
                Some((base, n)) if n.parse::<u32>().is_ok() => base.to_string(),
                _ => name.to_string(),
            };
            for tree in &mut side.trees {
                if key == "session_ids" {
                    tree.id = strip(&tree.id);
                }
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
            // One tree per agent, named by the agent and its occurrence
            // (agents of the same name in several trees), in order.
            let trees = std::mem::take(&mut side.trees);
            side.edges = Vec::new();
            let mut seen: BTreeMap<String, usize> = BTreeMap::new();
            for mut tree in trees {
                let offsets = tree.turn_offsets();
                let agents = std::mem::take(&mut tree.agents);
                for (a, agent) in agents.into_iter().enumerate() {
                    let n = seen.entry(agent.id.clone()).or_default();
                    *n += 1;
                    // Stated edges within the agent stay, renumbered.
                    let (lo, hi) = (offsets[a], offsets[a + 1]);
                    let within = tree.explicit_edges.as_ref().map(|edges| {
                        edges
                            .iter()
                            .filter(|e| (lo..hi).contains(&e.from) && (lo..hi).contains(&e.to))
                            .map(|e| Edge {
                                from: e.from - lo,
                                to: e.to - lo,
                                ..*e
                            })
                            .collect()
                    });
                    side.trees.push(Tree {
                        id: format!("{}@{n}", agent.id),
                        agents: vec![Agent {
                            parent: None,
                            kind: AgentKind::Root,
                            ..agent
                        }],
                        explicit_edges: within,
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
        }
        "time_origin" => {
            // Arrivals counted from the earliest.
            let earliest = side.trees.iter().map(|t| t.arrival).min().unwrap_or(0);
            side.trees.iter_mut().for_each(|t| t.arrival -= earliest);
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
        // Between the sides: see `check`.
        "edges" | "edges_added" => {}
        "anchors" => side
            .edges
            .iter_mut()
            .flatten()
            .for_each(|e| e.anchor = Anchor::End),
        // Between the sides: see `check`.
        "join_gaps" | "edge_kinds" => {}
        // Between the sides: see `check`.
        "gaps" => {}
        "start_ms" => {
            // Receive times to the nearest millisecond.
            for tree in &mut side.trees {
                let arrival = tree.arrival;
                for agent in &mut tree.agents {
                    for t in &mut agent.turns {
                        let at = (arrival + t.start + 500_000) / 1_000_000 * 1_000_000;
                        t.start = at.saturating_sub(arrival);
                    }
                }
            }
        }
        "early_turns" => {
            // No turn before the root's first.
            for tree in &mut side.trees {
                let first = tree
                    .agents
                    .first()
                    .and_then(|a| a.turns.first())
                    .map_or(0, |t| t.start);
                for agent in &mut tree.agents {
                    agent
                        .turns
                        .iter_mut()
                        .for_each(|t| t.start = t.start.max(first));
                }
            }
        }
        // Between the sides: see `check`.
        "hash_ids_dropped" => {}
        "system_messages" => {
            // System messages after a prompt's start read as user ones.
            for tree in &mut side.trees {
                for agent in &mut tree.agents {
                    for (k, t) in agent.turns.iter_mut().enumerate() {
                        for (i, m) in t
                            .text
                            .iter_mut()
                            .flat_map(|x| x.messages.iter_mut())
                            .enumerate()
                        {
                            if m.role == Role::System && (k > 0 || i > 0) {
                                m.role = Role::User;
                            }
                        }
                    }
                }
            }
        }
        other => panic!("no erasure for the account's key `{other}` ({target})"),
    }
}

/// Erasures that must come first, in this order (names before the trees
/// are split by agent; the block size before it is erased).
const FIRST: &[&str] = &["session_ids", "root_id", "partial_blocks", "subagents"];
/// Erasures that must come after the tree-level ones (they rebase times).
const LAST: &[&str] = &["arrival", "starts", "time_origin"];

fn erase_all(side: &mut Side, keys: &[&str], target: Target) {
    let order = |k: &&str| match FIRST.iter().position(|f| f == k) {
        Some(i) => i,
        None => match LAST.iter().position(|l| l == k) {
            Some(i) => FIRST.len() + 1 + i,
            None => FIRST.len(),
        },
    };
    let mut keys = keys.to_vec();
    keys.sort_by_key(order);
    for key in keys {
        erase(side, key, target);
    }
}

/// Keys whose difference the shapes see (the others are about the output,
/// about what no shape holds, or say why other entries are there; hash ids renumbered are the same blocks
/// to a shape, which numbers them in order of first appearance).
fn observable(key: &str, target: Target) -> bool {
    !matches!(
        key,
        "file_names" | "provenance" | "responses" | "empty_messages" | "background"
    ) && (key != "hash_ids" || target == Target::AiperfGraph)
}

/// The round trip of `fixtures` through `target`: [`check`]ed.
pub fn round_trip(target: Target, fixtures: &[&str]) -> Account {
    let source = read(fixtures);
    let what = format!("{target} {fixtures:?}");
    check(target, &source, &what).unwrap_or_else(|e| panic!("{e}"))
}

/// `source` written as `target` and read back: equal to the source after
/// erasing every key the account names, and, for each key it names that a
/// comparison sees, different without that erasure. The account, or what
/// failed (`what` names the case).
pub fn check(target: Target, source: &[Tree], what: &str) -> Result<Account, String> {
    let (back, account) = write_and_read(target, source);
    let keys: Vec<&str> = account
        .lost
        .iter()
        .chain(&account.inferred)
        .map(|e| e.key.as_str())
        .collect();
    let rule = edges_read(target);
    let compare = |keys: &[&str]| {
        let mut a = Side::source(source.to_vec(), rule);
        let mut b = Side::back(back.clone(), rule);
        erase_all(&mut a, keys, target);
        erase_all(&mut b, keys, target);
        if keys.contains(&"hash_ids_dropped") {
            // The turns read back without hash ids lose theirs.
            let bare: BTreeSet<(String, String, usize)> = b
                .trees
                .iter()
                .flat_map(|t| {
                    t.agents.iter().flat_map(move |ag| {
                        ag.turns
                            .iter()
                            .enumerate()
                            .filter(|(_, x)| x.hash_ids.is_empty())
                            .map(move |(k, _)| (t.id.clone(), ag.id.clone(), k))
                    })
                })
                .collect();
            for t in &mut a.trees {
                let id = t.id.clone();
                for ag in &mut t.agents {
                    for (k, x) in ag.turns.iter_mut().enumerate() {
                        if bare.contains(&(id.clone(), ag.id.clone(), k)) {
                            x.hash_ids = Default::default();
                        }
                    }
                }
            }
        }
        let (mut a, mut b) = (a.shape(rule), b.shape(rule));
        // Stated edges one side has and the other cannot: compared only
        // between the turns both link.
        let pairs = |t: &TreeShape| -> BTreeSet<(TurnRef, TurnRef)> {
            t.edges
                .iter()
                .map(|e| (e.from.clone(), e.to.clone()))
                .collect()
        };
        for (id, ta) in a.iter_mut() {
            let Some(tb) = b.get_mut(id) else { continue };
            let (pa, pb) = (pairs(ta), pairs(tb));
            if keys.contains(&"edges") && rule == EdgesRead::Stated {
                ta.edges
                    .retain(|e| pb.contains(&(e.from.clone(), e.to.clone())));
            }
            if keys.contains(&"edges") && target == Target::AiperfGraph {
                // Of several edges between two turns, the one written (in
                // agentic Mooncake a row's one gap, `gaps`, says it).
                let written: BTreeSet<(TurnRef, TurnRef, Nanos, Anchor)> = tb
                    .edges
                    .iter()
                    .map(|e| (e.from.clone(), e.to.clone(), e.gap, e.anchor))
                    .collect();
                let mut count: BTreeMap<(TurnRef, TurnRef), usize> = BTreeMap::new();
                for e in &ta.edges {
                    *count.entry((e.from.clone(), e.to.clone())).or_default() += 1;
                }
                ta.edges.retain(|e| {
                    count[&(e.from.clone(), e.to.clone())] == 1
                        || written.contains(&(e.from.clone(), e.to.clone(), e.gap, e.anchor))
                });
            }
            if keys.contains(&"edges_added") {
                tb.edges
                    .retain(|e| pa.contains(&(e.from.clone(), e.to.clone())));
            }
            // Kinds and join gaps as read back, on the edges both have.
            let back: BTreeMap<(TurnRef, TurnRef), (EdgeKind, Nanos)> = tb
                .edges
                .iter()
                .map(|e| ((e.from.clone(), e.to.clone()), (e.kind, e.gap)))
                .collect();
            let edges = std::mem::take(&mut ta.edges);
            let mut into: BTreeMap<TurnRef, usize> = BTreeMap::new();
            edges
                .iter()
                .for_each(|e| *into.entry(e.to.clone()).or_default() += 1);
            ta.edges = edges
                .into_iter()
                .map(|mut e| {
                    if let Some(&(kind, gap)) = back.get(&(e.from.clone(), e.to.clone())) {
                        if keys.contains(&"edge_kinds") {
                            e.kind = kind;
                        }
                        if keys.contains(&"join_gaps") && kind == EdgeKind::Join {
                            e.gap = gap;
                        }
                        // One gap per row: a turn waiting on several edges
                        // takes the gap written.
                        if keys.contains(&"gaps") && into[&e.to] > 1 {
                            e.gap = gap;
                        }
                    }
                    e
                })
                .collect();
        }
        (a, b)
    };
    let (a, b) = compare(&keys);
    if a != b {
        let ids = |m: &BTreeMap<String, TreeShape>| m.keys().cloned().collect::<Vec<_>>();
        if ids(&a) != ids(&b) {
            return Err(format!(
                "{what}: tree ids {:?} read back as {:?} after erasing {keys:?}",
                ids(&a),
                ids(&b)
            ));
        }
        for (id, tree) in &a {
            if Some(tree) != b.get(id) {
                return Err(format!(
                    "{what}: tree {id} after erasing {keys:?}:\n  source {tree:?}\n  back   {:?}",
                    b.get(id)
                ));
            }
        }
    }
    for key in keys.iter().filter(|k| observable(k, target)) {
        let others: Vec<&str> = keys.iter().copied().filter(|k| k != key).collect();
        let (a, b) = compare(&others);
        if a == b {
            return Err(format!(
                "{what}: the account names `{key}`, but without erasing it the trees are the same"
            ));
        }
    }
    Ok(account)
}
