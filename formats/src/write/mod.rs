//! Writers: from trees to files of another format (`arbor convert --to`).
//!
//! Owns the conversion targets ([`Target`]), the writer interface
//! ([`TreeWriter`], one tree at a time so a corpus streams), and the
//! [`Account`] every conversion produces: what the target kept, what the
//! writer inferred and what the format could not express, counted. One
//! module per target format, sharing nothing format-specific: `weka`,
//! `mooncake`, `agentic_mooncake`, `dynamo`, `aiperf_graph`; `arbor`'s
//! lines are the native reader's own writer (`load::arbor::write_tree`,
//! which the facade calls; this module has only its account). Each writes
//! what arbor's reader of that format reads back. Shared helpers that know
//! no format: `names.rs` (ids unique in one output) and `edges.rs` (a
//! tree's edges, stated or derived, and starts as a reader rebuilds them).
//! Writers must not read (this module never uses `load`).

pub mod account;
pub mod agentic_mooncake;
pub mod aiperf_graph;
pub mod arbor;
pub mod dynamo;
pub mod edges;
pub mod mooncake;
pub mod names;
pub mod weka;

use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use arbor_engine::model::Tree;

pub use account::{Account, Counts, Entry, Item, Side, CONVERT_SCHEMA};

use crate::input::Format;

/// The formats arbor writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    Arbor,
    Weka,
    Mooncake,
    AgenticMooncake,
    Dynamo,
    AiperfGraph,
}

impl Target {
    pub const ALL: [Target; 6] = [
        Target::Arbor,
        Target::Weka,
        Target::Mooncake,
        Target::AgenticMooncake,
        Target::Dynamo,
        Target::AiperfGraph,
    ];

    /// The format written, as `--format` names it (the reader that reads
    /// the output back).
    pub fn format(self) -> Format {
        match self {
            Target::Arbor => Format::Arbor,
            Target::Weka => Format::Weka,
            Target::Mooncake => Format::Mooncake,
            Target::AgenticMooncake => Format::AgenticMooncake,
            Target::Dynamo => Format::Dynamo,
            Target::AiperfGraph => Format::AiperfGraph,
        }
    }

    /// The name `--to` takes.
    pub fn name(self) -> &'static str {
        self.format().name()
    }

    /// Whether the output is a directory of one file per tree (Weka)
    /// rather than one file.
    pub fn file_per_tree(self) -> bool {
        self == Target::Weka
    }

    /// What the target keeps as it was, in words.
    pub fn kept(self) -> &'static [&'static str] {
        match self {
            Target::Arbor => arbor::KEPT,
            Target::Weka => weka::KEPT,
            Target::Mooncake => mooncake::KEPT,
            Target::AgenticMooncake => agentic_mooncake::KEPT,
            Target::Dynamo => dynamo::KEPT,
            Target::AiperfGraph => aiperf_graph::KEPT,
        }
    }

    /// A fresh writer of this target, for every target but arbor, whose
    /// lines the native reader's writer makes (the facade pairs it with
    /// [`arbor::account`]).
    pub fn writer(self) -> Option<Box<dyn TreeWriter>> {
        match self {
            Target::Arbor => None,
            Target::Weka => Some(Box::new(weka::Writer::default())),
            Target::Mooncake => Some(Box::new(mooncake::Writer::default())),
            Target::AgenticMooncake => Some(Box::new(agentic_mooncake::Writer::default())),
            Target::Dynamo => Some(Box::new(dynamo::Writer::default())),
            Target::AiperfGraph => Some(Box::new(aiperf_graph::Writer::default())),
        }
    }
}

impl FromStr for Target {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Target::ALL
            .into_iter()
            .find(|t| t.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
                format!("expected one of {}, got `{text}`", names.join(", "))
            })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Writes trees in one format, one tree at a time, and says in the
/// account what each tree lost or needed inferring.
pub trait TreeWriter {
    /// The file name of `tree` inside the output directory, for targets
    /// of one file per tree; `None` for one-file targets.
    fn tree_file(&mut self, _tree: &Tree) -> Option<String> {
        None
    }

    /// Writes `tree` to `out`. The account has counted the tree already
    /// ([`Account::tree_written`]); the writer notes what it changed.
    fn write_tree(
        &mut self,
        tree: &Tree,
        out: &mut dyn Write,
        account: &mut Account,
    ) -> io::Result<()>;

    /// After the last tree: notes what concerns the file as a whole.
    fn finish(&mut self, _account: &mut Account) {}
}

/// Writes a JSON string (quoted and escaped).
pub(crate) fn write_str(out: &mut dyn Write, text: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, text).map_err(io::Error::other)
}

/// `ns` as a decimal number of `unit`s (1e6 for ms, 1e9 for s), exact:
/// trailing zeros trimmed, `X.0` for a whole number when `whole_dot`.
pub(crate) fn decimal(ns: u64, unit: u64) -> String {
    let digits = unit.ilog10() as usize;
    let (whole, frac) = (ns / unit, ns % unit);
    if frac == 0 {
        return whole.to_string();
    }
    let text = format!("{frac:0digits$}");
    format!("{whole}.{}", text.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_by_name_and_name_their_reader() {
        for target in Target::ALL {
            assert_eq!(target.name().parse::<Target>(), Ok(target));
            assert_eq!(target.format().name(), target.name());
            assert_eq!(target.writer().is_none(), target == Target::Arbor);
            assert!(!target.kept().is_empty());
        }
        let err = "abench".parse::<Target>().unwrap_err();
        assert_eq!(
            err,
            "expected one of arbor, weka, mooncake, agentic-mooncake, dynamo, aiperf-graph, got `abench`"
        );
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal(1_500_000, 1_000_000), "1.5");
        assert_eq!(decimal(3_000_000, 1_000_000), "3");
        assert_eq!(decimal(1, 1_000_000), "0.000001");
        assert_eq!(decimal(1_234_567_891, 1_000_000_000), "1.234567891");
    }
}
