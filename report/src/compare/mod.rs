//! `arbor compare BASE NEW...`: every headline metric of run directories
//! side by side, with deltas and seeded bootstrap intervals, and
//! `--fail-on` thresholds that make it a CI gate (the front end exits 1
//! when one is crossed, naming it). Runs of different workloads or policies
//! are refused (exit 2) unless `--allow-different`, and the settings that
//! differ are listed before any figure ([`comparable`]). Reads run
//! directories only and writes
//! nothing: [`compare`] returns a [`Comparison`], which renders itself for
//! people or as JSON into any writer, and says which thresholds were
//! crossed ([`Comparison::crossed`], [`Comparison::gate`]). See
//! docs/compare.md.
//!
//! Modules, each used only by those after it: [`metric`] (the metrics'
//! names, units and `--fail-on`'s grammar), `run_dir` (reading a run),
//! [`comparable`] (whether runs measured the same thing, and what differs),
//! `bootstrap` (the resampled interval), `rows` (the deltas), `gate`
//! (judging thresholds), `output` (the table, the JSON, a threshold's
//! line).

mod bootstrap;
pub mod comparable;
mod gate;
pub mod metric;
mod output;
mod rows;
mod run_dir;

use std::io::{self, Write};
use std::path::PathBuf;

use arbor_error::Error;

use comparable::Comparability;
use gate::Verdict;
use metric::Threshold;
use rows::Row;
use run_dir::RunDir;

/// What to compare, and how (the flags of `arbor compare`).
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The baseline run directory.
    pub base: PathBuf,
    /// The run directories compared with it.
    pub new: Vec<PathBuf>,
    /// Every threshold, in the order given.
    pub fail_on: Vec<Threshold>,
    /// Seed of the bootstrap resamples.
    pub seed: u64,
    /// Bootstrap resamples per percentile.
    pub resamples: u32,
    /// Compare runs of different workloads or policies anyway (the
    /// difference then leads the output); without it they are refused.
    pub allow_different: bool,
}

/// A finished comparison: the runs' figures, their deltas and the
/// thresholds judged.
pub struct Comparison {
    header: output::Header,
    comparability: Comparability,
    rows: Vec<Row>,
    verdicts: Vec<Verdict>,
}

/// Reads the run directories and compares every NEW with BASE; refuses
/// runs that played another workload or policy than BASE (an input
/// error) unless `allow_different`.
pub fn compare(options: &CompareOptions) -> Result<Comparison, Error> {
    let base = RunDir::read(&options.base)?;
    let news = options
        .new
        .iter()
        .map(|dir| RunDir::read(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let configs: Vec<(&str, _)> = news.iter().map(|r| (r.name.as_str(), r.config())).collect();
    let comparability = comparable::check(base.config(), &configs);
    comparability.refusal(&base.name, options.allow_different)?;
    let rows = rows::rows(&base, &news, options.resamples, options.seed);
    let names: Vec<String> = news.iter().map(|r| r.name.clone()).collect();
    let verdicts = gate::judge(&options.fail_on, &rows, &names);
    let header = output::Header {
        base: base.name.clone(),
        new: names,
        seed: options.seed,
        resamples: options.resamples,
        confidence: 0.95,
    };
    Ok(Comparison {
        header,
        comparability,
        rows,
        verdicts,
    })
}

impl Comparison {
    /// The table and the thresholds, for people.
    pub fn write_human(&self, out: &mut dyn Write) -> io::Result<()> {
        output::human(
            out,
            &self.header,
            &self.comparability,
            &self.rows,
            &self.verdicts,
        )
    }

    /// The same figures as one JSON object (`--json`).
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        output::json(
            out,
            &self.header,
            &self.comparability,
            &self.rows,
            &self.verdicts,
        )
    }

    /// Each NEW run compared although it played another workload or
    /// policy than BASE (`--allow-different`), described on one line;
    /// empty when every run is comparable.
    pub fn not_comparable(&self) -> Vec<String> {
        self.comparability.describe(&self.header.base)
    }

    /// Each crossed threshold, described on one line (`ttft_p50=+10%
    /// run40: 11.447 -> 41.512 ms, ...`), in the order judged.
    pub fn crossed(&self) -> Vec<String> {
        self.crossed_verdicts().map(output::describe).collect()
    }

    /// `Ok` when no threshold was crossed; otherwise the fault that names
    /// them (the front end exits 1).
    pub fn gate(&self) -> Result<(), Error> {
        let crossed: Vec<&Verdict> = self.crossed_verdicts().collect();
        match crossed.len() {
            0 => Ok(()),
            n => Err(Error::other(format!(
                "{n} threshold{} crossed: {}",
                if n == 1 { "" } else { "s" },
                crossed
                    .iter()
                    .map(|v| format!("{} ({})", v.threshold, v.run))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    fn crossed_verdicts(&self) -> impl Iterator<Item = &Verdict> {
        self.verdicts.iter().filter(|v| v.crossed == Some(true))
    }
}
