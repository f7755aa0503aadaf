//! End-to-end tests of the `arbor` binary, run as a user would.

mod agentx;
mod bad_corpus;
mod bad_input;
mod compare;
mod demo;
mod doctor;
mod emulate;
mod export;
mod faults;
mod fit;
mod flags;
mod gaps;
mod golden;
mod inspect;
mod layout;
mod metrics;
mod notices;
mod plan;
mod progress;
mod report;
mod run;
mod schema;
mod scripted;
mod summarize;
mod tls;
mod util;
