//! arbor-report: what arbor shows of a plan or a run, the one owner of
//! every view a person or another tool reads.
//!
//! - [`plan`]: the plan report (`arbor plan`'s human lines and `plan
//!   --json`'s object, [`plan::PlanReport`]), the per-turn timeline
//!   (`--timeline`), and the batching server model's predictions
//!   ([`plan::server::ServerPrediction`]);
//! - [`page`]: the self-contained HTML page of run directories, of a
//!   `--repeat` directory and of a plan, with its assets (`report/assets/`:
//!   uPlot, MIT, vendored; arbor's own script and styles), compiled in,
//!   and the page of a capacity search's directory ([`page::capacity`]:
//!   its answer, goodput and SLO curves against the load, each probe's
//!   verdict), with its own script and styles;
//! - [`export`]: a run directory in other tools' formats (a Perfetto
//!   trace, a CSV, AIPerf 0.13's result files);
//! - [`compare`]: run directories side by side, with seeded bootstrap
//!   intervals and `--fail-on` thresholds, and the vocabulary of the
//!   metrics it shows ([`compare::metric`]).
//!
//! Reads what a run left on disk (through `arbor_runs`) or a finished
//! scheduler, and writes only the files it is asked for. It must not touch
//! the network, a clock or a run's own writing (the run directory's files
//! are `arbor_runs`'), and it prints nothing and knows no command line:
//! each entry point takes plain options and returns what happened (the
//! lines to say, the notes, the verdicts), which the front end words on its
//! console; a fault is an [`arbor_error::Error`].
#![forbid(unsafe_code)]

pub mod compare;
pub mod export;
pub mod page;
pub mod plan;
