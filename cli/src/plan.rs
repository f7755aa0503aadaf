//! `arbor plan`: load, compile, run on the virtual clock, report.

use std::fs::File;
use std::io::{self, BufWriter, Write};

use arbor_backends::virtual_clock;
use arbor_engine::dag::compile;
use arbor_engine::scheduler::Scheduler;
use arbor_sim::ServiceModel;

use crate::args::PlanArgs;
use crate::inputs;
use crate::report::{write_timeline, PlanReport};
use crate::scenario::{self, Explicit};
use crate::Failure;

pub fn run(args: &PlanArgs, explicit: &Explicit) -> Result<(), Failure> {
    let mut policy_args = args.policy.clone();
    let applied = scenario::apply(&args.scenario, &args.input, &mut policy_args, explicit)?;
    let service: ServiceModel = args.service.parse().map_err(Failure::input)?;
    let mut policy = inputs::policy(&policy_args)?;
    let options = inputs::derive_options(&args.input)?;
    let loaded = inputs::load(&args.input)?;
    if loaded.workload.trees.is_empty() {
        return Err(Failure::input(
            "the inputs hold no trees: expected at least one trace",
        ));
    }
    if applied.is_some() {
        scenario::fit_lanes(&mut policy, loaded.workload.trees.len());
    }
    let compiled = compile(&loaded.workload, &policy, &options).map_err(Failure::input)?;
    let adjustments = compiled.adjustments;
    let counts = (&compiled).into();
    let mut scheduler = Scheduler::new(compiled, policy).map_err(Failure::input)?;
    virtual_clock::run(&mut scheduler, &service)
        .map_err(|e| Failure::other(format!("engine: {e}")))?;

    if let Some(path) = &args.timeline {
        let file = File::create(path)
            .map_err(|e| Failure::other(format!("{}: cannot create: {e}", path.display())))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        write_timeline(&scheduler, &mut out)
            .and_then(|_| out.flush())
            .map_err(|e| Failure::other(format!("{}: cannot write: {e}", path.display())))?;
    }

    let report = PlanReport::new(
        loaded.description,
        applied.map(|a| a.name.to_string()),
        service.to_string(),
        options.overlap_tolerance,
        &loaded.workload,
        &adjustments,
        &counts,
        &scheduler,
    );
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &report)
            .map_err(io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        report.print_human(&mut out)
    };
    written.map_err(|e| Failure::other(format!("stdout: {e}")))
}
