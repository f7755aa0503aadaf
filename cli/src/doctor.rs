//! `arbor doctor`: probe a server before benchmarking it.
//!
//! The shell: the flags to [`arbor::backends::doctor::Options`], the probes
//! (`arbor::backends::doctor::diagnose`, which owns the domain: the probes,
//! the findings, the recommended flags, scrubbing secrets), then the
//! report on stdout, as JSON (`--json`) or as the human report below, and
//! exit 1 when the server cannot be benchmarked. See `docs/doctor.md`.

use std::time::Duration;

use arbor::backends::doctor::{self, Options, Report, Status};
use arbor::Error;

use crate::args::DoctorArgs;
use crate::stdout;

/// `arbor doctor`.
pub fn run(args: &DoctorArgs) -> Result<(), Error> {
    let report = doctor::diagnose(&options(args))?;
    let text = if args.json {
        report.to_json()?
    } else {
        human(&report)
    };
    stdout::print(|out| writeln!(out, "{text}"))?;
    report.verdict()
}

fn options(args: &DoctorArgs) -> Options {
    let access = &args.access;
    Options {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        headers: args.headers.clone(),
        tls: access.tls(),
        api_key_env: access.api_key_env.clone(),
        api_key_file: access.api_key_file.clone(),
        timeout: Duration::from_nanos(args.timeout),
        inputs: args.inputs.clone(),
        format: args.format,
    }
}

/// The human report: one line per finding, then the command to use.
fn human(report: &Report) -> String {
    let mut out = format!("arbor doctor: {}", report.endpoint);
    if let Some(m) = &report.model {
        out.push_str(&format!(" (model {m})"));
    }
    out.push('\n');
    let width = report
        .findings
        .iter()
        .map(|f| f.probe.len())
        .max()
        .unwrap_or(0);
    for f in &report.findings {
        out.push_str(&format!(
            "  {:<4}  {:<width$}  {}",
            f.status.as_str(),
            f.probe,
            f.seen
        ));
        if let Some(a) = &f.action {
            out.push_str(" -> ");
            out.push_str(a);
        }
        out.push('\n');
    }
    let warnings = report
        .findings
        .iter()
        .filter(|f| f.status == Status::Warn)
        .count();
    if report.usable {
        out.push_str(&format!(
            "verdict: can be benchmarked ({warnings} warning{})\n",
            if warnings == 1 { "" } else { "s" }
        ));
        out.push_str(&format!("Use: {}", report.command));
    } else {
        out.push_str("verdict: cannot be benchmarked (see the fail line above)");
    }
    out
}
