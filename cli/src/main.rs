//! `arbor`: the command-line front end over the `arbor` library. Thin:
//! parses flags, converts them into the library's options, dispatches,
//! and shows what comes back (reports, tables, the progress bar); maps an
//! error's kind to the exit code (2 for bad input or flags, 3 when a
//! run's client failed requests, 128 + the signal that stopped a run, 1
//! for anything else).
//!
//! Modules: `exit` (an error's exit code: the one mapping); `args` (every
//! clap struct and value parser); `options` (flags to the library's
//! options, and which flags were given); `stdout` (reports, quiet on a
//! closed pipe); `terminal` (the console's sizes, and which `--ui` a run
//! gets); `fit` (text made to fit a width); `progress` (the simple line
//! while a run's clock runs); `dashboard` (the live dashboard);
//! `run_table` (a finished run's console table); `console` (the library's
//! observer: stderr, stdout, the progress display, the tables); then one module per command: `plan`, `inspect`, `convert`,
//! `emulate`, `run`, `doctor`, `compare`, `summarize`, `capacity`,
//! `aggregate`, `export`, `page` (`arbor report`), `record`, `schema`,
//! `data` and `calibrate`.
#![forbid(unsafe_code)]

mod aggregate;
mod args;
mod calibrate;
mod capacity;
mod compare;
mod console;
mod convert;
mod dashboard;
mod data;
mod doctor;
mod emulate;
mod exit;
mod export;
mod fit;
mod inspect;
mod merge;
mod options;
mod page;
mod plan;
mod progress;
mod record;
mod run;
mod run_table;
mod schema;
mod stdout;
mod summarize;
mod terminal;
mod verdict;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::args::{Cli, Command};
use arbor::Error;

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
    let given = options::Given::of_subcommand(&matches);
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args, &given),
        Command::Inspect(args) => inspect::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Run(args) => run::run(&args, &given),
        Command::Emulate(args) => emulate::run(&args),
        Command::Capacity(args) => capacity::run(&args, &given),
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

fn fail(error: Error) -> ExitCode {
    eprintln!("error: {}", error.message);
    ExitCode::from(exit::code(&error))
}
