//! Inputs as read: what one input path held ([`Loaded`]), in which
//! [`Format`], and what its reader noticed ([`Problem`]).
//!
//! Owns these types only, so that modules which consume read inputs
//! (`inspect`) need not depend on the readers in `load`, which produce
//! them. Reading is `load`'s.

use std::fmt;
use std::str::FromStr;

use arbor_engine::error::PolicyError;
use arbor_engine::model::Tree;

/// The formats arbor reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Weka agentic-coding traces (kv-cache-tester, SemiAnalysis).
    Weka,
    /// Mooncake FAST'25 traces, with AIPerf's `session_id`/`delay` extension.
    Mooncake,
    /// Dynamo's agentic Mooncake rows with explicit `wait_for` edges.
    AgenticMooncake,
    /// agentic-bench session JSONL v1 (plain or `.zst`).
    Abench,
    /// Dynamo request traces (`dynamo.request.trace.v1`).
    Dynamo,
    /// LMCache agent traces (text, unix-µs timestamps).
    Lmcache,
    /// arbor's capture format of OpenAI chat requests and responses.
    OpenaiLog,
    /// arbor's native JSONL form.
    Arbor,
    /// TraceLab rounds (Claude Code and Codex sessions, one line a round).
    Tracelab,
    /// OpenTelemetry GenAI spans (an OTLP/JSON trace export).
    OtelGenai,
    /// AIPerf's agentic graph input (`dag_jsonl`).
    AiperfGraph,
}

impl Format {
    pub const ALL: [Format; 11] = [
        Format::Weka,
        Format::Mooncake,
        Format::AgenticMooncake,
        Format::Abench,
        Format::Dynamo,
        Format::Lmcache,
        Format::OpenaiLog,
        Format::Arbor,
        Format::Tracelab,
        Format::OtelGenai,
        Format::AiperfGraph,
    ];

    /// The name `--format` takes and reports show.
    pub fn name(self) -> &'static str {
        match self {
            Format::Weka => "weka",
            Format::Mooncake => "mooncake",
            Format::AgenticMooncake => "agentic-mooncake",
            Format::Abench => "abench",
            Format::Dynamo => "dynamo",
            Format::Lmcache => "lmcache",
            Format::OpenaiLog => "openai-log",
            Format::Arbor => "arbor",
            Format::Tracelab => "tracelab",
            Format::OtelGenai => "otel-genai",
            Format::AiperfGraph => "aiperf-graph",
        }
    }
}

impl FromStr for Format {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                PolicyError::new(format!(
                    "expected one of {}, got `{text}`",
                    names.join(", ")
                ))
            })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Something a reader adjusted, estimated or found odd, with its place
/// (`file`, `file:line N`, or a JSON path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub place: String,
    pub message: String,
}

/// What one input path held.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Loaded {
    pub path: String,
    pub format: Option<Format>,
    pub trees: Vec<Tree>,
    /// Conventions detected, in words (e.g. "subagent times: relative").
    pub conventions: Vec<String>,
    pub problems: Vec<Problem>,
}
