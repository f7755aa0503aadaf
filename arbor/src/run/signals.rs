//! The signals that stop a live run: SIGINT (Ctrl+C), SIGTERM (`timeout`,
//! `docker stop`, Kubernetes, Slurm) and SIGHUP (a closed terminal). All
//! three do the same: stop sending, give the requests in flight the grace,
//! write the summary, exit 128 + the signal's number. A second one during
//! the grace makes `arbor run` write the summary from what was recorded
//! and quit (the caller decides how; see `super::run_against`).
//!
//! Owns the signal handlers and the signals' names and exit codes; touches
//! no file.

use tokio::signal::unix::{signal, Signal, SignalKind};

use arbor_error::Error;

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Int,
    Term,
    Hup,
}

impl StopSignal {
    /// `SIGINT`, `SIGTERM`, `SIGHUP`: `summary.json`'s `stopped_by`.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Int => "SIGINT",
            StopSignal::Term => "SIGTERM",
            StopSignal::Hup => "SIGHUP",
        }
    }

    /// The signal's number (Linux and every other Unix).
    pub fn number(self) -> u8 {
        match self {
            StopSignal::Hup => 1,
            StopSignal::Int => 2,
            StopSignal::Term => 15,
        }
    }

    /// How a user says it in a sentence.
    pub fn spoken(self) -> &'static str {
        match self {
            StopSignal::Int => "Ctrl+C (SIGINT)",
            StopSignal::Term => "SIGTERM",
            StopSignal::Hup => "SIGHUP",
        }
    }
}

/// The three handlers. Once installed, none of the signals ends the
/// process by itself for the rest of its life: [`Signals::next`] hears
/// them.
pub struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    /// Installs the handlers (on the current tokio runtime).
    pub fn install() -> Result<Signals, Error> {
        let handler = |kind: SignalKind| {
            signal(kind).map_err(|e| Error::other(format!("cannot install a signal handler: {e}")))
        };
        Ok(Signals {
            int: handler(SignalKind::interrupt())?,
            term: handler(SignalKind::terminate())?,
            hup: handler(SignalKind::hangup())?,
        })
    }

    /// The next of the three signals to arrive.
    pub async fn next(&mut self) -> StopSignal {
        tokio::select! {
            Some(()) = self.int.recv() => StopSignal::Int,
            Some(()) = self.term.recv() => StopSignal::Term,
            Some(()) = self.hup.recv() => StopSignal::Hup,
            else => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_the_unix_ones() {
        assert_eq!(StopSignal::Int.number(), 2);
        assert_eq!(StopSignal::Term.number(), 15);
        assert_eq!(StopSignal::Hup.number(), 1);
        assert_eq!(StopSignal::Hup.name(), "SIGHUP");
    }
}
