//! The console as the library's [`Observer`]: notices on stderr, result
//! lines on stdout (quiet on a closed pipe), the run's progress display
//! while its clock runs (`--ui`: the dashboard, the simple line, or
//! nothing), a finished run's table, an aggregate's table. Owns where
//! things are shown, not what they say.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Arc, Mutex};

use arbor::observer::{Clock, Finished};
use arbor::runs::aggregate::Aggregate;
use arbor::{Error, Observer};

use crate::dashboard::Dashboard;
use crate::progress::{Span, Ticker};
use crate::terminal::{self, Ui};
use crate::{aggregate, fit, run_table, stdout, verdict};

/// What shows a run's progress while its clock runs.
enum Display {
    Line(Ticker),
    Dashboard(Dashboard),
}

/// The console of one command.
pub struct Console {
    ui: Ui,
    display: Mutex<Option<Display>>,
}

impl Default for Console {
    /// The simple line (commands other than `arbor run` that drive a
    /// clock).
    fn default() -> Console {
        Console::with_ui(Ui::Simple)
    }
}

impl Console {
    /// A console showing a run's progress as `ui` says.
    pub fn with_ui(ui: Ui) -> Console {
        Console {
            ui,
            display: Mutex::new(None),
        }
    }
}

impl Observer for Console {
    fn notice(&self, line: &str) {
        if let Ok(display) = self.display.lock() {
            if let Some(Display::Dashboard(dashboard)) = display.as_ref() {
                dashboard.notice(line);
                return;
            }
        }
        // On a terminal, a long line is wrapped at spaces (continued two
        // columns in), not cut mid-word by the terminal.
        let width = std::io::stderr()
            .is_terminal()
            .then(terminal::stderr_size)
            .flatten();
        match width {
            Some(size) => {
                let width = usize::from(size.columns.saturating_sub(1)).max(20);
                for part in line.split('\n') {
                    if fit::width(part) <= width {
                        eprintln!("{part}");
                        continue;
                    }
                    let words = part.trim_start_matches(' ');
                    let indent = &part[..part.len() - words.len()];
                    let hanging = format!("{indent}  ");
                    for wrapped in fit::wrap(indent, &hanging, words, width) {
                        eprintln!("{wrapped}");
                    }
                }
            }
            None => eprintln!("{line}"),
        }
    }

    fn output(&self, line: &str) -> Result<(), Error> {
        stdout::print(|out| writeln!(out, "{line}"))
    }

    fn clock_started(&self, clock: &Clock) {
        let display = match self.ui {
            Ui::None => return,
            Ui::Simple => Display::Line(Ticker::start(
                Arc::clone(&clock.progress),
                Span::of(clock.duration, clock.dispatched),
                clock.planned,
            )),
            Ui::Dashboard => Display::Dashboard(Dashboard::start(clock)),
        };
        if let Ok(mut slot) = self.display.lock() {
            *slot = Some(display);
        }
    }

    fn clock_stopped(&self) {
        let display = self.display.lock().ok().and_then(|mut slot| slot.take());
        match display {
            Some(Display::Line(ticker)) => ticker.finish(),
            Some(Display::Dashboard(dashboard)) => dashboard.finish(),
            None => {}
        }
    }

    fn run_finished(&self, finished: &Finished<'_>) -> Result<(), Error> {
        let width = terminal::stdout_width();
        stdout::print(|mut out| {
            run_table::print(&mut out, finished.summary, finished.emulator, width)?;
            verdict::print(&mut out, finished.summary, finished.slo)?;
            run_table::results_line(&mut out, finished.out, width)
        })
    }

    fn aggregate(&self, aggregate: &Aggregate, out: &Path) -> Result<(), Error> {
        aggregate::print(aggregate, out)
    }
}
