//! `arbor` as a library: its use cases as functions with typed options,
//! over the library crates below it, for the CLI, a Rust program or a
//! binding (docs/library.md).
//!
//! - [`plan::plan`]: a workload planned on the virtual clock (with a
//!   service model, or the batching server model's predictions);
//! - [`run::run`]: a live run against a server or the built-in emulator,
//!   its run directory written as it goes (judged against `--slo` by
//!   [`slo`]); [`run::prepare`] and
//!   [`run::run_prepared`] split it where a caller reuses the compiled
//!   workload (the live capacity probe);
//! - [`capacity::capacity`]: the largest load within SLOs, virtual or live;
//! - [`calibrate_probe::probe`]: a designed calibration, its phases run
//!   live against the server, then fitted (`arbor calibrate --probe`);
//! - [`emulate::serve_until_interrupted`]: the built-in emulator on a port;
//! - [`inspect::inspect_inputs`]: what traces hold, as data;
//! - [`convert::convert`]: traces of any format written in another
//!   (`--to`), with the account of what the target kept, inferred and lost;
//! - [`schema::write_all`]: the JSON Schemas of the outputs;
//! - [`inputs`]: options to a loaded, compiled workload and a policy;
//!   [`scenario`]: a recipe applied to the options.
//!
//! Options are plain data ([`options`]); what a use case says while it
//! works goes to an [`Observer`]; every failure is one [`Error`] whose
//! [`Kind`] says whose fault it is (the CLI maps it to an exit code).
//!
//! Modules, each used only by those after it: `options`, `slo`, `observer`,
//! `runtime`, `tokenizer`, `scenario`, `schema`, `inputs`, `emulate`, `reuse`, `intervals`, `plan`,
//! `run`, `capacity`, `calibrate_probe`.
#![forbid(unsafe_code)]

pub mod calibrate_probe;
pub mod capacity;
pub mod convert;
pub mod emulate;
pub mod inputs;
pub mod inspect;
pub mod intervals;
pub mod json;
pub mod observer;
pub mod options;
pub mod plan;
pub mod reuse;
pub mod run;
pub mod runtime;
pub mod scenario;
pub mod schema;
pub mod slo;
pub mod subset;
pub mod tokenizer;

pub use arbor_error::{Error, Kind};
pub use observer::{Observer, Quiet};
pub use options::{
    EmulateOptions, EmulatorOptions, InputOptions, PlanOptions, PolicyOptions, RequestOptions,
    RunOptions, ScenarioOptions,
};

/// The library crates, for what the use cases return (a summary, a plan
/// report, a server profile) and for callers who go below them.
pub use arbor_backends as backends;
pub use arbor_capacity as capacity_search;
pub use arbor_engine as engine;
pub use arbor_formats as formats;
pub use arbor_report as report;
pub use arbor_runs as runs;
pub use arbor_sim as sim;
