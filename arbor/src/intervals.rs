//! The fit's share of `arbor plan`'s intervals: the workload planned again
//! under each of the profile's draws ([`Profile::with_draw`]), the draws
//! side by side on every core as the capacity sweep plans its loads, and
//! the intervals of the central plan's figures from them
//! (`arbor_report::plan::intervals` owns the arithmetic and its JSON).
//!
//! Planning is deterministic, so the same inputs, seed and draws give the
//! same intervals on any machine and any number of cores.

use arbor_backends::side_by_side;
use arbor_backends::virtual_clock::{self, Prompts};
use arbor_engine::dag::CompiledWorkload;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::Workload;
use arbor_error::Error;
use arbor_report::plan::intervals::{Figures, PredictionIntervals, Settings, MAX_DRAWS, RESAMPLES};
use arbor_report::plan::server::figures;
use arbor_sim::server::Profile;
use arbor_sim::{ServerModel, WorkloadKeys};

use crate::inputs;
use crate::options::IntervalOptions;

/// What the plans under the draws share: the workload as compiled and
/// loaded, and the policy (the central plan's).
pub struct Replan<'a> {
    pub compiled: CompiledWorkload,
    pub policy: Policy,
    pub workload: &'a Workload,
}

/// How many of `profile`'s draws `options` plans under: all (up to
/// [`MAX_DRAWS`]) or the first `--interval-draws`.
pub fn draws_used(profile: &Profile, options: &IntervalOptions) -> usize {
    let held = profile.uncertainty.as_ref().map_or(0, |u| u.draws.len());
    held.min(options.draws.unwrap_or(MAX_DRAWS)).min(MAX_DRAWS)
}

/// The intervals of `central` at `level`: the plan repeated under the
/// first `draws_used` draws of `profile` (none: the sample's share
/// only), on up to `workers` threads.
pub fn intervals(
    central: &Figures,
    replan: &Replan<'_>,
    profile: &Profile,
    options: &IntervalOptions,
    level: f64,
    workers: usize,
) -> Result<PredictionIntervals, Error> {
    let held = profile.uncertainty.as_ref().map_or(0, |u| u.draws.len());
    let count = draws_used(profile, options);
    let draws = profile
        .uncertainty
        .as_ref()
        .map_or(&[][..], |u| &u.draws[..count]);
    // Every draw keeps the profile's block size: the keys are the same.
    let keys = WorkloadKeys::new(replan.workload, profile.engine.block_size);
    let planned: Vec<Result<Figures, Error>> = side_by_side::plan_each(draws.len(), workers, |i| {
        figures_under(&profile.with_draw(&draws[i]), replan, &keys)
            .map_err(|e| Error::other(format!("interval draw {}: {e}", i + 1)))
    });
    let figures = planned.into_iter().collect::<Result<Vec<_>, _>>()?;
    let settings = Settings {
        level,
        resamples: RESAMPLES,
        seed: replan.policy.seed,
    };
    Ok(PredictionIntervals::new(central, &figures, held, settings))
}

/// The figures of the plan under `profile`.
fn figures_under(
    profile: &Profile,
    replan: &Replan<'_>,
    keys: &WorkloadKeys,
) -> Result<Figures, Error> {
    let mut scheduler: Scheduler =
        inputs::scheduler(replan.compiled.clone(), replan.policy.clone())?;
    let mut model = ServerModel::new(profile);
    let mut predicted = Vec::new();
    let prompts = Prompts {
        workload: replan.workload,
        cache_bust: None,
        keys: Some(keys),
    };
    virtual_clock::run_server(&mut scheduler, prompts, &mut model, &mut predicted)
        .map_err(|e| Error::other(format!("engine: {e}")))?;
    Ok(figures(&scheduler, &predicted))
}
