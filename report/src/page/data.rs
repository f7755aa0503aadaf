//! The page's data model: what one source gives the page to draw. A source
//! is a run directory ([`super::run_dir`]) or a plan run on the virtual
//! clock ([`super::plan`]); both fill the same [`RunPage`], and what a
//! plan does not have (latency distributions, errors, cache hits) is
//! absent rather than zero. Owns the shape only; builds nothing.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::cdf::Cdf;
use super::lanes::Lanes;
use super::planned::PlannedLoad;
use super::series::Series;
use super::server::ServerSeries;

/// Where a page's data came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A run directory: measured.
    Run,
    /// `arbor plan --report`: the plan on its virtual clock, nothing sent.
    Plan,
}

/// Everything the page shows of one source.
#[derive(Debug, Serialize)]
pub struct RunPage {
    pub source: Source,
    /// The directory's name (`plan` for a plan), and its path as given
    /// (the inputs for a plan).
    pub name: String,
    pub path: String,
    /// `summary.json` as written, or the plan's `plan --json` object.
    pub summary: Value,
    /// Records of the run; turns a plan sent.
    pub records: u64,
    /// Keyed ttft, itl, tpot, e2e, lateness, queue_wait; a plan has only
    /// queue_wait (under `--max-inflight`).
    pub cdf: BTreeMap<&'static str, Cdf>,
    pub series: Series,
    pub lanes: Lanes,
    /// Spawn and join arrows between turns (`[from, to, role]`, see
    /// [`Lanes::arrows`]): `None` when the run directory has no
    /// `trees.jsonl` (written by an older arbor).
    pub edges: Option<Vec<[u32; 3]>>,
    /// A run's plan: its requests in flight over time, from the run
    /// directory's `planned.json` (`None` without one, and for a plan,
    /// whose own series is the plan).
    pub planned: Option<PlannedLoad>,
    /// The server's gauges over time (`metrics.jsonl`): `None` when the
    /// run scraped none, and for a plan.
    pub server: Option<ServerSeries>,
    /// The run judged against `--slo` (`slo.json` as written): `None`
    /// without one, and for a plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo: Option<Value>,
}
