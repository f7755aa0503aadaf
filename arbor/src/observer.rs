//! What a use case tells the person running it while it works, and the
//! hooks a front end draws with: the one way the library talks to a
//! console. The CLI implements [`Observer`] with stderr, stdout and its
//! progress bar; a library user passes [`Quiet`] or their own.
//!
//! Nothing here is on a run's request path: the clock's counters are
//! atomics the driver bumps ([`Progress`]); an observer reads them on its
//! own timer, and may read the records the driver writes anyway
//! ([`Clock::watch`]) on its own thread.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_backends::live::Progress;
use arbor_engine::time::Nanos;
use arbor_error::Error;
use arbor_runs::aggregate::Aggregate;
use arbor_runs::journal::RunStart;
use arbor_runs::output::Summary;
use arbor_runs::watch::RecordsWatch;

/// A run's clock, as it starts: what to show progress against.
pub struct Clock {
    /// The driver's live counters (sent, done, errors).
    pub progress: Arc<Progress>,
    /// The run's `--duration`, if it has one.
    pub duration: Option<Nanos>,
    /// Requests the plan dispatches.
    pub dispatched: u64,
    /// The plan's makespan on the virtual clock.
    pub planned: Nanos,
    /// The run's `records.jsonl`, written as requests finish.
    pub records: PathBuf,
    /// `run.json`: what the run knew when its clock started (its trees,
    /// warmups, planned peak).
    pub run: RunStart,
}

impl Clock {
    /// A reader of the run's records as they are written, adding up as
    /// the summary will (for a live display; read it off the run's
    /// threads).
    pub fn watch(&self) -> RecordsWatch {
        RecordsWatch::of_run(self.records.clone(), &self.run)
    }
}

/// A run that finished and wrote its summary (its page comes next).
pub struct Finished<'a> {
    pub summary: &'a Summary,
    pub out: &'a Path,
    /// The in-process emulator's settings, when the run used it.
    pub emulator: Option<&'a str>,
    /// The run judged against `--slo`, when given.
    pub slo: Option<&'a crate::slo::SloReport>,
}

/// Hooks a use case calls as it goes. Every method has a default but
/// [`Observer::notice`] and [`Observer::output`].
pub trait Observer: Sync {
    /// A line for the person running: a notice or a warning (stderr in
    /// the CLI).
    fn notice(&self, line: &str);
    /// A result line: where an output was written (stdout in the CLI).
    fn output(&self, line: &str) -> Result<(), Error>;
    /// A run's clock started. Called on the run's tokio runtime.
    fn clock_started(&self, _clock: &Clock) {}
    /// A run's clock stopped (before its records are summed up).
    fn clock_stopped(&self) {}
    /// A run finished and wrote `summary.json` (before its page).
    fn run_finished(&self, _run: &Finished<'_>) -> Result<(), Error> {
        Ok(())
    }
    /// A `--repeat` sequence's aggregate was written to `out`.
    fn aggregate(&self, _aggregate: &Aggregate, _out: &Path) -> Result<(), Error> {
        Ok(())
    }
}

/// An observer that says nothing: for library users and tests.
pub struct Quiet;

impl Observer for Quiet {
    fn notice(&self, _line: &str) {}
    fn output(&self, _line: &str) -> Result<(), Error> {
        Ok(())
    }
}
