//! `arbor report RUN_DIR... [-o FILE]`: one self-contained HTML page of
//! one or more run directories (configuration, summary, CDFs, time
//! series, swim lanes; several runs overlaid, with a table of deltas).
//! `arbor run` writes the same page into its output directory
//! ([`write_for_run`]), and `arbor plan --report FILE` writes it for a
//! plan ([`write_for_plan`]).
//!
//! Modules: [`data`] (what one source gives the page), [`record`] (a line
//! of `records.jsonl`), [`cdf`], [`series`] and [`lanes`] (what is drawn,
//! each from turns), [`run_dir`] (a run directory streamed once into all
//! three), [`plan_turns`] (the turns a finished plan sent), [`plan`] (a
//! finished plan as the same data), [`planned`] (the
//! plan's in-flight series a run keeps in `planned.json`), [`server`]
//! (the server's scraped gauges, from `metrics.jsonl`), [`html`] (the
//! page). Reads only the files a run wrote, or a finished scheduler;
//! never touches `run`'s types, so a run directory from any arbor version
//! with the same record fields reads the same.

mod cdf;
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

use std::path::{Path, PathBuf};

use arbor_engine::model::Tree;
use arbor_engine::scheduler::Scheduler;
use serde::Serialize;

use crate::args::ReportArgs;
use crate::failure::Failure;
use crate::report::PlanReport;

use data::RunPage;

/// The page `arbor run` writes into its output directory.
pub const REPORT_FILE: &str = "report.html";

#[derive(Serialize)]
struct PageData<'a> {
    arbor_version: &'static str,
    runs: &'a [RunPage],
}

/// `arbor report`.
pub fn run(args: &ReportArgs) -> Result<(), Failure> {
    let out = match (&args.out, args.run_dirs.as_slice()) {
        (Some(out), _) => out.clone(),
        (None, [one]) => one.join(REPORT_FILE),
        (None, _) => PathBuf::from(REPORT_FILE),
    };
    let bytes = write(&args.run_dirs, &out)?;
    crate::stdout::print(|text| {
        writeln!(
            text,
            "report in {} ({} run{}, {:.1} MB)",
            out.display(),
            args.run_dirs.len(),
            if args.run_dirs.len() == 1 { "" } else { "s" },
            bytes as f64 / 1e6
        )
    })
}

/// Writes the page of `run_dir` (a run just finished) to
/// `run_dir/report.html` and prints where it is (the console's last line).
/// Any failure is one of writing the run's output (exit 1).
pub fn write_for_run(run_dir: &Path) -> Result<(), Failure> {
    let out = run_dir.join(REPORT_FILE);
    write(&[run_dir.to_path_buf()], &out).map_err(|f| Failure::other(f.message))?;
    crate::stdout::print(|text| writeln!(text, "report in {}", out.display()))
}

/// Writes the page of `run_dirs` to `out`; returns its size in bytes.
pub fn write(run_dirs: &[PathBuf], out: &Path) -> Result<u64, Failure> {
    let runs = run_dirs
        .iter()
        .map(|dir| run_dir::read(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    let page = render(&format!("arbor report: {}", names.join(", ")), &runs)?;
    std::fs::write(out, &page)
        .map_err(|e| Failure::other(format!("{}: cannot write: {e}", out.display())))?;
    Ok(page.len() as u64)
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
) -> Result<u64, Failure> {
    let summary = serde_json::to_value(report)
        .map_err(|e| Failure::other(format!("cannot encode the plan: {e}")))?;
    let plan = plan::page(scheduler, recorded, summary, &report.inputs);
    let page = render(&format!("arbor plan: {}", report.inputs), &[plan])?;
    std::fs::write(out, &page)
        .map_err(|e| Failure::input(format!("--report {}: cannot write: {e}", out.display())))?;
    Ok(page.len() as u64)
}

/// The page of `runs`, titled `title`.
fn render(title: &str, runs: &[RunPage]) -> Result<String, Failure> {
    let data = serde_json::to_string(&PageData {
        arbor_version: env!("CARGO_PKG_VERSION"),
        runs,
    })
    .map_err(|e| Failure::other(format!("cannot encode the report's data: {e}")))?;
    Ok(html::page(title, &data))
}
