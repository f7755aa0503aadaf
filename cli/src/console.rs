//! The console as the library's [`Observer`]: notices on stderr, result
//! lines on stdout (quiet on a closed pipe), the progress ticker while a
//! run's clock runs, a finished run's table, an aggregate's table. Owns
//! where things are shown, not what they say.

use std::path::Path;
use std::sync::{Arc, Mutex};

use arbor::observer::{Clock, Finished};
use arbor::runs::aggregate::Aggregate;
use arbor::{Error, Observer};

use crate::progress::{Span, Ticker};
use crate::{aggregate, run_table, stdout, verdict};

/// The console of one command.
#[derive(Default)]
pub struct Console {
    ticker: Mutex<Option<Ticker>>,
}

impl Observer for Console {
    fn notice(&self, line: &str) {
        eprintln!("{line}");
    }

    fn output(&self, line: &str) -> Result<(), Error> {
        stdout::print(|out| writeln!(out, "{line}"))
    }

    fn clock_started(&self, clock: &Clock) {
        let span = Span::of(clock.duration, clock.dispatched);
        let ticker = Ticker::start(Arc::clone(&clock.progress), span, clock.planned);
        if let Ok(mut slot) = self.ticker.lock() {
            *slot = Some(ticker);
        }
    }

    fn clock_stopped(&self) {
        let ticker = self.ticker.lock().ok().and_then(|mut slot| slot.take());
        if let Some(ticker) = ticker {
            ticker.finish();
        }
    }

    fn run_finished(&self, finished: &Finished<'_>) -> Result<(), Error> {
        stdout::print(|mut out| {
            run_table::print(&mut out, finished.summary, finished.out, finished.emulator)?;
            verdict::print(&mut out, finished.summary, finished.slo)
        })
    }

    fn aggregate(&self, aggregate: &Aggregate, out: &Path) -> Result<(), Error> {
        aggregate::print(aggregate, out)
    }
}
