//! `arbor plan`: load, compile, run on the virtual clock (with a service
//! model, or the batching server model of `--service server:`), and the
//! plan's report (with `timeline`, the per-request timeline; with
//! `report`, the plan's page). The report is returned; printing it is the
//! caller's.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use arbor_backends::side_by_side;
use arbor_backends::virtual_clock::{self, Prompts};
use arbor_engine::scheduler::Scheduler;
use arbor_sim::{ServerModel, Service};

use crate::options::PlanOptions;
use crate::{inputs, scenario, Observer};
use arbor_error::Error;
use arbor_report::plan::intervals::Figures;
use arbor_report::plan::server::{figures, Sample, ServerPrediction};
use arbor_report::plan::{write_timeline, PlanReport, PlannedSubmission};
use arbor_runs::shard_manifest::ShardManifest;

/// Plans the workload `args` describe and returns its report.
pub fn plan(args: &PlanOptions, observer: &dyn Observer) -> Result<PlanReport, Error> {
    let mut policy_args = args.policy.clone();
    let mut agentx = args.scenario.clone();
    let applied = scenario::apply(&mut agentx, &args.input, &mut policy_args, None, observer)?;
    let policy = inputs::policy(&policy_args, &agentx)?;
    if let Some(path) = &args.report {
        check_report_path(path)?;
    }
    let options = inputs::derive_options(&args.input);
    let inputs::Compiled {
        loaded,
        policy,
        compiled,
    } = inputs::compile(&args.input, policy, &options, applied.is_some(), observer)?;
    let adjustments = compiled.adjustments;
    let counts = (&compiled).into();
    let service = args.service.clone().unwrap_or_default();
    // The intervals plan again under the profile's draws: keep what the
    // central plan consumes.
    let replan = match (&service, args.intervals.level) {
        (Service::Server(_), Some(_)) => Some((compiled.clone(), policy.clone())),
        _ => None,
    };
    let mut scheduler = inputs::scheduler(compiled, policy)?;
    let served = serve(
        &mut scheduler,
        &service,
        (&loaded.workload).into(),
        "engine",
    )?;
    let server = match (&service, served, replan, args.intervals.level) {
        (
            Service::Server(server),
            Some((mut prediction, central)),
            Some((compiled, policy)),
            Some(level),
        ) => {
            let replan = crate::intervals::Replan {
                compiled,
                policy,
                workload: &loaded.workload,
            };
            let profile = &server.profile;
            let draws = crate::intervals::draws_used(profile, &args.intervals);
            if draws > 0 {
                observer.notice(&format!(
                    "arbor plan: intervals: planning again under {draws} draws of the profile"
                ));
            }
            prediction.intervals = Some(crate::intervals::intervals(
                &central,
                &replan,
                profile,
                &args.intervals,
                level,
                side_by_side::cores(),
            )?);
            Some(prediction)
        }
        (_, served, _, _) => served.map(|(prediction, _)| prediction),
    };
    let by_request = server.as_ref().map(|s| s.by_request());
    let reuse = crate::reuse::plan(&scheduler, (&loaded.workload).into(), server.as_ref());

    if let Some(path) = &args.timeline {
        let file = File::create(path)
            .map_err(|e| Error::other(format!("{}: cannot create: {e}", path.display())))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let written =
            write_timeline(&scheduler, by_request.as_deref(), &mut out).and_then(|_| out.flush());
        let reader_left = match written {
            Ok(()) => false,
            // A pipe whose reader went away (`--timeline /dev/stdout |
            // head -1`): it chose to read no more, as a closed stdout is
            // (the rest is not written, quietly). Only a pipe says this;
            // a file that cannot be written is an error.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => true,
            Err(e) => {
                return Err(Error::other(format!(
                    "{}: cannot write: {e}",
                    path.display()
                )))
            }
        };
        if let (Some(shard), false) = (scheduler.policy().shard, reader_left) {
            let blocks = arbor_engine::shard::blocks(&scheduler);
            ShardManifest::new(shard, scheduler.trees(), scheduler.policy(), &blocks)
                .write(path)?;
        }
    }

    let corpus = loaded.corpus.clone();
    let submission = applied.as_ref().map(PlannedSubmission::of);
    let mut report = PlanReport::new(
        loaded.description,
        loaded.fit,
        applied.map(|a| a.name.to_string()),
        service.to_string(),
        options.overlap_tolerance,
        &loaded.workload,
        &adjustments,
        &counts,
        &scheduler,
    );
    report.corpus = corpus;
    report.submission = submission;
    if args.input.history == crate::options::History::Live {
        report.history = Some(args.input.history.name().to_string());
    }
    report.server = server;
    match reuse {
        Ok(reuse) => report.reuse = Some(crate::reuse::totals(&reuse)),
        Err(too_large) => observer.notice(&format!("arbor plan: {too_large}")),
    }
    if let Some(path) = &args.report {
        let bytes =
            arbor_report::page::write_for_plan(&scheduler, &loaded.workload.trees, &report, path)?;
        observer.notice(&format!(
            "arbor plan: report in {} ({:.1} MB)",
            path.display(),
            bytes as f64 / 1e6
        ));
    }
    Ok(report)
}

/// Runs `scheduler` to the end on the virtual clock under `service`; an
/// engine error is reported after `what`. With the batching server model,
/// its predictions (block keys from `prompts`); none with the other models.
/// Shared by `plan` and `run`'s planning side.
pub fn run_service(
    scheduler: &mut Scheduler,
    service: &Service,
    prompts: Prompts<'_>,
    what: &str,
) -> Result<Option<ServerPrediction>, Error> {
    Ok(serve(scheduler, service, prompts, what)?.map(|(prediction, _)| prediction))
}

/// [`run_service`], with the plan's figures beside the predictions (what
/// the intervals are read from).
fn serve(
    scheduler: &mut Scheduler,
    service: &Service,
    prompts: Prompts<'_>,
    what: &str,
) -> Result<Option<(ServerPrediction, Figures)>, Error> {
    let profile = match service {
        Service::Model(model) => {
            inputs::run_virtual(scheduler, model, what)?;
            return Ok(None);
        }
        Service::Server(server) => &server.profile,
    };
    let mut model = ServerModel::new(profile);
    let mut predicted = Vec::new();
    let mut samples = Vec::new();
    virtual_clock::run_server_observed(
        scheduler,
        prompts,
        &mut model,
        &mut predicted,
        |at, gauges| {
            samples.push(Sample {
                at,
                gauges: *gauges,
            })
        },
    )
    .map_err(|e| Error::other(format!("{what}: {e}")))?;
    Ok(Some((
        ServerPrediction::new(profile, scheduler, &predicted, &samples),
        figures(scheduler, &predicted),
    )))
}

/// Refuses a `--report` path that cannot be a new file before planning
/// (exit 2): a directory, or a file in a directory that does not exist.
fn check_report_path(path: &Path) -> Result<(), Error> {
    if path.is_dir() {
        return Err(Error::input(format!(
            "--report {}: is a directory, expected a file to write",
            path.display()
        )));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::input(format!(
            "--report {}: no such directory {}",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}
