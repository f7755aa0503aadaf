//! `arbor run --repeat N`: N runs one after another in `OUT/run-1 ..
//! OUT/run-N`, run k with seed `SEED + k - 1` ([`aggregate::seed_of`],
//! recorded as `config.seed` and `config.repeat`), then
//! `OUT/aggregate.json` and `OUT/report.html` (the runs overlaid). A run
//! stopped by a signal, a run that fails, or one whose client failed
//! requests ends the sequence: the aggregate is still written (invalid,
//! the reasons listed) and the error is that run's. Owns the sequence
//! only; each run is [`super::run_once`], the aggregate is
//! [`aggregate::rebuild`]'s, its table the observer's.

use std::path::Path;

use crate::options::RunOptions;
use crate::Observer;
use arbor_error::Error;
use arbor_runs::aggregate::{self, RepeatOf, RepeatPlan};

use super::{prepare, run_once};
use arbor_runs::output::OutputDir;

/// The sequence of `runs` runs.
pub fn run(args: &RunOptions, runs: u32, observer: &dyn Observer) -> Result<(), Error> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| prepare::default_out(args));
    // OUT itself must be empty (or --force): its run directories are new.
    OutputDir::check(out.clone(), args.force)?;
    // Each run's seed is set here, never generated again by a recipe.
    let seed = global_seed(args, observer);
    aggregate::write_plan(&out, &RepeatPlan { runs, seed })?;
    let mut ended = Ok(());
    for k in 1..=runs {
        let mut one = args.clone();
        one.repeat = None;
        one.out = Some(out.join(aggregate::runs::dir_name(k)));
        let run_seed = aggregate::seed_of(seed, k);
        one.policy.seed = Some(run_seed);
        one.repeat_of = Some(RepeatOf { run: k, runs, seed });
        observer.notice(&format!(
            "arbor run --repeat {runs}: run {k} of {runs}, seed {run_seed}, in {}",
            out.join(aggregate::runs::dir_name(k)).display()
        ));
        ended = run_once(&one, observer).and_then(|ran| ran.exit(observer));
        if ended.is_err() {
            observer.notice(&format!(
                "arbor run --repeat {runs}: run {k} did not end cleanly; runs {} to {runs} are \
                 not made",
                k + 1
            ));
            break;
        }
    }
    let aggregate = aggregate::rebuild(&out)?;
    observer.aggregate(&aggregate, &out)?;
    overlay_page(&aggregate, &out, observer)?;
    ended
}

/// The sequence's seed: `--seed` (or its default 0); under a recipe
/// without `--seed`, one generated and printed, as a single run does.
fn global_seed(args: &RunOptions, observer: &dyn Observer) -> u64 {
    if args.policy.seed.is_some() || args.scenario.scenario.is_none() {
        return args.policy.seed();
    }
    let seed = crate::scenario::generated_seed();
    observer.notice(&format!(
        "arbor run --repeat: seed {seed} (generated; pass --seed {seed} to repeat)"
    ));
    seed
}

/// `OUT/report.html`: the runs that wrote a summary overlaid on one page
/// under the aggregate's spread (`arbor report OUT`'s). A page that cannot
/// be written is a warning: the runs and the aggregate are what count.
fn overlay_page(
    aggregate: &aggregate::Aggregate,
    out: &Path,
    observer: &dyn Observer,
) -> Result<(), Error> {
    if aggregate.runs.iter().all(|r| r.summary.is_none()) {
        return Ok(());
    }
    let file = out.join(arbor_report::page::REPORT_FILE);
    match arbor_report::page::write_for_repeat(out, aggregate, &file) {
        Ok(_) => observer.output(&format!("runs and their spread in {}", file.display())),
        Err(e) => {
            observer.notice(&format!("warning: {}: {}", file.display(), e.message));
            Ok(())
        }
    }
}
