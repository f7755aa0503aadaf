//! Synthetic workloads: agentic sessions drawn from a small spec.
//!
//! Owns [`SyntheticSpec`]: its textual form (`--synthetic
//! trees=100,turns=20,depth=2,seed=7`), its file form (`.toml` or `.json`
//! with the same keys) and the generator that turns it into a [`Workload`].
//!
//! # Keys
//!
//! Counts are whole numbers, probabilities are in `[0, 1]`, means are finite
//! and `>= 0`. Every key is optional; the default is given in parentheses.
//!
//! - `trees` (10): number of trees, at least 1.
//! - `turns` (20): nominal turns of each root agent, at least 1.
//! - `child_turns` (8): nominal turns of each subagent, at least 1. An
//!   agent's actual count is drawn uniformly in `[max(1, n/2), n*3/2]`
//!   (integer division), so sizes vary.
//! - `depth` (1): maximum nesting depth of subagents (0 = no subagents, at
//!   most 32).
//! - `spawn` (0.15): probability that a turn (not the last) of an agent at a
//!   depth below `depth` spawns children once it completes.
//! - `fanout` (3): maximum children per spawn; each spawn draws `1..=fanout`.
//! - `background` (0.1): probability that a spawned child is `Background`
//!   (never joined) rather than `Blocking`.
//! - `isl` (2000): prompt tokens of every agent's first turn (capped at
//!   `max_isl`).
//! - `isl_growth` (600): mean tokens added per later turn: the prompt grows
//!   like a conversation, `isl_n = isl_{n-1} + osl_{n-1} + exp(isl_growth)`.
//! - `max_isl` (200000): cap on any prompt.
//! - `osl` (300): mean output tokens (exponential, at least 1).
//! - `ttft_ms` (400), `itl_ms` (20): a turn's recorded duration is
//!   `ttft_ms + osl * itl_ms`; its recorded TTFT is `ttft_ms`.
//! - `unknown` (0.0): probability that a turn's duration (and TTFT) is
//!   recorded as unknown (`None`). The session itself still took the time.
//! - `think` (0.1): probability that a later turn's input is user text, with
//!   a gap drawn exponential with mean `think_ms` (8000); otherwise it is a
//!   tool result with a gap of mean `tool_ms` (1500).
//! - `zero_gap` (0.05): probability that such a gap is exactly 0.
//! - `overlap` (0.0): probability that a later turn starts *before* its
//!   predecessor ended: at a uniform point strictly inside the predecessor's
//!   service time (a client sending while another request still streams).
//!   Never used for the turn that joins blocking children.
//! - `arrival_s` (5.0): mean inter-arrival of trees in seconds (exponential;
//!   tree 0 arrives at 0; 0 puts every tree at 0).
//! - `hash_ids` (false): when true every turn gets `floor(isl/64)`
//!   prefix-hash block ids (`block_size` 64, else 0). A turn's ids extend its
//!   predecessor's in the same agent; a subagent's first turn starts with a
//!   short prefix (up to 8 blocks) shared by every subagent of the tree (its
//!   system prompt), then fresh ids. Ids are `u32`, unique per tree, from 1.
//! - `seed` (1): seed of every draw.
//!
//! Times of every mean (`*_ms`) are at most a day (`arrival_s` at most
//! 86400); token means at most 1e9.
//!
//! # The recording
//!
//! Each tree is built the way a real session would have happened, so the
//! happens-before edges derived from it (semantics section 2) replay every
//! recorded start exactly: the root's turn 0 starts at 0; a later turn starts
//! at the latest end of the agent's earlier turns plus its gap (or inside the
//! predecessor when it overlaps); children spawned after turn `k` start at
//! `end(k)` plus an exponential spawn gap (mean 200 ms each); the parent's
//! turn `k+1` starts no earlier than the latest end of the blocking children
//! spawned at `k` plus an exponential join gap (mean 500 ms). Background
//! children delay nothing and may outlive their parent. A child's
//! `recorded_end` is the latest end of its own turns.
//!
//! Draws come from one `rand_pcg` stream per tree (`Purpose::Synthetic`,
//! tree index) plus one stream for arrivals, so tree `i` does not depend on
//! how many trees are generated. The model holds no floats: draws are turned
//! into integer nanoseconds and tokens at once.

use std::path::Path;
use std::str::FromStr;

use rand::{Rng, RngCore};
use rand_distr::Exp1;
use rand_pcg::Pcg64;

use arbor_engine::error::{InputError, PolicyError};
use arbor_engine::model::{Agent, AgentKind, BlockIds, HashScope, InputKind, Tree, Turn, Workload};
use arbor_engine::rng::{self, Purpose};
use arbor_engine::time::{Nanos, NANOS_PER_MS, NANOS_PER_SEC};

/// Tokens per hash block when `hash_ids` is on.
const BLOCK_SIZE: u32 = 64;
/// Mean gap from a parent turn's end to a spawned child's first turn.
const SPAWN_GAP_MS: f64 = 200.0;
/// Mean gap from the last blocking child's end to the parent's next turn.
const JOIN_GAP_MS: f64 = 500.0;
/// Blocks of the subagent prefix shared by every subagent of a tree.
const SUBAGENT_PREFIX_BLOCKS: usize = 8;
/// Stream coordinate of the arrival stream (no tree has this index).
const ARRIVAL_STREAM: u64 = u64::MAX;
const MAX_DEPTH: u32 = 32;
const MAX_AGENT_TURNS: u32 = 1_000_000;
const MAX_FANOUT: u32 = 10_000;
const MAX_MS: f64 = 86_400_000.0;
const MAX_SECONDS: f64 = 86_400.0;
const MAX_TOKENS: f64 = 1.0e9;

/// Every key, in canonical order (the order of [`SyntheticSpec::to_spec_string`]).
const KEYS: [&str; 22] = [
    "trees",
    "turns",
    "child_turns",
    "depth",
    "spawn",
    "fanout",
    "background",
    "isl",
    "isl_growth",
    "max_isl",
    "osl",
    "ttft_ms",
    "itl_ms",
    "unknown",
    "think",
    "think_ms",
    "tool_ms",
    "zero_gap",
    "overlap",
    "arrival_s",
    "hash_ids",
    "seed",
];

/// What a synthetic workload looks like; see the module docs for each key.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    pub trees: u32,
    pub turns: u32,
    pub child_turns: u32,
    pub depth: u32,
    pub spawn: f64,
    pub fanout: u32,
    pub background: f64,
    pub isl: u32,
    pub isl_growth: f64,
    pub max_isl: u32,
    pub osl: f64,
    pub ttft_ms: f64,
    pub itl_ms: f64,
    pub unknown: f64,
    pub think: f64,
    pub think_ms: f64,
    pub tool_ms: f64,
    pub zero_gap: f64,
    pub overlap: f64,
    pub arrival_s: f64,
    pub hash_ids: bool,
    pub seed: u64,
}

/// What a synthetic workload would hold ([`SyntheticSpec::estimate`]):
/// expectations of the spec's draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub trees: u32,
    pub turns: f64,
    pub bytes: f64,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec {
            trees: 10,
            turns: 20,
            child_turns: 8,
            depth: 1,
            spawn: 0.15,
            fanout: 3,
            background: 0.1,
            isl: 2000,
            isl_growth: 600.0,
            max_isl: 200_000,
            osl: 300.0,
            ttft_ms: 400.0,
            itl_ms: 20.0,
            unknown: 0.0,
            think: 0.1,
            think_ms: 8000.0,
            tool_ms: 1500.0,
            zero_gap: 0.05,
            overlap: 0.0,
            arrival_s: 5.0,
            hash_ids: false,
            seed: 1,
        }
    }
}

/// Why one `key=value` could not be applied.
enum SetError {
    Unknown,
    Bad(String),
}

fn unknown_key_message(key: &str) -> String {
    format!("unknown key `{key}`; expected one of {}", KEYS.join(", "))
}

fn parse_count(value: &str, min: u32, max: u32) -> Result<u32, SetError> {
    match value.parse::<u64>() {
        Ok(n) if n >= u64::from(min) && n <= u64::from(max) => Ok(n as u32),
        _ => Err(SetError::Bad(format!(
            "expected a whole number in [{min}, {max}], got {value}"
        ))),
    }
}

fn parse_probability(value: &str) -> Result<f64, SetError> {
    match value.parse::<f64>() {
        // `+ 0.0` turns -0 into 0 so the printed form is canonical.
        Ok(p) if p.is_finite() && (0.0..=1.0).contains(&p) => Ok(p + 0.0),
        _ => Err(SetError::Bad(format!(
            "expected a probability in [0, 1], got {value}"
        ))),
    }
}

fn parse_mean(value: &str, max: f64, what: &str) -> Result<f64, SetError> {
    match value.parse::<f64>() {
        Ok(m) if m.is_finite() && (0.0..=max).contains(&m) => Ok(m + 0.0),
        _ => Err(SetError::Bad(format!(
            "expected a mean number of {what} in [0, {max}], got {value}"
        ))),
    }
}

fn parse_bool(value: &str) -> Result<bool, SetError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(SetError::Bad(format!(
            "expected true or false, got {value}"
        ))),
    }
}

impl SyntheticSpec {
    /// Applies one `key=value`, validating the value.
    fn set(&mut self, key: &str, value: &str) -> Result<(), SetError> {
        let value = value.trim();
        match key {
            "trees" => self.trees = parse_count(value, 1, u32::MAX)?,
            "turns" => self.turns = parse_count(value, 1, MAX_AGENT_TURNS)?,
            "child_turns" => self.child_turns = parse_count(value, 1, MAX_AGENT_TURNS)?,
            "depth" => self.depth = parse_count(value, 0, MAX_DEPTH)?,
            "spawn" => self.spawn = parse_probability(value)?,
            "fanout" => self.fanout = parse_count(value, 1, MAX_FANOUT)?,
            "background" => self.background = parse_probability(value)?,
            "isl" => self.isl = parse_count(value, 1, u32::MAX)?,
            "isl_growth" => self.isl_growth = parse_mean(value, MAX_TOKENS, "tokens")?,
            "max_isl" => self.max_isl = parse_count(value, 1, u32::MAX)?,
            "osl" => self.osl = parse_mean(value, MAX_TOKENS, "tokens")?,
            "ttft_ms" => self.ttft_ms = parse_mean(value, MAX_MS, "milliseconds")?,
            "itl_ms" => self.itl_ms = parse_mean(value, MAX_MS, "milliseconds")?,
            "unknown" => self.unknown = parse_probability(value)?,
            "think" => self.think = parse_probability(value)?,
            "think_ms" => self.think_ms = parse_mean(value, MAX_MS, "milliseconds")?,
            "tool_ms" => self.tool_ms = parse_mean(value, MAX_MS, "milliseconds")?,
            "zero_gap" => self.zero_gap = parse_probability(value)?,
            "overlap" => self.overlap = parse_probability(value)?,
            "arrival_s" => self.arrival_s = parse_mean(value, MAX_SECONDS, "seconds")?,
            "hash_ids" => self.hash_ids = parse_bool(value)?,
            "seed" => {
                self.seed = value.parse::<u64>().map_err(|_| {
                    SetError::Bad(format!(
                        "expected a whole number in [0, {}], got {value}",
                        u64::MAX
                    ))
                })?
            }
            _ => return Err(SetError::Unknown),
        }
        Ok(())
    }

    /// The value of a key in its canonical textual form.
    fn get(&self, key: &str) -> String {
        match key {
            "trees" => self.trees.to_string(),
            "turns" => self.turns.to_string(),
            "child_turns" => self.child_turns.to_string(),
            "depth" => self.depth.to_string(),
            "spawn" => self.spawn.to_string(),
            "fanout" => self.fanout.to_string(),
            "background" => self.background.to_string(),
            "isl" => self.isl.to_string(),
            "isl_growth" => self.isl_growth.to_string(),
            "max_isl" => self.max_isl.to_string(),
            "osl" => self.osl.to_string(),
            "ttft_ms" => self.ttft_ms.to_string(),
            "itl_ms" => self.itl_ms.to_string(),
            "unknown" => self.unknown.to_string(),
            "think" => self.think.to_string(),
            "think_ms" => self.think_ms.to_string(),
            "tool_ms" => self.tool_ms.to_string(),
            "zero_gap" => self.zero_gap.to_string(),
            "overlap" => self.overlap.to_string(),
            "arrival_s" => self.arrival_s.to_string(),
            "hash_ids" => self.hash_ids.to_string(),
            "seed" => self.seed.to_string(),
            _ => unreachable!("get is only called with names from KEYS"),
        }
    }

    /// The canonical `k=v,...` form: every key, in a fixed order. It parses
    /// back to an equal spec (floats print in their shortest exact form).
    pub fn to_spec_string(&self) -> String {
        let mut out = String::with_capacity(320);
        for (i, key) in KEYS.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(key);
            out.push('=');
            out.push_str(&self.get(key));
        }
        out
    }

    /// Checks every field as the parser would (for specs built in code).
    pub fn validate(&self) -> Result<(), PolicyError> {
        let mut scratch = self.clone();
        for key in KEYS {
            if let Err(SetError::Bad(message)) = scratch.set(key, &self.get(key)) {
                return Err(PolicyError::new(format!("{key}: {message}")));
            }
        }
        Ok(())
    }

    /// Reads a spec from a `.toml` or `.json` file holding the same keys as
    /// the textual form (numbers as numbers, `hash_ids` as a boolean; strings
    /// are accepted too). Unknown keys are errors naming the key.
    pub fn from_file(path: &Path) -> Result<Self, InputError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::whole(&file, format!("cannot read synthetic spec: {e}")))?;
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        // (place, key, value as text or why it is not a scalar)
        let entries: Vec<(String, String, Result<String, String>)> = match extension.as_deref() {
            Some("toml") => {
                let table: toml::Table = toml::from_str(&text)
                    .map_err(|e| InputError::whole(&file, format!("not valid TOML: {e}")))?;
                table
                    .into_iter()
                    .map(|(key, value)| {
                        let value = match value {
                            toml::Value::String(s) => Ok(s),
                            toml::Value::Integer(n) => Ok(n.to_string()),
                            toml::Value::Float(x) => Ok(x.to_string()),
                            toml::Value::Boolean(b) => Ok(b.to_string()),
                            other => Err(format!(
                                "expected a number or a boolean, got a {}",
                                other.type_str()
                            )),
                        };
                        (key.clone(), key, value)
                    })
                    .collect()
            }
            Some("json") => {
                let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                    InputError::at(
                        &file,
                        format!("line {}", e.line()),
                        format!("not valid JSON: {e}"),
                    )
                })?;
                let serde_json::Value::Object(map) = value else {
                    return Err(InputError::at(
                        &file,
                        "$",
                        "expected a JSON object of key: value",
                    ));
                };
                map.into_iter()
                    .map(|(key, value)| {
                        let value = match value {
                            serde_json::Value::String(s) => Ok(s),
                            serde_json::Value::Number(n) => Ok(n.to_string()),
                            serde_json::Value::Bool(b) => Ok(b.to_string()),
                            _ => Err("expected a number or a boolean".to_string()),
                        };
                        (format!("$.{key}"), key, value)
                    })
                    .collect()
            }
            _ => {
                return Err(InputError::whole(
                    &file,
                    "expected a synthetic spec ending in .toml or .json",
                ))
            }
        };
        let mut spec = SyntheticSpec::default();
        for (place, key, value) in entries {
            let value = value.map_err(|message| InputError::at(&file, &place, message))?;
            match spec.set(&key, &value) {
                Ok(()) => {}
                Err(SetError::Unknown) => {
                    return Err(InputError::at(&file, &place, unknown_key_message(&key)))
                }
                Err(SetError::Bad(message)) => return Err(InputError::at(&file, &place, message)),
            }
        }
        Ok(spec)
    }

    /// What [`generate`](Self::generate) would make, before making it:
    /// the expected agents and turns of a tree from the spec's draws (an
    /// agent's turns are uniform in `n/2..=3n/2`; each turn but the last
    /// spawns, below `depth`, with chance `spawn`, `1..=fanout` children),
    /// times `trees`. Bytes count a [`Tree`], an [`Agent`] and a [`Turn`]
    /// each (their inline sizes; ids and hash-id runs are small beside
    /// them). In `f64`, so no count overflows: a huge spec is `inf`.
    pub fn estimate(&self) -> Estimate {
        use std::mem::size_of;
        let mean_turns = |nominal: u32| {
            let low = (nominal / 2).max(1);
            let high = (nominal * 3 / 2).max(low);
            (f64::from(low) + f64::from(high)) / 2.0
        };
        let children_per_spawn = (1.0 + f64::from(self.fanout.max(1))) / 2.0;
        // (agents, turns) of an agent and its descendants, deepest first.
        let mut below = (0.0, 0.0);
        for depth in (0..=self.depth).rev() {
            let nominal = if depth == 0 {
                self.turns
            } else {
                self.child_turns
            };
            let turns = mean_turns(nominal);
            let spawned = if depth < self.depth {
                (turns - 1.0).max(0.0) * self.spawn * children_per_spawn
            } else {
                0.0
            };
            below = (1.0 + spawned * below.0, turns + spawned * below.1);
        }
        let trees = f64::from(self.trees);
        let (agents, turns) = (below.0 * trees, below.1 * trees);
        Estimate {
            trees: self.trees,
            turns,
            bytes: trees * size_of::<Tree>() as f64
                + agents * size_of::<Agent>() as f64
                + turns * size_of::<Turn>() as f64,
        }
    }

    /// Generates the workload. Deterministic in the spec; tree `i` depends
    /// only on the spec's parameters and seed, not on `trees`.
    pub fn generate(&self) -> Workload {
        let params = Params::new(self);
        let source = format!("synthetic:{}", self.to_spec_string());
        let mut arrivals = rng::stream(self.seed, Purpose::Synthetic, ARRIVAL_STREAM, 0, 0);
        let mut trees = Vec::with_capacity(self.trees as usize);
        let mut arrival: Nanos = 0;
        for index in 0..self.trees {
            if index > 0 {
                arrival = arrival.saturating_add(draw_exp(&mut arrivals, params.arrival_mean_ns));
            }
            trees.push(params.tree(index, arrival, &source));
        }
        Workload { trees }
    }
}

impl FromStr for SyntheticSpec {
    type Err = PolicyError;

    /// Parses `key=value` pairs separated by commas; missing keys keep their
    /// defaults. An empty string is the default spec.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut spec = SyntheticSpec::default();
        let mut seen = [false; KEYS.len()];
        for item in s.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(PolicyError::new(format!(
                    "expected key=value, got `{item}`"
                )));
            };
            let key = key.trim();
            match spec.set(key, value) {
                Ok(()) => {}
                Err(SetError::Unknown) => return Err(PolicyError::new(unknown_key_message(key))),
                Err(SetError::Bad(message)) => {
                    return Err(PolicyError::new(format!("{key}: {message}")))
                }
            }
            let slot = KEYS
                .iter()
                .position(|k| *k == key)
                .expect("set accepted a key from KEYS");
            if std::mem::replace(&mut seen[slot], true) {
                return Err(PolicyError::new(format!("{key}: given twice")));
            }
        }
        Ok(spec)
    }
}

/// A probability, precomputed for a single `u64` comparison (and no draw
/// at all for 0 or 1).
#[derive(Debug, Clone, Copy)]
enum Chance {
    Never,
    Always,
    Below(u64),
}

impl Chance {
    fn new(p: f64) -> Self {
        if p.is_nan() || p <= 0.0 {
            Chance::Never
        } else if p >= 1.0 {
            Chance::Always
        } else {
            // 2^64 * p, below 2^64 since p < 1.
            Chance::Below((p * 18_446_744_073_709_551_616.0) as u64)
        }
    }

    fn hit(self, rng: &mut Pcg64) -> bool {
        match self {
            Chance::Never => false,
            Chance::Always => true,
            Chance::Below(threshold) => rng.next_u64() < threshold,
        }
    }
}

/// An exponential draw with the given mean, rounded to an integer (ns or
/// tokens). A mean of 0 (or an invalid one) gives 0 without drawing.
fn draw_exp(rng: &mut Pcg64, mean: f64) -> u64 {
    if mean.is_nan() || mean <= 0.0 {
        return 0;
    }
    let x: f64 = rng.sample(Exp1);
    // `as` saturates: an absurd draw cannot wrap.
    (x * mean).round() as u64
}

fn ms_to_ns(ms: f64) -> f64 {
    if ms.is_finite() && ms > 0.0 {
        ms * NANOS_PER_MS as f64
    } else {
        0.0
    }
}

/// The spec in the form the generator uses: integers and thresholds, means
/// in ns or tokens. Tolerates an unvalidated spec (clamps instead of
/// panicking).
struct Params {
    turns: u32,
    child_turns: u32,
    depth: u32,
    spawn: Chance,
    fanout: u32,
    background: Chance,
    isl0: u64,
    isl_growth: f64,
    max_isl: u64,
    osl_mean: f64,
    ttft_ns: Nanos,
    itl_ns: Nanos,
    unknown: Chance,
    think: Chance,
    think_mean_ns: f64,
    tool_mean_ns: f64,
    zero_gap: Chance,
    overlap: Chance,
    arrival_mean_ns: f64,
    spawn_mean_ns: f64,
    join_mean_ns: f64,
    hash_ids: bool,
    seed: u64,
}

impl Params {
    fn new(spec: &SyntheticSpec) -> Self {
        let max_isl = u64::from(spec.max_isl.max(1));
        Params {
            turns: spec.turns.clamp(1, MAX_AGENT_TURNS),
            child_turns: spec.child_turns.clamp(1, MAX_AGENT_TURNS),
            depth: spec.depth.min(MAX_DEPTH),
            spawn: Chance::new(spec.spawn),
            fanout: spec.fanout.clamp(1, MAX_FANOUT),
            background: Chance::new(spec.background),
            isl0: u64::from(spec.isl.max(1)).min(max_isl),
            isl_growth: spec.isl_growth,
            max_isl,
            osl_mean: spec.osl,
            ttft_ns: ms_to_ns(spec.ttft_ms).round() as Nanos,
            itl_ns: ms_to_ns(spec.itl_ms).round() as Nanos,
            unknown: Chance::new(spec.unknown),
            think: Chance::new(spec.think),
            think_mean_ns: ms_to_ns(spec.think_ms),
            tool_mean_ns: ms_to_ns(spec.tool_ms),
            zero_gap: Chance::new(spec.zero_gap),
            overlap: Chance::new(spec.overlap),
            arrival_mean_ns: if spec.arrival_s.is_finite() && spec.arrival_s > 0.0 {
                spec.arrival_s * NANOS_PER_SEC as f64
            } else {
                0.0
            },
            spawn_mean_ns: ms_to_ns(SPAWN_GAP_MS),
            join_mean_ns: ms_to_ns(JOIN_GAP_MS),
            hash_ids: spec.hash_ids,
            seed: spec.seed,
        }
    }

    fn tree(&self, index: u32, arrival: Nanos, source: &str) -> Tree {
        let mut builder = TreeBuilder {
            params: self,
            rng: rng::stream(self.seed, Purpose::Synthetic, u64::from(index), 0, 0),
            tree: index,
            agents: Vec::with_capacity(if self.depth == 0 { 1 } else { 8 }),
            next_id: 1,
            subagent_prefix: Vec::new(),
        };
        builder.agent(None, AgentKind::Root, 0, 0);
        Tree {
            id: format!("t{index}"),
            source: source.to_string(),
            arrival,
            agents: builder.agents,
            explicit_edges: None,
            models: vec!["synthetic".to_string()],
            block_size: if self.hash_ids { BLOCK_SIZE } else { 0 },
            hash_scope: HashScope::Local,
            tool_tokens: 0,
            system_tokens: 0,
            provenance: Default::default(),
            shapes: Vec::new(),
        }
    }
}

/// The state of one tree being generated.
struct TreeBuilder<'a> {
    params: &'a Params,
    rng: Pcg64,
    tree: u32,
    agents: Vec<Agent>,
    /// Next fresh hash block id.
    next_id: u32,
    /// Ids every subagent's first turn starts with, minted at first use.
    subagent_prefix: Vec<u32>,
}

impl TreeBuilder<'_> {
    fn fresh_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    /// Generates one agent starting at `start` (and, recursively, the
    /// children it spawns); returns the latest end of its own turns.
    fn agent(&mut self, parent: Option<u32>, kind: AgentKind, depth: u32, start: Nanos) -> Nanos {
        let p = self.params;
        let index = self.agents.len();
        self.agents.push(Agent {
            id: format!("t{}.a{}", self.tree, index),
            parent,
            kind,
            recorded_end: None,
            turns: Vec::new(),
        });

        let nominal = if depth == 0 { p.turns } else { p.child_turns };
        let count = self
            .rng
            .random_range((nominal / 2).max(1)..=nominal * 3 / 2) as usize;
        let mut turns: Vec<Turn> = Vec::with_capacity(count);
        let mut ids: Vec<u32> = Vec::new();

        let mut isl = p.isl0;
        let mut prev_osl: u64 = 0;
        let mut prev_start = start;
        let mut prev_duration: Nanos = 0;
        // Latest end of any turn so far (true times, known or not).
        let mut latest_end = start;
        // When blocking children spawned after the previous turn let the
        // agent go on (their latest end plus the join gap).
        let mut join_at: Option<Nanos> = None;

        for i in 0..count {
            let (turn_start, input_kind) = if i == 0 {
                (start, InputKind::UserText)
            } else {
                let growth = draw_exp(&mut self.rng, p.isl_growth);
                isl = isl
                    .saturating_add(prev_osl)
                    .saturating_add(growth)
                    .min(p.max_isl);
                let think = p.think.hit(&mut self.rng);
                let input_kind = if think {
                    InputKind::UserText
                } else {
                    InputKind::ToolResult
                };
                let overlaps =
                    join_at.is_none() && prev_duration >= 2 && p.overlap.hit(&mut self.rng);
                let turn_start = if overlaps {
                    prev_start + self.rng.random_range(1..prev_duration)
                } else {
                    let gap = if p.zero_gap.hit(&mut self.rng) {
                        0
                    } else {
                        let mean = if think {
                            p.think_mean_ns
                        } else {
                            p.tool_mean_ns
                        };
                        draw_exp(&mut self.rng, mean)
                    };
                    latest_end.saturating_add(gap).max(join_at.unwrap_or(0))
                };
                (turn_start, input_kind)
            };

            let osl = draw_exp(&mut self.rng, p.osl_mean).clamp(1, u64::from(u32::MAX));
            let duration = p.ttft_ns.saturating_add(osl.saturating_mul(p.itl_ns));
            let known = !p.unknown.hit(&mut self.rng);

            let hash_ids: BlockIds = if p.hash_ids {
                let blocks = (isl / u64::from(BLOCK_SIZE)) as usize;
                if i == 0 && depth > 0 {
                    let shared = blocks.min(SUBAGENT_PREFIX_BLOCKS);
                    while self.subagent_prefix.len() < shared {
                        let id = self.fresh_id();
                        self.subagent_prefix.push(id);
                    }
                    ids.extend_from_slice(&self.subagent_prefix[..shared]);
                }
                // Prompts never shrink, so this only ever appends.
                while ids.len() < blocks {
                    let id = self.fresh_id();
                    ids.push(id);
                }
                ids.as_slice().into()
            } else {
                BlockIds::default()
            };

            let end = turn_start.saturating_add(duration);
            latest_end = latest_end.max(end);
            turns.push(Turn {
                start: turn_start,
                duration: known.then_some(duration),
                isl: isl as u32,
                osl: osl as u32,
                ttft: known.then_some(p.ttft_ns),
                model: Some(0),
                input_kind,
                hash_ids,
                text: None,
                tokens_estimated: false,
            });
            prev_start = turn_start;
            prev_duration = duration;
            prev_osl = osl;
            join_at = None;

            if i + 1 < count && depth < p.depth && p.spawn.hit(&mut self.rng) {
                let children = self.rng.random_range(1..=p.fanout);
                let mut blocking_end: Option<Nanos> = None;
                for _ in 0..children {
                    let kind = if p.background.hit(&mut self.rng) {
                        AgentKind::Background
                    } else {
                        AgentKind::Blocking
                    };
                    let child_start = end.saturating_add(draw_exp(&mut self.rng, p.spawn_mean_ns));
                    let child_end = self.agent(Some(index as u32), kind, depth + 1, child_start);
                    if kind == AgentKind::Blocking {
                        blocking_end = Some(blocking_end.map_or(child_end, |e| e.max(child_end)));
                    }
                }
                join_at =
                    blocking_end.map(|e| e.saturating_add(draw_exp(&mut self.rng, p.join_mean_ns)));
            }
        }

        let agent = &mut self.agents[index];
        agent.turns = turns;
        if depth > 0 {
            agent.recorded_end = Some(latest_end);
        }
        latest_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> SyntheticSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn depth_of(tree: &Tree, agent: usize) -> usize {
        let mut depth = 0;
        let mut at = agent;
        while let Some(parent) = tree.agents[at].parent {
            at = parent as usize;
            depth += 1;
        }
        depth
    }

    fn all_turns(w: &Workload) -> impl Iterator<Item = &Turn> {
        w.trees
            .iter()
            .flat_map(|t| t.agents.iter())
            .flat_map(|a| a.turns.iter())
    }

    #[test]
    fn same_spec_gives_same_workload() {
        let s = spec("trees=20,depth=2,spawn=0.3,hash_ids=true,overlap=0.2,unknown=0.1");
        let a = s.generate();
        assert_eq!(a, s.generate());
        assert!(a.turn_count() > 20);
    }

    #[test]
    fn different_seed_gives_different_workload() {
        let a = spec("trees=5,seed=1").generate();
        let b = spec("trees=5,seed=2").generate();
        assert_ne!(a.trees[0].agents, b.trees[0].agents);
        assert_ne!(a, b);
    }

    #[test]
    fn trees_do_not_depend_on_tree_count() {
        let ten = spec("trees=10,seed=7,depth=2,spawn=0.3").generate();
        let twenty = spec("trees=20,seed=7,depth=2,spawn=0.3").generate();
        assert_eq!(twenty.trees.len(), 20);
        for (a, b) in ten.trees.iter().zip(&twenty.trees) {
            // `source` names the spec, which differs in `trees`.
            assert_eq!(a.agents, b.agents);
            assert_eq!(a.arrival, b.arrival);
            assert_eq!(a.id, b.id);
        }
    }

    #[test]
    fn spec_string_round_trips() {
        let default = SyntheticSpec::default();
        assert_eq!(spec(&default.to_spec_string()), default);
        assert_eq!(spec(""), default);

        let custom = spec(
            "trees=100, turns=3,child_turns=1,depth=4,spawn=0.333,fanout=7,background=1,\
             isl=17,isl_growth=0.1,max_isl=99,osl=12.5,ttft_ms=0,itl_ms=0.001,unknown=0.25,\
             think=1e-3,think_ms=123456.789,tool_ms=0.3,zero_gap=0,overlap=0.7,\
             arrival_s=0.1,hash_ids=true,seed=18446744073709551615",
        );
        assert_eq!(custom.trees, 100);
        assert_eq!(custom.spawn, 0.333);
        assert_eq!(custom.seed, u64::MAX);
        assert!(custom.hash_ids);
        let printed = custom.to_spec_string();
        assert_eq!(spec(&printed), custom);
        assert_eq!(spec(&printed).to_spec_string(), printed);
        assert!(printed.starts_with("trees=100,turns=3,child_turns=1,depth=4,spawn=0.333,"));
        assert!(custom.validate().is_ok());
    }

    #[test]
    fn bad_specs_are_rejected_naming_the_key() {
        let cases = [
            ("color=blue", "color"),
            ("spawn=2", "spawn: expected a probability in [0, 1], got 2"),
            ("turns=0", "turns: expected a whole number"),
            ("isl=abc", "isl: expected a whole number"),
            ("trees", "`trees`"),
            ("trees=5,seed", "`seed`"),
            ("think_ms=-1", "think_ms"),
            ("osl=NaN", "osl"),
            ("arrival_s=inf", "arrival_s"),
            ("hash_ids=yes", "hash_ids: expected true or false"),
            ("depth=33", "depth"),
            ("trees=1,trees=2", "trees: given twice"),
        ];
        for (text, needle) in cases {
            let err = text.parse::<SyntheticSpec>().expect_err(text);
            let shown = err.to_string();
            assert!(!shown.starts_with("--"), "no flag spelling: {shown}");
            assert!(shown.contains(needle), "{text}: `{shown}` lacks `{needle}`");
        }
        assert_eq!(
            "spawn=1.5"
                .parse::<SyntheticSpec>()
                .unwrap_err()
                .to_string(),
            "spawn: expected a probability in [0, 1], got 1.5"
        );
        let bad = SyntheticSpec {
            overlap: -0.5,
            ..SyntheticSpec::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("overlap"));
    }

    #[test]
    fn tree_fields_and_arrivals() {
        let s = spec("trees=30,arrival_s=2");
        let w = s.generate();
        assert_eq!(w.trees.len(), 30);
        assert_eq!(w.trees[0].arrival, 0);
        assert!(w.trees.windows(2).all(|p| p[0].arrival <= p[1].arrival));
        assert!(w.trees.last().unwrap().arrival > 0);
        for (i, tree) in w.trees.iter().enumerate() {
            assert_eq!(tree.id, format!("t{i}"));
            assert_eq!(tree.source, format!("synthetic:{}", s.to_spec_string()));
            assert_eq!(tree.models, vec!["synthetic".to_string()]);
            assert_eq!(tree.block_size, 0);
            assert_eq!(tree.explicit_edges, None);
            assert_eq!(tree.agents[0].kind, AgentKind::Root);
            assert_eq!(tree.agents[0].recorded_end, None);
            assert_eq!(tree.agents[0].turns[0].start, 0);
            for (a, agent) in tree.agents.iter().enumerate() {
                assert_eq!(agent.id, format!("t{i}.a{a}"));
                assert_eq!(agent.turns[0].input_kind, InputKind::UserText);
                assert!(agent
                    .turns
                    .iter()
                    .all(|t| t.model == Some(0) && t.hash_ids.is_empty()));
            }
        }
        let together = spec("trees=5,arrival_s=0").generate();
        assert!(together.trees.iter().all(|t| t.arrival == 0));
    }

    #[test]
    fn turn_counts_tokens_and_durations() {
        let s = spec(
            "trees=20,turns=10,child_turns=4,spawn=0.5,isl=1000,max_isl=9000,ttft_ms=100,itl_ms=2",
        );
        let w = s.generate();
        let mut capped = false;
        for tree in &w.trees {
            for agent in &tree.agents {
                let range = if agent.parent.is_none() {
                    5..=15
                } else {
                    2..=6
                };
                assert!(range.contains(&agent.turns.len()), "{}", agent.turns.len());
                assert_eq!(agent.turns[0].isl, 1000);
                for pair in agent.turns.windows(2) {
                    let grown = (pair[0].isl + pair[0].osl).min(9000);
                    assert!(pair[1].isl >= grown && pair[1].isl <= 9000);
                    capped |= pair[1].isl == 9000;
                }
            }
        }
        assert!(capped, "prompts should reach max_isl");
        for turn in all_turns(&w) {
            assert!(turn.osl >= 1);
            assert_eq!(
                turn.duration,
                Some(100 * NANOS_PER_MS + turn.osl as u64 * 2 * NANOS_PER_MS)
            );
            assert_eq!(turn.ttft, Some(100 * NANOS_PER_MS));
        }
        let kinds: Vec<InputKind> = all_turns(&w).map(|t| t.input_kind).collect();
        assert!(kinds.contains(&InputKind::ToolResult));
        assert!(kinds.contains(&InputKind::UserText));
    }

    #[test]
    fn depth_zero_has_only_roots() {
        let w = spec("trees=20,depth=0,spawn=1").generate();
        assert!(w.trees.iter().all(|t| t.agents.len() == 1));
    }

    #[test]
    fn depth_two_reaches_two_and_no_deeper() {
        let w = spec("trees=5,depth=2,spawn=1.0,turns=6,child_turns=4").generate();
        let mut deepest = 0;
        for tree in &w.trees {
            for (i, agent) in tree.agents.iter().enumerate() {
                if let Some(parent) = agent.parent {
                    assert!((parent as usize) < i);
                    assert_ne!(agent.kind, AgentKind::Root);
                    assert!(agent.recorded_end.is_some());
                } else {
                    assert_eq!(i, 0);
                }
                deepest = deepest.max(depth_of(tree, i));
            }
        }
        assert_eq!(deepest, 2);
    }

    #[test]
    fn background_probability_decides_child_kind() {
        let none = spec("trees=10,spawn=0.5,background=0").generate();
        let all = spec("trees=10,spawn=0.5,background=1").generate();
        let kinds = |w: &Workload| -> Vec<AgentKind> {
            w.trees
                .iter()
                .flat_map(|t| t.agents[1..].iter().map(|a| a.kind))
                .collect()
        };
        let (none, all) = (kinds(&none), kinds(&all));
        assert!(!none.is_empty() && !all.is_empty());
        assert!(none.iter().all(|k| *k == AgentKind::Blocking));
        assert!(all.iter().all(|k| *k == AgentKind::Background));
    }

    #[test]
    fn recording_is_consistent() {
        for text in [
            "trees=10,depth=3,spawn=0.4,background=0.3,think=0.5",
            "trees=10,depth=2,spawn=0.5,overlap=0.5,unknown=0.3,zero_gap=0.5",
        ] {
            let w = spec(text).generate();
            for tree in &w.trees {
                for agent in &tree.agents {
                    assert!(
                        agent.turns.windows(2).all(|p| p[0].start <= p[1].start),
                        "{text}"
                    );
                    let Some(parent) = agent.parent else { continue };
                    let parent = &tree.agents[parent as usize];
                    let first = agent.turns[0].start;
                    let end = agent.recorded_end.unwrap();
                    assert!(agent.turns.iter().all(|t| t.end() <= end));
                    // Spawned after some parent turn completed.
                    assert!(parent.turns.iter().any(|t| t.end() <= first));
                    if agent.kind == AgentKind::Blocking {
                        // Joined by a parent turn after its spawn: the first
                        // parent turn at/after its end comes right after the
                        // last parent turn before its start.
                        let before = parent.turns.iter().rposition(|t| t.start < first).unwrap();
                        let joined = parent.turns.iter().position(|t| t.start >= end);
                        assert_eq!(joined, Some(before + 1), "{text}");
                        assert!(parent.turns[before].end() <= first);
                    }
                }
            }
        }
    }

    #[test]
    fn overlap_zero_is_sequential_and_one_overlaps() {
        let w = spec("trees=10,depth=2,spawn=0.3,overlap=0").generate();
        for agent in w.trees.iter().flat_map(|t| &t.agents) {
            assert!(agent.turns.windows(2).all(|p| p[1].start >= p[0].end()));
        }
        let w = spec("trees=10,depth=2,spawn=0.3,overlap=1").generate();
        let overlapping = w
            .trees
            .iter()
            .flat_map(|t| &t.agents)
            .flat_map(|a| a.turns.windows(2))
            .filter(|p| p[1].start < p[0].end())
            .count();
        assert!(overlapping > 0);
    }

    #[test]
    fn unknown_one_records_no_durations() {
        let w = spec("trees=5,spawn=0.5,unknown=1").generate();
        assert!(all_turns(&w).all(|t| t.duration.is_none() && t.ttft.is_none()));
        let w = spec("trees=5,spawn=0.5,unknown=0").generate();
        assert!(all_turns(&w).all(|t| t.duration.is_some()));
    }

    #[test]
    fn hash_ids_are_prefix_chained() {
        let w = spec("trees=5,depth=2,spawn=0.5,hash_ids=true,overlap=0.3").generate();
        let mut child_prefix: Option<Vec<u32>> = None;
        for tree in &w.trees {
            assert_eq!(tree.block_size, 64);
            let mut all: Vec<u32> = Vec::new();
            for agent in &tree.agents {
                for turn in &agent.turns {
                    assert_eq!(turn.hash_ids.len(), (turn.isl / 64) as usize);
                    all.extend(turn.hash_ids.iter());
                }
                for pair in agent.turns.windows(2) {
                    assert!(pair[1].hash_ids.starts_with(&pair[0].hash_ids));
                }
                if agent.parent.is_some() {
                    let prefix: Vec<u32> = agent.turns[0].hash_ids.iter().take(8).collect();
                    let root = tree.agents[0].turns[0].hash_ids.to_vec();
                    assert!(!root.contains(&prefix[0]), "subagent prefix is fresh");
                    // Every subagent of the tree shares the same prefix.
                    match &child_prefix {
                        Some(seen) => assert_eq!(seen, &prefix),
                        None => child_prefix = Some(prefix),
                    }
                }
            }
            child_prefix = None;
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.first(), Some(&1));
            // Ids count from 1 without holes.
            assert_eq!(*all.last().unwrap() as usize, all.len());
        }
    }

    fn temp_path(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("arbor-synthetic-{}-{name}", std::process::id()))
    }

    #[test]
    fn spec_files_round_trip() {
        let expected = spec("trees=3,spawn=0.5,osl=250.5,hash_ids=true,seed=9,arrival_s=0");
        let toml_path = temp_path("spec.toml");
        std::fs::write(
            &toml_path,
            "trees = 3\nspawn = 0.5\nosl = 250.5\nhash_ids = true\nseed = 9\narrival_s = 0\n",
        )
        .unwrap();
        let json_path = temp_path("spec.json");
        std::fs::write(
            &json_path,
            r#"{"trees": 3, "spawn": 0.5, "osl": 250.5, "hash_ids": true, "seed": 9, "arrival_s": 0.0}"#,
        )
        .unwrap();
        let from_toml = SyntheticSpec::from_file(&toml_path);
        let from_json = SyntheticSpec::from_file(&json_path);
        std::fs::remove_file(&toml_path).unwrap();
        std::fs::remove_file(&json_path).unwrap();
        assert_eq!(from_toml.unwrap(), expected);
        assert_eq!(from_json.unwrap(), expected);
    }

    #[test]
    fn spec_file_errors_name_file_and_key() {
        for (name, text, needles) in [
            (
                "bad.toml",
                "trees = 3\ncolour = 1\n",
                &["bad.toml", "colour"][..],
            ),
            (
                "bad.json",
                r#"{"trees": 3, "colour": 1}"#,
                &["bad.json", "$.colour"][..],
            ),
            (
                "bad2.json",
                r#"{"spawn": 1.5}"#,
                &["bad2.json", "spawn", "probability"][..],
            ),
            ("bad2.toml", "depth = [1]\n", &["bad2.toml", "depth"][..]),
            (
                "bad.yaml",
                "trees: 3\n",
                &["bad.yaml", ".toml or .json"][..],
            ),
        ] {
            let path = temp_path(name);
            std::fs::write(&path, text).unwrap();
            let result = SyntheticSpec::from_file(&path);
            std::fs::remove_file(&path).unwrap();
            let shown = result.expect_err(name).to_string();
            for needle in needles {
                assert!(shown.contains(needle), "`{shown}` lacks `{needle}`");
            }
        }
        let missing = SyntheticSpec::from_file(&temp_path("missing.toml")).unwrap_err();
        assert!(missing.to_string().contains("missing.toml"));
    }

    /// `cargo test --release -p arbor-formats --lib synthetic -- --ignored`
    #[test]
    #[ignore = "timing: meaningful in release mode only"]
    fn a_million_turns_generate_quickly() {
        let s = spec("trees=2000,turns=500,depth=0");
        let started = std::time::Instant::now();
        let w = s.generate();
        let took = started.elapsed();
        assert!(w.turn_count() >= 900_000, "{}", w.turn_count());
        assert!(
            took.as_millis() < 500,
            "{} turns took {took:?}",
            w.turn_count()
        );
    }

    #[test]
    fn the_estimate_is_near_what_is_generated() {
        for text in [
            "trees=50,turns=20,child_turns=8,depth=1,spawn=0.15,fanout=3,seed=4",
            "trees=40,depth=2,spawn=1.0,turns=6,child_turns=4,seed=2",
            "trees=30,depth=0,turns=9",
        ] {
            let spec = spec(text);
            let estimate = spec.estimate();
            let made: usize = spec
                .generate()
                .trees
                .iter()
                .flat_map(|t| &t.agents)
                .map(|a| a.turns.len())
                .sum();
            let ratio = estimate.turns / made as f64;
            assert!(
                (0.7..1.4).contains(&ratio),
                "{text}: {estimate:?} vs {made}"
            );
        }
        // A billion trees is estimated, not generated.
        let huge = spec("trees=1000000000").estimate();
        assert!(huge.turns > 1e10 && huge.bytes > 1e12, "{huge:?}");
        let deepest = spec(
            "trees=4294967295,turns=1000000,child_turns=1000000,depth=32,spawn=1,fanout=10000",
        )
        .estimate();
        assert!(deepest.bytes > 1e30, "{deepest:?}");
    }
}
