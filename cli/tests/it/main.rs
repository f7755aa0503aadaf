//! End-to-end tests of the `arbor` binary, run as a user would.

mod bad_corpus;
mod bad_input;
mod inspect;
mod plan;
mod run;
mod util;
