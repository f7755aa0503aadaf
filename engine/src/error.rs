//! Errors the engine reports: bad input (named by file, place and what was
//! expected), bad policy settings, and misuse of the scheduler API.
//!
//! Owns the error types only; every module builds its own messages.

use std::fmt;

/// Bad input: a file that cannot be read or does not say what its format
/// requires. `place` is a line (`line 12`), a JSON path (`$.requests[3].t`)
/// or both (`line 12, $.turns[0]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub place: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(file: impl Into<String>, place: Option<String>, message: impl Into<String>) -> Self {
        InputError {
            file: file.into(),
            place,
            message: message.into(),
        }
    }

    /// An error about the file as a whole (missing, unreadable, empty).
    pub fn whole(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(file, None, message)
    }

    pub fn at(
        file: impl Into<String>,
        place: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(file, Some(place.into()), message)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.place {
            Some(place) => write!(f, "{}: {}: {}", self.file, place, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// A policy flag with a value that cannot be used, e.g. `--tool-time pct:abc`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {message}")]
pub struct PolicyError {
    pub flag: &'static str,
    pub message: String,
}

impl PolicyError {
    pub fn new(flag: &'static str, message: impl Into<String>) -> Self {
        PolicyError {
            flag,
            message: message.into(),
        }
    }
}

/// Misuse of the scheduler's API by a driver. The engine stays consistent
/// after returning one of these: the offending call had no effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("request {0} does not exist")]
    UnknownRequest(u64),
    #[error("request {0} was not dispatched, so it cannot be sent or completed")]
    NotDispatched(u64),
    #[error("request {0} was already reported sent")]
    AlreadySent(u64),
    #[error("request {0} was already completed")]
    AlreadyCompleted(u64),
    #[error("time went backwards: now {now} ns is before the last event at {last} ns")]
    TimeWentBackwards { now: u64, last: u64 },
}
