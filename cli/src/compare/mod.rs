//! `arbor compare BASE NEW...`: every headline metric of run directories
//! side by side, with deltas and seeded bootstrap intervals, and
//! `--fail-on` thresholds that make it a CI gate (exit 1 when one is
//! crossed, naming it on stderr). Reads run directories only; writes
//! nothing but stdout and stderr. See docs/compare.md.
//!
//! Modules, each used only by those after it: `run_dir` (reading a run),
//! `bootstrap` (the resampled interval), `rows` (the deltas), `gate`
//! (judging thresholds), `output` (printing).

mod bootstrap;
mod gate;
mod output;
mod rows;
mod run_dir;

use crate::args::CompareArgs;
use crate::stdout;
use arbor_error::Error;

use run_dir::RunDir;

pub fn run(args: &CompareArgs) -> Result<(), Error> {
    let base = RunDir::read(&args.base)?;
    let news = args
        .new
        .iter()
        .map(|dir| RunDir::read(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let rows = rows::rows(&base, &news, args.resamples, args.seed);
    let names: Vec<String> = news.iter().map(|r| r.name.clone()).collect();
    let thresholds: Vec<_> = args.fail_on.iter().flat_map(|t| t.0.clone()).collect();
    let verdicts = gate::judge(&thresholds, &rows, &names);
    let header = output::Header {
        base: base.name.clone(),
        new: names,
        seed: args.seed,
        resamples: args.resamples,
        confidence: 0.95,
    };
    stdout::print(|out| {
        if args.json {
            output::json(out, &header, &rows, &verdicts)
        } else {
            output::human(out, &header, &rows, &verdicts)
        }
    })?;
    let crossed: Vec<_> = verdicts
        .iter()
        .filter(|v| v.crossed == Some(true))
        .collect();
    for v in &crossed {
        eprintln!("arbor compare: threshold crossed: {}", output::describe(v));
    }
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
