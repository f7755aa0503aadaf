//! `arbor`: the command-line front end. Thin: parses flags, wires the
//! library crates together, writes outputs, maps errors to exit codes
//! (2 for bad input or flags, 3 when a run's client failed requests,
//! 128 + the signal that stopped a run, 1 for anything else).
//!
//! Modules, each used only by those after it (no cycles): `exit`
//! (an error's exit code: the one mapping); `args` (every clap struct and value
//! parser; uses `endpoint`'s URL parser); `endpoint` (base URL, headers,
//! API key, request options, redaction: shared by `run` and `doctor`);
//! `runtime` (tokio runtimes); `stdout` (reports, quiet on a closed pipe);
//! `data` (the `arbor data` command's console), `tokenizer`, `scenario` (the `--scenario` recipe), `inputs`
//! (flags to a compiled workload and policy), `report` and `progress`;
//! `shape` (`trees.jsonl`: written by `run`, read by `export`); then the
//! commands `plan`, `inspect`, `convert`, `emulate`, `run`, `doctor`,
//! `compare`, `summarize` (reads back what `run` wrote), `capacity`
//! (the SLO capacity search of `arbor-capacity`: its virtual probe, or a
//! live one that runs through `run`'s entry point), `aggregate`
//! (the aggregate of `run --repeat`: used by `run`, uses no command), `export`,
//! `page` (`arbor report`, also written by `run`), `record` (the
//! recording proxy's console), `schema` (the JSON Schemas of `run`'s and `plan`'s
//! outputs) and `calibrate` (a server profile fitted from run directories).
#![forbid(unsafe_code)]

mod aggregate;
mod args;
mod calibrate;
mod capacity;
mod compare;
mod convert;
mod data;
mod doctor;
mod emulate;
mod exit;
mod export;
mod fit_advice;
mod inputs;
mod inspect;
mod merge;
mod page;
mod plan;
mod progress;
mod record;
mod run;
mod runtime;
mod scenario;
mod schema;
mod stdout;
mod summarize;
mod tokenizer;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::args::{Cli, Command};
use arbor_error::Error;

fn main() -> ExitCode {
    // Parsed in two steps so a recipe can tell flags the user gave from
    // defaults (`--scenario` locks).
    let command = args::numbers_may_be_negative(Cli::command());
    let matches = command
        .clone()
        .try_get_matches()
        .unwrap_or_else(|e| args::peer::without_far_tips(e, &command).exit());
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Some(message) = cli.command.peer_flags().and_then(|p| p.refused()) {
        return fail(Error::input(message));
    }
    let explicit = scenario::Explicit::of_subcommand(&matches);
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args, &explicit),
        Command::Inspect(args) => inspect::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Run(args) => run::run(&args, &explicit, rebuild_summary),
        Command::Emulate(args) => emulate::run(&args),
        Command::Capacity(args) => capacity::run(&args, &explicit, rebuild_summary),
        Command::Doctor(args) => doctor::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Summarize(args) => summarize::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Aggregate(args) => aggregate::run(&args.dir),
        Command::Report(args) => page::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Data(args) => data::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Record(args) => record::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => fail(failure),
    }
}

/// `summarize`'s rebuild of a run directory's summary, handed to `run`
/// (and `capacity`'s runs) for a second stop signal.
fn rebuild_summary(dir: &std::path::Path) -> Result<arbor_runs::output::Summary, Error> {
    arbor_runs::summarize::rebuild(dir).map(|rebuilt| rebuilt.summary)
}

fn fail(error: Error) -> ExitCode {
    eprintln!("error: {}", error.message);
    ExitCode::from(exit::code(&error))
}
