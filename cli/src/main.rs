//! `arbor`: the command-line front end. Thin: parses flags, wires the
//! library crates together, writes outputs, maps errors to exit codes
//! (2 for bad input or flags, 1 for anything else).
#![forbid(unsafe_code)]

mod args;
mod convert;
mod doctor;
mod emulate;
mod inputs;
mod inspect;
mod plan;
mod progress;
mod report;
mod run;
mod sample;
mod scenario;
mod tokenizer;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::args::{Cli, Command};

/// An error and the exit code it deserves.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Bad input or bad flags: exit code 2.
    pub fn input(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }

    /// Anything else (e.g. an output file that cannot be written): 1.
    pub fn other(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
}

fn main() -> ExitCode {
    // Parsed in two steps so a recipe can tell flags the user gave from
    // defaults (`--scenario` locks).
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let explicit = scenario::Explicit::of_subcommand(&matches);
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args, &explicit),
        Command::Inspect(args) => inspect::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Run(args) => run::run(&args, &explicit),
        Command::Emulate(args) => emulate::run(&args),
        Command::Doctor(args) => doctor::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
