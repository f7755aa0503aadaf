//! End-to-end tests of the `arbor` binary, run as a user would.

mod agentx;
mod bad_corpus;
mod bad_input;
mod compare;
mod demo;
mod doctor;
mod emulate;
mod export;
mod fit;
mod flags;
mod gaps;
mod golden;
mod input_limits;
mod inspect;
mod layout;
mod metrics;
mod notices;
mod plan;
mod progress;
mod report;
mod run;
mod schema;
mod summarize;
mod tls;
mod util;
