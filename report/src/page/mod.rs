//! `arbor report RUN_DIR... [-o FILE]` ([`report`]): one self-contained
//! HTML page of one or more run directories (configuration, summary,
//! CDFs, time series, swim lanes; several runs overlaid, with a table of
//! deltas). `arbor run`, `arbor summarize` and `arbor merge` write the
//! same page into a run directory ([`write_for_run`]), and `arbor plan
//! --report FILE` writes it for a plan ([`write_for_plan`]). The directory
//! of `arbor run --repeat N` gets the multi-run page ([`write_for_repeat`],
//! and `arbor report OUT`): its runs overlaid and, on top, the
//! aggregate's spread. A capacity search's directory gets its own page
//! ([`capacity`], and `arbor report OUT`). Each returns what it wrote (the
//! line to say, or the page's size); the front end prints it.
//!
//! Modules: [`data`] (what one source gives the page), [`record`] (a line
//! of `records.jsonl`), [`cdf`], [`series`] and [`lanes`] (what is drawn,
//! each from turns, in memory bounded whatever the run's length; the
//! series through [`cells`] and [`sketch`]), [`run_dir`] (a run directory
//! streamed once into all three), [`plan_turns`] (the turns a finished plan sent), [`plan`] (a
//! finished plan as the same data), [`planned`] (the
//! plan's in-flight series a run keeps in `planned.json`), [`server`]
//! (the server's scraped gauges, from `metrics.jsonl`), [`spread`] (an
//! aggregate's stamp, means, intervals and run values), [`html`] (the
//! page). Reads only the files a run wrote, or a finished scheduler;
//! never the types a run writes with, so a run directory from any arbor
//! version with the same record fields reads the same.

pub mod capacity;
mod cdf;
mod cells;
mod data;
mod html;
mod lanes;
mod plan;
mod plan_turns;
pub mod planned;
mod record;
mod run_dir;
mod series;
mod server;
mod sketch;
mod spread;

use std::path::{Path, PathBuf};

use arbor_engine::model::Tree;
use arbor_engine::scheduler::Scheduler;
use serde::Serialize;

use crate::plan::PlanReport;
use arbor_error::Error;
use arbor_runs::aggregate::{self, Aggregate};

use data::RunPage;
use spread::SpreadPage;

/// The page `arbor run` writes into its output directory.
pub const REPORT_FILE: &str = "report.html";

#[derive(Serialize)]
struct PageData<'a> {
    arbor_version: &'static str,
    runs: &'a [RunPage],
    /// The multi-run page of a `--repeat` directory only.
    #[serde(skip_serializing_if = "Option::is_none")]
    spread: Option<&'a SpreadPage>,
}

/// What `arbor report` draws, and where.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Run directories (several are overlaid); one `--repeat` directory
    /// gives its multi-run page.
    pub run_dirs: Vec<PathBuf>,
    /// The page's path. Default: `RUN_DIR/report.html` for one run
    /// directory, `report.html` in the current directory for several.
    pub out: Option<PathBuf>,
}

/// `arbor report`: writes the page; the line that says where it is and
/// what it holds.
pub fn report(options: &ReportOptions) -> Result<String, Error> {
    if let [one] = options.run_dirs.as_slice() {
        if capacity::is_capacity_dir(one) {
            return capacity::report(one, options.out.as_deref());
        }
    }
    // Among several, a capacity or --repeat directory draws no run page:
    // it has its own, of itself alone.
    if options.run_dirs.len() > 1 {
        for dir in &options.run_dirs {
            let what = if capacity::is_capacity_dir(dir) {
                "a capacity search's"
            } else if aggregate::is_repeat_dir(dir) {
                "a --repeat sequence's"
            } else {
                continue;
            };
            return Err(Error::input(format!(
                "{}: {what} directory has a page of its own: give it to `arbor report` alone \
                 (or give its run directories, e.g. {}/probe-*, {}/run-*, to overlay them)",
                dir.display(),
                dir.display(),
                dir.display()
            )));
        }
    }
    let out = match (&options.out, options.run_dirs.as_slice()) {
        (Some(out), _) => out.clone(),
        (None, [one]) => one.join(REPORT_FILE),
        (None, _) => PathBuf::from(REPORT_FILE),
    };
    if let [one] = options.run_dirs.as_slice() {
        if aggregate::is_repeat_dir(one) {
            // Re-resolved from the run directories, as `arbor aggregate`
            // does, without rewriting aggregate.json.
            let aggregate = aggregate::resolve(one)?;
            let (bytes, runs) = write_for_repeat(one, &aggregate, &out)?;
            return Ok(format!(
                "report in {} (the spread of {}: {runs} run{} drawn, {:.1} MB)",
                out.display(),
                one.display(),
                if runs == 1 { "" } else { "s" },
                bytes as f64 / 1e6
            ));
        }
    }
    let bytes = write(&options.run_dirs, &out)?;
    Ok(format!(
        "report in {} ({} run{}, {:.1} MB)",
        out.display(),
        options.run_dirs.len(),
        if options.run_dirs.len() == 1 { "" } else { "s" },
        bytes as f64 / 1e6
    ))
}

/// Writes the page of `run_dir` (a run just finished, rebuilt or merged)
/// to `run_dir/report.html`; the line that says where it is (the
/// console's last line). Any failure is one of writing the run's output
/// (exit 1).
pub fn write_for_run(run_dir: &Path) -> Result<String, Error> {
    let out = run_dir.join(REPORT_FILE);
    write(&[run_dir.to_path_buf()], &out).map_err(|f| Error::other(f.message))?;
    Ok(format!("report in {}", out.display()))
}

/// Writes the page of `run_dirs` to `out`; returns its size in bytes.
pub fn write(run_dirs: &[PathBuf], out: &Path) -> Result<u64, Error> {
    let runs = run_dirs
        .iter()
        .map(|dir| run_dir::read(dir, lanes::budget_of(run_dirs.len())))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    let page = render(&format!("arbor report: {}", names.join(", ")), &runs, None)?;
    std::fs::write(out, &page)
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", out.display())))?;
    Ok(page.len() as u64)
}

/// Writes the multi-run page of the `--repeat` directory `dir` to `out`:
/// the runs of `aggregate` that wrote a summary, overlaid, under the
/// aggregate's spread. Returns the page's size in bytes and how many runs
/// it draws; none is a fault (exit 2): there is nothing to draw.
pub fn write_for_repeat(
    dir: &Path,
    aggregate: &Aggregate,
    out: &Path,
) -> Result<(u64, usize), Error> {
    let dirs: Vec<String> = aggregate
        .runs
        .iter()
        .filter(|r| r.summary.is_some())
        .map(|r| r.dir.clone())
        .collect();
    if dirs.is_empty() {
        return Err(Error::input(format!(
            "{}: no run of the sequence wrote a summary: nothing to draw",
            dir.display()
        )));
    }
    let runs = dirs
        .iter()
        .map(|d| run_dir::read(&dir.join(d), lanes::budget_of(dirs.len())))
        .collect::<Result<Vec<_>, _>>()?;
    let spread = SpreadPage::of(aggregate, dir.display().to_string(), &dirs);
    let title = format!("arbor report: {} ({} runs)", dir.display(), runs.len());
    let page = render(&title, &runs, Some(&spread))?;
    std::fs::write(out, &page)
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", out.display())))?;
    Ok((page.len() as u64, runs.len()))
}

/// Writes the page of a plan (`arbor plan --report FILE`): `scheduler` run
/// to the end on the virtual clock, `recorded` the trees as loaded,
/// `report` what `plan --json` prints. Returns the page's size in bytes; a
/// file that cannot be written is a bad `--report` value (exit 2).
pub fn write_for_plan(
    scheduler: &Scheduler,
    recorded: &[Tree],
    report: &PlanReport,
    out: &Path,
) -> Result<u64, Error> {
    let summary = serde_json::to_value(report)
        .map_err(|e| Error::other(format!("cannot encode the plan: {e}")))?;
    let plan = plan::page(scheduler, recorded, summary, &report.inputs);
    let page = render(&format!("arbor plan: {}", report.inputs), &[plan], None)?;
    std::fs::write(out, &page)
        .map_err(|e| Error::input(format!("--report {}: cannot write: {e}", out.display())))?;
    Ok(page.len() as u64)
}

/// The page of `runs` (and a repeat's `spread`), titled `title`.
fn render(title: &str, runs: &[RunPage], spread: Option<&SpreadPage>) -> Result<String, Error> {
    let data = serde_json::to_string(&PageData {
        arbor_version: env!("CARGO_PKG_VERSION"),
        runs,
        spread,
    })
    .map_err(|e| Error::other(format!("cannot encode the report's data: {e}")))?;
    Ok(html::page(title, &data))
}
