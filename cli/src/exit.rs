//! The one mapping from an [`Error`]'s kind to `arbor`'s exit code
//! (docs/cli.md): 2 bad flags or inputs, 1 anything else, 3 a run that
//! finished but whose client failed requests, 4 a run the server failed
//! (none of its measured requests succeeded, more failed than
//! `--max-error-rate`, or `--abort-after` stopped it), 5 a capacity
//! search whose answer is only a bound (a probe still unresolved after
//! its extensions: too small to decide, `--min-requests`, or its 95 %
//! interval across a limit) or a `--slo` run too small to decide, 6 a run that
//! missed its `--slo` targets, 128 + the signal
//! that stopped a run (what
//! a shell reports: 130 for SIGINT, 143 for SIGTERM).

use arbor::{Error, Kind};

/// The exit code of a run whose client failed requests.
pub const CLIENT_FAILED: u8 = 3;
/// The exit code of a run the server failed.
pub const FAILED_TOO_OFTEN: u8 = 4;
/// The exit code of a capacity search whose answer is only a bound (an
/// unresolved probe), and of a `--slo` run too small to decide.
pub const TOO_FEW_MEASURED: u8 = 5;
/// The exit code of a run that missed its `--slo` targets.
pub const SLO_MISSED: u8 = 6;

/// The exit code `error` deserves.
pub fn code(error: &Error) -> u8 {
    match error.kind {
        Kind::Input => 2,
        Kind::Other => 1,
        Kind::ClientFailed => CLIENT_FAILED,
        Kind::FailedTooOften => FAILED_TOO_OFTEN,
        Kind::TooFewMeasured => TOO_FEW_MEASURED,
        Kind::SloMissed => SLO_MISSED,
        Kind::Stopped { signal } => 128u8.saturating_add(signal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_docs_and_the_shell() {
        let with = |kind| Error {
            kind,
            message: String::new(),
        };
        assert_eq!(code(&Error::input("x")), 2);
        assert_eq!(code(&Error::other("x")), 1);
        assert_eq!(code(&with(Kind::ClientFailed)), 3);
        assert_eq!(code(&with(Kind::FailedTooOften)), 4);
        assert_eq!(code(&with(Kind::TooFewMeasured)), 5);
        assert_eq!(code(&with(Kind::SloMissed)), 6);
        assert_eq!(code(&with(Kind::Stopped { signal: 2 })), 130);
        assert_eq!(code(&with(Kind::Stopped { signal: 15 })), 143);
        assert_eq!(code(&with(Kind::Stopped { signal: 1 })), 129);
    }
}
