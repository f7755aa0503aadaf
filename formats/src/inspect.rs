//! What a corpus holds, before anyone spends GPU hours on it: `arbor
//! inspect`.
//!
//! Owns [`inspect`], which summarises loaded inputs from their recorded
//! times and content alone (no scheduling, no policy): sizes, shape (agent
//! kinds, depth), token and time distributions, the recorded span and peak
//! concurrency, what deriving edges adjusted, how much is estimated, a
//! theoretical prefix-cache hit ratio, and every problem found with its
//! place. The definitions of the figures are in `docs/inspect.md`.
//!
//! Times are reported on the recording's clock, from the earliest tree
//! arrival. Everything is computed in integer nanoseconds; the same inputs
//! give the same bytes.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, Write};

use serde::Serialize;

use arbor_engine::content::TextBlockHasher;
use arbor_engine::dag::validate;
use arbor_engine::derive::{derive_edges, Adjustments, DeriveOptions};
use arbor_engine::model::{AgentKind, Anchor, Edge, HashScope, Role, Tree};
use arbor_engine::stats::{Count, Distribution, Seconds};
use arbor_engine::time::{nanos_to_secs, Nanos};

use crate::input::Loaded;

pub mod links;
pub use links::Links;

/// Everything `arbor inspect` reports (JSON field names are the public
/// contract; see `docs/inspect.md`).
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub inputs: Vec<InputSummary>,
    pub trees: u64,
    pub agents: u64,
    pub agent_kinds: AgentKinds,
    /// Deepest nesting of a subagent: the root is 0, its children 1.
    pub max_depth: u32,
    pub turns: u64,
    /// Prompt tokens per turn.
    pub isl: Distribution<Count>,
    /// Output tokens per turn.
    pub osl: Distribution<Count>,
    /// Gap of every `End`-anchored edge (derived, or stated by the format).
    pub gap: Distribution<Seconds>,
    /// Recorded service time of turns whose duration is known.
    pub recorded_duration: Distribution<Seconds>,
    /// Turns whose duration is unknown (not in `recorded_duration`).
    pub unknown_durations: u64,
    /// From the earliest tree arrival to the latest recorded turn end.
    pub recorded_span_s: f64,
    /// Most turns in flight at once in the recording.
    pub peak_concurrency: u64,
    /// When that peak was first reached, from the earliest arrival.
    pub peak_concurrency_at_s: f64,
    pub adjustments: AdjustmentSummary,
    /// Turns whose token counts were estimated from text.
    pub tokens_estimated: u64,
    pub prefix_cache: PrefixCache,
    /// How sure each link is: edges from the file or derived, parents
    /// from the file, a header or inferred, timing reconstructed.
    pub links: Links,
    pub problems: Vec<ProblemEntry>,
}

/// One input path.
#[derive(Debug, Clone, Serialize)]
pub struct InputSummary {
    pub path: String,
    pub format: Option<String>,
    pub conventions: Vec<String>,
    pub trees: u64,
    pub agents: u64,
    pub turns: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AgentKinds {
    pub root: u64,
    pub blocking: u64,
    pub background: u64,
}

/// [`Adjustments`] summed over trees, with the same JSON names as `arbor
/// plan`'s `adjustments`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AdjustmentSummary {
    pub overlaps_rounded: u64,
    pub overlap_rounded_s: f64,
    pub overlaps_kept: u64,
    pub unknown_durations: u64,
    pub unjoined_children: u64,
}

impl From<&Adjustments> for AdjustmentSummary {
    fn from(a: &Adjustments) -> Self {
        AdjustmentSummary {
            overlaps_rounded: a.overlaps_rounded,
            overlap_rounded_s: nanos_to_secs(a.overlap_rounded_ns),
            overlaps_kept: a.overlaps_kept,
            unknown_durations: a.unknown_durations,
            unjoined_children: a.unjoined_children,
        }
    }
}

/// Theoretical prefix-cache reuse with an infinite cache.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefixCache {
    /// What the blocks are: `hash ids`, `text blocks`, `hash ids and text
    /// blocks`, or `none`.
    pub basis: String,
    pub blocks: u64,
    pub hits: u64,
    /// `hits / blocks`; `null` when there are no blocks.
    pub hit_ratio: Option<f64>,
}

/// A problem a reader reported or the inspection found, with its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProblemEntry {
    pub place: String,
    pub message: String,
}

/// The message for a blocking child that nothing joins.
pub const UNJOINED: &str = "blocking child with no later parent turn: replayed as background";

/// Inspects loaded inputs. Edges are those `arbor plan` would use: the
/// format's explicit edges when it states them, else derived with
/// `options`.
pub fn inspect(loaded: &[Loaded], options: &DeriveOptions) -> Inspection {
    let mut inputs = Vec::with_capacity(loaded.len());
    let mut problems = Vec::new();
    for input in loaded {
        inputs.push(InputSummary {
            path: input.path.clone(),
            format: input.format.map(|f| f.name().to_string()),
            conventions: input.conventions.clone(),
            trees: input.trees.len() as u64,
            agents: input.trees.iter().map(|t| t.agents.len() as u64).sum(),
            turns: input.trees.iter().map(|t| t.turn_count() as u64).sum(),
        });
        problems.extend(input.problems.iter().map(|p| ProblemEntry {
            place: p.place.clone(),
            message: p.message.clone(),
        }));
    }
    let trees: Vec<&Tree> = loaded.iter().flat_map(|l| l.trees.iter()).collect();

    let mut kinds = AgentKinds::default();
    let mut max_depth = 0u32;
    let (mut isl, mut osl, mut durations, mut gaps) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut unknown_durations = 0u64;
    let mut tokens_estimated = 0u64;
    let mut adjustments = Adjustments::default();
    let mut intervals = Vec::new();
    let earliest = trees.iter().map(|t| t.arrival).min().unwrap_or(0);
    let mut latest = earliest;
    let mut links = links::LinksBuilder::default();

    for tree in &trees {
        let mut depth = Vec::with_capacity(tree.agents.len());
        for agent in &tree.agents {
            match agent.kind {
                AgentKind::Root => kinds.root += 1,
                AgentKind::Blocking => kinds.blocking += 1,
                AgentKind::Background => kinds.background += 1,
            }
            let d = agent
                .parent
                .and_then(|p| depth.get(p as usize).map(|&d: &u32| d + 1))
                .unwrap_or(0);
            depth.push(d);
            max_depth = max_depth.max(d);
            for turn in &agent.turns {
                isl.push(turn.isl as u64);
                osl.push(turn.osl as u64);
                match turn.duration {
                    Some(d) => durations.push(d),
                    None => unknown_durations += 1,
                }
                tokens_estimated += turn.tokens_estimated as u64;
                let start = tree.arrival.saturating_add(turn.start);
                let end = tree.arrival.saturating_add(turn.end());
                latest = latest.max(end);
                if end > start {
                    intervals.push((start, end));
                }
            }
        }

        let (edges, tree_adjustments) = match &tree.explicit_edges {
            Some(edges) => (edges.clone(), Adjustments::default()),
            None => derive_edges(tree, options),
        };
        adjustments.add(&tree_adjustments);
        links.add(tree, &edges);
        gaps.extend(
            edges
                .iter()
                .filter(|e| e.anchor == Anchor::End)
                .map(|e| e.gap),
        );
        tree_problems(tree, &edges, &mut problems);
    }

    let (peak, peak_at) = peak_concurrency(&mut intervals);
    Inspection {
        inputs,
        trees: trees.len() as u64,
        agents: trees.iter().map(|t| t.agents.len() as u64).sum(),
        agent_kinds: kinds,
        max_depth,
        turns: isl.len() as u64,
        isl: Distribution::of(&mut isl),
        osl: Distribution::of(&mut osl),
        gap: Distribution::of(&mut gaps),
        recorded_duration: Distribution::of(&mut durations),
        unknown_durations,
        recorded_span_s: nanos_to_secs(latest - earliest),
        peak_concurrency: peak,
        peak_concurrency_at_s: nanos_to_secs(peak_at.saturating_sub(earliest)),
        adjustments: (&adjustments).into(),
        tokens_estimated,
        prefix_cache: prefix_cache(&trees),
        links: links.finish(),
        problems,
    }
}

/// Problems of one tree that reading it could not see: edges that do not
/// form a valid DAG, blocking children nothing joins, subagents with no
/// turns.
fn tree_problems(tree: &Tree, edges: &[Edge], problems: &mut Vec<ProblemEntry>) {
    if let Err(e) = validate(tree, edges) {
        problems.push(ProblemEntry {
            place: match &e.place {
                Some(place) => format!("{}: {place}", e.file),
                None => e.file.clone(),
            },
            message: e.message,
        });
    }
    let place = |agent: &str| format!("{}: tree `{}`, agent `{agent}`", tree.source, tree.id);
    for agent in tree.agents.iter().skip(1) {
        if agent.turns.is_empty() {
            problems.push(ProblemEntry {
                place: place(&agent.id),
                message: "subagent with no turns: nothing to replay".into(),
            });
        }
    }
    if tree.explicit_edges.is_some() {
        return;
    }
    // The join rule of `derive_edges`: the first parent turn starting at or
    // after the child's end.
    for agent in &tree.agents {
        let (Some(parent), AgentKind::Blocking) = (agent.parent, agent.kind) else {
            continue;
        };
        let Some(last_end) = agent.turns.iter().map(|t| t.end()).max() else {
            continue;
        };
        let child_end = agent.recorded_end.unwrap_or(0).max(last_end);
        let joined = tree
            .agents
            .get(parent as usize)
            .is_some_and(|p| p.turns.iter().any(|t| t.start >= child_end));
        if !joined {
            problems.push(ProblemEntry {
                place: place(&agent.id),
                message: UNJOINED.into(),
            });
        }
    }
}

/// Most intervals `[start, end)` overlapping at one instant, and the first
/// instant it is reached. Empty intervals must be left out.
fn peak_concurrency(intervals: &mut [(Nanos, Nanos)]) -> (u64, Nanos) {
    // Ends sort before starts at the same instant: intervals are half-open.
    let mut events: Vec<(Nanos, bool)> = Vec::with_capacity(intervals.len() * 2);
    for &(start, end) in intervals.iter() {
        events.push((start, true));
        events.push((end, false));
    }
    events.sort_unstable();
    let (mut now, mut peak, mut at) = (0u64, 0u64, 0);
    for (time, is_start) in events {
        if is_start {
            now += 1;
            if now > peak {
                peak = now;
                at = time;
            }
        } else {
            now -= 1;
        }
    }
    (peak, at)
}

/// A block of the cache walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum BlockKey {
    /// A hash id of a tree whose ids are per tree.
    Local(u32, u32),
    /// A hash id of the corpus-wide id space.
    Global(u32),
    /// A text block hash (equal text is equal content in any tree).
    Text(u64),
}

/// FxHash-style hasher for the block set: fast, and determinism does not
/// matter because the set is only asked membership.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn write_isize(&mut self, v: isize) {
        self.write_u64(v as u64);
    }
}

/// Text blocks of one agent: per chain of extending turns, the hashes of
/// its full chunks; per turn, which chain, how many full chunks its prompt
/// covers, and its partial chunk.
#[derive(Default)]
struct AgentTextBlocks {
    chains: Vec<Vec<u64>>,
    turns: Vec<Option<(u32, u32, Option<u64>)>>,
}

impl AgentTextBlocks {
    fn of(agent: &arbor_engine::model::Agent) -> Self {
        let mut out = AgentTextBlocks::default();
        let mut hasher: Option<TextBlockHasher> = None;
        for (i, turn) in agent.turns.iter().enumerate() {
            let Some(text) = turn.text.as_deref() else {
                if let Some(h) = hasher.take() {
                    out.chains.push(h.into_full_blocks());
                }
                out.turns.push(None);
                continue;
            };
            let previous = i
                .checked_sub(1)
                .and_then(|p| agent.turns[p].text.as_deref());
            match (text.extends_previous, previous, hasher.as_mut()) {
                (true, Some(previous), Some(h)) => {
                    if previous.response.is_some() || !previous.response_calls.is_empty() {
                        h.push_with_calls(
                            Role::Assistant,
                            previous.response.as_deref().unwrap_or(""),
                            &previous.response_calls,
                        );
                    }
                }
                _ => {
                    if let Some(h) = hasher.replace(TextBlockHasher::new()) {
                        out.chains.push(h.into_full_blocks());
                    }
                }
            }
            let h = hasher.as_mut().expect("a chain is open");
            for m in &text.messages {
                h.push_with_calls(m.role, &m.content, m.calls());
            }
            out.turns.push(Some((
                out.chains.len() as u32,
                h.full_blocks().len() as u32,
                h.partial_block(),
            )));
        }
        if let Some(h) = hasher {
            out.chains.push(h.into_full_blocks());
        }
        out
    }
}

/// Walks every turn in recorded time order and counts blocks seen before.
fn prefix_cache(trees: &[&Tree]) -> PrefixCache {
    let mut order: Vec<(Nanos, u32, u32, u32)> = Vec::new();
    for (t, tree) in trees.iter().enumerate() {
        for (a, agent) in tree.agents.iter().enumerate() {
            for (i, turn) in agent.turns.iter().enumerate() {
                order.push((
                    tree.arrival.saturating_add(turn.start),
                    t as u32,
                    a as u32,
                    i as u32,
                ));
            }
        }
    }
    order.sort_unstable();
    // Text blocks, for trees with any text turn without hash ids.
    let text: Vec<Option<Vec<AgentTextBlocks>>> = trees
        .iter()
        .map(|tree| {
            let wanted = tree
                .agents
                .iter()
                .flat_map(|a| a.turns.iter())
                .any(|t| t.hash_ids.is_empty() && t.text.is_some());
            wanted.then(|| tree.agents.iter().map(AgentTextBlocks::of).collect())
        })
        .collect();

    let mut seen: HashSet<BlockKey, BuildHasherDefault<FxHasher>> = HashSet::default();
    let (mut blocks, mut hits) = (0u64, 0u64);
    let (mut used_ids, mut used_text) = (false, false);
    let mut visit = |key: BlockKey| {
        blocks += 1;
        if !seen.insert(key) {
            hits += 1;
        }
    };
    for (_, t, a, i) in order {
        let tree = trees[t as usize];
        let turn = &tree.agents[a as usize].turns[i as usize];
        if !turn.hash_ids.is_empty() {
            used_ids = true;
            for id in turn.hash_ids.iter() {
                visit(match tree.hash_scope {
                    HashScope::Local => BlockKey::Local(t, id),
                    HashScope::Global => BlockKey::Global(id),
                });
            }
        } else if let Some(agents) = &text[t as usize] {
            let agent = &agents[a as usize];
            if let Some((chain, full, partial)) = agent.turns[i as usize] {
                used_text = true;
                for &hash in &agent.chains[chain as usize][..full as usize] {
                    visit(BlockKey::Text(hash));
                }
                if let Some(hash) = partial {
                    visit(BlockKey::Text(hash));
                }
            }
        }
    }
    let basis = match (used_ids, used_text) {
        (true, true) => "hash ids and text blocks",
        (true, false) => "hash ids",
        (false, true) => "text blocks",
        (false, false) => "none",
    };
    PrefixCache {
        basis: basis.into(),
        blocks,
        hits,
        hit_ratio: (blocks > 0).then(|| hits as f64 / blocks as f64),
    }
}

/// Problems listed in the human summary; the JSON has all of them.
pub const PROBLEMS_SHOWN: usize = 20;

impl Inspection {
    /// The human summary `arbor inspect` prints.
    pub fn write_human(&self, out: &mut impl Write) -> io::Result<()> {
        let names: Vec<String> = self
            .inputs
            .iter()
            .map(|i| format!("{} ({})", i.path, i.format.as_deref().unwrap_or("?")))
            .collect();
        writeln!(out, "arbor inspect: {}", names.join(", "))?;
        for input in &self.inputs {
            writeln!(
                out,
                "  input           {}: {} trees, {} agents, {} turns",
                input.path, input.trees, input.agents, input.turns
            )?;
            for c in &input.conventions {
                writeln!(out, "                    {c}")?;
            }
        }
        let k = &self.agent_kinds;
        writeln!(
            out,
            "  workload        {} trees, {} agents ({} root, {} blocking, {} background), max depth {}, {} turns",
            self.trees, self.agents, k.root, k.blocking, k.background, self.max_depth, self.turns
        )?;
        writeln!(out, "  ISL (tokens)    {}", self.isl)?;
        writeln!(out, "  OSL (tokens)    {}", self.osl)?;
        writeln!(
            out,
            "  gaps            {} edges: {}",
            self.gap.count, self.gap
        )?;
        writeln!(
            out,
            "  durations       {} known, {} unknown: {}",
            self.recorded_duration.count, self.unknown_durations, self.recorded_duration
        )?;
        writeln!(out, "  recorded span   {:.3} s", self.recorded_span_s)?;
        writeln!(
            out,
            "  peak in flight  {} turns at {:.3} s (recorded)",
            self.peak_concurrency, self.peak_concurrency_at_s
        )?;
        let a = &self.adjustments;
        writeln!(
            out,
            "  adjustments     {} overlaps rounded ({:.3} s), {} overlaps kept concurrent, {} unknown durations, {} unjoined children",
            a.overlaps_rounded, a.overlap_rounded_s, a.overlaps_kept, a.unknown_durations, a.unjoined_children
        )?;
        writeln!(
            out,
            "  estimated       {} turns with token counts estimated from text",
            self.tokens_estimated
        )?;
        let c = &self.prefix_cache;
        match c.hit_ratio {
            Some(ratio) => writeln!(
                out,
                "  prefix cache    {:.1}% of {} blocks hit ({} hits; {}, infinite cache)",
                ratio * 100.0,
                c.blocks,
                c.hits,
                c.basis
            )?,
            None => writeln!(out, "  prefix cache    no blocks (no hash ids or text)")?,
        }
        for (i, line) in self.links.human_lines().iter().enumerate() {
            let label = if i == 0 { "links" } else { "" };
            writeln!(out, "  {label:<15} {line}")?;
        }
        if self.problems.is_empty() {
            writeln!(out, "  problems        none")?;
        } else {
            writeln!(out, "  problems        {}", self.problems.len())?;
            for p in self.problems.iter().take(PROBLEMS_SHOWN) {
                writeln!(out, "    {}: {}", p.place, p.message)?;
            }
            if self.problems.len() > PROBLEMS_SHOWN {
                writeln!(
                    out,
                    "    ... and {} more (all of them with --json)",
                    self.problems.len() - PROBLEMS_SHOWN
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Format, Problem};
    use arbor_engine::model::{Agent, Message, Turn, TurnText};
    use arbor_engine::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn turn(start: Nanos, duration: Option<Nanos>) -> Turn {
        Turn {
            start,
            duration,
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

    fn tree(id: &str, arrival: Nanos, agents: Vec<Agent>) -> Tree {
        Tree {
            id: id.into(),
            source: format!("{id}.json"),
            arrival,
            agents,
            ..Tree::default()
        }
    }

    fn loaded(trees: Vec<Tree>) -> Loaded {
        Loaded {
            path: "in.jsonl".into(),
            format: Some(Format::Arbor),
            trees,
            ..Loaded::default()
        }
    }

    const TOL0: DeriveOptions = DeriveOptions {
        overlap_tolerance: 0,
    };

    #[test]
    fn peak_concurrency_counts_half_open_intervals() {
        // Tree a (arrival 10 s): root [0,10), child [2,5) and [5,8),
        // child [4,6). Tree b (arrival 13 s): [0,2) i.e. [13,15) absolute,
        // and an unknown duration at 2 s (never in flight).
        let a = tree(
            "a",
            10 * S,
            vec![
                agent("r", None, AgentKind::Root, vec![turn(0, Some(10 * S))]),
                agent(
                    "c1",
                    Some(0),
                    AgentKind::Background,
                    vec![turn(2 * S, Some(3 * S)), turn(5 * S, Some(3 * S))],
                ),
                agent(
                    "c2",
                    Some(0),
                    AgentKind::Background,
                    vec![turn(4 * S, Some(2 * S))],
                ),
            ],
        );
        let b = tree(
            "b",
            13 * S,
            vec![agent(
                "r",
                None,
                AgentKind::Root,
                vec![turn(0, Some(2 * S)), turn(2 * S, None)],
            )],
        );
        let i = inspect(&[loaded(vec![a, b])], &TOL0);
        // At 14 s (from the earliest arrival, 10 s: 4 s): root, c1 turn 0,
        // c2 and b's turn: 4. c1's turns touch at 5 s without overlapping.
        assert_eq!(i.peak_concurrency, 4);
        assert_eq!(i.peak_concurrency_at_s, 4.0);
        assert_eq!(i.recorded_span_s, 10.0);
        assert_eq!(i.unknown_durations, 1);
        assert_eq!(i.recorded_duration.count, 5);
        assert_eq!(i.turns, 6);
        assert_eq!(i.trees, 2);
    }

    #[test]
    fn touching_intervals_do_not_overlap() {
        let mut intervals = vec![(0, 5), (5, 10), (10, 15)];
        assert_eq!(peak_concurrency(&mut intervals), (1, 0));
        let mut intervals = vec![(0, 5), (4, 10), (4, 6)];
        assert_eq!(peak_concurrency(&mut intervals), (3, 4));
        assert_eq!(peak_concurrency(&mut []), (0, 0));
    }

    #[test]
    fn max_depth_and_agent_kinds() {
        let t = tree(
            "t",
            0,
            vec![
                agent("r", None, AgentKind::Root, vec![turn(0, Some(1))]),
                agent("c", Some(0), AgentKind::Blocking, vec![turn(2, Some(1))]),
                agent("g", Some(1), AgentKind::Background, vec![turn(4, Some(1))]),
                agent("h", Some(2), AgentKind::Blocking, vec![turn(6, Some(1))]),
                agent("d", Some(0), AgentKind::Blocking, vec![turn(8, Some(1))]),
            ],
        );
        let flat = tree(
            "f",
            0,
            vec![agent("r", None, AgentKind::Root, vec![turn(0, Some(1))])],
        );
        let i = inspect(&[loaded(vec![flat.clone()])], &TOL0);
        assert_eq!(i.max_depth, 0);
        let i = inspect(&[loaded(vec![flat, t])], &TOL0);
        assert_eq!(i.max_depth, 3);
        assert_eq!(
            i.agent_kinds,
            AgentKinds {
                root: 2,
                blocking: 3,
                background: 1
            }
        );
        assert_eq!(i.agents, 6);
        // Every blocking child ends after the root's only turn: none is
        // joined, and each is reported with its place.
        let unjoined: Vec<&str> = i
            .problems
            .iter()
            .filter(|p| p.message == UNJOINED)
            .map(|p| p.place.as_str())
            .collect();
        assert_eq!(
            unjoined,
            vec![
                "t.json: tree `t`, agent `c`",
                "t.json: tree `t`, agent `h`",
                "t.json: tree `t`, agent `d`"
            ]
        );
        assert_eq!(i.adjustments.unjoined_children, 3);
    }

    #[test]
    fn gaps_are_the_end_anchored_edges() {
        // Root [0,10) then [15,20); child spawned at 12 joined by turn 1:
        // spawn gap 2, child [12,13), join gap 2, sequence gap 5.
        // A third root turn at 19 overlaps turn 1 by 1 s: a Start edge
        // from turn 1 (not a gap), and an End edge from turn 0 (gap 9),
        // which only a Start edge reaches.
        let t = tree(
            "t",
            0,
            vec![
                agent(
                    "r",
                    None,
                    AgentKind::Root,
                    vec![
                        turn(0, Some(10 * S)),
                        turn(15 * S, Some(5 * S)),
                        turn(19 * S, Some(S)),
                    ],
                ),
                agent(
                    "c",
                    Some(0),
                    AgentKind::Blocking,
                    vec![turn(12 * S, Some(S))],
                ),
            ],
        );
        let i = inspect(&[loaded(vec![t.clone()])], &TOL0);
        // Gaps 2, 2, 5, 9.
        assert_eq!(i.gap.count, 4);
        assert_eq!((i.gap.p50, i.gap.p90, i.gap.max), (2 * S, 9 * S, 9 * S));
        assert_eq!(i.gap.mean, 4.5 * S as f64);
        assert_eq!(i.adjustments.overlaps_kept, 1);
        // With a 1 s tolerance the overlap is rounded: one more gap, of 0.
        let i = inspect(&[loaded(vec![t])], &DeriveOptions::default());
        assert_eq!(i.gap.count, 5);
        assert_eq!((i.gap.p50, i.gap.max), (2 * S, 9 * S));
        assert_eq!(i.gap.mean, 3_600_000_000.0);
        assert_eq!(i.adjustments.overlaps_rounded, 1);
        assert_eq!(i.adjustments.overlap_rounded_s, 1.0);
    }

    fn ids_tree(id: &str, arrival: Nanos, scope: HashScope, ids: &[&[u32]]) -> Tree {
        let turns = ids
            .iter()
            .enumerate()
            .map(|(n, ids)| Turn {
                start: n as Nanos * 10,
                duration: Some(1),
                hash_ids: (*ids).into(),
                ..Turn::default()
            })
            .collect();
        Tree {
            hash_scope: scope,
            ..tree(id, arrival, vec![agent("r", None, AgentKind::Root, turns)])
        }
    }

    #[test]
    fn cache_hits_respect_the_hash_scope() {
        // Each tree: [1,2] then [1,2,3]: 2 hits of 5 within the tree.
        let turns: &[&[u32]] = &[&[1, 2], &[1, 2, 3]];
        let local = inspect(
            &[loaded(vec![
                ids_tree("a", 0, HashScope::Local, turns),
                ids_tree("b", 100, HashScope::Local, turns),
            ])],
            &TOL0,
        );
        assert_eq!(
            local.prefix_cache,
            PrefixCache {
                basis: "hash ids".into(),
                blocks: 10,
                hits: 4,
                hit_ratio: Some(0.4)
            }
        );
        // Global: tree b's 5 blocks were all seen in tree a.
        let global = inspect(
            &[loaded(vec![
                ids_tree("a", 0, HashScope::Global, turns),
                ids_tree("b", 100, HashScope::Global, turns),
            ])],
            &TOL0,
        );
        assert_eq!(
            (global.prefix_cache.blocks, global.prefix_cache.hits),
            (10, 7)
        );
    }

    #[test]
    fn cache_walk_follows_time_not_tree_order() {
        // Global scope. Tree b arrives first and sends [7]; tree a later
        // sends [7, 8]; tree a is listed first. In time order: b's 7 is a
        // miss, a's 7 a hit, 8 a miss.
        let a = ids_tree("a", 50, HashScope::Global, &[&[7, 8]]);
        let b = ids_tree("b", 0, HashScope::Global, &[&[7]]);
        let i = inspect(&[loaded(vec![a, b])], &TOL0);
        assert_eq!((i.prefix_cache.blocks, i.prefix_cache.hits), (3, 1));
    }

    fn text_turn(start: Nanos, extends: bool, content: &str, response: &str) -> Turn {
        Turn {
            start,
            duration: Some(1),
            text: Some(Box::new(TurnText {
                extends_previous: extends,
                messages: vec![Message::text(Role::User, content)],
                response: Some(response.into()),
                ..Default::default()
            })),
            ..Turn::default()
        }
    }

    #[test]
    fn text_blocks_are_shared_across_trees() {
        // Prompt 1: "user\n" + 600 bytes + "\0" = 606 bytes: 3 blocks.
        // Prompt 2 extends it by an assistant message: its 2 full chunks
        // hit, the third chunk (now full) and the rest miss.
        let long = "p".repeat(600);
        let t = |id: &str, arrival| {
            tree(
                id,
                arrival,
                vec![agent(
                    "r",
                    None,
                    AgentKind::Root,
                    vec![
                        text_turn(0, false, &long, "ok"),
                        text_turn(10, true, "more", "done"),
                    ],
                )],
            )
        };
        let one = inspect(&[loaded(vec![t("a", 0)])], &TOL0);
        let c = &one.prefix_cache;
        assert_eq!(c.basis, "text blocks");
        // Prompt 2: 606 + "assistant\nok\0" (13) + "user\nmore\0" (10) =
        // 629 bytes: 3 blocks, the first 2 hits.
        assert_eq!((c.blocks, c.hits), (6, 2));
        // A second tree with the same text hits every block, whatever the
        // trees' scope: equal text is equal content.
        let two = inspect(&[loaded(vec![t("a", 0), t("b", 100)])], &TOL0);
        assert_eq!((two.prefix_cache.blocks, two.prefix_cache.hits), (12, 8));
    }

    #[test]
    fn incremental_text_blocks_equal_whole_prompt_hashes() {
        let long = "q".repeat(300);
        let mut turns = vec![
            text_turn(0, false, &long, &long),
            text_turn(1, true, "a", "b"),
            text_turn(2, false, "fresh", "c"),
            Turn::default(),
            text_turn(4, true, &long, "d"),
            text_turn(5, true, "e", "f"),
        ];
        turns[3].start = 3;
        let a = agent("r", None, AgentKind::Root, turns);
        let blocks = AgentTextBlocks::of(&a);
        for i in 0..a.turns.len() {
            let expected = arbor_engine::content::text_block_hashes(
                &arbor_engine::content::prompt_messages(&a, i),
            );
            let got = blocks.turns[i].map(|(chain, full, partial)| {
                let mut v = blocks.chains[chain as usize][..full as usize].to_vec();
                v.extend(partial);
                v
            });
            assert_eq!(got.unwrap_or_default(), expected, "turn {i}");
        }
    }

    #[test]
    fn reader_problems_and_inputs_are_reported() {
        let mut input = loaded(vec![ids_tree("a", 0, HashScope::Local, &[&[1]])]);
        input.conventions.push("hash ids from 1".into());
        input.problems.push(Problem {
            place: "in.jsonl:line 3".into(),
            message: "tokens estimated".into(),
        });
        let i = inspect(&[input], &TOL0);
        assert_eq!(i.inputs.len(), 1);
        assert_eq!(i.inputs[0].format.as_deref(), Some("arbor"));
        assert_eq!((i.inputs[0].trees, i.inputs[0].turns), (1, 1));
        assert_eq!(
            i.problems,
            vec![ProblemEntry {
                place: "in.jsonl:line 3".into(),
                message: "tokens estimated".into()
            }]
        );
        let json = serde_json::to_value(&i).unwrap();
        assert_eq!(json["isl"]["count"], 1);
        assert!(json["gap"]["p50_s"].is_number());
        let mut text = Vec::new();
        i.write_human(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("hash ids from 1"), "{text}");
        assert!(text.contains("in.jsonl:line 3: tokens estimated"), "{text}");
    }

    #[test]
    fn a_cycle_in_stated_edges_is_a_problem_not_a_panic() {
        let mut t = ids_tree("a", 0, HashScope::Local, &[&[1], &[2]]);
        let e = |from, to| Edge {
            from,
            to,
            anchor: Anchor::End,
            gap: 0,
            kind: arbor_engine::model::EdgeKind::Sequence,
        };
        t.explicit_edges = Some(vec![e(0, 1), e(1, 0)]);
        let i = inspect(&[loaded(vec![t])], &TOL0);
        assert_eq!(i.problems.len(), 1);
        assert!(i.problems[0].message.contains("cycle"), "{:?}", i.problems);
        assert_eq!(i.gap.count, 2);
    }
}
