//! arbor-error: the error every arbor library crate returns to its caller.
//!
//! An [`Error`] is a message worded for the user (it names the file, the
//! place and what was expected, or what could not be done) and a [`Kind`]:
//! whose fault it is and what the run it ended left behind. The kind is
//! all a front end needs to choose its exit code; the one mapping from a
//! kind to `arbor`'s exit codes lives in the binary (`cli/src/exit.rs`).
//!
//! This crate owns no domain logic and depends on nothing: it is the
//! bottom of the workspace, below every crate that can fail.
#![forbid(unsafe_code)]

use std::fmt;

/// What went wrong, worded for the user, and its [`Kind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
}

/// Whose fault an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad flags, option values or input files: the caller can fix them.
    Input,
    /// Anything else: an output that cannot be written, a server that
    /// cannot be reached, a bug in arbor.
    Other,
    /// A run finished and wrote its outputs, but arbor's own client failed
    /// requests: the results are not a measurement of the server.
    ClientFailed,
    /// A run wrote its outputs, but the server failed it: none of its
    /// measured requests succeeded, more failed than `--max-error-rate`
    /// allows, or the circuit breaker stopped it (`--abort-after`).
    FailedTooOften,
    /// A capacity search whose answer is only a bound: a probe stayed
    /// unresolved (fewer successful requests than it needs to decide,
    /// `--min-requests`, or its 95 % interval across a limit), so no
    /// verdict of it was taken.
    TooFewMeasured,
    /// A run met none or not all of its `--slo` targets: it wrote its
    /// outputs and its verdict (`slo.json`).
    SloMissed,
    /// A signal (its number: 2 for SIGINT, 15 for SIGTERM, ...) stopped a
    /// run; what ran was written.
    Stopped { signal: u8 },
}

impl Error {
    /// Bad input or bad flags.
    pub fn input(message: impl fmt::Display) -> Self {
        Error {
            kind: Kind::Input,
            message: message.to_string(),
        }
    }

    /// Anything else (e.g. an output file that cannot be written).
    pub fn other(message: impl fmt::Display) -> Self {
        Error {
            kind: Kind::Other,
            message: message.to_string(),
        }
    }

    /// Whether the caller's flags or inputs were at fault.
    pub fn is_input(&self) -> bool {
        self.kind == Kind::Input
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constructors_set_the_kind_and_keep_the_words() {
        let e = Error::input(format_args!("{}: line {}: expected a record", "r.jsonl", 3));
        assert_eq!(e.kind, Kind::Input);
        assert!(e.is_input());
        assert_eq!(e.to_string(), "r.jsonl: line 3: expected a record");
        let e = Error::other("cannot write out/summary.json");
        assert_eq!(e.kind, Kind::Other);
        assert!(!e.is_input());
    }
}
