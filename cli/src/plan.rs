//! `arbor plan`: load, compile, run on the virtual clock, report.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::args::PlanArgs;
use crate::failure::Failure;
use crate::report::{write_timeline, PlanReport};
use crate::scenario::{self, Explicit};
use crate::{inputs, stdout};

pub fn run(args: &PlanArgs, explicit: &Explicit) -> Result<(), Failure> {
    let mut policy_args = args.policy.clone();
    let mut agentx = args.scenario.clone();
    let applied = scenario::apply(&mut agentx, &args.input, &mut policy_args, explicit)?;
    let policy = inputs::policy(&policy_args, &agentx)?;
    let options = inputs::derive_options(&args.input);
    let inputs::Compiled {
        loaded,
        policy,
        compiled,
    } = inputs::compile(&args.input, policy, &options, applied.is_some())?;
    let adjustments = compiled.adjustments;
    let counts = (&compiled).into();
    let mut scheduler = inputs::scheduler(compiled, policy)?;
    inputs::run_virtual(&mut scheduler, &args.service, "engine")?;

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
        args.service.to_string(),
        options.overlap_tolerance,
        &loaded.workload,
        &adjustments,
        &counts,
        &scheduler,
    );
    stdout::json_or_human(args.json, &report, |mut out| report.print_human(&mut out))
}
