//! `arbor capacity INPUT... --slo '...'`: the largest load that meets
//! latency SLOs (docs/capacity.md, "Capacity search").
//!
//! The use case only: the options turned into the search library's
//! (`arbor_capacity`: the SLOs, the space, the virtual bench), the
//! options a search cannot honour refused, the library's search called
//! with its virtual probe or the live one ([`live`]: a point as a run of
//! the workload compiled once), progress lines to the observer, and the
//! points and answer returned for the caller's table. The search, the
//! judging and `capacity.json` are the search library's.
//!
//! Modes: virtual (the default: every point a plan under `--service`),
//! or live (`--live` or `--endpoint`: every point a run of `--duration`).
//! A live search with an explicit `--service` first searches virtually
//! and then bisects live around the predicted knee. A live probe that
//! fails stops the search with its error (the library's rule; the probe
//! named). A live probe is judged on 95 % intervals: one unresolved (too
//! few requests, `--min-requests`, or an interval across a limit) is
//! extended up to `--max-extensions` times, and if still unresolved the
//! answer is only a bound ([`Found::conclusion`]); a live answer is
//! confirmed by one more probe at its passing load unless `--no-confirm`.

mod live;

use std::path::{Path, PathBuf};

use arbor_backends::side_by_side;
use arbor_capacity::predict::{self, Bench, VirtualProbe};
use arbor_capacity::{output, About, Answer, Conclusion, Mode, Slo, Space, Start};
use arbor_engine::prompt::CacheBust;

use crate::options::RunOptions;
use crate::{inputs, Observer};
use arbor_capacity::{Knob, Point};
use arbor_error::Error;

use live::LiveProbe;

/// `arbor capacity`: the SLOs, the knob's range, and the run every point
/// is (its load set by the knob).
#[derive(Debug, Clone, Default)]
pub struct CapacityOptions {
    /// The SLOs (`ttft_p99<=2s,e2e_p50<=30s`).
    pub slo: String,
    /// The knob and its range (`sessions:1..64`).
    pub search: Option<String>,
    /// The knob's resolution.
    pub step: Option<String>,
    /// Every point of the range (virtual only), rather than a search.
    pub sweep: bool,
    /// Points are live runs (also when `run.request.endpoint` is given).
    pub live: bool,
    /// The fewest successful requests a live probe needs to decide
    /// (`--min-requests`; `None`: [`arbor_capacity::DEFAULT_MIN_REQUESTS`]).
    /// Live only: a virtual point plans the whole workload.
    pub min_requests: Option<u64>,
    /// How many times an unresolved live probe is measured again, each
    /// time for twice as long (`--max-extensions`; `None`:
    /// [`DEFAULT_MAX_EXTENSIONS`]). Live only.
    pub max_extensions: Option<u32>,
    /// Skip the confirmation run at a live answer's passing load
    /// (`--no-confirm`). Live only.
    pub no_confirm: bool,
    pub run: RunOptions,
}

/// `--max-extensions`'s default: an unresolved live probe is measured
/// twice more, for 2x and 4x `--duration`.
pub const DEFAULT_MAX_EXTENSIONS: u32 = 2;

/// What a search found, for the caller's table.
pub struct Found {
    pub knob: Knob,
    /// The last search's points, in the order probed.
    pub points: Vec<Point>,
    pub answer: Answer,
    /// The answer in full: a point, or only a bound (`kind`), the loads
    /// left unresolved, the deciding readings and the confirmation.
    pub conclusion: Conclusion,
    /// The SLOs as text.
    pub slo: String,
    /// The directory `capacity.json` is in.
    pub out: PathBuf,
    /// Where its page is (`report in OUT/report.html`).
    pub report: String,
}

/// `arbor capacity`.
pub fn capacity(args: &CapacityOptions, observer: &dyn Observer) -> Result<Found, Error> {
    let slo = Slo::parse(&args.slo).map_err(|e| Error::input(format!("--slo {e}")))?;
    let space = Space::of(
        args.search.as_deref(),
        args.step.as_deref(),
        args.run.policy.sessions,
        args.run.policy.arrival(),
    )
    .map_err(Error::input)?;
    let live = is_live(args);
    check_options(args, live)?;
    if args.sweep {
        space.check_sweep()?;
    }
    if is_predicting(args) {
        predict::refuse_without_first_token(&slo, &args.run.service())?;
    }
    let out = args.run.out.clone().unwrap_or_else(default_out);
    output::claim(&out, args.run.force)?;
    let searched = search(args, observer, &slo, &space, &out);
    // The page, also of a search a probe stopped (its capacity.json says
    // why); none when the search wrote no capacity.json.
    if !arbor_report::page::capacity::is_capacity_dir(&out) {
        return searched;
    }
    match searched {
        Ok(mut found) => {
            found.report = arbor_report::page::capacity::write_for_search(&out)?;
            Ok(found)
        }
        Err(e) => {
            if let Ok(line) = arbor_report::page::capacity::write_for_search(&out) {
                observer.notice(&format!("arbor capacity: {line}"));
            }
            Err(e)
        }
    }
}

/// The search itself (virtual, live, or live from a prediction), its
/// `capacity.json` written into `out`.
fn search(
    args: &CapacityOptions,
    observer: &dyn Observer,
    slo: &Slo,
    space: &Space,
    out: &Path,
) -> Result<Found, Error> {
    let live = is_live(args);
    let predicting = is_predicting(args);
    let bench = predicting.then(|| bench(args, observer)).transpose()?;
    let service = args.run.service().to_string();
    let about = |mode, predicted| About {
        mode,
        space,
        slo,
        service: &service,
        predicted,
        replicas: replicas(args, mode),
    };

    let mut predicted = None;
    let mut searches = Vec::new();
    if let Some(bench) = &bench {
        let dir = if live {
            out.join("predicted")
        } else {
            out.to_path_buf()
        };
        let mut probe = VirtualProbe::new(bench, space.knob, &dir);
        let outcome = if args.sweep {
            arbor_capacity::sweep(&probe, space, slo, side_by_side::cores())
        } else {
            arbor_capacity::search(&mut probe, space, Start::At(space.start), slo)
        };
        let (knee, conclusion, points) = outcome.conclude(&dir, about(Mode::Virtual, None))?;
        if live {
            observer.notice(&format!(
                "arbor capacity: predicted on the virtual clock ({service}): {}",
                Answer::of(space.knob, knee).sentence(space.knob, &slo.to_string())
            ));
        }
        if let Some(note) = bench.lanes_note(space.knob, knee) {
            observer.notice(&note);
        }
        predicted = Some(Answer::of(space.knob, knee));
        searches.push((knee, conclusion, points));
    }
    if live {
        let start = Start::after(searches.first().map(|(knee, _, _)| *knee), space.start);
        let min_requests = args
            .min_requests
            .unwrap_or(arbor_capacity::DEFAULT_MIN_REQUESTS);
        let max_extensions = args.max_extensions.unwrap_or(DEFAULT_MAX_EXTENSIONS);
        let mut probe = LiveProbe::new(
            &args.run,
            space.knob,
            min_requests,
            max_extensions,
            out,
            observer,
        )?;
        let mut outcome = arbor_capacity::search(&mut probe, space, start, slo);
        if !args.no_confirm {
            if let Some(value) = outcome.found.as_ref().ok().and_then(|k| k.passing) {
                observer.notice(&format!(
                    "arbor capacity: confirming {}={} with one more probe",
                    space.knob.name(),
                    space.knob.show(value)
                ));
            }
            arbor_capacity::confirm(&mut probe, space, slo, &mut outcome);
        }
        searches.push(outcome.conclude(out, about(Mode::Live, predicted))?);
    }
    let Some((knee, conclusion, points)) = searches.pop() else {
        return Err(Error::other("no search was made"));
    };
    Ok(Found {
        knob: space.knob,
        points,
        answer: Answer::of(space.knob, knee),
        conclusion,
        slo: slo.to_string(),
        out: out.to_path_buf(),
        report: String::new(),
    })
}

/// The replicas a point's load is spread over: live, every `--endpoint`
/// (the built-in emulator is one); virtual, the one server the model is.
fn replicas(args: &CapacityOptions, mode: Mode) -> usize {
    match (mode, &args.run.request.endpoint) {
        (Mode::Live, Some(_)) => 1 + args.run.request.more_endpoints.len(),
        _ => 1,
    }
}

/// Whether the points are live runs (`--live`, or `--endpoint`).
fn is_live(args: &CapacityOptions) -> bool {
    args.live || args.run.request.endpoint.is_some()
}

/// Whether the search plans on the virtual clock (every point of a
/// virtual search; a live one's prediction, under an explicit
/// `--service`).
fn is_predicting(args: &CapacityOptions) -> bool {
    !is_live(args) || args.run.service.is_some()
}

/// Refuses options a capacity search cannot honour (bad input).
fn check_options(args: &CapacityOptions, live: bool) -> Result<(), Error> {
    if args.run.repeat.is_some() {
        return Err(Error::input(
            "--repeat: not with capacity (each load is one run); run `arbor run --repeat N` at \
             the load it finds",
        ));
    }
    if args.run.scenario.scenario.is_some() {
        return Err(Error::input(
            "--scenario: a recipe locks the load; capacity changes it on purpose",
        ));
    }
    if live && args.sweep {
        return Err(Error::input(
            "--sweep: virtual only (a live sweep would run every load for --duration); drop \
             --live and --endpoint, or drop --sweep to search live",
        ));
    }
    if !live && args.min_requests.is_some() {
        return Err(Error::input(
            "--min-requests: live only (a virtual point plans the whole workload, the same every \
             time); add --live, or drop it",
        ));
    }
    if !live && args.max_extensions.is_some() {
        return Err(Error::input(
            "--max-extensions: live only (a virtual point is never unresolved); add --live, or \
             drop it",
        ));
    }
    if !live && args.no_confirm {
        return Err(Error::input(
            "--no-confirm: live only (a virtual point is the same every time); add --live, or \
             drop it",
        ));
    }
    if live && args.run.policy.duration.is_none() {
        return Err(Error::input(
            "--duration: a live search needs it, to bound each probe (e.g. --duration 60)",
        ));
    }
    if !live {
        let given = args.run.emulator.given();
        if !given.is_empty() {
            return Err(Error::input(format!(
                "{}: the built-in emulator's, used only by a live search: add --live, or drop them",
                given.join(", ")
            )));
        }
    }
    Ok(())
}

/// `arbor-results/<UTC time>-capacity`.
fn default_out() -> PathBuf {
    let (compact, _) = arbor_runs::output::utc_stamps(std::time::SystemTime::now());
    PathBuf::from("arbor-results").join(format!("{compact}-capacity-{}", std::process::id()))
}

/// The workload loaded and compiled once, for every virtual point, under
/// the policy the flags describe (a policy error worded by flag).
fn bench(args: &CapacityOptions, observer: &dyn Observer) -> Result<Bench, Error> {
    let policy = inputs::policy(&args.run.policy, &args.run.scenario)?;
    let options = inputs::derive_options(&args.run.input);
    let cache_bust = args.run.request.cache_bust.then_some(CacheBust {
        seed: policy.seed,
        salt: args.run.request.cache_bust_salt,
    });
    let compiled = inputs::compile(&args.run.input, policy, &options, false, observer)?;
    Ok(Bench::new(
        compiled.compiled,
        compiled.loaded.workload,
        cache_bust,
        compiled.policy,
        args.run.service(),
    )
    .with_policy_error(inputs::policy_failure))
}
