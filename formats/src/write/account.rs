//! The account of a conversion: what a writer kept, what it inferred
//! (synthesized ids, derived edges, renumbered blocks) and what its format
//! could not express (Mooncake has no subagents, formats without text drop
//! it, ...), each counted in trees, agents and turns affected.
//!
//! Owns the [`Account`] type, its JSON form (`arbor convert --json`,
//! versioned [`CONVERT_SCHEMA`]) and its human form. Writers add to it one
//! tree at a time through [`Account::note`]; what each entry means is the
//! writer's.

use std::io::{self, Write};

use schemars::JsonSchema;
use serde::Serialize;

use arbor_engine::model::{Agent, Tree, Turn};

/// The version `arbor convert --json` names (`schema_version`).
pub const CONVERT_SCHEMA: &str = "arbor.convert/1";

/// Which side of the account an entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Made up or derived by the writer (the reader gets it back, but it
    /// was not in the source as such).
    Inferred,
    /// Not expressible in the target: the reader gets it back changed or
    /// not at all.
    Lost,
}

/// One kind of change, as a writer states it: a stable key and its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// Stable identifier (`durations`, `subagents`, ...), for tools and
    /// tests.
    pub key: &'static str,
    /// What happens, in words.
    pub what: &'static str,
}

/// Trees, agents and turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
pub struct Counts {
    pub trees: u64,
    pub agents: u64,
    pub turns: u64,
}

/// One entry of the account: a kind of change and how much of the
/// workload it touched (a tree counts once however often it is noted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Entry {
    /// Stable identifier of the change (`durations`, `subagents`, ...).
    pub key: String,
    /// What happens, in words.
    pub what: String,
    /// Trees affected.
    pub trees: u64,
    /// Agents affected (0 when the change is about turns or the tree).
    pub agents: u64,
    /// Turns affected (0 when the change is about agents or the tree).
    pub turns: u64,
    /// The tree last counted, so a tree noted twice counts once.
    #[serde(skip)]
    #[schemars(skip)]
    last_tree: Option<u64>,
}

/// What one `arbor convert` wrote and what the target format made of it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(title = CONVERT_SCHEMA)]
pub struct Account {
    /// `arbor.convert/1`.
    #[schemars(extend("const" = CONVERT_SCHEMA))]
    pub schema_version: String,
    /// The format written (`--to`).
    pub target: String,
    /// The file or directory written (`-o`).
    pub output: String,
    /// Files written (one per tree for Weka).
    pub files: u64,
    /// What was written.
    pub written: Counts,
    /// What the target keeps as it was, in words.
    pub kept: Vec<String>,
    /// What the writer made up or derived.
    pub inferred: Vec<Entry>,
    /// What the target could not express.
    pub lost: Vec<Entry>,
    /// Trees written so far (the index of the next tree).
    #[serde(skip)]
    #[schemars(skip)]
    tree: u64,
}

impl Account {
    /// An empty account of a conversion to `target`, which keeps `kept`.
    pub fn new(target: &str, output: &str, kept: &[&str]) -> Self {
        Account {
            schema_version: CONVERT_SCHEMA.to_string(),
            target: target.to_string(),
            output: output.to_string(),
            files: 0,
            written: Counts::default(),
            kept: kept.iter().map(|k| k.to_string()).collect(),
            inferred: Vec::new(),
            lost: Vec::new(),
            tree: 0,
        }
    }

    /// Counts one tree written (its agents and turns); later notes are
    /// about it.
    pub fn tree_written(&mut self, agents: usize, turns: usize) {
        self.tree = self.written.trees;
        self.written.trees += 1;
        self.written.agents += agents as u64;
        self.written.turns += turns as u64;
    }

    /// Notes that `item` touched the current tree: `agents` agents and
    /// `turns` turns of it (0 and 0 for a change to the tree as a whole).
    /// Call it after [`Account::tree_written`] for that tree, only when the
    /// tree is affected.
    pub fn note(&mut self, side: Side, item: Item, agents: usize, turns: usize) {
        let tree = self.tree;
        let list = match side {
            Side::Inferred => &mut self.inferred,
            Side::Lost => &mut self.lost,
        };
        let entry = match list.iter_mut().position(|e| e.key == item.key) {
            Some(i) => &mut list[i],
            None => {
                list.push(Entry {
                    key: item.key.to_string(),
                    what: item.what.to_string(),
                    trees: 0,
                    agents: 0,
                    turns: 0,
                    last_tree: None,
                });
                let last = list.len() - 1;
                &mut list[last]
            }
        };
        if entry.last_tree != Some(tree) {
            entry.trees += 1;
            entry.last_tree = Some(tree);
        }
        entry.agents += agents as u64;
        entry.turns += turns as u64;
    }

    /// Notes `item` about the output as a whole: every tree written.
    pub fn note_file(&mut self, side: Side, item: Item) {
        let trees = self.written.trees;
        let list = match side {
            Side::Inferred => &mut self.inferred,
            Side::Lost => &mut self.lost,
        };
        list.retain(|e| e.key != item.key);
        list.push(Entry {
            key: item.key.to_string(),
            what: item.what.to_string(),
            trees,
            agents: 0,
            turns: 0,
            last_tree: None,
        });
    }

    /// [`Account::note`] on the lost side.
    pub fn lost(&mut self, item: Item, agents: usize, turns: usize) {
        self.note(Side::Lost, item, agents, turns);
    }

    /// [`Account::note`] on the inferred side.
    pub fn inferred(&mut self, item: Item, agents: usize, turns: usize) {
        self.note(Side::Inferred, item, agents, turns);
    }

    /// The entry of `key`, on either side.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.inferred
            .iter()
            .chain(&self.lost)
            .find(|e| e.key == key)
    }

    /// The keys of the lost side, in the order first noted.
    pub fn lost_keys(&self) -> Vec<&str> {
        self.lost.iter().map(|e| e.key.as_str()).collect()
    }

    /// The keys of the inferred side, in the order first noted.
    pub fn inferred_keys(&self) -> Vec<&str> {
        self.inferred.iter().map(|e| e.key.as_str()).collect()
    }

    /// The human form: what was written, then kept, inferred and lost,
    /// one entry a line with its counts.
    pub fn write_human(&self, out: &mut dyn Write) -> io::Result<()> {
        let w = &self.written;
        writeln!(
            out,
            "arbor convert: {} trees ({} agents, {} turns) written as {} to {}{}",
            w.trees,
            w.agents,
            w.turns,
            self.target,
            self.output,
            if self.files > 1 {
                format!(" ({} files)", self.files)
            } else {
                String::new()
            }
        )?;
        writeln!(out, "  kept      {}", self.kept.join("; "))?;
        for (label, list) in [("inferred", &self.inferred), ("lost", &self.lost)] {
            if list.is_empty() {
                writeln!(out, "  {label:<9} nothing")?;
                continue;
            }
            for (i, entry) in list.iter().enumerate() {
                let head = if i == 0 { label } else { "" };
                writeln!(
                    out,
                    "  {head:<9} {}: {} [{}]",
                    entry.key,
                    entry.what,
                    counts(entry)
                )?;
            }
        }
        Ok(())
    }
}

/// Turns of `tree` for which `f` holds.
pub fn turns_where(tree: &Tree, f: impl Fn(&Turn) -> bool) -> usize {
    tree.agents
        .iter()
        .flat_map(|a| a.turns.iter())
        .filter(|t| f(t))
        .count()
}

/// Agents of `tree` for which `f` holds.
pub fn agents_where(tree: &Tree, f: impl Fn(&Agent) -> bool) -> usize {
    tree.agents.iter().filter(|a| f(a)).count()
}

/// Notes `item` on `side` when `n` (agents if `agents`, else turns) is
/// not 0.
pub fn note_turns(account: &mut Account, side: Side, item: Item, turns: usize) {
    if turns > 0 {
        account.note(side, item, 0, turns);
    }
}

/// [`note_turns`] for agents.
pub fn note_agents(account: &mut Account, side: Side, item: Item, agents: usize) {
    if agents > 0 {
        account.note(side, item, agents, 0);
    }
}

/// Notes what no format but arbor's keeps: the links and times the
/// source's reader inferred (`Tree::provenance`), which the target's
/// reader then takes as stated.
pub fn note_provenance(account: &mut Account, tree: &Tree) {
    if tree.provenance.is_empty() {
        return;
    }
    let turns: u32 = tree.provenance.timing.iter().map(|r| r.turns).sum();
    account.lost(PROVENANCE, tree.provenance.parents.len(), turns as usize);
}

/// The item [`note_provenance`] notes.
pub const PROVENANCE: Item = Item {
    key: "provenance",
    what: "which parent links and turn times the source's reader inferred: not in the format, read back as stated",
};

/// `2 trees, 5 agents, 12 turns`, leaving out zero agents or turns.
fn counts(entry: &Entry) -> String {
    let mut parts = vec![plural(entry.trees, "tree")];
    if entry.agents > 0 {
        parts.push(plural(entry.agents, "agent"));
    }
    if entry.turns > 0 {
        parts.push(plural(entry.turns, "turn"));
    }
    parts.join(", ")
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: Item = Item {
        key: "text",
        what: "dropped",
    };
    const IDS: Item = Item {
        key: "ids",
        what: "made unique",
    };

    #[test]
    fn a_tree_counts_once_per_entry_and_agents_and_turns_add_up() {
        let mut account = Account::new("mooncake", "out.jsonl", &["isl and osl"]);
        account.tree_written(2, 5);
        account.lost(TEXT, 0, 3);
        account.lost(TEXT, 0, 2);
        account.inferred(IDS, 1, 0);
        account.tree_written(1, 1);
        account.lost(TEXT, 0, 1);
        assert_eq!(
            account.written,
            Counts {
                trees: 2,
                agents: 3,
                turns: 6
            }
        );
        let text = account.entry("text").expect("noted");
        assert_eq!((text.trees, text.agents, text.turns), (2, 0, 6));
        let ids = account.entry("ids").expect("noted");
        assert_eq!((ids.trees, ids.agents, ids.turns), (1, 1, 0));
        assert_eq!(account.lost_keys(), ["text"]);
        let mut human = Vec::new();
        account.write_human(&mut human).unwrap();
        let human = String::from_utf8(human).unwrap();
        assert_eq!(
            human,
            "arbor convert: 2 trees (3 agents, 6 turns) written as mooncake to out.jsonl\n  kept      isl and osl\n  inferred  ids: made unique [1 tree, 1 agent]\n  lost      text: dropped [2 trees, 6 turns]\n"
        );
        let json = serde_json::to_value(&account).unwrap();
        assert_eq!(json["schema_version"], CONVERT_SCHEMA);
        assert_eq!(json["lost"][0]["turns"], 6);
        assert!(json["lost"][0].get("last_tree").is_none());
    }
}
