//! Calibration: a server profile fitted from live runs' records
//! (docs/capacity.md, "Calibration"). [`fit`] reads the run directories
//! an [`Options`] names and returns the fitted [`Profile`] with what each
//! stage found ([`Calibration`]); [`Calibration::write_profile`] writes
//! the profile's TOML.
//!
//! Modules, each used only by those after it: `nnls` (the
//! Lawson–Hanson solver), `request` (a request as the client measured
//! it), `follows` (which request each was sent after), `runs` (run
//! directories read into requests), `limits` (the engine limits: given
//! by the caller, or the server's scraped `cache_config_info`),
//! `timeline` (each step's batch rebuilt from the records),
//! `stage_a` (least squares over decode and lone-prefill rows, the knee
//! search), `replay` (the runs replayed through the server model),
//! `fit_error` (p50/p90 of TTFT, ITL, E2E, predicted against measured)
//! `stage_b` (bounded correction factors by replay) and `bootstrap`
//! (stage A refitted on resamples of the requests: the profile's
//! uncertainty). This module runs them in order and returns what each
//! found, and owns the profile's label. `probe` is the designed
//! experiment of `arbor calibrate --probe` (which requests to send; the
//! `arbor` crate sends them and fits their runs here).
//!
//! Uses the server model ([`crate::server`]) through its public API (the
//! model never uses calibration), and of the run directory only
//! `arbor-runs`' readers of `records.jsonl` and `metrics.jsonl` and its
//! UTC stamp (for the label). Must not touch: a run directory (it writes
//! nothing there), stdout or stderr (the front end words the result), the
//! clock (the label's time is the caller's, [`Options::fitted_at`], so
//! the same runs and options give the same profile, byte for byte).

mod bootstrap;
mod fit_error;
mod follows;
mod limits;
mod nnls;
pub mod probe;
mod replay;
mod request;
mod runs;
mod stage_a;
mod stage_b;
mod timeline;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use arbor_error::Error;

use crate::server::{Overheads, Profile, ProfileOrigin, SchedulingPolicy};

use fit_error::Samples;
use runs::Run;

pub use bootstrap::{Spread, DEFAULT_RESAMPLES};
pub use fit_error::{Compared, Metric};
pub use limits::GivenLimits;
pub use runs::MAX_REQUESTS;
pub use stage_a::{Fit, Fitting, TRIM_SCALES};
pub use stage_b::Factors;

/// What a calibration fits from, and what its caller knows beforehand.
#[derive(Debug, Clone)]
pub struct Options {
    /// Run directories of `arbor run` against the one server to fit:
    /// `records.jsonl` (required), `run.json` (the label's model and
    /// server) and `metrics.jsonl` (the engine limits, preemptions) when
    /// present.
    pub run_dirs: Vec<PathBuf>,
    /// The engine limits the caller gives; one not given is read from the
    /// runs' scraped `cache_config_info`.
    pub limits: GivenLimits,
    /// Whether stage B corrects stage A's fit (`false`: stage A's fit as
    /// it is).
    pub correction: bool,
    /// When the profile is fitted: its label's date (UTC, to the second).
    pub fitted_at: SystemTime,
}

/// A fitted profile and what each stage found.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The profile (`origin = "fitted"`), corrected by stage B unless
    /// [`Options::correction`] was off.
    pub profile: Profile,
    /// The runs, in the order given.
    pub runs: Vec<RunRead>,
    /// Stage A's least-squares fit (before any correction).
    pub stage_a: Fit,
    /// What the fit cannot see, in the order found.
    pub notes: Vec<Note>,
    /// Stage B's factors and losses; `None` when it did not run.
    pub correction: Option<Correction>,
    /// The profile's fit error: per run, then over all runs when there
    /// are several.
    pub fit_error: Vec<FitError>,
    /// Each coefficient with its 90 % interval over the bootstrap draws
    /// (the profile's `uncertainty`); empty when none was drawn.
    pub spreads: Vec<Spread>,
}

/// One run directory as the fit read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRead {
    /// The directory's own name.
    pub name: String,
    /// Its finished requests (status ok, warmups included).
    pub requests: usize,
    /// Records left out: failed, cancelled, or without the stamps a fit
    /// needs.
    pub skipped: u64,
}

/// Something the records cannot show, which limits the fit.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// The server's preemption counter rose by `times` during `run`: a
    /// client cannot see the recomputation that costs, so the run's rows
    /// understate the work.
    Preempted { run: String, times: f64 },
    /// No request ran alone: the per-request overhead is not identified
    /// (fitted as 0).
    OverheadNotIdentified,
    /// `run` had more finished requests than a calibration reads
    /// ([`runs::MAX_REQUESTS`]): it was fitted on the `read` requests
    /// sent in its first `cut_s` seconds, `left_out` later ones not read.
    Windowed {
        run: String,
        read: usize,
        left_out: u64,
        cut_s: f64,
    },
    /// The coefficient's 90 % interval over the bootstrap draws reaches 0
    /// while its value does not (or the reverse), or is wider than half
    /// its value either side: these runs do not identify it.
    NotIdentified(Spread),
}

/// What stage B found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correction {
    pub factors: Factors,
    /// The loss of stage A's profile, and of the corrected one.
    pub loss_before: f64,
    pub loss_after: f64,
}

/// The fit error of one run's replay through the profile, or of all
/// runs'.
#[derive(Debug, Clone, PartialEq)]
pub struct FitError {
    /// The run's name; `None`: over all runs.
    pub run: Option<String>,
    /// Each metric's quantiles, measured and predicted.
    pub compared: Vec<Compared>,
    /// Prompt tokens the model found cached, over the requests whose
    /// server reported its own hits.
    pub model_cached_tokens: u64,
    /// Prompt tokens the server reported cached.
    pub server_cached_tokens: u64,
}

/// Fits a profile to the runs `options` names, with the uncertainty of
/// [`DEFAULT_RESAMPLES`] bootstrap draws.
pub fn fit(options: &Options) -> Result<Calibration, Error> {
    fit_resampled(options, DEFAULT_RESAMPLES)
}

/// [`fit`] with `resamples` bootstrap draws (0: no uncertainty).
pub fn fit_resampled(options: &Options, resamples: u32) -> Result<Calibration, Error> {
    fit_with(options, resamples, Fitting::Ordinary)
}

/// [`fit_resampled`], stage A's rows made as `fitting` says (the probe's
/// fit: [`Fitting::Probe`]).
pub fn fit_with(options: &Options, resamples: u32, fitting: Fitting) -> Result<Calibration, Error> {
    let runs = options
        .run_dirs
        .iter()
        .map(|dir| runs::read(dir))
        .collect::<Result<Vec<Run>, Error>>()?;
    let requests: usize = runs.iter().map(|r| r.requests.len()).sum();
    if requests == 0 {
        return Err(Error::input(
            "calibrate: no finished request in the runs' records.jsonl: nothing to fit",
        ));
    }
    let engine = limits::resolve(&options.limits, &runs, SchedulingPolicy::Vllm)?;
    let (fit, rows) = stage_a::fit_with_rows(&runs, engine.max_num_batched_tokens, fitting)
        .map_err(|_| {
            Error::input(
                "calibrate: no request with two output tokens or more, and none that ran alone: \
             nothing to fit the step time on",
            )
        })?;
    let fitted = Profile {
        label: label(&runs, options.fitted_at),
        origin: ProfileOrigin::Fitted,
        engine,
        step: fit.step.clone(),
        overhead: Overheads {
            arrival_ns: fit.overhead_ns.round() as u64,
            departure_ns: 0,
        },
        uncertainty: None,
    };
    let correction = options.correction.then(|| {
        let loss_before = stage_b::loss(&fitted, &runs);
        let (factors, loss_after) = stage_b::correct(&fitted, &runs);
        Correction {
            factors,
            loss_before,
            loss_after,
        }
    });
    let corrected = |p: &Profile| match &correction {
        Some(c) => stage_b::apply(p, &c.factors),
        None => p.clone(),
    };
    let mut profile = corrected(&fitted);
    let draws: Vec<_> = bootstrap::refits(&rows, resamples, bootstrap::SEED)
        .iter()
        .map(|f| {
            let p = corrected(&fitted.with_draw(&bootstrap::draw(f)));
            crate::server::profile::Draw {
                step: p.step,
                overhead: p.overhead,
            }
        })
        .collect();
    let spreads = if draws.is_empty() {
        Vec::new()
    } else {
        bootstrap::spreads(&profile, &draws)
    };
    if !draws.is_empty() {
        profile.uncertainty = Some(bootstrap::uncertainty(draws, rows.requests));
    }
    let mut notes: Vec<Note> = runs
        .iter()
        .filter_map(|run| {
            let times = run.preemptions.filter(|&n| n > 0.0)?;
            Some(Note::Preempted {
                run: run.name.clone(),
                times,
            })
        })
        .collect();
    if fit.prefill_rows == 0 {
        notes.push(Note::OverheadNotIdentified);
    }
    notes.extend(
        spreads
            .iter()
            .filter(|s| !s.identified())
            .cloned()
            .map(Note::NotIdentified),
    );
    for run in &runs {
        if let Some(cut) = run.cut {
            notes.push(Note::Windowed {
                run: run.name.clone(),
                read: run.requests.len(),
                left_out: run.left_out,
                cut_s: cut as f64 / 1e9,
            });
        }
    }
    Ok(Calibration {
        fit_error: compare(&profile, &runs),
        profile,
        runs: runs
            .iter()
            .map(|r| RunRead {
                name: r.name.clone(),
                requests: r.requests.len(),
                skipped: r.skipped,
            })
            .collect(),
        stage_a: fit,
        notes,
        correction,
        spreads,
    })
}

impl Calibration {
    /// Writes the profile's TOML ([`Profile::to_toml`]) to `path`.
    pub fn write_profile(&self, path: &Path) -> Result<(), Error> {
        std::fs::write(path, self.profile.to_toml())
            .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))
    }
}

/// What the profile's label says: fitted here, against what, when, from
/// which runs.
fn label(runs: &[Run], at: SystemTime) -> String {
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    let first = |f: fn(&Run) -> Option<&String>| runs.iter().find_map(f).cloned();
    let model = first(|r| r.model.as_ref()).unwrap_or_else(|| "an unnamed model".into());
    let server = first(|r| r.server.as_ref()).unwrap_or_else(|| "an unrecorded server".into());
    let when = arbor_runs::output::utc_stamps(at).1;
    format!(
        "fitted here by arbor calibrate on {when} against {model} served by {server}, from runs {}",
        names.join(", ")
    )
}

/// The fit error per run and over all runs, of `profile`'s replay.
fn compare(profile: &Profile, runs: &[Run]) -> Vec<FitError> {
    let mut all = Samples::default();
    let (mut all_model, mut all_server) = (0u64, 0u64);
    let mut blocks = Vec::new();
    for run in runs {
        let served = replay::replay(profile, &run.requests);
        all.extend(&run.requests, &served);
        // Prefix-cache hits: the model's against the server's, over the
        // requests whose server reported them.
        let (model, server) = run
            .requests
            .iter()
            .zip(&served)
            .filter_map(|(r, s)| r.cached.map(|c| (u64::from(s.cached_tokens), u64::from(c))))
            .fold((0, 0), |(m, s), (a, b)| (m + a, s + b));
        all_model += model;
        all_server += server;
        blocks.push(FitError {
            run: Some(run.name.clone()),
            compared: Samples::of(&run.requests, &served).compare(),
            model_cached_tokens: model,
            server_cached_tokens: server,
        });
    }
    if runs.len() > 1 {
        blocks.push(FitError {
            run: None,
            compared: all.compare(),
            model_cached_tokens: all_model,
            server_cached_tokens: all_server,
        });
    }
    blocks
}
